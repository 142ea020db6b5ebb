#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/thread_cpu.py around a short zsm-bench --rma put over tcp (host
# memory): its table must name zsm's proxy thread (two ranks, two
# threads) and the main threads, with some CPU time in all; its JSON must
# say the same; and it must hand back the command's exit status (1 for
# `false`, 2 for a command that cannot start).
# Usage: thread-cpu-smoke.sh ZSM-BENCH THREAD_CPU.PY
set -u

bench=$1 tool=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/zsm-thread-cpu.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

# The tool samples /proc, so a thread it is to name must live across
# samples: the run is long enough (about a second on an idle host, longer
# on a busy one) that each rank's proxy thread outlives several, even
# with the sampler itself descheduled; 200 puts (0.4 s, mostly set-up)
# once let a rank's proxy slip between two samples on a loaded CI host.
python3 "$tool" -i 0.01 -j "$work/t.json" -- "$bench" --rma --test put \
	--sizes 64K --iters 4000 --reps 10 >"$work/out" 2>&1
rc=$?
cat "$work/out"
[ $rc -eq 0 ] || fail "thread_cpu.py around zsm-bench exited $rc"
grep -Eq '^zsm-proxy +2 ' "$work/out" ||
	fail "no zsm-proxy row with 2 threads (one per rank)"
grep -Eq '^zsm-bench +[0-9]+ ' "$work/out" || fail "no zsm-bench row"
grep -Eq '^total: [0-9.]+ CPU s' "$work/out" || fail "no total line"
python3 - "$work/t.json" <<'PY' || fail "the JSON does not match the table"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["exit"] == 0 and d["wall_s"] > 0, d
assert d["threads"]["zsm-proxy"]["count"] == 2, d
assert d["cpu_s"] > 0, d
assert abs(d["cpu_s"] - sum(t["user_s"] + t["system_s"]
                            for t in d["threads"].values())) < 1e-6, d
PY
python3 "$tool" -- false >/dev/null 2>&1
[ $? -eq 1 ] || fail "the exit status of false was not handed back"
python3 "$tool" -- "$work/no-such-command" >/dev/null 2>&1
[ $? -eq 2 ] || fail "a command that cannot start did not give 2"
echo "PASS: thread_cpu.py names the threads, sums them, keeps the status"
