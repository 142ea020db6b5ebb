# SPDX-License-Identifier: MIT
"""Finding libnccl-net-zsm.so and declaring the calls of include/zsm/zsm.h."""

import ctypes
import ctypes.util
import errno as _errno
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


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


class WaitSignalDesc(ctypes.Structure):
    _fields_ = [("op_cnt", ctypes.c_int), ("peer", ctypes.c_int),
                ("sig_idx", ctypes.c_int), ("ctx", ctypes.c_int)]


_c = ctypes
_comm = _c.c_void_p
_win = _c.c_void_p
_stream = _c.c_void_p
_dtype = _c.c_int
# name: (argtypes, restype); every call but zsm_strerror returns 0 or -errno.
PROTOTYPES = {
    "zsm_get_version": ([_c.POINTER(_c.c_int)], _c.c_int),
    "zsm_strerror": ([_c.c_int], _c.c_char_p),
    "zsm_get_unique_id": ([_c.POINTER(UniqueId)], _c.c_int),
    "zsm_comm_init_rank": ([_c.POINTER(_comm), _c.c_int, UniqueId, _c.c_int],
                           _c.c_int),
    "zsm_comm_init_env": ([_c.POINTER(_comm)], _c.c_int),
    "zsm_comm_destroy": ([_comm], _c.c_int),
    "zsm_comm_get_async_error": ([_comm, _c.POINTER(_c.c_int)], _c.c_int),
    "zsm_comm_count": ([_comm, _c.POINTER(_c.c_int)], _c.c_int),
    "zsm_comm_user_rank": ([_comm, _c.POINTER(_c.c_int)], _c.c_int),
    "zsm_comm_window_register": ([_comm, _c.c_void_p, _c.c_size_t,
                                  _c.POINTER(_win), _c.c_int], _c.c_int),
    "zsm_comm_window_deregister": ([_comm, _win], _c.c_int),
    "zsm_put_signal": ([_c.c_void_p, _c.c_size_t, _dtype, _c.c_int, _win,
                        _c.c_size_t, _c.c_int, _c.c_int, _c.c_uint, _comm,
                        _stream], _c.c_int),
    "zsm_signal": ([_c.c_int, _c.c_int, _c.c_int, _c.c_uint, _comm, _stream],
                   _c.c_int),
    "zsm_wait_signal": ([_c.c_int, _c.POINTER(WaitSignalDesc), _comm,
                         _stream], _c.c_int),
    "zsm_all_gather": ([_c.c_void_p, _c.c_void_p, _c.c_size_t, _dtype, _comm,
                        _stream], _c.c_int),
    "zsm_all_to_all": ([_c.c_void_p, _c.c_void_p, _c.c_size_t, _dtype, _comm,
                        _stream], _c.c_int),
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
            for name, (argtypes, restype) in PROTOTYPES.items():
                fn = getattr(lib, name)
                fn.argtypes = argtypes
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
