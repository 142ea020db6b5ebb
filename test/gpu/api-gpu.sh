#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# api-gpu.sh: zsm's own API (include/zsm/zsm.h) on the GPU machine, two
# ranks on GPU 0: test/gpu/api_gpu.c over the network path (two hosts to
# zsm) and over the same-host path (one host).  Runs ON that machine from
# the repo root with .debs carried:
#
#     bash test/gpu/api-gpu.sh [--compare ROUNDS] [-- API_GPU_ARGS]
#
# --compare R (needs .nccl230 carried, see nccl-rma.sh) then times 8-byte
# put-signal round trips over the network path R times each, alternated:
# zsm's API (api_gpu -p pingpong) and NCCL 2.30.7's ncclPutSignal through
# zsm's RMA table (nccl_rma --part rma), 2000 round trips a run; the
# medians of the runs' medians are compared (zsm's must not be larger).
#
# Builds zsm into ZSM_BUILD (/tmp/zsm-build) unless it is built there.
# Writes $OUT/api-gpu.txt (the summary) and each run's log; exit 0 only
# when every run passed.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
OUT=${OUT:-/tmp/out}
BUILD=${ZSM_BUILD:-/tmp/zsm-build}
cuda=${CUDA_HOME:-/usr/local/cuda}
rounds=0
if [ "${1:-}" = --compare ]; then
	rounds=$2
	shift 2
fi
[ "${1:-}" = -- ] && shift
mkdir -p "$OUT"
sum="$OUT/api-gpu.txt"
: >"$sum"
fail=0
say() { echo "$*" | tee -a "$sum"; }
blog="$OUT/api-gpu-build.log"

. "$here/deps.sh"
zsm_gpu_deps "$repo" "${ZSM_DEPS:-/tmp/zsm-deps}" "$blog" >/dev/null || exit 1
if [ ! -f "$BUILD/build.ninja" ]; then
	meson setup "$BUILD" "$repo" -Dbuildtype=release >>"$blog" 2>&1
fi
ninja -C "$BUILD" >>"$blog" 2>&1 || { say "build: FAIL"; tail -n 20 "$blog"; exit 1; }
exe=$BUILD/api_gpu
cc -std=gnu11 -O2 -Wall -Wextra -I"$repo/include" -I"$cuda/include" \
	"$here/api_gpu.c" -o "$exe" -L"$cuda/lib64" -lcudart -ldl \
	-L"$BUILD/plugin" -lnccl-net-zsm \
	-Wl,-rpath,"$BUILD/plugin:$cuda/lib64" >>"$blog" 2>&1 ||
	{ say "build api_gpu: FAIL"; tail -n 20 "$blog"; exit 1; }
say "build: PASS"
export ZSM_PROVIDER=tcp ZSM_DOMAIN=lo CUDA_MODULE_LOADING=EAGER

for hosts in 2 1; do
	name=$([ $hosts = 2 ] && echo net || echo same-host)
	timeout 900 "$exe" -h $hosts "$@" >"$OUT/api-gpu-$name.log" 2>&1
	rc=$?
	say "api_gpu over $name: rc $rc, $(grep -c ': PASS' "$OUT/api-gpu-$name.log") checks passed, $(grep -c ': FAIL' "$OUT/api-gpu-$name.log") failed"
	grep -E '^(PINGPONG|ALLGATHER|CUPTI)' "$OUT/api-gpu-$name.log" | sed 's/^/  /' | tee -a "$sum"
	[ $rc = 0 ] || { fail=1; grep -E 'FAIL|WARN' "$OUT/api-gpu-$name.log" | head -8 | tee -a "$sum"; }
done
median() { sort -g | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}'; }
if [ "$rounds" -gt 0 ]; then
	: >"$OUT/pp-zsm.txt"
	: >"$OUT/pp-nccl.txt"
	for r in $(seq "$rounds"); do
		timeout 300 "$exe" -h 2 -p pingpong -n 2000 >"$OUT/pp-zsm-$r.log" 2>&1
		grep -m1 -oE '^PINGPONG 8B median [0-9.]+' "$OUT/pp-zsm-$r.log" |
			awk '{print $4}' >>"$OUT/pp-zsm.txt"
		ZSM_PLUGIN=$BUILD/plugin/libnccl-net-zsm.so ZSM_RMA_T=120 \
			timeout 400 bash "$here/nccl-rma.sh" --modes net -- --part rma \
			--max-bytes 4096 --iters 2000 --no-cupti >/dev/null 2>&1
		cp "$OUT/nccl-rma-net.log" "$OUT/pp-nccl-$r.log" 2>/dev/null
		grep -m1 -oE '^CHECK rma ping-pong: PASS +r0: [0-9]+ round trips of [0-9A-Za-z ]+: median [0-9.]+' \
			"$OUT/pp-nccl-$r.log" | sed -E 's/.*median //' >>"$OUT/pp-nccl.txt"
	done
	z=$(median <"$OUT/pp-zsm.txt")
	n=$(median <"$OUT/pp-nccl.txt")
	say "put-signal 8 B round trip, network path, median of $rounds runs of 2000:" \
		"zsm API ${z:-?} us ($(tr '\n' ' ' <"$OUT/pp-zsm.txt")), NCCL 2.30.7" \
		"ncclPutSignal via zsm's RMA table ${n:-?} us ($(tr '\n' ' ' <"$OUT/pp-nccl.txt"))"
	if [ -n "$z" ] && [ -n "$n" ] && awk -v z="$z" -v n="$n" 'BEGIN {exit !(z <= n)}'; then
		say "  zsm API <= NCCL: PASS"
	else
		say "  zsm API <= NCCL: FAIL"
		fail=1
	fi
fi
say "api-gpu: $([ $fail = 0 ] && echo PASS || echo FAIL)"
exit $fail
