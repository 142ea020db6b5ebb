#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# coll-vs-put.sh: zsm's AllGather against zsm's one-sided put, in one run:
# ROUNDS alternations of
#   put        zsm-bench --rma --test put at SIZE, the pair on zsm's network
#              path (ZSM_CE=0); its GB/s: size x puts / time at the target,
#              the bytes the target receives per second (8 puts in flight);
#   put both ways  the same with --bidir: both ranks put to each other at
#              once, the traffic of a two-rank AllGather (information: it
#              shows what two-way traffic costs the host by itself);
#   all_gather zsm-bench --coll all_gather at SIZE per rank, two ranks as
#              two hosts (--hosts 0,1: zsm's network path), in place; its
#              GB/s: (n-1) x size / time per call, the bytes a rank
#              receives per second (one call at a time, each timed to its
#              end, both directions at once)
#   kernel tcp     on tcp over lo only: BUILD/bench/tcp-pair, the kernel's
#              own TCP on loopback with blocking send/recv of SIZE
#              messages, one way and both ways at once (information: how
#              much two-way traffic costs this host without zsm)
# then the medians and the ratio all_gather / put (target: at least 0.9).
#
#     bench/coll-vs-put.sh [-b BUILD] [-r ROUNDS] [-s SIZE] [-i ITERS]
#                          [-g G0,G1] [-o] [-p spin|nap|both]
#
# -p (with -g) says how the AllGather's host waits for its stream
# (zsm-bench --poll): spin (default) or nap; both runs each way in every
# round, the verdict from spin, nap's figures as information.
# -g puts both sides' buffers on those GPUs (-g 0,0: both on GPU 0) and the
# AllGather's calls on a CUDA stream; without it, host memory.  -o runs
# the AllGather out of place (its own block then costs a copy too).  Uses
# ZSM_PROVIDER/ZSM_DOMAIN as zsm-bench does (tcp and lo when unset).  Exit
# 0 when the ratio meets the target, 1 when not, 2 when a run failed, 77
# when one skipped (-g without CUDA).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build rounds=5 size=64M iters=20 gpus='' place=--inplace poll=spin
while [ $# -gt 0 ]; do
	case $1 in
	-b) build=$2; shift 2 ;;
	-r) rounds=$2; shift 2 ;;
	-s) size=$2; shift 2 ;;
	-i) iters=$2; shift 2 ;;
	-g) gpus=$2; shift 2 ;;
	-o) place=; shift ;;
	-p) poll=$2; shift 2 ;;
	*) echo "usage: $0 [-b BUILD] [-r ROUNDS] [-s SIZE] [-i ITERS] [-g G0,G1] [-o] [-p spin|nap|both]" >&2
	   exit 2 ;;
	esac
done
case $poll in
spin | nap | both) ;;
*) echo "$0: -p takes spin, nap or both, not '$poll'" >&2; exit 2 ;;
esac
bench=$build/tools/zsm-bench
if [ ! -x "$bench" ] || [ ! -x "$build/tools/zsm-bench-coll" ]; then
	echo "no $bench or zsm-bench-coll: build first" >&2
	exit 2
fi
export ZSM_PROVIDER=${ZSM_PROVIDER:-tcp} ZSM_DOMAIN=${ZSM_DOMAIN:-lo}
gpu=()
[ -n "$gpus" ] && gpu=(--gpu "$gpus")
if [ -z "$gpus" ] && [ "$poll" != spin ]; then
	echo "$0: -p $poll says how the host waits for a CUDA stream: give -g too" >&2
	exit 2
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run() { # name command...: one run; its GB/s into $gbps
	local name=$1 rc
	shift
	"$@" --sizes "$size" --iters "$iters" --csv "$out/$name.csv" \
		>"$out/$name.out" 2>&1
	rc=$?
	cat "$out/$name.out" >>"$out/all.log"
	if [ $rc -ne 0 ]; then
		echo "$name: $* exited $rc:" >&2
		cat "$out/$name.out" >&2
		# 77: zsm-bench's skip (no CUDA for -g, say).
		[ $rc -eq 77 ] && exit 77
		exit 2
	fi
	gbps=$(tail -n 1 "$out/$name.csv" | cut -d, -f4)
}

# tcp-pair uses 127.0.0.1: a baseline only for zsm's tcp on loopback.
pair=$build/bench/tcp-pair pair_why=
case $ZSM_PROVIDER in
tcp | "tcp;ofi_rxm") [ "$ZSM_DOMAIN" = lo ] || pair_why="domain $ZSM_DOMAIN, not lo" ;;
*) pair_why="provider $ZSM_PROVIDER, not tcp" ;;
esac
[ -z "$pair_why" ] && [ ! -x "$pair" ] && pair_why="no $pair"
pair_run() { # args...: one tcp-pair run, its figures into $pair_out
	if ! pair_out=$("$pair" "$@" "$size" "$iters" 2>>"$out/all.log"); then
		echo "tcp-pair $* $size $iters failed:" >&2
		tail -n 3 "$out/all.log" >&2
		exit 2
	fi
}

