#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# env-ab.sh: one zsm build run two ways, A and B, each a set of
# environment variables (space-separated NAME=VALUE words), in rounds that
# alternate which goes first; each run is a zsm-bench ping-pong and stream
# over the network path (ZSM_CE=0, ZSM_PROVIDER=tcp and ZSM_DOMAIN=lo
# unless A, B or the caller's environment say otherwise).  Prints per
# test and size the medians of the rounds and B/A, the median of the
# rounds' own GB/s ratios: each round's pair ran back to back, so a drift
# of the machine's speed moves both halves of a pair alike.
#
#     bench/env-ab.sh [-r ROUNDS] [-s SIZES] [-o DIR] A-VARS B-VARS
#
# ZSM_BENCH names the zsm-bench (default build/tools/zsm-bench).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
bench=${ZSM_BENCH:-$top/build/tools/zsm-bench}
rounds=5 sizes=64,1K,4K,8K,16K,64K,1M dir=
usage() {
	echo "usage: $0 [-r ROUNDS] [-s SIZES] [-o DIR] A-VARS B-VARS" >&2
	exit 2
}
while [ $# -gt 2 ]; do
	case $1 in
	-r) rounds=$2; shift 2 ;;
	-s) sizes=$2; shift 2 ;;
	-o) dir=$2; shift 2 ;;
	*) usage ;;
	esac
done
[ $# -eq 2 ] || usage
vars_a=$1 vars_b=$2
[ -x "$bench" ] || { echo "no $bench: build first" >&2; exit 2; }
if [ -z "$dir" ]; then
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
fi
mkdir -p "$dir"
export ZSM_PROVIDER=${ZSM_PROVIDER:-tcp} ZSM_DOMAIN=${ZSM_DOMAIN:-lo} ZSM_CE=0
for r in $(seq 1 "$rounds"); do
	order="a b"
	[ $((r % 2)) = 0 ] && order="b a"
	for side in $order; do
		vars=$vars_a
		[ "$side" = b ] && vars=$vars_b
		# shellcheck disable=SC2086 # the words are the variables
		env $vars "$bench" --test both --sizes "$sizes" --reps 5 \
			--csv "$dir/r$r-$side.csv" >/dev/null \
			2>"$dir/r$r-$side.err" ||
			{ echo "round $r, $side ($vars): zsm-bench failed" >&2
			  exit 1; }
	done
done
echo "A: $vars_a"
echo "B: $vars_b"
python3 - "$dir" <<'PY'
import csv, glob, statistics, sys
d = sys.argv[1]
runs = {}
for f in glob.glob(d + '/r*-*.csv'):
    r, side = f.rsplit('/', 1)[1][:-4].split('-')
    for row in csv.DictReader(open(f)):
        key = (row['test'], int(row['size']))
        runs.setdefault(key, {}).setdefault(r, {})[side] = row
print('| test | size | A usec | B usec | A GB/s | B GB/s | B/A |')
print('|---|---|---|---|---|---|---|')
for key in sorted(runs):
    pairs = [(v['a'], v['b']) for v in runs[key].values()
             if 'a' in v and 'b' in v]
    med = lambda side, col: statistics.median(float(p[side][col]) for p in pairs)
    ratio = statistics.median(float(p[1]['gbps']) / float(p[0]['gbps'])
                              for p in pairs)
    print('| %s | %d | %.1f | %.1f | %.3f | %.3f | %.2f |' % (
        key[0], key[1], med(0, 'usec'), med(1, 'usec'),
        med(0, 'gbps'), med(1, 'gbps'), ratio))
PY
