#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# accept-api.sh: every GPU point of zsm's API (include/zsm/zsm.h) in one
# command, for one machine start: a release build, then
#   api-bench   test/gpu/api-bench.sh: AllGather and AlltoAll exact on
#               both paths, coll-vs-put (AllGather >= 0.9 x put at 64 MiB),
#               overlap (AllGather under a full-SM load <= 1.1 x idle), the
#               C and Python examples
#   api-gpu     test/gpu/api-gpu.sh --compare ROUNDS: the API's checks on
#               both paths with CUPTI counting kernel launches, and the
#               8-byte put-signal round trip against NCCL 2.30.7's
#               ncclPutSignal through zsm's RMA table (needs .nccl230)
#   py-api      test/gpu/py-api.sh: the Python package with PyTorch
#   door-probe  build/test/gpu/door_probe: the stream doorbell's rules
# Runs ON the GPU machine from the repo root with .debs and .nccl230
# carried (test/gpu/fetch-debs.sh, test/gpu/nccl-rma.sh --stage):
#
#     bash test/gpu/accept-api.sh [--quick] [--compare ROUNDS]
#
# --quick passes --quick on (3 rounds, small sizes) and compares 2 rounds;
# --compare sets the round-trip comparison's rounds (default 5).
# ZSM_COLL_VS_PUT_ARGS goes to api-bench's coll-vs-put (-p both, say).
# Writes $OUT/accept-api.txt (one table) beside each step's own files;
# exit 0 only when every step passed.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
OUT=${OUT:-/tmp/out}
export ZSM_BUILD=${ZSM_BUILD:-/tmp/zsm-build}
quick=() compare=5
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=(--quick) compare=2; shift ;;
	--compare)
		case ${2:-} in
		'' | *[!0-9]* | 0) echo "accept-api: --compare takes a number of rounds, 1 or more" >&2; exit 2 ;;
		esac
		compare=$2; shift 2 ;;
	*) echo "usage: bash test/gpu/accept-api.sh [--quick] [--compare ROUNDS]" >&2
	   exit 2 ;;
	esac
done
mkdir -p "$OUT"
sum=$OUT/accept-api.txt
: >"$sum"
SECONDS=0
names=() results=() details=()
record() { # name rc detail
	local w
	case $2 in
	0) w=PASS ;; 77) w=SKIP ;; 124 | 137) w=TIMEOUT ;; *) w="FAIL($2)" ;;
	esac
	names+=("$1") results+=("$w") details+=("$3")
	echo "== $1: $w ($3) at ${SECONDS}s"
}

. "$here/deps.sh"
zsm_gpu_deps "$repo" "${ZSM_DEPS:-/tmp/zsm-deps}" "$OUT/accept-build.log" >/dev/null ||
	{ echo "accept-api: no libfabric to build with (accept-build.log)" | tee "$sum"; exit 1; }
{ meson setup "$ZSM_BUILD" "$repo" -Dbuildtype=release 2>/dev/null ||
	meson setup --reconfigure "$ZSM_BUILD" "$repo"; } >>"$OUT/accept-build.log" 2>&1
ninja -C "$ZSM_BUILD" >>"$OUT/accept-build.log" 2>&1
rc=$?
# --dirty: a tree copied beside an older .git says so
record build $rc "$(git -C "$repo" describe --always --dirty 2>/dev/null || echo 'no git')"
if [ $rc != 0 ]; then
	tail -n 20 "$OUT/accept-build.log" | tee -a "$sum"
	exit 1
fi

timeout -k 10 560 bash "$here/api-bench.sh" "$ZSM_BUILD" "${quick[@]}" \
	>"$OUT/accept-api-bench.log" 2>&1
record api-bench $? "$(grep -E '^\| (coll-vs-put|overlap) ' "$OUT/api-bench.txt" 2>/dev/null |
	tr -s ' ' | tr '\n' ' ' | cut -c1-300)"

timeout -k 10 560 bash "$here/api-gpu.sh" --compare "$compare" \
	>"$OUT/accept-api-gpu.log" 2>&1
rc=$?
record api-gpu $rc "$({
	grep -E '^api_gpu over' "$OUT/api-gpu.txt" | sed -E 's/^api_gpu over ([a-z-]+): rc [0-9]+, /\1 /'
	grep -hoE 'CUPTI .*: [0-9]+ kernel launches, [0-9]+ graph' "$OUT/api-gpu.txt" |
		awk '{k += $(NF - 4); g += $(NF - 1)} END {print "kernel launches " k + 0 ", graph launches " g + 0}'
	grep -E '^put-signal' "$OUT/api-gpu.txt" |
		sed -E 's/.*zsm API ([0-9.]+ us).*ncclPutSignal[^0-9]*([0-9.]+ us).*/round trip zsm \1, NCCL 2.30.7 \2/'
} 2>/dev/null | tr '\n' ';' | cut -c1-300)"

timeout -k 10 300 bash "$here/py-api.sh" "${quick[@]}" >"$OUT/accept-py-api.log" 2>&1
record py-api $? "$(tail -n 1 "$OUT/py-api.log" 2>/dev/null)"

if [ -x "$ZSM_BUILD/test/gpu/door_probe" ]; then
	timeout -k 10 180 "$ZSM_BUILD/test/gpu/door_probe" >"$OUT/door-probe.log" 2>&1
	record door-probe $? "$(grep -v '^[[:space:]]*$' "$OUT/door-probe.log" | tail -n 1 | cut -c1-200)"
else
	record door-probe 1 "not built: no cuda.h where meson looked"
fi

fail=0
{
	echo "accept-api: zsm's API on this GPU machine, ${SECONDS}s"
	printf '| %-10s | %-8s | %s\n' step result detail
	printf '|------------|----------|-------\n'
	for i in "${!names[@]}"; do
		printf '| %-10s | %-8s | %s\n' "${names[$i]}" "${results[$i]}" "${details[$i]}"
		[ "${results[$i]}" = PASS ] || fail=1
	done
	echo "accept-api: $([ $fail = 0 ] && echo ALL PASS || echo FAIL)"
} | tee "$sum"
grep -q 'ALL PASS' "$sum"
