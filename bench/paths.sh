#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# paths.sh: zsm-bench streams over 1, 2 and 4 paths per comm
# (ZSM_NET_PATHS), in rounds that rotate which goes first, over the
# network path (ZSM_CE=0; tcp on lo unless the environment says
# otherwise).  Prints per size the median GB/s of each path count over
# the rounds and its ratio to one path (the median of the rounds' own
# ratios: each round's runs went back to back, so a drift of the
# machine's speed moves all of them alike), and what each path carried
# in the last round (the comms' INFO line as they close).
#
#     bench/paths.sh [-r ROUNDS] [-s SIZES] [-p COUNTS] [-o DIR]
#
# Defaults: 5 rounds, sizes 1M,16M,64M, counts 1,2,4.  ZSM_BENCH names
# the zsm-bench (default build/tools/zsm-bench).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
bench=${ZSM_BENCH:-$top/build/tools/zsm-bench}
rounds=5 sizes=1M,16M,64M counts=1,2,4 dir=
usage() {
	echo "usage: $0 [-r ROUNDS] [-s SIZES] [-p COUNTS] [-o DIR]" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
	-r) rounds=$2; shift 2 ;;
	-s) sizes=$2; shift 2 ;;
	-p) counts=$2; shift 2 ;;
	-o) dir=$2; shift 2 ;;
	*) usage ;;
	esac
done
[ -x "$bench" ] || { echo "no $bench: build first" >&2; exit 2; }
if [ -z "$dir" ]; then
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
fi
mkdir -p "$dir"
rm -f "$dir"/v-* "$dir"/paths-*.log
export ZSM_PROVIDER=${ZSM_PROVIDER:-tcp} ZSM_DOMAIN=${ZSM_DOMAIN:-lo} ZSM_CE=0
IFS=, read -r -a cs <<<"$counts"

# run ROUND COUNT: one stream run; GB/s per size appended to v-COUNT-SIZE.
run() {
	local log=$dir/paths-$2.log
	if ! ZSM_NET_PATHS=$2 ZSM_CLIENT_LOG=info "$bench" --test stream \
		--sizes "$sizes" --reps 3 >"$log" 2>&1; then
		echo "zsm-bench failed with ZSM_NET_PATHS=$2:" >&2
		tail -n 5 "$log" >&2
		exit 2
	fi
	awk -v d="$dir" -v c="$2" -v r="$1" '$1 == "stream" {
		print $3 >> (d "/v-" c "-" $2); print r, $3 >> (d "/r-" c "-" $2) }' "$log"
}

for ((r = 0; r < rounds; r++)); do
	for ((k = 0; k < ${#cs[@]}; k++)); do
		run "$r" "${cs[(k + r) % ${#cs[@]}]}"
	done
done

median() { sort -g | awk '{v[NR] = $1} END {
	if (!NR) print "nan"; else if (NR % 2) print v[(NR + 1) / 2];
	else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf '%-6s' size
for c in "${cs[@]}"; do printf '  %8s' "$c path"; done
for c in "${cs[@]:1}"; do printf '  %9s' "$c/${cs[0]}"; done
echo
# The sizes as zsm-bench printed them (1048576 comes out as 1M).
for label in $(awk '$1 == "stream" { print $2 }' "$dir/paths-${cs[0]}.log"); do
	printf '%-6s' "$label"
	for c in "${cs[@]}"; do
		printf '  %8.3f' "$(median <"$dir/v-$c-$label" 2>/dev/null)"
	done
	for c in "${cs[@]:1}"; do
		printf '  %9.3f' "$(join "$dir/r-$c-$label" "$dir/r-${cs[0]}-$label" |
			awk '{print $2 / $3}' | median)"
	done
	echo
done
echo "what each path carried (messages/bytes), last round:"
for c in "${cs[@]}"; do
	grep -h 'receive comm .* per path' "$dir/paths-$c.log" |
		sed "s/.*per path: /  $c paths: /"
done
