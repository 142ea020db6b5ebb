#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# rxm-eager.sh: what rxm's eager size (FI_OFI_RXM_BUFFER_SIZE, which zsm's
# own sizes follow) costs messages through zsm over tcp;ofi_rxm on
# 127.0.0.1: A = 16384 (libfabric's default) against B (default 2048),
# by bench/env-ab.sh.  docs/security.md ("Floods") says why the size
# matters: each message rxm holds for a receive not yet posted costs one
# buffer of it.
#
#     bench/rxm-eager.sh [-r ROUNDS] [-b BYTES] [-s SIZES] [-o DIR]
set -u
here=$(dirname "$0")
b=2048 args=()
while [ $# -gt 0 ]; do
	case $1 in
	-b) b=$2; shift 2 ;;
	-r | -s | -o) args+=("$1" "$2"); shift 2 ;;
	*) echo "usage: $0 [-r ROUNDS] [-b BYTES] [-s SIZES] [-o DIR]" >&2
	   exit 2 ;;
	esac
done
exec "$here/env-ab.sh" "${args[@]}" \
	"ZSM_PROVIDER=tcp;ofi_rxm FI_OFI_RXM_BUFFER_SIZE=16384" \
	"ZSM_PROVIDER=tcp;ofi_rxm FI_OFI_RXM_BUFFER_SIZE=$b"
