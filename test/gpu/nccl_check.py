#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""nccl_check.py: exact-result and bandwidth check of NCCL through PyTorch.

    python3 nccl_check.py --label zsm --out DIR [--quick] [--timeout S]

Starts one process per GPU (torch.multiprocessing, spawn), joins them in a
torch.distributed group on the nccl backend, and

1. checks every collective on integer-valued data whose exact result is
   known: all_reduce (sum), all_gather (all_gather_into_tensor),
   reduce_scatter (reduce_scatter_tensor, sum), broadcast (every root),
   all_to_all (all_to_all_single) and send/recv (rank 0 -> 1 and back), for
   float32, bfloat16 and int8, from 1 byte to 256 MiB per rank buffer;
2. measures bus bandwidth in float32 (nccl-tests formulas; median of the
   timed iterations after warm-ups, the slowest rank's time per iteration).

Which transport NCCL uses is decided by the environment the caller sets
(NCCL_NET_PLUGIN, NCCL_NET, NCCL_P2P_DISABLE, ...); this script only adds
the async-error-handling and no-multicast variables if they are missing.

Writes DIR/nccl-<label>.json and prints one line per result.  Exit status 0
only when every check ran on every rank and matched exactly.  The whole run
is bounded by --timeout: workers still alive then are killed.

--cpu-gloo runs the same logic on the CPU with the gloo backend (for testing
this script on a machine without GPUs; gloo has no reduce_scatter, so it is
emulated there, and bfloat16 may be unsupported).
"""

import argparse
import faulthandler
import json
import os
import queue as pyqueue
import signal
import socket
import statistics
import sys
import time
import traceback
from datetime import timedelta

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30

OPS = ["all_reduce", "all_gather", "reduce_scatter", "broadcast",
       "all_to_all", "sendrecv"]
DTYPES = ["float32", "bfloat16", "int8"]
CHECK_SIZES = [1, 1 * KiB, 64 * KiB, 1 * MiB, 16 * MiB, 256 * MiB]
CHECK_SIZES_QUICK = [1, 1 * KiB, 64 * KiB, 1 * MiB]
BW_SIZES = [1 * MiB, 16 * MiB, 256 * MiB, 1 * GiB]
BW_SIZES_QUICK = [1 * MiB, 16 * MiB]

# Values are ((i % PERIOD) + 1) * (rank + 1).  With 2 ranks the largest sum
# is 3 * PERIOD: 93 for bf16 / int8 (exact in bf16's 8-bit significand, and
# <= 127 for int8), 3063 for float32.  For more ranks the period shrinks so
# the sum world*(world+1)/2 * PERIOD still fits.
PERIOD_BASE = {"float32": 1021, "bfloat16": 31, "int8": 31}
EXACT_LIMIT = {"float32": 1 << 24, "bfloat16": 256, "int8": 127}

ENV_KEYS_PREFIX = ("NCCL_", "ZSM_", "TORCH_NCCL_", "FI_", "NVSHMEM_",
                   "TORCH_SYMM_MEM_", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH")


def busbw_factor(op, n):
    if op == "all_reduce":
        return 2.0 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    return 1.0  # broadcast, sendrecv


def fmt_size(b):
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if b >= scale and b % scale == 0:
            return "%d%s" % (b // scale, unit)
    return "%dB" % b


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ---------------------------------------------------------------- worker side

class Worker:
    def __init__(self, rank, world, args, q, t_start):
        import torch
        import torch.distributed as dist
        self.torch = torch
        self.dist = dist
        self.rank = rank
        self.world = world
        self.args = args
        self.q = q
        self.t_start = t_start  # parent's wall clock start (time.time())
        self.budget = args.budget
        self.gloo = args.cpu_gloo
        if self.gloo:
            self.dev = torch.device("cpu")
        else:
            gpu = 0 if args.one_gpu else rank
            torch.cuda.set_device(gpu)
            self.dev = torch.device("cuda", gpu)
        self.dtypes = {"float32": torch.float32, "bfloat16": torch.bfloat16,
                       "int8": torch.int8}
        self.esize = {"float32": 4, "bfloat16": 2, "int8": 1}

    def send(self, kind, **kw):
        kw["type"] = kind
        kw["rank"] = self.rank
        self.q.put(kw)

    def sync(self):
        if not self.gloo:
            self.torch.cuda.synchronize(self.dev)

    def elapsed(self):
        return time.time() - self.t_start

    def agree(self, est_s):
        """Rank 0 decides whether est_s more seconds fit in the budget; every
        rank follows, so the ranks never disagree on which operation runs."""
        torch = self.torch
        go = 1
        if self.rank == 0 and self.elapsed() + est_s > self.budget:
            go = 0
        t = torch.tensor([go], dtype=torch.int32, device=self.dev)
        self.dist.broadcast(t, src=0)
        self.sync()
        return bool(t.item())

    # data ------------------------------------------------------------------
    def period(self, dtype):
        s = self.world * (self.world + 1) // 2
        p = PERIOD_BASE[dtype]
        while p > 1 and s * p > EXACT_LIMIT[dtype]:
            p -= 1
        return p

    def pattern(self, n, owner, dtype, offset=0, mult=None):
        """((offset+i) % P + 1) * mult, mult defaulting to owner+1."""
        torch = self.torch
        idx = torch.arange(offset, offset + n, device=self.dev,
                           dtype=torch.int64)
        idx.remainder_(self.period(dtype)).add_(1)
        idx.mul_(owner + 1 if mult is None else mult)
        return idx.to(self.dtypes[dtype])

    def filled(self, n, dtype):
        # never torch.empty: a reused allocation could hold a correct answer
        return self.torch.full((n,), -1, dtype=self.dtypes[dtype],
                               device=self.dev)

    # collectives, wrapped so --cpu-gloo can stand in -------------------------
    def reduce_scatter(self, out, inp):
        dist = self.dist
        if self.gloo:
            tmp = inp.clone()
            dist.all_reduce(tmp)
            c = out.numel()
            out.copy_(tmp[self.rank * c:(self.rank + 1) * c])
        else:
            dist.reduce_scatter_tensor(out, inp, op=dist.ReduceOp.SUM)

    def all_gather(self, out, inp):
        if self.gloo:
            parts = [self.torch.empty_like(inp) for _ in range(self.world)]
            self.dist.all_gather(parts, inp)
            self.torch.cat(parts, out=out)
        else:
            self.dist.all_gather_into_tensor(out, inp)

    # one exact check ---------------------------------------------------------
    def run_check(self, op, dtype, size):
        """Returns a list of (label, ok, detail) for this rank."""
        dist = self.dist
        w, r = self.world, self.rank
        n = max(1, size // self.esize[dtype])
        if op in ("reduce_scatter", "all_to_all"):
            n = (n + w - 1) // w * w
        ssum = w * (w + 1) // 2
        results = []

        def compare(label, got, want):
            self.sync()
            if self.torch.equal(got, want):
                results.append((label, True, ""))
                return
            bad = (got != want).nonzero()
            nbad = bad.numel()
            i = int(bad[0].item()) if nbad else -1
            detail = "%d of %d elements differ; first at %d: got %s want %s" % (
                nbad, got.numel(), i,
                got[i].item() if i >= 0 else "?",
                want[i].item() if i >= 0 else "?")
            results.append((label, False, detail))

        if op == "all_reduce":
            t = self.pattern(n, r, dtype)
            dist.all_reduce(t, op=dist.ReduceOp.SUM)
            compare(op, t, self.pattern(n, 0, dtype, mult=ssum))
        elif op == "all_gather":
            inp = self.pattern(n, r, dtype)
            out = self.filled(n * w, dtype)
            self.all_gather(out, inp)
            want = self.torch.cat([self.pattern(n, j, dtype) for j in range(w)])
            compare(op, out, want)
        elif op == "reduce_scatter":
            c = n // w
            inp = self.pattern(n, r, dtype)
            out = self.filled(c, dtype)
            self.reduce_scatter(out, inp)
            compare(op, out, self.pattern(c, 0, dtype, offset=r * c, mult=ssum))
        elif op == "broadcast":
            for root in range(w):
                t = self.pattern(n, root, dtype) if r == root else self.filled(n, dtype)
                dist.broadcast(t, src=root)
                compare("%s(root=%d)" % (op, root), t, self.pattern(n, root, dtype))
        elif op == "all_to_all":
            c = n // w
            inp = self.pattern(n, r, dtype)
            out = self.filled(n, dtype)
            dist.all_to_all_single(out, inp)
            want = self.torch.cat([self.pattern(c, j, dtype, offset=r * c)
                                   for j in range(w)])
            compare(op, out, want)
        elif op == "sendrecv":
            # rank 0 -> 1, then 1 -> 0 (and so on around the ring for w > 2)
            for src in range(w):
                dst = (src + 1) % w
                label = "%s(%d->%d)" % (op, src, dst)
                if r == src:
                    dist.send(self.pattern(n, src, dtype), dst)
                    self.sync()
                    results.append((label, True, "sent"))
                elif r == dst:
                    t = self.filled(n, dtype)
                    dist.recv(t, src)
                    compare(label, t, self.pattern(n, src, dtype))
        else:
            raise ValueError(op)
        return n, results

    # one bandwidth measurement ----------------------------------------------
    def make_bw_op(self, op, size):
        torch, dist = self.torch, self.dist
        w, r = self.world, self.rank
        n = size // 4
        n = (n + w - 1) // w * w
        dev = self.dev
        f32 = torch.float32
        if op == "all_reduce":
            t = torch.zeros(n, dtype=f32, device=dev)
            return lambda: dist.all_reduce(t)
        if op == "all_gather":   # size = gathered output, as nccl-tests
            out = torch.zeros(n, dtype=f32, device=dev)
            inp = torch.zeros(n // w, dtype=f32, device=dev)
            return lambda: self.all_gather(out, inp)
        if op == "reduce_scatter":  # size = input, as nccl-tests
            inp = torch.zeros(n, dtype=f32, device=dev)
            out = torch.zeros(n // w, dtype=f32, device=dev)
            return lambda: self.reduce_scatter(out, inp)
        if op == "broadcast":
            t = torch.zeros(n, dtype=f32, device=dev)
            return lambda: dist.broadcast(t, src=0)
        if op == "all_to_all":
            inp = torch.zeros(n, dtype=f32, device=dev)
            out = torch.zeros(n, dtype=f32, device=dev)
            return lambda: dist.all_to_all_single(out, inp)
        if op == "sendrecv":
            # every rank sends size bytes to the next and receives from the
            # previous at the same time (nccl-tests sendrecv)
            sbuf = torch.zeros(n, dtype=f32, device=dev)
            rbuf = torch.zeros(n, dtype=f32, device=dev)
            nxt, prv = (r + 1) % w, (r - 1) % w

            def sr():
                ops = [dist.P2POp(dist.isend, sbuf, nxt),
                       dist.P2POp(dist.irecv, rbuf, prv)]
                for req in dist.batch_isend_irecv(ops):
                    req.wait()
            return sr
        raise ValueError(op)

    def measure(self, op, size, warmup, iters):
        torch, dist = self.torch, self.dist
        fn = self.make_bw_op(op, size)
        tiny = torch.zeros(1, dtype=torch.float32, device=self.dev)
        for _ in range(warmup):
            fn()
        self.sync()
        times = []
        for _ in range(iters):
            dist.all_reduce(tiny)   # line the ranks up
            self.sync()
            t0 = time.perf_counter()
            fn()
            self.sync()
            times.append(time.perf_counter() - t0)
        tt = torch.tensor(times, dtype=torch.float64, device=self.dev)
        dist.all_reduce(tt, op=dist.ReduceOp.MAX)   # slowest rank per iteration
        self.sync()
        return tt.tolist()

    # main ---------------------------------------------------------------------
    def run(self):
        torch, dist = self.torch, self.dist
        a = self.args
        t0 = time.perf_counter()
        kw = dict(backend="gloo" if self.gloo else "nccl",
                  init_method="env://", rank=self.rank, world_size=self.world,
                  timeout=timedelta(seconds=a.op_timeout))
        if not self.gloo:
            kw["device_id"] = self.dev   # eager communicator creation
        try:
            dist.init_process_group(**kw)
        except TypeError:
            kw.pop("device_id", None)
            dist.init_process_group(**kw)
        info = {"torch": torch.__version__}
        if not self.gloo:
            try:
                info["nccl"] = ".".join(str(x) for x in torch.cuda.nccl.version())
            except Exception as e:  # noqa: BLE001
                info["nccl"] = "unknown (%s)" % e
            info["gpu"] = torch.cuda.get_device_name(self.dev)
        # first collective: makes NCCL connect before anything is measured
        t = torch.ones(1, device=self.dev)
        dist.all_reduce(t)
        self.sync()
        info["init_s"] = round(time.perf_counter() - t0, 3)
        self.send("info", **info)

        # 1. exact checks, smallest size first.  Before each size rank 0
        # checks the time budget; a size that is skipped fails the run
        # (incomplete) but still leaves time to report what did run.
        check_sizes = a.sizes if a.sizes is not None else (
            CHECK_SIZES_QUICK if a.quick else CHECK_SIZES)
        for size in check_sizes:
            if not self.agree(0.0):
                self.send("skip", phase="check", size=size,
                          why="time budget (%.0f s) used up" % self.budget)
                continue
            for op in a.ops:
                for dtype in a.dtypes:
                    tc = time.perf_counter()
                    n, res = self.run_check(op, dtype, size)
                    ms = (time.perf_counter() - tc) * 1e3
                    for label, ok, detail in res:
                        self.send("check", op=label, dtype=dtype, size=size,
                                  count=n, ok=ok, detail=detail, ms=round(ms, 3))
            if not self.gloo:
                torch.cuda.empty_cache()

        # 2. bandwidth, float32; size by size so that, if time runs short,
        # every operation still has its smaller sizes measured
        bw_sizes = a.bw_sizes if a.bw_sizes is not None else (
            BW_SIZES_QUICK if a.quick else BW_SIZES)
        prev = {}  # op -> (size, median seconds)
        for size in bw_sizes:
            if a.bw_max and size > a.bw_max:
                continue
            for op in a.ops:
                est = 0.0
                if op in prev:
                    est = (prev[op][1] * size / prev[op][0]
                           * (a.warmup + a.iters) * 1.2 + 1.0)
                if not self.agree(est):
                    self.send("skip", phase="bw", op=op, size=size,
                              why="time budget (%.0f s) would be exceeded" % self.budget)
                    continue
                times = self.measure(op, size, a.warmup, a.iters)
                med = statistics.median(times)
                algbw = size / med / 1e9
                self.send("bw", op=op, size=size, dtype="float32",
                          iters=a.iters, warmup=a.warmup,
                          times_us=[round(x * 1e6, 2) for x in times],
                          median_us=round(med * 1e6, 2),
                          algbw_gbps=round(algbw, 4),
                          busbw_gbps=round(algbw * busbw_factor(op, self.world), 4))
                prev[op] = (size, med)
                if not self.gloo:
                    torch.cuda.empty_cache()

        self.send("finished")
        dist.destroy_process_group()
        self.send("done")


def worker_main(rank, world, args, q, t_start):
    # die with the parent (PR_SET_PDEATHSIG), so no worker outlives a killed run
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001
        pass
    # SIGUSR1 prints where every Python thread is (nccl-gdr.sh sends it to
    # a run about to time out): the C stacks need gdb, which may be absent.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    if args.one_gpu:
        # Every rank on GPU 0, each a host of its own to NCCL (which
        # refuses two ranks on one GPU of one host); zsm follows
        # NCCL_HOSTID unless ZSM_HOSTID says one host (its ce path).
        os.environ["NCCL_HOSTID"] = "nccl-check-host-%d" % rank
    w = None
    try:
        w = Worker(rank, world, args, q, t_start)
        w.run()
    except BaseException as e:  # noqa: BLE001
        q.put({"type": "error", "rank": rank,
               "msg": "%s: %s" % (type(e).__name__, e),
               "trace": traceback.format_exc()})
        try:
            q.close()
            q.join_thread()
        except Exception:  # noqa: BLE001
            pass
        os._exit(1)
    try:
        q.close()
        q.join_thread()
    except Exception:  # noqa: BLE001
        pass


# ---------------------------------------------------------------- parent side

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--label", required=True, help="name of this run (zsm, socket, ...)")
    ap.add_argument("--out", required=True, help="folder for nccl-<label>.json")
    ap.add_argument("--quick", action="store_true", help="small sizes only (dry run)")
    ap.add_argument("--world", type=int, default=2, help="number of processes / GPUs")
    ap.add_argument("--timeout", type=float, default=500.0,
                    help="seconds for the whole run; workers are killed after it")
    ap.add_argument("--op-timeout", type=float, default=120.0,
                    help="init_process_group timeout in seconds")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--bw-max", type=int, default=0,
                    help="largest bandwidth size in bytes (0: no limit)")
    ap.add_argument("--dtypes", default=",".join(DTYPES),
                    help="comma list of dtypes to check (default: %(default)s)")
    ap.add_argument("--ops", default=",".join(OPS),
                    help="comma list of operations (default: %(default)s)")
    ap.add_argument("--sizes", default=None,
                    help="comma list of check sizes in bytes (default: the built-in list); empty: none")
    ap.add_argument("--bw-sizes", default=None,
                    help="comma list of bandwidth sizes in bytes; empty: none")
    ap.add_argument("--cpu-gloo", action="store_true",
                    help="testing only: gloo on the CPU instead of nccl on GPUs")
    ap.add_argument("--one-gpu", action="store_true",
                    help="every rank on GPU 0, each its own NCCL_HOSTID "
                         "(../shared/gpu-machine.md, 'One GPU, two hosts')")
    args = ap.parse_args()
    args.dtypes = [d for d in args.dtypes.split(",") if d]
    args.ops = [o for o in args.ops.split(",") if o]
    for o in args.ops:
        if o not in OPS:
            ap.error("unknown operation %s" % o)
    try:
        if args.sizes is not None:
            args.sizes = [int(x) for x in args.sizes.split(",") if x]
        if args.bw_sizes is not None:
            args.bw_sizes = [int(x) for x in args.bw_sizes.split(",") if x]
    except ValueError:
        ap.error("sizes are integers (bytes)")
    for d in args.dtypes:
        if d not in DTYPES:
            ap.error("unknown dtype %s" % d)

    t_start = time.time()
    deadline = t_start + args.timeout
    # workers stop starting new work at this point; the rest is the margin
    # for teardown and for the operation in flight
    args.budget = max(10.0, args.timeout * 0.8 - 10.0)

    for k, v in (("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"),
                 ("NCCL_ASYNC_ERROR_HANDLING", "1"),
                 ("NCCL_NVLS_ENABLE", "0"),
                 ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                 ("NVSHMEM_DISABLE_NVLS", "1")):
        os.environ.setdefault(k, v)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(free_port())

    os.makedirs(args.out, exist_ok=True)
    out_path = os.path.join(args.out, "nccl-%s.json" % args.label)
    tag = "[%s]" % args.label

    result = {
        "label": args.label, "quick": args.quick, "world_size": args.world,
        "dtypes": args.dtypes,
        "backend": "gloo" if args.cpu_gloo else "nccl",
        "env": {k: v for k, v in sorted(os.environ.items())
                if k.startswith(ENV_KEYS_PREFIX)},
        "info": {}, "checks": [], "bandwidth": [], "skipped": [],
        "errors": [], "timed_out": False, "exitcodes": [], "pass": False,
    }

    def write_json():
        result["elapsed_s"] = round(time.time() - t_start, 2)
        tmp = out_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(result, f, indent=1)
        os.replace(tmp, out_path)

    def say(line):
        print("%s %s" % (tag, line), flush=True)

    try:
        import torch
        import torch.multiprocessing as mp
    except Exception as e:  # noqa: BLE001
        result["errors"].append("cannot import torch: %s" % e)
        write_json()
        say("FAIL cannot import torch: %s" % e)
        return 1

    if not args.cpu_gloo:
        # (the parent never touches CUDA otherwise; device_count does not
        # create a context)
        ngpu = torch.cuda.device_count()
        if ngpu < (1 if args.one_gpu else args.world):
            msg = "need %d GPUs, found %d" % (args.world, ngpu)
            result["errors"].append(msg)
            write_json()
            say("FAIL " + msg)
            return 1

    say("start: world=%d quick=%s timeout=%.0fs port=%s" % (
        args.world, args.quick, args.timeout, os.environ["MASTER_PORT"]))

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = []
    for r in range(args.world):
        p = ctx.Process(target=worker_main, args=(r, args.world, args, q, t_start),
                        name="nccl_check-%d" % r, daemon=False)
        p.start()
        procs.append(p)

    pending_checks = {}   # (op, dtype, size) -> {rank: (ok, detail, count)}
    done_ranks = set()
    finished_ranks = set()
    finished_at = None
    first_dead_at = None

    def handle(m):
        nonlocal finished_at
        kind, r = m["type"], m["rank"]
        if kind == "info":
            result["info"]["rank%d" % r] = {k: v for k, v in m.items()
                                            if k not in ("type", "rank")}
            if r == 0:
                say("rank 0: torch %s, nccl %s, %s, init+first allreduce %.2fs" % (
                    m.get("torch"), m.get("nccl", "-"), m.get("gpu", "cpu"),
                    m.get("init_s", 0)))
        elif kind == "check":
            key = (m["op"], m["dtype"], m["size"])
            pending_checks.setdefault(key, {})[r] = (m["ok"], m["detail"], m["count"])
            if not m["ok"]:
                say("rank %d MISMATCH %s %s %s: %s" % (
                    r, m["op"], m["dtype"], fmt_size(m["size"]), m["detail"]))
        elif kind == "bw" and r == 0:   # every rank has the same (max) times
            e = {k: v for k, v in m.items() if k not in ("type", "rank")}
            result["bandwidth"].append(e)
            say("BW %-14s %7s busbw %9.3f GB/s  algbw %9.3f GB/s  median %12.1f us" % (
                m["op"], fmt_size(m["size"]), m["busbw_gbps"], m["algbw_gbps"],
                m["median_us"]))
        elif kind == "skip":
            if r == 0:  # rank 0 decided; the others only followed
                e = {k: v for k, v in m.items() if k not in ("type", "rank")}
                result["skipped"].append(e)
                say("SKIP %s %s %s: %s" % (m["phase"], m.get("op", "(all)"),
                                           fmt_size(m["size"]), m["why"]))
        elif kind == "error":
            result["errors"].append("rank %d: %s" % (r, m["msg"]))
            say("rank %d ERROR %s" % (r, m["msg"]))
            sys.stdout.write(m.get("trace", ""))
            sys.stdout.flush()
        elif kind == "finished":
            finished_ranks.add(r)
            if len(finished_ranks) == args.world:
                finished_at = time.time()
        elif kind == "done":
            done_ranks.add(r)

    def kill_all(why):
        say("killing workers: %s" % why)
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(5)
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join(5)

    killed = False
    while True:
        try:
            handle(q.get(timeout=0.5))
        except pyqueue.Empty:
            pass
        now = time.time()
        if all(not p.is_alive() for p in procs):
            break
        if first_dead_at is None and any(
                p.exitcode not in (None, 0) for p in procs):
            first_dead_at = now
        if first_dead_at is not None and now - first_dead_at > 20:
            kill_all("a worker failed; the others did not exit within 20 s")
            killed = True
            break
        if finished_at is not None and now - finished_at > 30:
            result["errors"].append("teardown (destroy_process_group) hung > 30 s")
            kill_all("teardown hangs")
            killed = True
            break
        if now > deadline:
            result["timed_out"] = True
            result["errors"].append("timed out after %.0f s" % args.timeout)
            kill_all("timeout")
            killed = True
            break

    # drain what the workers left in the queue; a killed worker may have
    # left half a message, so the drain itself is bounded by an alarm
    class DrainTimeout(Exception):
        pass

    def on_alarm(signum, frame):
        raise DrainTimeout()

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(10)
    try:
        while True:
            try:
                handle(q.get(timeout=0.2))
            except (pyqueue.Empty, EOFError, OSError):
                break
    except DrainTimeout:
        say("queue drain timed out%s" % (" (workers were killed)" if killed else ""))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    for p in procs:
        p.join(2)
    result["exitcodes"] = [p.exitcode for p in procs]
    for r, c in enumerate(result["exitcodes"]):
        if c != 0:
            result["errors"].append("worker %d exit code %s" % (r, c))

    # fold per-rank check reports into one row each
    nfail = 0
    for (op, dtype, size), by_rank in sorted(
            pending_checks.items(), key=lambda kv: (kv[0][2], kv[0][0], kv[0][1])):
        ok = all(v[0] for v in by_rank.values())
        details = {str(rr): v[1] for rr, v in sorted(by_rank.items()) if not v[0]}
        count = next(iter(by_rank.values()))[2]
        result["checks"].append({"op": op, "dtype": dtype, "size": size,
                                 "count": count, "ok": ok,
                                 "ranks": sorted(by_rank), "mismatch": details})
        if not ok:
            nfail += 1
        say("CHECK %-22s %-8s %7s (%d elems) %s" % (
            op, dtype, fmt_size(size), count, "ok" if ok else "FAIL"))

    # every check must have run on every rank it involves
    check_sizes = args.sizes if args.sizes is not None else (
        CHECK_SIZES_QUICK if args.quick else CHECK_SIZES)
    # broadcast reports one check per root, sendrecv one per pair
    per_op = {op: (args.world if op in ("broadcast", "sendrecv") else 1)
              for op in args.ops}
    expected = len(check_sizes) * len(args.dtypes) * sum(per_op.values())
    complete = len(result["checks"]) == expected and all(
        (len(c["ranks"]) == args.world or c["op"].startswith("sendrecv"))
        for c in result["checks"])
    if not complete:
        result["errors"].append("incomplete: %d of %d checks reported" % (
            len(result["checks"]), expected))
    if done_ranks != set(range(args.world)) and not result["errors"]:
        result["errors"].append("workers did not finish (done from %s)" % sorted(done_ranks))

    result["pass"] = (nfail == 0 and complete and not result["errors"]
                      and all(c == 0 for c in result["exitcodes"]))
    write_json()
    say("%s: %d checks, %d failed, %d bandwidth rows, %d skipped, %.1f s, exit codes %s%s" % (
        "PASS" if result["pass"] else "FAIL", len(result["checks"]), nfail,
        len(result["bandwidth"]), len(result["skipped"]), time.time() - t_start,
        result["exitcodes"],
        "" if not result["errors"] else "; errors: " + " | ".join(result["errors"])))
    say("wrote %s" % out_path)
    return 0 if result["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
