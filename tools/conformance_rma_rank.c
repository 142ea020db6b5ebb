/* SPDX-License-Identifier: MIT */
/*
 * zsm-conformance --rma: a rank's basics (its reason to fail or skip,
 * what it is doing, its notes, all in the shared page), its requests, each
 * tested until done as NCCL's proxy does, and its window memory, host or
 * (--gpu) its CUDA device's, reached through the driver's copies.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conformance_rma_int.h"
#include "pattern.h"
#include "zsm_client.h"

struct rc_opts rc_o;
struct rc_shared *rc_sh;

long rc_ms_since(uint64_t t0)
{
	return (long)((zsm_client_now_ns() - t0) / 1000000ULL);
}

void rc_nap_us(long us)
{
	struct timespec ts = { 0, us * 1000L };

	nanosleep(&ts, NULL);
}

const char *rc_res(int r)
{
	return zsm_client_result_str(r);
}

/* What this rank is doing, for a timeout's message. */
void rc_doing(const struct rk *k, const char *fmt, ...)
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
int rc_fail(const struct rk *k, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rc_why(k, 0, fmt, ap);
	va_end(ap);
	/* release: the reason is written before; pairs with rc_stopped. */
	atomic_store_explicit(&rc_sh->failed, 1, memory_order_release);
	return OOB_FAIL;
}

int rc_skip(const struct rk *k, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rc_why(k, 0, fmt, ap);
	va_end(ap);
	return OOB_SKIP;
}

/* A detail line the parent prints before the verdict. */
void rc_note(const struct rk *k, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rc_sh->note[k->rank], RC_WHY, fmt, ap);
	va_end(ap);
}

/* Whether another rank failed; this one then stops, said as secondary. */
int rc_stopped(const struct rk *k, const char *what)
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
ncclResult_t rc_put_call(struct rk *k, void *ctx, int context,
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

int rc_track(struct rk *k, void *coll, void *req, int peer)
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
void rc_test_one(struct rk *k, int s)
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
void rc_idle(struct rk *k)
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
int rc_reap(struct rk *k, int *res, int *peer)
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
int rc_wait_all(struct rk *k, const char *what)
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
int rc_put(struct rk *k, const struct rc_comm *c, void *ctx,
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
int rc_gpu_open(struct rk *k, char *why, size_t len)
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

const char *rc_mem(const struct rc_win *w)
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
int rc_win_read(struct rk *k, const struct rc_win *w, size_t off,
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
int rc_win_write(struct rk *k, const struct rc_win *w, size_t off,
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

int rc_win_set(struct rk *k, const struct rc_win *w, size_t off,
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
int rc_win_fill(struct rk *k, const struct rc_win *w, size_t off,
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
int rc_win_view(struct rk *k, const struct rc_win *w, size_t off,
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
