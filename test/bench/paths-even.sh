#!/bin/sh
# SPDX-License-Identifier: MIT
# A comm over several paths (ZSM_NET_PATHS=N) carries the same share on
# each: zsm-bench streams verified 1 MiB messages on one tag, and both
# ranks' comms, closing, say at INFO how many messages and bytes each
# path carried.  Every path must have carried bytes, each within 10 % of
# the paths' mean, on both sides, and the two sides must agree.  With
# one path (the comm has no paths to report) the line must be absent.
# Usage: paths-even.sh ZSM-BENCH N  (the environment picks tcp, lo,
# ZSM_CE=0).
set -u
bench=$1 n=$2
out=$(mktemp "${TMPDIR:-/tmp}/zsm-paths-even.XXXXXX")
trap 'rm -f "$out"' EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

ZSM_NET_PATHS=$n ZSM_CLIENT_LOG=info "$bench" --test stream --sizes 1M \
	--iters 64 --warmup 4 --reps 3 >"$out" 2>&1
rc=$?
grep -E '^stream|per path' "$out"
[ $rc -eq 0 ] || fail "zsm-bench exited $rc (ZSM_NET_PATHS=$n)"
lines=$(grep -c 'messages/bytes per path' "$out")
if [ "$n" -eq 1 ]; then
	[ "$lines" -eq 0 ] || fail "one path, yet a per-path report"
	echo "PASS: one path, no paths reported"
	exit 0
fi
[ "$lines" -eq 2 ] || fail "$lines per-path reports, expected one per rank"
for side in send receive; do
	line=$(grep "$side comm .* closes: messages/bytes per path" "$out" |
		sed 's/.*per path: //')
	echo "$line" | awk -v n="$n" -v side="$side" '{
		if (NF != n) { print "FAIL: " side ": " NF " paths, expected " n; exit 1 }
		sum = 0
		for (i = 1; i <= NF; i++) { split($i, f, "/"); b[i] = f[2]; sum += f[2] }
		mean = sum / NF
		for (i = 1; i <= NF; i++)
			if (b[i] <= 0 || b[i] < 0.9 * mean || b[i] > 1.1 * mean) {
				print "FAIL: " side ": path " i - 1 " carried " b[i] \
				      " bytes, the mean is " mean; exit 1 }
	}' || exit 1
done
s=$(grep 'send comm .* per path' "$out" | sed 's/.*per path: //')
r=$(grep 'receive comm .* per path' "$out" | sed 's/.*per path: //')
[ "$s" = "$r" ] || fail "the sides disagree: sent $s, received $r"
echo "PASS: $n paths, each within 10 % of even on both sides ($s)"
