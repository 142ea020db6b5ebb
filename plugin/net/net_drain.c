/* SPDX-License-Identifier: MIT */
/*
 * Owns the stray scan: data messages that no live comm will ever take
 * (for a comm that closed, for an id that never existed, with tag bits no
 * zsm message has) would sit in the provider for ever, each holding one
 * of its buffers (rxm: about 17 KB).  Now and then the endpoint peeks at
 * the oldest unexpected message in a set of tags: a stray is discarded
 * and the set looked at again; a message zsm keeps (a control message,
 * which a control receive takes, or data for a live receive comm, which
 * its receive takes, or whose wrong key that receive judges, net_req.c)
 * splits the set in two by the next tag bit, and each half is looked in
 * on its own, down to the tags of that one comm, which are kept whole.
 * So a message kept costs the scan up to two looks per tag bit above the
 * caller's tag, and nothing stays behind it (one used to end the scan).
 * A stray found is swept with the widest set of tags around it that
 * holds strays only: rounds of discards, each of whatever is oldest
 * there, until one finds nothing.  The sets still to look in carry over
 * to the next pass, so a burst of strays is discarded as fast as the
 * passes go.  Providers without FI_PEEK keep their strays; that is said
 * once.  Engine only.
 */
#include <errno.h>

#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "common/log.h"
#include "net/net.h"

enum {
	ZSM_DRAIN_IDLE,
	ZSM_DRAIN_PEEK,
	ZSM_DRAIN_SWEEP,
	ZSM_DRAIN_OFF,
};

/* The control bit: every zsm tag has nothing above it. */
#define ZSM_DRAIN_CTRL_SHIFT 47
_Static_assert(1ULL << ZSM_DRAIN_CTRL_SHIFT == ZSM_TAG_CTRL,
	       "the control bit is the top one of zsm's tags");

/* Looks one pass makes at most.  Each completes through the completion
 * queue, which the engine reads again for it (net_ep.c): this bounds the
 * time a pass spends on strays. */
#define ZSM_DRAIN_BUDGET 512
/* How long the scan waits once a whole scan found no stray. */
#define ZSM_DRAIN_PERIOD_NS 250000000ULL

/* One look (or, with FI_DISCARD, one discard) at the oldest unexpected
 * message with tag under ignore. */
static int zsm_net_drain_post(struct zsm_net_ep *ep, struct zsm_net_op *op,
			      uint64_t tag, uint64_t ignore, uint64_t flags)
{
	struct zsm_net_drain *d = &ep->drain;
	struct fi_msg_tagged m = {
		.addr = FI_ADDR_UNSPEC,
		.tag = tag,
		.ignore = ignore,
		.context = &op->fi_ctx,
	};
	ssize_t ret;

	op->kind = ZSM_OP_DRAIN;
	op->owner = ep;
	ret = fi_trecvmsg(ep->ep, &m, FI_PEEK | flags);
	if (ret == -FI_EAGAIN)
		return -EAGAIN;
	if (ret) {
		ZSM_INFO("net: %s: the provider cannot look at unexpected "
			 "messages (FI_PEEK: %s): messages for closed comms "
			 "stay with it",
			 ep->dev->name, zsm_fi_strerror((int)-ret));
		d->state = ZSM_DRAIN_OFF;
		return -ENOTSUP;
	}
	op->posted = 1;
	return 0;
}

/* The tag bits a prefix of len leaves open. */
static uint64_t zsm_net_drain_ignore(int len)
{
	return len ? ~0ULL >> len : ~0ULL;
}

/* A comm whose data messages zsm keeps: a receive comm not closing. */
static int zsm_net_drain_live(const struct zsm_net_comm *c)
{
	return c->type == ZSM_COMM_RECV && !c->closing;
}

/* Whether zsm keeps a message with tag: a control message, or data for
 * a live receive comm.  Its key is judged when a receive takes it (a look
 * need not say whether the message has CQ data: rxm's does not flag
 * it), so one for a live comm is never discarded here. */
static int zsm_net_drain_kept(struct zsm_net_ep *ep, uint64_t tag)
{
	struct zsm_net_comm *c;

	if (tag >> ZSM_DRAIN_CTRL_SHIFT == 1)
		return 1; /* ZSM_TAG_CTRL, nothing above it */
	if (tag >> ZSM_DRAIN_CTRL_SHIFT)
		return 0; /* bits no zsm message has */
	c = zsm_idmap_find(&ep->ids, zsm_tag_id(tag));
	return c && zsm_net_drain_live(c);
}

