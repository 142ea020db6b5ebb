#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# stream-vs-raw.sh: zsm's stream bandwidth against zsm-bench --raw (the
# same pattern on libfabric alone, same provider and domain), run
# alternately and back to back, one repetition per run; prints each size's
# medians over the rounds and the ratio zsm / raw, then draws both
# series with zsm-bench --plot when gnuplot is there.
#
#     bench/stream-vs-raw.sh [-b BUILD] [-r ROUNDS] [-s SIZES] [-o DIR]
#
#   -b BUILD   meson build folder (default: build, under the repo)
#   -r ROUNDS  runs of each tool (default 5)
#   -s SIZES   comma list for the ratio table (default 1M,4M,16M,64M)
#   -o DIR     where the CSV files and plot.png go (default: a new temp dir)
#
# The provider and domain come from ZSM_PROVIDER / ZSM_DOMAIN as for the
# plugin (for example ZSM_PROVIDER=tcp ZSM_DOMAIN=lo); ZSM_CE is 0, so
# zsm takes that provider too, not its same-host path.  Exit 0, or 2 when
# a run fails.  Runs are alternated so that a slow patch of a shared
# machine hits both tools alike; the medians still move between sessions.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build rounds=5 sizes=1M,4M,16M,64M out=
while [ $# -gt 0 ]; do
	case $1 in
	-b) build=$2; shift 2 ;;
	-r) rounds=$2; shift 2 ;;
	-s) sizes=$2; shift 2 ;;
	-o) out=$2; shift 2 ;;
	*) echo "usage: $0 [-b BUILD] [-r ROUNDS] [-s SIZES] [-o DIR]" >&2; exit 2 ;;
	esac
done
bench=$build/tools/zsm-bench
[ -x "$bench" ] || { echo "no $bench: build first" >&2; exit 2; }
[ -n "$out" ] || out=$(mktemp -d)
# Both ranks run here: without this zsm would take its same-host path
# (ce) and the comparison with --raw's provider would mean nothing.
export ZSM_CE=0
mkdir -p "$out"

for r in $(seq 1 "$rounds"); do
	for tool in zsm raw; do
		flag=
		[ $tool = raw ] && flag=--raw
		"$bench" $flag --test stream --sizes "$sizes" --reps 1 \
			--csv "$out/$tool-$r.csv" >/dev/null ||
			{ echo "zsm-bench $flag failed (round $r)" >&2; exit 2; }
	done
done
# One sweep of each, every size, for the plot.
"$bench" --test both --csv "$out/zsm.csv" >/dev/null &&
	"$bench" --raw --test both --csv "$out/raw.csv" >/dev/null ||
	{ echo "the sweep for the plot failed" >&2; exit 2; }

python3 - "$out" "$rounds" <<'PY'
import csv, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
runs = {"zsm": {}, "raw": {}}
for tool in runs:
    for r in range(1, rounds + 1):
        for row in csv.DictReader(open(f"{out}/{tool}-{r}.csv")):
            runs[tool].setdefault(int(row["size"]), []).append(float(row["gbps"]))
print("| size | zsm GB/s | raw GB/s | zsm / raw | zsm, each run | raw, each run |")
print("|---:|---:|---:|---:|---|---|")
for size in sorted(runs["zsm"]):
    z, w = runs["zsm"][size], runs["raw"].get(size, [])
    if not w:
        continue
    mz, mw = statistics.median(z), statistics.median(w)
    name = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size} B"
    print(f"| {name} | {mz:.3f} | {mw:.3f} | {mz / mw:.2f} | "
          + " ".join(f"{v:.2f}" for v in z) + " | "
          + " ".join(f"{v:.2f}" for v in w) + " |")
PY
if "$bench" --plot "$out/plot.png" "$out/zsm.csv" "$out/raw.csv" >/dev/null 2>&1; then
	echo "plot: $out/plot.png"
else
	echo "no plot (gnuplot missing?): CSV files in $out"
fi
