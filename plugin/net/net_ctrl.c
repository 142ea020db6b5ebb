/* SPDX-License-Identifier: MIT */
/*
 * Owns the control plane of an endpoint: the receives that take every
 * control message whatever comm it names, the checks each message passes
 * before any comm sees it, the comms' outgoing control messages and the
 * endpoint's refusals.  Nothing a peer sends can fail a comm it does not
 * belong to: a message that is short, foreign, of another version,
 * malformed, for no live comm or with the wrong key is dropped, counted,
 * and said once per kind (then as a count now and then).  Engine only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "common/host.h"
#include "common/log.h"
#include "common/param.h"
#include "net/net.h"

/* How often a growing drop count is said again. */
#define ZSM_NET_DROP_SAY_NS (30ULL * 1000000000ULL)

struct zsm_net_ctrl_rx {
	struct zsm_net_op op; /* first */
	unsigned char *buf;
	void *desc;
};

static const char *const zsm_net_drop_names[ZSM_DROP_NKINDS] = {
	[ZSM_DROP_SHORT] = "control messages shorter than any of this wire "
			   "version",
	[ZSM_DROP_FOREIGN] = "control messages that are not zsm's",
	[ZSM_DROP_VERSION] = "control messages of another zsm wire version "
			     "(mixed zsm versions across ranks?)",
	[ZSM_DROP_MALFORMED] = "malformed control messages",
	[ZSM_DROP_UNKNOWN] = "control messages for no live comm",
	[ZSM_DROP_KEY] = "control messages without their comm's key",
	[ZSM_DROP_STATE] = "control messages their comm does not expect now",
	[ZSM_DROP_ADDRESS] = "connection requests from an address unlike "
			     "this endpoint's",
	[ZSM_DROP_TRUNCATED] = "control messages larger than any of zsm's",
	[ZSM_DROP_REPLAY] = "connection requests already answered",
	[ZSM_DROP_DATA] = "data messages for no live comm or without its "
			  "key",
};

void zsm_net_ctrl_drop(struct zsm_net_ep *ep, enum zsm_net_drop kind,
		       const char *detail)
{
	if (ep->dropped.n[kind]++ == 0) {
		ZSM_WARN("net: %s: dropping %s (%s); further ones are counted",
			 ep->dev->name, zsm_net_drop_names[kind], detail);
		ep->dropped.said[kind] = 1;
	}
}

void zsm_net_ctrl_drop_summary(struct zsm_net_ep *ep, uint64_t now, int all)
{
	char line[512];
	size_t used = 0;

	if (!all && now - ep->dropped.said_ns < ZSM_NET_DROP_SAY_NS)
		return;
	for (int k = 0; k < ZSM_DROP_NKINDS && used < sizeof(line); k++) {
		uint64_t n = ep->dropped.n[k];
		uint64_t fresh = n - ep->dropped.said[k];

		if (!fresh)
			continue;
		used += (size_t)snprintf(line + used, sizeof(line) - used,
					 "%s%llu %s (%llu in all)",
					 used ? "; " : "",
					 (unsigned long long)fresh,
					 zsm_net_drop_names[k],
					 (unsigned long long)n);
		ep->dropped.said[k] = ep->dropped.n[k];
	}
	ep->dropped.said_ns = now;
	if (used)
		ZSM_WARN("net: %s: dropped %s", ep->dev->name, line);
}

static void zsm_net_ctrl_rx_post(struct zsm_net_ep *ep,
				 struct zsm_net_ctrl_rx *rx)
{
	/* Whatever a peer sends eagerly fits: a message longer than any of
	 * zsm's spills into the endpoint's spill buffer, never truncates
	 * (see zsm_net_dev's trunc_unsafe), and is dropped by its length. */
	struct iovec iov[2] = {{rx->buf, ep->ctrl.len},
			       {ep->spill, ep->dev->trunc_unsafe}};
	void *desc[2] = {rx->desc, ep->spill_desc};
	ssize_t ret = fi_trecvv(ep->fi.ep, iov, desc, ep->spill ? 2 : 1,
				FI_ADDR_UNSPEC, ZSM_TAG_CTRL,
				ZSM_TAG_CTRL_IGNORE, &rx->op.fi_ctx);

