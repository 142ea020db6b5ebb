#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# load.sh: the long load run of issue 12 (acceptance point 3): zsm-load
# (test/load/zsm-load.c) with 1000 comm pairs each way, sizes 0..8 MiB,
# grouped receives, every byte checked, for 10 minutes, over tcp;ofi_rxm
# on 127.0.0.1 (ZSM_CE=0) and over the same-host transport (ZSM_CE=1),
# one after the other.  Each run fails on a stall, a lost message, an
# error, a wrong byte or size, a count of messages or bytes sent that
# differs from the count received, or RSS/fds that grow after the
# warm-up (a fifth of the run): +32 MiB or 5% RSS, +2 fds.  Prints each
# run's summary and a last line "load: N passed, N failed".
#
# Issue 32's run, many comms of small messages (eager on rxm) both ways,
# receives posted in an order the senders do not follow and left posted
# when the senders stop, also over tcp with a second endpoint and its
# own thread (ZSM_NET_DUPLEX=1):
#
#     bench/load.sh -s small -x tcp,ce,duplex
#
#     bench/load.sh [-b BUILD] [-p PLUGIN] [-t SECONDS] [-n PAIRS]
#                   [-s large|small] [-x tcp,ce,duplex] [-o DIR]
#                   [-- ZSM-LOAD-OPTIONS...]
#
#   -b BUILD    meson build folder (default: build, under the repo)
#   -p PLUGIN   the plugin .so (default: BUILD's libnccl-net-zsm.so)
#   -t SECONDS  traffic time of each run (default 600)
#   -n PAIRS    comm pairs each way (default 1000)
#   -s SHAPE    large: sizes 0..8 MiB (default); small: sizes 0..16 KiB,
#               32 groups in flight per comm, --recv-ahead, a stall
#               after 10 s, a lost message after 120 s
#   -x LIST     transports, comma list of tcp, ce and duplex (default
#               tcp,ce)
#   -o DIR      keep each run's whole output there (default: a temp dir)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build plugin= secs=600 pairs=1000 which=tcp,ce dir= shape=large
while [ $# -gt 0 ]; do
	case $1 in
	-b) build=$2; shift 2 ;;
	-p) plugin=$2; shift 2 ;;
	-t) secs=$2; shift 2 ;;
	-n) pairs=$2; shift 2 ;;
	-s) shape=$2; shift 2 ;;
	-x) which=$2; shift 2 ;;
	-o) dir=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "usage: $0 [-b BUILD] [-p PLUGIN] [-t SECONDS] [-n PAIRS]" \
		"[-s large|small] [-x tcp,ce,duplex] [-o DIR]" \
		"[-- ZSM-LOAD-OPTIONS...]" >&2; exit 2 ;;
	esac
done
load=$build/test/load/zsm-load
plugin=${plugin:-$build/plugin/libnccl-net-zsm.so}
for f in "$load" "$plugin"; do
	[ -e "$f" ] || { echo "no $f: build first" >&2; exit 2; }
done
if [ -z "$dir" ]; then
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
fi
mkdir -p "$dir"
export ZSM_PROVIDER=${ZSM_PROVIDER:-tcp} ZSM_DOMAIN=${ZSM_DOMAIN:-lo}
case $shape in
large) shaped= ;;
# small: --recv-ahead posts each comm's receives up to --depth rounds out
# of the senders' order, so a send waits for its receive by design for
# up to 32 of its comm's rounds; with 1000 comm pairs a comm moves one
# or two rounds a second (16 idle cores as 2 busy ones), about 20-30 s,
# which zsm-load's default --lost-s (30) takes for a lost message.  A
# message lost for good stays open until the end, whose counts catch it.
small) shaped="--max-size 16K --depth 32 --recv-ahead --stall-s 10 --lost-s 120" ;;
*) echo "unknown shape $shape (large or small)" >&2; exit 2 ;;
esac

passed=0 failed=0
for x in ${which//,/ }; do
	case $x in
	tcp) ce=0 duplex=0 ;;
	ce) ce=1 duplex=0 ;;
	duplex) ce=0 duplex=1 ;;
	*) echo "unknown transport $x (tcp, ce or duplex)" >&2; exit 2 ;;
	esac
	log=$dir/load-$shape-$x.log
	echo "== $x: ZSM_CE=$ce ZSM_NET_DUPLEX=$duplex zsm-load --plugin" \
		"$plugin --pairs $pairs --seconds $secs $shaped $*"
	start=$(date +%s)
	# shellcheck disable=SC2086 # $shaped is a list of options
	ZSM_CE=$ce ZSM_NET_DUPLEX=$duplex "$load" --plugin "$plugin" \
		--pairs "$pairs" --seconds "$secs" $shaped "$@" >"$log" 2>&1
	rc=$?
	# The summary, or the failure and its counts; the per-comm lines of
	# a dump and the per-group lines of --verbose stay in the log.
	grep -v -e '^rank [01] \(sent\|received\) ' -e '^  dir ' "$log" |
		tail -40
	[ "$rc" -eq 0 ] || echo "== $x: pending comms: $log (keep it with -o)"
	echo "== $x: exit $rc after $(($(date +%s) - start)) s"
	if [ "$rc" -eq 0 ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
done
echo "load: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
