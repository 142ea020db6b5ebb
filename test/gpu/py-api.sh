#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# py-api.sh: the Python package (python/zsm) with PyTorch on one GPU, in
# one command, on the GPU machine from the repo root with .debs carried:
#
#     bash test/gpu/py-api.sh [--quick]
#
# Builds zsm (into $ZSM_BUILD, default /tmp/zsm-build, as one-gpu.sh), then
# runs test/gpu/py-api.py under torchrun with two ranks on GPU 0: as two
# hosts to zsm (its network path), then as one (ce).  Writes
# $OUT/py-api-{net,ce}.log and $OUT/py-api.log (the summary); exit 0 only
# when both passed, 77 when there is no GPU.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
OUT=${OUT:-/tmp/out}
BUILD=${ZSM_BUILD:-/tmp/zsm-build}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
sum="$OUT/py-api.log"
: >"$sum"
say() { echo "$*" | tee -a "$sum"; }

if ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
	say "py-api: SKIP (no torch with a CUDA device)"
	exit 77
fi
. "$here/deps.sh"
zsm_gpu_deps "$repo" "${ZSM_DEPS:-/tmp/zsm-deps}" "$OUT/py-api-build.log" || exit 1
{ meson setup "$BUILD" "$repo" -Dbuildtype=release 2>/dev/null ||
	meson setup --reconfigure "$BUILD" "$repo"; } >>"$OUT/py-api-build.log" 2>&1
ninja -C "$BUILD" >>"$OUT/py-api-build.log" 2>&1 ||
	{ say "build: FAIL"; tail -n 20 "$OUT/py-api-build.log"; exit 1; }

export ZSM_LIBRARY=$BUILD/plugin/libnccl-net-zsm.so PYTHONPATH=$repo/python
export ZSM_PROVIDER=tcp ZSM_DOMAIN=lo ZSM_WAIT_TIMEOUT_MS=${ZSM_WAIT_TIMEOUT_MS:-60000}
# Eager loading: docs/api.md, "GPU mode" (lazy loading hung the first run).
export CUDA_MODULE_LOADING=EAGER
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
fail=0
for path in net ce; do
	flags=("$@")
	[ $path = ce ] && flags+=(--same-host)
	timeout 240 "$PY" -m torch.distributed.run --standalone --nproc_per_node 2 \
		"$here/py-api.py" "${flags[@]}" >"$OUT/py-api-$path.log" 2>&1
	rc=$?
	say "py-api over $path: rc $rc, $(grep -c '\] PASS ' "$OUT/py-api-$path.log") PASS lines, $(grep -c '\] FAIL' "$OUT/py-api-$path.log") FAIL lines"
	grep -E '\] FAIL' "$OUT/py-api-$path.log" | head -5 | tee -a "$sum"
	[ $rc = 0 ] || fail=1
done
say "py-api: $([ $fail = 0 ] && echo PASS || echo FAIL)"
exit $fail
