/* SPDX-License-Identifier: MIT */
/*
 * zsm-conformance --rma: NCCL 2.30's RMA table of any plugin
 * (ncclRmaPlugin_v14, else _v13, else ncclGinPlugin_v13, as NCCL looks
 * them up, or exactly --rma-abi's), driven as NCCL's RMA and GIN proxies
 * drive it, by N ranks forked from this process afresh for each check.
 * The ranks share one anonymous page, which stands in for NCCL's
 * bootstrap: the listen handles' all-gather, barriers, each rank's
 * reason to fail and what it was doing.  Each rank sets its host
 * identity (--hosts, --hostid-env) before it loads the plugin, so that a
 * plugin telling hosts apart by it takes its network path between ranks
 * of different identities.  Every wait has a deadline and says what it
 * waited for; a check that runs past its limit is killed with its ranks
 * and fails, naming what each was doing.  Section numbers in the
 * messages are nccl-plugin-abi.md's.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "abi/nccl_rma.h"
#include "common/cuda_drv.h"
#include "conformance_rma.h"
#include "oob.h"
#include "pattern.h"
#include "rma_client.h"
#include "zsm_client.h"

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

static struct rc_opts rc_o;
static struct rc_shared *rc_sh;

/* Propagate a status other than OOB_PASS. */
#define RC_TRY(expr)                                                           \
	do {                                                                   \
		int s_ = (expr);                                               \
		if (s_ != OOB_PASS)                                            \
			return s_;                                             \
	} while (0)

static long rc_ms_since(uint64_t t0)
{
	return (long)((zsm_client_now_ns() - t0) / 1000000ULL);
}

static void rc_nap_us(long us)
{
	struct timespec ts = { 0, us * 1000L };

	nanosleep(&ts, NULL);
}

static const char *rc_res(int r)
{
	return zsm_client_result_str(r);
}

/* What this rank is doing, for a timeout's message. */
static void rc_doing(const struct rk *k, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void rc_doing(const struct rk *k, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rc_sh->doing[k->rank], RC_DOING, fmt, ap);
	va_end(ap);
}

static void rc_why(const struct rk *k, int secondary, const char *fmt,
		   va_list ap)
{
	if (rc_sh->why[k->rank][0])
		return;
	vsnprintf(rc_sh->why[k->rank], RC_WHY, fmt, ap);
	rc_sh->secondary[k->rank] = secondary;
}

/*
 * This rank fails, saying why (the first reason is kept), and the others
 * stop at their next wait.  Returns OOB_FAIL.
 */
static int rc_fail(const struct rk *k, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int rc_fail(const struct rk *k, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rc_why(k, 0, fmt, ap);
	va_end(ap);
	/* release: the reason is written before; pairs with rc_stopped. */
	atomic_store_explicit(&rc_sh->failed, 1, memory_order_release);
	return OOB_FAIL;
}

static int rc_skip(const struct rk *k, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int rc_skip(const struct rk *k, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rc_why(k, 0, fmt, ap);
	va_end(ap);
	return OOB_SKIP;
}

/* A detail line the parent prints before the verdict. */
static void rc_note(const struct rk *k, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void rc_note(const struct rk *k, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rc_sh->note[k->rank], RC_WHY, fmt, ap);
	va_end(ap);
}

/* Whether another rank failed; this one then stops, said as secondary. */
static int rc_stopped(const struct rk *k, const char *what)
{
	/* acquire: pairs with rc_fail's release store. */
	if (!atomic_load_explicit(&rc_sh->failed, memory_order_acquire))
		return 0;
	if (!rc_sh->why[k->rank][0]) {
		snprintf(rc_sh->why[k->rank], RC_WHY,
			 "stopped while %s: another rank failed", what);
		rc_sh->secondary[k->rank] = 1;
	}
	return 1;
}

/* iput, or iputSignal (always strong, as NCCL's RMA proxy asks) with sig. */
static ncclResult_t rc_put_call(struct rk *k, void *ctx, int context,
				uint64_t src_off, void *src_mh, size_t size,
				uint64_t dst_off, void *dst_mh, int peer,
				const struct rc_sig *sig, void **req)
{
	*req = NULL;
	if (!sig)
		return k->t.iput(ctx, context, src_off, src_mh, size, dst_off,
				 dst_mh, (uint32_t)peer, req);
	return rma_client_put_signal(&k->t, ctx, context, src_off, src_mh, size,
				     dst_off, dst_mh, (uint32_t)peer, sig->off,
				     sig->mh, sig->value, sig->op, req);
}

/* ---------------------------------------------------------------------- */
/* Requests: every one is tested until done, as NCCL's proxy does */

static int rc_track(struct rk *k, void *coll, void *req, int peer)
{
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < k->rq_cap; i++) {
			int s = (k->rq_hint + i) % k->rq_cap;

			if (k->rq[s].state != RQ_FREE)
				continue;
			k->rq[s] = (struct rc_rq){ req, coll, RQ_PENDING, 0,
						   peer };
			k->rq_hint = s + 1;
			return s;
		}
		int cap = k->rq_cap ? 2 * k->rq_cap : 1024;
		struct rc_rq *v = realloc(k->rq, (size_t)cap * sizeof(*v));

		if (!v)
			return -1;
		memset(v + k->rq_cap, 0, (size_t)(cap - k->rq_cap) * sizeof(*v));
		k->rq_hint = k->rq_cap;
		k->rq = v;
		k->rq_cap = cap;
	}
	return -1;
}

/* One test of request s, unless it finished already. */
static void rc_test_one(struct rk *k, int s)
{
	struct rc_rq *q = &k->rq[s];
	int done = 0, r;

	if (q->state != RQ_PENDING)
		return;
	r = k->t.test(q->coll, q->req, &done);
	if (r != ncclSuccess) {
		q->state = RQ_ERROR;
		q->res = r;
	} else if (done) {
		q->state = RQ_DONE;
	}
}

/* Test every pending request once; how many are still pending. */
static int rc_poll(struct rk *k)
{
	int pending = 0;

	for (int s = 0; s < k->rq_cap; s++) {
		rc_test_one(k, s);
		pending += k->rq[s].state == RQ_PENDING;
	}
	return pending;
}

/* What a rank does while it waits: NCCL's proxy loop, rmaProgress on
 * each context and test on each request. */
static void rc_idle(struct rk *k)
{
	for (int c = 0; c < k->ncomm; c++)
		for (int i = 0; k->t.progress && i < k->cm[c].nctx; i++) {
			int r = k->t.progress(k->cm[c].ctx[i]);

			if (r != ncclSuccess && !k->progress_res)
				k->progress_res = r;
		}
	rc_poll(k);
}

/* The first request that ended in an error, freeing every finished one;
 * -1 when none. */
static int rc_reap(struct rk *k, int *res, int *peer)
{
	int bad = -1;

	for (int s = 0; s < k->rq_cap; s++) {
		struct rc_rq *q = &k->rq[s];

		if (q->state == RQ_ERROR && bad < 0) {
			bad = s;
			*res = q->res;
			*peer = q->peer;
		}
		if (q->state == RQ_DONE || q->state == RQ_ERROR)
			q->state = RQ_FREE;
	}
	return bad;
}

/* Wait for every request this rank has out: each must succeed. */
static int rc_wait_all(struct rk *k, const char *what)
{
	uint64_t t0 = zsm_client_now_ns();
	int pending, res = 0, peer = -1;

	rc_doing(k, "waiting for the requests of %s", what);
	while ((pending = rc_poll(k)) > 0) {
		if (rc_stopped(k, what))
			return OOB_FAIL;
		if (rc_ms_since(t0) > RC_STEP_MS + k->slack_ms)
			return rc_fail(k, "%s: %d request%s not done after %ld "
					  "ms of test calls",
				       what, pending, pending == 1 ? "" : "s",
				       RC_STEP_MS + k->slack_ms);
		rc_idle(k);
		rc_nap_us(20);
	}
	if (rc_reap(k, &res, &peer) >= 0)
		return rc_fail(k, "%s: test of a request to rank %d returned "
				  "%s",
			       what, peer, rc_res(res));
	return OOB_PASS;
}

/* A put or put-and-signal that must be taken: success and a request. */
static int rc_put(struct rk *k, const struct rc_comm *c, void *ctx,
		  int context, uint64_t src_off, void *src_mh, size_t size,
		  uint64_t dst_off, void *dst_mh, int peer,
		  const struct rc_sig *sig, int *slot)
{
	const char *call = sig ? "iputSignal" : "iput";
	void *req;
	int r, s;

	r = rc_put_call(k, ctx, context, src_off, src_mh, size, dst_off,
			dst_mh, peer, sig, &req);
	if (r != ncclSuccess)
		return rc_fail(k, "%s of %zu bytes to rank %d (context %d, dst "
				  "offset %llu) returned %s",
			       call, size, peer, context,
			       (unsigned long long)dst_off, rc_res(r));
	if (!req)
		return rc_fail(k, "%s of %zu bytes to rank %d returned "
				  "ncclSuccess and a NULL request: iput and "
				  "iputSignal must always return a request, "
				  "NCCL's RMA proxy takes NULL as "
				  "ncclInternalError (3.3 data operations, 6.7)",
			       call, size, peer);
	s = rc_track(k, c->coll, req, peer);
	if (s < 0)
		return rc_fail(k, "out of memory for requests");
	if (slot)
		*slot = s;
	return OOB_PASS;
}

/* ---------------------------------------------------------------------- */
/* Window memory: host, or (--gpu) this rank's CUDA device */

/*
 * --gpu: the CUDA driver, with this rank's device current.  Opened in the
 * rank, never in the tool, which forks (cuda_drv.h), and before the
 * plugin loads, as NCCL makes its device current first.  It stays open
 * until the rank exits: windows outlive the plugin's teardown.  0, or
 * -errno with why.
 */
static int rc_gpu_open(struct rk *k, char *why, size_t len)
{
	int r;

	if (k->cu_open)
		return 0;
	r = zsm_cuda_drv_open(&k->cu, why, len);
	if (!r)
		r = zsm_cuda_drv_use_device(&k->cu, rc_o.gpu_ord[k->rank % 2],
					    why, len);
	if (r) {
		zsm_cuda_drv_close(&k->cu);
		return r;
	}
	k->cu_open = 1;
	return 0;
}

static const char *rc_mem(const struct rc_win *w)
{
	return w->dp ? "GPU memory" : "host memory";
}

/* A host buffer of at least len bytes for copies of GPU bytes; its
 * contents do not survive the next call. */
static unsigned char *rc_stage(struct rk *k, size_t len)
{
	if (!len)
		len = 1;
	if (len > k->stage_len) {
		unsigned char *p = realloc(k->stage, len);

		if (!p)
			return NULL;
		k->stage = p;
		k->stage_len = len;
	}
	return k->stage;
}

static zsm_cu_deviceptr rc_dptr(const struct rc_win *w, size_t off)
{
	return (zsm_cu_deviceptr)(uintptr_t)(w->p + off);
}

/* len bytes of w at off into dst. */
static int rc_win_read(struct rk *k, const struct rc_win *w, size_t off,
		       void *dst, size_t len)
{
	char why[RC_WHY];

	if (!len)
		return OOB_PASS;
	if (!w->dp) {
		memcpy(dst, w->p + off, len);
		return OOB_PASS;
	}
	if (zsm_cuda_drv_copy_dtoh(&k->cu, dst, rc_dptr(w, off), len, why,
				   sizeof(why)))
		return rc_fail(k, "reading %zu bytes of a GPU window: %s", len,
			       why);
	return OOB_PASS;
}

/* len bytes from src into w at off. */
static int rc_win_write(struct rk *k, const struct rc_win *w, size_t off,
			const void *src, size_t len)
{
	char why[RC_WHY];

	if (!len)
		return OOB_PASS;
	if (!w->dp) {
		memcpy(w->p + off, src, len);
		return OOB_PASS;
	}
	if (zsm_cuda_drv_copy_htod(&k->cu, rc_dptr(w, off), src, len, why,
				   sizeof(why)))
		return rc_fail(k, "writing %zu bytes of a GPU window: %s", len,
			       why);
	return OOB_PASS;
}

