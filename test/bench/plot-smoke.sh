#!/bin/sh
# SPDX-License-Identifier: MIT
# zsm-bench --plot on small CSV files must write a PNG: one file in the
# format before --gpu (five columns), one with the mem column.
# Usage: plot-smoke.sh ZSM-BENCH.  Exit 77 (skip) when gnuplot is absent.
set -eu

bench=$1
if ! command -v gnuplot >/dev/null 2>&1; then
	echo "SKIP: gnuplot is not installed (apt-get install gnuplot-nox)"
	exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/zsm-plot-smoke.XXXXXX")
trap 'rm -rf "$work"' EXIT

# A name with a space and a quote: it must reach gnuplot as data only.
csv="$work/it's a run.csv"
cat >"$csv" <<'CSV'
plugin,test,size,gbps,usec
zsm,stream,8,0.001,8.0
zsm,stream,65536,0.5,131.0
zsm,pingpong,8,0.001,9.0
zsm,pingpong,65536,0.45,145.0
CSV
gpu_csv="$work/gpu.csv"
cat >"$gpu_csv" <<'CSV'
plugin,test,size,gbps,usec,mem
zsm,stream,8,0.001,8.5,host
zsm,stream,65536,0.6,110.0,host
zsm,stream,8,0.001,9.5,gpu0->gpu1
zsm,stream,65536,0.4,160.0,gpu0->gpu1
CSV
png="$work/out 'x'.png"
out=$("$bench" --plot "$png" "$csv" "$gpu_csv") || exit 1
echo "$out"
# Two series from the first file, two (host and GPU) from the second.
case $out in
*"(4 series)"*) ;;
*)
	echo "FAIL: expected 4 series"
	exit 1
	;;
esac
if [ ! -s "$png" ]; then
	echo "FAIL: $png is missing or empty"
	exit 1
fi
# PNG signature: \211 P N G
magic=$(od -An -tx1 -N4 "$png" | tr -d ' \n')
if [ "$magic" != "89504e47" ]; then
	echo "FAIL: $png is not a PNG (starts with $magic)"
	exit 1
fi
echo "PASS: $(wc -c <"$png") bytes of PNG"
