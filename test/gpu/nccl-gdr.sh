#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# nccl-gdr.sh: NCCL handing GPU buffers to zsm (GPUDirect for our device),
# on the GPU machine.  One command, every step bounded:
#   0. the PCI topology around each GPU (is a device near it at all?);
#   1. build (test/gpu/run.sh --no-unit --no-nccl);
#   2. exact checks with GPUDirect forced (NCCL_NET_GDR_LEVEL=SYS,
#      NCCL_NET_GDR_READ=1, ZSM_CE_GPU=1, CUDA_MODULE_LOADING=EAGER): every
#      collective, dtype and size of nccl_check.py, then Simple and LL
#      alone; one run with lazy module loading, which is expected to hang;
#   3. sendrecv and all_reduce bandwidth at 256 MiB and 1 GiB: zsm with
#      GPUDirect under NCCL's defaults and with each large-transfer
#      setting (NCCL_P2P_NET_CHUNKSIZE, NCCL_BUFFSIZE,
#      NCCL_NCHANNELS_PER_NET_PEER) alone and together, and with PyTorch
#      registering its tensors with NCCL; zsm through host
#      staging (its defaults); NCCL's NVLink path; NCCL's socket transport.
# Writes $OUT/gdr-summary.txt as it goes and, at the end, every log in
# $OUT/gdr-logs.tar.gz (the device tool brings back 8 files at most).
# Runs that would start after ZSM_GDR_BUDGET seconds (default 540) are
# left out.  Exit 0 when every exact check passed.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-/tmp/out}
LOGS=/tmp/zsm-gdr
BUILD=${ZSM_BUILD:-/tmp/zsm-build}
PY=${PYTHON:-python3}
BUDGET=${ZSM_GDR_BUDGET:-540}
mkdir -p "$OUT" "$LOGS"
sum="$OUT/gdr-summary.txt"
: >"$sum"
SECONDS=0
fail=0

{
	echo "== topology"
	nvidia-smi topo -m 2>&1 | head -n 20
	for id in $(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader 2>/dev/null); do
		id=$(echo "$id" | tr 'A-F' 'a-f' | sed -E 's/^0000([0-9a-f]{4}):/\1:/; s/^([0-9a-f]{8}):/\1/')
		p=$(ls -d /sys/bus/pci/devices/*"${id#*:}" 2>/dev/null | head -n 1)
		[ -n "$p" ] || continue
		r=$(realpath "$p")
		echo "gpu $id: $r"
		echo "  siblings: $(ls -d "$(dirname "$r")"/0000:* 2>/dev/null | xargs -n1 basename | tr '\n' ' ')"
		echo "  parent class: $(cat "$(dirname "$r")/class" 2>/dev/null)"
	done
	ls -l /sys/class/net/ /sys/class/infiniband/ 2>&1 | head -n 20
} >>"$sum" 2>&1

OUT=$LOGS bash "$here/run.sh" --no-unit --no-nccl >"$LOGS/build.txt" 2>&1
plugin=$BUILD/plugin/libnccl-net-zsm.so
export LD_LIBRARY_PATH="${ZSM_DEPS:-/tmp/zsm-deps}/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ ! -f "$plugin" ]; then
	echo "build failed" >>"$sum"
	tail -n 30 "$LOGS/build.txt" >>"$sum"
	exit 1
fi
echo "== built in $SECONDS s" >>"$sum"

base=(NCCL_MNNVL_ENABLE=0 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
	NVSHMEM_DISABLE_NVLS=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,TUNING
	NCCL_SOCKET_IFNAME=lo TORCH_NCCL_ASYNC_ERROR_HANDLING=1)
viazsm=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET_PLUGIN="$plugin"
	NCCL_NET=zsm NCCL_NET_PLUGIN_REF_COUNT=1 ZSM_PROVIDER=tcp ZSM_DOMAIN=lo)
# GPUDirect forced for our device (NCCL's topology puts it far from the
# GPUs otherwise), and CUDA modules loaded up front: with lazy loading a
# kernel loaded while NCCL's kernel waits for one of ce's copies holds that
# copy back for ever (the lazy runs below show it).
gdr=(ZSM_CE_GPU=1 NCCL_NET_GDR_LEVEL=SYS NCCL_NET_GDR_READ=1 CUDA_MODULE_LOADING=EAGER)
lazy=(ZSM_CE_GPU=1 NCCL_NET_GDR_LEVEL=SYS NCCL_NET_GDR_READ=1)

# Where every thread of the workers sits, when a run is about to time out.
stacks() { # seconds log
	sleep "$1"
	# Python stacks, on each worker's stderr (nccl_check.py registers it).
	pkill -USR1 -f "multiprocessing.spawn" 2>/dev/null
	for pid in $(pgrep -f "multiprocessing.spawn"); do
		[ -d "/proc/$pid" ] || continue
		echo "### stacks of pid $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline" | cut -c1-80))"
		for t in /proc/"$pid"/task/*; do
			echo "# tid ${t##*/} $(cat "$t/comm") wchan=$(cat "$t/wchan" 2>/dev/null) syscall=$(cut -d' ' -f1 "$t/syscall" 2>/dev/null) utime=$(cut -d' ' -f14 "$t/stat" 2>/dev/null)"
		done
		if command -v gdb >/dev/null; then
			timeout 30 gdb -p "$pid" -batch -ex "thread apply all bt 14" 2>&1 |
				grep -E "^Thread|^#" | head -n 300
		fi
	done >>"$2" 2>&1
}

