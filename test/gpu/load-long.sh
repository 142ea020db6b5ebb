#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# load-long.sh: issue 32's 10-minute load runs (bench/load.sh) on the
# GPU machine, whose 16 cores run several at once without taking turns
# (the 2-core development machine runs one, loaded).  Its device tool
# ends a command after 10 minutes, so the runs start in a session of
# their own (setsid), which outlives the command, and a second command
# collects them:
#
#     test/gpu/load-long.sh start [-n PAIRS] [-t SECONDS] NAME:X:ENV... ...
#     test/gpu/load-long.sh wait [SECONDS]
#
# start unpacks .debs (test/gpu/fetch-debs.sh; carry .debs), builds in
# /tmp/zsm-load-build, and starts one `bench/load.sh -s small -x X` per
# NAME:X:ENV (ENV: comma list of VAR=VALUE, may be empty), each logging
# to /tmp/zsm-load/NAME.  wait waits (at most SECONDS, default 560) for
# every run to end and copies each run's log and summary to $OUT.  Both
# print one line per run: NAME running, or NAME PASS/FAIL and the
# summary line.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
runs=/tmp/zsm-load build=/tmp/zsm-load-build deps=/tmp/zsm-deps
OUT=${OUT:-/tmp/out}

report() {
	local d name
	for d in "$runs"/*/; do
		name=$(basename "$d")
		if [ ! -f "$d/rc" ]; then
			echo "$name running"
		elif [ "$(cat "$d/rc")" = 0 ]; then
			echo "$name PASS $(tail -n 1 "$d/out")"
		else
			echo "$name FAIL rc $(cat "$d/rc"): $(tail -n 1 "$d/out")"
		fi
	done
}

start() {
	local pairs=1000 secs=600 spec name x envs
	while [ $# -gt 0 ]; do
		case $1 in
		-n) pairs=$2; shift 2 ;;
		-t) secs=$2; shift 2 ;;
		*) break ;;
		esac
	done
	. "$here/deps.sh"
	zsm_gpu_deps "$repo" "$deps" /tmp/zsm-load-deps.log || exit 1
	rm -rf "$build" "$runs"
	mkdir -p "$runs"
	{ meson setup "$build" "$repo" -Dtests=true && ninja -C "$build"; } \
		>/tmp/zsm-load-build.log 2>&1 ||
		{ tail -n 30 /tmp/zsm-load-build.log; exit 1; }
	for spec in "$@"; do
		IFS=: read -r name x envs <<<"$spec"
		mkdir -p "$runs/$name"
		# shellcheck disable=SC2086
		setsid env ${envs//,/ } bash -c \
			'"$1"/bench/load.sh -b "$2" -s small -x "$3" -n "$4" -t "$5" \
				-o "$6" >"$6/out" 2>&1; echo $? >"$6/rc"' \
			_ "$repo" "$build" "$x" "$pairs" "$secs" "$runs/$name" \
			</dev/null >/dev/null 2>&1 &
	done
	sleep 5
	report
}

collect() {
	local limit=${1:-560} d
	SECONDS=0
	# Not grep -q: its early exit fails report's pipe under pipefail.
	while [ $SECONDS -lt "$limit" ] && [ "$(report | grep -c ' running$')" -gt 0 ]; do
		sleep 5
	done
	report | tee "$OUT/load-long.txt"
	for d in "$runs"/*/; do
		mkdir -p "$OUT/$(basename "$d")"
		cp "$d"/out "$d"/*.log "$OUT/$(basename "$d")/" 2>/dev/null
	done
}

case ${1:-} in
start) shift; start "$@" ;;
wait) shift; collect "$@" ;;
*) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
