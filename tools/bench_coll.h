/* SPDX-License-Identifier: MIT */
/*
 * What the files of zsm-bench-coll (zsm-bench --coll) share: one rank's
 * state (struct coll), the run's limits, and the plumbing of
 * bench_coll_base.c (dying with the forked ranks, the watch thread and
 * the alarm, host or CUDA memory, the control window's barrier).
 * bench_coll_rank.c runs one rank's collectives; bench_coll.c launches
 * the ranks.
 */
#ifndef ZSM_BENCH_COLL_H
#define ZSM_BENCH_COLL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <zsm/zsm.h>

#include "bench.h"
#include "common/cuda_drv.h"

/* Ranks one zsm-bench forks; a launcher may start more. */
#define COLL_MAX_FORK 64
#define COLL_MAX_RANKS 4096
/* Timed calls per size: the control window holds one time per call. */
#define COLL_MAX_ITERS 100000
/* Without --iters: calls until a rank has received about this much. */
#define COLL_BYTES_BUDGET (1ull << 30)
#define COLL_MIN_ITERS 10
#define COLL_DEFAULT_MAX_ITERS 1000
#define COLL_PROBE_TIMEOUT_S 60

struct coll {
	const struct bench_opts *o;
	int rank;
	int nranks;
	int forked;
	int gpu; /* CUDA ordinal, or -1: host memory */
	struct zsm_cuda_drv cu;
	zsm_cu_stream stream;
	zsm_comm_t comm;
	zsm_window_t win_ctl;
	zsm_window_t win_recv;
	zsm_window_t win_send;
	/* Host or device addresses, as --gpu says. */
	unsigned char *recv;
	unsigned char *send;
	size_t recv_size;
	size_t send_size;
	/* The control window (host memory): nranks slots of ctl_slot
	 * bytes, for barriers and the gathered times. */
	unsigned char *ctl;
	size_t ctl_slot;
	/* Host copy of a GPU region, for fills and checks. */
	unsigned char *stage;
	double *t;
	FILE *csv;
	char mem[COLL_MAX_FORK * 10];
	const char *doing;
};

/* The rank of this process, for the messages of coll_die and the alarm. */
extern struct coll *coll_g;
/* Fork mode, rank 0: the other ranks, 0 once reaped. */
extern pid_t coll_pids[COLL_MAX_FORK];
/* Fork mode, rank 0: the ranks not yet reaped with status 0. */
extern int coll_kids_left;

/* Say why on stderr, take the forked ranks down, exit 1. */
void coll_die(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

/* A zsm call that must succeed, or coll_die naming it. */
#define COLL_CALL(expr)                                                        \
	do {                                                                   \
		int r_ = (expr);                                               \
		if (r_)                                                        \
			coll_die("%s failed: %s (%d)", #expr,                  \
				 zsm_strerror(r_), r_);                        \
	} while (0)

/* bench_coll_base.c: the run's plumbing. */

/* Fork mode, rank 0's thread: reap the ranks; one that failed ends all. */
void *coll_watch(void *arg);
/* SIGALRM: --timeout ran out in the step named; end the run. */
void coll_on_alarm(int sig);
/* Name the step for the alarm's message and give it --timeout. */
void coll_step(struct coll *c, const char *what);
/* Now, in seconds. */
double coll_now(void);
/* Zeroed, page-aligned host memory, or coll_die. */
void *coll_alloc_host(size_t size);
/* Wait for the stream (with --timeout), then check the comm. */
void coll_sync(struct coll *c, const char *what);
/* The CUDA driver, the rank's device current, and its stream. */
void coll_cuda_open(struct coll *c);
/* Host memory, or device memory of the rank's GPU; and its free. */
unsigned char *coll_alloc(struct coll *c, size_t size);
void coll_free(struct coll *c, unsigned char *p);
/* Copy the host bytes at src to p (host or device). */
void coll_put_bytes(struct coll *c, unsigned char *p,
		    const unsigned char *src, size_t len);
/* The bytes at p as the host can read them (a copy in c->stage). */
const unsigned char *coll_get_bytes(struct coll *c, const unsigned char *p,
				    size_t len);
/* The buffers' host-to-device copies done before a call reads them. */
void coll_settle(struct coll *c);
/* In-place AllGather of this rank's first bytes of its control slot. */
void coll_ctl_gather(struct coll *c, size_t bytes, const char *what);
/* Every rank has come here: an AllGather of 8 bytes. */
void coll_barrier(struct coll *c);

/* bench_coll_rank.c: one rank's whole run, given the comm's unique id
 * (NULL: from the launcher's environment); its exit status. */
int coll_rank_main(struct coll *c, zsm_unique_id_t *id);

#endif