static int rc_win_set(struct rk *k, const struct rc_win *w, size_t off,
		      unsigned char byte, size_t len)
{
	char why[RC_WHY];

	if (!len)
		return OOB_PASS;
	if (!w->dp) {
		memset(w->p + off, byte, len);
		return OOB_PASS;
	}
	if (zsm_cuda_drv_memset(&k->cu, rc_dptr(w, off), byte, len, why,
				sizeof(why)))
		return rc_fail(k, "setting %zu bytes of a GPU window: %s", len,
			       why);
	return OOB_PASS;
}

/* len bytes of seed's pattern into w at off. */
static int rc_win_fill(struct rk *k, const struct rc_win *w, size_t off,
		       size_t len, uint32_t seed)
{
	unsigned char *p;

	if (!w->dp) {
		zsm_pattern_fill(w->p + off, len, seed);
		return OOB_PASS;
	}
	p = rc_stage(k, len);
	if (!p)
		return rc_fail(k, "out of memory for %zu bytes", len);
	zsm_pattern_fill(p, len, seed);
	return rc_win_write(k, w, off, p, len);
}

/* The len bytes of w at off, readable here: the window itself, or a
 * copy valid until the next staged copy. */
static int rc_win_view(struct rk *k, const struct rc_win *w, size_t off,
		       size_t len, const unsigned char **out)
{
	unsigned char *p;

	if (!w->dp) {
		*out = w->p + off;
		return OOB_PASS;
	}
	p = rc_stage(k, len);
	if (!p)
		return rc_fail(k, "out of memory for %zu bytes", len);
	*out = p;
	return rc_win_read(k, w, off, p, len);
}

/* ---------------------------------------------------------------------- */
/* Barriers and signals */

static int rc_barrier(struct rk *k, const char *what)
{
	uint64_t t0 = zsm_client_now_ns();
	int base = k->barrier_target, now;

	k->barrier_target += k->n;
	rc_doing(k, "at barrier '%s'", what);
	/* acq_rel: what this rank wrote to the page (its handle) is seen by
	 * those who see it arrive; pairs with the acquire loads below. */
	atomic_fetch_add_explicit(&rc_sh->arrived, 1, memory_order_acq_rel);
	while ((now = atomic_load_explicit(&rc_sh->arrived,
					   memory_order_acquire)) <
	       k->barrier_target) {
		if (rc_stopped(k, what))
			return OOB_FAIL;
		if (rc_ms_since(t0) > RC_STEP_MS)
			return rc_fail(k, "barrier '%s': %d of %d ranks there "
					  "after %ld ms",
				       what, now - base, k->n, RC_STEP_MS);
		rc_idle(k);
		rc_nap_us(50);
	}
	return OOB_PASS;
}

/*
 * The signal word at off of w, as the reader of NCCL's signals reads it.
 * Host memory: an acquire load, which pairs with the plugin's update of
 * the word (a remote atomic, or a store after the data); what a strong
 * signal promises is read after.  GPU memory: an 8-byte synchronous copy,
 * which returns only once the word is read, so the copies of the data
 * that follow read after it.
 */
static int rc_sig_read(struct rk *k, const struct rc_win *w, size_t off,
		       uint64_t *v)
{
	if (!w->dp) {
		*v = __atomic_load_n((const uint64_t *)(const void *)(w->p +
								      off),
				     __ATOMIC_ACQUIRE);
		return OOB_PASS;
	}
	return rc_win_read(k, w, off, v, sizeof(*v));
}

/* Wait until the signal word at off of w is at least want. */
static int rc_wait_sig(struct rk *k, const struct rc_win *w, size_t off,
		       uint64_t want, const char *what, int from)
{
	uint64_t t0 = zsm_client_now_ns(), v;

	rc_doing(k, "waiting for %s from rank %d to reach %llu", what, from,
		 (unsigned long long)want);
	for (;;) {
		RC_TRY(rc_sig_read(k, w, off, &v));
		if (v >= want)
			break;
		if (rc_stopped(k, what))
			return OOB_FAIL;
		if (rc_ms_since(t0) > RC_STEP_MS + k->slack_ms)
			return rc_fail(k, "%s from rank %d: the signal word is "
					  "%llu after %ld ms, want %llu",
				       what, from, (unsigned long long)v,
				       RC_STEP_MS + k->slack_ms,
				       (unsigned long long)want);
		rc_idle(k);
		rc_nap_us(20);
	}
	return OOB_PASS;
}

/* ---------------------------------------------------------------------- */
/* Windows */

/* size bytes of zeroed memory, on the GPU when gpu, page-aligned (or as
 * cuMemAlloc aligns), or one byte past that when odd (a window at an odd
 * address). */
static int rc_win_make(struct rk *k, struct rc_win *w, size_t size, int odd,
		       int gpu)
{
	size_t len = size + (odd ? 1 : 0);
	char why[RC_WHY];

	memset(w, 0, sizeof(*w));
	if (gpu) {
		if (zsm_cuda_drv_alloc(&k->cu, len, &w->dp, why, sizeof(why)))
			return rc_fail(k, "a %zu-byte window in GPU memory: %s",
				       size, why);
		w->p = (unsigned char *)(uintptr_t)w->dp + (odd ? 1 : 0);
		w->size = size;
		return rc_win_set(k, w, 0, 0, size);
	}
	w->map = mmap(NULL, len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (w->map == MAP_FAILED) {
		w->map = NULL;
		return rc_fail(k, "out of memory for a %zu-byte window", size);
	}
	w->map_len = len;
	w->p = (unsigned char *)w->map + (odd ? 1 : 0);
	w->size = size;
	return OOB_PASS;
}

/* A window of the run's memory: GPU with --gpu, else host. */
static int rc_win_alloc(struct rk *k, struct rc_win *w, size_t size, int odd)
{
	return rc_win_make(k, w, size, odd, rc_o.gpu);
}

static void rc_win_free(struct rk *k, struct rc_win *w)
{
	char why[RC_WHY];

	if (w->map)
		munmap(w->map, w->map_len);
	/* Its registration is gone; a failure here changes no verdict. */
	if (w->dp)
		zsm_cuda_drv_free(&k->cu, w->dp, why, sizeof(why));
	memset(w, 0, sizeof(*w));
}

/* regMrSym, collective: host or GPU memory (NCCL_PTR_CUDA, as NCCL
 * registers GPU windows without dma-buf), flags as NCCL gives them
 * (3.3). */
static int rc_reg(struct rk *k, struct rc_comm *c, struct rc_win *w,
		  uint64_t flags, const char *what)
{
	int r;

	rc_doing(k, "regMrSym of %s", what);
	w->mh = NULL;
	r = rma_client_reg(&k->t, c->coll, w->p, w->size,
			   w->dp ? NCCL_PTR_CUDA : NCCL_PTR_HOST, flags, &w->mh);
	if (r != ncclSuccess)
		return rc_fail(k, "regMrSym of %s (%zu bytes of %s, mrFlags "
				  "0x%llx) returned %s",
			       what, w->size, rc_mem(w),
			       (unsigned long long)flags, rc_res(r));
	if (!w->mh)
		return rc_fail(k, "regMrSym of %s returned ncclSuccess and a "
				  "NULL mhandle",
			       what);
	if (c->nmh < (int)(sizeof(c->mh) / sizeof(c->mh[0])))
		c->mh[c->nmh++] = w->mh;
	return OOB_PASS;
}

/* deregMrSym of one window now (collective), forgotten for teardown. */
static int rc_dereg(struct rk *k, struct rc_comm *c, struct rc_win *w,
		    const char *what)
{
	int r;

	for (int i = 0; i < c->nmh; i++)
		if (c->mh[i] == w->mh)
			c->mh[i] = NULL;
	rc_doing(k, "deregMrSym of %s", what);
	r = k->t.dereg(c->coll, w->mh);
	w->mh = NULL;
	if (r != ncclSuccess)
		return rc_fail(k, "deregMrSym of %s returned %s", what,
			       rc_res(r));
	return OOB_PASS;
}

static int rc_ctx(struct rk *k, struct rc_comm *c, int ncontexts, void **out)
{
	int r;

	rc_doing(k, "createContext with %d contexts", ncontexts);
	*out = NULL;
	r = rma_client_create(&k->t, c->coll, ncontexts, out, NULL);
	if (r != ncclSuccess)
		return rc_fail(k, "createContext(nContexts %d) returned %s",
			       ncontexts, rc_res(r));
	if (c->nctx < 3)
		c->ctx[c->nctx++] = *out;
	return OOB_PASS;
}

/* ---------------------------------------------------------------------- */
/* Set-up and teardown, as NCCL's RMA proxy does them (3.3) */

/* Load, init twice, devices, properties (the host identity is set). */
static int rc_start(struct rk *k)
{
	char why[RC_WHY];
	int ndev = 0, r;

	rc_doing(k, "opening the CUDA driver");
	if (rc_o.gpu && rc_gpu_open(k, why, sizeof(why)))
		return rc_fail(k, "GPU %d: %s", rc_o.gpu_ord[k->rank % 2], why);
	rc_doing(k, "loading %s", rc_o.plugin);
	if (rma_client_open(&k->t, rc_o.plugin, rc_o.abi, why, sizeof(why)))
		return rc_fail(k, "%s", why);
	rc_doing(k, "init");
	/* NCCL: once for its RMA proxy's context, once more for its GIN
	 * proxy's, both per comm (3.3, 6.9). */
	r = k->t.init(&k->ctx_rma, RC_COMM_ID, zsm_client_logger);
	if (r != ncclSuccess)
		return rc_fail(k, "init returned %s", rc_res(r));
	k->inits = 1;
	r = k->t.init(&k->ctx_gin, RC_COMM_ID, zsm_client_logger);
	if (r != ncclSuccess)
		return rc_fail(k, "the second init (NCCL's GIN proxy's, 3.3) "
				  "returned %s",
			       rc_res(r));
	k->inits = 2;
	r = k->t.devices(&ndev);
	if (r != ncclSuccess || ndev <= rc_o.dev)
		return rc_fail(k, "devices returned %s and %d devices; device "
				  "%d asked for",
			       rc_res(r), ndev, rc_o.dev);
	memset(&k->props, 0xA5, sizeof(k->props));
	r = k->t.props(rc_o.dev, &k->props);
	if (r != ncclSuccess)
		return rc_fail(k, "getProperties(%d) returned %s", rc_o.dev,
			       rc_res(r));
	k->max_recvs = k->props.maxRecvs;
	if (k->max_recvs < 1 || k->max_recvs > RC_RECVS_MAX)
		return rc_fail(k, "maxRecvs %d outside [1, %d]: NCCL sizes "
				  "its RMA queues 32 x maxRecvs (1.4, 4.3)",
			       k->max_recvs, RC_RECVS_MAX);
	return OOB_PASS;
}

/*
 * listen on the RMA context, all-gather the handles, connect on ctx
 * (NCCL's RMA proxy passes its net plugin's context, 3.3), getProperties
 * again and closeListen: one collective comm in k->cm[k->ncomm].
 */
static int rc_connect(struct rk *k, void *ctx)
{
	_Alignas(64) char handles[RC_MAX_RANKS][NCCL_NET_HANDLE_MAXSIZE];
	void *hp[RC_MAX_RANKS], *listen = NULL;
	struct rc_comm *c = &k->cm[k->ncomm];
	ncclNetProperties_v12_t again;
	int r;

	rc_doing(k, "listen");
	memset(rc_sh->handles[k->rank], 0, NCCL_NET_HANDLE_MAXSIZE);
	r = k->t.listen(k->ctx_rma, rc_o.dev, rc_sh->handles[k->rank],
			&listen);
	if (r != ncclSuccess || !listen)
		return rc_fail(k, "listen returned %s and %s listenComm",
			       rc_res(r), listen ? "a" : "a NULL");
	RC_TRY(rc_barrier(k, "handles gathered"));
	/* Each rank gets its own copy of every handle, as from NCCL's
	 * all-gather. */
	memcpy(handles, rc_sh->handles, sizeof(handles));
	for (int i = 0; i < k->n; i++)
		hp[i] = handles[i];
	rc_doing(k, "connect (collective)");
	r = k->t.connect(ctx, hp, k->n, k->rank, listen, &c->coll);
	if (r != ncclSuccess || !c->coll)
		return rc_fail(k, "connect returned %s and %s collComm",
			       rc_res(r), c->coll ? "a" : "a NULL");
	k->ncomm++;
	r = k->t.props(rc_o.dev, &again);
	if (r != ncclSuccess)
		return rc_fail(k, "getProperties after connect returned %s",
			       rc_res(r));
	r = k->t.close_listen(listen);
	if (r != ncclSuccess)
		return rc_fail(k, "closeListen after connect returned %s",
			       rc_res(r));
	/* The handles' slots are free again once every rank connected. */
	return rc_barrier(k, "connected");
}

/* rc_start and one comm connected on the second init's context. */
static int rc_join(struct rk *k)
{
	RC_TRY(rc_start(k));
	return rc_connect(k, k->ctx_gin);
}

/*
 * Teardown in NCCL's order: deregMrSym, destroyContext, closeColl,
 * finalize each init's context.  strict: every call must succeed.
 */
static int rc_leave(struct rk *k, int strict)
{
	const char *bad = NULL;
	int res = 0;

	rc_doing(k, "teardown");
	for (int c = k->ncomm - 1; c >= 0; c--) {
		struct rc_comm *m = &k->cm[c];

		for (int i = m->nmh - 1; i >= 0; i--) {
			int r = m->mh[i] ? k->t.dereg(m->coll, m->mh[i]) : 0;

			if (r && !bad) {
				bad = "deregMrSym";
				res = r;
			}
		}
		for (int i = m->nctx - 1; i >= 0; i--) {
			int r = k->t.destroy(m->ctx[i]);

			if (r && !bad) {
				bad = "destroyContext";
				res = r;
			}
		}
		int r = k->t.close_coll(m->coll);

		if (r && !bad) {
			bad = "closeColl";
			res = r;
		}
	}
	k->ncomm = 0;
	for (int i = k->inits - 1; i >= 0; i--) {
		int r = k->t.finalize(i ? k->ctx_gin : k->ctx_rma);

		if (r && !bad) {
			bad = "finalize";
			res = r;
		}
	}
	k->inits = 0;
	rma_client_close(&k->t);
	free(k->rq);
	k->rq = NULL;
	k->rq_cap = 0;
	free(k->stage);
	k->stage = NULL;
	k->stage_len = 0;
	if (strict && bad)
		return rc_fail(k, "teardown: %s returned %s", bad, rc_res(res));
	if (strict && k->progress_res)
		return rc_fail(k, "rmaProgress returned %s on a healthy comm",
			       rc_res(k->progress_res));
	return OOB_PASS;
}

/* ---------------------------------------------------------------------- */
/* Checks' shared steps */

#define RC_SIG_FLAGS                                                           \
	(NCCL_NET_MR_FLAG_FORCE_SO | NCCL_NET_MR_FLAG_SIGNAL_NEVER_RESET)

/* The bytes at p hold only the guard byte: -1, or the first that differs. */
static long rc_guard_check(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != RC_GUARD)
			return (long)i;
	return -1;
}

