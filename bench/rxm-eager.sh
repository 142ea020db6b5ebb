#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# rxm-eager.sh: what rxm's eager size (FI_OFI_RXM_BUFFER_SIZE, which zsm's
# own sizes follow) costs messages through zsm over tcp;ofi_rxm on
# 127.0.0.1: A = 16384 (libfabric's default) against B (default 2048), in
# rounds that alternate which goes first, each a zsm-bench ping-pong and
# stream run.  Prints per test and size the medians of the rounds and
# B/A, the median of the rounds' own GB/s ratios.  docs/security.md
# ("Floods") says why the size matters: each message rxm holds for a
# receive not yet posted costs one buffer of it.
#
#     bench/rxm-eager.sh [-r ROUNDS] [-b BYTES] [-s SIZES] [-o DIR]
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
bench=${ZSM_BENCH:-$top/build/tools/zsm-bench}
rounds=5 b=2048 sizes=64,1K,4K,8K,16K,64K,1M dir=
while [ $# -gt 0 ]; do
	case $1 in
	-r) rounds=$2; shift 2 ;;
	-b) b=$2; shift 2 ;;
	-s) sizes=$2; shift 2 ;;
	-o) dir=$2; shift 2 ;;
	*) echo "usage: $0 [-r ROUNDS] [-b BYTES] [-s SIZES] [-o DIR]" >&2
	   exit 2 ;;
	esac
done
[ -x "$bench" ] || { echo "no $bench: build first" >&2; exit 2; }
if [ -z "$dir" ]; then
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
fi
mkdir -p "$dir"
export ZSM_PROVIDER=${ZSM_PROVIDER:-tcp} ZSM_DOMAIN=${ZSM_DOMAIN:-lo} ZSM_CE=0
for r in $(seq 1 "$rounds"); do
	order="16384 $b"
	[ $((r % 2)) = 0 ] && order="$b 16384"
	for e in $order; do
		FI_OFI_RXM_BUFFER_SIZE=$e "$bench" --test both --sizes "$sizes" \
			--reps 5 --csv "$dir/r$r-$e.csv" >/dev/null \
			2>"$dir/r$r-$e.err" ||
			{ echo "round $r, $e: zsm-bench failed" >&2; exit 1; }
	done
done
python3 - "$dir" "$b" <<'PY'
import csv, glob, statistics, sys
d, b = sys.argv[1], sys.argv[2]
runs = {}
for f in glob.glob(d + '/r*-*.csv'):
    r, e = f.rsplit('/', 1)[1][:-4].split('-')
    for row in csv.DictReader(open(f)):
        key = (row['test'], int(row['size']))
        runs.setdefault(key, {}).setdefault(r, {})[e] = row
print('| test | size | A usec | B usec | A GB/s | B GB/s | B/A |')
print('|---|---|---|---|---|---|---|')
for key in sorted(runs):
    pairs = [(v['16384'], v[b]) for v in runs[key].values()
             if '16384' in v and b in v]
    med = lambda side, col: statistics.median(float(p[side][col]) for p in pairs)
    ratio = statistics.median(float(p[1]['gbps']) / float(p[0]['gbps'])
                              for p in pairs)
    print('| %s | %d | %.1f | %.1f | %.3f | %.3f | %.2f |' % (
        key[0], key[1], med(0, 'usec'), med(1, 'usec'),
        med(0, 'gbps'), med(1, 'gbps'), ratio))
PY
