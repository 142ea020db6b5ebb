/* SPDX-License-Identifier: MIT */
/*
 * zsm-conformance --rma's checks of signals: rma_signal_order (a strong
 * signal's reader finds every earlier put's bytes) and rma_signal_only
 * (size 0, NULL handles: INC and ADD, exactly).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance_rma_int.h"
#include "zsm_client.h"

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

int rc_check_signal_order(struct rk *k)
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

int rc_check_signal_only(struct rk *k)
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