/*
 * len bytes at p must be seed's pattern and the RC_GUARD_LEN bytes on
 * each side the guard byte.  what names the transfer.
 */
static int rc_bytes_check(const struct rk *k, const unsigned char *p,
			  size_t len, uint32_t seed, const char *what)
{
	long bad = zsm_pattern_check(p, len, seed);

	if (bad >= 0)
		return rc_fail(k, "%s: byte %ld of %zu is not the byte sent "
				  "(%s)",
			       what, bad, len,
			       p[bad] == RC_GUARD ? "never written"
						  : "other data");
	bad = rc_guard_check(p - RC_GUARD_LEN, RC_GUARD_LEN);
	if (bad >= 0)
		return rc_fail(k, "%s: byte %ld before the %zu-byte range was "
				  "written",
			       what, RC_GUARD_LEN - bad, len);
	bad = rc_guard_check(p + len, RC_GUARD_LEN);
	if (bad >= 0)
		return rc_fail(k, "%s: byte %ld past the end of the %zu-byte "
				  "range was written",
			       what, bad, len);
	return OOB_PASS;
}

/*
 * Every rank puts len bytes of its pattern (seed + its rank) from src at
 * src_off to every peer's dst at dst_off + rank * len, each with a strong
 * ADD 1 into the peer's sig word (slot + rank), then waits for every
 * peer's word to reach expect and checks the bytes that peer put; a
 * barrier ends the round.  len 0: the signal alone, NULL src and dst
 * handles (3.3, 6.11).
 */
static int rc_exchange(struct rk *k, struct rc_comm *c, void *ctx,
		       int context, const struct rc_win *src,
		       uint64_t src_off, const struct rc_win *dst,
		       uint64_t dst_off, size_t len, const struct rc_win *sig,
		       int slot, uint64_t expect, uint32_t seed,
		       const char *what)
{
	struct rc_sig sg = { (uint64_t)(slot + k->rank) * 8, sig->mh, 1,
			     NCCL_NET_SIGNAL_OP_ADD };

	if (len)
		RC_TRY(rc_win_fill(k, src, src_off, len,
				   seed + (uint32_t)k->rank));
	for (int q = 0; q < k->n; q++) {
		if (q == k->rank)
			continue;
		rc_doing(k, "%s: put to rank %d", what, q);
		RC_TRY(rc_put(k, c, ctx, context, src_off,
			      len ? src->mh : NULL, len,
			      dst_off + (uint64_t)k->rank * len,
			      len ? dst->mh : NULL, q, &sg, NULL));
	}
	RC_TRY(rc_wait_all(k, what));
	for (int q = 0; q < k->n; q++) {
		const size_t w = (size_t)(slot + q) * 8;
		const unsigned char *b;
		uint64_t v;

		if (q == k->rank)
			continue;
		RC_TRY(rc_wait_sig(k, sig, w, expect, what, q));
		RC_TRY(rc_sig_read(k, sig, w, &v));
		if (v != expect)
			return rc_fail(k, "%s: rank %d's signal word is %llu, "
					  "want %llu (each ADD 1 applied once)",
				       what, q, (unsigned long long)v,
				       (unsigned long long)expect);
		if (!len)
			continue;
		RC_TRY(rc_win_view(k, dst, dst_off + (size_t)q * len, len, &b));
		long bad = zsm_pattern_check(b, len, seed + (uint32_t)q);

		if (bad >= 0)
			return rc_fail(k, "%s: byte %ld of the %zu rank %d put "
					  "differs though its strong signal "
					  "came (3.3 data operations)",
				       what, bad, len, q);
	}
	return rc_barrier(k, what);
}

/* ---------------------------------------------------------------------- */
/* rma_init_connect */

static int rc_check_init_connect(struct rk *k)
{
	/* Stands for NCCL's net plugin's context, which its RMA proxy gives
	 * connect (3.3): memory the plugin under test never handed out. */
	static unsigned char foreign[256];
	static const char *const how[2] = {
		"the comm connected on the second init's context",
		"the comm connected on a context the plugin never made",
	};
	struct rc_win win[2], sig[2];
	const size_t len = 64;

	memset(foreign, 0x5A, sizeof(foreign));
	RC_TRY(rc_start(k));
	if (k->props.netDeviceType != NCCL_NET_DEVICE_GIN_PROXY)
		return rc_fail(k, "getProperties(%d): netDeviceType %d, want "
				  "GIN_PROXY (2): NCCL's v13 loader refuses "
				  "anything else and v14 then leaves "
				  "multi-node RMA off (3.1, 6.4)",
			       rc_o.dev, k->props.netDeviceType);
	if (!(k->props.ptrSupport & NCCL_PTR_HOST))
		return rc_fail(k, "getProperties(%d): ptrSupport 0x%x lacks "
				  "NCCL_PTR_HOST: NCCL's GIN proxy registers a "
				  "host buffer for inline values (3.3 "
				  "registration)",
			       rc_o.dev, (unsigned)k->props.ptrSupport);
	RC_TRY(rc_connect(k, k->ctx_gin));
	RC_TRY(rc_connect(k, foreign));
	for (int i = 0; i < 2; i++) {
		struct rc_comm *c = &k->cm[i];
		void *ctx;

		RC_TRY(rc_ctx(k, c, 1, &ctx));
		RC_TRY(rc_win_alloc(k, &win[i], len * (size_t)(k->n + 1), 0));
		RC_TRY(rc_win_alloc(k, &sig[i], 8 * (size_t)(k->n + 1), 0));
		RC_TRY(rc_reg(k, c, &sig[i], RC_SIG_FLAGS,
			      "the signal buffer"));
		RC_TRY(rc_reg(k, c, &win[i], 0, "a data window"));
		RC_TRY(rc_exchange(k, c, ctx, 0, &win[i], 0, &win[i], len, len,
				   &sig[i], 0, 1, 10 + 10 * (uint32_t)i,
				   how[i]));
	}
	RC_TRY(rc_leave(k, 1));
	for (int i = 0; i < 2; i++) {
		rc_win_free(k, &win[i]);
		rc_win_free(k, &sig[i]);
	}
	if (k->rank == 0)
		rc_note(k, "init twice; 2 comms of %d ranks, connected on "
			   "another context than listen's; maxRecvs %d, "
			   "ptrSupport 0x%x",
			k->n, k->max_recvs, (unsigned)k->props.ptrSupport);
	return OOB_PASS;
}

/* ---------------------------------------------------------------------- */
/* rma_register */

static int rc_check_register(struct rk *k)
{
	enum { SIG, GSIG, FLUSH, INL, W1, W2, W3, NWIN };
	static const char *const what[NWIN] = {
		"the signal buffer (FORCE_SO|SIGNAL_NEVER_RESET)",
		"graph mode's signal buffer (FORCE_SO)",
		"graph mode's flush buffer (FORCE_SO)",
		"the GIN proxy's inline-value buffer",
		"a 1 MiB data window",
		"a 4099-byte data window at an odd address",
		"a small data window",
	};
	const size_t n = (size_t)k->n;
	const size_t size[NWIN] = { 8 * (n + 1), 8 * (n + 1), 64, 4096,
				    1u << 20, 4099, 8 * (n + 1) };
	const uint64_t flags[NWIN] = { RC_SIG_FLAGS, NCCL_NET_MR_FLAG_FORCE_SO,
				       NCCL_NET_MR_FLAG_FORCE_SO, 0, 0, 0, 0 };
	/* Per data window: source offset, destination offset, bytes. */
	static const size_t plan[][4] = {
		{ INL, 0, 16, 16 },
		{ W1, 0, 4096 + 5, 4096 },
		{ W2, 1, 67, 64 },
		{ W3, 0, 8, 8 },
	};
	struct rc_win w[NWIN], w4;
	struct rc_comm *c = &k->cm[0];
	uint64_t round = 0;
	void *ctx;

	RC_TRY(rc_join(k));
	RC_TRY(rc_ctx(k, c, 1, &ctx));
	/* NCCL's order (3.3): the proxy context's signals, graph mode's
	 * signals and flush buffer, the GIN proxy's inline values, then the
	 * user's windows, flags 0.  The inline values are host memory
	 * even when the rest is GPU memory (3.3 registration). */
	for (int i = 0; i < NWIN; i++) {
		RC_TRY(rc_win_make(k, &w[i], size[i], i == W2,
				   rc_o.gpu && i != INL));
		RC_TRY(rc_reg(k, c, &w[i], flags[i], what[i]));
	}
	for (int i = 0; i < NWIN; i++)
		for (int j = 0; j < i; j++)
			if (w[i].mh == w[j].mh)
				return rc_fail(k, "regMrSym returned one "
						  "mhandle for %s and %s",
					       what[j], what[i]);
	/* Each window's handle must reach every peer's copy (3.3). */
	for (size_t p = 0; p < sizeof(plan) / sizeof(plan[0]); p++) {
		struct rc_win *x = &w[plan[p][0]];

		RC_TRY(rc_exchange(k, c, ctx, 0, x, plan[p][1], x, plan[p][2],
				   plan[p][3], &w[SIG], 0, ++round,
				   100 + 10 * (uint32_t)p, what[plan[p][0]]));
	}
	RC_TRY(rc_exchange(k, c, ctx, 0, NULL, 0, NULL, 0, 0, &w[GSIG], 0, 1,
			   0, "a signal alone into graph mode's buffer"));
	/* Deregistered out of registration order, then one more window. */
	RC_TRY(rc_dereg(k, c, &w[W2], what[W2]));
	RC_TRY(rc_dereg(k, c, &w[W1], what[W1]));
	RC_TRY(rc_win_alloc(k, &w4, (2u << 20) + 1, 0));
	RC_TRY(rc_reg(k, c, &w4, 0, "a window registered after two went"));
	RC_TRY(rc_exchange(k, c, ctx, 0, &w4, 3, &w4, 5003, 5000, &w[SIG], 0,
			   ++round, 200, "a window registered after two went"));
	RC_TRY(rc_leave(k, 1));
	for (int i = 0; i < NWIN; i++)
		rc_win_free(k, &w[i]);
	rc_win_free(k, &w4);
	if (k->rank == 0)
		rc_note(k, "%d registrations in NCCL's order and flags, each "
			   "reaching every peer's copy; 2 deregistered out of "
			   "order, 1 more registered",
			NWIN);
	return OOB_PASS;
}

