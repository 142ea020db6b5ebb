#!/bin/sh
# SPDX-License-Identifier: MIT
#
# rxm-eager.sh CONFORMANCE PLUGIN INFO: tcp;ofi_rxm sends a message of
# up to its eager limit without waiting for the receive, and one longer
# than the receive it lands in makes its tcp core drop the connection,
# with every comm's next message on it (net_dev.c).  The limit is
# FI_OFI_RXM_BUFFER_SIZE or, where larger, FI_OFI_RXM_EAGER_LIMIT, and
# zsm guards receives up to it.  Under FI_OFI_RXM_EAGER_LIMIT=1 MiB:
# zsm-info says receives under 1 MiB take the spill buffer, and
# oversized sends of up to 64 KiB fail their receive alone
# (trunc_isolated, send_too_large, with zsm's rules), where with only
# the buffer size guarded the connection reset and another comm's
# message never came.  A limit beyond what zsm guards (64 MiB) fails
# init with one WARN naming both variables.  Skips (77) where
# ZSM_PROVIDER=tcp is not tcp;ofi_rxm (libfabric 2.x's own tcp).
conformance=$1 plugin=$2 info=$3
status=0
export ZSM_PROVIDER=tcp ZSM_DOMAIN=lo ZSM_CE=0
name=$("$info" 2>/dev/null | sed -n 's/^ *\[0\] name=lo provider=//p')
[ "$name" = "tcp;ofi_rxm" ] ||
	{ echo "SKIP: ZSM_PROVIDER=tcp is ${name:-nothing} here"; exit 77; }

export FI_OFI_RXM_EAGER_LIMIT=1048576
if "$info" 2>&1 | grep -q 'receives under 1048576 bytes take a spill'; then
	echo "FI_OFI_RXM_EAGER_LIMIT=1048576: receives under it are guarded"
else
	echo "FAIL: zsm-info does not guard receives under 1048576 bytes"
	status=1
fi
"$conformance" --plugin "$plugin" --abi 12 --zsm-rules \
	--only trunc_isolated,send_too_large || {
	echo "FAIL: oversized sends under FI_OFI_RXM_EAGER_LIMIT=1048576"
	status=1
}

export FI_OFI_RXM_EAGER_LIMIT=134217728
out=$("$info" 2>&1)
rc=$?
n=$(printf '%s\n' "$out" | grep -c 'WARN.*FI_OFI_RXM_EAGER_LIMIT.*67108864 or less')
if [ $rc != 0 ] && [ "$n" = 1 ]; then
	echo "FI_OFI_RXM_EAGER_LIMIT=134217728: init refused, one WARN"
else
	echo "FAIL: FI_OFI_RXM_EAGER_LIMIT=134217728: zsm-info exited $rc" \
		"with $n WARN line(s) naming it:"
	printf '%s\n' "$out" | tail -n 5
	status=1
fi
exit $status
