/* SPDX-License-Identifier: MIT */
/*
 * What the files of zsm-conformance --rma share: the page the ranks of a
 * check share (struct rc_shared), one rank's state (struct rk), its
 * windows, comms and requests, and the helpers every check calls: a
 * rank's basics, requests and window memory (conformance_rma_rank.c),
 * barriers, signals, windows, set-up and teardown and the checks' shared
 * steps (conformance_rma_setup.c).  The checks are conformance_rma_*.c's,
 * a family a file; conformance_rma.c has their catalog and runner.
 */
#ifndef ZSM_TOOLS_CONFORMANCE_RMA_INT_H
#define ZSM_TOOLS_CONFORMANCE_RMA_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "abi/nccl_rma.h"
#include "common/cuda_drv.h"
#include "conformance_rma.h"
#include "oob.h"
#include "rma_client.h"

#define RC_WHY 400
#define RC_DOING 120
/* NCCL_NET_MAX_REQUESTS: NCCL's RMA proxy keeps up to 32 x maxRecvs
 * requests in flight per peer and proxy context (3.3, 6.7). */
#define RC_NCCL_REQUESTS 32
#define RC_RECVS_MAX 64
#define RC_GUARD 0xEE
#define RC_GUARD_LEN 4096
/* NCCL hands RMA init its comm's hash; any value every rank shares. */
#define RC_COMM_ID 0x7a736d2d726d61ULL
/* One step of a check (a barrier, a request, a signal) within this. */
#define RC_STEP_MS (15000L * rc_o.scale)
/* How long the other ranks get to stop once one failed. */
#define RC_GRACE_MS (5000L * rc_o.scale)
/* How long a killed peer may take to show as an error. */
#define RC_DETECT_MS (15000L * rc_o.scale)

/* The page the ranks of a check share (NCCL's bootstrap, and more). */
struct rc_shared {
	atomic_int arrived; /* barrier arrivals, counted up for ever */
	atomic_int failed;  /* a rank failed: the others stop waiting */
	atomic_int waiting; /* rma_peer_dies: survivors waiting on the victim */
	atomic_int victim;  /* rank + 1 of a rank killed on purpose */
	/* rma_load's findings, kept across checks. */
	int abi;
	char sym[32];
	char name[64];
	/* Aligned as NCCL's own handle buffers are: plugins lay structs
	 * over them. */
	_Alignas(64) char handles[RC_MAX_RANKS][NCCL_NET_HANDLE_MAXSIZE];
	char why[RC_MAX_RANKS][RC_WHY];
	int secondary[RC_MAX_RANKS]; /* stopped only because another failed */
	char doing[RC_MAX_RANKS][RC_DOING];
	char note[RC_MAX_RANKS][RC_WHY];
	/* rma_signal_order: [reader][writer], signals the reader checked. */
	atomic_ullong acked[RC_MAX_RANKS][RC_MAX_RANKS];
	uint64_t checked[RC_MAX_RANKS];
	uint64_t violations[RC_MAX_RANKS];
};

/* A registered window of this rank: host memory, or with dp set GPU
 * memory, which this process reaches only through the driver's copies
 * (rc_win_read and friends), never through p. */
struct rc_win {
	unsigned char *p;
	size_t size;
	void *mh;
	void *map; /* what rc_win_free unmaps, or NULL */
	size_t map_len;
	zsm_cu_deviceptr dp; /* what rc_win_free frees, or 0: host memory */
};

/* A collective comm and what was made on it, for teardown. */
struct rc_comm {
	void *coll;
	void *ctx[3];
	int nctx;
	void *mh[16];
	int nmh;
};

enum { RQ_FREE, RQ_PENDING, RQ_DONE, RQ_ERROR };

/* A request handed out and not yet seen finished by test. */
struct rc_rq {
	void *req;
	void *coll;
	int state;
	int res;
	int peer;
};

