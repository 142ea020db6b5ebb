# SPDX-License-Identifier: MIT
"""Does zsm's AllGather slow down when matmuls fill every SM of its GPU?

usage: python3 bench/coll_overlap.py [--gpu G] [--ranks N] [--size 64M]
           [--rounds 5] [--iters 10] [--load-ranks all|0] [--margin 1.5]
           [--host]

Starts N rank processes on this host (two by default), each its own host
to zsm (ZSM_HOSTID per rank, so the bytes take zsm's network path), all on
GPU G.  Each rank registers a GPU buffer and runs in-place AllGathers of
SIZE per rank on a stream of its own (the zsm package, python/zsm), timing
each call from the call to the stream's completion seen by the host.
Rounds alternate:

  idle    ITERS timed AllGathers, nothing else on the GPU;
  loaded  the same, while a queue of 8192^3 fp16 matmuls on another stream
          of the SAME process (enough of them to outlast the AllGathers by
          MARGIN, sized from a calibration) keeps every SM busy; the queue
          must have started before the first AllGather and still be
          running after the last, or the round fails;
  matmul  the same queue of matmuls with no AllGather, for the matmuls'
          own rate: loaded vs this shows whether the AllGathers took SMs.

Ranks keep in step through the comm itself (8-byte AllGathers on a
host-memory window).  A round's figure is the slowest rank's median call;
the verdict is median(loaded) / median(idle) <= 1.1.  --load-ranks 0 runs
the matmuls in rank 0's process only (the other ranks still AllGather):
with every rank on one GPU, each process's matmuls also take time slices
from the others' copies, which --load-ranks 0 leaves out.

--host runs the same rounds in host-memory mode without torch and without
load (a check of the harness on a machine without a GPU); no verdict.
Every byte of one AllGather is checked before the rounds.  Exit 0 on PASS,
1 on FAIL, 2 when something did not run.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
MATMUL_N = 8192
TARGET = 1.1
# Deadline of any one wait of the harness (a rank's start, the id file, a
# rank's end), seconds.
DEADLINE = 300


def parse_size(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    s = s.strip().upper().rstrip("B").rstrip("I")
    if s and s[-1] in units:
        return int(s[:-1]) * units[s[-1]]
    return int(s)


def args_parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--gpu", type=int, default=0)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--size", default="64M")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--load-ranks", choices=["all", "0"], default="all")
    p.add_argument("--margin", type=float, default=1.5)
    p.add_argument("--host", action="store_true")
    p.add_argument("--json", help="write the results here too")
    # internal: one rank
    p.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    p.add_argument("--work", help=argparse.SUPPRESS)
    return p


# ------------------------------------------------------------------ a rank

class Rank:
    def __init__(self, a):
        import zsm
        self.zsm = zsm
        self.a = a
        self.rank, self.n = a.rank, a.ranks
        self.size = parse_size(a.size)
        self.torch = None
        if not a.host:
            import torch
            self.torch = torch
            torch.cuda.set_device(a.gpu)
            torch.cuda.synchronize()  # the context is current: GPU mode
        self.comm = zsm.Comm.init_rank(self.n, self.unique_id(), self.rank)
        if not a.host and self.comm.device != a.gpu:
            raise SystemExit("rank %d: the comm is not in GPU mode on %d "
                             "(device %s)" % (self.rank, a.gpu,
                                              self.comm.device))
        # Control window: one slot of 8 bytes per rank, host memory.
        self.ctl = bytearray(8 * self.n)
        self.ctl_win = self.comm.register(self.ctl)
        if self.torch:
            t = self.torch
            self.recv = t.empty(self.n * self.size, dtype=t.uint8,
                                device=a.gpu)
            self.s_comm = t.cuda.Stream()
            self.s_load = t.cuda.Stream()
        else:
            self.recv = bytearray(self.n * self.size)
            self.s_comm = None
        self.win = self.comm.register(self.recv)
        view = self.recv if self.torch else memoryview(self.recv)
        self.mine = view[self.rank * self.size:(self.rank + 1) * self.size]

    def unique_id(self):
        path = os.path.join(self.a.work, "uid")
        if self.rank == 0:
            uid = self.zsm.get_unique_id()
            with open(path + ".tmp", "wb") as f:
                f.write(uid)
            os.rename(path + ".tmp", path)
            return uid
        end = time.monotonic() + DEADLINE
        while not os.path.exists(path):
            if time.monotonic() > end:
                raise SystemExit("rank %d: no unique id from rank 0 in "
                                 "%d s" % (self.rank, DEADLINE))
            time.sleep(0.01)
        with open(path, "rb") as f:
            return f.read()

    def sync(self, what):
        if self.s_comm is not None:
            self.s_comm.synchronize()
        err = self.comm.async_error()
        if err:
            raise SystemExit("rank %d: the comm failed during %s: %s" %
                             (self.rank, what, err))

    def barrier(self):
        mine = memoryview(self.ctl)[8 * self.rank:8 * self.rank + 8]
        self.comm.all_gather(self.ctl, mine, stream=self.s_comm)
        self.sync("a barrier")

    def all_gather(self):
        self.comm.all_gather(self.recv, self.mine, stream=self.s_comm)

    def timed(self):
        t0 = time.perf_counter()
        self.all_gather()
        self.sync("a timed AllGather")
        return time.perf_counter() - t0

    # -- the check: block j holds rank j's pattern
    def pattern(self, j):
        if self.torch:
            t = self.torch
            i = t.arange(self.size, device=self.a.gpu, dtype=t.int64)
            return ((i * 131 + j * 29 + 7) % 251).to(t.uint8)
        return bytes((i * 131 + j * 29 + 7) % 251 for i in range(256)) * \
            (self.size // 256) + bytes(
                (i * 131 + j * 29 + 7) % 251 for i in range(self.size % 256))

    def check(self):
        s = self.size
        for j in range(self.n):
            if self.torch:
                self.recv[j * s:(j + 1) * s] = (
                    self.pattern(j) if j == self.rank else 0xCD)
            else:
                self.recv[j * s:(j + 1) * s] = (
                    self.pattern(j) if j == self.rank else b"\xcd" * s)
        if self.torch:
            self.torch.cuda.synchronize()
        self.barrier()
        self.all_gather()
        self.sync("the checked AllGather")
        for j in range(self.n):
            block = self.recv[j * s:(j + 1) * s]
            ok = (self.torch.equal(block, self.pattern(j)) if self.torch
                  else bytes(block) == self.pattern(j))
            if not ok:
                raise SystemExit("rank %d: the block from rank %d is wrong "
                                 "after an AllGather of %d bytes" %
                                 (self.rank, j, s))

    # -- load
    def loads(self):
        return self.torch is not None and (self.a.load_ranks == "all" or
                                           self.rank == 0)

    def matmuls(self, k):
        """Queue k matmuls on the load stream; its start and end events."""
        t = self.torch
        e0 = t.cuda.Event(enable_timing=True)
        e1 = t.cuda.Event(enable_timing=True)
        with t.cuda.stream(self.s_load):
            e0.record()
            for _ in range(k):
                self.mm_c = self.mm_a @ self.mm_b
            e1.record()
        return e0, e1

    def run_idle(self):
        self.barrier()
        return [self.timed() for _ in range(self.a.iters)]

    def run_matmul(self, k):
        """k matmuls alone (every loading rank at once): ms per matmul."""
        self.barrier()
        if not self.loads():
            self.barrier()
            return None
        e0, e1 = self.matmuls(k)
        e1.synchronize()
        self.barrier()
        return e0.elapsed_time(e1) / k

    def run_loaded(self, k):
        self.barrier()
        if self.loads():
            e0, e1 = self.matmuls(k)
            end = time.monotonic() + DEADLINE
            while not e0.query():
                if time.monotonic() > end:
                    raise SystemExit("rank %d: the load did not start" %
                                     self.rank)
            # Let the first matmul reach the SMs before the barrier.
            time.sleep(0.002)
        self.barrier()
        times = [self.timed() for _ in range(self.a.iters)]
        outlasted = None
        per_mm = None
        if self.loads():
            outlasted = not e1.query()
            e1.synchronize()
            per_mm = e0.elapsed_time(e1) / k
        self.barrier()
        return times, outlasted, per_mm

    def main(self):
        out = {"rank": self.rank, "rounds": []}
        self.check()
        k = 0
        if self.torch:
            t = self.torch
            self.mm_a = t.randn(MATMUL_N, MATMUL_N, device=self.a.gpu,
                                dtype=t.float16)
            self.mm_b = t.randn(MATMUL_N, MATMUL_N, device=self.a.gpu,
                                dtype=t.float16)
            self.mm_c = self.mm_a @ self.mm_b
            t.cuda.synchronize()
            # Calibration: how long the AllGathers of a round take, and a
            # matmul while every loading rank runs them.
            self.run_idle()
            span0 = time.perf_counter()
            self.run_idle()
            span = time.perf_counter() - span0
            per_mm = self.run_matmul(8)
            per_mm = per_mm or 1.0
            k = max(8, int(self.a.margin * span * 1000.0 / per_mm) + 2)
            out["calibration"] = {"span_ms": span * 1000.0,
                                  "matmul_ms": per_mm, "matmuls": k}
        for _ in range(self.a.rounds):
            r = {"idle": statistics.median(self.run_idle())}
            if self.torch:
                times, outlasted, loaded_mm = self.run_loaded(k)
                r["loaded"] = statistics.median(times)
                r["outlasted"] = outlasted
                r["matmul_loaded_ms"] = loaded_mm
                r["matmul_idle_ms"] = self.run_matmul(k)
            out["rounds"].append(r)
        self.barrier()
        self.comm.deregister(self.win)
        self.comm.deregister(self.ctl_win)
        self.comm.destroy()
        with open(os.path.join(self.a.work, "rank%d.json" % self.rank),
                  "w") as f:
            json.dump(out, f)


# ------------------------------------------------------------------ driver

def launch(a):
    """Start the ranks, wait for all (any failure ends the others), and
    return their results."""
    work = tempfile.mkdtemp(prefix="zsm-coll-overlap.")
    procs = []
    env = dict(os.environ)
    pypath = os.path.join(TOP, "python")
    env["PYTHONPATH"] = pypath + (os.pathsep + env["PYTHONPATH"]
                                  if env.get("PYTHONPATH") else "")
    for r in range(a.ranks):
        e = dict(env, ZSM_HOSTID="coll-overlap-host%d" % r)
        cmd = [sys.executable, os.path.abspath(__file__), "--rank", str(r),
               "--work", work] + sys.argv[1:]
        procs.append(subprocess.Popen(cmd, env=e))
    end = time.monotonic() + DEADLINE + 60 * a.rounds
    bad = None
    while any(p.poll() is None for p in procs):
        for r, p in enumerate(procs):
            if p.returncode not in (None, 0) and bad is None:
                bad = "rank %d exited with status %d" % (r, p.returncode)
        if bad or time.monotonic() > end:
            bad = bad or "the ranks did not finish in time"
            for p in procs:
                if p.poll() is None:
                    p.kill()
            break
        time.sleep(0.05)
    for p in procs:
        p.wait()
    for r, p in enumerate(procs):
        if p.returncode != 0 and bad is None:
            bad = "rank %d exited with status %d" % (r, p.returncode)
    if bad:
        print("coll-overlap: %s" % bad, file=sys.stderr)
        return None
    res = []
    for r in range(a.ranks):
        with open(os.path.join(work, "rank%d.json" % r)) as f:
            res.append(json.load(f))
    for name in os.listdir(work):
        os.remove(os.path.join(work, name))
    os.rmdir(work)
    return res


def report(a, res):
    size = parse_size(a.size)
    nr = len(res[0]["rounds"])
    # A round's figure: its slowest rank's median call.
    idle = [max(r["rounds"][i]["idle"] for r in res) for i in range(nr)]
    mode = "host memory, no load" if a.host else "GPU %d" % a.gpu
    print("coll-overlap: in-place AllGather of %s per rank, %d ranks as %d "
          "hosts, %s, %d rounds of %d calls" %
          (a.size, a.ranks, a.ranks, mode, nr, a.iters))
    gb = lambda t: (a.ranks - 1) * size / t / 1e9
    mi = statistics.median(idle)
    print("idle   ms: " + " ".join("%.2f" % (x * 1e3) for x in idle) +
          "  median %.2f (%.2f GB/s received per rank)" % (mi * 1e3, gb(mi)))
    out = {"size": size, "ranks": a.ranks, "idle_ms": [x * 1e3 for x in idle]}
    if a.host:
        print("coll-overlap: host mode ran (no load, no verdict)")
        return out, 0
    loaded = [max(r["rounds"][i]["loaded"] for r in res) for i in range(nr)]
    ml = statistics.median(loaded)
    loaders = [r for r in res if r["rounds"][0]["outlasted"] is not None]
    short = [(r["rank"], i) for r in loaders for i in range(nr)
             if not r["rounds"][i]["outlasted"]]
    cal = res[0]["calibration"]
    print("loaded ms: " + " ".join("%.2f" % (x * 1e3) for x in loaded) +
          "  median %.2f (%.2f GB/s)" % (ml * 1e3, gb(ml)))
    print("load: %d matmuls of %d^3 fp16 per round on another stream of "
          "rank%s %s's process%s (calibration: the AllGathers %.1f ms, a "
          "matmul %.3f ms)" %
          (cal["matmuls"], MATMUL_N, "s" if len(loaders) > 1 else "",
           ",".join(str(r["rank"]) for r in loaders),
           "es" if len(loaders) > 1 else "", cal["span_ms"],
           cal["matmul_ms"]))
    flop = 2.0 * MATMUL_N ** 3
    for r in loaders:
        mm_i = statistics.median(x["matmul_idle_ms"] for x in r["rounds"])
        mm_l = statistics.median(x["matmul_loaded_ms"] for x in r["rounds"])
        print("rank %d matmul: %.3f ms each alone (%.0f TFLOP/s), %.3f ms "
              "with the AllGathers (%.0f TFLOP/s): with / alone %.3f" %
              (r["rank"], mm_i, flop / mm_i / 1e9, mm_l, flop / mm_l / 1e9,
               mm_l / mm_i))
        out["matmul_rank%d_ms" % r["rank"]] = {"alone": mm_i, "with": mm_l}
    ratio = ml / mi
    out.update(loaded_ms=[x * 1e3 for x in loaded], ratio=ratio,
               load_ended_early=short)
    ok = ratio <= TARGET and not short
    if short:
        # Not a loaded round throughout: the verdict cannot stand.
        print("the load ended before the AllGathers in %d round(s) "
              "(rank,round: %s): raise --margin" %
              (len(short), " ".join("%d,%d" % s for s in short)))
    print("loaded / idle: %.3f (target <= %.1f): %s" %
          (ratio, TARGET, "PASS" if ok else "FAIL"))
    return out, 0 if ok else 1


def main():
    a = args_parser().parse_args()
    if a.rank is not None:
        Rank(a).main()
        return 0
    if a.ranks < 2:
        print("coll-overlap: --ranks must be 2 or more", file=sys.stderr)
        return 2
    res = launch(a)
    if res is None:
        return 2
    out, rc = report(a, res)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return rc


if __name__ == "__main__":
    sys.exit(main())
