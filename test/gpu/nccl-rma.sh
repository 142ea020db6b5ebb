#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# nccl-rma.sh: NCCL 2.30.7's host RMA (ncclPutSignal, ncclSignal,
# ncclWaitSignal on registered windows) and its zero-SM AllGather and
# AlltoAll, between two ranks on one GPU that are two hosts to NCCL
# (test/gpu/nccl_rma.c, which says what it checks), in three modes:
#   net   zsm's network path: NCCL_NET_PLUGIN=<zsm> NCCL_NET=zsm ZSM_RMA=1
#         ZSM_PROVIDER=tcp ZSM_DOMAIN=lo, a ZSM_HOSTID per rank
#   ce    zsm's same-host path: the same, one ZSM_HOSTID for both ranks
#         (and ZSM_CE_GPU=1: the windows are GPU memory)
#   nccl  without zsm: NCCL_NET_PLUGIN=none, NCCL's own transports
# each with NCCL_DEBUG=INFO, then one summary table: what each part did,
# and the log lines that show which net and RMA plugins NCCL took, zsm's
# RMA lines, CE collectives set up, collectives that went to kernels.
#
# Runs ON the GPU machine from the repo root, with NCCL 2.30.7 in .nccl230/
# (libnccl.so.2 or libnccl.so.2.xz, and nccl.h) and, for net and ce, the
# Debian packages in .debs/ (test/gpu/fetch-debs.sh) to build zsm; carry
# both.  On the development machine, `bash test/gpu/nccl-rma.sh --stage`
# fills .nccl230/ from ../shared/nccl-2.30.7.
#
#     bash test/gpu/nccl-rma.sh [--quick] [--modes net,ce,nccl] [-- ARGS]
#
# ARGS go to nccl_rma (--part rma, --iters 1000, ...).  Each mode runs under
# its own timeout and cannot hang the script.  Writes $OUT/nccl-rma.txt (the
# summary), $OUT/nccl-rma-<mode>.log and $OUT/nccl-rma-build.log; exit 0
# only when every mode run passed, the nccl mode's host RMA being allowed
# to SKIP (exit 77: NCCL without an RMA plugin has none on this machine).
#
# Knobs (environment):
#   ZSM_RMA_T        deadline of one part of one mode, seconds (180); the
#                    mode gets two parts' worth and a margin
#   ZSM_RMA_SUBSYS   NCCL_DEBUG_SUBSYS (INIT,NET,TUNING,REG)
#   ZSM_RMA_ENV      extra VAR=value words for every mode
#   ZSM_NCCL_DIR     where libnccl.so.2 (or .xz) is (.nccl230)
#   ZSM_NCCL_INCLUDE where nccl.h is (ZSM_NCCL_DIR)
#   ZSM_PLUGIN       a built libnccl-net-zsm.so (else built into ZSM_BUILD,
#                    default /tmp/zsm-build)
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
OUT=${OUT:-/tmp/out}
BUILD=${ZSM_BUILD:-/tmp/zsm-build}
ndir=${ZSM_NCCL_DIR:-$repo/.nccl230}
inc=${ZSM_NCCL_INCLUDE:-$ndir}
T=${ZSM_RMA_T:-180}
subsys=${ZSM_RMA_SUBSYS:-INIT,NET,TUNING,REG}
modes=net,ce,nccl
quick=()

while [ $# -gt 0 ]; do
	case "$1" in
	--stage)
		src=$repo/../shared/nccl-2.30.7
		mkdir -p "$ndir" || exit 1
		cp "$src/nccl.h" "$src/libnccl.so.2.xz" "$ndir/" || exit 1
		xz -dkf "$ndir/libnccl.so.2.xz" || exit 1
		rm -f "$ndir/libnccl.so.2.xz"
		git -C "$repo" check-ignore -q "$ndir/libnccl.so.2" ||
			echo "nccl-rma: warning: git does not ignore $ndir" >&2
		ls -l "$ndir"
		exit 0 ;;
	--quick) quick=(--quick) ;;
	--modes) modes=$2; shift ;;
	--) shift; break ;;
	-h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "nccl-rma: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
args=("${quick[@]}" "$@")

mkdir -p "$OUT"
sum=$OUT/nccl-rma.txt
blog=$OUT/nccl-rma-build.log
: >"$sum"
: >"$blog"
say() { echo "$*" | tee -a "$sum"; }

# ---------------------------------------------------------------- NCCL 2.30.7
if [ ! -f "$ndir/libnccl.so.2" ] && [ -f "$ndir/libnccl.so.2.xz" ]; then
	if command -v xz >/dev/null; then
		xz -dk "$ndir/libnccl.so.2.xz"
	else
		python3 -c 'import lzma, sys; open(sys.argv[2], "wb").write(lzma.open(sys.argv[1]).read())' \
			"$ndir/libnccl.so.2.xz" "$ndir/libnccl.so.2"
	fi
