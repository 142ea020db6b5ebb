# SPDX-License-Identifier: MIT
"""Finding libnccl-net-zsm.so and declaring the calls of include/zsm/zsm.h."""

import ctypes
import ctypes.util
import errno as _errno
import operator
import os
import threading

LIBRARY_NAME = "libnccl-net-zsm.so"
UNIQUE_ID_BYTES = 128  # ZSM_UNIQUE_ID_BYTES
MAX_CTX = 4            # ZSM_MAX_CTX
API_VERSION = 100      # ZSM_API_VERSION of the header these declarations follow


class Error(RuntimeError):
    """A zsm call failed: errno is the positive errno value, text says what.

    Raised for every negative return of the library (text from
    zsm_strerror) and for arguments this package refuses before calling it
    (errno EINVAL)."""

    def __init__(self, errno, text):
        super().__init__(errno, text)
        self.errno = errno
        self.text = text

    def __str__(self):
        name = _errno.errorcode.get(self.errno, "?")
        return "zsm: %s (%s, errno %d)" % (self.text, name, self.errno)


class LibraryNotFound(Error):
    """No libnccl-net-zsm.so could be loaded; text lists every place tried."""


class ArgumentError(Error, ValueError):
    """An argument this package refuses before calling the library
    (errno EINVAL): also a ValueError."""


class ArgumentOverflow(ArgumentError, OverflowError):
    """An integer argument outside the range of the C type it is passed
    as, which ctypes would cut to its low bits: also an OverflowError."""


# What the C side calls the types checked (c_size_t is c_ulong here).
_C_NAMES = {ctypes.c_int: "int", ctypes.c_uint: "unsigned int",
            ctypes.c_size_t: "size_t", ctypes.c_void_p: "pointer"}


def _bounds(ctype):
    """(lowest, highest) value of an integer ctypes type (c_void_p: an
    address, unsigned)."""
    bits = 8 * ctypes.sizeof(ctype)
    if ctype is ctypes.c_void_p or ctype(-1).value > 0:
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def c_value(value, ctype, name):
    """value, checked to be an integer that ctype holds as it is: the one
    check every integer handed to the library passes (call, fill, and
    zsm.Buffer).  ArgumentError for a non-integer, ArgumentOverflow for
    one out of range; both name the argument."""
    if isinstance(value, ctypes._SimpleCData) or value is None:
        return value  # a ctypes value or NULL: passed as it is
    try:
        v = operator.index(value)
    except TypeError:
        raise ArgumentError(_errno.EINVAL, "%s: %r is not an integer" %
                            (name, value)) from None
    low, high = _bounds(ctype)
    if not low <= v <= high:
        raise ArgumentOverflow(_errno.EINVAL, "%s: %d is outside the "
                               "range of C %s, [%d, %d]" %
                               (name, v, _C_NAMES.get(ctype, ctype.__name__),
                                low, high))
    return v


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


class WaitSignalDesc(ctypes.Structure):
    _fields_ = [("op_cnt", ctypes.c_int), ("peer", ctypes.c_int),
                ("sig_idx", ctypes.c_int), ("ctx", ctypes.c_int)]


def fill(struct, what, **fields):
    """Set fields of a ctypes structure, each checked (c_value) against
    its field's type and named what.field."""
    types = dict(struct._fields_)
    for name, value in fields.items():
        setattr(struct, name, c_value(value, types[name],
                                      "%s.%s" % (what, name)))
    return struct


_c = ctypes
_comm = _c.c_void_p
_win = _c.c_void_p
_stream = _c.c_void_p
_dtype = _c.c_int
_out_int = _c.POINTER(_c.c_int)
# name: ([(parameter, ctypes type)], restype); every call but zsm_strerror
# returns 0 or -errno.  A parameter that a Python argument feeds bears that
# argument's name (buf, window, offset, input, ...), so that a refusal
# names what the caller wrote.
PROTOTYPES = {
    "zsm_get_version": ([("version", _out_int)], _c.c_int),
    "zsm_strerror": ([("err", _c.c_int)], _c.c_char_p),
    "zsm_get_unique_id": ([("id", _c.POINTER(UniqueId))], _c.c_int),
    "zsm_comm_init_rank": ([("comm", _c.POINTER(_comm)), ("nranks", _c.c_int),
                            ("unique_id", UniqueId), ("rank", _c.c_int)],
                           _c.c_int),
    "zsm_comm_init_env": ([("comm", _c.POINTER(_comm))], _c.c_int),
    "zsm_comm_destroy": ([("comm", _comm)], _c.c_int),
    "zsm_comm_get_async_error": ([("comm", _comm), ("error", _out_int)],
                                 _c.c_int),
    "zsm_comm_count": ([("comm", _comm), ("nranks", _out_int)], _c.c_int),
    "zsm_comm_user_rank": ([("comm", _comm), ("rank", _out_int)], _c.c_int),
    "zsm_comm_window_register": ([("comm", _comm), ("buf", _c.c_void_p),
                                  ("size", _c.c_size_t),
                                  ("win", _c.POINTER(_win)),
                                  ("flags", _c.c_int)], _c.c_int),
    "zsm_comm_window_deregister": ([("comm", _comm), ("window", _win)],
                                   _c.c_int),
    "zsm_put_signal": ([("buf", _c.c_void_p), ("count", _c.c_size_t),
                        ("datatype", _dtype), ("peer", _c.c_int),
                        ("window", _win), ("offset", _c.c_size_t),
                        ("sig_idx", _c.c_int), ("ctx", _c.c_int),
                        ("flags", _c.c_uint), ("comm", _comm),
                        ("stream", _stream)], _c.c_int),
    "zsm_signal": ([("peer", _c.c_int), ("sig_idx", _c.c_int),
                    ("ctx", _c.c_int), ("flags", _c.c_uint), ("comm", _comm),
                    ("stream", _stream)], _c.c_int),
    "zsm_wait_signal": ([("ndesc", _c.c_int),
                         ("waits", _c.POINTER(WaitSignalDesc)),
                         ("comm", _comm), ("stream", _stream)], _c.c_int),
    "zsm_all_gather": ([("input", _c.c_void_p), ("output", _c.c_void_p),
                        ("count", _c.c_size_t), ("datatype", _dtype),
                        ("comm", _comm), ("stream", _stream)], _c.c_int),
    "zsm_all_to_all": ([("input", _c.c_void_p), ("output", _c.c_void_p),
                        ("count", _c.c_size_t), ("datatype", _dtype),
                        ("comm", _comm), ("stream", _stream)], _c.c_int),
}


