#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# one-gpu.sh: what one GPU can show of zsm's two paths, on the GPU
# machine, in one command: build, then zsm-conformance --gpu 0,0 and
# --rma --gpu 0,0 over ce and over net, then NCCL through zsm with two
# ranks on GPU 0 as two hosts (NCCL_HOSTID per rank; zsm's network
# path) and as two hosts to NCCL but one to zsm (ZSM_HOSTID shared; ce),
# exact results checked by nccl_check.py.  Runs ON that machine from the
# repo root with .debs carried:
#
#     bash test/gpu/one-gpu.sh [--quick]
#
# Writes $OUT/one-gpu.log (the summary) and each step's log; exit 0
# only when every step passed.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
OUT=${OUT:-/tmp/out}
BUILD=${ZSM_BUILD:-/tmp/zsm-build}
PY=${PYTHON:-python3}
quick=()
[ "${1:-}" = --quick ] && quick=(--quick)
mkdir -p "$OUT"
sum="$OUT/one-gpu.log"
: >"$sum"
fail=0
say() { echo "$*" | tee -a "$sum"; }

. "$here/deps.sh"
zsm_gpu_deps "$repo" "${ZSM_DEPS:-/tmp/zsm-deps}" "$OUT/one-gpu-build.log" || exit 1
{ meson setup "$BUILD" "$repo" -Dbuildtype=release && ninja -C "$BUILD"; } \
	>>"$OUT/one-gpu-build.log" 2>&1 || { say "build: FAIL"; tail -n 20 "$OUT/one-gpu-build.log"; exit 1; }
plugin=$BUILD/plugin/libnccl-net-zsm.so
say "build: PASS"
export ZSM_PROVIDER=tcp ZSM_DOMAIN=lo CUDA_MODULE_LOADING=EAGER

# ZSM_ONE_GPU_KIT=0 leaves the kit out (a second look at NCCL only).
for ce in $([ "${ZSM_ONE_GPU_KIT:-1}" = 1 ] && echo 1 0); do
	name=$([ $ce = 1 ] && echo ce || echo net)
	ZSM_CE=$ce timeout 200 "$BUILD/tools/zsm-conformance" --gpu 0,0 \
		--zsm-rules "$plugin" >"$OUT/kit-$name.log" 2>&1
	rc=$?
	line=$(tail -n 1 "$OUT/kit-$name.log")
	say "zsm-conformance --gpu 0,0 over $name: rc $rc, $line"
	[ $rc = 0 ] || { fail=1; grep -E '^FAIL' "$OUT/kit-$name.log" | head -5 | tee -a "$sum"; }
	# The RMA table with GPU windows: --hosts 1 takes ce, 2 the network.
	ZSM_RMA=1 timeout 240 "$BUILD/tools/zsm-conformance" --rma --gpu 0,0 \
		--max-size 256M \
		--hosts $((2 - ce)) "$plugin" >"$OUT/kit-rma-$name.log" 2>&1
	rc=$?
	say "zsm-conformance --rma --gpu 0,0 over $name: rc $rc, $(tail -n 1 "$OUT/kit-rma-$name.log")"
	[ $rc = 0 ] || { fail=1; grep -E '^(FAIL|SKIP)' "$OUT/kit-rma-$name.log" | head -5 | tee -a "$sum"; }
done

for path in net ce; do
	# INFO lines say which transport NCCL used ('via NET/zsm') and
	# which comms took ce (zsm's own INFO line).
	envs=(NCCL_NET_PLUGIN="$plugin" NCCL_NET=zsm NCCL_NET_PLUGIN_REF_COUNT=1
		NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET)
	[ $path = ce ] && envs+=(ZSM_HOSTID=one-gpu-host)
	env "${envs[@]}" timeout 220 "$PY" "$here/nccl_check.py" --label "$path" \
		--out "$OUT" --timeout 180 --one-gpu "${quick[@]}" \
		>"$OUT/nccl-$path.log" 2>&1
	rc=$?
	via=$(grep -c 'via NET/zsm' "$OUT/nccl-$path.log")
	cma=$(grep -c 'cross-memory attach' "$OUT/nccl-$path.log")
	say "NCCL through zsm, two ranks on GPU 0, $path: rc $rc, $via 'via NET/zsm' lines, $cma ce comms; $(grep -E "^\[$path\] (PASS|FAIL)" "$OUT/nccl-$path.log" | tail -n 1)"
	[ $rc = 0 ] && [ "$via" -gt 0 ] || fail=1
	if [ $path = ce ] && [ "$cma" = 0 ]; then
		say "  FAIL: no comm took ce"; fail=1
	fi
	if [ $path = net ] && [ "$cma" != 0 ]; then
		say "  FAIL: a comm took ce on the network path"; fail=1
	fi
done
say "one-gpu: $([ $fail = 0 ] && echo PASS || echo FAIL)"
exit $fail