/* ---------------------------------------------------------------------- */
/* rma_put_get */

static const size_t rc_pg_sizes[] = { 0, 1, 7, 4096 + 3, (1u << 20) + 5,
				      64u << 20 };

/* A get of size bytes at remote_off of peer's copy into local_off, then
 * iflush as NCCL's GIN proxy does before reading (3.3). */
/* *refused: another plugin's refusal of a get from GPU memory (its
 * result), which is no failure: NCCL's RMA proxy makes no gets.  zsm
 * does them, and a refusal fails. */
static int rc_get(struct rk *k, struct rc_comm *c, void *ctx,
		  const struct rc_win *w, uint64_t remote_off,
		  uint64_t local_off, size_t size, int peer, int *refused)
{
	void *req = NULL;
	int r, s;

	rc_doing(k, "iget of %zu bytes from rank %d", size, peer);
	r = k->t.iget(ctx, 0, remote_off, w->mh, size, local_off, w->mh,
		      (uint32_t)peer, &req);
	if (r != ncclSuccess && w->dp && strcmp(rc_sh->name, "zsm")) {
		*refused = r;
		return OOB_PASS;
	}
	if (r != ncclSuccess || !req)
		return rc_fail(k, "iget of %zu bytes from rank %d returned %s "
				  "and %s request",
			       size, peer, rc_res(r), req ? "a" : "no");
	s = rc_track(k, c->coll, req, peer);
	if (s < 0)
		return rc_fail(k, "out of memory for requests");
	RC_TRY(rc_wait_all(k, "iget"));
	if (!k->t.iflush)
		return OOB_PASS;
	req = NULL;
	r = k->t.iflush(ctx, 0, w->mh, (uint32_t)peer, &req);
	if (r != ncclSuccess)
		return rc_fail(k, "iflush after a get from rank %d returned %s",
			       peer, rc_res(r));
	/* A NULL request: nothing to wait for (3.2 iflush). */
	if (req && rc_track(k, c->coll, req, peer) < 0)
		return rc_fail(k, "out of memory for requests");
	return rc_wait_all(k, "iflush");
}

static int rc_check_put_get(struct rk *k)
{
	const size_t G = RC_GUARD_LEN, max = rc_o.max_size;
	/* A region: guard, the largest transfer and a few odd bytes, guard. */
	const size_t region = (G + max + 16 + G + 7) / 8 * 8;
	const int me = k->rank, to = (me + 1) % k->n,
		  from = (me + k->n - 1) % k->n;
	/* Odd offsets everywhere; the get lands 2 bytes off the source. */
	const uint64_t src_off = G + 3, get_off = G + 1,
		       dst_off = region + G + 5;
	struct rc_comm *c = &k->cm[0];
	struct rc_win w, sig;
	size_t sizes[8], nsizes = 0;
	const unsigned char *v;
	char what[96];
	int refused = 0;
	void *ctx;

	for (size_t i = 0; i < sizeof(rc_pg_sizes) / sizeof(rc_pg_sizes[0]);
	     i++)
		if (rc_pg_sizes[i] <= max)
			sizes[nsizes++] = rc_pg_sizes[i];
	if (sizes[nsizes - 1] < max)
		sizes[nsizes++] = max;
	RC_TRY(rc_join(k));
	RC_TRY(rc_ctx(k, c, 1, &ctx));
	RC_TRY(rc_win_alloc(k, &sig, 8 * (size_t)(k->n + 1), 0));
	RC_TRY(rc_win_alloc(k, &w, 2 * region, 0));
	RC_TRY(rc_reg(k, c, &sig, RC_SIG_FLAGS, "the signal buffer"));
	RC_TRY(rc_reg(k, c, &w, 0, "the data window"));
	for (size_t i = 0; i < nsizes; i++) {
		const size_t s = sizes[i];
		const uint32_t seed = 1000u * (uint32_t)me + (uint32_t)i + 1;
		struct rc_sig sg = { (uint64_t)me * 8, sig.mh, 1,
				     NCCL_NET_SIGNAL_OP_ADD };

		snprintf(what, sizeof(what), "put of %zu bytes", s);
		/* 1 s more per 16 MiB, as the catalog's data_sizes. */
		k->slack_ms = (long)(s >> 24) * 1000L * rc_o.scale;
		rc_doing(k, "%s: filling", what);
		RC_TRY(rc_win_set(k, &w, dst_off - G, RC_GUARD, s + 2 * G));
		RC_TRY(rc_win_fill(k, &w, src_off, s, seed));
		RC_TRY(rc_barrier(k, what));
		/* Bundled with its signal, or a plain put and then a signal
		 * alone, whose strong ordering covers the put (3.3). */
		if (i % 2 == 0) {
			RC_TRY(rc_put(k, c, ctx, 0, src_off, w.mh, s, dst_off,
				      w.mh, to, &sg, NULL));
		} else {
			RC_TRY(rc_put(k, c, ctx, 0, src_off, w.mh, s, dst_off,
				      w.mh, to, NULL, NULL));
			RC_TRY(rc_put(k, c, ctx, 0, 0, NULL, 0, 0, NULL, to,
				      &sg, NULL));
		}
		RC_TRY(rc_wait_all(k, what));
		RC_TRY(rc_wait_sig(k, &sig, (size_t)from * 8, i + 1, what,
				   from));
		snprintf(what, sizeof(what), "%s put of %zu bytes from rank %d",
			 i % 2 ? "a plain" : "a bundled", s, from);
		rc_doing(k, "checking %s", what);
		RC_TRY(rc_win_view(k, &w, dst_off - G, s + 2 * G, &v));
		RC_TRY(rc_bytes_check(k, v + G, s,
				      1000u * (uint32_t)from + (uint32_t)i + 1,
				      what));
		snprintf(what, sizeof(what), "get of %zu bytes", s);
		RC_TRY(rc_barrier(k, what));
		if (!k->t.iget)
			continue;
		/* Our own bytes back from the next rank's copy; once refused
		 * (GPU windows), no more gets, but the barriers all the
		 * same. */
		if (!refused) {
			RC_TRY(rc_win_set(k, &w, get_off - G, RC_GUARD,
					  s + 2 * G));
			RC_TRY(rc_get(k, c, ctx, &w, dst_off, get_off, s, to,
				      &refused));
		}
		if (!refused) {
			snprintf(what, sizeof(what),
				 "a get of %zu bytes from rank %d", s, to);
			RC_TRY(rc_win_view(k, &w, get_off - G, s + 2 * G, &v));
			RC_TRY(rc_bytes_check(k, v + G, s, seed, what));
		}
		RC_TRY(rc_barrier(k, "gets checked"));
	}
	const char *mem = rc_mem(&w);

	RC_TRY(rc_leave(k, 1));
	rc_win_free(k, &w);
	rc_win_free(k, &sig);
	if (refused)
		return rc_skip(k, "puts of %zu sizes up to %zu bytes in %s "
				  "passed; gets not checked: iget from %s "
				  "returned %s (the plugin refuses them there)",
			       nsizes, max, mem, mem, rc_res(refused));
	if (k->rank == 0)
		rc_note(k, "%zu sizes from 0 to %zu bytes around a ring of %d "
			   "ranks, odd offsets, in %s, %s",
			nsizes, max, k->n, mem,
			k->t.iget ? "put and got back"
				  : "put (iget is NULL: optional, 3.2)");
	return OOB_PASS;
}

/* ---------------------------------------------------------------------- */
/* rma_signal_order */

/*
 * Every rank writes to every peer a stream of steps: step j is a plain
 * put of a block stamped with j, then an iputSignal whose bundled 8-byte
 * put is j and whose strong signal adds 1 (INC and ADD in turn) to the
 * peer's word for this writer.  The reader, seeing its word for a writer
 * at s (an acquire load, as NCCL's waits read signals), checks steps up
 * to s: each block and header must be there, as a strong signal promises
 * for its put and every earlier one on the context (3.3).  Each side
 * holds SO_SLOTS steps of a peer in a ring; the writer reuses a slot only
 * once the reader said, on the shared page, that it checked the step
 * there, so every byte found is exactly its step's or a violation.
 */
#define SO_SLOTS 64
#define SO_BIG (65536 + 24)
#define SO_SLOT (8 + SO_BIG)

static size_t so_size(uint64_t j)
{
	static const size_t small[] = { 8, 48, 264, 1032 };

	/* Now and then a large block: providers move those another way (a
	 * rendezvous), which must not overtake the signal either. */
	return j % 61 == 0 ? SO_BIG : small[j % 4];
}

static uint64_t so_word(int writer, int reader, uint64_t j, size_t i)
{
	return j * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)writer << 56) ^
	       ((uint64_t)reader << 48) ^ i;
}

struct so_peer {
	uint64_t posted, done; /* steps this rank wrote to the peer */
	int rq[SO_SLOTS][2];   /* tracker slots of step j at j % SO_SLOTS */
	uint64_t seen;	       /* steps of the peer this rank checked */
	uint64_t violations;
};

struct so_run {
	struct rc_comm *c;
	void *ctx;
	struct rc_win src, dst, sig;
	uint64_t count;	 /* steps per writer and reader */
	uint64_t window; /* steps in flight per peer */
	struct so_peer p[RC_MAX_RANKS];
	char first[RC_WHY]; /* the first violation, said */
	unsigned char step[SO_SLOT]; /* a step, made here, then written */
};

static uint64_t so_load64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Post step posted + 1 to peer q if its slots are free: 1 posted, 0 not
 * yet, else a failure status (negated). */
static int so_post(struct rk *k, struct so_run *r, int q)
{
	struct so_peer *p = &r->p[q];
	const uint64_t j = p->posted + 1;
	const size_t ring = (size_t)(j % SO_SLOTS) * SO_SLOT;
	const size_t sb = (size_t)q * SO_SLOTS * SO_SLOT + ring;
	const size_t db = (size_t)k->rank * SO_SLOTS * SO_SLOT + ring;
	const size_t size = so_size(j);
	struct rc_sig sg = { (uint64_t)k->rank * 8, r->sig.mh, 1,
			     j % 2 ? NCCL_NET_SIGNAL_OP_INC
				   : NCCL_NET_SIGNAL_OP_ADD };
	uint64_t acked;

	if (j > r->count || j - p->done > r->window)
		return 0;
	/* acquire: pairs with the reader's release store once it checked
	 * step j - SO_SLOTS, which lived in this slot. */
	acked = atomic_load_explicit(&rc_sh->acked[q][k->rank],
				     memory_order_acquire);
	if (j > acked + SO_SLOTS)
		return 0;
	memcpy(r->step, &j, sizeof(j));
	for (size_t i = 0; i < size / 8; i++) {
		uint64_t v = so_word(k->rank, q, j, i);

		memcpy(r->step + 8 + i * 8, &v, sizeof(v));
	}
	if (rc_win_write(k, &r->src, sb, r->step, 8 + size))
		return -OOB_FAIL;
	if (rc_put(k, r->c, r->ctx, 0, sb + 8, r->src.mh, size, db + 8,
		   r->dst.mh, q, NULL, &p->rq[j % SO_SLOTS][0]) ||
	    rc_put(k, r->c, r->ctx, 0, sb, r->src.mh, 8, db, r->dst.mh, q, &sg,
		   &p->rq[j % SO_SLOTS][1]))
		return -OOB_FAIL;
	p->posted = j;
	return 1;
}

/* Retire peer q's finished steps, oldest first, as NCCL's proxy does:
 * how many, or a failure status (negated). */
