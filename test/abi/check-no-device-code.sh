#!/bin/sh
# SPDX-License-Identifier: MIT
# Zero SMs starts at the build: the plugin must hold no GPU code (no CUDA
# fatbin or cubin section) and must not link any CUDA library (libcuda is
# opened at run time, so the .so loads on machines without a driver).
# usage: check-no-device-code.sh PLUGIN.so
set -u
so=$1
command -v readelf >/dev/null 2>&1 || { echo "SKIP: no readelf (binutils)"; exit 77; }
sections=$(readelf -W -S "$so") || { echo "FAIL: readelf -S $so"; exit 1; }
needed=$(readelf -W -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
status=0
# nvcc puts device code in .nv_fatbin / .nvFatBinSegment, and registers it
# through __nv_module_id / .nv.* sections.
if echo "$sections" | grep -Eq '\.nv_fatbin|\.nvFatBinSegment|__nv_relfatbin|\.nv\.'; then
	echo "FAIL: $so carries CUDA device code:"
	echo "$sections" | grep -E '\.nv_fatbin|\.nvFatBinSegment|__nv_relfatbin|\.nv\.'
	status=1
fi
if echo "$needed" | grep -Eq '^lib(cuda|cudart|nvrtc|cublas)'; then
	echo "FAIL: $so links a CUDA library: $(echo "$needed" | grep -E '^lib(cuda|cudart|nvrtc|cublas)')"
	status=1
fi
# The check must look at something: the .so has sections and needs libc.
echo "$sections" | grep -q '\.text' || { echo "FAIL: no .text in $so?"; status=1; }
echo "$needed" | grep -q '^libc\.so' || { echo "FAIL: no NEEDED libc in $so?"; status=1; }
[ $status = 0 ] && echo "PASS: no device code; NEEDED: $(echo $needed)"
exit $status
