#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# lf26.sh: zsm against libfabric 2.6 (the version EFA and Slingshot sites
# run; Debian 12 has 1.17), over 2.6's own tcp RDM endpoint and over
# tcp;ofi_rxm: the stray cases (what a burst of 20,000 messages for no
# live comm costs, issue 32 item 6), a few other hardening cases, and the
# conformance kit's loopback checks; then NCCL through zsm over 2.6's
# own tcp RDM endpoint (ZSM_PROVIDER=tcp), two ranks on GPU 0.
# The 16-core host builds libfabric in seconds.
#
# Runs ON the GPU machine from the repo root with .lf26/ and .debs/
# carried (the packages give cmocka; test/gpu/fetch-debs.sh).  On the
# development machine, `bash test/gpu/lf26.sh --stage` fills .lf26/ from
# ../shared/libfabric-2.6.0 (a git archive: autogen runs here, since the
# GPU machine has no autotools).
#
#     bash test/gpu/lf26.sh
#
# Writes $OUT/lf26-*.log; prints one line per case and the stray RSS
# lines.  Exit 0 only when every case passed.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tarball=libfabric-2.6.0-gen.tar.xz

if [ "${1:-}" = --stage ]; then
	src="$repo/../shared/libfabric-2.6.0/libfabric-2.6.0.tar.xz"
	tmp=$(mktemp -d)
	tar -C "$tmp" -xJf "$src" && (cd "$tmp/libfabric-2.6.0" &&
		./autogen.sh >/dev/null 2>&1) || { echo "lf26: autogen failed" >&2; exit 1; }
	mkdir -p "$repo/.lf26"
	tar -C "$tmp" -cJf "$repo/.lf26/$tarball" libfabric-2.6.0
	rm -rf "$tmp"
	echo "lf26: staged .lf26/$tarball"
	exit 0
fi

out=${OUT:-/tmp/lf26-out}
mkdir -p "$out"
. "$repo/test/gpu/deps.sh"
zsm_gpu_deps "$repo" /tmp/zsm-deps "$out/lf26-deps.log" || exit 1
if [ ! -f "$repo/.lf26/$tarball" ]; then
	echo "lf26: no .lf26/$tarball: run test/gpu/lf26.sh --stage and carry .lf26" >&2
	exit 1
fi
lf=/tmp/lf26 build=/tmp/zsm-lf26-build
rm -rf /tmp/libfabric-2.6.0 "$lf" "$build"
(cd /tmp && tar -xJf "$repo/.lf26/$tarball" && cd libfabric-2.6.0 &&
	./configure --prefix="$lf" --disable-static --enable-only \
		--enable-tcp --enable-rxm --enable-shm --enable-sockets &&
	make -j"$(nproc)" install) >"$out/lf26-build.log" 2>&1 ||
	{ echo "lf26: building libfabric 2.6 failed (lf26-build.log)" >&2; exit 1; }
export PKG_CONFIG_PATH="$lf/lib/pkgconfig:$PKG_CONFIG_PATH"
export LD_LIBRARY_PATH="$lf/lib:$LD_LIBRARY_PATH" PATH="$lf/bin:$PATH"
{ meson setup "$build" "$repo" -Dtests=true && ninja -C "$build"; } \
	>>"$out/lf26-build.log" 2>&1 ||
	{ echo "lf26: building zsm failed (lf26-build.log)" >&2; exit 1; }
echo "# libfabric $(pkg-config --modversion libfabric); $(fi_info -l | tr -d '\n')"

plugin=$build/plugin/libnccl-net-zsm.so fails=0
conf="properties,connect_retry,bad_handle,order,tag_select,grouped_n"
conf+=",recv_larger,send_too_large,zero_byte,null_retry,inflight,mr_cache"
conf+=",recv_overwrites_request,test_sizes_n,iflush_host,trunc_isolated"
conf+=",connect_closed_listener,peer_closes,pingpong_wait"
# One case under its own timeout: its log, and a line saying how it went.
run_case() {
	local name=$1 rc
	shift
	timeout 180 "$@" >"$out/lf26-$name.log" 2>&1
	rc=$?
	echo "$name: rc $rc"
	[ $rc -eq 0 ] || fails=$((fails + 1))
}
for prov in tcp "tcp;ofi_rxm"; do
	tag=${prov/;/_}
	export ZSM_PROVIDER=$prov H_ATTACKER_PROV=$prov ZSM_DOMAIN=lo ZSM_CE=0
	# Which offer zsm takes for the setting (2.6 has tcp RDM and rxm).
	"$build/tools/zsm-info" >"$out/lf26-info-$tag.log" 2>&1
	echo "ZSM_PROVIDER=$prov uses: $(grep ' USED' "$out/lf26-info-$tag.log" |
		tr -s ' ' | tr '\n' ';')"
	for c in strays strays_behind strays_connect early ctrl_flood close_held; do
		run_case "$c-$tag" "$build/test/harden/zsm-harden" \
			--plugin "$plugin" --case "$c"
	done
	run_case "conformance-$tag" "$build/tools/zsm-conformance" \
		--plugin "$plugin" --abi 12 --zsm-rules --only "$conf"
	run_case "conformance-many-$tag" "$build/tools/zsm-conformance" \
		--only data_sizes,many_comms,init_cycles "$plugin"
done
# NCCL through zsm on 2.6's own tcp RDM endpoint: two ranks on GPU 0 as
# two hosts, every result checked exactly (nccl_check.py).  Where there
# is no GPU, said and left.
unset H_ATTACKER_PROV
if command -v nvidia-smi >/dev/null 2>&1; then
	env ZSM_PROVIDER=tcp ZSM_DOMAIN=lo ZSM_CE=0 CUDA_MODULE_LOADING=EAGER \
		NCCL_NET_PLUGIN="$plugin" NCCL_NET=zsm \
		NCCL_NET_PLUGIN_REF_COUNT=1 NCCL_DEBUG=INFO \
		NCCL_DEBUG_SUBSYS=INIT,NET ZSM_LOG=info \
		timeout 240 python3 "$repo/test/gpu/nccl_check.py" \
		--label lf26 --out "$out" --timeout 200 --one-gpu \
		>"$out/lf26-nccl.log" 2>&1
	rc=$?
	via=$(grep -c 'via NET/zsm' "$out/lf26-nccl.log")
	prov=$(grep -o 'device 0 is [^ ]* over [^ ]*' "$out/lf26-nccl.log" |
		head -n 1)
	echo "nccl: rc $rc, $via 'via NET/zsm' lines, ${prov:-no device line};" \
		"$(grep -E '^\[lf26\] (PASS|FAIL)' "$out/lf26-nccl.log" | tail -n 1)"
	[ $rc = 0 ] && [ "$via" -gt 0 ] || fails=$((fails + 1))
else
	echo "nccl: not run (no GPU here)"
fi
grep -h "^# strays" "$out"/lf26-strays*.log
exit $((fails > 0))