/* The bits two comm ids share from the top. */
static int zsm_net_drain_common(uint32_t a, uint32_t b)
{
	uint32_t x = (a ^ b) & ZSM_TAG_ID_MAX;

	return x ? __builtin_clz(x) - (32 - ZSM_TAG_BITS_ID) : ZSM_TAG_BITS_ID;
}

/*
 * The shortest prefix of a stray's tag under which zsm keeps nothing: the
 * tag's top set bit where it has bits above the control bit, else one
 * bit of comm id past the most it shares with a live receive comm.  So a
 * flood of strays for many ids is swept a set at a time, not one
 * message per two looks.  Engine only (the comm list is the engine's).
 */
int zsm_net_drain_stray_len(const struct zsm_net_ep *ep, uint64_t tag)
{
	const int id_top = 64 - ZSM_DRAIN_CTRL_SHIFT; /* bits down to id */
	uint32_t id = zsm_tag_id(tag);
	int most = -1;

	if (tag >> (ZSM_DRAIN_CTRL_SHIFT + 1))
		return __builtin_clzll(tag) + 1;
	for (const struct zsm_net_comm *c = ep->comms; c; c = c->ep_next) {
		int n = zsm_net_drain_common(c->local_id, id);

		if (zsm_net_drain_live(c) && n > most)
			most = n;
	}
	/* A stray's id is no live comm's (zsm_net_drain_kept): most < 23. */
	return id_top + most + 1;
}

int zsm_net_drain_strays_only(const struct zsm_net_ep *ep,
			      struct zsm_net_drain_prefix q)
{
	const int id_top = 64 - ZSM_DRAIN_CTRL_SHIFT;
	uint64_t fixed = q.tag & ~zsm_net_drain_ignore(q.len);

	if (fixed >> (ZSM_DRAIN_CTRL_SHIFT + 1))
		return 1; /* every tag there has a bit no zsm message has */
	if (q.len < id_top || fixed & ZSM_TAG_CTRL)
		return 0; /* control messages are there */
	for (const struct zsm_net_comm *c = ep->comms; c; c = c->ep_next)
		if (zsm_net_drain_live(c) &&
		    !((zsm_tag_data(c->local_id, 0) ^ fixed) >> (64 - q.len)))
			return 0;
	return 1;
}

/* Whether every message under prefix p is kept: nothing to look for. */
static int zsm_net_drain_all_kept(struct zsm_net_ep *ep,
				  struct zsm_net_drain_prefix p)
{
	if (p.len >= 64 - ZSM_DRAIN_CTRL_SHIFT &&
	    p.tag >> ZSM_DRAIN_CTRL_SHIFT == 1)
		return 1;
	return p.len == ZSM_DRAIN_LEAF && zsm_net_drain_kept(ep, p.tag);
}

static void zsm_net_drain_push(struct zsm_net_drain *d, uint64_t tag, int len)
{
	/* A walk holds one set per tag bit at most, and the one it looks
	 * in, and a sweep's set pushed back above them: never full. */
	if (d->top < (int)(sizeof(d->stack) / sizeof(d->stack[0])))
		d->stack[d->top++] = (struct zsm_net_drain_prefix){tag, len};
}

/* Look in the next set that may hold strays, or rest: none is left,
 * or this pass's looks are spent. */
static void zsm_net_drain_next(struct zsm_net_ep *ep)
{
	struct zsm_net_drain *d = &ep->drain;

	while (d->top > 0 && d->budget > 0) {
		d->cur = d->stack[--d->top];
		if (zsm_net_drain_all_kept(ep, d->cur))
			continue;
		d->budget--;
		if (zsm_net_drain_post(ep, &d->op, d->cur.tag,
				       zsm_net_drain_ignore(d->cur.len),
				       0) == 0) {
			d->state = ZSM_DRAIN_PEEK;
			return;
		}
		if (d->state == ZSM_DRAIN_OFF)
			return;
		d->top++; /* refused for now: this set first next time */
		break;
	}
	d->state = ZSM_DRAIN_IDLE;
	/* Looks spent on a set not yet done, or strays found (more may be
	 * coming in): the next pass goes on, so that a burst of strays
	 * is discarded as it lands, not a period later. */
	d->soon = d->top || d->found;
	if (!d->top)
		d->found = 0;
	d->next_ns = ep->pass_ns + (d->soon ? 0 : ZSM_DRAIN_PERIOD_NS);
}

/*
 * A round of discards in the set being swept, each of whatever message
 * is oldest there: any is a stray, so order does not matter.  The rounds
 * double while every discard found one, so an empty set costs few looks.
 */