	if (ret == 0) {
		rx->op.posted = 1;
		return;
	}
	/* Refused for now (resources): the next pass posts it again. */
	if (ret != -FI_EAGAIN)
		ZSM_WARN("net: %s: posting a control receive failed: %s; "
			 "trying again",
			 ep->dev->name, zsm_fi_strerror((int)-ret));
	rx->op.posted = 0;
	ep->ctrl.rx_unposted++;
}

int zsm_net_ctrl_init(struct zsm_net_ep *ep)
{
	size_t len = sizeof(struct zsm_ctrl_msg);
	unsigned char *bufs;
	void *mr = NULL, *desc = NULL;
	int ret;

	ep->ctrl.len = (len + 63) & ~(size_t)63;
	ep->ctrl.rx = calloc((size_t)ep->ctrl.nrx, sizeof(*ep->ctrl.rx));
	bufs = aligned_alloc(64, ep->ctrl.len * (size_t)ep->ctrl.nrx);
	if (!ep->ctrl.rx || !bufs) {
		free(ep->ctrl.rx);
		free(bufs);
		ep->ctrl.rx = NULL;
		return -ENOMEM;
	}
	if (ep->fi.needs_mr) {
		ret = zsm_net_mr_reg_internal(ep, bufs,
					      ep->ctrl.len *
						      (size_t)ep->ctrl.nrx,
					      FI_SEND | FI_RECV, &mr, &desc);
		if (ret) {
			free(bufs);
			free(ep->ctrl.rx);
			ep->ctrl.rx = NULL;
			return ret;
		}
	}
	ep->ctrl.mr = mr;
	for (int i = 0; i < ep->ctrl.nrx; i++) {
		struct zsm_net_ctrl_rx *rx = &ep->ctrl.rx[i];

		rx->op.kind = ZSM_OP_CTRL_RECV;
		rx->op.owner = ep;
		rx->op.index = (uint8_t)i;
		rx->buf = bufs + (size_t)i * ep->ctrl.len;
		rx->desc = desc;
		zsm_net_ctrl_rx_post(ep, rx);
	}
	return 0;
}

void zsm_net_ctrl_fini(struct zsm_net_ep *ep)
{
	if (!ep->ctrl.rx)
		return;
	/* The endpoint is closed: no receive is posted any more. */
	if (ep->ctrl.mr)
		zsm_net_mr_dereg_internal(ep->ctrl.mr);
	ep->ctrl.mr = NULL;
	free(ep->ctrl.rx[0].buf);
	free(ep->ctrl.rx);
	ep->ctrl.rx = NULL;
	ep->ctrl.nrx = 0;
}

void zsm_net_ctrl_want(struct zsm_net_comm *comm, enum zsm_ctrl_type t)
{
	struct zsm_net_ep *ep = comm->ep;

	comm->ctrl.want |= 1u << t;
	if (comm->ctrl.queued)
		return;
	comm->ctrl.queued = 1;
	comm->ctrl.next = NULL;
	if (ep->ctrl.tail)
		ep->ctrl.tail->ctrl.next = comm;
	else
		ep->ctrl.head = comm;
	ep->ctrl.tail = comm;
}

/* The control message t of comm, from the comm's state. */
static void zsm_net_ctrl_build(struct zsm_net_comm *comm, enum zsm_ctrl_type t,
			       struct zsm_ctrl_msg *m)
{
	struct zsm_net_ep *ep = comm->ep;

