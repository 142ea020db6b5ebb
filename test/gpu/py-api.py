#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""py-api.py: the zsm Python package with PyTorch, two ranks on one GPU.

    ZSM_LIBRARY=BUILD/plugin/libnccl-net-zsm.so PYTHONPATH=python \\
    ZSM_PROVIDER=tcp ZSM_DOMAIN=lo \\
        python3 -m torch.distributed.run --standalone --nproc_per_node 2 \\
        test/gpu/py-api.py [--same-host] [--quick] [--device N]

(test/gpu/py-api.sh builds zsm and runs it both ways.)  Both ranks use
cuda:N (0).  Each rank sets ZSM_HOSTID and NCCL_HOSTID of its own, so zsm
sees two hosts and takes its network path; --same-host gives both one
ZSM_HOSTID (zsm's same-host transport, ce).

The ranks join a gloo process group, make a zsm.Comm from it (GPU mode:
checked), register two windows of GPU memory and check, with exact
values:

- all_gather_into_tensor and all_to_all_single, out of place and in place,
  for every dtype the package maps, from 1 element to 1 MiB per rank, and
  16 and 64 MiB per rank for float32, bfloat16 and int8;
- a chain on a side stream: fill, all_gather, a kernel on its output,
  all_to_all of that, with no host sync until the final check;
- put_signal into the peer's window and wait_signal on running totals
  (two rounds), and signal alone;
- errors this package raises (buffer outside a window, uneven splits,
  unsupported dtype, non-contiguous tensor), the comm sound after them.

Every operation is queued on torch's current stream behind a kernel that
holds the GPU (torch.cuda._sleep) and after the fill that makes its input,
so a call that did not wait for the stream would read stale data; the host
syncs only to read a check's result.  Prints "[rank N] PASS|FAIL ..."
lines; exits 0 when all passed, 1 otherwise, 77 without a GPU.

--cpu (for testing this script where there is no GPU) runs the same
checks on CPU tensors, the comm in host mode, without streams.
"""

import argparse
import contextlib
import os
import sys
import traceback

KiB, MiB = 1 << 10, 1 << 20
DTYPES = ["float32", "float16", "bfloat16", "int8", "uint8", "int32",
          "int64", "float64"]
BIG_DTYPES = ["float32", "bfloat16", "int8"]
SMALL_BYTES = [1, 4 * KiB, 1 * MiB]  # per rank, rounded up to 1 element
BIG_BYTES = [16 * MiB, 64 * MiB]
PUT_BYTES = 1 * MiB
ROUNDS = 3

# Values stay below these, so every dtype holds them exactly.
MODULUS = {"int8": 127, "uint8": 251, "float16": 2048, "bfloat16": 256}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--same-host", action="store_true")
    ap.add_argument("--quick", action="store_true",
                    help="sizes up to 1 MiB only")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--cpu", action="store_true",
                    help="CPU tensors, host mode (no GPU needed)")
    args = ap.parse_args()
    rank = int(os.environ.get("RANK", "0"))
    hostid = "py-api" if args.same_host else "py-api-%d" % rank
    # Before the library loads: zsm reads its host identity from these.
    os.environ["ZSM_HOSTID"] = hostid
    os.environ["NCCL_HOSTID"] = "py-api-%d" % rank
    for k, v in (("NCCL_NVLS_ENABLE", "0"),
                 ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                 ("NVSHMEM_DISABLE_NVLS", "1")):
        os.environ.setdefault(k, v)

    try:
        import torch
    except ImportError:
        print("[rank %d] SKIP: no torch" % rank)
        return 77
    if not args.cpu and not torch.cuda.is_available():
        print("[rank %d] SKIP: no CUDA device" % rank)
        return 77
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "..", "python"))
    import torch.distributed as dist
    import zsm

    if not args.cpu:
        torch.cuda.set_device(args.device)
        torch.cuda.synchronize()  # the context exists and is current
    dist.init_process_group("gloo")
    t = Tester(rank, dist.get_world_size(), args, torch, zsm)
    try:
        t.run()
    except Exception:
        t.fail("unexpected", traceback.format_exc())
    dist.destroy_process_group()
    print("[rank %d] %s: %d passed, %d failed (%s)" % (
        rank, "PASS" if not t.failed else "FAIL", t.passed, t.failed,
        "zsm same host (ce)" if args.same_host
        else "zsm different hosts (network path)"), flush=True)
    return 1 if t.failed else 0


class Tester:
    def __init__(self, rank, size, args, torch, zsm):
        self.rank, self.size, self.args = rank, size, args
        self.torch, self.zsm = torch, zsm
        self.dev = torch.device("cpu") if args.cpu else torch.device(
            "cuda", args.device)
        self.passed = self.failed = 0

    def ok(self, name):
        self.passed += 1
        print("[rank %d] PASS %s" % (self.rank, name), flush=True)

    def fail(self, name, why):
        self.failed += 1
        print("[rank %d] FAIL %s: %s" % (self.rank, name, why), flush=True)

    def hold(self):
        """Queue a kernel that keeps the stream busy for a while, so
        that work queued behind it truly waits."""
        if not self.args.cpu and hasattr(self.torch.cuda, "_sleep"):
            self.torch.cuda._sleep(20 * 1000 * 1000)

    def sync(self):
        if not self.args.cpu:
            self.torch.cuda.synchronize(self.dev)

    def pattern(self, n, src, dst, dtype, salt=0):
        torch = self.torch
        m = MODULUS.get(dtype, (1 << 20) + 7)
        i = torch.arange(n, dtype=torch.int64, device=self.dev)
        v = (i * 7 + 1009 * src + 101 * dst + 31 * salt + 3) % m
        return v.to(getattr(torch, dtype))

    def view(self, win_bytes, nbytes, dtype):
        return win_bytes[:nbytes].view(getattr(self.torch, dtype))

    def check(self, name, got, want):
        """Compare on the current stream; the .item() is the host sync."""
        torch = self.torch
        if got.shape != want.shape:
            return self.fail(name, "shape %s, expected %s" %
                             (tuple(got.shape), tuple(want.shape)))
        bad = (got != want).nonzero()
        nbad = bad.numel()  # syncs
        if nbad == 0:
            return self.ok(name)
        k = int(bad[0].item())
        self.fail(name, "%d elements differ; first at %d: %s, expected %s"
                  % (bad.shape[0], k, got[k].item(), want[k].item()))

    def collectives(self, dtype, nbytes):
        torch, comm, r, n_r = self.torch, self.comm, self.rank, self.size
        esize = torch.empty(0, dtype=getattr(torch, dtype)).element_size()
        n = max(1, nbytes // esize)
        tag = "%s x %d" % (dtype, n)
        out = self.view(self.recv, n_r * n * esize, dtype)
        inp = self.view(self.send, n * esize, dtype)
        want = torch.cat([self.pattern(n, q, 0, dtype) for q in range(n_r)])

        self.hold()
        out.fill_(1)
        inp.copy_(self.pattern(n, r, 0, dtype))
        comm.all_gather_into_tensor(out, inp)
        self.check("all_gather %s out of place" % tag, out, want)

        self.hold()
        out.fill_(1)
        mine = out[r * n:(r + 1) * n]
        mine.copy_(self.pattern(n, r, 0, dtype))
        comm.all_gather_into_tensor(out, mine)
        self.check("all_gather %s in place" % tag, out, want)

        sendall = self.view(self.send, n_r * n * esize, dtype)
        blocks = torch.cat([self.pattern(n, r, j, dtype) for j in range(n_r)])
        want = torch.cat([self.pattern(n, j, r, dtype) for j in range(n_r)])
        self.hold()
        out.fill_(1)
        sendall.copy_(blocks)
        comm.all_to_all_single(out, sendall)
        self.check("all_to_all %s out of place" % tag, out, want)

        self.hold()
        out.copy_(blocks)
        comm.all_to_all_single(out, out, [n] * n_r, [n] * n_r)
        self.check("all_to_all %s in place" % tag, out, want)

    def chain(self):
        """fill -> all_gather -> kernel -> all_to_all on a side stream."""
        torch, comm, r, n_r = self.torch, self.comm, self.rank, self.size
        n = 256 * KiB  # int32 per rank
        side = None if self.args.cpu else torch.cuda.Stream(self.dev)
        with contextlib.nullcontext() if side is None else \
                torch.cuda.stream(side):
            inp = self.view(self.send, n * 4, "int32")
            gathered = self.view(self.recv, n_r * n * 4, "int32")
            self.hold()
            inp.copy_(self.pattern(n, r, 0, "int32"))
            comm.all_gather_into_tensor(gathered, inp)
            # The AlltoAll's input: every block j = gathered block j + r.
            a2a_in = self.view(self.send, n_r * n * 4, "int32")
            torch.add(gathered, r, out=a2a_in)
            a2a_out = gathered  # in the window, reused: the add read it
            comm.all_to_all_single(a2a_out, a2a_in)
            want = torch.cat([self.pattern(n, r, 0, "int32") + j
                              for j in range(n_r)])
            self.check("chain on a side stream", a2a_out, want)
        if side is not None:
            torch.cuda.current_stream(self.dev).wait_stream(side)

    def signals(self):
        torch, comm, r, n_r = self.torch, self.comm, self.rank, self.size
        to, frm = (r + 1) % n_r, (r - 1) % n_r
        n = PUT_BYTES // 4
        for rnd in range(2):
            self.hold()
            for k in range(ROUNDS):
                slot = rnd * ROUNDS + k
                src = self.view(self.send[slot * PUT_BYTES:], PUT_BYTES,
                                "float32")
                src.copy_(self.pattern(n, r, to, "float32", salt=slot))
                comm.put_signal(src, to, self.inbox_win, slot * PUT_BYTES,
                                ctx=1)
            comm.wait_signal([(frm, ROUNDS, 1)])
            got = self.view(self.inbox[rnd * ROUNDS * PUT_BYTES:],
                            ROUNDS * PUT_BYTES, "float32")
            want = torch.cat([self.pattern(n, frm, r, "float32",
                                           salt=rnd * ROUNDS + k)
                              for k in range(ROUNDS)])
            self.check("put_signal round %d from rank %d" % (rnd, frm),
                       got, want)
        # signal alone, twice to every peer on ctx 2.
        peers = [p for p in range(n_r) if p != r]
        for p in peers:
            comm.signal(p, ctx=2)
            comm.signal(p, ctx=2)
        comm.wait_signal([(p, 2, 2) for p in peers])
        self.sync()
        self.ok("signal x2 to every peer, waited")

    def errors(self):
        torch, zsm, comm = self.torch, self.zsm, self.comm

        def refused(name, fn, says):
            try:
                fn()
            except zsm.Error as e:
                if says in str(e):
                    return self.ok("refused: %s" % name)
                return self.fail(name, "%s does not say %r" % (e, says))
            self.fail(name, "not refused")

        loose = torch.zeros(64, device=self.dev)
        out = self.view(self.recv, 64 * 4 * self.size, "float32")
        refused("input outside a window",
                lambda: comm.all_gather_into_tensor(out, loose),
                "lies in no window")
        n = 4 * self.size
        a = self.view(self.send, n * 4, "float32")
        b = self.view(self.recv, n * 4, "float32")
        refused("uneven splits", lambda: comm.all_to_all_single(
            b, a, [n - 1] + [1] * (self.size - 1), None), "equal splits")
        c = self.send[:64].view(torch.int16)
        refused("int16", lambda: comm.register(c), "no zsm datatype")
        s = self.view(self.recv, 256, "float32").view(8, 8)[:, :4]
        refused("non-contiguous", lambda: comm.all_gather_into_tensor(
            b, s), "not contiguous")
        err = comm.async_error()
        if err is None:
            self.ok("async_error None")
        else:
            self.fail("async_error", str(err))

    def run(self):
        torch, zsm = self.torch, self.zsm
        comm = zsm.Comm.from_process_group()
        self.comm = comm
        if comm.device != self.dev.index or comm.rank != self.rank:
            return self.fail("from_process_group", "device %s rank %d" %
                             (comm.device, comm.rank))
        self.ok("from_process_group: rank %d of %d, %s, %s" % (
            comm.rank, comm.size, "host mode" if comm.device is None
            else "GPU mode on cuda:%d" % comm.device, zsm.library_path()))
        sizes = SMALL_BYTES + ([] if self.args.quick else BIG_BYTES)
        top = max(sizes)
        u8 = torch.uint8
        # The same windows in the same order on every rank, so that views
        # at equal offsets are the same window offsets everywhere.
        self.recv = torch.empty(self.size * top, dtype=u8, device=self.dev)
        self.send = torch.empty(max(self.size * top,
                                    2 * ROUNDS * PUT_BYTES),
                                dtype=u8, device=self.dev)
        self.inbox = torch.zeros(2 * ROUNDS * PUT_BYTES, dtype=u8,
                                 device=self.dev)
        with comm, comm.register(self.recv), comm.register(self.send), \
                comm.register(self.inbox) as self.inbox_win:
            for dtype in DTYPES:
                for nbytes in sizes:
                    if nbytes in SMALL_BYTES or dtype in BIG_DTYPES:
                        self.collectives(dtype, nbytes)
            self.chain()
            self.signals()
            self.errors()
            # Every rank's puts are in before anyone deregisters.
            peers = [p for p in range(self.size) if p != self.rank]
            for p in peers:
                comm.signal(p, ctx=3)
            comm.wait_signal([(p, 1, 3) for p in peers])
            self.sync()


if __name__ == "__main__":
    sys.exit(main())
