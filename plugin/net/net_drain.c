/* SPDX-License-Identifier: MIT */
/*
 * Owns the stray scan: data messages that no live comm will ever take
 * (for a comm that closed, for an id that never existed, with tag bits no
 * zsm message has) would sit in the provider for ever, each holding one
 * of its buffers (rxm: about 17 KB).  Now and then, and soon after the
 * provider's fd woke the engine for nothing it completed, the endpoint
 * peeks at the oldest unexpected message in a set of tags.  A message
 * zsm keeps (a control message, which a control receive takes, or data
 * for a live receive comm, which its receive takes, or whose wrong key
 * that receive judges, net_req.c) splits the set in two by the next tag
 * bit: the half without it is looked in, the half with it split again
 * without a look, down to the tags of that one comm, which are kept
 * whole.  So a message kept costs the scan one look per tag bit above
 * the caller's tag, and nothing stays behind it (one used to end the
 * scan).  A stray found is swept in the widest set of tags around it
 * that holds strays only: where the provider grows a pool for strays
 * (rxm), receives into a buffer nobody reads are kept posted while
 * strays come, so that a flood lands in them, not in the pool, and go
 * back once none came for a while; elsewhere discards of the oldest
 * there go on until one finds the set empty.  The sets still to look in
 * carry over to the next pass.  Providers without FI_PEEK keep their
 * strays; that is said once.  Engine only.
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
/* How long a sweep's receives stay posted with no stray coming, and how
 * many go back each pass after that. */
#define ZSM_DRAIN_SWEEP_IDLE_NS 2000000ULL
#define ZSM_DRAIN_SHRINK 16
/* How long the scan waits once a whole scan found no stray. */
#define ZSM_DRAIN_PERIOD_NS 250000000ULL
/* How long after one ends a scan may start on the provider's word that
 * something came that no operation took. */
#define ZSM_DRAIN_HINT_NS 5000000ULL

/* One look at the oldest unexpected message with tag under ignore. */
static int zsm_net_drain_post(struct zsm_net_ep *ep, struct zsm_net_op *op,
			      uint64_t tag, uint64_t ignore)
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
	ret = fi_trecvmsg(ep->fi.ep, &m, FI_PEEK);
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

static void zsm_net_drain_push(struct zsm_net_drain *d, uint64_t tag, int len,
			       int held)
{
	/* A walk holds one set per tag bit at most, and the one it looks
	 * in, and a sweep's set pushed back above them: never full. */
	if (d->top < (int)(sizeof(d->stack) / sizeof(d->stack[0])))
		d->stack[d->top++] =
			(struct zsm_net_drain_prefix){tag, len, held};
}

/*
 * A set that holds a message zsm keeps: the half without it to be looked
 * in, the half with it split again without a look (it would find the
 * same message), down to that one comm's tags.  One look a tag bit, and
 * the stack holds one set per length, each deeper than the one below.
 */
static void zsm_net_drain_split(struct zsm_net_drain *d,
				struct zsm_net_drain_prefix p)
{
	uint64_t bit = 1ULL << (63 - p.len);
	uint64_t half = p.tag & ~zsm_net_drain_ignore(p.len + 1);

