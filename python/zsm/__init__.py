# SPDX-License-Identifier: MIT
"""zsm's zero-SM API from Python: communicators, windows, put with signal,
AllGather and AlltoAll, over libnccl-net-zsm.so through ctypes (no compiled
part).  python/README.md is the manual; include/zsm/zsm.h the C API.

Buffers are torch tensors (when torch is imported), writable host buffers
(bytearray, ctypes arrays, array.array, memoryview: their format gives the
dtype) or zsm.Buffer for raw memory.  Every failure raises zsm.Error;
an argument refused before the call raises zsm.ArgumentError (also a
ValueError), an integer outside its C type's range zsm.ArgumentOverflow
(also an OverflowError), each naming the argument."""

from ._comm import DTYPES, Buffer, Comm, Window, get_unique_id, version
from ._lib import (API_VERSION, MAX_CTX, UNIQUE_ID_BYTES, ArgumentError,
                   ArgumentOverflow, Error, LibraryNotFound,
                   path as library_path, strerror)

__all__ = ["API_VERSION", "ArgumentError", "ArgumentOverflow", "Buffer",
           "Comm", "DTYPES", "Error", "LibraryNotFound", "MAX_CTX",
           "UNIQUE_ID_BYTES", "Window", "get_unique_id", "library_path",
           "strerror", "version"]
