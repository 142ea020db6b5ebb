/* SPDX-License-Identifier: MIT */
/*
 * Two-process harness: fork a peer, give each side a rank (0 = parent,
 * 1 = child) and a socketpair to exchange handles and barriers, and make
 * sure a hang or a dead peer becomes a failure within a bounded time.
 */
#ifndef ZSM_TEST_OOB_H
#define ZSM_TEST_OOB_H

#include <stddef.h>

/* Exit codes, as meson reads them. */
#define OOB_PASS 0
#define OOB_FAIL 1
#define OOB_SKIP 77

/*
 * Fork.  Returns the rank (0 in the parent, 1 in the child) or -1.  Both
 * sides get alarm(timeout_s): when it rings the side prints why and exits
 * OOB_FAIL, and rank 0 kills rank 1 first.  Rank 1 dies with rank 0; rank
 * 0 exits as soon as rank 1 exits with a non-zero status.
 */
int oob_start(unsigned timeout_s);
int oob_rank(void);
/* Re-arm both the alarm of this side (0 disarms). */
void oob_set_timeout(unsigned timeout_s);
/*
 * Name what this rank is doing (a string that outlives the call, NULL
 * for nothing), so that a timeout says where it hung.
 */
void oob_doing(const char *what);

/* Whole-buffer transfers; 0 or -1 (peer gone, reason on stderr). */
int oob_send(const void *buf, size_t len);
int oob_recv(void *buf, size_t len);
int oob_barrier(void);

/*
 * End the pair.  Rank 1: _exit(status).  Rank 0: wait for rank 1 (killing
 * it first when status is not OOB_PASS) and return the combined status:
 * OOB_FAIL if either failed, else OOB_SKIP if either skipped, else
 * OOB_PASS.
 */
int oob_finish(int status);

/*
 * Rank 1, inside oob_check only: die at once by SIGKILL, as a crashed
 * process would (no exit handlers, no plugin close), after marking the
 * death as wanted so that rank 0 and oob_finish count it as a pass.  Any
 * other death of rank 1 still fails the check.  Rank 0 cannot die this
 * way: its exit status is the check's result, and rank 1 dies with it.
 */
void oob_die(void) __attribute__((noreturn));

/*
 * Record why this rank failed (the first reason per rank is kept) for
 * oob_check to print; also returns OOB_FAIL for "return oob_fail(...)".
 */
int oob_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same, for skips. */
int oob_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Run fn on both ranks of a fresh pair forked from a fresh process (so no
 * plugin state leaks between checks), bounded by timeout_s, and print
 * "PASS name", "SKIP name: why" or "FAIL name: why".  A non-NULL what
 * (what a pass verified) makes the pass line "PASS name: what".  Returns
 * OOB_PASS, OOB_SKIP or OOB_FAIL.
 */
typedef int (*oob_check_fn)(int rank, void *arg);
int oob_check(const char *name, const char *what, oob_check_fn fn, void *arg,
	      unsigned timeout_s);

#endif