	memset(m, 0, sizeof(*m));
	m->magic = ZSM_HANDLE_MAGIC;
	m->version = ZSM_HANDLE_VERSION;
	m->type = (uint16_t)t;
	m->src_id = comm->local_id;
	m->dst_id = comm->remote.id;
	m->key = comm->remote.key;
	m->pid = (uint32_t)getpid();
	m->host_hash = zsm_host_hash();
	switch (t) {
	case ZSM_CTRL_CONN_REQ:
		m->key = comm->nonce;
		m->reply_key = comm->key;
		m->paths = (uint32_t)ep->dev->paths;
		m->addr_len = (uint32_t)ep->fi.addr_len;
		memcpy(m->addr, ep->fi.addr, ep->fi.addr_len);
		break;
	case ZSM_CTRL_CONN_ACK:
		m->reply_key = comm->key;
		m->data_key = comm->data_key;
		m->credit = comm->credit.granted;
		m->paths = (uint32_t)comm->paths.n;
		break;
	case ZSM_CTRL_PATH:
		zsm_net_path_build(comm, m);
		break;
	case ZSM_CTRL_GRANT:
		/* Built as it goes out: every receive posted until now. */
		m->credit = zsm_net_credit_grant(&comm->credit);
		break;
	case ZSM_CTRL_GET_READY:
		/* Built as it goes out: every GET answered until now. */
		m->credit = comm->rma.gets_served;
		m->status = comm->rma.get_err;
		break;
	case ZSM_CTRL_SIGNALED:
		/* Likewise: every SIGNAL handled until now. */
		m->applied = comm->rma.applied;
		m->status = comm->rma.status;
		break;
	case ZSM_CTRL_RMA_REFUSED:
		m->status = comm->rma.refused.err;
		m->rma_addr = comm->rma.refused.addr;
		m->reply_key = comm->rma.refused.key;
		break;
	case ZSM_CTRL_CLOSE:
		/* The sender's count of what it sent, the receiver's of what
		 * it took (net_comm.c, on_close). */
		m->sent = comm->type == ZSM_COMM_SEND ? comm->credit.sent
						      : comm->credit.taken;
		break;
	default:
		break;
	}
	/* The core's offer, answer or word on it: opaque here. */
	if (t == ZSM_CTRL_CONN_REQ || t == ZSM_CTRL_CONN_ACK ||
	    t == ZSM_CTRL_CONN_DONE) {
		m->offer_len = comm->ctrl.offer.len;
		memcpy(m->offer, comm->ctrl.offer.bytes, comm->ctrl.offer.len);
	}
}

/* One control send of comm, if none is in flight; 1 when it is done
 * with the comm's queue for this pass. */
static int zsm_net_ctrl_send_next(struct zsm_net_comm *comm)
{
	struct zsm_net_op *op = &comm->ctrl.send_op;
	struct zsm_net_ep *ep = comm->ep;
	void *buf = &comm->ctrl.out, *desc = NULL;
	enum zsm_ctrl_type t;
	ssize_t ret;

	if (op->posted == 1)
		return 0; /* its completion lets the next one go */
	t = (enum zsm_ctrl_type)__builtin_ctz(comm->ctrl.want);
	zsm_net_ctrl_build(comm, t, &comm->ctrl.out);
	op->kind = ZSM_OP_CTRL_SEND;
	op->owner = comm;
	op->index = (uint8_t)t;
	buf = zsm_net_txpool_src(ep, &comm->ctrl.out, sizeof(comm->ctrl.out),
				 &desc);
	if (!buf)
		return 0; /* every slot in flight: next pass */
	ret = fi_tsend(ep->fi.ep, buf, sizeof(comm->ctrl.out), desc,
		       comm->remote.addr, zsm_tag_ctrl(comm->remote.id, t),
		       &op->fi_ctx);
	buf = zsm_net_txpool_posted(ep, buf, ret);
	if (!ret)
		comm->ctrl.slot = buf;
	/* rxm refuses, for ever, to send to a process that is gone: the
	 * peer check and the connect timeout judge that, not a spin.  An
	 * RMA_REFUSED goes on a failed comm, which the peer check no longer
	 * watches: it gets as long as after a failed send. */
	if (ret == -FI_EAGAIN && t == ZSM_CTRL_RMA_REFUSED &&
	    ep->pass.begin_ns - comm->rma.refused.ns >=
		    ZSM_NET_REFUSED_RETRY_NS)
		comm->ctrl.want &= ~(1u << t);
	if (ret == -FI_EAGAIN)
		return 0;
	comm->ctrl.want &= ~(1u << t);
	if (ret) {
		zsm_net_comm_fail(comm, -EIO, "sending a control message "
					      "failed");
		comm->ctrl.want = 0;
		return 1;
	}
	op->posted = 1;
	comm->posted.ops++;
	comm->ep->ctrl.tx++;
	if (t == ZSM_CTRL_PATH)
		zsm_net_path_told(comm);
	return 0;
}

/*
 * A closing comm sends its CLOSE and nothing else but, before it, a
 * SIGNALED it owes.  A CLOSE the provider
 * refuses (rxm does, for ever, to a process that is gone) for as long as
 * a connect may take is given up: the peer is unreachable, and its own
 * liveness check tells it.
 */
