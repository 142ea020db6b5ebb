#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# syscalls.sh: what zsm's threads ask of the kernel, per message and when
# idle (issue 13).  strace -f -c counts every system call of both
# zsm-bench ranks over an 8-byte ping-pong at two iteration counts; the
# difference, divided by the messages between them, is the cost of one
# message without the start-up.  A process that has run init, one listen
# and one connected idle pair (test/bench/idle-pair) is then watched for
# 5 s (strace -c -p on each of its threads): its wake-ups a second.
#
#     bench/syscalls.sh [-b BUILD] [-p PLUGIN] [-n ITERS]
#
# PLUGIN (default BUILD's) may be another build's .so, to count a
# baseline with the same tools.
#
# Limits (exit 1 when one is missed): over ce, poll <= 0.1 and futex
# <= 0.5 per message; idle, <= 10 wake-ups a second (calls that block or
# yield: poll, ppoll, epoll_wait, select, futex, nanosleep,
# clock_nanosleep, sched_yield).  Counts vary a little from run to run:
# strace slows every call, so a thread that spins makes more of them.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build iters=10000 plugin=
while [ $# -gt 0 ]; do
	case $1 in
	-b) build=$2; shift 2 ;;
	-p) plugin=$2; shift 2 ;;
	-n) iters=$2; shift 2 ;;
	*) echo "usage: $0 [-b BUILD] [-p PLUGIN] [-n ITERS]" >&2; exit 2 ;;
	esac
done
bench=$build/tools/zsm-bench idle=$build/test/bench/idle-pair
plugin=${plugin:-$build/plugin/libnccl-net-zsm.so}
for f in "$bench" "$idle" "$plugin"; do
	[ -e "$f" ] || { echo "no $f: build first" >&2; exit 2; }
done
command -v strace >/dev/null || { echo "no strace (apt-get install strace)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export ZSM_PROVIDER=${ZSM_PROVIDER:-tcp} ZSM_DOMAIN=${ZSM_DOMAIN:-lo}
blocking="poll ppoll epoll_wait select pselect6 futex nanosleep clock_nanosleep sched_yield"

# calls FILE NAME: how many NAME calls strace -c counted in FILE.
calls() {
	awk -v n="$2" '$NF == n { print ($4 ~ /^[0-9]+$/) ? $4 : $3; f = 1 }
		END { if (!f) print 0 }' "$1"
}

status=0
printf '%-6s %-12s %10s\n' path syscall per-message
for ce in 1 0; do
	name=$([ $ce = 1 ] && echo ce || echo tcp)
	for n in "$iters" $((2 * iters)); do
		ZSM_CE=$ce strace -f -c -o "$dir/$name-$n.txt" "$bench" \
			--plugin "$plugin" --test pingpong --sizes 8 \
			--iters "$n" --warmup 0 --reps 1 >"$dir/$name-$n.out" 2>&1 ||
			{ echo "zsm-bench failed ($name, $n):"; cat "$dir/$name-$n.out"; exit 1; }
	done
	msgs=$((2 * iters)) # a round trip is two messages
	for sc in poll futex ppoll epoll_wait sched_yield; do
		a=$(calls "$dir/$name-$iters.txt" $sc)
		b=$(calls "$dir/$name-$((2 * iters)).txt" $sc)
		per=$(awk -v a="$a" -v b="$b" -v m="$msgs" 'BEGIN { printf "%.3f", (b - a) / m }')
		printf '%-6s %-12s %10s\n' "$name" "$sc" "$per"
		if [ $ce = 1 ]; then
			lim=""
			[ $sc = poll ] && lim=0.1
			[ $sc = futex ] && lim=0.5
			if [ -n "$lim" ] && awk -v p="$per" -v l="$lim" 'BEGIN { exit !(p > l) }'; then
				echo "FAIL: over ce, $sc per message $per > $lim"
				status=1
			fi
		fi
	done
done

# The idle process's threads, watched for 5 s once it is idle (its
# start-up, connect included, is not counted).
"$idle" "$plugin" 12 >"$dir/idle.out" 2>&1 &
pid=$!
for _ in $(seq 100); do
	grep -q idle "$dir/idle.out" && break
	sleep 0.1
done
sleep 1
tids=$(ls "/proc/$pid/task" 2>/dev/null | sed 's/^/-p /' | tr '\n' ' ')
[ -n "$tids" ] || { echo "idle-pair did not start:"; cat "$dir/idle.out"; exit 1; }
# shellcheck disable=SC2086
timeout -s INT 5 strace -c -o "$dir/idle.txt" $tids >/dev/null 2>&1
wait $pid
t=0
for sc in $blocking; do t=$((t + $(calls "$dir/idle.txt" $sc))); done
rate=$(awk -v t="$t" 'BEGIN { printf "%.1f", t / 5 }')
echo "idle: init, one listen and one connected pair: $rate wake-ups a second ($t blocking calls of its $(echo $tids | wc -w) threads in 5 s)"
if awk -v r="$rate" 'BEGIN { exit !(r > 10) }'; then
	echo "FAIL: idle, $rate wake-ups a second > 10"
	status=1
fi
[ $status = 0 ] && echo "syscalls: PASS" || echo "syscalls: FAIL"
exit $status