static void zsm_net_drain_sweep_post(struct zsm_net_ep *ep)
{
	struct zsm_net_drain *d = &ep->drain;
	struct zsm_net_drain_prefix q = d->sweep;
	/* A receive comm made since the set was chosen may lie in it, its
	 * early data on the way: the set goes back to be looked in and
	 * split as any other.  (A round is done before a handshake's answer
	 * can bring that data: rxm looks as it is posted.) */
	int open = zsm_net_drain_strays_only(ep, q);

	d->state = ZSM_DRAIN_SWEEP;
	while (open && d->sweep_out < d->sweep_batch && d->budget > 0) {
		struct zsm_net_op *op = &d->sweep_ops[d->sweep_out];
		int ret = zsm_net_drain_post(ep, op, q.tag,
					     zsm_net_drain_ignore(q.len),
					     FI_DISCARD);

		if (ret == -ENOTSUP)
			return;
		if (ret)
			break;
		d->budget--;
		d->sweep_out++;
	}
	if (d->sweep_out)
		return;
	/* Refused, spent, or no longer strays only: looked in later. */
	zsm_net_drain_push(d, q.tag, q.len);
	zsm_net_drain_next(ep);
}

static void zsm_net_drain_sweep_start(struct zsm_net_ep *ep, uint64_t tag)
{
	struct zsm_net_drain *d = &ep->drain;
	struct zsm_net_drain_prefix p = d->cur;
	int len = zsm_net_drain_stray_len(ep, tag);

	if (len > p.len)
		zsm_net_drain_push(d, p.tag, p.len); /* the rest after */
	else
		len = p.len;
	d->sweep = (struct zsm_net_drain_prefix){
		tag & ~zsm_net_drain_ignore(len), len};
	d->sweep_batch = 1;
	d->sweep_end = 0;
	zsm_net_drain_sweep_post(ep);
}

static void zsm_net_drain_sweep_done(struct zsm_net_ep *ep, int err)
{
	struct zsm_net_drain *d = &ep->drain;

	d->sweep_out--;
	if (!err) {
		zsm_net_ctrl_drop(ep, ZSM_DROP_DATA,
				  "discarded from the provider");
		d->found = 1;
	} else {
		d->sweep_end = 1; /* empty (FI_ENOMSG), or refused */
	}
	if (d->sweep_out)
		return;
	if (!d->sweep_end) {
		if (d->sweep_batch < ZSM_DRAIN_SWEEP_MAX)
			d->sweep_batch *= 2;
		zsm_net_drain_sweep_post(ep);
		return;
	}
	zsm_net_drain_next(ep);
}

int zsm_net_drain_looking(const struct zsm_net_ep *ep)
{
	return ep->drain.state == ZSM_DRAIN_PEEK ||
	       ep->drain.state == ZSM_DRAIN_SWEEP;
}

int zsm_net_drain_busy(const struct zsm_net_ep *ep)
{
	/* Looking, or going on next pass. */
	return zsm_net_drain_looking(ep) ||
	       (ep->drain.state == ZSM_DRAIN_IDLE && ep->drain.soon);
}

void zsm_net_drain_tick(struct zsm_net_ep *ep, uint64_t now)
{
	struct zsm_net_drain *d = &ep->drain;

	if (d->state != ZSM_DRAIN_IDLE || now < d->next_ns)
		return;
	d->budget = ZSM_DRAIN_BUDGET;
	if (d->top == 0)
		zsm_net_drain_push(d, 0, 0); /* every tag */
	zsm_net_drain_next(ep);
}

void zsm_net_drain_complete(struct zsm_net_ep *ep, int err, uint64_t tag)
{
	struct zsm_net_drain *d = &ep->drain;
	struct zsm_net_drain_prefix p = d->cur;

	if (d->state == ZSM_DRAIN_SWEEP) {
		zsm_net_drain_sweep_done(ep, err);
		return;
	}
	d->op.posted = 2;
	if (d->state == ZSM_DRAIN_PEEK && !err &&
	    !zsm_net_drain_kept(ep, tag)) {
		zsm_net_drain_sweep_start(ep, tag);
		return;
	} else if (d->state == ZSM_DRAIN_PEEK && !err &&
		   p.len < ZSM_DRAIN_LEAF) {
		/* A message kept: each half of the set on its own. */
		zsm_net_drain_push(d, p.tag | 1ULL << (63 - p.len), p.len + 1);
		zsm_net_drain_push(d, p.tag, p.len + 1);
	}
	if (d->state != ZSM_DRAIN_OFF)
		zsm_net_drain_next(ep);
}
