# SPDX-License-Identifier: MIT
"""Communicators and windows over the C calls, for host buffers and (when
torch is imported) torch tensors."""

import ctypes
import errno
import sys

from . import _lib
from ._lib import Error

# zsm_datatype_t: name -> (value, bytes per element).
DTYPES = {
    "int8": (0, 1), "uint8": (1, 1), "int32": (2, 4), "uint32": (3, 4),
    "int64": (4, 8), "uint64": (5, 8), "float16": (6, 2), "float32": (7, 4),
    "float64": (8, 8), "bfloat16": (9, 2), "float8e4m3": (10, 1),
    "float8e5m2": (11, 1),
}
# memoryview formats (struct module letters) of host buffers -> dtype name,
# by (letter, itemsize) since 'l' and 'L' differ between platforms.
_FORMATS = {
    ("b", 1): "int8", ("B", 1): "uint8", ("c", 1): "uint8",
    ("i", 4): "int32", ("l", 4): "int32", ("q", 8): "int64",
    ("l", 8): "int64", ("I", 4): "uint32", ("L", 4): "uint32",
    ("Q", 8): "uint64", ("L", 8): "uint64", ("e", 2): "float16",
    ("f", 4): "float32", ("d", 8): "float64",
}


def _einval(text):
    return _lib.ArgumentError(errno.EINVAL, text)


class Buffer:
    """Raw memory the package cannot inspect itself: an address, a size in
    bytes, a dtype name, and the CUDA device it is on (None: host memory).
    Keeps owner alive while in use."""

    def __init__(self, address, nbytes, dtype="uint8", device=None,
                 owner=None):
        if dtype not in DTYPES:
            raise _einval("unknown dtype %r (one of %s)" %
                          (dtype, ", ".join(DTYPES)))
        self.address = _lib.c_value(address, ctypes.c_void_p,
                                    "Buffer: address")
        self.nbytes = _lib.c_value(nbytes, ctypes.c_size_t, "Buffer: nbytes")
        self.device = (None if device is None else
                       _lib.c_value(device, ctypes.c_int, "Buffer: device"))
        self.dtype, self.owner = dtype, owner
        _whole_elements(self.nbytes, dtype, "Buffer")


def _whole_elements(nbytes, dtype, what):
    """Refuse a size that is not a whole number of dtype's elements: the
    count the library takes would leave the rest out silently."""
    size = DTYPES[dtype][1]
    if nbytes % size:
        raise _einval("%s: %d bytes is not a whole number of %s elements "
                      "(%d bytes each)" % (what, nbytes, dtype, size))


class _Region:
    """What a call needs of a buffer: address, bytes, dtype, device, and a
    reference that keeps the memory (and its pin, for host buffers) alive."""

    def __init__(self, address, nbytes, dtype, device, keep, what):
        _whole_elements(nbytes, dtype, what)
        self.address, self.nbytes, self.dtype = address, nbytes, dtype
        self.device, self.keep, self.what = device, keep, what

    @property
    def count(self):
        return self.nbytes // DTYPES[self.dtype][1]

    @property
    def code(self):
        return DTYPES[self.dtype][0]

    def __str__(self):
        return "%s (%s, %d bytes at 0x%x%s)" % (
            self.what, self.dtype, self.nbytes, self.address,
            "" if self.device is None else ", cuda:%d" % self.device)


def _region(obj, what):
    if isinstance(obj, Buffer):
        return _Region(obj.address, obj.nbytes, obj.dtype, obj.device, obj,
                       what)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        from . import _torch
        return _Region(*_torch.tensor_region(obj, what), what)
    try:
        view = memoryview(obj)
    except TypeError:
        raise _einval("%s: a %s is neither a buffer (bytearray, ctypes "
                      "array, memoryview, array.array), a torch tensor nor "
                      "a zsm.Buffer" % (what, type(obj).__name__)) from None
    if view.readonly:
        raise _einval("%s is read-only (zsm needs writable memory: a "
                      "bytearray, not bytes)" % what)
    if not view.c_contiguous:
        raise _einval("%s is not contiguous" % what)
    fmt = view.format.lstrip("@=<")
    dtype = _FORMATS.get((fmt, view.itemsize))
    if dtype is None or view.format[:1] in (">", "!"):
        raise _einval("%s: memoryview format %r has no zsm datatype" %
                      (what, view.format))
    # The ctypes view pins the buffer (a bytearray cannot be resized under
    # it) for as long as the region is held.
    pin = (ctypes.c_char * view.nbytes).from_buffer(view)
    return _Region(ctypes.addressof(pin), view.nbytes, dtype, None, pin, what)


