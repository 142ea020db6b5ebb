# SPDX-License-Identifier: MIT
"""Keep every SM of one GPU busy: back-to-back large matmuls for SECONDS.

usage: python3 bench/sm_load.py GPU SECONDS

Prints one line when the load is running (so a caller can start its
measurement) and one when it stops, with the matmuls done.
"""
import sys
import time

import torch


def main():
    gpu, seconds = int(sys.argv[1]), float(sys.argv[2])
    torch.cuda.set_device(gpu)
    # 8192^3 half-precision matmuls: thousands of CTAs each, every SM busy.
    a = torch.randn(8192, 8192, device=gpu, dtype=torch.float16)
    b = torch.randn(8192, 8192, device=gpu, dtype=torch.float16)
    c = a @ b
    torch.cuda.synchronize()
    print(f"sm_load: gpu {gpu} busy for {seconds:.0f} s", flush=True)
    end = time.time() + seconds
    n = 0
    while time.time() < end:
        for _ in range(8):
            c = a @ b
        torch.cuda.synchronize()
        n += 8
    print(f"sm_load: gpu {gpu} done, {n} matmuls", flush=True)


if __name__ == "__main__":
    main()
