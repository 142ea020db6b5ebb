#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The package's torch layer on CPU tensors (host-memory mode), no GPU.

    ZSM_LIBRARY=build/plugin/libnccl-net-zsm.so PYTHONPATH=python \\
        python3 test/python/test_torch.py [--nranks N]

Starts N processes in a gloo process group; each makes its zsm.Comm with
Comm.from_process_group (the id broadcast through the group), registers CPU
tensors and checks, exactly: all_gather_into_tensor and all_to_all_single
out of place and in place for several dtypes, put_signal and wait_signal,
and the arguments the torch layer refuses (dtype, non-contiguous, uneven
splits, outside a window).  Ranks are different hosts to zsm (network
path).  Exits 77 when this python has no torch with gloo.  test/gpu/py-api.py
checks the same layer on GPU tensors and streams.
"""

import argparse
import os
import socket
import subprocess
import sys
import time
import traceback

DTYPES = ["float32", "bfloat16", "int8", "int64"]
COUNTS = [1, 1000, 65536]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pattern(torch, n, src, dst, dtype):
    m = {"int8": 127, "bfloat16": 256}.get(dtype, 1 << 20)
    v = (torch.arange(n, dtype=torch.int64) * 7 + 1009 * src + 101 * dst) % m
    return v.to(getattr(torch, dtype))


def rank_main():
    import torch
    import torch.distributed as dist
    import zsm
    rank = int(os.environ["RANK"])
    os.environ["ZSM_HOSTID"] = "py-torch-%d" % rank
    dist.init_process_group("gloo")
    n_r = dist.get_world_size()
    results = []

    def check(name, ok, why=""):
        results.append(ok)
        print("%s rank %d %s%s" % ("PASS" if ok else "FAIL", rank, name,
                                   "" if ok else ": " + why), flush=True)

    def same(name, got, want):
        bad = (got != want).nonzero()
        check(name, bad.numel() == 0, "%d elements differ, first at %s" %
              (bad.shape[0], bad[0].tolist() if bad.numel() else None))

    def refused(name, fn, says):
        try:
            fn()
        except zsm.Error as e:
            return check("refused: " + name, says in str(e),
                         "%s does not say %r" % (e, says))
        check("refused: " + name, False, "not refused")

    comm = zsm.Comm.from_process_group()
    check("from_process_group", (comm.rank, comm.size, comm.device) ==
          (rank, n_r, None), str((comm.rank, comm.size, comm.device)))
    top = max(COUNTS) * n_r * 8
    recv = torch.zeros(top, dtype=torch.uint8)
    send = torch.zeros(top, dtype=torch.uint8)
    inbox = torch.zeros(64 * 1024, dtype=torch.uint8)
    with comm, comm.register(recv), comm.register(send), \
            comm.register(inbox) as inbox_win:
        for dtype in DTYPES:
            for n in COUNTS:
                tag = "%s x %d" % (dtype, n)
                esize = torch.empty(0, dtype=getattr(torch, dtype)
                                    ).element_size()
                out = recv[:n_r * n * esize].view(getattr(torch, dtype))
                inp = send[:n * esize].view(getattr(torch, dtype))
                want = torch.cat([pattern(torch, n, q, 0, dtype)
                                  for q in range(n_r)])
                out.fill_(1)
                inp.copy_(pattern(torch, n, rank, 0, dtype))
                comm.all_gather_into_tensor(out, inp)
                same("all_gather %s out of place" % tag, out, want)
                out.fill_(1)
                out[rank * n:(rank + 1) * n].copy_(inp)
                comm.all_gather_into_tensor(out, out[rank * n:(rank + 1) * n])
                same("all_gather %s in place" % tag, out, want)
                mine = torch.cat([pattern(torch, n, rank, j, dtype)
                                  for j in range(n_r)])
                want = torch.cat([pattern(torch, n, j, rank, dtype)
                                  for j in range(n_r)])
                sendall = send[:n_r * n * esize].view(getattr(torch, dtype))
                sendall.copy_(mine)
                out.fill_(1)
                comm.all_to_all_single(out, sendall)
                same("all_to_all %s out of place" % tag, out, want)
                out.copy_(mine)
                comm.all_to_all_single(out.view(n_r, n), out.view(n_r, n),
                                       [1] * n_r, [1] * n_r)
                same("all_to_all %s in place (2-D, splits given)" % tag,
                     out, want)
        to, frm = (rank + 1) % n_r, (rank - 1) % n_r
        src = send[:4096].view(torch.int32)
        src.copy_(pattern(torch, 1024, rank, to, "int32"))
        comm.put_signal(src, to, inbox_win, 8192, ctx=1)
        comm.wait_signal([(frm, 1, 1)])
        same("put_signal from rank %d" % frm,
             inbox[8192:8192 + 4096].view(torch.int32),
             pattern(torch, 1024, frm, rank, "int32"))
        check("window offset", inbox_win.offset(inbox[8192:]) == 8192)
        out = recv[:4 * n_r * 4].view(torch.float32)
        refused("a tensor outside a window", lambda:
                comm.all_gather_into_tensor(out, torch.zeros(4)),
                "lies in no window")
        refused("complex64", lambda: comm.register(
            torch.zeros(4, dtype=torch.complex64)), "no zsm datatype")
        refused("non-contiguous", lambda: comm.all_gather_into_tensor(
            out, send[:64].view(torch.float32).view(4, 4)[:, :1]),
            "not contiguous")
        refused("uneven splits", lambda: comm.all_to_all_single(
            out, send[:4 * n_r * 4].view(torch.float32),
            None, [4 * n_r - 1] + [1] * (n_r - 1)), "equal splits")
        check("async_error None", comm.async_error() is None,
              str(comm.async_error()))
        # Every put is in before anyone deregisters.
        for p in range(n_r):
            if p != rank:
                comm.signal(p, ctx=3)
        comm.wait_signal([(p, 1, 3) for p in range(n_r) if p != rank])
    dist.destroy_process_group()
    return 0 if all(results) else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nranks", type=int, default=2)
    args = ap.parse_args()
    if "RANK" in os.environ:
        try:
            return rank_main()
        except Exception:
            traceback.print_exc()
            return 1
    try:
        import torch.distributed as dist
        if not dist.is_available() or not dist.is_gloo_available():
            raise ImportError("torch.distributed without gloo")
    except ImportError as e:
        print("SKIP: %s: %s" % (sys.executable, e))
        return 77
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(
        free_port()), WORLD_SIZE=str(args.nranks))
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(here, "..", "..", "python")] +
        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__)],
                              env=dict(env, RANK=str(r)))
             for r in range(args.nranks)]
    # Below meson's limit (120 s), so that this says which rank hung; a
    # healthy run takes seconds.
    deadline = time.monotonic() + 100
    rcs = []
    for r, p in enumerate(procs):
        try:
            rcs.append(p.wait(timeout=max(1, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            print("FAIL: rank %d still running after 100 s; killing it" % r)
            p.kill()
            rcs.append(p.wait())
    ok = all(rc == 0 for rc in rcs)
    print("%s: %d ranks, exit codes %s" % ("PASS" if ok else "FAIL",
                                           args.nranks, rcs))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
