#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# coll-overlap.sh: does zsm's AllGather need SMs?  Two ranks on one GPU as
# two hosts (zsm's network path), in-place AllGathers of SIZE per rank,
# timed idle and while matmuls on another stream of the same process keep
# every SM busy for longer than the AllGathers, alternating rounds
# (bench/coll_overlap.py, through the zsm Python package in python/); also
# the matmuls' own rate alone and with the AllGathers.  Target: loaded /
# idle at most 1.1.
#
#     bench/coll-overlap.sh [-b BUILD] [-g GPU] [-s SIZE] [-r ROUNDS]
#                           [-i ITERS] [-l all|0] [-j JSON] [--host]
#
# -l 0 runs the matmuls in rank 0's process only; -j writes the figures
# as JSON too.  --host checks the
# harness without a GPU (host memory, no load, no verdict).  Needs PyTorch
# (not with --host) and the plugin's libfabric on LD_LIBRARY_PATH;
# ZSM_PROVIDER/ZSM_DOMAIN default to tcp and lo.  Exit 0 on PASS, 1 on
# FAIL, 2 when it did not run.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build gpu=0 size=64M rounds=5 iters=10 load=all host=() json=()
while [ $# -gt 0 ]; do
	case $1 in
	-b) build=$2; shift 2 ;;
	-g) gpu=$2; shift 2 ;;
	-s) size=$2; shift 2 ;;
	-r) rounds=$2; shift 2 ;;
	-i) iters=$2; shift 2 ;;
	-l) load=$2; shift 2 ;;
	-j) json=(--json "$2"); shift 2 ;;
	--host) host=(--host); shift ;;
	*) echo "usage: $0 [-b BUILD] [-g GPU] [-s SIZE] [-r ROUNDS] [-i ITERS] [-l all|0] [-j JSON] [--host]" >&2
	   exit 2 ;;
	esac
done
lib=$build/plugin/libnccl-net-zsm.so
[ -f "$lib" ] || { echo "no $lib: build first" >&2; exit 2; }
export ZSM_LIBRARY=$lib
export ZSM_PROVIDER=${ZSM_PROVIDER:-tcp} ZSM_DOMAIN=${ZSM_DOMAIN:-lo}
# The GPU machine's rule: NVLink multicast stays off.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
exec python3 "$top/bench/coll_overlap.py" --gpu "$gpu" --size "$size" \
	--rounds "$rounds" --iters "$iters" --load-ranks "$load" "${host[@]}" "${json[@]}"
