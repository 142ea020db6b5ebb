/* SPDX-License-Identifier: MIT */
/*
 * Owns the collective comm's agreed exchanges (regMrSym's): every rank's
 * part reaches every rank, and the exchange succeeds on every rank or
 * fails on every rank, whichever rank gives up first and however late
 * another one comes.
 *
 * Each exchange is two rounds of one message per link: the parts (with
 * the sender's status), then each rank's verdict (it had every part in
 * time, and every part said ok).  A rank succeeds only on every verdict
 * ok.  A rank that times out waiting for the parts sends its verdict,
 * "failed", at once and returns: a rank that comes later reads it and
 * fails too, rather than take a window its owner already gave up.
 *
 * Over ce the receives of the next exchange are posted when the previous
 * one ends, whatever its outcome.  So a rank's messages always find
 * their receives waiting at a peer that is at most one exchange behind,
 * and never sit unmatched in the link's order, where they would hold
 * every later put and signal of the link.  Over net an early message
 * waits in the provider and holds nothing: receives are posted when the
 * exchange starts (post_recvs says why).  Receives and sends a rank
 * left behind (a peer that has not come yet) stay posted and are
 * collected by later calls; a peer more than ZSM_GROUP_XCHG_RING exchanges
 * behind fails the exchanges at once.
 *
 * A rank that sent "ok" and then waits out its deadline for a verdict
 * can only face a peer that died or stopped between its two sends; it
 * fails, and the peer may not (docs/rma.md says what then guards the
 * window).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/param.h"
#include "group/group_int.h"

#define ZSM_GROUP_XCHG_MAGIC 0x7a736d78u /* "zsmx" */

enum { ZSM_GROUP_XCHG_SEND, ZSM_GROUP_XCHG_RECV };

/* One rank's message of one round. */
struct zsm_group_part {
	uint32_t magic;
	uint32_t round;
	uint64_t seq;
	int32_t status; /* 0, or the sender's -errno: the exchange fails */
	uint32_t len;
	unsigned char body[ZSM_GROUP_XCHG_BODY];
};

_Static_assert(sizeof(struct zsm_group_part) == ZSM_GROUP_XCHG_BYTES,
	       "a part fills its slot of the scratch");

size_t zsm_group_xchg_bytes(int nranks)
{
	return (size_t)ZSM_GROUP_XCHG_BYTES * ZSM_GROUP_XCHG_RING *
	       ZSM_GROUP_XCHG_ROUNDS * (size_t)nranks;
}

static void **zsm_group_xchg_req(const struct zsm_group *c, uint64_t k,
			       int round, int dir, int p)
{
	size_t j = k % ZSM_GROUP_XCHG_RING;

	return &c->xchg.req[((j * ZSM_GROUP_XCHG_ROUNDS + (size_t)round) * 2 +
			     (size_t)dir) * (size_t)c->nranks + (size_t)p];
}

/* Rank p's part of round of exchange k (ours: what we send). */
static struct zsm_group_part *zsm_group_xchg_part(const struct zsm_group *c,
					      uint64_t k, int round, int p)
{
	size_t j = k % ZSM_GROUP_XCHG_RING;

	return (struct zsm_group_part *)(void *)(c->xchg.buf +
		ZSM_GROUP_XCHG_BYTES *
			((j * ZSM_GROUP_XCHG_ROUNDS + (size_t)round) *
				 (size_t)c->nranks + (size_t)p));
}

/* Each exchange's rounds have their own tags (0 is the hello's). */
static int zsm_group_xchg_tag(uint64_t k, int round)
{
	return (int)(1 + (2 * k + (uint64_t)round) % (ZSM_TAG_MAX - 1));
}

/* Look at *req once: 1 when it ended (freed, *req NULL), with its
 * result in *err. */
static int zsm_group_xchg_ended(void **req, int *err)
{
	int done = 0, ret;

	*err = 0;
	if (!*req)
		return 1;
	ret = zsm_test(*req, &done, NULL);
	if (!ret && !done)
		return 0;
	*req = NULL;
	*err = ret;
	return 1;
}

