# SPDX-License-Identifier: MIT
"""Where a command's CPU time goes, by thread name.

usage: python3 bench/thread_cpu.py [-i SECONDS] [-j JSON] -- COMMAND [ARG...]

Runs COMMAND and, every SECONDS (default 0.05), reads /proc/PID/task/TID/
stat of COMMAND and of every process below it (zsm-bench forks its second
rank): each thread's name and its user and system CPU time so far.  When
COMMAND ends it prints, per thread name (zsm-pump-tx, zsm-proxy,
zsm-api-agent, the program's own name for main threads, ...), how many
threads had it, their user and system seconds, and their sum as a share
of one CPU over the run; then the total and the CPUs busy on average.
System time is the kernel's work for the thread: on tcp over loopback,
mostly the copies of every byte into and out of the sockets.

Why: zsm's network path on one host is driven by several threads per rank
(pumps, the proxy, the API's agent), and two-way traffic (an AllGather)
gets less out of the host than one way.  Comparing a one-way put with an
AllGather thread by thread says which threads take the CPU, and whether
the kernel's part grows per byte.

A thread that ends between two samples loses at most one interval of its
time; a spinning thread counts fully, whether it found work or not.  Exit
status: COMMAND's (2 when it could not start).
"""
import argparse
import json
import os
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def stat_fields(path):
    """(name, ppid, utime, stime) from a stat file, or None once gone."""
    try:
        with open(path) as f:
            s = f.read()
    except OSError:
        return None
    # The name is in parentheses and may hold spaces or parentheses.
    lp, rp = s.find("("), s.rfind(")")
    if lp < 0 or rp < lp:
        return None
    rest = s[rp + 2:].split()
    # rest[0] is the state; ppid is field 4, utime 14 and stime 15 of
    # proc(5), that is rest[1], rest[11] and rest[12].
    return s[lp + 1:rp], int(rest[1]), int(rest[11]), int(rest[12])


def descendants(root):
    """root and every live process below it."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        st = stat_fields("/proc/%s/stat" % d)
        if st:
            children.setdefault(st[1], []).append(int(d))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def sample(root, seen):
    """Record every thread's latest times in seen[(pid, tid)]."""
    for pid in descendants(root):
        try:
            tids = os.listdir("/proc/%d/task" % pid)
        except OSError:
            continue
        for tid in tids:
            st = stat_fields("/proc/%d/task/%s/stat" % (pid, tid))
            if st:
                seen[(pid, int(tid))] = (st[0], st[2], st[3])


def report(seen, wall):
    by = {}
    for name, ut, st in seen.values():
        n, u, s = by.get(name, (0, 0, 0))
        by[name] = (n + 1, u + ut, s + st)
    rows = sorted(by.items(), key=lambda kv: -(kv[1][1] + kv[1][2]))
    print("thread-cpu: %.2f s of wall time, %d threads in %d processes" %
          (wall, len(seen), len({p for p, _ in seen})))
    print("%-18s %7s %9s %9s %9s" % ("thread", "threads", "user s",
                                     "system s", "% of CPU"))
    total = 0.0
    out = {"wall_s": wall, "threads": {}}
    for name, (n, u, s) in rows:
        us, ss = u / TICK, s / TICK
        total += us + ss
        print("%-18s %7d %9.2f %9.2f %9.1f" %
              (name, n, us, ss, 100.0 * (us + ss) / wall if wall else 0))
        out["threads"][name] = {"count": n, "user_s": us, "system_s": ss}
    print("total: %.2f CPU s, %.2f CPUs busy on average" %
          (total, total / wall if wall else 0))
    out["cpu_s"] = total
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-i", "--interval", type=float, default=0.05)
    p.add_argument("-j", "--json", help="write the figures here too")
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd or a.interval <= 0:
        p.print_usage(sys.stderr)
        return 2
    seen = {}
    t0 = time.monotonic()
    try:
        child = subprocess.Popen(cmd)
    except OSError as e:
        print("thread-cpu: cannot run %s: %s" % (cmd[0], e), file=sys.stderr)
        return 2
    while child.poll() is None:
        sample(child.pid, seen)
        time.sleep(a.interval)
    wall = time.monotonic() - t0
    out = report(seen, wall)
    if a.json:
        out["command"] = cmd
        out["exit"] = child.returncode
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return child.returncode


if __name__ == "__main__":
    sys.exit(main())
