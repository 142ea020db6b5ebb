/* SPDX-License-Identifier: MIT */
/*
 * zsm-conformance --rma's checks of set-up, registration and data:
 * rma_init_connect, rma_register, rma_put_get, and of contexts and
 * credits: rma_contexts, rma_credits.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance_rma_int.h"
#include "pattern.h"
#include "zsm_client.h"

/* ---------------------------------------------------------------------- */
/* rma_init_connect */

int rc_check_init_connect(struct rk *k)
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

int rc_check_register(struct rk *k)
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

int rc_check_put_get(struct rk *k)
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
/* rma_contexts */

int rc_check_contexts(struct rk *k)
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

int rc_check_credits(struct rk *k)
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