/* Collect whatever earlier exchanges left behind that has ended. */
static void zsm_group_xchg_reap(struct zsm_group *c)
{
	size_t n = (size_t)ZSM_GROUP_XCHG_RING * ZSM_GROUP_XCHG_ROUNDS * 2 *
		   (size_t)c->nranks;
	int err;

	for (size_t i = 0; i < n; i++)
		(void)zsm_group_xchg_ended(&c->xchg.req[i], &err);
}

/* A rank whose request of an earlier exchange still holds exchange k's
 * ring slot, or -1 when the slot is free. */
static int zsm_group_xchg_busy(const struct zsm_group *c, uint64_t k)
{
	for (int r = 0; r < ZSM_GROUP_XCHG_ROUNDS; r++)
		for (int p = 0; p < c->nranks; p++)
			if (*zsm_group_xchg_req(c, k, r, ZSM_GROUP_XCHG_SEND, p) ||
			    *zsm_group_xchg_req(c, k, r, ZSM_GROUP_XCHG_RECV, p))
				return p;
	return -1;
}

/* Whether our receive of p's part of round of exchange k was posted. */
static uint8_t *zsm_group_xchg_armed(const struct zsm_group *c, uint64_t k,
				   int round, int p)
{
	size_t j = k % ZSM_GROUP_XCHG_RING;

	return &c->xchg.armed[(j * ZSM_GROUP_XCHG_ROUNDS + (size_t)round) *
				      (size_t)c->nranks + (size_t)p];
}

/* Exchange k's ring slot, taken for it unless an earlier exchange's
 * request still holds it: 0, or the rank that owes it + 1. */
static int zsm_group_xchg_claim(struct zsm_group *c, uint64_t k)
{
	size_t j = k % ZSM_GROUP_XCHG_RING;
	int owes;

	if (c->xchg.slot_seq[j] == k + 1)
		return 0;
	owes = zsm_group_xchg_busy(c, k);
	if (owes >= 0)
		return owes + 1;
	c->xchg.slot_seq[j] = k + 1;
	for (int r = 0; r < ZSM_GROUP_XCHG_ROUNDS; r++)
		for (int p = 0; p < c->nranks; p++)
			*zsm_group_xchg_armed(c, k, r, p) = 0;
	return 0;
}

/*
 * Post exchange k's receives not yet posted: all of them, or (ahead) only
 * on links of the other transport than the handshake's (kind 1: ce),
 * which serves a link's puts and signals in order behind a message no
 * receive took yet.  A link of the handshake's transport (net) holds an
 * early message in its provider without holding anything behind it, and
 * a receive posted there has the peer watched for liveness as work
 * outstanding, which an idle link must not be.  The core may hand back
 * no request while its queue is full (retry until deadline).
 */
static int zsm_group_xchg_post_recvs(struct zsm_group *c, uint64_t k,
				   int ahead, uint64_t deadline)
{
	size_t len = ZSM_GROUP_XCHG_BYTES;

	for (int r = 0; r < ZSM_GROUP_XCHG_ROUNDS; r++) {
		int tag = zsm_group_xchg_tag(k, r);

		for (int p = 0; p < c->nranks; p++) {
			void **req = zsm_group_xchg_req(c, k, r,
						      ZSM_GROUP_XCHG_RECV, p);
			void *slot = zsm_group_xchg_part(c, k, r, p);
			uint8_t *armed = zsm_group_xchg_armed(c, k, r, p);
			int ret = 0;

			if (p == c->rank || *armed || (ahead && !c->kind[p]))
				continue;
			memset(slot, 0, ZSM_GROUP_XCHG_BYTES);
			while (!*req && !ret) {
				ret = zsm_irecv(c->recv[p], 1, &slot, &len,
						&tag, &c->recv_mh[p], req);
				if (!ret && !*req && zsm_now_ns() > deadline)
					ret = -ETIMEDOUT;
				else if (!ret && !*req)
					zsm_group_nap(); /* the pool is full */
			}
			if (ret)
				return ret;
			*armed = 1;
		}
	}
	return 0;
}

/* Exchange k's slot, and its receives (ahead: see post_recvs): 0, the
 * rank that still owes the slot's earlier exchange + 1, or -errno. */
