#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# stream-vs-kernel.sh: zsm-bench's stream over the network path (tcp on
# lo unless ZSM_PROVIDER/ZSM_DOMAIN say otherwise, ZSM_CE=0) against the
# kernel's own TCP, one socket, the same sizes and message counts
# (bench/tcp_pair.c), in rounds that alternate which goes first.  Prints
# per size the medians of the rounds and zsm / kernel, the median of the
# rounds' own ratios (each round's pair ran back to back), and whether
# that is at least the target (issue 34: 0.9).
#
#     bench/stream-vs-kernel.sh [-b BUILD] [-r ROUNDS] [-s SIZES] [-t TARGET]
#
# Defaults: build, 5 rounds, sizes 1M,4M,16M,64M, target 0.9.  Each run
# moves max(16, 256 MiB / size) messages.  Exit 0 when every size meets
# the target, 1 when one does not, 2 when a run fails.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build rounds=5 sizes=1M,4M,16M,64M target=0.9
usage() {
	echo "usage: $0 [-b BUILD] [-r ROUNDS] [-s SIZES] [-t TARGET]" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
	-b) build=$2; shift 2 ;;
	-r) rounds=$2; shift 2 ;;
	-s) sizes=$2; shift 2 ;;
	-t) target=$2; shift 2 ;;
	*) usage ;;
	esac
done
bench=$build/tools/zsm-bench pair=$build/bench/tcp-pair
for x in "$bench" "$pair"; do
	[ -x "$x" ] || { echo "no $x: build first" >&2; exit 2; }
done
export ZSM_PROVIDER=${ZSM_PROVIDER:-tcp} ZSM_DOMAIN=${ZSM_DOMAIN:-lo} ZSM_CE=0
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

bytes() { # 4M -> 4194304
	case $1 in
	*K) echo $((${1%K} << 10)) ;; *M) echo $((${1%M} << 20)) ;;
	*G) echo $((${1%G} << 30)) ;; *) echo "$1" ;;
	esac
}
# run TOOL SIZE COUNT: one GB/s figure on stdout.
run() {
	local gbps
	if [ "$1" = kernel ]; then
		gbps=$("$pair" "$2" "$3") || return 1
	else
		gbps=$("$bench" --test stream --sizes "$2" --iters "$3" --warmup 2 \
			--reps 1 2>/dev/null | awk '$1 == "stream" { print $3 }')
	fi
	[ -n "$gbps" ] && echo "$gbps"
}

IFS=, read -r -a ss <<<"$sizes"
for ((r = 0; r < rounds; r++)); do
	for s in "${ss[@]}"; do
		n=$(( (256 << 20) / $(bytes "$s") ))
		[ $n -ge 16 ] || n=16
		order="zsm kernel"
		[ $((r % 2)) = 1 ] && order="kernel zsm"
		for t in $order; do
			v=$(run "$t" "$s" "$n") || { echo "$t at $s failed (round $r)" >&2; exit 2; }
			echo "$v" >>"$dir/$t-$s"
		done
		paste "$dir/zsm-$s" "$dir/kernel-$s" | tail -n 1 |
			awk '{ print $1 / $2 }' >>"$dir/ratio-$s"
	done
done

median() { sort -g | awk '{ v[NR] = $1 } END {
	if (!NR) print "nan"; else if (NR % 2) print v[(NR + 1) / 2];
	else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf '%-6s %10s %10s %10s  %s\n' size 'zsm GB/s' 'kernel' 'zsm/kernel' "target $target"
fail=0
for s in "${ss[@]}"; do
	z=$(median <"$dir/zsm-$s") k=$(median <"$dir/kernel-$s") q=$(median <"$dir/ratio-$s")
	ok=$(awk -v q="$q" -v t="$target" 'BEGIN { print (q >= t) ? "PASS" : "FAIL" }')
	[ "$ok" = PASS ] || fail=1
	printf '%-6s %10.3f %10.3f %10.3f  %s\n' "$s" "$z" "$k" "$q" "$ok"
done
echo "rounds: $rounds, alternated; load average $(cut -d' ' -f1-3 /proc/loadavg)"
exit $fail