fi
if [ ! -f "$ndir/libnccl.so.2" ] || [ ! -f "$inc/nccl.h" ]; then
	say "nccl-rma: FAIL: no NCCL 2.30.7 (want $ndir/libnccl.so.2 and $inc/nccl.h;" \
		"run --stage on the development machine and carry .nccl230)"
	exit 1
fi

# ---------------------------------------------------------------- the program
bin=/tmp/nccl-rma/nccl_rma
mkdir -p "$(dirname "$bin")"
cuda=${CUDA_HOME:-/usr/local/cuda}
echo "# building nccl_rma" >>"$blog"
if ! cc -std=gnu11 -O2 -Wall -Wextra -I"$inc" -I"$cuda/include" \
	"$here/nccl_rma.c" -o "$bin" "$ndir/libnccl.so.2" \
	-L"$cuda/lib64" -lcudart -ldl -Wl,-rpath,"$ndir" >>"$blog" 2>&1; then
	say "nccl-rma: FAIL: nccl_rma does not build; see nccl-rma-build.log"
	tail -n 20 "$blog"
	exit 1
fi

# ---------------------------------------------------------------- zsm
plugin=${ZSM_PLUGIN:-}
need_zsm=0
case ",$modes," in *,net,*|*,ce,*) need_zsm=1 ;; esac
libpath=$ndir
if [ "$need_zsm" = 1 ] && [ -d "$repo/.debs" ]; then
	# shellcheck source=test/gpu/deps.sh
	. "$here/deps.sh"
	# LD_LIBRARY_PATH now names libfabric's folder as well
	zsm_gpu_deps "$repo" "${ZSM_DEPS:-/tmp/zsm-deps}" "$blog" >/dev/null &&
		libpath=$ndir:$LD_LIBRARY_PATH
	if [ -z "$plugin" ]; then
		if [ ! -f "$BUILD/plugin/libnccl-net-zsm.so" ]; then
			{ meson setup "$BUILD" "$repo" -Dbuildtype=release &&
				ninja -C "$BUILD"; } >>"$blog" 2>&1
		fi
		plugin=$BUILD/plugin/libnccl-net-zsm.so
	fi
fi
if [ "$need_zsm" = 1 ] && [ ! -f "$plugin" ]; then
	say "nccl-rma: no zsm plugin (ZSM_PLUGIN unset, and no build from .debs:" \
		"see nccl-rma-build.log); modes net and ce will SKIP"
	plugin=
fi

# ---------------------------------------------------------------- the modes
# shellcheck disable=SC2054  # NCCL_DEBUG_SUBSYS takes a comma list
common=(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS="$subsys" NCCL_SOCKET_IFNAME=lo
	NCCL_NVLS_ENABLE=0 NCCL_MNNVL_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
	NVSHMEM_DISABLE_NVLS=1 CUDA_MODULE_LOADING=EAGER
	LD_LIBRARY_PATH="$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
# shellcheck disable=SC2206  # words on purpose
common+=(${ZSM_RMA_ENV:-})
zsm=(NCCL_NET_PLUGIN="$plugin" NCCL_NET=zsm ZSM_RMA=1 ZSM_PROVIDER=tcp
	ZSM_DOMAIN=lo)

declare -A rc_of
IFS=, read -r -a mode_list <<<"$modes"
for m in "${mode_list[@]}"; do
	log=$OUT/nccl-rma-$m.log
	# shellcheck disable=SC2054  # the hostids are one argument, A,B
	case $m in
	net) envs=("${zsm[@]}"); extra=(--zsm-hostids rma-net-0,rma-net-1) ;;
	ce) envs=("${zsm[@]}" ZSM_CE_GPU=1); extra=(--zsm-hostids rma-ce,rma-ce) ;;
	nccl) envs=(NCCL_NET_PLUGIN=none); extra=() ;;
	*) say "nccl-rma: unknown mode $m"; rc_of[$m]=2; continue ;;
	esac
	if [ "$m" != nccl ] && [ -z "$plugin" ]; then
		echo "no zsm plugin" >"$log"
		rc_of[$m]=77
		continue
	fi
	{
		echo "# env: ${common[*]} ${envs[*]}"
		echo "# $bin --timeout $T ${extra[*]} ${args[*]}"
	} >"$log"
	echo "== mode $m (up to $((2 * T + 30)) s)"
	# The program kills its own ranks at --timeout per part; the outer
	# timeout is there for the program itself.
	env "${common[@]}" "${envs[@]}" timeout -k 10 $((2 * T + 30)) \
		"$bin" --timeout "$T" "${extra[@]}" "${args[@]}" >>"$log" 2>&1
	rc_of[$m]=$?
	grep -E '^(CHECK|PART|RESULT)' "$log" | cut -c1-220