static void zsm_net_ctrl_closing(struct zsm_net_comm *c, uint64_t now)
{
	uint64_t limit =
		(uint64_t)zsm_param_int(ZSM_P_CONNECT_TIMEOUT_MS) * 1000000ULL;

	/* A SIGNALED owed goes before the CLOSE: see post_close. */
	c->ctrl.want &= 1u << ZSM_CTRL_CLOSE | 1u << ZSM_CTRL_SIGNALED;
	if (c->ctrl.want && c->remote.gone) {
		c->ctrl.want = 0;
	} else if (c->ctrl.want && now > c->closed_ns &&
		   now - c->closed_ns > limit) {
		ZSM_INFO("net: %s: comm %u: its peer (pid %u) took no CLOSE "
			 "in %llu ms; giving it up",
			 c->ep->dev->name, c->local_id, c->remote.pid,
			 (unsigned long long)((now - c->closed_ns) / 1000000));
		c->ctrl.want = 0;
	}
}

void zsm_net_ctrl_progress(struct zsm_net_ep *ep)
{
	struct zsm_net_comm *c, *prev = NULL, *next;

	for (int i = 0; ep->ctrl.rx_unposted && i < ep->ctrl.nrx; i++) {
		if (ep->ctrl.rx[i].op.posted)
			continue;
		ep->ctrl.rx_unposted--;
		zsm_net_ctrl_rx_post(ep, &ep->ctrl.rx[i]);
	}
	for (c = ep->ctrl.head; c; c = next) {
		next = c->ctrl.next;
		if (c->closing)
			zsm_net_ctrl_closing(c, ep->pass.begin_ns);
		if (c->ctrl.want)
			zsm_net_ctrl_send_next(c);
		if (c->ctrl.want) {
			prev = c;
			continue;
		}
		c->ctrl.queued = 0;
		if (prev)
			prev->ctrl.next = next;
		else
			ep->ctrl.head = next;
		if (ep->ctrl.tail == c)
			ep->ctrl.tail = prev;
		/* One whose CLOSE was its last business may go now. */
		zsm_net_comm_maybe_free(c);
	}
}

void zsm_net_ctrl_nack(struct zsm_net_ep *ep, const struct zsm_ctrl_msg *m,
		       fi_addr_t to, int err)
{
	struct zsm_net_nack *n = NULL;
	void *buf, *desc = NULL;
	ssize_t ret;

	for (int i = 0; i < ZSM_NET_NACKS && !n; i++)
		if (ep->ctrl.nacks[i].op.posted != 1)
			n = &ep->ctrl.nacks[i];
	if (!n)
		return; /* all out: the connector's own timeout tells it */
	memset(&n->msg, 0, sizeof(n->msg));
	n->msg.magic = ZSM_HANDLE_MAGIC;
	n->msg.version = ZSM_HANDLE_VERSION;
	n->msg.type = ZSM_CTRL_CONN_ACK;
	n->msg.src_id = m->dst_id;
	n->msg.dst_id = m->src_id;
	n->msg.key = m->reply_key;
	n->msg.status = err;
	n->msg.pid = (uint32_t)getpid();
	n->msg.host_hash = zsm_host_hash();
	n->to = to;
	n->op.kind = ZSM_OP_NACK;
	n->op.owner = ep;
	buf = zsm_net_txpool_src(ep, &n->msg, sizeof(n->msg), &desc);
	if (!buf)
		return; /* as with no nack free */
	ret = fi_tsend(ep->fi.ep, buf, sizeof(n->msg), desc, to,
		       zsm_tag_ctrl(m->src_id, ZSM_CTRL_CONN_ACK),
		       &n->op.fi_ctx);
	buf = zsm_net_txpool_posted(ep, buf, ret);
	if (ret == 0) {
		n->op.posted = 1;
		n->slot = buf;
		ep->ctrl.tx++;
	}
}

/*
 * A connection request for no listener, or for a listener under another
 * nonce (closed, or a stale handle): refuse it at once, so the connector
 * does not wait for its timeout.
 */
static void zsm_net_ctrl_refuse(struct zsm_net_ep *ep,
				const struct zsm_ctrl_msg *m,
				enum zsm_net_drop kind)
{
	char why[128];
	fi_addr_t to;

	zsm_net_ctrl_drop(ep, kind, "a connection request, refused");
	if (zsm_net_ep_addr_check(ep, m->addr, m->addr_len, why,
				  sizeof(why))) {
		zsm_net_ctrl_drop(ep, ZSM_DROP_ADDRESS, why);
		return;
	}
	if (zsm_net_ep_av_insert(ep, m->addr, &to) == 0)
		zsm_net_ctrl_nack(ep, m, to, -ECONNREFUSED);
}

