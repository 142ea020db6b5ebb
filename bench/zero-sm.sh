#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# zero-sm.sh: does a zsm GPU transfer need SMs?  Times zsm-bench --gpu G0,G1
# stream transfers of SIZE on idle GPUs, then again while bench/sm_load.py
# keeps every SM of both GPUs busy with matmuls (started first, running
# longer than the transfers), alternating idle and loaded rounds.  A
# transfer done by copy engines runs at the same speed either way; one done
# by kernels would wait for the SMs.  Prints the medians and the ratio
# loaded / idle of the time per transfer (target: at most 1.2).
#
#     bench/zero-sm.sh [-b BUILD] [-r ROUNDS] [-s SIZE] [-g G0,G1]
#
# Needs 2 GPUs (or -g 0,0 for one), PyTorch, and the plugin built with its
# libfabric on LD_LIBRARY_PATH; ZSM_PROVIDER/ZSM_DOMAIN as for zsm-bench.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build rounds=5 size=1G gpus=0,1
while [ $# -gt 0 ]; do
	case $1 in
	-b) build=$2; shift 2 ;;
	-r) rounds=$2; shift 2 ;;
	-s) size=$2; shift 2 ;;
	-g) gpus=$2; shift 2 ;;
	*) echo "usage: $0 [-b BUILD] [-r ROUNDS] [-s SIZE] [-g G0,G1]" >&2; exit 2 ;;
	esac
done
bench=$build/tools/zsm-bench
# The plugin offers GPU buffers only when asked (see ZSM_CE_GPU).
export ZSM_CE_GPU=${ZSM_CE_GPU:-1}
[ -x "$bench" ] || { echo "no $bench: build first" >&2; exit 2; }
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$out"' EXIT

one() { # one run; prints usec per transfer
	"$bench" --gpu "$gpus" --test stream --sizes "$size" --reps 3 \
		--iters 20 --no-verify --csv "$out/run.csv" >/dev/null 2>"$out/err" ||
		{ echo "zsm-bench failed:" >&2; cat "$out/err" >&2; exit 2; }
	tail -n 1 "$out/run.csv" | cut -d, -f5
}

idle=() loaded=()
for r in $(seq 1 "$rounds"); do
	idle+=("$(one)")
	pids=()
	for g in $(echo "$gpus" | tr , '\n' | sort -u); do
		python3 "$top/bench/sm_load.py" "$g" 60 >"$out/load$g" 2>&1 &
		pids+=($!)
	done
	# Measure only once every load runs.
	for g in $(echo "$gpus" | tr , '\n' | sort -u); do
		for _ in $(seq 1 300); do
			grep -q busy "$out/load$g" 2>/dev/null && break
			sleep 0.1
		done
		grep -q busy "$out/load$g" || { echo "sm_load on GPU $g did not start:" >&2; cat "$out/load$g" >&2; exit 2; }
	done
	loaded+=("$(one)")
	# The load must still be running after the transfer.
	for g in $(echo "$gpus" | tr , '\n' | sort -u); do
		grep -q done "$out/load$g" && { echo "the load on GPU $g ended before the transfer did" >&2; exit 2; }
	done
	kill "${pids[@]}" 2>/dev/null
	wait "${pids[@]}" 2>/dev/null
done
python3 - "${idle[*]}" "${loaded[*]}" "$size" "$gpus" <<'PY'
import statistics, sys
idle = [float(x) for x in sys.argv[1].split()]
loaded = [float(x) for x in sys.argv[2].split()]
mi, ml = statistics.median(idle), statistics.median(loaded)
print(f"zsm-bench --gpu {sys.argv[4]} stream {sys.argv[3]}: usec per transfer")
print("idle:   " + " ".join(f"{x:.0f}" for x in idle) + f"  median {mi:.0f}")
print("loaded: " + " ".join(f"{x:.0f}" for x in loaded) + f"  median {ml:.0f}")
print(f"loaded / idle: {ml / mi:.3f} (target <= 1.2): {'PASS' if ml / mi <= 1.2 else 'FAIL'}")
PY