static int zsm_group_xchg_prepare(struct zsm_group *c, uint64_t k,
				int ahead)
{
	int ret = zsm_group_xchg_claim(c, k);

	return ret ? ret
		   : zsm_group_xchg_post_recvs(c, k, ahead,
					     zsm_group_deadline_ns());
}

int zsm_group_xchg_init(struct zsm_group *c, unsigned char *buf)
{
	size_t n = (size_t)ZSM_GROUP_XCHG_RING * ZSM_GROUP_XCHG_ROUNDS *
		   (size_t)c->nranks;

	c->xchg.buf = buf;
	c->xchg.req = calloc(2 * n, sizeof(void *));
	c->xchg.armed = calloc(n, 1);
	if (!c->xchg.req || !c->xchg.armed)
		return -ENOMEM;
	return zsm_group_xchg_prepare(c, 0, 1) ? -EIO : 0;
}

void zsm_group_xchg_fini(struct zsm_group *c)
{
	/* The requests ended with the comms, closed before. */
	free(c->xchg.req);
	free(c->xchg.armed);
	c->xchg.req = NULL;
	c->xchg.armed = NULL;
}

/* Our part of round of exchange k to every peer. */
static int zsm_group_xchg_send(struct zsm_group *c, uint64_t k, int round,
			     uint64_t deadline)
{
	struct zsm_group_part *mine = zsm_group_xchg_part(c, k, round, c->rank);
	int tag = zsm_group_xchg_tag(k, round), ret = 0;

	for (int p = 0; p < c->nranks && !ret; p++) {
		void **req = zsm_group_xchg_req(c, k, round, ZSM_GROUP_XCHG_SEND, p);

		if (p == c->rank)
			continue;
		while (!*req && !ret) {
			ret = zsm_isend(c->send[p], mine, ZSM_GROUP_XCHG_BYTES,
					tag, c->send_mh[p], req);
			if (!ret && !*req && zsm_now_ns() > deadline)
				ret = -ETIMEDOUT;
			else if (!ret && !*req)
				zsm_group_nap(); /* not taken yet */
		}
	}
	return ret;
}

/* Rank p's part of round of exchange k came, and is one: 0, or why not
 * (said once here). */
static int zsm_group_xchg_check(const struct zsm_group *c, uint64_t k,
			      int round, int p)
{
	const struct zsm_group_part *m = zsm_group_xchg_part(c, k, round, p);

	if (m->magic != ZSM_GROUP_XCHG_MAGIC || m->seq != k ||
	    m->round != (uint32_t)round || m->len > ZSM_GROUP_XCHG_BODY) {
		ZSM_WARN("group: rank %d's part of exchange %llu is not one "
			 "(its registrations are out of step with ours?)",
			 p, (unsigned long long)k);
		return -EPROTO;
	}
	/* Any value may come: a failure is a failure. */
	if (m->status >= 0)
		return 0;
	ZSM_WARN("group: rank %d %s exchange %llu (error %d there): it fails "
		 "here too",
		 p, round ? "gave up" : "could not take part in",
		 (unsigned long long)k, (int)m->status);
	return m->status > -4096 ? m->status : -EPROTO;
}

/* Until the requests of rounds [r0, r1) of exchange k in direction dir
 * ended or deadline passed: 0, a link's error, or -ETIMEDOUT with how
 * many peers' requests had not ended in *waiting. */
static int zsm_group_xchg_wait(struct zsm_group *c, uint64_t k, int r0,
			     int r1, int dir, uint64_t deadline, int *waiting)
{
	for (;;) {
		int err;

		*waiting = 0;
		for (int r = r0; r < r1; r++)
			for (int p = 0; p < c->nranks; p++) {
				void **req = zsm_group_xchg_req(c, k, r, dir, p);

				if (!zsm_group_xchg_ended(req, &err))
					(*waiting)++;
				else if (err)
					return err;
			}
		if (!*waiting)
			return 0;
		if (zsm_now_ns() > deadline)
			return -ETIMEDOUT;
		zsm_group_nap();
	}
}