def _candidates():
    """(where it came from, what to dlopen) in the order tried."""
    env = os.environ.get("ZSM_LIBRARY")
    if env:
        # An explicit choice: nothing else is tried, so a wrong path is
        # reported rather than silently replaced by another copy.
        yield "ZSM_LIBRARY", env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    hint = os.path.join(here, "library-path")
    if os.path.isfile(hint):
        with open(hint) as f:
            path = f.read().strip()
        if os.path.isdir(path):
            path = os.path.join(path, LIBRARY_NAME)
        yield "the install hint " + hint, path
    # A source checkout (PYTHONPATH=python) next to its meson build.
    top = os.path.dirname(os.path.dirname(here))
    if os.path.isfile(os.path.join(top, "meson.build")):
        yield "the source tree's build", os.path.join(top, "build", "plugin",
                                                      LIBRARY_NAME)
    plugin = os.environ.get("NCCL_NET_PLUGIN")
    if plugin:
        # NCCL takes a path, a library name, or a suffix (zsm ->
        # libnccl-net-zsm.so); only the library it names counts here.
        if "/" in plugin or plugin.endswith(".so"):
            yield "NCCL_NET_PLUGIN", plugin
        elif plugin == "zsm":
            yield "NCCL_NET_PLUGIN", LIBRARY_NAME
    found = ctypes.util.find_library("nccl-net-zsm")
    if found:
        yield "ctypes.util.find_library", found
    yield "the loader's path (LD_LIBRARY_PATH, ld.so.cache)", LIBRARY_NAME


def _load():
    tried = []
    for origin, path in _candidates():
        if "/" in path and not os.path.exists(path):
            tried.append("%s: %s (no such file)" % (origin, path))
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s: %s (%s)" % (origin, path, e))
            continue
        try:
            for name, (params, restype) in PROTOTYPES.items():
                fn = getattr(lib, name)
                fn.argtypes = [t for _, t in params]
                fn.restype = restype
        except AttributeError as e:
            tried.append("%s: %s (loaded, but %s: a zsm without the "
                         "public API?)" % (origin, path, e))
            continue
        return lib, path
    raise LibraryNotFound(_errno.ENOENT, "cannot load %s; tried:\n  %s\n"
                          "set ZSM_LIBRARY to its path" %
                          (LIBRARY_NAME, "\n  ".join(tried)))


_lock = threading.Lock()
_loaded = None


def lib():
    """The loaded library (loaded at the first call), its calls declared."""
    global _loaded
    with _lock:
        if _loaded is None:
            _loaded = _load()
        return _loaded[0]


def path():
    """The path the library was loaded from."""
    lib()
    return _loaded[1]


def strerror(err):
    """zsm_strerror's sentence for a return value (negative errno or 0)."""
    text = lib().zsm_strerror(err)
    return text.decode(errors="replace") if text else "error %d" % err


def check(ret, what):
    """Raise Error for a negative return of the call named what."""
    if ret < 0:
        raise Error(-ret, "%s: %s" % (what, strerror(ret)))
    return ret


def call(name, *args):
    """The library's call name with args, each integer checked against
    its parameter's C type first (c_value, named name: parameter); Error
    for a negative return."""
    params = PROTOTYPES[name][0]
    if len(args) != len(params):
        raise TypeError("%s takes %d arguments, not %d" %
                        (name, len(params), len(args)))
    checked = [c_value(a, t, "%s: %s" % (name[4:], p))
               if t in _INTEGER_TYPES else a
               for a, (p, t) in zip(args, params)]
    return check(getattr(lib(), name)(*checked), name)


# The parameter types c_value checks (pointers to structures and the
# structures themselves pass as they are).
_INTEGER_TYPES = (_c.c_int, _c.c_uint, _c.c_size_t, _c.c_void_p)