static int so_retire(struct rk *k, struct so_run *r, int q)
{
	struct so_peer *p = &r->p[q];
	int n = 0;

	while (p->done < p->posted) {
		int *s = p->rq[(p->done + 1) % SO_SLOTS];

		for (int i = 0; i < 2; i++) {
			rc_test_one(k, s[i]);
			if (k->rq[s[i]].state == RQ_ERROR) {
				rc_fail(k, "step %llu to rank %d: test of its "
					   "%s returned %s",
					(unsigned long long)p->done + 1, q,
					i ? "iputSignal" : "iput",
					rc_res(k->rq[s[i]].res));
				return -OOB_FAIL;
			}
		}
		if (k->rq[s[0]].state != RQ_DONE ||
		    k->rq[s[1]].state != RQ_DONE)
			break;
		k->rq[s[0]].state = k->rq[s[1]].state = RQ_FREE;
		p->done++;
		n++;
	}
	return n;
}

/* Check writer w's steps its signal word now covers: how many, or a
 * failure status (negated). */
static int so_read(struct rk *k, struct so_run *r, int w)
{
	struct so_peer *p = &r->p[w];
	uint64_t s;
	int n = 0;

	if (rc_sig_read(k, &r->sig, (size_t)w * 8, &s))
		return -OOB_FAIL;
	if (s > r->count) {
		rc_fail(k, "rank %d's signal word is %llu, past the %llu "
			   "signals it sends",
			w, (unsigned long long)s, (unsigned long long)r->count);
		return -OOB_FAIL;
	}
	while (p->seen < s) {
		const uint64_t j = ++p->seen;
		const size_t words = so_size(j) / 8;
		const unsigned char *b;
		size_t i = 0;

		if (rc_win_view(k, &r->dst,
				((size_t)w * SO_SLOTS + j % SO_SLOTS) * SO_SLOT,
				8 + words * 8, &b))
			return -OOB_FAIL;
		const uint64_t hdr = so_load64(b);

		while (i < words &&
		       so_load64(b + 8 + i * 8) == so_word(w, k->rank, j, i))
			i++;
		n++;
		if (hdr == j && i == words)
			continue;
		if (p->violations++ || r->first[0])
			continue;
		snprintf(r->first, sizeof(r->first),
			 "step %llu from rank %d: its signal word read %llu "
			 "but %s (header %llu; block word %zu of %zu differs)",
			 (unsigned long long)j, w, (unsigned long long)s,
			 hdr != j ? "the 8 bytes put with that signal are not "
				    "there"
				  : "the block put before it is not all there",
			 (unsigned long long)hdr, i, words);
	}
	if (n)
		/* release: this rank's reads of the slots come before the
		 * writer reuses them; pairs with so_post's acquire load. */
		atomic_store_explicit(&rc_sh->acked[k->rank][w], p->seen,
				      memory_order_release);
	return n;
}

static int so_loop(struct rk *k, struct so_run *r)
{
	uint64_t last = zsm_client_now_ns();

	for (;;) {
		int moved = 0, finished = 1;

		for (int q = 0; q < k->n; q++) {
			struct so_peer *p = &r->p[q];
			int m;

			if (q == k->rank)
				continue;
			while ((m = so_post(k, r, q)) == 1)
				moved++;
			if (m < 0)
				return -m;
			if ((m = so_retire(k, r, q)) < 0)
				return -m;
			moved += m;
			if ((m = so_read(k, r, q)) < 0)
				return -m;
			moved += m;
			finished &= p->done == r->count &&
				    p->seen == r->count;
		}
		for (int i = 0; k->t.progress && i < r->c->nctx; i++)
			k->t.progress(r->c->ctx[i]);
		if (finished)
			return OOB_PASS;
		if (moved) {
			last = zsm_client_now_ns();
			continue;
		}
		if (rc_stopped(k, "the signal stream"))
			return OOB_FAIL;
		if (rc_ms_since(last) > RC_STEP_MS) {
			for (int q = 0; q < k->n; q++)
				if (q != k->rank &&
				    (r->p[q].seen < r->count ||
				     r->p[q].done < r->count))
					return rc_fail(
						k, "nothing moved for %ld ms: "
						   "rank %d's signals seen "
						   "%llu of %llu; steps to it "
						   "posted %llu, done %llu",
						RC_STEP_MS, q,
						(unsigned long long)r->p[q].seen,
						(unsigned long long)r->count,
						(unsigned long long)r->p[q]
							.posted,
						(unsigned long long)r->p[q].done);
		}
		rc_nap_us(5);
	}
}

static int rc_check_signal_order(struct rk *k)
{
	const size_t ring = (size_t)k->n * SO_SLOTS * SO_SLOT;
	const uint64_t pairs = (uint64_t)k->n * (uint64_t)(k->n - 1);
	struct so_run *r = calloc(1, sizeof(*r));
	uint64_t checked = 0, bad = 0;
	int credits;

	if (!r)
		return rc_fail(k, "out of memory");
	r->c = &k->cm[0];
	r->count = ((uint64_t)rc_o.signals + pairs - 1) / pairs;
	RC_TRY(rc_join(k));
	/* Two requests a step; NCCL's credits are 32 x maxRecvs a peer. */
	credits = RC_NCCL_REQUESTS * k->max_recvs / 2;
	r->window = credits < SO_SLOTS ? (uint64_t)credits : SO_SLOTS;
	RC_TRY(rc_ctx(k, r->c, 1, &r->ctx));
	RC_TRY(rc_win_alloc(k, &r->sig, 8 * (size_t)(k->n + 1), 0));
	RC_TRY(rc_win_alloc(k, &r->src, ring, 0));
	RC_TRY(rc_win_alloc(k, &r->dst, ring, 0));
	RC_TRY(rc_reg(k, r->c, &r->sig, RC_SIG_FLAGS, "the signal buffer"));
	RC_TRY(rc_reg(k, r->c, &r->src, 0, "the source window"));
	RC_TRY(rc_reg(k, r->c, &r->dst, 0, "the block window"));
	RC_TRY(rc_barrier(k, "stream ready"));
	rc_doing(k, "streaming %llu steps to and from each peer",
		 (unsigned long long)r->count);
	RC_TRY(so_loop(k, r));
	for (int q = 0; q < k->n; q++) {
		checked += r->p[q].seen;
		bad += r->p[q].violations;
	}
	rc_sh->checked[k->rank] = checked;
	rc_sh->violations[k->rank] = bad;
	if (bad)
		return rc_fail(k, "%llu of the %llu strong signals it read came "
				  "before the bytes they cover; first: %s "
				  "(3.3 data operations)",
			       (unsigned long long)bad,
			       (unsigned long long)checked, r->first);
	RC_TRY(rc_barrier(k, "stream checked"));
	RC_TRY(rc_leave(k, 1));
	rc_win_free(k, &r->src);
	rc_win_free(k, &r->dst);
	rc_win_free(k, &r->sig);
	free(r);
	return OOB_PASS;
}

/* ---------------------------------------------------------------------- */
/* rma_signal_only */

static int rc_check_signal_only(struct rk *k)
{
	enum { INCS = 5, ADDS = 32 };
	/* Past 32 bits, so a 32-bit add shows; INC's value must be ignored. */
	const uint64_t big = 0x100000001ULL, inc_value = 7, agg_add = 3;
	const uint64_t want = INCS + big,
		       want_agg = agg_add * ADDS * (uint64_t)(k->n - 1);
	const size_t agg = (size_t)k->n * 8;
	struct rc_comm *c = &k->cm[0];
	struct rc_win sig;
	void *ctx;

	RC_TRY(rc_join(k));
	RC_TRY(rc_ctx(k, c, 1, &ctx));
	RC_TRY(rc_win_alloc(k, &sig, 8 * (size_t)(k->n + 1), 0));
	RC_TRY(rc_reg(k, c, &sig, RC_SIG_FLAGS, "the signal buffer"));
	for (int q = 0; q < k->n; q++) {
		struct rc_sig inc = { (uint64_t)k->rank * 8, sig.mh, inc_value,
				      NCCL_NET_SIGNAL_OP_INC };
		struct rc_sig add = { (uint64_t)k->rank * 8, sig.mh, big,
				      NCCL_NET_SIGNAL_OP_ADD };
		struct rc_sig shared = { agg, sig.mh, agg_add,
					 NCCL_NET_SIGNAL_OP_ADD };

		if (q == k->rank)
			continue;
		rc_doing(k, "signals alone to rank %d", q);
		/* size 0, NULL source and destination handles (3.3, 6.11). */
		for (int i = 0; i < INCS; i++)
			RC_TRY(rc_put(k, c, ctx, 0, 0, NULL, 0, 0, NULL, q, &inc,
				      NULL));
		RC_TRY(rc_put(k, c, ctx, 0, 0, NULL, 0, 0, NULL, q, &add,
			      NULL));
		for (int i = 0; i < ADDS; i++)
			RC_TRY(rc_put(k, c, ctx, 0, 0, NULL, 0, 0, NULL, q,
				      &shared, NULL));
	}
	RC_TRY(rc_wait_all(k, "signals alone"));
	for (int q = 0; q < k->n; q++)
		if (q != k->rank)
			RC_TRY(rc_wait_sig(k, &sig, (size_t)q * 8, want,
					   "5 INC and one ADD", q));
	RC_TRY(rc_wait_sig(k, &sig, agg, want_agg,
			   "the word every peer adds 3 into", -1));
	RC_TRY(rc_barrier(k, "signals arrived"));
	for (int q = 0; q < k->n; q++) {
		uint64_t v;

		RC_TRY(rc_sig_read(k, &sig, (size_t)q * 8, &v));
		if (q == k->rank && v)
			return rc_fail(k, "the word no rank signals is %llu",
				       (unsigned long long)v);
		if (q != k->rank && v != want)
			return rc_fail(k, "rank %d's word is %llu, want %llu: "
					  "%d INC (signalValue %llu, which INC "
					  "ignores) and one ADD of %#llx; INC "
					  "adds 1, ADD adds signalValue (3.3)",
				       q, (unsigned long long)v,
				       (unsigned long long)want, INCS,
				       (unsigned long long)inc_value,
				       (unsigned long long)big);
	}
	uint64_t v;

	RC_TRY(rc_sig_read(k, &sig, agg, &v));
	if (v != want_agg)
		return rc_fail(k, "the word %d peers each ADD 3 into %d times "
				  "is %llu, want %llu: adds lost or doubled "
				  "(6.11: shared signals need atomic adds)",
			       k->n - 1, ADDS, (unsigned long long)v,
			       (unsigned long long)want_agg);
	RC_TRY(rc_leave(k, 1));
	rc_win_free(k, &sig);
	if (k->rank == 0)
		rc_note(k, "%d signals alone to each peer, exact: INC adds 1, "
			   "ADD its value, concurrent ADDs into one word",
			INCS + 1 + ADDS);
	return OOB_PASS;
}

/* ---------------------------------------------------------------------- */
/* rma_contexts */