/* Every peer's part of round of exchange k, or deadline passed. */
static int zsm_group_xchg_gather(struct zsm_group *c, uint64_t k, int round,
			       uint64_t deadline)
{
	int waiting, ret = zsm_group_xchg_wait(c, k, round, round + 1,
					     ZSM_GROUP_XCHG_RECV, deadline,
					     &waiting);

	if (ret == -ETIMEDOUT)
		ZSM_WARN("group: rank %d: %d peers did not join an exchange "
			 "within ZSM_CONNECT_TIMEOUT_MS (%lld ms): it fails on "
			 "every rank",
			 c->rank, waiting,
			 zsm_param_int(ZSM_P_CONNECT_TIMEOUT_MS));
	return ret;
}

/* Every peer's part of round of exchange k: the first error any says. */
static int zsm_group_xchg_verdicts(const struct zsm_group *c, uint64_t k,
				 int round)
{
	for (int p = 0; p < c->nranks; p++) {
		int ret = p == c->rank ? 0 : zsm_group_xchg_check(c, k, round, p);

		if (ret)
			return ret;
	}
	return 0;
}

/* Round 0 (the parts) of exchange k, then our verdict sent: 0, or why
 * this exchange fails. */
static int zsm_group_xchg_parts(struct zsm_group *c, uint64_t k,
			      int status)
{
	uint64_t deadline = zsm_group_deadline_ns();
	struct zsm_group_part *verdict = zsm_group_xchg_part(c, k, 1, c->rank);
	int ret = zsm_group_xchg_send(c, k, 0, deadline);

	if (!ret)
		ret = zsm_group_xchg_gather(c, k, 0, deadline);
	if (!ret)
		ret = zsm_group_xchg_verdicts(c, k, 0);
	if (!ret)
		ret = status;
	verdict->magic = ZSM_GROUP_XCHG_MAGIC;
	verdict->round = 1;
	verdict->seq = k;
	verdict->status = ret;
	verdict->len = 0;
	/* Sent whatever happened: it tells the others. */
	if (zsm_group_xchg_send(c, k, 1, zsm_group_deadline_ns()) && !ret)
		ret = -ETIMEDOUT;
	return ret;
}

int zsm_group_agree(struct zsm_group *c, const void *mine, size_t len,
		  int status, void *all)
{
	uint64_t k = c->xchg.next++;
	struct zsm_group_part *part = zsm_group_xchg_part(c, k, 0, c->rank);
	int ret, owes;

	if (len > ZSM_GROUP_XCHG_BODY)
		return -EINVAL;
	zsm_group_xchg_reap(c);
	owes = zsm_group_xchg_prepare(c, k, 0);
	if (owes) {
		if (owes > 0)
			ZSM_WARN("group: rank %d: exchange %llu fails at once: "
				 "rank %d has not yet joined exchange %llu",
				 c->rank, (unsigned long long)k, owes - 1,
				 (unsigned long long)(k - ZSM_GROUP_XCHG_RING));
		else
			ZSM_WARN("group: rank %d: exchange %llu fails at once: "
				 "its receives could not be posted",
				 c->rank, (unsigned long long)k);
		(void)zsm_group_xchg_prepare(c, k + 1, 1);
		return -ETIMEDOUT;
	}
	memset(part, 0, sizeof(*part));
	part->magic = ZSM_GROUP_XCHG_MAGIC;
	part->seq = k;
	part->status = status;
	part->len = (uint32_t)len;
	memcpy(part->body, mine, len);
	ret = zsm_group_xchg_parts(c, k, status);
	if (!ret)
		ret = zsm_group_xchg_gather(c, k, 1, zsm_group_deadline_ns());
	if (!ret)
		ret = zsm_group_xchg_verdicts(c, k, 1);
	/* Every peer took our part (its verdict says so), and its receive
	 * of our verdict was posted: our sends end within a pass, and must
	 * not hold requests that puts will want.  Not a reason to fail once
	 * every verdict said ok: a later call collects what is left. */
	if (!ret)
		(void)zsm_group_xchg_wait(c, k, 0, ZSM_GROUP_XCHG_ROUNDS,
					ZSM_GROUP_XCHG_SEND, zsm_group_deadline_ns(),
					&owes);
	for (int p = 0; !ret && p < c->nranks; p++)
		memcpy((char *)all + (size_t)p * len,
		       zsm_group_xchg_part(c, k, 0, p)->body, len);
	(void)zsm_group_xchg_prepare(c, k + 1, 1);
	return ret;
}
