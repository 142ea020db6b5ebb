#!/bin/sh
# SPDX-License-Identifier: MIT
# zsm-bench --coll (zsm-bench-coll, zsm's API from the shared library),
# host memory over tcp on loopback: AllGather and AlltoAll out of place
# between two ranks that are two hosts to zsm (the network path), and in
# place among three ranks of which two share a host (ce and the network in
# one comm).  Every run checks every byte before timing (a mismatch exits
# 1); this script checks that each succeeded and printed one row and one
# CSV line per collective and size, and that --coll --gpu where CUDA is
# not usable exits 77 with one line saying why (or runs, on a GPU), and
# that --poll is refused where it means nothing.
# Usage: coll-smoke.sh ZSM-BENCH (the environment picks tcp and lo).
set -u

bench=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/zsm-coll-smoke.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

run() { # name args...: one run, its rows checked
	name=$1
	shift
	out=$work/$name.out csv=$work/$name.csv
	"$bench" --coll both --sizes 0,8,64K --iters 5 --csv "$csv" "$@" \
		>"$out" 2>&1
	rc=$?
	cat "$out"
	[ $rc -eq 0 ] || fail "$name: zsm-bench --coll $* exited $rc"
	[ "$(head -n 1 "$csv")" = plugin,test,size,gbps,usec,mem ] ||
		fail "$name: the CSV's first line is not its header"
	[ "$(wc -l <"$csv")" -eq 7 ] || fail "$name: the CSV has not 6 rows"
	for t in all_gather all_to_all; do
		for s in 0:0 8:8 64K:65536; do
			row=${s%:*} bytes=${s#*:}
			n=$(awk -v t="$t" -v s="$row" \
				'$1 == t && $2 == s && $3 >= 0 && $4 >= 0 && $5 > 0' \
				"$out" | wc -l)
			[ "$n" -eq 1 ] || fail "$name: $n rows '$t $row' with figures"
			n=$(awk -F, -v t="$t" -v s="$bytes" \
				'NF == 6 && $1 == "zsm-api" && $2 == t && $3 == s &&
				 $4 >= 0 && $5 > 0 && $6 == "host"' "$csv" | wc -l)
			[ "$n" -eq 1 ] || fail "$name: $n CSV lines for $t $bytes"
		done
	done
}

run two-hosts --hosts 0,1
grep -q '^# zsm-bench: zsm API .*, 2 ranks forked on this host, hosts 0,1, memory host, out of place, host-memory mode' \
	"$work/two-hosts.out" || fail "two-hosts: no header line saying what ran"
run three --ranks 3 --hosts a,a,b --inplace
grep -q '3 ranks forked on this host, hosts a,a,b, memory host, in place' \
	"$work/three.out" || fail "three: no header line saying what ran"

"$bench" --coll all_gather --gpu 0 --sizes 8 --iters 2 >"$work/gpu.out" 2>&1
rc=$?
cat "$work/gpu.out"
case $rc in
77)
	n=$(grep -c '^zsm-bench: --coll --gpu gpu0,gpu0 skipped: CUDA is not available: .' \
		"$work/gpu.out")
	[ "$n" -eq 1 ] || fail "--gpu: exit 77 with $n skip lines; expected one"
	[ "$(wc -l <"$work/gpu.out")" -eq 1 ] ||
		fail "--gpu: exit 77, but more than the one line"
	;;
0) grep -q 'memory gpu0+gpu0, .*calls on a CUDA stream' "$work/gpu.out" ||
	fail "--gpu ran, but its header does not say GPU memory" ;;
*) fail "--gpu: exit $rc" ;;
esac
# --poll: a usage error without --gpu or with an unknown word; with --gpu
# it runs (and says it naps) or skips as above.
"$bench" --coll all_gather --poll nap --sizes 8 >"$work/poll.out" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "--poll nap without --gpu: exit $rc, not 1"
grep -q -- '--poll .*goes with --gpu' "$work/poll.out" ||
	fail "--poll nap without --gpu: no line saying it needs --gpu"
"$bench" --coll all_gather --gpu 0 --poll often --sizes 8 >"$work/poll.out" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "--poll often: exit $rc, not 1"
grep -q -- "--poll: 'often' is not spin or nap" "$work/poll.out" ||
	fail "--poll often: no line naming the bad word"
"$bench" --coll all_gather --gpu 0 --poll nap --sizes 8 --iters 2 >"$work/poll.out" 2>&1
rc=$?
cat "$work/poll.out"
case $rc in
77) ;;
0) grep -q 'calls on a CUDA stream (the host naps between queries)' \
	"$work/poll.out" || fail "--poll nap ran, but its header does not say so" ;;
*) fail "--gpu --poll nap: exit $rc" ;;
esac
echo "PASS: zsm-bench --coll ran, verified and reported (host), --gpu and --poll as expected"
