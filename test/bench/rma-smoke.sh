#!/bin/sh
# SPDX-License-Identifier: MIT
# zsm-bench --rma, through zsm's ncclRmaPlugin_v14 and with --raw on
# libfabric alone, over tcp on loopback: both tests at three small sizes.
# Each run checks every byte it put before timing (zsm-bench verifies by
# default and exits 1 on a mismatch); this script checks that both runs
# succeeded, said so in their header, and printed one row and one CSV line
# per test and size, with a positive time.
# Usage: rma-smoke.sh ZSM-BENCH (the environment picks tcp, lo, ZSM_CE=0).
set -u

bench=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/zsm-rma-smoke.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

for mode in zsm raw; do
	flag=
	head='^# zsm-bench: plugin .*, ncclRma v14, device 0 .*, memory host, reps 1$'
	if [ $mode = raw ]; then
		flag=--raw
		# tcp;ofi_rxm on libfabric 1.x, its own tcp RDM on 2.x.
		head="^# zsm-bench: raw libfabric RMA, provider 'tcp\(;ofi_rxm\)\{0,1\}', .*, signals by saw, memory host, reps 1$"
	fi
	out=$work/$mode.out csv=$work/$mode.csv
	"$bench" $flag --rma --sizes 8,4K,1M --iters 20 --warmup 2 --reps 1 \
		--csv "$csv" >"$out" 2>&1
	rc=$?
	cat "$out"
	[ $rc -eq 0 ] || fail "zsm-bench $flag --rma exited $rc"
	grep -q "$head" "$out" ||
		fail "$mode: no header line saying a verified run on host memory"
	[ "$(head -n 1 "$csv")" = plugin,test,size,gbps,usec,mem ] ||
		fail "$mode: the CSV's first line is not its header"
	[ "$(wc -l <"$csv")" -eq 7 ] || fail "$mode: the CSV has not 6 rows"
	for t in put putsignal; do
		for s in 8:8 4K:4096 1M:1048576; do
			row=${s%:*} bytes=${s#*:}
			n=$(awk -v t="$t" -v s="$row" \
				'$1 == t && $2 == s && $3 >= 0 && $4 > 0' "$out" |
				wc -l)
			[ "$n" -eq 1 ] || fail "$mode: $n rows '$t $row' with figures"
			n=$(awk -F, -v p="$mode" -v t="$t" -v s="$bytes" \
				'NF == 6 && $1 == p && $2 == t && $3 == s &&
				 $4 >= 0 && $5 > 0 && $6 == "host"' "$csv" | wc -l)
			[ "$n" -eq 1 ] || fail "$mode: $n CSV lines $mode,$t,$bytes"
		done
	done
done
echo "PASS: zsm-bench --rma and --raw --rma ran, verified, and reported"