/* One rank of a check. */
struct rk {
	int rank, n;
	struct rma_client t;
	void *ctx_rma, *ctx_gin; /* init's, twice as NCCL's GIN proxy does */
	int inits;
	struct rc_comm cm[2];
	int ncomm;
	ncclNetProperties_v12_t props;
	int max_recvs;
	struct rc_rq *rq;
	int rq_cap;
	int rq_hint;
	int barrier_target; /* arrivals the next barrier waits for */
	int progress_res; /* rmaProgress's first error */
	long slack_ms;	  /* more time for a request or signal (large ones) */
	/* --gpu: the driver, this rank's device current (rc_gpu_open). */
	struct zsm_cuda_drv cu;
	int cu_open;
	unsigned char *stage; /* host copies of GPU window bytes */
	size_t stage_len;
};

struct rc_sig {
	uint64_t off;
	void *mh;
	uint64_t value;
	uint32_t op;
};

/* The run's options, as rc_main completed them. */
extern struct rc_opts rc_o;
/* The page the ranks of a check share, mapped by rc_main. */
extern struct rc_shared *rc_sh;

/* Propagate a status other than OOB_PASS. */
#define RC_TRY(expr)                                                           \
	do {                                                                   \
		int s_ = (expr);                                               \
		if (s_ != OOB_PASS)                                            \
			return s_;                                             \
	} while (0)

/* A signal window's registration flags, as NCCL registers them (3.3). */
#define RC_SIG_FLAGS                                                           \
	(NCCL_NET_MR_FLAG_FORCE_SO | NCCL_NET_MR_FLAG_SIGNAL_NEVER_RESET)

/* conformance_rma_rank.c: a rank's basics. */

