#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# checksum.sh: what ZSM_CHECKSUM=1 costs.  zsm-bench stream and ping-pong
# over tcp;ofi_rxm on 127.0.0.1 (ZSM_CE=0: ce moves no bytes over a wire,
# so it takes no checksum) with the end-to-end CRC32C off and on, run
# alternately, one repetition per run.  Prints each size's medians and
# the ratio on / off (bandwidth; latency in microseconds for ping-pong).
#
#     bench/checksum.sh [-b BUILD] [-r ROUNDS] [-s SIZES]
#
#   -b BUILD   meson build folder (default: build, under the repo)
#   -r ROUNDS  runs of each (default 5)
#   -s SIZES   comma list, K/M/G suffixes (default 8,64K,1M,16M,64M)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build rounds=5 sizes=8,64K,1M,16M,64M
while [ $# -gt 0 ]; do
	case $1 in
	-b) build=$2; shift 2 ;;
	-r) rounds=$2; shift 2 ;;
	-s) sizes=$2; shift 2 ;;
	*) echo "usage: $0 [-b BUILD] [-r ROUNDS] [-s SIZES]" >&2; exit 2 ;;
	esac
done
bench=$build/tools/zsm-bench
[ -x "$bench" ] || { echo "no $bench: build first" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export ZSM_PROVIDER=${ZSM_PROVIDER:-tcp} ZSM_DOMAIN=${ZSM_DOMAIN:-lo}
export ZSM_CE=0

for r in $(seq 1 "$rounds"); do
	for cs in 0 1; do
		ZSM_CHECKSUM=$cs "$bench" --test both --sizes "$sizes" --reps 1 \
			--csv "$out/cs$cs-$r.csv" >/dev/null ||
			{ echo "zsm-bench with ZSM_CHECKSUM=$cs failed (round $r)" >&2; exit 2; }
	done
done

python3 - "$out" "$rounds" <<'PY'
import csv, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
res = {}
for r in range(1, rounds + 1):
    for cs in (0, 1):
        for row in csv.DictReader(open(f"{out}/cs{cs}-{r}.csv")):
            key = (row["test"], int(row["size"]))
            val = float(row["gbps"] if row["test"] == "stream" else row["usec"])
            res.setdefault(key, {0: [], 1: []})[cs].append(val)
print("| test | size | off | on | on / off | off, each run | on, each run |")
print("|---|---:|---:|---:|---:|---|---|")
for (test, size) in sorted(res):
    off, on = (statistics.median(res[(test, size)][c]) for c in (0, 1))
    unit = "GB/s" if test == "stream" else "us"
    print(f"| {test} | {size} | {off:.3f} {unit} | {on:.3f} {unit} | {on / off:.3f} | "
          + " ".join(f"{v:.3f}" for v in res[(test, size)][0]) + " | "
          + " ".join(f"{v:.3f}" for v in res[(test, size)][1]) + " |")
PY