/* A comm's own peer spoke to it with the right key in state. */
static struct zsm_net_comm *zsm_net_ctrl_for(struct zsm_net_ep *ep,
					     const struct zsm_ctrl_msg *m,
					     int type, int state)
{
	struct zsm_net_comm *c = zsm_idmap_find(&ep->ids, m->dst_id);
	char detail[96];

	if (!c || c->type != type || c->closing) {
		snprintf(detail, sizeof(detail),
			 "a message of type %u for comm %u, %s", m->type,
			 m->dst_id, c ? "closing" : "gone or never made");
		zsm_net_ctrl_drop(ep, ZSM_DROP_UNKNOWN, detail);
		return NULL;
	}
	if (m->key != c->key) {
		zsm_net_ctrl_drop(ep, ZSM_DROP_KEY, "forged or stale");
		return NULL;
	}
	/* A comm hears only from its peer's comm, once it knows it (a
	 * connector learns it from the CONN_ACK). */
	if ((m->type != ZSM_CTRL_CONN_ACK && m->type != ZSM_CTRL_PATH &&
	     m->src_id != c->remote.id) ||
	    (state >= 0 && c->hs != state)) {
		zsm_net_ctrl_drop(ep, ZSM_DROP_STATE, "out of turn");
		return NULL;
	}
	return c;
}

/* A put's signal, or a GET: a control message of its own length
 * (net_wire.h), checked alike, for a connected receive comm. */
static void zsm_net_ctrl_on_signal(struct zsm_net_ep *ep,
				   const struct zsm_sig_msg *m, size_t len,
				   uint64_t tag)
{
	struct zsm_net_comm *c;

	if (len != sizeof(*m)) {
		zsm_net_ctrl_drop(ep, ZSM_DROP_SHORT, "wrong length");
		return;
	}
	if (m->type != (tag & ZSM_TAG_USER_MAX) ||
	    m->dst_id != zsm_tag_id(tag) ||
	    m->src_id == 0 || m->src_id > ZSM_TAG_ID_MAX) {
		zsm_net_ctrl_drop(ep, ZSM_DROP_MALFORMED, "bad type, id or "
							  "length");
		return;
	}
	/* The receive buffer holds a whole control message's room, and
	 * the fields the check reads sit where a control message has
	 * them. */
	c = zsm_net_ctrl_for(ep, (const struct zsm_ctrl_msg *)(const void *)m,
			     ZSM_COMM_RECV, ZSM_COMM_CONNECTED);
	if (c)
		zsm_net_rma_on_signal(c, m);
}

/*
 * The one-sided operations' answers (GET_READY, SIGNALED: owner to
 * initiator) and RMA_REFUSED (initiator to owner), for a live comm.  Like
 * a GRANT, one may cross its comm's close (a get that ran out of time) or
 * come after it failed (a SIGNALED behind the GET_READY that failed it;
 * an RMA_REFUSED to a comm that failed on its own): nothing to say then.
 */
static void zsm_net_ctrl_on_rma(struct zsm_net_ep *ep,
				const struct zsm_ctrl_msg *m, unsigned type)
{
	int kind = type == ZSM_CTRL_RMA_REFUSED ? ZSM_COMM_RECV
						: ZSM_COMM_SEND;
	struct zsm_net_comm *c = zsm_idmap_find(&ep->ids, m->dst_id);

	if (!c || c->type != kind || c->closing || zsm_net_comm_failed(c))
		return;
	c = zsm_net_ctrl_for(ep, m, kind, ZSM_COMM_CONNECTED);
	if (!c)
		return;
	if (type == ZSM_CTRL_GET_READY)
		zsm_net_rma_get_ready(c, m);
	else if (type == ZSM_CTRL_SIGNALED)
		zsm_net_rma_on_signaled(c, m);
	else
		zsm_net_rma_on_refused(c, m);
}

/* A control message (not a SIGNAL or GET) of the wrong length, type or
 * ids: dropped and counted, 1. */
