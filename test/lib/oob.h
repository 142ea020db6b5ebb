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
 * Across hosts.  By default the two ranks are a fork on one host.  After
 * oob_join, this process is one rank of nranks started by the user or a
 * launcher on any hosts: ranks 2k and 2k+1 form a pair, each pair talks
 * over TCP, and oob_start/oob_check/oob_finish work on the pair with the
 * pair rank (0 for the even rank, 1 for the odd) in place of a fork.
 */
struct oob_launch {
	int rank;		/* -1: not given */
	int nranks;		/* -1: not given */
	const char *rendezvous; /* "HOST:PORT" where rank 0 listens */
	const char *source;	/* what set rank and nranks, for messages */
};

/*
 * Fill rank and nranks from the environment a launcher sets, where they
 * are still -1: Open MPI (OMPI_COMM_WORLD_RANK/SIZE), Slurm
 * (SLURM_PROCID/NTASKS) or PMI (PMI_RANK/SIZE).  Returns 1 when one was
 * found, 0 when none, -1 (message on stderr) when a value is garbage.
 */
int oob_launch_from_env(struct oob_launch *l);

/*
 * The tools' rule, in one place: with l->rendezvous, rank and size come
 * from l or else the launcher, and both must be known; without it the run
 * is the one-host fork, --rank/--nranks are an error, and a launcher that
 * started several copies gets a note that each runs its own pair.  0, or
 * -1 with the reason on stderr (prefixed with tool).
 */
int oob_launch_resolve(struct oob_launch *l, const char *tool);

/*
 * A per-rank option of a pair, "V0" or "V0,V1" (one value is both
 * ranks'), each in 0..max, such as the GPUs of --gpu.  0 or -1.
 */
int oob_pair_values(const char *s, long max, int out[2]);

/*
 * Meet the other ranks at l->rendezvous (rank 0 listens there, the others
 * connect, retrying until timeout_s) and connect to this rank's partner.
 * nranks must be even and at least 2.  0 or -1 with the reason on stderr.
 */
int oob_join(const struct oob_launch *l, unsigned timeout_s);
/* Whether oob_join succeeded in this process. */
int oob_joined(void);
/* This process's global rank and the run's size (0 and 2 when forked). */
int oob_global_rank(void);
int oob_global_size(void);

/*
 * After the last check: every pair's rank 0 sends its counts to global
 * rank 0, which returns the run's totals in counts[3] (passed, failed,
 * skipped); the other ranks get their pair's.  0 or -1.
 */
int oob_totals(int counts[3]);

/*
 * Fork.  Returns the rank (0 in the parent, 1 in the child) or -1.  (After
 * oob_join: no fork; the pair rank, over the stream to the partner.)  Both
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
 * What a rank does while it waits for its peer in oob_recv and
 * oob_barrier: with idle set, the wait polls the stream and calls
 * idle(arg) between polls, every millisecond while idle returns non-zero
 * (work outstanding, such as requests NCCL's proxy thread would keep
 * testing); once it returns 0 the wait blocks until the peer's data
 * comes.  NULL (the default) always blocks.  Inherited by the forks.
 */
void oob_set_idle(int (*idle)(void *arg), void *arg);

/*
 * Run fn(arg) in a child process of this rank, bounded by timeout_s, and
 * return its result: OOB_PASS, OOB_SKIP or OOB_FAIL, the reason it gave
 * with oob_fail or oob_skip written into why (len bytes).  A child killed
 * by a signal fails with "crashed (SIGSEGV)" (the signal's name); one
 * still running at timeout_s is killed and fails with "still running
 * after N s".  fork copies no threads: the child must load whatever it
 * uses itself, so call this before this rank loads a plugin.
 */
int oob_isolated(int (*fn)(void *arg), void *arg, unsigned timeout_s,
		 char *why, size_t len);

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
 * (what a pass verified) makes the pass line "PASS name: what"; a
 * non-NULL rule (the rule the check holds the plugin to) ends a FAIL line
 * with " [rule: ...]".  Returns OOB_PASS, OOB_SKIP or OOB_FAIL.
 */
typedef int (*oob_check_fn)(int rank, void *arg);
int oob_check(const char *name, const char *what, const char *rule,
	      oob_check_fn fn, void *arg, unsigned timeout_s);

#endif