run() { # label seconds "nccl_check args" env...
	local label=$1 t=$2 args=$3
	shift 3
	local log="$LOGS/$label.log"
	if [ -n "${ZSM_GDR_RUNS:-}" ] && ! [[ ",$ZSM_GDR_RUNS," == *",$label,"* ]]; then
		return 0
	fi
	if [ $((SECONDS + t / 2)) -gt "$BUDGET" ]; then
		echo "== $label: left out (budget)" >>"$sum"
		return 0
	fi
	echo "# env: $*" >"$log"
	stacks $((t - 12)) "$LOGS/$label.stacks" &
	local watcher=$!
	# shellcheck disable=SC2086
	env "${base[@]}" "$@" timeout -k 5 $((t + 15)) "$PY" "$here/nccl_check.py" \
		--label "$label" --out "$LOGS" --timeout "$t" --op-timeout 60 $args >>"$log" 2>&1
	local rc=$?
	kill "$watcher" 2>/dev/null
	wait "$watcher" 2>/dev/null
	{
		echo "== $label (rc $rc, $SECONDS s): $*"
		grep -E "^\[$label\] (BW|rank [0-9]+ (ERROR|MISMATCH)|killing|(PASS|FAIL): [0-9]+ checks)" "$log" | head -n 12
		grep -oE "GPU Direct RDMA (Enabled|Disabled)[^\n]*|via NET/zsm[^ ]*|NET/zsm/GDRDMA|GDRDMA" "$log" | sort | uniq -c | head -n 6
		grep -m 3 -E "NCCL WARN|zsm [0-9]+ WARN" "$log"
		grep -oE "[0-9]+ coll channels, .*p2p channels per peer" "$log" | sort | uniq -c | head -n 2
		grep -E "ce: .*(opens pid|open in|closes pid|closed in|no progress)" "$log" | tail -n 8
		if [ -s "$LOGS/$label.stacks" ]; then
			grep -E "^###|wchan=" "$LOGS/$label.stacks" | grep -vE "wchan=(futex_wait_queue|do_epoll_wait|do_select|poll_schedule|hrtimer_nanosleep|pipe_read|do_sys_poll)" | head -n 12
			grep -E "zsm_|cu[A-Z][a-zA-Z]+ \(" "$LOGS/$label.stacks" | head -n 12
			# Where each worker's Python threads were (faulthandler).
			grep -E "^(Current thread|Thread) 0x|^  File .*(nccl_check|distributed_c10d|cuda/__init__)" "$log" | head -n 16
		fi
	} >>"$sum"
	return $rc
}

small="--dtypes int8,float32 --ops all_gather,all_reduce,sendrecv,broadcast --sizes 1,1024,65536,1048576,16777216 --bw-sizes="
# The collectives, dtypes and sizes of the core issue (1 B to 256 MiB).
run exact 150 "--bw-sizes=" "${viazsm[@]}" "${gdr[@]}" || fail=1
run simple ${ZSM_T_CHECK:-75} "$small" "${viazsm[@]}" "${gdr[@]}" NCCL_PROTO=Simple || fail=1
run ll ${ZSM_T_CHECK:-75} "$small" "${viazsm[@]}" "${gdr[@]}" NCCL_PROTO=LL || fail=1
# Lazy loading, as shipped by CUDA 12+: expected to hang (not counted).
run simple-lazy 45 "$small" "${viazsm[@]}" "${lazy[@]}" NCCL_PROTO=Simple

bw="--dtypes float32 --ops sendrecv,all_reduce --sizes= --bw-sizes=268435456,1073741824 --warmup 2 --iters 5"
run bw-gdr 60 "$bw" "${viazsm[@]}" "${gdr[@]}"
run bw-chunk 60 "$bw" "${viazsm[@]}" "${gdr[@]}" NCCL_P2P_NET_CHUNKSIZE=4194304
run bw-buff 60 "$bw" "${viazsm[@]}" "${gdr[@]}" NCCL_BUFFSIZE=33554432
run bw-nch 60 "$bw" "${viazsm[@]}" "${gdr[@]}" NCCL_NCHANNELS_PER_NET_PEER=8
run bw-all 60 "$bw" "${viazsm[@]}" "${gdr[@]}" NCCL_P2P_NET_CHUNKSIZE=4194304 \
	NCCL_BUFFSIZE=33554432 NCCL_NCHANNELS_PER_NET_PEER=8
