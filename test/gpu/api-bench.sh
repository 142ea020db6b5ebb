#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# api-bench.sh: zsm's API on one GPU, in one command: two ranks on GPU 0 as
# two hosts (zsm's network path, TCP on loopback) unless a step says
# otherwise.  Builds nothing: give it a build made with the CUDA headers
# (one-gpu.sh's, say).  Runs ON the GPU machine from the repo root, with
# .debs carried (libfabric) or ZSM_DEPS already unpacked:
#
#     bash test/gpu/api-bench.sh BUILD [--quick]
#
# Steps (each under its own timeout; logs in $OUT/api-bench-<step>.log):
#   coll-net      zsm-bench --coll both --gpu 0 --hosts 0,1, 8 B .. 64 MiB,
#                 50 calls a size, out of place and in place (every byte
#                 checked)
#   coll-ce       the same with one host for both ranks (zsm's same-host
#                 path)
#   coll-vs-put   bench/coll-vs-put.sh -g 0,0: AllGather at 64 MiB per rank
#                 >= 0.9 x zsm-bench --rma put, same run          [issue 15]
#   overlap       bench/coll-overlap.sh: AllGather under matmuls filling
#                 every SM in the same process, loaded / idle <= 1.1
#                 (matmuls in every rank's process)                [issue 15]
#   overlap-r0    the same with the matmuls in rank 0's process only: tells
#                 SM use from two processes' time slices on one GPU (info)
#   example-c     examples/allgather_overlap --gpu 0, two ranks
#   example-c-host  the same with --host (host-memory mode)
#   example-py    torchrun --nproc-per-node 2 examples/allgather_overlap.py
#                 --one-gpu
# --quick: 3 rounds instead of 5, and coll-net/coll-ce up to 1 MiB.
# ZSM_COLL_VS_PUT_ARGS: more arguments for coll-vs-put.sh (-p both, say).
# Prints one table and writes it to $OUT/api-bench.txt; exit 0 when every
# step but overlap-r0 passed.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
OUT=${OUT:-/tmp/out}
PY=${PYTHON:-python3}
build=${1:-}
if [ -z "$build" ] || [ ! -d "$build" ]; then
	echo "usage: bash test/gpu/api-bench.sh BUILD [--quick]" >&2
	exit 2
fi
build=$(cd "$build" && pwd)
rounds=5 maxsz=64M
[ "${2:-}" = --quick ] && rounds=3 maxsz=1M
mkdir -p "$OUT"
sum=$OUT/api-bench.txt
: >"$sum"

# libfabric for the plugin (it loads it at the first init).
deps=${ZSM_DEPS:-/tmp/zsm-deps}
if [ -f "$deps/usr/lib/x86_64-linux-gnu/libfabric.so.1" ]; then
	export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
elif [ -d "$repo/.debs" ]; then
	# shellcheck source=test/gpu/deps.sh
	. "$here/deps.sh"
	zsm_gpu_deps "$repo" "$deps" "$OUT/api-bench-deps.log" >/dev/null ||
		echo "api-bench: unpacking .debs failed (api-bench-deps.log)" >&2
fi
export ZSM_PROVIDER=tcp ZSM_DOMAIN=lo CUDA_MODULE_LOADING=EAGER
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONPATH="$repo/python${PYTHONPATH:+:$PYTHONPATH}"
export ZSM_LIBRARY=$build/plugin/libnccl-net-zsm.so

names=() results=() details=()
record() { # name result detail (empty: the last line of the step's log)
	local d=$3
	[ -n "$d" ] || d=$(grep -v '^[[:space:]]*$' "$OUT/api-bench-$1.log" 2>/dev/null |
		tail -n 1 | cut -c1-200)
	names+=("$1") results+=("$2") details+=("$d")
	echo "== $1: $2 ($d)"
}
word() {
	case $1 in
	0) echo PASS ;; 77) echo SKIP ;; 124|137) echo TIMEOUT ;; *) echo "FAIL($1)" ;;
	esac
}
step() { # name timeout command...: run, log, rc in $rc
	local name=$1 t=$2
	shift 2
	echo "== $name (up to $t s): $*"
	{ echo "# $*"; } >"$OUT/api-bench-$name.log"
	timeout -k 10 "$t" "$@" >>"$OUT/api-bench-$name.log" 2>&1
	rc=$?
}

# ---------------------------------------------------------------- zsm-bench
for path in net ce; do
	if [ $path = net ]; then
		# shellcheck disable=SC2054  # one argument, 0,1
		envs=() hosts=(--hosts 0,1)
	else
		envs=(ZSM_HOSTID=api-bench-one-host) hosts=()
	fi
	rcs=""
	for place in out in; do
		inplace=()
		[ $place = in ] && inplace=(--inplace)
		step coll-$path 240 env "${envs[@]}" "$build/tools/zsm-bench" \
			--coll both --gpu 0 "${hosts[@]}" "${inplace[@]}" \
			--min-size 8 --max-size "$maxsz" --iters 50
		cat "$OUT/api-bench-coll-$path.log" >>"$OUT/api-bench-coll-$path-all.log"
		rcs="$rcs $rc"
	done
	mv "$OUT/api-bench-coll-$path-all.log" "$OUT/api-bench-coll-$path.log"
	ag=$(awk '$1 == "all_gather" { v = $3 } END { print v }' "$OUT/api-bench-coll-$path.log")
	a2a=$(awk '$1 == "all_to_all" { v = $3 } END { print v }' "$OUT/api-bench-coll-$path.log")
	res=PASS
	for r in $rcs; do [ "$r" = 0 ] || res=$(word "$r"); done
	record coll-$path "$res" "exits:$rcs; at $maxsz in place: all_gather ${ag:--} GB/s, all_to_all ${a2a:--} GB/s received per rank"
