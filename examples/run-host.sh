#!/bin/sh
# SPDX-License-Identifier: MIT
# The C example in host-memory mode, as examples/README.md runs it: two
# processes, each its own host to zsm (the network path), joined through
# RANK, WORLD_SIZE and ZSM_BOOT_ADDR.  Passes when both exit 0 and say
# they checked every byte.
# Usage: run-host.sh ALLGATHER_OVERLAP [PORT] (a free port by default)
set -u

prog=$1
port=${2:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
work=$(mktemp -d "${TMPDIR:-/tmp}/zsm-example.XXXXXX")
trap 'rm -rf "$work"' EXIT

for r in 0 1; do
	RANK=$r WORLD_SIZE=2 ZSM_BOOT_ADDR=127.0.0.1:$port \
		ZSM_HOSTID=example-host$r \
		"$prog" --host --size 4194304 --matmuls 1 >"$work/out$r" 2>&1 &
	eval "pid$r=$!"
done
# shellcheck disable=SC2154 # pid0 and pid1 come from the eval above
wait "$pid0"
rc0=$?
# shellcheck disable=SC2154
wait "$pid1"
rc1=$?
cat "$work/out0" "$work/out1"
if [ $rc0 -ne 0 ] || [ $rc1 -ne 0 ]; then
	echo "FAIL: exit $rc0 and $rc1"
	exit 1
fi
n=$(cat "$work/out0" "$work/out1" | grep -c 'host memory), every byte checked')
[ "$n" -eq 2 ] || { echo "FAIL: $n of 2 ranks reported a checked run"; exit 1; }
echo "PASS: the example ran in host-memory mode on both ranks"