# More channels.  NCCL's search gives this topology 2 (one GPU per
# "node", the PCIe uplink modelled at 48 GB/s, our device at its NIC
# speed): each channel's kernel is one block, so a ring runs at about
# 17 GB/s a channel whatever the transport does.  NCCL_MIN_NCHANNELS
# copies the rings; NCCL_NTHREADS=512 undoes the 256 threads NCCL gives a
# ring it models as slow; sendrecv needs its own per-peer count.
ch16=(NCCL_MIN_NCHANNELS=16 NCCL_NTHREADS=512 NCCL_NCHANNELS_PER_NET_PEER=16
	NCCL_P2P_NET_CHUNKSIZE=524288)
ch32=(NCCL_MIN_NCHANNELS=32 NCCL_MAX_NCHANNELS=32 NCCL_NTHREADS=512
	NCCL_NCHANNELS_PER_NET_PEER=32 NCCL_P2P_NET_CHUNKSIZE=524288)
run bw-ch16 60 "$bw" "${viazsm[@]}" "${gdr[@]}" "${ch16[@]}"
run bw-ch32 60 "$bw" "${viazsm[@]}" "${gdr[@]}" "${ch32[@]}"
# And larger steps: 2 MiB for collectives (NCCL_BUFFSIZE / 8) and p2p.
best=("${ch32[@]}" NCCL_BUFFSIZE=16777216 NCCL_P2P_NET_CHUNKSIZE=2097152)
run bw-ch32-buf 60 "$bw" "${viazsm[@]}" "${gdr[@]}" "${best[@]}"
run bw-ch32-buf32 60 "$bw" "${viazsm[@]}" "${gdr[@]}" "${ch32[@]}" NCCL_BUFFSIZE=33554432 \
	NCCL_P2P_NET_CHUNKSIZE=4194304
run exact-ch32 ${ZSM_T_CHECK:-75} "$small" "${viazsm[@]}" "${gdr[@]}" "${ch32[@]}" || fail=1
# PyTorch registers its allocations with NCCL, which may then send from
# and receive into the tensors themselves.
ub=(TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK=1)
run exact-ub 120 "--bw-sizes=" "${viazsm[@]}" "${gdr[@]}" "${ub[@]}" || fail=1
run bw-ub 60 "$bw" "${viazsm[@]}" "${gdr[@]}" "${ub[@]}"
run bw-ub-all 60 "$bw" "${viazsm[@]}" "${gdr[@]}" "${ub[@]}" NCCL_P2P_NET_CHUNKSIZE=4194304 \
	NCCL_BUFFSIZE=33554432 NCCL_NCHANNELS_PER_NET_PEER=8
# The same with ce closing the mappings of freed tensors at once.
run bw-ub-unmap 60 "$bw" "${viazsm[@]}" "${gdr[@]}" "${ub[@]}" ZSM_CE_GPU_UNMAP=1
run bw-ub-ch32 60 "$bw" "${viazsm[@]}" "${gdr[@]}" "${ub[@]}" "${ch32[@]}"
# Everything that helps: registered tensors, 32 channels, 2 MiB steps.
run exact-best 150 "--bw-sizes=" "${viazsm[@]}" "${gdr[@]}" "${ub[@]}" "${best[@]}" || fail=1
run bw-best 60 "$bw" "${viazsm[@]}" "${gdr[@]}" "${ub[@]}" "${best[@]}"
run bw-best-again 60 "$bw" "${viazsm[@]}" "${gdr[@]}" "${ub[@]}" "${best[@]}"
# ce closing a freed tensor's mapping at once (ZSM_CE_GPU_UNMAP=1): the
# close waits for the device holding the driver's lock, and hung NCCL.
run bw-best-unmap 60 "$bw" "${viazsm[@]}" "${gdr[@]}" "${ub[@]}" "${best[@]}" ZSM_CE_GPU_UNMAP=1
run bw-host 60 "$bw" "${viazsm[@]}"
run bw-nvlink 45 "$bw" NCCL_NET_PLUGIN=none
run bw-socket 60 "--dtypes float32 --ops sendrecv,all_reduce --sizes= --bw-sizes=268435456 --warmup 1 --iters 5" \
	NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET_PLUGIN=none NCCL_NET=Socket
echo "== done in $SECONDS s, exact checks $([ $fail = 0 ] && echo PASS || echo FAIL)" >>"$sum"
tar -C "$LOGS" -czf "$OUT/gdr-logs.tar.gz" . 2>/dev/null
cat "$sum"
exit $fail
