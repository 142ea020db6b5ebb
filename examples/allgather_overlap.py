# SPDX-License-Identifier: MIT
"""An AllGather beside a matmul, with PyTorch and zsm.

Each rank holds a shard of a weight matrix and needs all of them; it starts
zsm's AllGather of the shards on a stream of its own, and multiplies other
matrices on torch's current stream meanwhile.  zsm moves the bytes on copy
engines and its own threads, so the matmul keeps every SM: both together
take about as long as the longer of the two.  The script times the
AllGather alone, the matmuls alone and both at once, and checks every
element it gathered.

    torchrun --nproc-per-node 2 examples/allgather_overlap.py [--one-gpu]

--one-gpu puts every rank on GPU 0 and makes each its own host to zsm
(ZSM_HOSTID per rank), so that the bytes take zsm's network path even on a
machine with one GPU.  torch.distributed (gloo) only carries zsm's unique
id and the barriers; the data moves through zsm.  examples/README.md has
the environment the commands need.
"""
import argparse
import os
import time

import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--one-gpu", action="store_true",
               help="every rank on GPU 0, each its own host to zsm")
p.add_argument("--elems", type=int, default=32 << 20,
               help="float16 elements per rank's shard (32M: 64 MiB)")
p.add_argument("--matmuls", type=int, default=20)
a = p.parse_args()

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
local = int(os.environ.get("LOCAL_RANK", rank))
if a.one_gpu:
    # Read by zsm when the comm is made: distinct hosts, network path.
    os.environ["ZSM_HOSTID"] = "example-host%d" % rank
import zsm  # noqa: E402  (after ZSM_HOSTID, which zsm reads at init)

dev = 0 if a.one_gpu else local
torch.cuda.set_device(dev)
torch.cuda.synchronize()       # a current CUDA context: zsm's GPU mode
dist.init_process_group("gloo")
comm = zsm.Comm.from_process_group()

n = a.elems
weights = torch.empty(world * n, dtype=torch.float16, device=dev)
shard = weights[rank * n:(rank + 1) * n]       # in place: our own block
x = torch.randn(8192, 8192, dtype=torch.float16, device=dev)
w = torch.randn(8192, 8192, dtype=torch.float16, device=dev)
comm_stream = torch.cuda.Stream()


def fill():
    weights.zero_()
    shard.fill_(rank + 1)
    torch.cuda.synchronize()
    dist.barrier()


def check():
    for j in range(world):
        block = weights[j * n:(j + 1) * n]
        if not torch.all(block == j + 1):
            raise SystemExit("rank %d: rank %d's shard did not arrive" %
                             (rank, j))


def gather():
    comm.all_gather(weights, shard, stream=comm_stream)


def matmuls():
    for _ in range(a.matmuls):
        y = x @ w                               # torch's current stream
    return y


with comm, comm.register(weights):
    # Untimed first calls: cuBLAS's set-up and the first AllGather's.
    x @ w
    fill()
    gather()
    comm_stream.synchronize()
    fill()
    t0 = time.perf_counter()
    gather()
    comm_stream.synchronize()
    t_ag = time.perf_counter() - t0
    check()

    dist.barrier()
    t0 = time.perf_counter()
    matmuls()
    torch.cuda.current_stream().synchronize()
    t_mm = time.perf_counter() - t0

    fill()
    t0 = time.perf_counter()
    matmuls()                 # queued first: the SMs are busy
    gather()                  # then the AllGather, on its own stream
    comm_stream.synchronize()
    t_ag_both = time.perf_counter() - t0
    torch.cuda.current_stream().synchronize()
    t_both = time.perf_counter() - t0
    if comm.async_error():
        raise SystemExit("rank %d: %s" % (rank, comm.async_error()))
    check()
    print("rank %d of %d, every element checked: AllGather of %d MiB per "
          "rank %.1f ms alone, %.1f ms beside the matmuls (x%.2f); %d "
          "matmuls %.1f ms alone, %.1f ms with the AllGather (x%.2f)" %
          (rank, world, 2 * n >> 20, t_ag * 1e3, t_ag_both * 1e3,
           t_ag_both / t_ag, a.matmuls, t_mm * 1e3, t_both * 1e3,
           t_both / t_mm), flush=True)
dist.destroy_process_group()
