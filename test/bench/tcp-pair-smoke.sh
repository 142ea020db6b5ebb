#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/tcp_pair.c, coll-vs-put.sh's kernel-TCP baseline: one way and
# both ways with every byte checked must exit 0 and print one positive
# figure per direction; bad arguments must exit 2 with the usage.
# Usage: tcp-pair-smoke.sh TCP-PAIR
set -u

pair=$1
fail() {
	echo "FAIL: $*"
	exit 1
}
positive='^[0-9]+\.[0-9]+$'

out=$("$pair" --verify 256K 40) || fail "one way exited $?"
echo "one way: $out"
echo "$out" | grep -Eq "$positive" || fail "one way printed '$out'"
[ "$(echo "$out" | awk '{ print ($1 > 0) }')" = 1 ] ||
	fail "one way's figure is not above 0"

out=$("$pair" --both --verify 256K 40) || fail "both ways exited $?"
echo "both ways: $out"
echo "$out" | grep -Eq '^[0-9]+\.[0-9]+ [0-9]+\.[0-9]+$' ||
	fail "both ways printed '$out'"
[ "$(echo "$out" | awk '{ print ($1 > 0 && $2 > 0) }')" = 1 ] ||
	fail "a direction's figure is not above 0"

for bad in "0 1" "1X 1" "1M 0" "--bogus 1M 1" "1M"; do
	# shellcheck disable=SC2086 # the words are the arguments
	err=$("$pair" $bad 2>&1 >/dev/null)
	rc=$?
	[ $rc -eq 2 ] || fail "'tcp-pair $bad' exited $rc, not 2"
	echo "$err" | grep -q '^usage: tcp-pair' ||
		fail "'tcp-pair $bad' did not print the usage"
done
echo "PASS"
