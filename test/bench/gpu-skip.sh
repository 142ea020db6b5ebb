#!/bin/sh
# SPDX-License-Identifier: MIT
# zsm-bench --gpu where the pair cannot run on GPUs (no CUDA, or a plugin
# whose ptrSupport lacks NCCL_PTR_CUDA) must exit 77 and say why in one
# line.  This test passes (exit 0) only when it does exactly that: a run
# that went on anyway, failed, or skipped without its reason fails it.
# Where the plugin takes CUDA buffers and a GPU is present, a finished,
# verified run on GPU memory is the right outcome and passes as well.
# Usage: gpu-skip.sh ZSM-BENCH [OPTION...] (such as --rma)
set -u

bench=$1
shift
out=$(mktemp "${TMPDIR:-/tmp}/zsm-gpu-skip.XXXXXX")
trap 'rm -f "$out"' EXIT

"$bench" "$@" --gpu --sizes 8,4096 --reps 1 >"$out" 2>&1
rc=$?
cat "$out"
fail() {
	echo "FAIL: $*"
	exit 1
}

case $rc in
77)
	lines=$(grep -c '^zsm-bench: --gpu gpu0->gpu0 skipped: ' "$out")
	[ "$lines" -eq 1 ] ||
		fail "exit 77 with $lines skip lines; expected one"
	why=$(grep '^zsm-bench: --gpu gpu0->gpu0 skipped: ' "$out")
	case $why in
	*"lacks NCCL_PTR_CUDA"* | *"CUDA is not available: "?*) ;;
	*) fail "the skip line names neither known reason" ;;
	esac
	# Without libcuda.so.1 on this machine, the reason must say so.
	ldc=$(command -v ldconfig || echo /sbin/ldconfig)
	if [ -z "${LD_LIBRARY_PATH:-}" ] && cache=$("$ldc" -p 2>/dev/null) &&
		! printf '%s\n' "$cache" | grep -q 'libcuda\.so\.1 '; then
		case $why in
		*"cannot load libcuda.so.1"*) ;;
		*) fail "libcuda.so.1 is not installed, the line does not say so" ;;
		esac
	fi
	echo "PASS: zsm-bench --gpu skipped, saying why"
	;;
0)
	grep -q '^# zsm-bench: .*, memory gpu0->gpu0,' "$out" ||
		fail "exit 0 without a run on GPU memory"
	echo "PASS: zsm-bench --gpu ran and verified on GPU 0"
	;;
*)
	fail "zsm-bench --gpu exited $rc; expected 77 (skip, with the reason)"
	;;
esac