	zsm_net_drain_push(d, half ^ bit, p.len + 1, 0);
	zsm_net_drain_push(d, p.tag, p.len + 1, 1);
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
		if (d->cur.held && d->cur.len < ZSM_DRAIN_LEAF) {
			zsm_net_drain_split(d, d->cur);
			continue;
		}
		d->budget--;
		if (zsm_net_drain_post(ep, &d->op, d->cur.tag,
				       zsm_net_drain_ignore(d->cur.len)) == 0) {
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
	d->next_ns = ep->pass.begin_ns + (d->soon ? 0 : ZSM_DRAIN_PERIOD_NS);
	d->ended_ns = ep->pass.begin_ns;
}

/*
 * One operation of the sweep in its set.  Where the provider keeps
 * strays in a pool it grows (rxm, which is where the endpoint has its
 * spill buffer), a receive into the spill buffer: it fits whatever rxm
 * sends eagerly and takes the next stray as it lands.  Elsewhere a
 * discard of the oldest stray there (FI_PEEK | FI_DISCARD), done at once
 * or FI_ENOMSG: libfabric's tcp RDM endpoint keeps few strays anyway,
 * and drops the connection a receive too small for one came on.
 */
static int zsm_net_drain_take(struct zsm_net_ep *ep, struct zsm_net_op *op)
{
	struct zsm_net_drain_prefix q = ep->drain.sweep;
	struct iovec iov = {ep->spill, ep->dev->trunc_unsafe};
	struct fi_msg_tagged m = {
		.msg_iov = &iov,
		.desc = &ep->spill_desc,
		.iov_count = 1,
		.addr = FI_ADDR_UNSPEC,
		.tag = q.tag,
		.ignore = zsm_net_drain_ignore(q.len),
		.context = &op->fi_ctx,
	};
	ssize_t ret;

	op->kind = ZSM_OP_DRAIN;
	op->owner = ep;
	if (ep->spill) {
		ret = fi_trecvmsg(ep->fi.ep, &m, FI_COMPLETION);
	} else {
		m.msg_iov = NULL;
		m.desc = NULL;
		m.iov_count = 0;
		ret = fi_trecvmsg(ep->fi.ep, &m, FI_PEEK | FI_DISCARD);
	}
	if (ret == -FI_EAGAIN)
		return -EAGAIN;
	if (ret) {
		ZSM_INFO("net: %s: a %s for strays failed (%s): they stay "
			 "with the provider",
			 ep->dev->name, ep->spill ? "receive" : "discard",
			 zsm_fi_strerror((int)-ret));
		return -EIO;
	}
	op->posted = 1;
	return 0;
}

/*
 * Up to n of the sweep's receives asked back from the provider: each
 * ends as cancelled, or with the stray it took first.  A few at a time
 * while strays may come again: each cancellation is a completion to
 * read, and each read lets the provider take in what came, which the
 * receives still posted take, not its pool.  One the provider will not
 * cancel is left to it (it ends when a stray comes).
 */
static void zsm_net_drain_sweep_cancel(struct zsm_net_ep *ep, int n)
{
	struct zsm_net_drain *d = &ep->drain;

	for (int i = 0; i < ZSM_DRAIN_SWEEP_MAX && n > 0; i++) {
		struct zsm_net_op *op = &d->sweep_ops[i];
		ssize_t ret;

		if (op->posted != 1)
			continue;
		n--;
		ret = fi_cancel(&ep->fi.ep->fid, &op->fi_ctx);
		if (ret && ret != -FI_ENOENT) {
			ZSM_INFO("net: %s: cancelling a receive for strays "
				 "failed (%s): it stays posted",
				 ep->dev->name, zsm_fi_strerror((int)-ret));
			op->posted = 3; /* its completion frees it */
			d->sweep_out--;
			continue;
		}
		op->posted = 4;
		d->sweep_cancelling++;
	}
}

/* The sweep's set no longer holds strays only (a receive comm was made
 * there), or the provider failed a receive: every receive goes back. */
static void zsm_net_drain_sweep_stop(struct zsm_net_ep *ep)
{
	struct zsm_net_drain *d = &ep->drain;

	d->sweep_stop = 1;
	d->sweep_want = 0;
	zsm_net_drain_sweep_cancel(ep, ZSM_DRAIN_SWEEP_MAX);
}

/* Keep sweep_want receives of the sweep posted. */
static void zsm_net_drain_sweep_fill(struct zsm_net_ep *ep)
{
	struct zsm_net_drain *d = &ep->drain;

	if (d->sweep_stop)
		return;
	if (!zsm_net_drain_strays_only(ep, d->sweep)) {
		/* Looked in again later, split as any other set. */
		zsm_net_drain_push(d, d->sweep.tag, d->sweep.len, 0);
		zsm_net_drain_sweep_stop(ep);
		return;
	}
	while (d->sweep_out - d->sweep_cancelling < d->sweep_want &&
	       d->nfree > 0) {
		struct zsm_net_op *op = &d->sweep_ops[d->sweep_free[--d->nfree]];
		int ret = zsm_net_drain_take(ep, op);

		if (ret) {
			d->nfree++;
			if (ret != -EAGAIN) {
				/* None of its receives stays for a comm
				 * made later to lose messages to. */
				zsm_net_drain_sweep_stop(ep);
				d->state = ZSM_DRAIN_OFF;
			}
			break;
		}
		d->sweep_out++;
	}
}

static void zsm_net_drain_sweep_end(struct zsm_net_ep *ep)
{
	struct zsm_net_drain *d = &ep->drain;

	if (d->state == ZSM_DRAIN_OFF)
		return;
	zsm_net_drain_next(ep);
}

static void zsm_net_drain_sweep_start(struct zsm_net_ep *ep, uint64_t tag)
{
	struct zsm_net_drain *d = &ep->drain;
	struct zsm_net_drain_prefix p = d->cur;
	int len = zsm_net_drain_stray_len(ep, tag);

	if (len > p.len)
		zsm_net_drain_push(d, p.tag, p.len, 0); /* the rest after */
	else
		len = p.len;
	d->sweep = (struct zsm_net_drain_prefix){
		tag & ~zsm_net_drain_ignore(len), len, 0};
	d->state = ZSM_DRAIN_SWEEP;
	d->sweep_want = 1;
	d->sweep_stop = 0;
	d->sweep_cancelling = 0;
	d->sweep_hit_ns = zsm_now_ns();
	d->nfree = 0;
	for (int i = ZSM_DRAIN_SWEEP_MAX - 1; i >= 0; i--)
		if (!d->sweep_ops[i].posted)
			d->sweep_free[d->nfree++] = (uint16_t)i;
	zsm_net_drain_sweep_fill(ep);
	if (!d->sweep_out)
		zsm_net_drain_sweep_end(ep);
}

/*
 * An operation of the sweep is back.  One that took a stray (whole, or
 * truncated), or discarded one, is posted again, with one more while the
 * sweep stays under its most: they double while strays keep coming, and
 * what a flood brings lands in them.  Once none has taken a stray for
 * ZSM_DRAIN_SWEEP_IDLE_NS they go back a few at a time
 * (zsm_net_drain_tick): posted receives that no message takes lengthen
 * every match the provider makes.
 */
static void zsm_net_drain_sweep_done(struct zsm_net_ep *ep,
				     struct zsm_net_op *op, int err)
{
	struct zsm_net_drain *d = &ep->drain;
	int was = op->posted;