/* Milliseconds since t0, a zsm_client_now_ns() time. */
long rc_ms_since(uint64_t t0);
/* Sleep us microseconds. */
void rc_nap_us(long us);
/* A result's name, for messages. */
const char *rc_res(int r);
/* What this rank is doing, for a timeout's message. */
void rc_doing(const struct rk *k, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* This rank fails, saying why, and the others stop: OOB_FAIL. */
int rc_fail(const struct rk *k, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* This rank skips, saying why: OOB_SKIP. */
int rc_skip(const struct rk *k, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A detail line the parent prints before the verdict. */
void rc_note(const struct rk *k, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Whether another rank failed; this one then stops, said as secondary. */
int rc_stopped(const struct rk *k, const char *what);
/* iput, or with sig a strong iputSignal; the plugin's result. */
ncclResult_t rc_put_call(struct rk *k, void *ctx, int context,
			 uint64_t src_off, void *src_mh, size_t size,
			 uint64_t dst_off, void *dst_mh, int peer,
			 const struct rc_sig *sig, void **req);

/* conformance_rma_rank.c: requests, each tested until done. */

/* Keep req of coll (to peer) to be tested: its slot, or -1. */
int rc_track(struct rk *k, void *coll, void *req, int peer);
/* One test of the request in slot s, unless it finished already. */
void rc_test_one(struct rk *k, int s);
/* NCCL's proxy loop once: rmaProgress on each context, test each request. */
void rc_idle(struct rk *k);
/* The first request that ended in an error, freeing every finished one. */
int rc_reap(struct rk *k, int *res, int *peer);
/* Wait for every request this rank has out: each must succeed. */
int rc_wait_all(struct rk *k, const char *what);
/* A put or put-and-signal that must be taken, tracked in *slot. */
int rc_put(struct rk *k, const struct rc_comm *c, void *ctx, int context,
	   uint64_t src_off, void *src_mh, size_t size, uint64_t dst_off,
	   void *dst_mh, int peer, const struct rc_sig *sig, int *slot);

/* conformance_rma_rank.c: window memory, host or this rank's GPU. */

/* --gpu: the CUDA driver, this rank's device current; 0 or -errno. */
int rc_gpu_open(struct rk *k, char *why, size_t len);
/* "GPU memory" or "host memory", for messages. */
const char *rc_mem(const struct rc_win *w);
/* Copies between w's bytes at off and this process's memory. */
int rc_win_read(struct rk *k, const struct rc_win *w, size_t off, void *dst,
		size_t len);
int rc_win_write(struct rk *k, const struct rc_win *w, size_t off,
		 const void *src, size_t len);
/* len bytes of w at off set to byte, or to seed's pattern. */
int rc_win_set(struct rk *k, const struct rc_win *w, size_t off,
	       unsigned char byte, size_t len);
int rc_win_fill(struct rk *k, const struct rc_win *w, size_t off,
		size_t len, uint32_t seed);
/* The len bytes of w at off, readable here, until the next staged copy. */
int rc_win_view(struct rk *k, const struct rc_win *w, size_t off,
		size_t len, const unsigned char **out);

/* conformance_rma_setup.c: barriers and signals. */

/* Every rank of the check arrives, or this one fails saying what. */
int rc_barrier(struct rk *k, const char *what);
/* The signal word at off of w, read before the data it promises. */
int rc_sig_read(struct rk *k, const struct rc_win *w, size_t off,
		uint64_t *v);
/* Wait until the signal word at off of w is at least want. */
int rc_wait_sig(struct rk *k, const struct rc_win *w, size_t off,
		uint64_t want, const char *what, int from);

/* conformance_rma_setup.c: windows. */

/* size zeroed bytes, on the GPU when gpu, at an odd address when odd. */
int rc_win_make(struct rk *k, struct rc_win *w, size_t size, int odd,
		int gpu);
/* A window of the run's memory: GPU with --gpu, else host. */
int rc_win_alloc(struct rk *k, struct rc_win *w, size_t size, int odd);
/* Free what rc_win_make made. */
void rc_win_free(struct rk *k, struct rc_win *w);
/* regMrSym of w (collective) with flags; kept for teardown. */
int rc_reg(struct rk *k, struct rc_comm *c, struct rc_win *w,
	   uint64_t flags, const char *what);
/* deregMrSym of w now (collective), forgotten for teardown. */
int rc_dereg(struct rk *k, struct rc_comm *c, struct rc_win *w,
	     const char *what);
/* ncontexts contexts on c, kept for teardown. */
int rc_ctx(struct rk *k, struct rc_comm *c, int ncontexts, void **out);

/* conformance_rma_setup.c: set-up and teardown, as NCCL's RMA proxy. */

/* Load, init twice, devices, properties. */
int rc_start(struct rk *k);
/* One collective comm connected on ctx, in k->cm[k->ncomm]. */
int rc_connect(struct rk *k, void *ctx);
/* rc_start and one comm connected on the second init's context. */
int rc_join(struct rk *k);
/* Teardown in NCCL's order; strict: every call must succeed. */
int rc_leave(struct rk *k, int strict);

/* conformance_rma_setup.c: the checks' shared steps. */

/* len bytes at p are seed's pattern, guard bytes on each side. */
int rc_bytes_check(const struct rk *k, const unsigned char *p, size_t len,
		   uint32_t seed, const char *what);
/* One round of every rank putting to every other with a signal, each
 * checking the bytes it got; a barrier ends it. */
int rc_exchange(struct rk *k, struct rc_comm *c, void *ctx, int context,
		const struct rc_win *src, uint64_t src_off,
		const struct rc_win *dst, uint64_t dst_off, size_t len,
		const struct rc_win *sig, int slot, uint64_t expect,
		uint32_t seed, const char *what);

/*
 * The checks, in the catalog's order, by the file that holds them;
 * rc_checks in conformance_rma.c says what each one checks.
 */
/* conformance_rma_data.c: set-up, registration and data. */
int rc_check_init_connect(struct rk *k);
int rc_check_register(struct rk *k);
int rc_check_put_get(struct rk *k);
/* conformance_rma_signal.c: signals. */
int rc_check_signal_order(struct rk *k);
int rc_check_signal_only(struct rk *k);
/* conformance_rma_data.c: contexts and credits. */
int rc_check_contexts(struct rk *k);
int rc_check_credits(struct rk *k);
/* conformance_rma_fail.c: failures. */
int rc_check_peer_dies(struct rk *k);
int rc_check_last_error(struct rk *k);
int rc_check_finalize_failed_init(struct rk *k);

#endif