static int rc_check_contexts(struct rk *k)
{
	enum { A0, A1, B0, KINDS };
	static const char *const kind[KINDS] = {
		"context 0 of a 2-context rmaCtx", "context 1 of it",
		"a second rmaCtx's context 0" };
	const size_t unit = 256, n = (size_t)k->n;
	const int me = k->rank, to = (me + 1) % k->n,
		  from = (me + k->n - 1) % k->n;
	/* Window: sources, then round 1's slots, then round 2's runs. */
	const size_t p1 = KINDS * unit, p2 = p1 + KINDS * n * unit;
	struct rc_comm *c = &k->cm[0];
	struct rc_win w, sig;
	void *ctx[KINDS];
	int *slots;
	int pending0 = 0, q;

	RC_TRY(rc_join(k));
	q = RC_NCCL_REQUESTS * k->max_recvs;
	RC_TRY(rc_ctx(k, c, 2, &ctx[A0]));
	ctx[A1] = ctx[A0];
	RC_TRY(rc_ctx(k, c, 1, &ctx[B0]));
	RC_TRY(rc_win_alloc(k, &sig, 8 * (3 * n + KINDS), 0));
	RC_TRY(rc_win_alloc(k, &w, p2 + KINDS * (size_t)q * unit, 0));
	RC_TRY(rc_reg(k, c, &sig, RC_SIG_FLAGS, "the signal buffer"));
	RC_TRY(rc_reg(k, c, &w, 0, "the data window"));
	/* Round 1: traffic on each, checked. */
	for (int i = 0; i < KINDS; i++)
		RC_TRY(rc_exchange(k, c, ctx[i], i == A1, &w, (size_t)i * unit,
				   &w, p1 + (size_t)i * n * unit, unit, &sig,
				   i * k->n, 1, 300 + 10 * (uint32_t)i,
				   kind[i]));
	/*
	 * Round 2: q = 32 x maxRecvs requests to the next rank on context 0,
	 * left untested; then one put and signal on context 1, and q on the
	 * second rmaCtx, whose credits NCCL counts apart (3.3): each must be
	 * taken and complete while context 0's are outstanding.
	 */
	int count[KINDS] = { q, 1, q };

	slots = calloc((size_t)KINDS * (size_t)q, sizeof(*slots));
	if (!slots)
		return rc_fail(k, "out of memory");
	for (int i = 0; i < KINDS; i++) {
		struct rc_sig sg = { (3 * n + (size_t)i) * 8, sig.mh, 1,
				     NCCL_NET_SIGNAL_OP_ADD };

		RC_TRY(rc_win_fill(k, &w, (size_t)i * unit, unit,
				   400 + 10 * (uint32_t)me + (uint32_t)i));
		rc_doing(k, "%d requests on %s", count[i], kind[i]);
		for (int j = 0; j < count[i]; j++) {
			const int last = j == count[i] - 1;
			void *req;
			int r = rc_put_call(
				k, ctx[i], i == A1, (size_t)i * unit, w.mh,
				unit,
				p2 + ((size_t)i * (size_t)q + (size_t)j) * unit,
				w.mh, to, last ? &sg : NULL, &req);

			if (r != ncclSuccess || !req)
				return rc_fail(
					k, "%s %d of %d on %s to rank %d "
					   "returned %s and %s request while "
					   "the %d on %s were outstanding: %s",
					last ? "iputSignal" : "iput", j + 1,
					count[i], kind[i], to, rc_res(r),
					req ? "a" : "no", q, kind[A0],
					i == A1 ? "a context's work waits for "
						  "another's (3.3 contexts)"
						: "NCCL keeps 32 x maxRecvs in "
						  "flight per peer on each "
						  "proxy context (3.3 data "
						  "operations, 6.7)");
			slots[i * q + j] = rc_track(k, c->coll, req, to);
			if (slots[i * q + j] < 0)
				return rc_fail(k, "out of memory");
		}
	}
	uint64_t t0 = zsm_client_now_ns();

	rc_doing(k, "testing only the other contexts' requests");
	for (;;) {
		int left = 0;

		for (int i = A1; i < KINDS; i++)
			for (int j = 0; j < count[i]; j++) {
				struct rc_rq *x = &k->rq[slots[i * q + j]];

				rc_test_one(k, slots[i * q + j]);
				left += x->state == RQ_PENDING;
				if (x->state == RQ_ERROR)
					return rc_fail(k, "a request on %s "
							  "returned %s",
						       kind[i], rc_res(x->res));
			}
		if (!left)
			break;
		if (rc_stopped(k, "the other contexts"))
			return OOB_FAIL;
		if (rc_ms_since(t0) > RC_STEP_MS)
			return rc_fail(k, "%d of the %d requests on %s and %s "
					  "not done after %ld ms while the %d "
					  "on %s were outstanding and "
					  "untested: a context's work waits "
					  "for another's (3.3 contexts)",
				       left, 1 + q, kind[A1], kind[B0],
				       RC_STEP_MS, q, kind[A0]);
		for (int i = 0; k->t.progress && i < c->nctx; i++)
			k->t.progress(c->ctx[i]);
		rc_nap_us(20);
	}
	for (int j = 0; j < q; j++) {
		rc_test_one(k, slots[j]);
		pending0 += k->rq[slots[j]].state == RQ_PENDING;
	}
	free(slots);
	RC_TRY(rc_wait_all(k, "context 0's requests"));
	for (int i = 0; i < KINDS; i++) {
		const unsigned char *b;

		RC_TRY(rc_wait_sig(k, &sig, (3 * n + (size_t)i) * 8, 1,
				   kind[i], from));
		RC_TRY(rc_win_view(k, &w, p2 + (size_t)i * (size_t)q * unit,
				   (size_t)count[i] * unit, &b));
		for (int j = 0; j < count[i]; j++) {
			long bad = zsm_pattern_check(
				b + (size_t)j * unit, unit,
				400 + 10 * (uint32_t)from + (uint32_t)i);

			if (bad >= 0)
				return rc_fail(k, "put %d of %d on %s from "
						  "rank %d: byte %ld differs "
						  "after the signal that ends "
						  "the run",
					       j + 1, count[i], kind[i], from,
					       bad);
		}
	}
	RC_TRY(rc_barrier(k, "contexts checked"));
	RC_TRY(rc_leave(k, 1));
	rc_win_free(k, &w);
	rc_win_free(k, &sig);
	if (k->rank == 0)
			rc_note(k, "%d requests on context 0 and on a second rmaCtx to "
			   "one peer, 1 on context 1; the last two completed "
			   "with %d of context 0's still pending",
			q, pending0);
	return OOB_PASS;
}

/* ---------------------------------------------------------------------- */
/* rma_credits */

static int rc_check_credits(struct rk *k)
{
	const size_t unit = 64;
	struct rc_comm *c = &k->cm[0];
	struct rc_win w, sig;
	double slowest = 0;
	size_t run;
	void *ctx;
	int q;

	RC_TRY(rc_join(k));
	q = RC_NCCL_REQUESTS * k->max_recvs;
	run = (size_t)q * unit;
	RC_TRY(rc_ctx(k, c, 1, &ctx));
	RC_TRY(rc_win_alloc(k, &sig, 8 * (size_t)(k->n + 1), 0));
	RC_TRY(rc_win_alloc(k, &w, run * (size_t)(k->n + 1), 0));
	RC_TRY(rc_reg(k, c, &sig, RC_SIG_FLAGS, "the signal buffer"));
	RC_TRY(rc_reg(k, c, &w, 0, "the data window"));
	RC_TRY(rc_win_fill(k, &w, 0, run, 500 + (uint32_t)k->rank));
	RC_TRY(rc_barrier(k, "credits ready"));
	/* q to every peer at once, interleaved, none tested before all are
	 * out: every other one a put with a signal. */
	for (int j = 0; j < q; j++) {
		for (int p = 0; p < k->n; p++) {
			struct rc_sig sg = { (uint64_t)k->rank * 8, sig.mh, 1,
					     NCCL_NET_SIGNAL_OP_ADD };
			uint64_t t0 = zsm_client_now_ns();
			double ms;

			if (p == k->rank)
				continue;
			rc_doing(k, "request %d of %d to rank %d", j + 1, q,
				 p);
			RC_TRY(rc_put(k, c, ctx, 0, (size_t)j * unit, w.mh,
				      unit,
				      run * (size_t)(k->rank + 1) +
					      (size_t)j * unit,
				      w.mh, p, j % 2 ? &sg : NULL, NULL));
			ms = (double)(zsm_client_now_ns() - t0) / 1e6;
			if (ms > slowest)
				slowest = ms;
		}
	}
	RC_TRY(rc_wait_all(k, "32 x maxRecvs requests per peer"));
	for (int p = 0; p < k->n; p++) {
		const unsigned char *b;
		long bad;

		if (p == k->rank)
			continue;
		RC_TRY(rc_wait_sig(k, &sig, (size_t)p * 8, (uint64_t)q / 2,
				   "the signals", p));
		RC_TRY(rc_win_view(k, &w, run * (size_t)(p + 1), run, &b));
		bad = zsm_pattern_check(b, run, 500 + (uint32_t)p);
		if (bad >= 0)
			return rc_fail(k, "the %d puts from rank %d: byte %ld "
					  "differs after their last signal",
				       q, p, bad);
	}
	RC_TRY(rc_barrier(k, "credits checked"));
	RC_TRY(rc_leave(k, 1));
	rc_win_free(k, &w);
	rc_win_free(k, &sig);
	if (k->rank == 0)
		rc_note(k, "%d requests in flight to each of %d peers (32 x "
			   "maxRecvs %d), each taken; slowest call %.1f ms",
			q, k->n - 1, k->max_recvs, slowest);
	return OOB_PASS;
}

/* ---------------------------------------------------------------------- */
/* rma_peer_dies, rma_last_error */

/* Die at once by SIGKILL, as a crashed rank would, the death marked as
 * wanted for the parent. */
static void rc_die(const struct rk *k) __attribute__((noreturn));
static void rc_die(const struct rk *k)
{
	fflush(NULL);
	/* release: pairs with the parent's and the survivors' acquire
	 * loads; nothing else of this rank comes after it. */
	atomic_store_explicit(&rc_sh->victim, k->rank + 1,
			      memory_order_release);
	for (;;)
		kill(getpid(), SIGKILL);
}

/* queryLastError of each context object: -1 on a call error, else
 * whether any said hasError. */
static int rc_last_error(struct rk *k, struct rc_comm *c, int *res)
{
	int any = 0;

	for (int i = 0; i < c->nctx; i++) {
		bool e = false;
		int r = k->t.last_error(c->ctx[i], &e);

		if (r != ncclSuccess) {
			*res = r;
			return -1;
		}
		any |= e;
	}
	return any;
}

/*
 * A survivor: keep a put to the dead rank outstanding and wait for its
 * signal, as NCCL's proxy would, testing requests, polling queryLastError
 * and putting again every 10 ms, until one of them says the peer failed.
 */
static int rc_detect(struct rk *k, struct rc_comm *c, void *ctx,
		     const struct rc_win *w, const struct rc_win *sig,
		     char *how, size_t len, long *ms)
{
	const int victim = k->n - 1;
	struct rc_sig sg = { (uint64_t)k->rank * 8, sig->mh, 1,
			     NCCL_NET_SIGNAL_OP_ADD };
	uint64_t t0 = zsm_client_now_ns(), dead = 0, last_put = 0;
	int res = 0, peer;

	rc_doing(k, "waiting for dead rank %d's signal", victim);
	for (;;) {
		uint64_t now = zsm_client_now_ns();
		void *req = NULL;
		int r;

		/* acquire: pairs with rc_die's release store. */
		if (!dead && atomic_load_explicit(&rc_sh->victim,
						  memory_order_acquire))
			dead = now;
		rc_idle(k);
		if (rc_reap(k, &res, &peer) >= 0) {
			snprintf(how, len, "test of a request to rank %d "
					   "returned %s",
				 peer, rc_res(res));
			break;
		}
		if (k->progress_res) {
			snprintf(how, len, "rmaProgress returned %s",
				 rc_res(k->progress_res));
			break;
		}
		if (k->t.last_error) {
			r = rc_last_error(k, c, &res);
			if (r) {
				snprintf(how, len, "queryLastError %s",
					 r < 0 ? rc_res(res) : "said hasError");
				break;
			}
		}
		if (now - last_put > 10000000ULL) {
			last_put = now;
			r = rc_put_call(k, ctx, 0, 0, w->mh, 4096, 1u << 20,
					w->mh, victim, &sg, &req);
			if (r != ncclSuccess) {
				snprintf(how, len, "iputSignal returned %s",
					 rc_res(r));
				break;
			}
			if (!req)
				return rc_fail(k, "iputSignal to dead rank %d "
						  "returned ncclSuccess and a "
						  "NULL request: always a "
						  "request or an error (3.3)",
					       victim);
			if (rc_track(k, c->coll, req, victim) < 0)
				return rc_fail(k, "out of memory");
		}
		if (!dead && rc_ms_since(t0) > RC_STEP_MS)
			return rc_fail(k, "rank %d did not die within %ld ms",
				       victim, RC_STEP_MS);
		if (dead && (long)((now - dead) / 1000000ULL) > RC_DETECT_MS)
			return rc_fail(k, "rank %d was killed %ld ms ago with "
					  "requests to it outstanding, and no "
					  "test, iputSignal%s failed: NCCL's "
					  "proxy would wait for ever (3.3 "
					  "error handling, 6.15)",
				       victim, RC_DETECT_MS,
				       k->t.last_error ? " or queryLastError"
						       : "");
		rc_nap_us(200);
	}
	*ms = dead ? (long)((zsm_client_now_ns() - dead) / 1000000ULL) : 0;
	return OOB_PASS;
}

