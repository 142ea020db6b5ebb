# SPDX-License-Identifier: MIT
"""The torch side: tensors as buffers, and a comm from a process group.
Imported only when a torch tensor or process group is handed over."""

import torch
import torch.distributed as dist

from . import _lib
from ._comm import _einval, get_unique_id

# torch dtype -> zsm datatype name; others are refused.
_DTYPES = {
    torch.float32: "float32", torch.float16: "float16",
    torch.bfloat16: "bfloat16", torch.int8: "int8", torch.uint8: "uint8",
    torch.int32: "int32", torch.int64: "int64", torch.float64: "float64",
}


def tensor_region(t, what):
    """(address, bytes, dtype name, cuda device or None, keep-alive) of a
    contiguous tensor of a supported dtype."""
    dtype = _DTYPES.get(t.dtype)
    if dtype is None:
        raise _einval("%s: dtype %s has no zsm datatype (%s)" % (
            what, t.dtype, ", ".join(str(d) for d in _DTYPES)))
    if not t.is_contiguous():
        raise _einval("%s (shape %s, strides %s) is not contiguous" %
                      (what, tuple(t.shape), t.stride()))
    if t.device.type == "cuda":
        device = t.device.index
    elif t.device.type == "cpu":
        device = None
    else:
        raise _einval("%s is on %s: zsm takes cuda or cpu tensors" %
                      (what, t.device))
    return t.data_ptr(), t.numel() * t.element_size(), dtype, device, t


def from_process_group(cls, group):
    if not dist.is_initialized():
        raise _einval("torch.distributed is not initialized "
                      "(init_process_group first)")
    rank = dist.get_rank(group)
    size = dist.get_world_size(group)
    if rank < 0:
        raise _einval("this process is not a member of the group")
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        # The library takes the context current on this thread; a runtime
        # call on the current device makes its primary context current.
        torch.cuda.synchronize(torch.cuda.current_device())
    backend = str(dist.get_backend(group))
    # A backend that moves CPU tensors (gloo, or a cpu:gloo,cuda:nccl
    # pair) broadcasts from host memory; nccl alone needs a CUDA tensor.
    on_cpu = backend != "nccl"
    device = "cpu" if on_cpu else torch.device("cuda",
                                               torch.cuda.current_device())
    buf = torch.zeros(_lib.UNIQUE_ID_BYTES, dtype=torch.uint8, device=device)
    if rank == 0:
        buf.copy_(torch.frombuffer(bytearray(get_unique_id()),
                                   dtype=torch.uint8))
    src = 0 if group is None else dist.get_global_rank(group, 0)
    dist.broadcast(buf, src=src, group=group)
    return cls.init_rank(size, bytes(buf.cpu().tolist()), rank)