	op->posted = 0;
	if (was == 3)
		return;
	if (was == 4)
		d->sweep_cancelling--;
	d->sweep_free[d->nfree++] = (uint16_t)(op - d->sweep_ops);
	d->sweep_out--;
	if (!err || err == -EMSGSIZE) {
		zsm_net_ctrl_drop(ep, ZSM_DROP_DATA,
				  "discarded from the provider");
		d->found = 1;
		d->sweep_hit_ns = zsm_now_ns();
		if (d->sweep_want < ZSM_DRAIN_SWEEP_MAX)
			d->sweep_want++;
		zsm_net_drain_sweep_fill(ep);
	} else if (err == -ENOMSG) {
		d->sweep_want = 0; /* a discard found the set empty */
	} else if (err != -ECANCELED && !d->sweep_stop) {
		zsm_net_drain_sweep_stop(ep);
	}
	if (!d->sweep_out && !d->sweep_want)
		zsm_net_drain_sweep_end(ep);
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

	if (d->state == ZSM_DRAIN_SWEEP) {
		int left = d->sweep_out - d->sweep_cancelling;

		/* now is the pass's start: a stray may have come since. */
		if (now > d->sweep_hit_ns &&
		    now - d->sweep_hit_ns > ZSM_DRAIN_SWEEP_IDLE_NS) {
			int n = left < ZSM_DRAIN_SHRINK ? left : ZSM_DRAIN_SHRINK;

			d->sweep_want = left - n;
			zsm_net_drain_sweep_cancel(ep, n);
		} else {
			zsm_net_drain_sweep_fill(ep);
		}
		if (!d->sweep_out && !d->sweep_want)
			zsm_net_drain_sweep_end(ep);
		return;
	}
	if (d->state != ZSM_DRAIN_IDLE || now < d->next_ns)
		return;
	d->budget = ZSM_DRAIN_BUDGET;
	if (d->top == 0)
		zsm_net_drain_push(d, 0, 0, 0); /* every tag */
	zsm_net_drain_next(ep);
}

void zsm_net_drain_hint(struct zsm_net_ep *ep)
{
	struct zsm_net_drain *d = &ep->drain;
	uint64_t at = d->ended_ns + ZSM_DRAIN_HINT_NS;

	if (d->state == ZSM_DRAIN_IDLE && at < d->next_ns)
		d->next_ns = at;
}

void zsm_net_drain_comm_made(struct zsm_net_ep *ep)
{
	struct zsm_net_drain *d = &ep->drain;

	/* Before its CONN_ACK is posted, so before any of its data can
	 * come: a receive of the sweep never takes what the comm is owed. */
	if (d->state == ZSM_DRAIN_SWEEP && !d->sweep_stop &&
	    !zsm_net_drain_strays_only(ep, d->sweep))
		zsm_net_drain_sweep_fill(ep);
}

void zsm_net_drain_complete(struct zsm_net_ep *ep, struct zsm_net_op *op,
			    int err, uint64_t tag)
{
	struct zsm_net_drain *d = &ep->drain;
	struct zsm_net_drain_prefix p = d->cur;

	if (op != &d->op) {
		zsm_net_drain_sweep_done(ep, op, err);
		return;
	}
	d->op.posted = 2;
	if (d->state == ZSM_DRAIN_PEEK && !err &&
	    !zsm_net_drain_kept(ep, tag)) {
		zsm_net_drain_sweep_start(ep, tag);
		return;
	} else if (d->state == ZSM_DRAIN_PEEK && !err &&
		   p.len < ZSM_DRAIN_LEAF) {
		/* A message kept: the set around it, looked in a half at a
		 * time (zsm_net_drain_split). */
		p.tag = tag;
		zsm_net_drain_split(d, p);
	}
	if (d->state != ZSM_DRAIN_OFF)
		zsm_net_drain_next(ep);
}