static int zsm_net_ctrl_malformed(struct zsm_net_ep *ep,
				  const struct zsm_ctrl_msg *m, size_t len,
				  uint64_t tag)
{
	unsigned type = (unsigned)(tag & ZSM_TAG_USER_MAX);

	if (len != sizeof(*m)) {
		zsm_net_ctrl_drop(ep, ZSM_DROP_SHORT, "wrong length");
		return 1;
	}
	if (type == 0 || type >= ZSM_CTRL_NTYPES || m->type != type ||
	    m->dst_id != zsm_tag_id(tag) || m->src_id == 0 ||
	    m->src_id > ZSM_TAG_ID_MAX || m->addr_len > ZSM_NET_ADDR_MAX ||
	    m->offer_len > ZSM_OFFER_BYTES) {
		zsm_net_ctrl_drop(ep, ZSM_DROP_MALFORMED, "bad type, id or "
							  "length");
		return 1;
	}
	return 0;
}

/* A message of an established link: for a send or a receive comm. */
static void zsm_net_ctrl_on_link(struct zsm_net_ep *ep,
				 const struct zsm_ctrl_msg *m, unsigned type)
{
	struct zsm_net_comm *c;

	switch (type) {
	case ZSM_CTRL_GRANT:
		/* One may cross its send comm's close, or come after the comm
		 * failed: nothing to say then.  A live comm checks it. */
		c = zsm_idmap_find(&ep->ids, m->dst_id);
		if (!c || c->type != ZSM_COMM_SEND || c->closing)
			return;
		c = zsm_net_ctrl_for(ep, m, ZSM_COMM_SEND, -1);
		if (c)
			zsm_net_comm_on_grant(c, m);
		return;
	case ZSM_CTRL_CLOSE:
		/* Closes cross, in NCCL's teardown: one for a comm that is
		 * closing or gone is no news. */
		c = zsm_idmap_find(&ep->ids, m->dst_id);
		if (!c || c->closing || c->type == ZSM_COMM_LISTEN)
			return;
		c = zsm_net_ctrl_for(ep, m, c->type, -1);
		if (c)
			zsm_net_comm_on_close(c, m);
		return;
	case ZSM_CTRL_GET_READY:
	case ZSM_CTRL_SIGNALED:
	case ZSM_CTRL_RMA_REFUSED:
		zsm_net_ctrl_on_rma(ep, m, type);
		return;
	default: /* PING, PONG: for a send or a receive comm */
		c = zsm_idmap_find(&ep->ids, m->dst_id);
		/* A probe's answer may cross the comm's failure (a comm over
		 * several paths probes on each): no news then. */
		if (c && c->type != ZSM_COMM_LISTEN && zsm_net_comm_failed(c))
			return;
		c = zsm_net_ctrl_for(ep, m,
				     c && c->type == ZSM_COMM_RECV
					     ? ZSM_COMM_RECV
					     : ZSM_COMM_SEND,
				     ZSM_COMM_CONNECTED);
		if (!c)
			return;
		zsm_net_peer_heard(c->remote.obj, ep->pass.begin_ns);
		if (type == ZSM_CTRL_PING)
			zsm_net_ctrl_want(c, ZSM_CTRL_PONG);
		return;
	}
}

