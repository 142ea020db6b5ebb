#!/bin/sh
# SPDX-License-Identifier: MIT
#
# gdr-net.sh KIT PLUGIN: the data test of GPU buffers over the network
# path (GPUDirect through libfabric's FI_HMEM), ce off.  It runs the kit's
# gpu_buffers check where a device advertises NCCL_PTR_CUDA for that
# reason, and skips (77) with the kit's own reason elsewhere: without a
# GPU, or with a provider that has no FI_HMEM for CUDA (Debian's
# libfabric has none).
kit=$1
plugin=$2
# ZSM_CE_GPU would advertise GPU buffers for ce's sake, which the network
# path then refuses: this test is about the network path alone.
out=$(env -u ZSM_CE_GPU ZSM_CE=0 "$kit" --gpu 0,0 --only gpu_buffers \
	"$plugin" 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || exit 1
if printf '%s\n' "$out" | grep -q '^PASS gpu_buffers'; then
	exit 0
fi
if printf '%s\n' "$out" | grep -q '^SKIP gpu_buffers'; then
	echo "gdr-net: skipped: no device here takes GPU buffers over the network"
	exit 77
fi
echo "gdr-net: gpu_buffers neither passed nor was skipped"
exit 1