done

# ---------------------------------------------------------------- summary
count() { grep -cE "$1" "$2" 2>/dev/null; }
first() { grep -m "${3:-1}" -oE "$1" "$2" 2>/dev/null | cut -c1-160; }
word() {
	case $1 in
	0) echo PASS ;; 77) echo SKIP ;; 124|137) echo TIMEOUT ;; *) echo "FAIL($1)" ;;
	esac
}
part() { # part log: PASS/FAIL/SKIP of that part, or -
	local p
	p=$(grep -m1 -oE "^PART $1: [A-Z]+" "$2" 2>/dev/null | awk '{print $3}')
	echo "${p:--}"
}
{
	echo
	echo "nccl-rma: NCCL 2.30.7 host RMA and zero-SM collectives, two ranks on GPU 0 as two hosts"
	echo
	printf '| %-4s | %-8s | %-4s | %-4s | %-16s | %-10s | %-9s | %-8s | %-7s | %-10s | %-5s |\n' \
		mode result rma coll "ping-pong median" "net plugin" "RMA plugin" "zsm rma" "Init CE" "kernel AG" WARNs
	printf '|------|----------|------|------|------------------|------------|-----------|----------|---------|------------|-------|\n'
	for m in "${mode_list[@]}"; do
		log=$OUT/nccl-rma-$m.log
		[ -n "${rc_of[$m]:-}" ] || continue
		pp=$(grep -m1 -oE '^CHECK rma ping-pong: PASS +r0: [0-9]+ round trips of [0-9A-Za-z ]+: median [0-9.]+ us' "$log" |
			sed -E 's/.*median ([0-9.]+ us)/\1/')
		netp=$(grep -m1 -oE 'Assigned NET plugin [^ ]+' "$log" | awk '{print $4}')
		rmap=$(grep -m1 -oE 'RMA/Plugin: Assigned plugin [^ ]+' "$log" | awk '{print $4}')
		[ -z "$rmap" ] && grep -q 'RMA/Plugin: Failed to initialize any' "$log" && rmap=none
		printf '| %-4s | %-8s | %-4s | %-4s | %-16s | %-10s | %-9s | %-8s | %-7s | %-10s | %-5s |\n' \
			"$m" "$(word "${rc_of[$m]}")" "$(part rma "$log")" "$(part coll "$log")" \
			"${pp:--}" "${netp:--}" "${rmap:--}" \
			"$(count 'NET/zsm: rma' "$log")" "$(count 'Init CE' "$log")" \
			"$(count 'AllGather: [0-9]+ Bytes -> Algo' "$log")" "$(count 'NCCL WARN' "$log")"
	done
	echo
	echo "zsm rma: zsm's own 'NET/zsm: rma' lines; Init CE: NCCL set up CE collectives;"
	echo "kernel AG: AllGathers NCCL tuned for a kernel (rank 0's TUNING lines)."
	for m in "${mode_list[@]}"; do
		log=$OUT/nccl-rma-$m.log
		[ -n "${rc_of[$m]:-}" ] || continue
		echo
		echo "## $m ($(word "${rc_of[$m]}"); nccl-rma-$m.log)"
		first 'NCCL version [0-9.+a-z]+' "$log"
		first 'NET/Plugin: .*' "$log" 3
		first '(Assigned NET plugin|Using network) .*' "$log" 2
		first 'RMA/Plugin: .*' "$log" 4
		first 'GIN/Plugin: .*' "$log" 2
		first '[^ ]*[Ss]ymmetric .*|globalGinSupport.*|[Hh]ost RMA.*' "$log" 3
		first 'NET/zsm: rma.*' "$log" 3
		first 'Init CE.*' "$log" 1
		first 'NCCL WARN .*' "$log" 5
		grep -E '^(CHECK .*: (FAIL|SKIP)|INFO (rma|coll|nccl_rma)|PART|RESULT)' "$log" | cut -c1-400 | head -n 12
		[ "${rc_of[$m]}" = 124 ] || [ "${rc_of[$m]}" = 137 ] &&
			echo "the program itself outlived its timeout; its last lines:" &&
			tail -n 5 "$log"
	done
} | tee -a "$sum"

fail=0
for m in "${mode_list[@]}"; do
	[ "$m" = nccl ] && [ "${rc_of[$m]:-1}" = 77 ] && continue
	[ "${rc_of[$m]:-1}" = 0 ] || fail=1
done
exit $fail
