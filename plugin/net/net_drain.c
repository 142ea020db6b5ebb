/* SPDX-License-Identifier: MIT */
/*
 * Owns the stray scan: data messages that no live comm will ever take
 * (for a comm that closed, for an id that never existed, without their
 * comm's key) would sit in the provider for ever, each holding one of its
 * buffers (rxm: about 17 KB).  Now and then the endpoint peeks at the
 * oldest unexpected data message: a stray is discarded and the next one
 * looked at, up to a budget; one that a live comm will take ends the
 * scan (it is taken when its receive is posted, and what lies behind it
 * is looked at then).  A message with the wrong key for a live comm is
 * dropped by the receive it matches (net_req.c).  Providers without FI_PEEK keep their strays; that
 * is said once.  Engine only.
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
	ZSM_DRAIN_DISCARD,
	ZSM_DRAIN_OFF,
};

/* Scans a tick may start, and strays one scan may discard. */
#define ZSM_DRAIN_BUDGET 4096

/* One look (or, with FI_DISCARD, one discard) at the oldest unexpected
 * data message with tag under ignore. */
static int zsm_net_drain_post(struct zsm_net_ep *ep, uint64_t tag,
			      uint64_t ignore, uint64_t flags)
{
	struct fi_msg_tagged m = {
		.addr = FI_ADDR_UNSPEC,
		.tag = tag,
		.ignore = ignore,
		.context = &ep->drain_op.fi_ctx,
	};
	ssize_t ret;

	ep->drain_op.kind = ZSM_OP_DRAIN;
	ep->drain_op.owner = ep;
	ret = fi_trecvmsg(ep->ep, &m, FI_PEEK | flags);
	if (ret == -FI_EAGAIN)
		return -EAGAIN;
	if (ret) {
		ZSM_INFO("net: %s: the provider cannot look at unexpected "
			 "messages (FI_PEEK: %s): messages for closed comms "
			 "stay with it",
			 ep->dev->name, zsm_fi_strerror((int)-ret));
		ep->drain_state = ZSM_DRAIN_OFF;
		return -ENOTSUP;
	}
	ep->drain_op.posted = 1;
	return 0;
}

static void zsm_net_drain_peek(struct zsm_net_ep *ep)
{
	/* Any data message: the control bit clear, any id, any tag. */
	if (zsm_net_drain_post(ep, 0, ZSM_TAG_CTRL - 1, 0) == 0)
		ep->drain_state = ZSM_DRAIN_PEEK;
}

int zsm_net_drain_busy(const struct zsm_net_ep *ep)
{
	return ep->drain_state == ZSM_DRAIN_PEEK ||
	       ep->drain_state == ZSM_DRAIN_DISCARD;
}

void zsm_net_drain_tick(struct zsm_net_ep *ep, uint64_t now)
{
	if (ep->drain_state != ZSM_DRAIN_IDLE || now < ep->next_drain_ns)
		return;
	ep->drain_budget = ZSM_DRAIN_BUDGET;
	zsm_net_drain_peek(ep);
}

/*
 * Whether a live comm takes a data message with tag.  Its key is judged
 * when a receive takes it (a look need not say whether the message has
 * CQ data: rxm's does not flag it), so one for a live comm is never
 * discarded here.
 */
static int zsm_net_drain_wanted(struct zsm_net_ep *ep, uint64_t tag)
{
	struct zsm_net_comm *c = zsm_idmap_find(&ep->ids, zsm_tag_id(tag));

	return c && c->type == ZSM_COMM_RECV && !c->closing;
}

void zsm_net_drain_complete(struct zsm_net_ep *ep, int err, uint64_t tag)
{
	ep->drain_op.posted = 2;
	if (ep->drain_state == ZSM_DRAIN_DISCARD) {
		if (!err) {
			zsm_net_ctrl_drop(ep, ZSM_DROP_DATA,
					  "discarded from the provider");
			/* More may be behind it: the proxy keeps looking in
			 * (net_ep.c, the idle sleep). */
			ep->active_ns = ep->pass_ns;
		}
		if (--ep->drain_budget > 0) {
			zsm_net_drain_peek(ep);
			return;
		}
	} else if (ep->drain_state == ZSM_DRAIN_PEEK && !err &&
		   !zsm_net_drain_wanted(ep, tag)) {
		/* The oldest unexpected message with this exact tag is the
		 * one just seen: nothing older matched the wider look. */
		if (zsm_net_drain_post(ep, tag, 0, FI_DISCARD) == 0) {
			ep->drain_state = ZSM_DRAIN_DISCARD;
			return;
		}
	}
	if (ep->drain_state != ZSM_DRAIN_OFF)
		ep->drain_state = ZSM_DRAIN_IDLE;
	ep->next_drain_ns = ep->pass_ns + 250000000ULL;
}
