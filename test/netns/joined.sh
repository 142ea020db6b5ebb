#!/bin/sh
# SPDX-License-Identifier: MIT
# The kit's run across hosts, on 127.0.0.1: two pairs at once (rank 0
# must sum both), a broken plugin must fail on both ranks of its pair,
# ranks given different checks must be told so, and a rank number given
# twice must be refused.  No root needed.
#
# usage: joined.sh ZSM-CONFORMANCE PLUGIN.so FAULTY.so
set -u
kit=$1 plugin=$2 faulty=$3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
fail() {
	echo "FAIL: $*"
	status=1
}
# A port of our own: 20000 + pid, kept below 65000.
port=$((20000 + $$ % 40000))
export ZSM_PROVIDER=tcp ZSM_DOMAIN=lo

# run TAG N OPTIONS...: start N ranks, wait, leave k$TAG-$rank and rc.
run() {
	tag=$1 n=$2
	shift 2
	port=$((port + 1))
	pids=
	r=$((n - 1))
	while [ $r -ge 0 ]; do
		"$kit" --rendezvous 127.0.0.1:$port --rank $r --nranks $n \
			--join-timeout 30 "$@" >"$out/$tag-$r" 2>"$out/$tag-$r.err" &
		eval "pid_$r=\$!"
		r=$((r - 1))
	done
	r=0
	while [ $r -lt $n ]; do
		eval "wait \$pid_$r"
		echo $? >"$out/$tag-$r.rc"
		r=$((r + 1))
	done
}
rc() { cat "$out/$1.rc"; }

echo "== 4 ranks, 2 pairs"
run pairs 4 --only properties,order,zero_byte "$plugin"
cat "$out/pairs-0" "$out/pairs-2"
for r in 0 1 2 3; do
	[ "$(rc pairs-$r)" = 0 ] || fail "rank $r exited $(rc pairs-$r)"
done
grep -q '^\[ranks 2-3\] PASS order' "$out/pairs-2" ||
	fail "rank 2 printed no '[ranks 2-3] PASS order' line"
# Rank 0's total counts the three checks of each of the two pairs.
grep -q '^6 passed, 0 failed, 0 skipped$' "$out/pairs-0" ||
	fail "rank 0's total is not both pairs' (6 passed)"

echo "== a plugin that reorders sends"
ZSM_FAULTY_REAL=$plugin ZSM_FAULT=reorder run fault 2 --only order "$faulty"
cat "$out/fault-0"
[ "$(rc fault-0)" = 1 ] && [ "$(rc fault-1)" = 1 ] ||
	fail "ranks exited $(rc fault-0) and $(rc fault-1), not 1 and 1"
grep -q '^FAIL order: .*receive' "$out/fault-0" ||
	fail "no FAIL order line naming the receive"

echo "== ranks given different checks"
port=$((port + 1))
"$kit" --rendezvous 127.0.0.1:$port --rank 0 --nranks 2 --join-timeout 30 \
	--only order "$plugin" >"$out/diff-0" 2>&1 &
pid=$!
"$kit" --rendezvous 127.0.0.1:$port --rank 1 --nranks 2 --join-timeout 30 \
	--only zero_byte "$plugin" >"$out/diff-1" 2>&1
wait $pid
cat "$out/diff-0"
grep -q "the partner runs check 'zero_byte'" "$out/diff-0" ||
	fail "rank 0 did not say the partner runs another check"

echo "== a rank number given twice"
port=$((port + 1))
"$kit" --rendezvous 127.0.0.1:$port --rank 0 --nranks 4 --join-timeout 5 \
	"$plugin" >"$out/dup-0" 2>&1 &
pid=$!
for r in 1 1 2; do
	"$kit" --rendezvous 127.0.0.1:$port --rank $r --nranks 4 \
		--join-timeout 5 "$plugin" >"$out/dup-$r-$$" 2>&1 &
done
wait $pid
echo "rank 0 exited $?"
cat "$out/dup-0"
grep -q 'out of range or taken twice' "$out/dup-0" ||
	fail "rank 0 did not refuse the second rank 1"
wait
exit $status
