#!/bin/sh
# SPDX-License-Identifier: MIT
#
# ce-hugepage.sh BENCH PLUGIN: regMr of host buffers on same-host comms
# moves them onto huge pages (plugin/ce/ce_hugepage.c), through the
# plugin's real ncclNet table in two processes: each rank's registration
# says so at TRACE, the bytes still arrive intact (zsm-bench checks every
# one), and neither ZSM_CE_HUGEPAGE=0 nor a network comm (ZSM_CE=0)
# touches the pages.  Exits 77 where the kernel has no MADV_COLLAPSE or
# transparent huge pages are set to never.
bench=$1
plugin=$2
run() {
	env ZSM_PROVIDER=tcp ZSM_DOMAIN=lo ZSM_CLIENT_LOG=trace "$@" \
		"$bench" --plugin "$plugin" --test stream --sizes 4M \
		--iters 8 --warmup 1 --reps 1 --timeout 60 2>&1
}
count() {
	printf '%s\n' "$1" | grep -c "$2"
}
out=$(run ZSM_CE=1) || {
	printf '%s\n' "$out"
	echo "ce-hugepage: zsm-bench over ce failed"
	exit 1
}
if printf '%s\n' "$out" | grep -q 'ce: transparent huge pages are off'; then
	echo "ce-hugepage: SKIP: transparent huge pages are set to never here (ce leaves them alone)"
	exit 77
fi
huge=$(count "$out" 'ce: regMr: .* on huge pages')
small=$(count "$out" 'ce: regMr: .* stays on small pages')
if [ "$huge" -eq 0 ] && printf '%s\n' "$out" |
	grep -q 'stays on small pages (MADV_COLLAPSE: Invalid argument'; then
	printf '%s\n' "$out" | grep 'small pages' | head -1
	echo "ce-hugepage: SKIP: this kernel refuses MADV_COLLAPSE (before 6.1, or no transparent huge pages)"
	exit 77
fi
# One buffer each: rank 0's send buffer, rank 1's receive buffer.
if [ "$huge" -ne 2 ] || [ "$small" -ne 0 ]; then
	printf '%s\n' "$out"
	echo "ce-hugepage: expected both ranks' buffers on huge pages, got $huge (and $small left small)"
	exit 1
fi
echo "ce-hugepage: both ranks' registrations on huge pages, data intact"
for setting in "ZSM_CE=1 ZSM_CE_HUGEPAGE=0" "ZSM_CE=0"; do
	# shellcheck disable=SC2086 # two assignments for env
	out=$(run $setting) || {
		printf '%s\n' "$out"
		echo "ce-hugepage: zsm-bench with $setting failed"
		exit 1
	}
	n=$(count "$out" 'ce: regMr: .* \(on huge pages\|stays on small pages\)')
	if [ "$n" -ne 0 ]; then
		printf '%s\n' "$out"
		echo "ce-hugepage: $setting: the pages were touched ($n registrations)"
		exit 1
	fi
	echo "ce-hugepage: $setting: pages left alone"
done
echo "ce-hugepage: PASS"