static int rc_peer_death(struct rk *k, int last_error)
{
	const int victim = k->n - 1;
	struct rc_comm *c = &k->cm[0];
	struct rc_win w, sig;
	char how[RC_WHY];
	long ms = 0;
	int res = 0;
	void *ctx;

	RC_TRY(rc_join(k));
	if (last_error && !k->t.last_error)
		return rc_skip(k, "%s.queryLastError is NULL (optional, 3.2)",
			       k->t.sym);
	RC_TRY(rc_ctx(k, c, 2, &ctx));
	RC_TRY(rc_win_alloc(k, &sig, 8 * (size_t)(k->n + 1), 0));
	RC_TRY(rc_win_alloc(k, &w, 2u << 20, 0));
	RC_TRY(rc_reg(k, c, &sig, RC_SIG_FLAGS, "the signal buffer"));
	RC_TRY(rc_reg(k, c, &w, 0, "the data window"));
	/* Healthy first, on both contexts. */
	RC_TRY(rc_exchange(k, c, ctx, 0, &w, 0, &w, 1u << 20, 4096, &sig, 0,
			   1, 600, "traffic on context 0"));
	RC_TRY(rc_exchange(k, c, ctx, 1, &w, 0, &w, 1u << 20, 4096, &sig, 0,
			   2, 700, "traffic on context 1"));
	if (last_error) {
		int r = rc_last_error(k, c, &res);

		if (r)
			return rc_fail(k, "queryLastError on a healthy comm "
					  "%s",
				       r < 0 ? rc_res(res) : "said hasError");
	}
	RC_TRY(rc_barrier(k, "healthy"));
	if (k->rank == victim) {
		uint64_t t0 = zsm_client_now_ns();

		rc_doing(k, "waiting for the others to wait on it");
		/* acquire: pairs with each survivor's release increment. */
		while (atomic_load_explicit(&rc_sh->waiting,
					    memory_order_acquire) < k->n - 1) {
			if (rc_stopped(k, "the survivors"))
				return OOB_FAIL;
			if (rc_ms_since(t0) > RC_STEP_MS)
				return rc_fail(k, "the others did not start "
						  "waiting within %ld ms",
					       RC_STEP_MS);
			rc_idle(k);
			rc_nap_us(50);
		}
		/* Dies with puts of its own in flight. */
		for (int p = 0; p < victim; p++)
			RC_TRY(rc_put(k, c, ctx, 0, 0, w.mh, 1u << 20,
				      1u << 20, w.mh, p, NULL, NULL));
		rc_die(k);
	}
	/* Outstanding before the death: a put and signal to the victim. */
	RC_TRY(rc_put(k, c, ctx, 0, 0, w.mh, 4096, 1u << 20, w.mh, victim,
		      &(struct rc_sig){ (uint64_t)k->rank * 8, sig.mh, 1,
					NCCL_NET_SIGNAL_OP_ADD },
		      NULL));
	/* release: the put is out before the victim may die; pairs with
	 * the victim's acquire load. */
	atomic_fetch_add_explicit(&rc_sh->waiting, 1, memory_order_release);
	RC_TRY(rc_detect(k, c, ctx, &w, &sig, how, sizeof(how), &ms));
	if (last_error) {
		uint64_t t0 = zsm_client_now_ns();
		int r;

		rc_doing(k, "waiting for queryLastError to say so");
		while (!(r = rc_last_error(k, c, &res))) {
			if (rc_ms_since(t0) > RC_STEP_MS)
				return rc_fail(k, "rank %d died and %s, but "
						  "queryLastError still says "
						  "no error after %ld ms (3.2 "
						  "queryLastError)",
					       victim, how, RC_STEP_MS);
			rc_idle(k);
			rc_nap_us(200);
		}
		if (r < 0)
			return rc_fail(k, "queryLastError after rank %d died "
					  "returned %s",
				       victim, rc_res(res));
	}
	/* Teardown with a dead peer must end; its calls may fail. */
	RC_TRY(rc_leave(k, 0));
	rc_win_free(k, &w);
	rc_win_free(k, &sig);
	if (k->rank == 0)
		rc_note(k, "rank %d killed; rank 0 saw it %ld ms later: %s%s",
			victim, ms, how,
			last_error ? "; then queryLastError said hasError"
				   : "");
	return OOB_PASS;
}

static int rc_check_peer_dies(struct rk *k)
{
	return rc_peer_death(k, 0);
}

static int rc_check_last_error(struct rk *k)
{
	return rc_peer_death(k, 1);
}

/* ---------------------------------------------------------------------- */
/* rma_finalize_failed_init */

static int rc_check_finalize_failed_init(struct rk *k)
{
	const char *env = rc_o.init_fail_env;
	char var[128], why[RC_WHY];
	const char *eq;
	void *ctx = NULL;
	int r, f;

	if (k->rank)
		return OOB_PASS;
	if (!env && !strcmp(rc_sh->name, "zsm"))
		env = "ZSM_RMA=0";
	if (!env)
		return rc_skip(k, "no known way to make '%s''s init fail: "
				  "give --init-fail-env VAR=VALUE",
			       rc_sh->name);
	eq = strchr(env, '=');
	snprintf(var, sizeof(var), "%.*s", (int)(eq - env), env);
	setenv(var, eq + 1, 1);
	rc_doing(k, "loading %s with %s", rc_o.plugin, env);
	if (rma_client_open(&k->t, rc_o.plugin, rc_o.abi, why, sizeof(why)))
		return rc_fail(k, "%s", why);
	rc_doing(k, "init with %s", env);
	r = k->t.init(&ctx, RC_COMM_ID, zsm_client_logger);
	if (r == ncclSuccess) {
		k->t.finalize(ctx);
		rma_client_close(&k->t);
		return rc_fail(k, "init succeeded with %s: the check needs an "
				  "init that fails",
			       env);
	}
	/* NCCL 2.28.9 finalizes whatever context a failed init left (1.5,
	 * 6.13): it must not crash. */
	rc_doing(k, "finalize after init failed");
	f = k->t.finalize(ctx);
	rma_client_close(&k->t);
	rc_note(k, "with %s init returned %s; finalize(%s) returned %s", env,
		rc_res(r), ctx ? "its context" : "NULL", rc_res(f));
	return OOB_PASS;
}

/* ---------------------------------------------------------------------- */
/* rma_gpu: what --gpu needs, before any check */

static int rc_check_gpu(struct rk *k)
{
	char why[RC_WHY];
	unsigned ptr;

	rc_doing(k, "opening the CUDA driver");
	if (rc_gpu_open(k, why, sizeof(why)))
		return rc_skip(k, "GPU %d: %s", rc_o.gpu_ord[k->rank % 2], why);
	RC_TRY(rc_start(k));
	ptr = (unsigned)k->props.ptrSupport;
	RC_TRY(rc_leave(k, 1));
	if (!(ptr & NCCL_PTR_CUDA))
		return rc_skip(k, "getProperties(%d): ptrSupport 0x%x lacks "
				  "NCCL_PTR_CUDA: NCCL registers no GPU window "
				  "with this plugin",
			       rc_o.dev, ptr);
	if (k->rank == 0)
		rc_note(k, "CUDA driver %d, even ranks on GPU %d, odd ranks on "
			   "GPU %d; ptrSupport 0x%x",
			k->cu.driver_version, rc_o.gpu_ord[0], rc_o.gpu_ord[1],
			ptr);
	return OOB_PASS;
}

/* ---------------------------------------------------------------------- */
/* rma_load: what every check uses */

static int rc_check_load(struct rk *k)
{
	char why[RC_WHY];
	void *ctx = NULL;
	int ndev = 0, r;

	if (k->rank)
		return OOB_PASS;
	if (rma_client_open(&k->t, rc_o.plugin, rc_o.abi, why, sizeof(why)))
		return rc_fail(k, "%s", why);
	rc_sh->abi = k->t.abi;
	snprintf(rc_sh->sym, sizeof(rc_sh->sym), "%s", k->t.sym);
	snprintf(rc_sh->name, sizeof(rc_sh->name), "%s",
		 k->t.name ? k->t.name : "(NULL)");
	r = k->t.init(&ctx, RC_COMM_ID, zsm_client_logger);
	if (r != ncclSuccess) {
		rma_client_close(&k->t);
		return rc_skip(k, "%s.init returned %s: the RMA table is not "
				  "usable here (zsm: ZSM_RMA=1 turns it on)",
			       rc_sh->sym, rc_res(r));
	}
	r = k->t.devices(&ndev);
	if (r != ncclSuccess || ndev <= 0) {
		k->t.finalize(ctx);
		rma_client_close(&k->t);
		return rc_skip(k, "devices returned %s and %d devices",
			       rc_res(r), ndev);
	}
	if (rc_o.dev >= ndev) {
		k->t.finalize(ctx);
		rma_client_close(&k->t);
		return rc_fail(k, "device %d asked for, the plugin has %d",
			       rc_o.dev, ndev);
	}
	r = k->t.finalize(ctx);
	rma_client_close(&k->t);
	if (r != ncclSuccess)
		return rc_fail(k, "finalize returned %s", rc_res(r));
	rc_note(k, "%s '%s' of %s, %d device%s", rc_sh->sym, rc_sh->name,
		rc_o.plugin, ndev, ndev == 1 ? "" : "s");
	return OOB_PASS;
}

/* ---------------------------------------------------------------------- */
/* The catalog and its runner */

struct rc_check {
	const char *name;
	int (*fn)(struct rk *k);
	unsigned timeout_s;
	int solo; /* rank 0 alone */
	const char *what;
	/* NCCL's rule it holds the plugin to, for the FAIL line. */
	const char *rule;
};

static const struct rc_check rc_load = {
	"rma_load", rc_check_load, 30, 1,
	"the table loads, init succeeds, devices > 0", NULL
};

/* With --gpu every check's windows are GPU memory, once this passed. */
static const struct rc_check rc_gpu = {
	"rma_gpu", rc_check_gpu, 30, 0,
	"every rank's CUDA device is there and the plugin advertises "
	"NCCL_PTR_CUDA",
	NULL
};

static const struct rc_check rc_checks[] = {
	{ "rma_init_connect", rc_check_init_connect, 60, 0,
	  "init twice, connect on contexts not listen's, GIN_PROXY, every "
	  "link carries data",
	  "init runs twice per comm and connect gets another plugin's "
	  "context; netDeviceType is GIN_PROXY (3.1, 3.3 set-up, 6.4, 6.9)" },
	{ "rma_register", rc_check_register, 60, 0,
	  "symmetric registrations in NCCL's order and flags reach every "
	  "peer's copy",
	  "regMrSym is collective, in one order on every rank, and its "
	  "handle addresses every peer's copy; signals FORCE_SO|"
	  "SIGNAL_NEVER_RESET, data 0, host memory too (3.3 registration)" },
	{ "rma_put_get", rc_check_put_get, 60, 0,
	  "puts and gets from 0 bytes to --max-size at odd offsets, "
	  "byte-exact, nothing around them written",
	  "offsets are relative to each rank's window; a put or get moves "
	  "exactly its bytes (3.3 registration, data operations)" },
	{ "rma_signal_order", rc_check_signal_order, 60, 0,
	  "a strong signal's reader finds every earlier put's bytes",
	  "when a strong signal is visible, its put and every earlier put "
	  "and signal on the context are (3.3 data operations)" },
	{ "rma_signal_only", rc_check_signal_only, 60, 0,
	  "signals alone (size 0, NULL handles): INC adds 1, ADD its value, "
	  "exactly",
	  "size 0 is a signal alone with NULL handles; INC adds 1, ADD adds "
	  "signalValue (3.3 data operations, 6.11)" },
	{ "rma_contexts", rc_check_contexts, 60, 0,
	  "contexts take and finish work while another's is outstanding",
	  "a context is an independent ordering domain; NCCL's credits are "
	  "per context (3.3 contexts, data operations)" },
	{ "rma_credits", rc_check_credits, 60, 0,
	  "32 x maxRecvs puts in flight to every peer, each with a request",
	  "iput and iputSignal always return a request; NCCL keeps up to 32 "
	  "x maxRecvs in flight per peer (3.3 data operations, 6.7)" },
	{ "rma_peer_dies", rc_check_peer_dies, 60, 0,
	  "a killed peer is an error within the limit, nothing hangs",
	  "a dead peer is an error of test, iputSignal or queryLastError; "
	  "NCCL's proxy otherwise waits for ever (3.3 error handling, 6.15)" },
	{ "rma_last_error", rc_check_last_error, 60, 0,
	  "queryLastError false on healthy comms, true once a peer died",
	  "queryLastError reports a failed comm (3.2, 3.3 error handling)" },
	{ "rma_finalize_failed_init", rc_check_finalize_failed_init, 30, 1,
	  "finalize after a failed init does not crash",
	  "NCCL 2.28.9 calls finalize even when init failed (1.5, 6.13)" },
};

