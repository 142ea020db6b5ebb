#!/bin/sh
# SPDX-License-Identifier: MIT
#
# flush-read.sh BENCH PLUGIN: the flush path of iflush, an RMA read of the
# received buffer back through the endpoint (plugin/net, net_hmem.h).
# NCCL asks for flushes after GPUDirect receives only, which need a GPU
# and a provider with CUDA; ZSM_GDR_FLUSH=always takes the same read for
# host buffers, so tcp;ofi_rxm checks the read itself here: its key,
# address and descriptors (the provider refuses a wrong one), its
# completion through test(), and that the data still arrives intact.
bench=$1
plugin=$2
run() {
	# $1: ZSM_GDR_FLUSH, $2: ZSM_CE; the bench checks every byte.
	env ZSM_PROVIDER=tcp ZSM_DOMAIN=lo ZSM_GDR_FLUSH="$1" ZSM_CE="$2" \
		"$bench" --plugin "$plugin" --flush --sizes 8,64K,1M \
		--iters 20 --warmup 2 --reps 1 --timeout 60 2>&1
}
# expect MODE CE WANT: both ranks' iflush calls all gave a request (WANT
# "all") or none did ("none").
expect() {
	out=$(run "$1" "$2")
	rc=$?
	printf '%s\n' "$out"
	if [ "$rc" -ne 0 ]; then
		echo "flush-read: ZSM_GDR_FLUSH=$1 ZSM_CE=$2: zsm-bench failed ($rc)"
		exit 1
	fi
	lines=$(printf '%s\n' "$out" | grep -c '^# rank [01] iflush: ')
	if [ "$lines" -ne 2 ]; then
		echo "flush-read: expected both ranks to report their iflush calls"
		exit 1
	fi
	if [ "$3" = all ]; then
		bad=$(printf '%s\n' "$out" |
			grep '^# rank [01] iflush: ' | grep -v ' 0 gave none$' |
			head -1)
		zero=$(printf '%s\n' "$out" | grep '^# rank [01] iflush: 0 gave')
	else
		bad=$(printf '%s\n' "$out" | grep '^# rank [01] iflush: ' |
			grep -v ': 0 gave a request' | head -1)
		zero=""
	fi
	if [ -n "$bad$zero" ]; then
		echo "flush-read: ZSM_GDR_FLUSH=$1 ZSM_CE=$2: expected $3 of" \
			"the iflush calls to give a request: $bad$zero"
		exit 1
	fi
	echo "flush-read: ZSM_GDR_FLUSH=$1 ZSM_CE=$2: $3 gave a request, as expected"
}
# The read, over the network path.
expect always 0 all
# By default host buffers need no flush: NULL requests.
expect auto 0 none
# ce's copies are complete when test() says so: never a read.
expect always 1 none
echo "flush-read: PASS"
