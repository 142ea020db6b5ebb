#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# rma-vs-raw.sh: zsm's one-sided puts (zsm-bench --rma, through its
# ncclRmaPlugin_v14 as NCCL's RMA proxy drives it) against the same
# patterns on libfabric alone (zsm-bench --raw --rma: fi_write, and the
# signal message zsm sends after it), and over ce against ce's own
# two-sided stream.  Judges the limits of the RMA work:
#
#   tcp;ofi_rxm on lo (ZSM_CE=0: zsm's pair talks as two hosts would)
#     put bandwidth at 1, 16 and 64 MiB   zsm / raw >= 0.95
#     8-byte putsignal latency            zsm - raw <= +2 us
#   ce (one ZSM_HOSTID for both ranks), host memory
#     put bandwidth at 16 MiB             put / two-sided stream >= 0.9
#
#     bench/rma-vs-raw.sh [-b BUILD] [-r ROUNDS] [-o DIR]
#
#   -b BUILD   meson build folder (default: build, under the repo)
#   -r ROUNDS  rounds (default 5)
#   -o DIR     where the CSV files and logs go (default: a temp dir,
#              removed at the end)
#
# Each round runs every case once per tool, back to back, the two in
# turn (zsm first on odd rounds, the other first on even ones), each run
# the median of 3 timed repetitions (a put or stream repetition moves
# 1 GiB: one alone spread by a fifth on a shared 2-core machine).  A figure is the median over the rounds; a comparison is the
# median of the rounds' own ratios (differences for latency), as in
# bench/ab.sh, so that a machine whose speed drifts between rounds moves
# both halves of a pair and not the comparison.
#
# ce's one-sided operations may not be built: when zsm refuses its
# windows there the ce part says "ce: not available (regMrSym failed:
# ...)" and is not judged.  Prints PASS or FAIL last; exit 0 (pass),
# 1 (a limit missed) or 2 (a run failed).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build rounds=5 out=
while [ $# -gt 0 ]; do
	case $1 in
	-b) build=$2; shift 2 ;;
	-r) rounds=$2; shift 2 ;;
	-o) out=$2; shift 2 ;;
	*) echo "usage: $0 [-b BUILD] [-r ROUNDS] [-o DIR]" >&2; exit 2 ;;
	esac
done
bench=$build/tools/zsm-bench
[ -x "$bench" ] || { echo "no $bench: build first" >&2; exit 2; }
if [ -z "$out" ]; then
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"
# Figures are appended per round: a folder used before must not lend its
# rounds to this run's medians and pairs.
rm -f "$out"/v-* "$out"/paired
export ZSM_PROVIDER=tcp ZSM_DOMAIN=lo ZSM_RMA=1

# run PATH NAME ARGS...: one zsm-bench run, its CSV in $out/NAME.csv and
# its output in $out/NAME.log; the value column of each row appended to
# $out/v-<path>-<tool>-<test>-<size> (GB/s, or usec for putsignal).
run() {
	local path=$1 name=$2
	shift 2
	"$bench" "$@" --csv "$out/$name.csv" >"$out/$name.log" 2>&1 ||
		return 1
	awk -F, -v pre="$out/v-$path-" 'NR > 1 {
		v = $2 == "putsignal" ? $5 : $4
		print v >> (pre $1 "-" $2 "-" $3)
	}' "$out/$name.csv"
}

# tcp: one round's runs of a tool.
tcp_runs() {
	local tool=$1 r=$2 flag=
	[ "$tool" = raw ] && flag=--raw
	ZSM_CE=0 run tcp "$tool-put-$r" $flag --rma --test put \
		--sizes 1M,16M,64M --reps 3 &&
		ZSM_CE=0 run tcp "$tool-putsignal-$r" $flag --rma \
			--test putsignal --sizes 8 --reps 3
}

# ce: rma (one-sided put) or stream (two-sided) at 16 MiB.
ce_run() {
	local what=$1 r=$2
	if [ "$what" = rma ]; then
		ZSM_CE=1 ZSM_HOSTID=rma-vs-raw run ce "ce-put-$r" --rma \
			--test put --sizes 16M --reps 3
	else
		ZSM_CE=1 ZSM_HOSTID=rma-vs-raw run ce "ce-stream-$r" \
			--test stream --sizes 16M --reps 3
	fi
}