#define RC_NCHECKS (sizeof(rc_checks) / sizeof(rc_checks[0]))

size_t rc_default_max_size(int nranks)
{
	/* Two regions of this size a rank: about 4 GiB of windows in all,
	 * 1 GiB with 2 ranks. */
	return ((size_t)2 << 30) / (size_t)nranks;
}

void rc_list(void)
{
	for (size_t i = 0; i < RC_NCHECKS; i++)
		printf("%-24s %s\n", rc_checks[i].name, rc_checks[i].what);
}

int rc_known(const char *name, size_t len)
{
	for (size_t i = 0; i < RC_NCHECKS; i++)
		if (strlen(rc_checks[i].name) == len &&
		    !strncmp(rc_checks[i].name, name, len))
			return 1;
	return 0;
}

/* A check's limit: the catalog's, grown with the work asked for. */
static unsigned rc_limit(const struct rc_check *c)
{
	unsigned s = c->timeout_s;

	if (rc_o.timeout_s)
		return (unsigned)rc_o.timeout_s * (unsigned)rc_o.scale;
	if (c->fn == rc_check_put_get)
		s += (unsigned)(rc_o.max_size >> 23); /* 8 MiB a second */
	if (c->fn == rc_check_signal_order)
		s += (unsigned)(rc_o.signals / 5000);
	return s * (unsigned)rc_o.scale;
}

static void rc_child(const struct rc_check *c, int rank, int n,
		     unsigned limit_s, pid_t parent)
{
	struct rk k;
	char id[32];

	/* Die with the tool, and in any case a while after the limit. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(OOB_FAIL);
	alarm(limit_s + 30);
	memset(&k, 0, sizeof(k));
	k.rank = rank;
	k.n = n;
	/* Before the plugin loads, which may read it at once. */
	if (rc_o.hostid_env) {
		snprintf(id, sizeof(id), "rmahost%d", rank % rc_o.hosts);
		setenv(rc_o.hostid_env, id, 1);
	}
	int s = c->fn(&k);

	fflush(NULL);
	_exit(s == OOB_PASS || s == OOB_SKIP ? s : OOB_FAIL);
}

/* Kill every rank still running and reap it, saying why in its slot. */
static void rc_kill_all(const pid_t *pid, int *res, int n, const char *why,
			int secondary)
{
	for (int r = 0; r < n; r++) {
		if (res[r] >= 0)
			continue;
		kill(pid[r], SIGKILL);
	}
	for (int r = 0; r < n; r++) {
		if (res[r] >= 0)
			continue;
		waitpid(pid[r], NULL, 0);
		res[r] = OOB_FAIL;
		char doing[RC_DOING + 1];

		snprintf(doing, sizeof(doing), "%s",
			 rc_sh->doing[r][0] ? rc_sh->doing[r] : "starting");
		snprintf(rc_sh->why[r], RC_WHY, "%s while %s", why, doing);
		rc_sh->secondary[r] = secondary;
	}
}

/* Fork the check's ranks, wait for them within its limit, print the
 * verdict; OOB_PASS, OOB_SKIP or OOB_FAIL. */
static int rc_run(const struct rc_check *c, unsigned limit_s)
{
	const int n = c->solo ? 1 : rc_o.nranks;
	pid_t pid[RC_MAX_RANKS], parent = getpid();
	int res[RC_MAX_RANKS], alive = 0, result = OOB_PASS;
	uint64_t t0, failed_at = 0;
	char why[1600] = "";
	struct rc_shared keep;

	/* A fresh page but for rma_load's findings. */
	memcpy(&keep, rc_sh, sizeof(keep));
	memset(rc_sh, 0, sizeof(*rc_sh));
	rc_sh->abi = keep.abi;
	memcpy(rc_sh->sym, keep.sym, sizeof(keep.sym));
	memcpy(rc_sh->name, keep.name, sizeof(keep.name));
	fflush(NULL);
	for (int r = 0; r < n; r++) {
		res[r] = -1;
		pid[r] = fork();
		if (pid[r] == 0)
			rc_child(c, r, n, limit_s, parent);
		if (pid[r] < 0) {
			res[r] = OOB_FAIL;
			snprintf(rc_sh->why[r], RC_WHY, "fork: %s",
				 strerror(errno));
			/* release: pairs with rc_stopped in the ranks. */
			atomic_store_explicit(&rc_sh->failed, 1,
					      memory_order_release);
			failed_at = zsm_client_now_ns();
		} else {
			alive++;
		}
	}
	t0 = zsm_client_now_ns();
	while (alive) {
		int st, r = -1;
		pid_t p = waitpid(-1, &st, WNOHANG);

		for (int i = 0; p > 0 && i < n; i++)
			if (pid[i] == p)
				r = i;
		if (r >= 0) {
			alive--;
			/* acquire: pairs with rc_die's release store. */
			int wanted = atomic_load_explicit(&rc_sh->victim,
							  memory_order_acquire) ==
				     r + 1;

			if (WIFEXITED(st)) {
				res[r] = WEXITSTATUS(st);
				if (res[r] != OOB_PASS && res[r] != OOB_SKIP)
					res[r] = OOB_FAIL;
			} else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL &&
				   wanted) {
				res[r] = OOB_PASS;
			} else {
				res[r] = OOB_FAIL;
				snprintf(rc_sh->why[r], RC_WHY,
					 "crashed (%s) while %s",
					 WIFSIGNALED(st)
						 ? strsignal(WTERMSIG(st))
						 : "?",
					 rc_sh->doing[r]);
				rc_sh->secondary[r] = 0;
			}
			if (res[r] == OOB_FAIL && !failed_at) {
				failed_at = zsm_client_now_ns();
				/* release: pairs with rc_stopped. */
				atomic_store_explicit(&rc_sh->failed, 1,
						      memory_order_release);
			}
			continue;
		}
		if (p < 0 && errno != EINTR)
			break;
		if (rc_ms_since(t0) > (long)limit_s * 1000) {
			snprintf(why, sizeof(why), "timed out after %u s",
				 limit_s);
			rc_kill_all(pid, res, n, why, 0);
			break;
		}
		if (failed_at &&
		    (long)((zsm_client_now_ns() - failed_at) / 1000000ULL) >
			    RC_GRACE_MS) {
			snprintf(why, sizeof(why),
				 "killed %ld ms after another rank failed",
				 RC_GRACE_MS);
			rc_kill_all(pid, res, n, why, 1);
			break;
		}
		rc_nap_us(2000);
	}
	why[0] = '\0';
	for (int r = 0; r < n; r++) {
		if (res[r] == OOB_FAIL)
			result = OOB_FAIL;
		else if (res[r] == OOB_SKIP && result == OOB_PASS)
			result = OOB_SKIP;
	}
	/* The reasons: first-hand ones, or the others when there are none;
	 * two in full, then the other ranks' numbers (with the first's
	 * reason, or one not shown). */
	for (int pass = 0, shown = 0, first = -1; pass < 2 && !why[0];
	     pass++) {
		char more[64] = "";

		for (int r = 0; r < n; r++) {
			size_t used = strlen(why);

			if (!rc_sh->why[r][0] || rc_sh->secondary[r] != pass)
				continue;
			if (result == OOB_FAIL && res[r] != OOB_FAIL)
				continue;
			if (first < 0)
				first = r;
			/* The first reason again is only one rank more. */
			if ((r == first ||
			     strcmp(rc_sh->why[r], rc_sh->why[first])) &&
			    shown++ < 2) {
				snprintf(why + used, sizeof(why) - used,
					 "%srank %d: %s", used ? "; " : "", r,
					 rc_sh->why[r]);
				continue;
			}
			used = strlen(more);
			snprintf(more + used, sizeof(more) - used, "%s%d",
				 used ? ", " : "", r);
		}
		if (more[0]) {
			size_t used = strlen(why);

			snprintf(why + used, sizeof(why) - used,
				 "; rank%s %s too", strchr(more, ',') ? "s" : "",
				 more);
		}
	}
	for (int r = 0; r < n; r++)
		if (rc_sh->note[r][0])
			printf("# %s: %s\n", c->name, rc_sh->note[r]);
	if (c->fn == rc_check_signal_order) {
		uint64_t sum = 0, bad = 0;

		for (int r = 0; r < n; r++) {
			sum += rc_sh->checked[r];
			bad += rc_sh->violations[r];
		}
		if (sum)
			printf("# %s: %llu strong signals read and checked by "
			       "the ranks that finished, %llu violations\n",
			       c->name, (unsigned long long)sum,
			       (unsigned long long)bad);
	}
	if (result == OOB_PASS)
		printf("PASS %s: %s\n", c->name, c->what);
	else if (result == OOB_SKIP)
		printf("SKIP %s: %s\n", c->name, why[0] ? why : "skipped");
	else
		printf("FAIL %s: %s%s%s%s\n", c->name,
		       why[0] ? why
			      : "a rank ended with a failure status but no "
				"reason (see stderr)",
		       c->rule ? " [rule: " : "", c->rule ? c->rule : "",
		       c->rule ? "]" : "");
	fflush(stdout);
	return result;
}

int rc_main(const struct rc_opts *o)
{
	int passed = 0, failed = 0, skipped = 0, r;

	rc_o = *o;
	if (!rc_o.hosts)
		rc_o.hosts = rc_o.nranks;
	if (!rc_o.max_size)
		rc_o.max_size = rc_default_max_size(rc_o.nranks);
	if (!rc_o.signals)
		rc_o.signals = rc_o.gpu ? RC_DEFAULT_SIGNALS_GPU
					: RC_DEFAULT_SIGNALS;
	if (rc_o.scale < 1)
		rc_o.scale = 1;
	if (access(rc_o.plugin, R_OK)) {
		printf("FAIL rma_load: %s: %s\n", rc_o.plugin, strerror(errno));
		printf("0 passed, 1 failed, 0 skipped\n");
		return OOB_FAIL;
	}
	rc_sh = mmap(NULL, sizeof(*rc_sh), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (rc_sh == MAP_FAILED) {
		perror("zsm-conformance: mmap");
		return OOB_FAIL;
	}
	memset(rc_sh, 0, sizeof(*rc_sh));
	r = rc_run(&rc_load, rc_limit(&rc_load));
	if (r == OOB_PASS && rc_o.gpu)
		r = rc_run(&rc_gpu, rc_limit(&rc_gpu));
	if (r == OOB_SKIP) {
		for (size_t i = 0; i < RC_NCHECKS; i++)
			skipped += lb_selected(rc_o.only, rc_checks[i].name);
		printf("0 passed, 0 failed, %d skipped\n", skipped);
		return OOB_SKIP;
	}
	if (r != OOB_PASS) {
		printf("0 passed, 1 failed, 0 skipped\n");
		return OOB_FAIL;
	}
	for (size_t i = 0; i < RC_NCHECKS; i++) {
		if (!lb_selected(rc_o.only, rc_checks[i].name))
			continue;
		r = rc_run(&rc_checks[i], rc_limit(&rc_checks[i]));
		passed += r == OOB_PASS;
		skipped += r == OOB_SKIP;
		failed += r == OOB_FAIL;
	}
	printf("# plugin %s, %s, %d ranks as %d host%s (%s), device %d, "
	       "max size %zu, %ld signals",
	       rc_o.plugin, rc_sh->sym, rc_o.nranks, rc_o.hosts,
	       rc_o.hosts == 1 ? "" : "s",
	       rc_o.hostid_env ? rc_o.hostid_env : "no host variable",
	       rc_o.dev, rc_o.max_size, rc_o.signals);
	if (rc_o.gpu)
		printf(", windows on GPU %d (even ranks) and %d (odd)",
		       rc_o.gpu_ord[0], rc_o.gpu_ord[1]);
	printf("\n");
	printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
	fflush(stdout);
	if (failed)
		return OOB_FAIL;
	/* Nothing could run: a skip. */
	return passed ? OOB_PASS : OOB_SKIP;
}
