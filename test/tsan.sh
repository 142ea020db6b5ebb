#!/bin/sh
# SPDX-License-Identifier: MIT
# ThreadSanitizer run: builds the tree with -Db_sanitize=thread in a build
# folder of its own and runs the unit, loopback, ce, conformance and
# harden suites there over tcp on 127.0.0.1.  Every process writes its TSan reports to
# a log of its own (the kit forks a pair per check, and a child's report
# would otherwise vanish into a test's stderr), so a race counts even when
# the test that hit it passed.  Prints one line per distinct report and a
# summary; exits 0 only with no report and no failed test.
#
# usage: test/tsan.sh [BUILD-DIR]     (default: build-tsan at the top)
# Meant to be run by hand or by a CI job of its own: it takes minutes
# (about 40 on 2 cores; test/gpu/tsan.sh runs it on the GPU machine).
#   ZSM_TSAN_SUITES  suites to run (default "unit loopback ce conformance harden")
#   ZSM_TSAN_JOBS    meson test --num-processes (default 2)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$top/build-tsan}
case $dir in /*) ;; *) dir=$(pwd)/$dir ;; esac
logs=$dir/tsan-logs
# TSan makes a program 5 to 15 times slower: the kit's own limits and
# meson's timeouts grow by the same factor as under valgrind.
scale=${ZSM_TEST_TIME_SCALE:-10}
suites=${ZSM_TSAN_SUITES:-unit loopback ce conformance harden}
jobs=${ZSM_TSAN_JOBS:-2}
suite_args=""
for s in $suites; do
	suite_args="$suite_args --suite $s"
done

if [ -d "$dir" ]; then
	meson setup --reconfigure "$dir" "$top" -Db_sanitize=thread \
		-Db_lundef=false >"$dir.setup.log" 2>&1
else
	meson setup "$dir" "$top" -Db_sanitize=thread -Db_lundef=false \
		>"$dir.setup.log" 2>&1
fi || { cat "$dir.setup.log"; exit 1; }
ninja -C "$dir" >"$dir.ninja.log" 2>&1 ||
	{ tail -n 40 "$dir.ninja.log"; exit 1; }

rm -rf "$logs"
mkdir -p "$logs"
# Debian's gcc 12 TSan maps its shadow at fixed places that a randomized
# layout with more than 28 bits of mmap entropy can hit ("unexpected
# memory mapping"): run without address randomization where it is high.
norand=""
bits=$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 0)
if [ "$bits" -gt 28 ] && command -v setarch >/dev/null 2>&1; then
	norand="setarch $(uname -m) -R"
fi

export ZSM_PROVIDER=tcp ZSM_DOMAIN=lo ZSM_TEST_TIME_SCALE=$scale
export TSAN_OPTIONS="log_path=$logs/tsan halt_on_error=0 second_deadlock_stack=1 history_size=4"
echo "== meson test (TSan, time scale $scale, suites $suites) in $dir"
# shellcheck disable=SC2086
$norand meson test -C "$dir" --print-errorlogs --num-processes "$jobs" \
	--timeout-multiplier "$scale" $suite_args \
	>"$dir/tsan-meson.log" 2>&1
mrc=$?
grep -E '^ *[0-9]+/[0-9]+ ' "$dir/tsan-meson.log"
sed -n '/^Ok:/,/^Timeout:/p' "$dir/tsan-meson.log"

# One line per distinct report (its SUMMARY line), with how many
# processes hit it and the first log that has it.
reports=0
if ls "$logs"/tsan.* >/dev/null 2>&1; then
	reports=$(cat "$logs"/tsan.* | grep -c '^WARNING: ThreadSanitizer')
	echo "== TSan reports: $reports in $(ls "$logs"/tsan.* | wc -l) process logs"
	grep -h '^SUMMARY: ThreadSanitizer' "$logs"/tsan.* | sort | uniq -c |
		sort -rn
	for s in $(grep -l '^SUMMARY: ThreadSanitizer' "$logs"/tsan.* |
		head -n 3); do
		echo "-- first report of $s"
		sed -n '/^WARNING: ThreadSanitizer/,/^SUMMARY/p' "$s" |
			head -n 60
	done
else
	echo "== TSan reports: none"
fi

status=0
[ $mrc = 0 ] || { echo "FAIL: meson test exited $mrc (see $dir/tsan-meson.log)"; status=1; }
[ "$reports" = 0 ] || { echo "FAIL: $reports ThreadSanitizer reports (logs in $logs)"; status=1; }
[ $status = 0 ] && echo "PASS: no ThreadSanitizer report, no failed test"
exit $status
