#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ce-vs-tcp.sh: zsm's stream bandwidth between two processes of this host
# over the same-host transport (ZSM_CE=1) against the same over
# tcp;ofi_rxm on 127.0.0.1 (ZSM_CE=0), run alternately and back to back,
# one repetition per run, and in the same rounds three baselines of each
# size (bench/memcpy_bw.c): a plain single-thread memcpy, and what
# cross-memory attach moves here with no protocol (two processes copying
# halves, as ce does), on small pages and on the huge pages ce's regMr
# asks for.  Prints each size's medians, the ratio ce / tcp and ce as a
# fraction of each baseline.
#
#     bench/ce-vs-tcp.sh [-b BUILD] [-r ROUNDS] [-s SIZES]
#
#   -b BUILD   meson build folder (default: build, under the repo)
#   -r ROUNDS  runs of each (default 5)
#   -s SIZES   comma list, K/M/G suffixes (default 4M,16M,64M,256M)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build rounds=5 sizes=4M,16M,64M,256M
while [ $# -gt 0 ]; do
	case $1 in
	-b) build=$2; shift 2 ;;
	-r) rounds=$2; shift 2 ;;
	-s) sizes=$2; shift 2 ;;
	*) echo "usage: $0 [-b BUILD] [-r ROUNDS] [-s SIZES]" >&2; exit 2 ;;
	esac
done
bench=$build/tools/zsm-bench mc=$build/bench/memcpy-bw
for f in "$bench" "$mc"; do
	[ -x "$f" ] || { echo "no $f: build first" >&2; exit 2; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export ZSM_PROVIDER=${ZSM_PROVIDER:-tcp} ZSM_DOMAIN=${ZSM_DOMAIN:-lo}

for r in $(seq 1 "$rounds"); do
	for ce in 1 0; do
		ZSM_CE=$ce "$bench" --test stream --sizes "$sizes" --reps 1 \
			--csv "$out/ce$ce-$r.csv" >/dev/null ||
			{ echo "zsm-bench with ZSM_CE=$ce failed (round $r)" >&2; exit 2; }
	done
	for s in ${sizes//,/ }; do
		"$mc" "$s" 3 >>"$out/memcpy-$r.txt" ||
			{ echo "memcpy-bw $s failed" >&2; exit 2; }
		"$mc" --cma "$s" 3 >>"$out/cma-$r.txt" ||
			{ echo "memcpy-bw --cma $s failed" >&2; exit 2; }
		"$mc" --cma --huge "$s" 3 >>"$out/cmahuge-$r.txt" ||
			{ echo "memcpy-bw --cma --huge $s failed" >&2; exit 2; }
	done
done

python3 - "$out" "$rounds" <<'PY'
import csv, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
bw = {"ce": {}, "tcp": {}, "memcpy": {}, "cma": {}, "cmahuge": {}}
for r in range(1, rounds + 1):
    for tool, ce in (("ce", 1), ("tcp", 0)):
        for row in csv.DictReader(open(f"{out}/ce{ce}-{r}.csv")):
            bw[tool].setdefault(int(row["size"]), []).append(float(row["gbps"]))
    for base in ("memcpy", "cma", "cmahuge"):
        for line in open(f"{out}/{base}-{r}.txt"):
            size, g = line.split()
            bw[base].setdefault(int(size), []).append(float(g))
print("| size | ce GB/s | tcp GB/s | memcpy GB/s | cma GB/s | cma huge GB/s | ce / tcp | ce / memcpy | ce / cma | ce / cma huge | ce, each run | tcp, each run |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
for size in sorted(bw["ce"]):
    c, t, m, a, h = (statistics.median(bw[k][size]) for k in ("ce", "tcp", "memcpy", "cma", "cmahuge"))
    print(f"| {size >> 20} MiB | {c:.2f} | {t:.2f} | {m:.2f} | {a:.2f} | {h:.2f} | {c / t:.2f} | {c / m:.2f} | {c / a:.2f} | {c / h:.2f} | "
          + " ".join(f"{v:.2f}" for v in bw["ce"][size]) + " | "
          + " ".join(f"{v:.2f}" for v in bw["tcp"][size]) + " |")
PY
