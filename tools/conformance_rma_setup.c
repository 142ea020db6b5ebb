/* SPDX-License-Identifier: MIT */
/*
 * zsm-conformance --rma: the steps every check is made of: barriers and
 * signals through the shared page and the windows, windows made and
 * registered, set-up and teardown in the order NCCL's RMA proxy uses
 * (3.3), and the checks' shared steps (the bytes of a transfer checked,
 * a round of puts with signals between every pair of ranks).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "conformance_rma_int.h"
#include "pattern.h"
#include "zsm_client.h"

/* ---------------------------------------------------------------------- */
/* Barriers and signals */

int rc_barrier(struct rk *k, const char *what)
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
int rc_sig_read(struct rk *k, const struct rc_win *w, size_t off,
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
int rc_wait_sig(struct rk *k, const struct rc_win *w, size_t off,
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
int rc_win_make(struct rk *k, struct rc_win *w, size_t size, int odd,
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
int rc_win_alloc(struct rk *k, struct rc_win *w, size_t size, int odd)
{
	return rc_win_make(k, w, size, odd, rc_o.gpu);
}

void rc_win_free(struct rk *k, struct rc_win *w)
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
int rc_reg(struct rk *k, struct rc_comm *c, struct rc_win *w,
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
int rc_dereg(struct rk *k, struct rc_comm *c, struct rc_win *w,
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

int rc_ctx(struct rk *k, struct rc_comm *c, int ncontexts, void **out)
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
int rc_start(struct rk *k)
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
int rc_connect(struct rk *k, void *ctx)
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
int rc_join(struct rk *k)
{
	RC_TRY(rc_start(k));
	return rc_connect(k, k->ctx_gin);
}

/*
 * Teardown in NCCL's order: deregMrSym, destroyContext, closeColl,
 * finalize each init's context.  strict: every call must succeed.
 */
int rc_leave(struct rk *k, int strict)
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
int rc_bytes_check(const struct rk *k, const unsigned char *p,
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
int rc_exchange(struct rk *k, struct rc_comm *c, void *ctx,
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
