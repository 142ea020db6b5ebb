/* SPDX-License-Identifier: MIT */
/*
 * What zsm-bench.c shares with its pair modes over the ncclNet table
 * (bench_p2p.c) and --rma (bench_rma.c): the options, the state of one
 * rank, and the helpers the modes call.  The main loop (sizes,
 * repetitions, medians, rows) is zsm-bench.c's; a mode brings its own
 * connect, buffers, timed runs and checks.
 */
#ifndef ZSM_BENCH_H
#define ZSM_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/cuda_drv.h"
#include "zsm_client.h"

#define BENCH_MAX_SIZES 64
#define BENCH_MAX_REPS 1000
/* Transfers in flight at once in stream and put. */
#define BENCH_WINDOW 8
/* A wait with no completion for this long is a failure. */
#define BENCH_STALL_MS 20000
#define BENCH_CONNECT_MS 30000
/* Receive slots stay distinct while 8 of them fit in this. */
#define BENCH_RECV_REGION_MAX (256ull << 20)
/* Round trips checked before each ping-pong and putsignal size. */
#define BENCH_VERIFY_MSGS 3
/* Room for the reasons a rank cannot run --gpu. */
#define BENCH_WHY_MAX 512

enum bench_test {
	BENCH_STREAM = 1,
	BENCH_PINGPONG = 2,
	/* --rma */
	BENCH_PUT = 4,
	BENCH_PUTSIGNAL = 8,
};

/* --coll's collectives (bits of bench_opts.coll). */
enum bench_coll {
	BENCH_COLL_AG = 1,
	BENCH_COLL_A2A = 2,
};

/* --poll: how --coll waits for its stream. */
enum bench_poll {
	BENCH_POLL_SPIN = 1,
	BENCH_POLL_NAP = 2,
};

struct bench_opts {
	const char *plugin;
	int abi;
	int tests;
	size_t sizes[BENCH_MAX_SIZES];
	int nsizes;
	long iters;  /* 0: chosen per size */
	long warmup; /* -1: chosen per size */
	int reps;
	const char *csv;
	int dev;
	int verify;
	int raw;
	int rma; /* --rma: the plugin's RMA table, or fi_write with --raw */
	unsigned step_timeout_s;
	/* --gpu: rank r uses CUDA device gpu_ord[r]. */
	int gpu;
	int flush; /* --flush: iflush after host receives too */
	int gpu_ord[2];
	/* --rank, --nranks (-1: not given), --rendezvous (NULL: fork). */
	int launch_rank;
	int launch_nranks;
	const char *rendezvous;
	/* --gpu's device list as given: a pair for the pair modes, one per
	 * rank (or one for all) with --coll. */
	const char *gpu_list;
	/* --coll (bench_coll.c): which collectives, --ranks (0: 2),
	 * --hosts (NULL: the environment's host id), --inplace. */
	int coll;
	int coll_ranks;
	const char *coll_hosts;
	int inplace;
	/* --bidir (--rma put): both ranks put to each other at once. */
	int bidir;
	/* --poll (--coll on a GPU): 0 not given (spin), or one of these. */
	int poll;
};

struct bench_rma;

struct bench {
	struct bench_opts o;
	struct zsm_client *c;
	struct bench_raw *raw; /* --raw: in place of c */
	struct bench_rma *rma; /* --rma: in place of c (with raw, beside it) */
	int rank;
	const char *name;
	void *send; /* rank 0 -> 1 on rank 0, 1 -> 0 on rank 1 */
	void *recv;
	void *listen;
	/* --rma: sbuf is the source window, rbuf the one peers put into. */
	unsigned char *sbuf;
	unsigned char *rbuf;
	size_t sbuf_size;
	size_t rbuf_size;
	void *smh;
	void *rmh;
	size_t max_p2p;
	FILE *csv;
	/* "host" or "gpuN->gpuM": the header line and the CSV say it. */
	char mem[32];
	/* Where the pair met (--rendezvous), for the header line. */
	const char *launch_source;
	/* --gpu: the driver, the buffers behind sbuf/rbuf, a host copy. */
	struct zsm_cuda_drv cu;
	zsm_cu_deviceptr sdev;
	zsm_cu_deviceptr rdev;
	unsigned char *stage;
	/* iflush calls that returned a request, and those that did not. */
	long flush_reqs;
	long flush_null;
};

