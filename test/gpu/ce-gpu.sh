#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ce-gpu.sh: GPU buffers through the same-host transport, on the GPU
# machine.  Runs test/gpu/run.sh first (deps, build, unit suites, NCCL
# through zsm; no socket run; its arguments, e.g. --quick or --no-unit),
# then with that build:
#   1. zsm-conformance --gpu 0,1 and --gpu 0,0 (gpu_buffers and friends);
#   2. zsm-bench --gpu 0,1 and 0,0 stream bandwidth, 4 MiB to 1 GiB;
#   3. bench/zero-sm.sh: the 1 GiB transfer idle and with every SM busy;
#   4. nccl-gdr.sh: NCCL handing GPU buffers to ce, exact results for every
#      collective and size, channels via NET/zsm/GDRDMA, and bandwidth
#      beside NCCL's NVLink path and its socket transport, in one run
#      (its exact checks and the issue's bandwidth rows; ZSM_GDR_RUNS
#      picks others, --no-gdr leaves the step out).
# So `bash test/gpu/ce-gpu.sh --no-unit --no-nccl` runs everything the
# issue asks of the GPU machine.  Logs go to $OUT/ce-gpu.log and
# $OUT/gdr-summary.txt.  Exit 0 only when every step passed.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
OUT=${OUT:-/tmp/out}
BUILD=${ZSM_BUILD:-/tmp/zsm-build}
mkdir -p "$OUT"
log="$OUT/ce-gpu.log"
fail=0
step() { echo "== $*" | tee -a "$log"; }

gdr=1 args=()
for a in "$@"; do
	if [ "$a" = --no-gdr ]; then gdr=0; else args+=("$a"); fi
done
# NCCL first, with the plugin's defaults (host memory only).
bash "$here/run.sh" --no-socket "${args[@]}" >"$OUT/run.txt" 2>&1 || fail=1
tail -n 45 "$OUT/run.txt"
export LD_LIBRARY_PATH="${ZSM_DEPS:-/tmp/zsm-deps}/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export ZSM_PROVIDER=tcp ZSM_DOMAIN=lo ZSM_CE_GPU=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
plugin=$BUILD/plugin/libnccl-net-zsm.so
kit=$BUILD/tools/zsm-conformance bench=$BUILD/tools/zsm-bench

for g in 0,1 0,0; do
	step "zsm-conformance --gpu $g"
	timeout 240 "$kit" --gpu $g --only gpu_buffers,order,grouped_n,data_sizes,close_inflight,peer_dies_recv \
		"$plugin" 2>>"$log" | tee -a "$log" | grep -v '^#'
	[ "${PIPESTATUS[0]}" = 0 ] || fail=1
	grep -q "^PASS gpu_buffers" "$log" || fail=1
done
for g in 0,1 0,0; do
	step "zsm-bench --gpu $g"
	timeout 200 "$bench" --plugin "$plugin" --gpu $g --test stream \
		--sizes 4M,16M,64M,256M,1G --reps 5 --no-verify 2>>"$log" | tee -a "$log"
	[ "${PIPESTATUS[0]}" = 0 ] || fail=1
done
step "zero-sm"
timeout 300 bash "$repo/bench/zero-sm.sh" -b "$BUILD" -r 3 -s 1G -g 0,1 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" = 0 ] || fail=1
if [ $gdr = 1 ]; then
	step "nccl-gdr"
	ZSM_GDR_RUNS=${ZSM_GDR_RUNS:-exact,exact-best,bw-best,bw-best-again,bw-host,bw-nvlink,bw-socket} \
		ZSM_BUILD=$BUILD bash "$here/nccl-gdr.sh" >>"$log" 2>&1 || fail=1
	grep -E "^\[.*\] (PASS|FAIL)|BW .*1GiB" "$OUT/gdr-summary.txt"
	# How many channels of each run said so (counts per run).
	grep -E "GPU Direct RDMA Enabled for GPU|via NET/zsm" "$OUT/gdr-summary.txt"
fi
step "ce-gpu: $([ $fail = 0 ] && echo PASS || echo FAIL)"
exit $fail
