#!/bin/sh
# SPDX-License-Identifier: MIT
# The plugin must export exactly NCCL's tables and the calls of zsm's own
# API (every ZSM_EXPORT of include/zsm/zsm.h), nothing internal.
set -eu
lib="$1"
header="$2"
got=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort)
api=$(tr '\n' ' ' <"$header" | grep -o 'ZSM_EXPORT [^(]*(' |
	grep -o 'zsm_[a-z0-9_]*($' | tr -d '(')
if [ -z "$api" ]; then
	echo "no ZSM_EXPORT call found in $header"
	exit 1
fi
want=$(printf '%s\n' ncclNetPlugin_v10 ncclNetPlugin_v11 ncclNetPlugin_v12 \
	ncclNetPlugin_v8 ncclNetPlugin_v9 ncclRmaPlugin_v13 ncclRmaPlugin_v14 \
	$api | sort)
if [ "$got" != "$want" ]; then
	echo "exported symbols differ from the ncclNet and ncclRma tables and zsm.h:"
	printf 'got:\n%s\nwant:\n%s\n' "$got" "$want"
	exit 1
fi
# Every library it needs must be a system one NCCL's process can resolve:
# no libcuda/libcudart link (libcuda is loaded at run time).
if readelf -d "$lib" | grep NEEDED | grep -Eq 'libcuda|libcudart'; then
	echo "the plugin links a CUDA library; it must load libcuda at run time"
	exit 1
fi
# libfabric is opened at the first init, not linked (plugin/net/net_fi_lib.h):
# linked, its psm dependency takes the process's signal handlers as NCCL
# loads the plugin.  Its six functions come from dlvsym, so none is imported.
if readelf -d "$lib" | grep NEEDED | grep -q 'libfabric'; then
	echo "the plugin links libfabric; it must open it at init (net_fi_lib.c)"
	exit 1
fi
fi_imports=$(nm -D --undefined-only "$lib" | awk '$2 ~ /^fi_/ {print $2}')
if [ -n "$fi_imports" ]; then
	echo "the plugin imports libfabric symbols; call them through zsm_fi_*:"
	echo "$fi_imports"
	exit 1
fi
echo "exports: $(echo $got)"