def _cuda_device_current():
    """The ordinal of the device of the CUDA context current on this thread,
    or None: the library decides host or GPU mode by the same test."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    ctx = ctypes.c_void_p()
    if cuda.cuCtxGetCurrent(ctypes.byref(ctx)) != 0 or not ctx.value:
        return None
    dev = ctypes.c_int()
    if cuda.cuCtxGetDevice(ctypes.byref(dev)) != 0:
        return None
    return dev.value


def get_unique_id():
    """In the process that will be rank 0: a fresh id (128 bytes) for
    Comm.init_rank on every rank."""
    uid = _lib.UniqueId()
    _lib.call("zsm_get_unique_id", ctypes.byref(uid))
    return ctypes.string_at(ctypes.addressof(uid), _lib.UNIQUE_ID_BYTES)


def version():
    """The library's version, 100 * major + minor."""
    v = ctypes.c_int()
    _lib.call("zsm_get_version", ctypes.byref(v))
    return v.value


class Window:
    """A registered buffer that peers put into; made by Comm.register."""

    def __init__(self, comm, handle, region):
        self.comm, self._handle, self._region = comm, handle, region

    @property
    def address(self):
        return self._region.address

    @property
    def nbytes(self):
        return self._region.nbytes

    def offset(self, buf):
        """The byte offset of buf (which must lie inside this window): the
        peer offset for put_signal when every rank lays out its window
        alike."""
        r = _region(buf, "buffer")
        if not self.holds(r):
            raise _einval("%s is not inside this window" % r)
        return r.address - self.address

    def holds(self, r):
        return (self._handle is not None and self.address <= r.address and
                r.address + r.nbytes <= self.address + self.nbytes)

    def deregister(self):
        """Collective, in the same order on every rank."""
        self.comm.deregister(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._handle is not None and self.comm._handle is not None:
            self.deregister()


class Comm:
    """A zsm communicator.  Make it with init_rank, init_env or (torch)
    from_process_group; end it with destroy() or a with block.

    Made where a CUDA context is current on the calling thread (device is
    then its ordinal), the comm is in GPU mode: calls are ordered on a
    stream (by default torch's current stream of that device) and return at
    once.  Otherwise it is in host mode: host buffers only, and every call
    is complete when it returns."""

    def __init__(self, handle, device):
        self._handle = handle
        self.device = device
        self._windows = []
        n, r = ctypes.c_int(), ctypes.c_int()
        _lib.call("zsm_comm_count", handle, ctypes.byref(n))
        _lib.call("zsm_comm_user_rank", handle, ctypes.byref(r))
        self.size, self.rank = n.value, r.value

    @classmethod
    def init_rank(cls, nranks, unique_id, rank):
        """Collective: join nranks processes; unique_id is rank 0's
        get_unique_id() (bytes), rank this process's rank."""
        uid = bytes(unique_id)
        if len(uid) != _lib.UNIQUE_ID_BYTES:
            raise _einval("unique id of %d bytes, not %d" %
                          (len(uid), _lib.UNIQUE_ID_BYTES))
        c_uid = _lib.UniqueId.from_buffer_copy(uid)
        device = _cuda_device_current()
        handle = ctypes.c_void_p()
        _lib.call("zsm_comm_init_rank", ctypes.byref(handle), nranks, c_uid,
                  rank)
        return cls(handle, device)

    @classmethod
    def init_env(cls):
        """Collective: join the ranks a launcher started (torchrun, Open MPI,
        Slurm, PMI or ZSM_BOOT_ADDR; docs/api.md)."""
        device = _cuda_device_current()
        handle = ctypes.c_void_p()
        _lib.call("zsm_comm_init_env", ctypes.byref(handle))
        return cls(handle, device)

    @classmethod
    def from_process_group(cls, group=None):
        """Collective over a torch.distributed group (None: the default
        one): rank 0 of the group makes the id, the group broadcasts it, and
        each member joins with its group rank and the group's size.  For GPU
        mode call it with the comm's device current
        (torch.cuda.set_device(i) after torch.cuda.init or any CUDA op)."""
        from . import _torch
        return _torch.from_process_group(cls, group)

    def _live(self):
        if self._handle is None:
            raise Error(errno.EBADF, "this comm was destroyed")
        return self._handle

    def _stream(self, stream):
        if stream is not None:
            return getattr(stream, "cuda_stream", stream)
        if self.device is None:
            return None
        torch = sys.modules.get("torch")
        if torch is None:
            return None  # GPU mode without torch: pass stream= yourself
        return torch.cuda.current_stream(self.device).cuda_stream

    def _in_window(self, r):
        """r, checked to lie in a window of this comm and on its device."""
        if r.device is not None and r.device != self.device:
            raise _einval("%s is on cuda:%d; this comm's device is %s" % (
                r, r.device, "none (host mode)" if self.device is None
                else "cuda:%d" % self.device))
        if not any(w.holds(r) for w in self._windows):
            raise _einval("%s lies in no window registered on this comm" % r)
        return r

    def register(self, buf):
        """Collective, in the same order on every rank: register buf (a
        tensor of the comm's device or host memory) as a window; returns a
        Window (also a context manager that deregisters)."""
        r = _region(buf, "window")
        handle = ctypes.c_void_p()
        _lib.call("zsm_comm_window_register", self._live(), r.address,
                  r.nbytes, ctypes.byref(handle), 0)
        win = Window(self, handle, r)
        self._windows.append(win)
        return win

    def deregister(self, win):
        """Collective, in the same order on every rank."""
        if win not in self._windows:
            raise _einval("that window is not registered on this comm")
        _lib.call("zsm_comm_window_deregister", self._live(), win._handle)
        self._windows.remove(win)
        win._handle = None

    def all_gather(self, output, input, stream=None):
        """Every rank's input lands at rank * len(input) of every rank's
        output (len(output) = size * len(input)); in place when input is
        that slice of output.  output must lie at the same offset of the
        same window on every rank, input in a window."""
        o = self._in_window(_region(output, "output"))
        i = self._in_window(_region(input, "input"))
        if o.dtype != i.dtype:
            raise _einval("%s and %s differ in dtype" % (o, i))
        if o.count != i.count * self.size:
            raise _einval("%s must hold %d x %s (one per rank)" %
                          (o, self.size, i))
        _lib.call("zsm_all_gather", i.address, o.address, i.count, i.code,
                  self._live(), self._stream(stream))

    def all_to_all(self, output, input, stream=None):
        """Block j of input (len(input) / size elements) lands as block
        rank of rank j's output; in place when output is input.  output
        must lie at the same offset of the same window on every rank,
        input in a window."""
        o = self._in_window(_region(output, "output"))
        i = self._in_window(_region(input, "input"))
        if o.dtype != i.dtype or o.count != i.count:
            raise _einval("%s and %s differ in dtype or size" % (o, i))
        if i.count % self.size:
            raise _einval("%s does not split into %d equal blocks" %
                          (i, self.size))
        _lib.call("zsm_all_to_all", i.address, o.address,
                  i.count // self.size, i.code, self._live(),
                  self._stream(stream))

    def all_gather_into_tensor(self, output_tensor, input_tensor):
        """torch.distributed.all_gather_into_tensor's call (no async_op):
        all_gather on the current stream."""
        self.all_gather(output_tensor, input_tensor)

    def all_to_all_single(self, output, input, output_split_sizes=None,
                          input_split_sizes=None):
        """torch.distributed.all_to_all_single's call for equal splits:
        all_to_all on the current stream.  Split sizes other than None or
        size equal rows are refused."""
        for name, splits, t in (("output_split_sizes", output_split_sizes,
                                 output),
                                ("input_split_sizes", input_split_sizes,
                                 input)):
            if splits is None:
                continue
            rows = t.shape[0]
            even = [rows // self.size] * self.size
            if list(splits) != even or rows % self.size:
                raise _einval("%s %s: zsm's AlltoAll takes equal splits "
                              "only (%s or None)" %
                              (name, list(splits), even))
        self.all_to_all(output, input)

    def put_signal(self, buf, peer, window, offset, ctx=0, stream=None):
        """Put buf (inside a window of this comm) at offset bytes into
        peer's copy of window, then add 1 to peer's signal for (this rank,
        ctx).  The stream goes on once buf may be reused."""
        r = self._in_window(_region(buf, "buffer"))
        if not isinstance(window, Window) or window not in self._windows:
            raise _einval("window: not a window registered on this comm")
        _lib.call("zsm_put_signal", r.address, r.count, r.code, peer,
                  window._handle, offset, 0, ctx, 0, self._live(),
                  self._stream(stream))

    def signal(self, peer, ctx=0, stream=None):
        """Add 1 to peer's signal for (this rank, ctx), after every earlier
        put of this rank."""
        _lib.call("zsm_signal", peer, 0, ctx, 0, self._live(),
                  self._stream(stream))

    def wait_signal(self, waits, stream=None):
        """waits: (peer, op_cnt) or (peer, op_cnt, ctx) tuples.  The stream
        (host mode: this call) waits until op_cnt more signals came from
        each peer on ctx than earlier waits on them asked for."""
        waits = list(waits)
        descs = (_lib.WaitSignalDesc * max(len(waits), 1))()
        for k, (d, w) in enumerate(zip(descs, waits)):
            if len(w) not in (2, 3):
                raise _einval("wait %r: not (peer, op_cnt[, ctx])" % (w,))
            _lib.fill(d, "wait_signal: waits[%d]" % k, peer=w[0],
                      op_cnt=w[1], sig_idx=0, ctx=w[2] if len(w) == 3 else 0)
        _lib.call("zsm_wait_signal", len(waits), descs, self._live(),
                  self._stream(stream))

    def async_error(self):
        """None while the comm is sound; else the Error that failed it (a
        dead peer, a failed transfer, a wait past ZSM_WAIT_TIMEOUT_MS)."""
        err = ctypes.c_int()
        _lib.call("zsm_comm_get_async_error", self._live(), ctypes.byref(err))
        if err.value == 0:
            return None
        return Error(-err.value, _lib.strerror(err.value))

    def destroy(self):
        """Not collective: wait for this rank's work in flight, then close.
        Windows are released with the comm."""
        if self._handle is None:
            return
        handle, self._handle = self._handle, None
        for w in self._windows:
            w._handle = None
        self._windows = []
        _lib.call("zsm_comm_destroy", handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()