done

# ---------------------------------------------------------------- benches
# shellcheck disable=SC2086  # words, as given
step coll-vs-put 300 bash "$repo/bench/coll-vs-put.sh" -b "$build" \
	-g 0,0 -r "$rounds" ${ZSM_COLL_VS_PUT_ARGS:-}
record coll-vs-put "$(word $rc)" "$(grep -E '^(put|all_gather|all_gather / put|all_gather --poll nap / put):' "$OUT/api-bench-coll-vs-put.log" |
	sed -E 's/^(put|all_gather):.*median ([0-9.]+).*/\1 \2/; s/ \(target.*\)//' | tr '\n' ';' | sed 's/;$//')"

for load in all 0; do
	name=overlap
	[ $load = 0 ] && name=overlap-r0
	step $name 400 bash "$repo/bench/coll-overlap.sh" -b "$build" -g 0 \
		-r "$rounds" -l $load -j "$OUT/api-bench-$name.json"
	record $name "$(word $rc)" "$(grep -E '^(idle|loaded) +ms:|^loaded / idle|^rank [0-9]+ matmul|^the load ended' "$OUT/api-bench-$name.log" |
		sed -E 's/^(idle|loaded) +ms:.* median ([0-9.]+).*/\1 \2 ms/;
			s/ \(target.*\)//;
			s/^rank ([0-9]+) matmul: .*with \/ alone ([0-9.]+)/rank \1 matmul with\/alone \2/' |
		tr '\n' ';' | sed 's/;$//')"
done

# ---------------------------------------------------------------- examples
example_c() { # name args...: the C example's two ranks, both checked
	local name=$1 port
	shift
	port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	: >"$OUT/api-bench-$name.log"
	local pids=() r
	for r in 0 1; do
		RANK=$r WORLD_SIZE=2 ZSM_BOOT_ADDR=127.0.0.1:$port \
			ZSM_HOSTID=example-host$r timeout -k 10 240 \
			"$build/examples/allgather_overlap" "$@" \
			>"$OUT/api-bench-$name.$r.log" 2>&1 &
		pids+=($!)
	done
	rc=0
	for r in 0 1; do
		wait "${pids[$r]}" || rc=$?
		cat "$OUT/api-bench-$name.$r.log" >>"$OUT/api-bench-$name.log"
		rm -f "$OUT/api-bench-$name.$r.log"
	done
	local n
	n=$(grep -c 'every byte checked' "$OUT/api-bench-$name.log")
	[ "$rc" = 0 ] && [ "$n" != 2 ] && rc=1
	record "$name" "$(word $rc)" "$(grep -m1 -oE 'rank 0 of .*' "$OUT/api-bench-$name.log" | cut -c1-200)"
}
if [ -x "$build/examples/allgather_overlap" ]; then
	example_c example-c --gpu 0
	example_c example-c-host --host --size 4194304 --matmuls 1
else
	record example-c FAIL "no $build/examples/allgather_overlap (built only where cuda_runtime.h and cuBLAS are found)"
fi
if command -v torchrun >/dev/null; then
	step example-py 300 torchrun --nproc-per-node 2 \
		"$repo/examples/allgather_overlap.py" --one-gpu
	n=$(grep -c 'every element checked' "$OUT/api-bench-example-py.log")
	[ "$rc" = 0 ] && [ "$n" != 2 ] && rc=1
	record example-py "$(word $rc)" "$(grep -m1 -oE 'rank 0 of .*' "$OUT/api-bench-example-py.log" | cut -c1-200)"
else
	record example-py FAIL "no torchrun on PATH"
fi

# ---------------------------------------------------------------- table
fail=0
{
	echo
	echo "api-bench: zsm's API, two ranks on GPU 0 ($build)"
	echo
	printf '| %-14s | %-8s | %s\n' step result detail
	printf '|----------------|----------|-------\n'
	for i in "${!names[@]}"; do
		printf '| %-14s | %-8s | %s\n' "${names[$i]}" "${results[$i]}" "${details[$i]}"
		[ "${names[$i]}" = overlap-r0 ] && continue
		[ "${results[$i]}" = PASS ] || fail=1
	done
	echo
	echo "api-bench: $([ $fail = 0 ] && echo PASS || echo FAIL) (overlap-r0 is information only)"
} | tee "$sum"
grep -q '^api-bench: PASS' "$sum"