/* Every check a control message passes before a comm sees it. */
static void zsm_net_ctrl_on_message(struct zsm_net_ep *ep,
				    const struct zsm_ctrl_msg *m, size_t len,
				    uint64_t tag)
{
	unsigned type = (unsigned)(tag & ZSM_TAG_USER_MAX);
	struct zsm_net_comm *c;

	if (len >= 8 && m->magic == ZSM_HANDLE_MAGIC &&
	    m->version != ZSM_HANDLE_VERSION) {
		zsm_net_ctrl_drop(ep, ZSM_DROP_VERSION, "its version differs");
		return;
	}
	if (len < 4 || m->magic != ZSM_HANDLE_MAGIC) {
		zsm_net_ctrl_drop(ep, ZSM_DROP_FOREIGN, "wrong magic");
		return;
	}
	if (type == ZSM_CTRL_SIGNAL || type == ZSM_CTRL_GET) {
		zsm_net_ctrl_on_signal(ep, (const void *)m, len, tag);
		return;
	}
	if (zsm_net_ctrl_malformed(ep, m, len, tag))
		return;
	switch (type) {
	case ZSM_CTRL_CONN_REQ:
		c = zsm_idmap_find(&ep->ids, m->dst_id);
		if (!c || c->type != ZSM_COMM_LISTEN || c->closing)
			zsm_net_ctrl_refuse(ep, m, ZSM_DROP_UNKNOWN);
		else if (m->key != c->nonce)
			zsm_net_ctrl_refuse(ep, m, ZSM_DROP_KEY);
		else
			zsm_net_comm_on_req(c, m);
		return;
	case ZSM_CTRL_CONN_ACK:
		c = zsm_net_ctrl_for(ep, m, ZSM_COMM_SEND,
				     ZSM_COMM_CONNECTING);
		if (c)
			zsm_net_comm_on_ack(c, m);
		return;
	case ZSM_CTRL_CONN_DONE:
		c = zsm_net_ctrl_for(ep, m, ZSM_COMM_RECV,
				     ZSM_COMM_CONNECTING);
		if (c)
			zsm_net_comm_on_done(c, m);
		return;
	case ZSM_CTRL_PATH:
		/* Its key proves it; its sender is the path's link, which
		 * the comm did not know before. */
		c = zsm_idmap_find(&ep->ids, m->dst_id);
		/* One may cross its comm's failure or close: no news. */
		if (c && c->type != ZSM_COMM_LISTEN &&
		    (c->closing || zsm_net_comm_failed(c)))
			return;
		if (c && c->type == ZSM_COMM_SEND) {
			c = zsm_net_ctrl_for(ep, m, ZSM_COMM_SEND, -1);
			if (c)
				zsm_net_path_on_named(c, m);
		} else {
			c = zsm_net_ctrl_for(ep, m, ZSM_COMM_RECV,
					     ZSM_COMM_CONNECTING);
			if (c)
				zsm_net_path_on_joined(c, m);
		}
		return;
	default:
		zsm_net_ctrl_on_link(ep, m, type);
		return;
	}
}

/* A control receive completed: look at what came, post it again. */
static void zsm_net_ctrl_rx_done(struct zsm_net_ctrl_rx *rx, int err,
				 size_t len, uint64_t tag)
{
	struct zsm_net_ep *ep = rx->op.owner;

	rx->op.posted = 0;
	if (err == -ECANCELED)
		return; /* the endpoint is closing */
	if (err == -EMSGSIZE || (!err && len > ep->ctrl.len))
		zsm_net_ctrl_drop(ep, ZSM_DROP_TRUNCATED, "larger than a "
							   "control receive");
	else if (err)
		zsm_net_ctrl_drop(ep, ZSM_DROP_MALFORMED, strerror(-err));
	else
		zsm_net_ctrl_on_message(ep, (const struct zsm_ctrl_msg *)rx->buf,
					len, tag);
	zsm_net_ctrl_rx_post(ep, rx);
}

void zsm_net_ctrl_complete(struct zsm_net_op *op, int err, size_t len,
			   uint64_t tag)
{
	struct zsm_net_comm *comm;

	if (op->kind == ZSM_OP_CTRL_RECV) {
		zsm_net_ctrl_rx_done((struct zsm_net_ctrl_rx *)op, err, len,
				     tag);
		return;
	}
	if (op->kind == ZSM_OP_NACK) {
		struct zsm_net_ep *ep = op->owner;
		struct zsm_net_nack *n =
			zsm_container_of(op, struct zsm_net_nack, op);

		op->posted = 2;
		ep->ctrl.tx--;
		zsm_net_txpool_put(&ep->ctrl.txpool, n->slot);
		n->slot = NULL;
		return;
	}
	comm = op->owner;
	op->posted = 2;
	zsm_net_txpool_put(&comm->ep->ctrl.txpool, comm->ctrl.slot);
	comm->ctrl.slot = NULL;
	comm->posted.ops--;
	comm->ep->ctrl.tx--;
	/* An RMA_REFUSED follows a refusal after which tcp dropped the
	 * connection: its sends fail until rxm has seen the drop and
	 * connects again, for a while. */
	if (err && op->index == ZSM_CTRL_RMA_REFUSED && !comm->closing &&
	    comm->ep->pass.begin_ns - comm->rma.refused.ns <
		    ZSM_NET_REFUSED_RETRY_NS)
		zsm_net_ctrl_want(comm, ZSM_CTRL_RMA_REFUSED);
	/* A send that completed was taken by our own provider, not by the
	 * peer: it is no word from the peer (net_peer.c). */
	if (err && err != -ECANCELED && !comm->closing)
		zsm_net_comm_fail(comm, -ECONNRESET,
				  "the peer did not take a control message");
	if (comm->closing)
		zsm_net_comm_maybe_free(comm);
}