# Why zsm refused ce's windows, or nothing when that was not the failure.
ce_refusal() {
	local log=$out/ce-put-$1.log why
	grep -q 'regMrSym of .* failed' "$log" || return 1
	why=$(grep -m1 '\[plugin WARN\]' "$log" | sed 's/.*NET\/zsm: //')
	[ -n "$why" ] ||
		why=$(grep -m1 'regMrSym of' "$log" | sed 's/.*failed: //')
	echo "$why"
}

ce=yes ce_why=
for r in $(seq 1 "$rounds"); do
	order="zsm raw"
	[ $((r % 2)) = 0 ] && order="raw zsm"
	for tool in $order; do
		tcp_runs "$tool" "$r" || {
			echo "zsm-bench ($tool, round $r) failed:" >&2
			tail -n 5 "$out/$tool"-put*-"$r".log >&2
			exit 2
		}
	done
	if [ $ce = yes ]; then
		order="rma stream"
		[ $((r % 2)) = 0 ] && order="stream rma"
		for what in $order; do
			ce_run "$what" "$r" && continue
			if [ "$what" = rma ] && ce_why=$(ce_refusal "$r"); then
				ce=no
				break
			fi
			echo "zsm-bench over ce ($what, round $r) failed:" >&2
			tail -n 5 "$out/ce-$([ "$what" = rma ] && echo put ||
				echo stream)-$r.log" >&2
			exit 2
		done
	fi
	echo "round $r of $rounds done" >&2
done

median() { sort -g "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# med FILE FORMAT: the median, printed with FORMAT.
# shellcheck disable=SC2059 # the format is the caller's constant
med() { printf "$2" "$(median "$1")"; }
# paired A B OP: each round's B/A (OP ratio) or B - A (OP diff).
paired() {
	paste "$1" "$2" | awk -v op="$3" '{ print (op == "ratio") ? $2 / $1 : $2 - $1 }'
}
rounds_of() { tr '\n' ' ' <"$1"; }

status=0
# judge WHAT VALUE OP LIMIT [UNIT]: one line, FAIL counted when VALUE
# misses.
judge() {
	if awk -v v="$2" -v l="$4" -v op="$3" \
		'BEGIN { exit !(op == ">=" ? v >= l : v <= l) }'; then
		echo "  $1 (limit $3 $4${5:-}): PASS"
	else
		echo "  $1 (limit $3 $4${5:-}): FAIL"
		status=1
	fi
}

# compare WHAT UNIT FORMAT A FILE-A B FILE-B OP LIMIT: the medians of
# A's and B's rounds, the rounds, and the median of the rounds' B/A (OP
# ratio, judged >= LIMIT) or B - A (OP diff, judged <= LIMIT).
compare() {
	local what=$1 unit=$2 fmt=$3 a=$4 fa=$5 b=$6 fb=$7 op=$8 limit=$9 v
	paired "$fa" "$fb" "$op" >"$out/paired"
	echo "$what: $b $(med "$fb" "$fmt") $unit, $a $(med "$fa" "$fmt") $unit"
	printf '    %-6s rounds: %s\n' "$b" "$(rounds_of "$fb")" \
		"$a" "$(rounds_of "$fa")"
	if [ "$op" = ratio ]; then
		v=$(med "$out/paired" %.3f)
		judge "$what $b/$a $v" "$v" ">=" "$limit"
	else
		v=$(med "$out/paired" %+.2f)
		judge "$what $b - $a $v $unit" "$v" "<=" "$limit" " $unit"
	fi
}

echo "tcp;ofi_rxm on lo, $rounds rounds (zsm, raw; each round's runs in turn)"
for s in 1048576:1 16777216:16 67108864:64; do
	compare "put ${s#*:} MiB" GB/s %.3f raw "$out/v-tcp-raw-put-${s%:*}" \
		zsm "$out/v-tcp-zsm-put-${s%:*}" ratio 0.95
done
compare "putsignal 8 B (half round trip)" us %.2f \
	raw "$out/v-tcp-raw-putsignal-8" zsm "$out/v-tcp-zsm-putsignal-8" \
	diff +2
if [ $ce = no ]; then
	echo "ce: not available (regMrSym failed: $ce_why)"
else
	compare "ce, host memory, 16 MiB" GB/s %.3f \
		stream "$out/v-ce-zsm-stream-16777216" \
		put "$out/v-ce-zsm-put-16777216" ratio 0.9
fi
if [ $status = 0 ]; then
	echo "rma-vs-raw: PASS$([ $ce = no ] && echo ' (ce not judged)')"
else
	echo "rma-vs-raw: FAIL"
fi
exit $status
