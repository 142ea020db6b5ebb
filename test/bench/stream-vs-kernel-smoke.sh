#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/stream-vs-kernel.sh runs both sides and prints its table, and its
# verdict can fail: with target 0 it passes, with a target no transport
# reaches (1000x the kernel) it exits 1 saying FAIL.
set -u
script=$1 build=$2
out=$(bash "$script" -b "$build" -r 1 -s 64K -t 0) || {
	echo "FAIL: target 0 did not pass:"; echo "$out"; exit 1; }
echo "$out"
echo "$out" | grep -Eq '^64K +[0-9.]+ +[0-9.]+ +[0-9.]+ +PASS$' || {
	echo "FAIL: no 64K row that passed"; exit 1; }
out=$(bash "$script" -b "$build" -r 1 -s 64K -t 1000)
rc=$?
[ $rc = 1 ] && echo "$out" | grep -q ' FAIL$' || {
	echo "FAIL: target 1000 gave status $rc:"; echo "$out"; exit 1; }
echo "PASS: the verdict follows the target"
