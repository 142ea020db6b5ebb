#!/bin/sh
# SPDX-License-Identifier: MIT
#
# rma-plan.sh INFO: the signal mechanism each network device takes for
# one-sided operations (net_rma_plan.h) is what libfabric grants, asked
# at init and said by zsm-info.  tcp (tcp;ofi_rxm on libfabric 1.x, its own
# tcp RDM endpoint on 2.x: the name is taken from zsm-info) grants messages
# ordered after writes (saw) and no ordered atomics; a forced mechanism it can build is
# taken, writedata after its loopback probe of fi_writedata passed, and
# one it cannot is refused with a WARN naming the variable.  sockets
# grants atomic (FI_ATOMIC ordered after writes, FI_FENCE, and FI_SUM on
# FI_UINT64 by fi_query_atomic), which auto takes there.
info=$1
status=0
prov=tcp
# The provider ZSM_PROVIDER=tcp gives on this libfabric.
name=$(env ZSM_PROVIDER=tcp ZSM_DOMAIN=lo "$info" 2>/dev/null |
	sed -n 's/^ *\[0\] name=lo provider=//p')
[ -n "$name" ] || { echo "FAIL: zsm-info names no provider for tcp"; exit 1; }
echo "ZSM_PROVIDER=tcp is $name here"
# expect SIGNAL WANT: zsm-info's one-sided line (and a WARN) on $prov
# holds WANT.
expect() {
	out=$(env ZSM_PROVIDER=$prov ZSM_DOMAIN=lo ZSM_RMA_SIGNAL="$1" \
		ZSM_LOG=info "$info" 2>&1)
	line=$(printf '%s\n' "$out" | grep 'one-sided (put, signal, get):')
	if printf '%s\n' "$line" | grep -q -- "$2"; then
		echo "$prov, ZSM_RMA_SIGNAL=$1: $line"
	else
		echo "FAIL: $prov, ZSM_RMA_SIGNAL=$1: wanted '$2' in:" \
			"${line:-no line}"
		printf '%s\n' "$out" | tail -n 20
		status=1
	fi
}
expect auto "signals by saw: $name grants it"
expect saw "signals by saw (ZSM_RMA_SIGNAL)"
expect fence "signals by fence (ZSM_RMA_SIGNAL)"
expect writedata "signals by writedata (ZSM_RMA_SIGNAL)"
# writedata is taken only after a real write of the probe landed.
if ! env ZSM_PROVIDER=tcp ZSM_DOMAIN=lo ZSM_RMA_SIGNAL=writedata ZSM_LOG=info \
	"$info" 2>&1 | grep -q "fi_writedata on $name passed a loopback write"; then
	echo "FAIL: ZSM_RMA_SIGNAL=writedata did not probe fi_writedata"
	status=1
fi
expect atomic "refused: ZSM_RMA_SIGNAL=atomic, but $name grants no atomics"
# The refusal is a WARN as well, said once.
n=$(env ZSM_PROVIDER=tcp ZSM_DOMAIN=lo ZSM_RMA_SIGNAL=atomic "$info" 2>&1 |
	grep -c 'WARN net: lo: one-sided operations refused')
if [ "$n" != 1 ]; then
	echo "FAIL: ZSM_RMA_SIGNAL=atomic gave $n WARN lines, not 1"
	status=1
fi
prov=sockets
expect auto "signals by atomic: sockets grants it"
expect atomic "signals by atomic (ZSM_RMA_SIGNAL)"
expect saw "signals by saw (ZSM_RMA_SIGNAL)"
# An unknown value is refused by the settings table, naming it.
if env ZSM_PROVIDER=tcp ZSM_DOMAIN=lo ZSM_RMA_SIGNAL=fast "$info" 2>&1 |
	grep -q 'ZSM_RMA_SIGNAL'; then
	echo "ZSM_RMA_SIGNAL=fast: refused by name"
else
	echo "FAIL: ZSM_RMA_SIGNAL=fast was not refused by name"
	status=1
fi
[ $status = 0 ] && echo "rma-plan: PASS" || echo "rma-plan: FAIL"
exit $status
