#!/bin/sh
# SPDX-License-Identifier: MIT
# usage: load-fault.sh PATTERN ZSM-LOAD [ARGS...]
# Passes when zsm-load fails (exit 1) and says why in a line matching the
# extended regular expression PATTERN: the load test must catch the fault
# that the wrapper plugin (test/loopback/faulty.c, ZSM_FAULT) injects, and
# for the right reason, not by some other failure.
pattern=$1
shift
out=$("$@" 2>&1)
rc=$?
if [ "$rc" -eq 1 ] && printf '%s\n' "$out" | grep -Eq "$pattern"; then
	printf '%s\n' "$out" | grep -E "^FAIL" | head -3
	exit 0
fi
printf '%s\n' "$out" | tail -40
echo "load-fault: expected exit 1 and a line matching '$pattern', got exit $rc"
exit 1