/* Say why on stderr, take the pair down, exit 1. */
void bench_die(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

#define BENCH_OOB(expr)                                                        \
	do {                                                                   \
		if ((expr))                                                    \
			bench_die("out-of-band %s failed (peer gone?)",        \
				  #expr);                                      \
	} while (0)

/* A plugin call that must succeed, or bench_die naming it. */
#define BENCH_CALL(expr)                                                       \
	do {                                                                   \
		int r_ = (expr);                                               \
		if (r_ != ncclSuccess)                                         \
			bench_die("%s failed: %s (%d)", #expr,                 \
				  zsm_client_result_str(r_), r_);              \
	} while (0)

/* bench_opts.c: the command line into o, or exit 1 (0 for --help) with
 * what was wrong. */
void bench_parse(struct bench_opts *o, int argc, char **argv);
/* 8, 1K, 1M, 1536 (not a whole unit stays in bytes). */
const char *bench_size_str(size_t size, char *buf, size_t len);
/* The pattern seed of message `iter` of this size. */
uint32_t bench_seed(size_t size, long iter);
/* Zeroed, page-aligned, or death. */
void *bench_alloc(size_t size);
/* Slot k of a buffer: distinct while BENCH_WINDOW of them fit. */
unsigned char *bench_slot(unsigned char *buf, size_t buf_size, size_t size,
			  long k);
/* How many distinct slots of size the receive buffer holds (1 or 8). */
long bench_verify_slots(const struct bench *b, size_t size);
/* Host or GPU memory alike: write message `seed`'s pattern, overwrite
 * with a poison, and the bytes as the host can read them. */
void bench_fill(struct bench *b, unsigned char *p, size_t len, uint32_t seed);
void bench_poison(struct bench *b, unsigned char *p, size_t len);
const unsigned char *bench_host_view(struct bench *b, const unsigned char *p,
				     size_t len);
/* --gpu: both ranks check props and CUDA; OOB_PASS to go on or OOB_SKIP,
 * with the reason printed once. */
int bench_gpu_check(struct bench *b, const struct zsm_client_props *props);

/* Stream and ping-pong over the ncclNet table, or --raw (bench_p2p.c):
 * this rank's seconds of one timed run of count messages, a stream 0 -> 1
 * with BENCH_WINDOW in flight, or round trips. */
double bench_stream_run(struct bench *b, size_t size, long count);
double bench_pingpong_run(struct bench *b, size_t size, long count);
/* Untimed, before a size's runs: its messages arrive byte-exact and in
 * order, or bench_die. */
void bench_verify(struct bench *b, int test, size_t size);

/* --rma (bench_rma.c), in the order main calls them.  Open: the plugin's
 * RMA table and its device's properties, or --raw's RMA endpoint. */
void bench_rma_open(struct bench *b, struct zsm_client_props *props);
void bench_rma_connect(struct bench *b);
/* After sbuf and rbuf exist: register them and the signal window. */
void bench_rma_windows(struct bench *b);
void bench_rma_header(const struct bench *b,
		      const struct zsm_client_props *props,
		      const char *launch);
void bench_rma_verify(struct bench *b, int test, size_t size);
/* Seconds of one timed run of count operations: put's at the target (rank
 * 1), putsignal's at rank 0. */
double bench_rma_put_run(struct bench *b, size_t size, long count);
double bench_rma_putsignal_run(struct bench *b, size_t size, long count);
/* Windows, context, comms, table: all but the buffers. */
void bench_rma_close(struct bench *b);

#endif
