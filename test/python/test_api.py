#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Python package (python/zsm) on the built library, no torch, no GPU.

    ZSM_LIBRARY=build/plugin/libnccl-net-zsm.so PYTHONPATH=python \\
        python3 test/python/test_api.py [--nranks N] [--same-host]

Starts N processes (spawned, so none inherits another's library state) in
host-memory mode.  Rank 0 makes the unique id and the parent hands it to
the others.  Each rank checks, with exact values: AllGather and AlltoAll
out of place and in place from 0 to 256 Ki int32 per rank; put_signal into
a peer's window and wait_signal on running totals, on two contexts; signal
alone; arguments the library refuses (zsm.Error, EINVAL) and ones this
package refuses (not in a window, read-only, destroyed comm; integers
outside their C type, OverflowError naming the argument; a size that is
not whole elements, ValueError), the comm still sound after them.  Ranks
are different hosts to zsm (a ZSM_HOSTID each: the network path) unless
--same-host (one ZSM_HOSTID: ce).

Prints one PASS/FAIL line per check and rank; exit 0 only when every check
of every rank passed.
"""

import argparse
import ctypes
import errno
import multiprocessing
import os
import queue
import sys
import traceback

SIZES = [0, 1, 1000, 256 * 1024]  # int32 elements per rank
PUT = 4096                        # int32 elements per put
ROUNDS = 3                        # puts per round
# Every wait here has this deadline, below meson's limit (120 s) so that
# the parent still says which rank hung.  It bounds a hung rank, not a
# healthy one's speed (the whole run takes seconds); meson sets
# ZSM_WAIT_TIMEOUT_MS lower, so the library's own deadline comes first.
DEADLINE_S = 100


class Failed(Exception):
    pass


def expect(cond, text):
    if not cond:
        raise Failed(text)


def first_diff(got, want):
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return "element %d is %d, expected %d" % (i, g, w)
    return "lengths %d and %d" % (len(got), len(want))


def same(got, want, what):
    if got != want:
        raise Failed("%s: %s" % (what, first_diff(got, want)))


def raises(errno_want, fn, what, says=None):
    import zsm
    try:
        fn()
    except zsm.Error as e:
        expect(e.errno == errno_want, "%s: errno %d, expected %d (%s)" %
               (what, e.errno, errno_want, e))
        expect(e.text and "Success" not in e.text,
               "%s: text %r" % (what, e.text))
        expect(says is None or says in e.text,
               "%s: %r does not say %r" % (what, e.text, says))
        return
    raise Failed("%s: no zsm.Error" % what)


def ag_value(rank, i):
    return rank * 1000003 + i + 7


def a2a_value(src, dst, nranks, i):
    return (src * nranks + dst) * 1000003 + i + 7


def check_all_gather(comm, recv, send):
    r, n_r = comm.rank, comm.size
    for n in SIZES:
        want = [ag_value(q, i) for q in range(n_r) for i in range(n)]
        recv[:n_r * n] = [-1] * (n_r * n)
        send[:n] = want[r * n:(r + 1) * n]
        comm.all_gather(memoryview(recv)[:n_r * n], memoryview(send)[:n])
        same(recv[:n_r * n], want, "all_gather %d out of place" % n)
        # In place: this rank's block already in the output.
        recv[:n_r * n] = [-1] * (n_r * n)
        recv[r * n:(r + 1) * n] = want[r * n:(r + 1) * n]
        comm.all_gather(memoryview(recv)[:n_r * n],
                        memoryview(recv)[r * n:(r + 1) * n])
        same(recv[:n_r * n], want, "all_gather %d in place" % n)


def check_all_to_all(comm, recv, send):
    r, n_r = comm.rank, comm.size
    for n in SIZES:
        mine = [a2a_value(r, j, n_r, i) for j in range(n_r) for i in range(n)]
        want = [a2a_value(j, r, n_r, i) for j in range(n_r) for i in range(n)]
        send[:n_r * n] = mine
        recv[:n_r * n] = [-1] * (n_r * n)
        comm.all_to_all(memoryview(recv)[:n_r * n],
                        memoryview(send)[:n_r * n])
        same(recv[:n_r * n], want, "all_to_all %d out of place" % n)
        recv[:n_r * n] = mine
        comm.all_to_all(memoryview(recv)[:n_r * n],
                        memoryview(recv)[:n_r * n])
        same(recv[:n_r * n], want, "all_to_all %d in place" % n)


def check_put_signal(comm, inbox_win, inbox, send):
    """Each rank puts ROUNDS blocks into the next rank's inbox (ctx 1) and
    waits for the previous rank's, twice: the second wait counts from the
    first (running totals)."""
    import zsm
    r, n_r = comm.rank, comm.size
    to, frm = (r + 1) % n_r, (r - 1) % n_r
    for rnd in range(2):
        for k in range(ROUNDS):
            slot = rnd * ROUNDS + k
            send[:PUT] = [ag_value(r, slot * PUT + i) for i in range(PUT)]
            comm.put_signal(memoryview(send)[:PUT], to, inbox_win,
                            slot * PUT * 4, ctx=1)
        comm.wait_signal([(frm, ROUNDS, 1)])
        for k in range(ROUNDS):
            slot = rnd * ROUNDS + k
            same(inbox[slot * PUT:(slot + 1) * PUT],
                 [ag_value(frm, slot * PUT + i) for i in range(PUT)],
                 "put_signal round %d block %d from rank %d" % (rnd, k, frm))
    # A byte buffer (uint8) into the same window, offset past the int32s.
    raw = bytearray(range(256)) * 4
    with comm.register(raw):
        off = 2 * ROUNDS * PUT * 4
        comm.put_signal(raw, to, inbox_win, off, ctx=3)
        comm.wait_signal([(frm, 1, 3)])
        got = ctypes.string_at(ctypes.addressof(inbox) + off, len(raw))
        expect(got == bytes(raw), "put_signal of a bytearray: wrong bytes")
    # signal alone: twice to every peer on ctx 2, waited for together.
    peers = [p for p in range(n_r) if p != r]
    for p in peers:
        comm.signal(p, ctx=2)
        comm.signal(p, ctx=2)
    comm.wait_signal([(p, 2, 2) for p in peers])
    expect(zsm.MAX_CTX == 4, "MAX_CTX %d" % zsm.MAX_CTX)


def check_errors(comm, recv, send, inbox_win):
    import zsm
    n_r = comm.size
    peer = (comm.rank + 1) % n_r
    # The library refuses these (its own checks), each for one reason.
    raises(errno.EINVAL, lambda: comm.signal(peer, ctx=zsm.MAX_CTX),
           "signal with ctx = ZSM_MAX_CTX")
    raises(errno.EINVAL, lambda: comm.signal(n_r), "signal to rank nranks")
    raises(errno.EINVAL, lambda: comm.put_signal(
        memoryview(send)[:1], -1, inbox_win, 0), "put_signal to peer -1")
    raises(errno.EINVAL, lambda: comm.wait_signal([(peer, 1, -1)]),
           "wait_signal on ctx -1")
    # This package refuses these before calling.
    loose = (ctypes.c_int32 * 8)()
    raises(errno.EINVAL, lambda: comm.all_gather(
        memoryview(recv)[:8 * n_r], loose), "all_gather from outside a window",
        says="input (int32, 32 bytes at 0x%x) lies in no window" %
        ctypes.addressof(loose))
    raises(errno.EINVAL, lambda: comm.register(b"read-only"),
           "register bytes", says="read-only")
    raises(errno.EINVAL, lambda: comm.all_to_all(
        memoryview(recv)[:n_r + 1], memoryview(send)[:n_r + 1]),
        "all_to_all of nranks + 1 elements", says="equal blocks")
    expect(comm.async_error() is None,
           "async_error after refused calls: %s" % comm.async_error())


def overflows(fn, what, names):
    """fn must raise zsm.ArgumentOverflow (an OverflowError) naming
    names (the call and argument), before calling the library."""
    import zsm
    try:
        fn()
    except Exception as e:
        expect(isinstance(e, OverflowError) and isinstance(e, zsm.Error) and
               e.errno == errno.EINVAL,
               "%s: %r, not a zsm.Error and OverflowError with EINVAL" %
               (what, e))
        expect(names in e.text, "%s: %r does not name %r" %
               (what, e.text, names))
        return
    raise Failed("%s: returned normally (the integer was cut)" % what)


def check_ranges(comm, send, inbox_win, uid):
    """Integers past their C type are refused, naming the argument, where
    ctypes would pass their low bits (peer 2**40 + 1 is rank 1, offset
    2**64 is 0); sizes that are not whole elements too."""
    import zsm
    n_r = comm.size
    peer = (comm.rank + 1) % n_r
    one = memoryview(send)[:1]
    overflows(lambda: comm.put_signal(one, 2**40 + 1, inbox_win, 0),
              "put_signal to peer 2**40 + 1", "put_signal: peer:")
    overflows(lambda: comm.put_signal(one, peer, inbox_win, 2**64),
              "put_signal at offset 2**64", "put_signal: offset:")
    overflows(lambda: comm.put_signal(one, peer, inbox_win, -1),
              "put_signal at offset -1", "put_signal: offset:")
    overflows(lambda: comm.put_signal(one, peer, inbox_win, 0, ctx=2**32),
              "put_signal on ctx 2**32", "put_signal: ctx:")
    overflows(lambda: comm.signal(peer - 2**32), "signal to peer - 2**32",
              "signal: peer:")
    overflows(lambda: comm.wait_signal([(2**32, 1)]),
              "wait_signal on peer 2**32", "waits[0].peer:")
    overflows(lambda: comm.wait_signal([(peer, 2**32)]),
              "wait_signal for 2**32 signals", "waits[0].op_cnt:")
    overflows(lambda: comm.wait_signal([(peer, 1, 0), (peer, 1, 2**33)]),
              "wait_signal on ctx 2**33", "waits[1].ctx:")
    overflows(lambda: zsm.Comm.init_rank(2**32 + n_r, uid, comm.rank),
              "init_rank of 2**32 + nranks ranks", "comm_init_rank: nranks:")
    overflows(lambda: zsm.Buffer(2**64, 4), "Buffer at 2**64",
              "Buffer: address:")
    # A 6-byte float32 buffer would send 4 bytes.
    try:
        zsm.Buffer(ctypes.addressof(send), 6, "float32")
    except Exception as e:
        expect(isinstance(e, ValueError) and isinstance(e, zsm.Error) and
               "whole number" in e.text, "6-byte float32 Buffer: %r" % e)
    else:
        raise Failed("a 6-byte float32 Buffer was taken (4 bytes would go)")
    raises(errno.EINVAL, lambda: comm.put_signal(1.5, peer, inbox_win, 0),
           "put_signal of a float", says="buffer")
    expect(comm.async_error() is None,
           "async_error after refused integers: %s" % comm.async_error())


def barrier(comm):
    """Signals to and waits from every peer on ctx 0: every earlier put of
    every rank is there after it."""
    peers = [p for p in range(comm.size) if p != comm.rank]
    for p in peers:
        comm.signal(p)
    comm.wait_signal([(p, 1) for p in peers])


def worker(rank, nranks, hostid, uid_q, out_q):
    os.environ["ZSM_HOSTID"] = hostid

    def report(name, fn):
        try:
            fn()
            out_q.put((rank, "PASS", name, ""))
            return True
        except Exception as e:
            why = str(e) if isinstance(e, Failed) else traceback.format_exc()
            out_q.put((rank, "FAIL", name, why))
            return False

    try:
        import zsm
        if rank == 0:
            uid = zsm.get_unique_id()
            for _ in range(nranks - 1):
                uid_q.put(uid)
        else:
            uid = uid_q.get(timeout=DEADLINE_S)
        expect(len(uid) == zsm.UNIQUE_ID_BYTES, "unique id of %d bytes" %
               len(uid))
        comm = zsm.Comm.init_rank(nranks, uid, rank)
    except Exception:
        out_q.put((rank, "FAIL", "init", traceback.format_exc()))
        out_q.put((rank, "END", "", ""))
        return
    ok = report("init", lambda: expect(
        (comm.rank, comm.size, comm.device) == (rank, nranks, None),
        "rank, size, device %s" % ((comm.rank, comm.size, comm.device),)))
    ok &= report("version", lambda: expect(zsm.version() >= 100,
                                           "version %d" % zsm.version()))
    big = max(SIZES) * nranks
    recv = (ctypes.c_int32 * big)()
    send = (ctypes.c_int32 * big)()
    inbox = (ctypes.c_int32 * (2 * ROUNDS * PUT + 1024))()
    with comm:
        with comm.register(recv), comm.register(send), \
                comm.register(inbox) as inbox_win:
            ok &= report("all_gather", lambda: check_all_gather(comm, recv,
                                                                send))
            ok &= report("all_to_all", lambda: check_all_to_all(comm, recv,
                                                                send))
            ok &= report("put_signal", lambda: check_put_signal(
                comm, inbox_win, inbox, send))
            ok &= report("integer ranges", lambda: check_ranges(
                comm, send, inbox_win, uid))
            ok &= report("errors", lambda: check_errors(comm, recv, send,
                                                        inbox_win))
            # The comm still works after the refused calls.
            ok &= report("all_gather after errors",
                         lambda: check_all_gather(comm, recv, send))
            ok &= report("barrier", lambda: barrier(comm))
    ok &= report("destroyed", lambda: raises(
        errno.EBADF, lambda: comm.signal(0), "signal on a destroyed comm"))
    out_q.put((rank, "END", "", ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nranks", type=int, default=3)
    ap.add_argument("--same-host", action="store_true")
    args = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "..", "python"))
    import zsm
    try:
        print("library:", zsm.library_path())
    except zsm.LibraryNotFound as e:
        print("FAIL: %s" % e)
        return 1
    mp = multiprocessing.get_context("spawn")
    uid_q, out_q = mp.Queue(), mp.Queue()
    procs = []
    for r in range(args.nranks):
        hostid = "py-test" if args.same_host else "py-test-%d" % r
        p = mp.Process(target=worker, args=(r, args.nranks, hostid, uid_q,
                                            out_q))
        p.start()
        procs.append(p)
    ended, failed = set(), 0
    while len(ended) < args.nranks:
        try:
            rank, what, name, why = out_q.get(timeout=DEADLINE_S)
        except queue.Empty:
            print("FAIL: no word from ranks %s within %d s" %
                  (sorted(set(range(args.nranks)) - ended), DEADLINE_S))
            failed += 1
            break
        if what == "END":
            ended.add(rank)
            continue
        print("%s rank %d %s%s" % (what, rank, name,
                                   (": " + why) if why else ""))
        failed += what != "PASS"
    for r, p in enumerate(procs):
        p.join(timeout=60)
        if p.is_alive():
            print("FAIL: rank %d still running; killing it" % r)
            p.kill()
            p.join()
            failed += 1
        elif p.exitcode != 0:
            print("FAIL: rank %d exited with %s" % (r, p.exitcode))
            failed += 1
    print("%s: %d ranks, %s" % ("PASS" if not failed else "FAIL",
                                args.nranks,
                                "same host (ce)" if args.same_host
                                else "different hosts (network path)"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
