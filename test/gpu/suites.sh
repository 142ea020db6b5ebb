#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# suites.sh: the meson suites of .ci/run (a plain build, then ASan+UBSan)
# on the GPU machine's cores, which take them in minutes where the 2-core
# development machine needs a quarter of an hour: a quick check of a large
# change before the real CI.  Runs ON that machine, from the repo root,
# with .debs carried (test/gpu/fetch-debs.sh):
#
#     ZSM_SUITES="unit abi loopback" bash test/gpu/suites.sh
#
# Writes $OUT/suites.log (the summary) and each build's meson test log;
# exits 0 only when no test failed.  The multihost suite needs network
# namespaces and is left out unless named.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
OUT=${OUT:-/tmp/out}
suites=${ZSM_SUITES:-unit abi loopback loopback-faults ce conformance harden load}
san_suites=${ZSM_SAN_SUITES:-unit loopback abi ce harden}
jobs=${ZSM_JOBS:-$(nproc)}
mkdir -p "$OUT"

. "$here/deps.sh"
zsm_gpu_deps "$repo" "${ZSM_DEPS:-/tmp/zsm-deps}" "$OUT/suites-deps.log" || exit 1
export ZSM_PROVIDER=tcp ZSM_DOMAIN=lo
# This machine has a CUDA driver, which the plugin loads at init: LSan
# counts the driver's own allocations (none of ours) as leaks.
printf 'leak:libcuda.so\n' >/tmp/zsm-lsan.supp
export LSAN_OPTIONS=suppressions=/tmp/zsm-lsan.supp
status=0
# one build folder: its meson test log goes to $OUT/NAME-meson.log
suite() {
	local name=$1 dir=/tmp/zsm-$1 list=$2 args=() s
	shift 2
	for s in $list; do args+=(--suite "$s"); done
	{ meson setup "$dir" "$repo" "$@" && ninja -C "$dir"; } \
		>"$OUT/$name-build.log" 2>&1 ||
		{ echo "$name: build failed"; tail -n 30 "$OUT/$name-build.log"; status=1; return; }
	meson test -C "$dir" --print-errorlogs --num-processes "$jobs" "${args[@]}" \
		>"$OUT/$name-meson.log" 2>&1 || status=1
	echo "== $name ($list)"
	grep -E '^ *[0-9]+/[0-9]+ .*(FAIL|TIMEOUT|ERROR)' "$OUT/$name-meson.log"
	sed -n '/^Ok:/,/^Timeout:/p' "$OUT/$name-meson.log"
}
exec > >(tee "$OUT/suites.log") 2>&1
suite plain "$suites"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	suite san "$san_suites" -Db_sanitize=address,undefined -Db_lundef=false
echo "suites: exit $status"
exit $status