puts=() bidirs=() ags=() naps=() tcp1=() tcp2=()
for r in $(seq 1 "$rounds"); do
	# Every byte is checked in the first round; the others only time.
	verify=()
	[ "$r" -gt 1 ] && verify=(--no-verify)
	ZSM_RMA=1 ZSM_CE=0 run put "$bench" --rma --test put --reps 3 \
		"${gpu[@]}" "${verify[@]}"
	puts+=("$gbps")
	ZSM_RMA=1 ZSM_CE=0 run put_bidir "$bench" --rma --test put --bidir \
		--reps 3 "${gpu[@]}" "${verify[@]}"
	bidirs+=("$gbps")
	# With -p both, the two ways of waiting take turns going first.
	case $poll/$((r % 2)) in
	both/1) polls="spin nap" ;;
	both/0) polls="nap spin" ;;
	*) polls=$poll ;;
	esac
	for p in $polls; do
		pollarg=()
		[ -n "$gpus" ] && pollarg=(--poll "$p")
		run all_gather "$bench" --coll all_gather --hosts 0,1 $place \
			"${pollarg[@]}" "${gpu[@]}" "${verify[@]}"
		if [ "$p" = nap ] && [ "$poll" = both ]; then
			naps+=("$gbps")
		else
			ags+=("$gbps")
		fi
	done
	if [ -z "$pair_why" ]; then
		pair_run
		tcp1+=("$pair_out")
		pair_run --both
		# The slower direction, as the AllGather's figure is its
		# slower rank's.
		tcp2+=("$(echo "$pair_out" | tr ' ' '\n' | sort -g | head -n 1)")
	fi
done
# What ran (the first round's headers, which say the bytes were checked).
grep -m 1 '^# zsm-bench: plugin' "$out/all.log"
grep -m 1 '^# zsm-bench: zsm API' "$out/all.log"
python3 - "${puts[*]}" "${ags[*]}" "${bidirs[*]}" "$size" "${gpus:-host}" "$([ -n "$place" ] && echo "in place" || echo "out of place")" "${tcp1[*]}" "${tcp2[*]}" "$pair_why" "$poll" "${naps[*]}" <<'PY'
import statistics, sys
put = [float(x) for x in sys.argv[1].split()]
ag = [float(x) for x in sys.argv[2].split()]
bidir = [float(x) for x in sys.argv[3].split()]
size, where, place = sys.argv[4], sys.argv[5], sys.argv[6]
tcp1 = [float(x) for x in sys.argv[7].split()]
tcp2 = [float(x) for x in sys.argv[8].split()]
pair_why = sys.argv[9]
poll = "spin" if sys.argv[10] == "both" else sys.argv[10]
nap = [float(x) for x in sys.argv[11].split()]
mp, ma, mb = (statistics.median(put), statistics.median(ag),
              statistics.median(bidir))
mem = "host memory" if where == "host" else "GPUs " + where
print(f"coll-vs-put: {size}, {mem}, GB/s = bytes a rank receives per second")
print("put:        " + " ".join(f"{x:.3f}" for x in put) + f"  median {mp:.3f}"
      "  (zsm-bench --rma --test put, ZSM_CE=0: size x puts / time at the target)")
print("put both ways: " + " ".join(f"{x:.3f}" for x in bidir) +
      f"  median {mb:.3f}  (the same with --bidir: both ranks put at once,"
      " as the AllGather's two ranks do)")
print("all_gather: " + " ".join(f"{x:.3f}" for x in ag) + f"  median {ma:.3f}"
      f"  (zsm-bench --coll all_gather --hosts 0,1, {place}, --poll {poll}:"
      " (n-1) x size / time per call)")
if nap:
    mn = statistics.median(nap)
    print("all_gather --poll nap: " + " ".join(f"{x:.3f}" for x in nap) +
          f"  median {mn:.3f}")
    print(f"all_gather --poll nap / put: {mn / mp:.3f}, nap / spin:"
          f" {mn / ma:.3f} (information)")
print(f"all_gather / put both ways: {ma / mb:.3f} (information)")
if tcp1:
    m1, m2 = statistics.median(tcp1), statistics.median(tcp2)
    print("kernel tcp one way: " + " ".join(f"{x:.3f}" for x in tcp1) +
          f"  median {m1:.3f}  (tcp-pair: blocking send/recv on 127.0.0.1, no zsm)")
    print("kernel tcp both ways: " + " ".join(f"{x:.3f}" for x in tcp2) +
          f"  median {m2:.3f}  (the slower direction)")
    print(f"kernel tcp both ways / one way: {m2 / m1:.3f} (information: "
          "what two-way traffic costs this host without zsm)")
else:
    print(f"kernel tcp: not run ({pair_why})")
ok = ma / mp >= 0.9
print(f"all_gather / put: {ma / mp:.3f} (target >= 0.9): {'PASS' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)
PY
