/* SPDX-License-Identifier: MIT */
/*
 * Owns the per-device endpoint's traffic: the posting of requests, the
 * reading of completions and the passes over every device (opening and
 * closing it are net_ep_open.c's).  Every call here runs under the
 * engine lock.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "common/log.h"
#include "common/param.h"
#include "net/net.h"
#include "net/net_api.h"
#include "net/net_fi_abi.h"

#define ZSM_NET_CQ_BATCH 32
/* Reads a pass makes for the stray scan's looks at most (each look is
 * one, and the scan's own budget bounds them too). */
#define ZSM_NET_DRAIN_READS 512

struct zsm_net_comm *zsm_net_dev_find_comm(struct zsm_net_dev *dev,
					   uint32_t id)
{
	struct zsm_net_comm *c = dev->ep ? zsm_idmap_find(&dev->ep->ids, id)
					 : NULL;

	/* Connecting comms live on sending endpoints only (ids of the two
	 * kinds may be alike). */
	for (struct zsm_net_ep *ep = dev->retired; ep && !c;
	     ep = ep->retired_next)
		if (!ep->rx_role && ep->path == 0)
			c = zsm_idmap_find(&ep->ids, id);
	return c;
}

int zsm_net_ep_addr_check(const struct zsm_net_ep *ep, const void *addr,
			  size_t len, char *why, size_t why_len)
{
	unsigned short family, mine;

	if (len != ep->fi.addr_len) {
		snprintf(why, why_len, "a %zu-byte address where %s's are "
				       "%zu bytes",
			 len, ep->dev->name, ep->fi.addr_len);
		return -EINVAL;
	}
	switch (ep->fi.addr_format) {
	case FI_SOCKADDR:
	case FI_SOCKADDR_IN:
	case FI_SOCKADDR_IN6:
		/* sa_family first, then the port in network order. */
		memcpy(&family, addr, sizeof(family));
		memcpy(&mine, ep->fi.addr, sizeof(mine));
		if (family != mine) {
			snprintf(why, why_len,
				 "address family %u where %s's is %u", family,
				 ep->dev->name, mine);
			return -EINVAL;
		}
		if (!((const unsigned char *)addr)[2] &&
		    !((const unsigned char *)addr)[3]) {
			snprintf(why, why_len, "a socket address of port 0");
			return -EINVAL;
		}
		return 0;
	default:
		/* Provider-specific formats: the length is all we know. */
		return 0;
	}
}

int zsm_net_ep_av_insert(struct zsm_net_ep *ep, const void *addr,
			 fi_addr_t *out)
{
	int ret = fi_av_insert(ep->fi.av, addr, 1, out, 0, NULL);

	if (ret != 1) {
		ZSM_WARN("net: %s: the peer's address was refused by the "
			 "address vector: %s",
			 ep->dev->name,
			 zsm_fi_strerror(ret < 0 ? -ret : EINVAL));
		return -EINVAL;
	}
	return 0;
}

static int zsm_net_fi_err(int fi_err)
{
	switch (fi_err) {
	case FI_ETRUNC:
		return -EMSGSIZE;
	case FI_ECANCELED:
		return -ECANCELED;
	case FI_ENOMSG:
		return -ENOMSG;
	case FI_ECONNREFUSED:
	case FI_ECONNRESET:
	case FI_ECONNABORTED:
	case FI_ENOTCONN:
	case FI_EHOSTUNREACH:
	case FI_ETIMEDOUT:
	case FI_EIO:
		return -ECONNRESET;
	default:
		return -EIO;
	}
}

/*
 * A receive of a comm that has none left in the provider: its next one
 * may go whatever the shared budget says (zsm_net_ep_rx_room), so its
 * fifo leaves the receive room, where it would wait behind comms that
 * may not.
 */
static void zsm_net_recv_done(struct zsm_net_op *op, int err, size_t len,
			      uint64_t data)
{
	struct zsm_comm *owner = op->req->base.comm;
	struct zsm_net_comm *comm = op->link;
	/* A closing comm's last completion may free it; its close, queued
	 * behind, has woken its fifo already. */
	int closing = comm->closing;

	zsm_net_req_op_done(op, err, len, data);
	if (!closing && !comm->posted.recv)
		zsm_proxy_fifo_kick(&owner->fifo);
}

static void zsm_net_op_complete(struct zsm_net_ep *ep, struct zsm_net_op *op,
				int err, size_t len, uint64_t tag,
				uint64_t data)
{
	switch (op->kind) {
	case ZSM_OP_RECV:
		zsm_net_recv_done(op, err, len, data);
		break;
	case ZSM_OP_SEND:
	case ZSM_OP_FLUSH:
		zsm_net_req_op_done(op, err, len, data);
		break;
	case ZSM_OP_DRAIN:
		zsm_net_drain_complete(ep, op, err, tag);
		break;
	default:
		zsm_net_ctrl_complete(op, err, len, tag);
		break;
	}
}

int zsm_net_ep_progress(struct zsm_net_ep *ep)
{
	struct fi_cq_tagged_entry cqe[ZSM_NET_CQ_BATCH];
	int events = 0;

	for (int round = 0; round < 8; round++) {
		ssize_t n = fi_cq_read(ep->fi.cq, cqe, ZSM_NET_CQ_BATCH);

		if (n == -FI_EAGAIN)
			break;
		if (n == -FI_EAVAIL) {
			/* Room for what newer libfabrics write (fi_abi). */
			struct zsm_fi_cq_err big = {0};
			struct fi_cq_err_entry *e = &big.e;

			if (fi_cq_readerr(ep->fi.cq, e, 0) < 1)
				break;
			/* Said where the failure is handled, with what it
			 * means there; the provider's own words at TRACE. */
			ZSM_TRACE("net: %s: operation failed: %s",
				  ep->dev->name, zsm_fi_strerror(e->err));
			if (e->op_context)
				zsm_net_op_complete(ep, e->op_context,
						    zsm_net_fi_err(e->err),
						    e->len, e->tag, e->data);
			events++;
			continue;
		}
		if (n < 0) {
			ZSM_WARN("net: %s: reading completions failed: %s",
				 ep->dev->name, zsm_fi_strerror((int)-n));
			break;
		}
		for (ssize_t i = 0; i < n; i++) {
			/* A peer's write with remote CQ data (writedata):
			 * no operation of ours. */
			if (cqe[i].flags & FI_REMOTE_WRITE) {
				if (cqe[i].flags & FI_REMOTE_CQ_DATA)
					zsm_net_rma_on_write(ep, cqe[i].data);
				continue;
			}
			/* Every data message of ours carries remote CQ data
			 * where the endpoint has it, and sockets (1.17)
			 * hands it over without FI_REMOTE_CQ_DATA: a
			 * receive's data is taken either way. */
			zsm_net_op_complete(ep, cqe[i].op_context, 0,
					    cqe[i].len, cqe[i].tag,
					    (cqe[i].flags & FI_REMOTE_CQ_DATA) ||
						    (ep->fi.cq_data &&
						     (cqe[i].flags & FI_RECV))
						    ? cqe[i].data
						    : 0);
		}
		events += (int)n;
		if (n < ZSM_NET_CQ_BATCH)
			break;
	}
	/* Completions free zsm's budgets and the provider's queues. */
	if (events) {
		zsm_proxy_room_freed(&ep->queue.tx_room);
		zsm_proxy_room_freed(&ep->queue.rx_room);
	}
	return events;
}

/*
 * A receive smaller than what the provider may send eagerly, into host
 * memory, gets the spill buffer as a second part: whatever arrives fits,
 * so the provider never truncates (see zsm_net_dev's trunc_unsafe), and
 * a message that reached the spill is longer than the receive: its error.
 */
static int zsm_net_needs_spill(const struct zsm_net_req *req,
			       const struct zsm_net_comm *comm, int i)
{
	const struct zsm_mr *mr = req->base.mh[i];

	return req->base.type == ZSM_REQ_RECV &&
	       req->base.len[i] < comm->ep->dev->trunc_unsafe &&
	       (!mr || mr->type == ZSM_MEM_HOST);
}

/* Receive op i of req, with the spill buffer after it where needed. */
static ssize_t zsm_net_post_recv(struct zsm_net_req *req,
				 struct zsm_net_comm *comm, int i)
{
	struct zsm_net_ep *ep = comm->ep;
	fi_addr_t from = ep->fi.directed ? comm->remote.addr : FI_ADDR_UNSPEC;
	uint64_t tag = zsm_tag_data(comm->local_id, req->base.tag[i]);
	struct iovec iov[2];
	void *desc[2];

	if (!zsm_net_needs_spill(req, comm, i))
		return fi_trecv(ep->fi.ep, req->base.data[i], req->base.len[i],
				req->mr_desc[i], from, tag, 0,
				&req->ops[i].fi_ctx);
	iov[0].iov_base = req->base.data[i];
	iov[0].iov_len = req->base.len[i];
	iov[1].iov_base = ep->spill;
	iov[1].iov_len = ep->dev->trunc_unsafe - req->base.len[i];
	desc[0] = req->mr_desc[i];
	desc[1] = ep->spill_desc;
	return fi_trecvv(ep->fi.ep, iov, desc, 2, from, tag, 0,
			 &req->ops[i].fi_ctx);
}

/* zsm's own refusals and the provider's read alike. */
_Static_assert(FI_EAGAIN == EAGAIN, "libfabric's EAGAIN is the system's");

/* Full by zsm's own count: req waits, as the provider would refuse
 * it, until a completion frees some (-EAGAIN).  A receive's room is
 * found for its whole request (zsm_net_ep_rx_room). */
int zsm_net_ep_tx_full(struct zsm_net_req *req, struct zsm_net_ep *ep)
{
	if (ep->queue.tx_inflight < ep->queue.tx_budget)
		return 0;
	zsm_proxy_park(&req->base.desc, &ep->queue.tx_room, 1);
	return -EAGAIN;
}

/* Operation i of a send: once the receiver posted for it, or for the
 * early messages before it (its GRANT lets it go, net_credit.h). */
static ssize_t zsm_net_op_send(struct zsm_net_req *req, int i)
{
	struct zsm_req *b = &req->base;
	struct zsm_net_op *op = &req->ops[i];
	struct zsm_net_comm *comm = op->link;
	struct zsm_net_ep *ep = comm->ep;
	uint64_t tag = zsm_tag_data(comm->remote.id, b->tag[i]);
	size_t len = b->len[i];
	ssize_t ret = zsm_net_ep_tx_full(req, ep);

	if (ret)
		return ret;
	if (!zsm_net_credit_may_send(&comm->credit, len > ep->queue.eager_max))
		return -EAGAIN;
	if (ep->fi.cq_data)
		ret = fi_tsenddata(ep->fi.ep, b->data[i], len, req->mr_desc[i],
				   req->cq_data, comm->remote.addr, tag,
				   &op->fi_ctx);
	else
		ret = fi_tsend(ep->fi.ep, b->data[i], len, req->mr_desc[i],
			       comm->remote.addr, tag, &op->fi_ctx);
	if (!ret) {
		ep->queue.tx_inflight++;
		zsm_net_credit_on_send(&comm->credit);
		req->get_seq = comm->credit.sent;
	}
	return ret;
}

static ssize_t zsm_net_op_recv(struct zsm_net_req *req, int i)
{
	struct zsm_net_comm *comm = req->ops[i].link;
	struct zsm_net_ep *ep = comm->ep;
	size_t len = req->base.len[i];
	ssize_t ret = zsm_net_post_recv(req, comm, i);

	if (!ret) {
		comm->posted.recv++;
		ep->queue.rx_inflight++;
		if (len > comm->posted.recv_max)
			comm->posted.recv_max = len;
		zsm_net_credit_on_post(&comm->credit, 1,
				       len > ep->queue.eager_max);
	}
	return ret;
}

/* A flush: a read of our own buffer back through the NIC. */
static ssize_t zsm_net_op_flush(struct zsm_net_req *req, int i)
{
	struct zsm_net_ep *ep = req->ops[i].link->ep;
	ssize_t ret = zsm_net_ep_tx_full(req, ep);

	if (!ret)
		ret = fi_read(ep->fi.ep, req->base.data[i], req->base.len[i],
			      req->mr_desc[i], ep->flush.self, req->rma_addr,
			      req->rma_key, &req->ops[i].fi_ctx);
	if (!ret)
		ep->queue.tx_inflight++;
	return ret;
}

/* Post operation i of req by its kind's poster: 0, -EAGAIN, or -EIO
 * (said). */
static int zsm_net_ep_post_with(struct zsm_net_req *req, int i,
				zsm_net_op_fn post)
{
	struct zsm_req *b = &req->base;
	struct zsm_net_comm *comm = req->ops[i].link;
	ssize_t ret = post(req, i);

	/* Refused: by the provider, or by zsm (its -EAGAIN is the same). */
	if (ret == -FI_EAGAIN)
		return -EAGAIN;
	if (ret) {
		ZSM_WARN("net: %s: posting a %s failed: %s",
			 comm->ep->dev->name, zsm_req_what(b),
			 zsm_fi_strerror((int)-ret));
		return -EIO;
	}
	req->ops[i].posted = 1;
	comm->posted.ops++;
	comm->posted.data++;
	zsm_net_ep_pump_hint(comm->ep);
	return 0;
}

int zsm_net_ep_post_recv_op(struct zsm_net_req *req, int i)
{
	return zsm_net_ep_post_with(req, i, zsm_net_op_recv);
}

/* The provider operations req posts: one per buffer, or a put's or
 * get's (its bytes, and a put's signal after them). */
static int zsm_net_req_nops(const struct zsm_req *b)
{
	return b->type == ZSM_REQ_PUT || b->type == ZSM_REQ_GET
		       ? zsm_net_rma_nops(b)
		       : b->n;
}

/* Which path op i of a send or receive goes on: its tag's turn. */
static int zsm_net_req_pick_path(struct zsm_net_req *req, int i)
{
	struct zsm_req *b = &req->base;
	struct zsm_net_comm *comm = b->comm->tp;
	int p = 0;

	if ((b->type == ZSM_REQ_SEND || b->type == ZSM_REQ_RECV) &&
	    zsm_net_path_next(&comm->paths.seq, b->tag[i], comm->paths.n,
			      &p))
		return -ENOMEM;
	req->ops[i].path = (uint8_t)p;
	return 0;
}

/* First post of req: each operation and its descriptor; -ENOMEM. */
static int zsm_net_req_ready(struct zsm_net_req *req)
{
	struct zsm_req *b = &req->base;
	int nops = zsm_net_req_nops(b);

	req->ready = 1;
	req->get_seq = 0; /* a put without a SIGNAL waits for no answer */
	if (b->type == ZSM_REQ_PUT || b->type == ZSM_REQ_GET)
		/* Each op completes on its own; the last one publishes. */
		b->remaining = (uint8_t)nops;
	for (int i = 0; i < nops; i++) {
		req->ops[i].req = req;
		req->ops[i].link = b->comm->tp;
		req->ops[i].path = 0;
		req->ops[i].kind = b->type == ZSM_REQ_RECV ? ZSM_OP_RECV
							   : ZSM_OP_SEND;
		req->ops[i].index = (uint8_t)i;
		req->ops[i].posted = 0;
	}
	for (int i = 0; i < nops; i++) {
		/* A put's or get's ops all use its one buffer's. */
		struct zsm_mr *mr = b->mh[i < b->n ? i : 0];

		if (zsm_net_req_pick_path(req, i))
			return -ENOMEM;
		/* Paths are taken only where no descriptor is needed
		 * (net_path.c): another domain's would be wrong there. */
		req->mr_desc[i] =
			mr && !req->ops[i].path
				? zsm_net_mr_desc(zsm_net_mr_of(mr),
						  req->ops[i].link->ep)
				: NULL;
	}
	return 0;
}

/* The links of req's ops not yet posted, from their paths: 0, or
 * -EAGAIN while a path's link is not ready yet. */
static int zsm_net_req_links(struct zsm_net_req *req, int nops)
{
	struct zsm_net_comm *comm = req->base.comm->tp;

	for (int i = 0; i < nops; i++) {
		struct zsm_net_comm *l = comm->paths.link[req->ops[i].path];

		if (req->ops[i].posted)
			continue;
		if (!l || l->hs != ZSM_COMM_CONNECTED)
			return -EAGAIN;
		req->ops[i].link = l;
	}
	return 0;
}

/*
 * Whether a receive request may go to the provider now, its nops buffers
 * at once.  A sender may send a few small messages before their receives
 * are posted (the early allowance, net_credit.h); each waits in the
 * provider until its receive gets there.  So a receive must never wait
 * in zsm's fifo for room that only other comms' messages would free:
 * those may come only after this one (a ring forwards what it got), or
 * never (a sender that stopped), and a send its sender saw done would
 * never arrive (issue 32: 500 comm pairs of small messages stopped so
 * for good).  The shared budget is half the queue, first come; the other
 * half keeps room for each comm's next receive, whole, whenever it has
 * none in the provider, so whatever its sender sent early finds it.
 */
static struct zsm_net_ep *zsm_net_ep_rx_short(const struct zsm_net_req *req,
					       int nops)
{
	/* Ops go in index order: once the first is posted, so was the
	 * room (a receive posted again replaces its own op). */
	if (req->ops[0].posted)
		return NULL;
	/* Each path's link by the same rule, on its own endpoint. */
	for (int i = 0; i < nops; i++) {
		const struct zsm_net_comm *l = req->ops[i].link;
		size_t k = 0;

		if (!l->posted.recv)
			continue;
		for (int j = 0; j < nops; j++)
			k += req->ops[j].link->ep == l->ep;
		if (l->ep->queue.rx_inflight + k > l->ep->queue.rx_budget)
			return l->ep;
	}
	return NULL;
}

/* A request refused for now: -EAGAIN, or for good once NCCL closed its
 * comm (-ECANCELED), so that its close, queued behind it, goes on. */
static int zsm_net_ep_refused(struct zsm_net_req *req,
			      struct zsm_net_comm *comm)
{
	/* acquire: pairs with the release in zsm_comm_close. */
	if (atomic_load_explicit(&req->base.comm->close_asked,
				 memory_order_acquire))
		return -ECANCELED;
	if (!req->deferred) {
		req->deferred = 1;
		comm->posted.deferred++;
	}
	return -EAGAIN;
}

/* Operations of req never posted complete here, with err.  The last
 * completion may publish the request, after which test() can free and
 * reuse it: the operations are picked out first. */
static void zsm_net_req_fail_rest(struct zsm_net_req *req, int nops, int err)
{
	int idx[ZSM_MAX_RECVS], k = 0;

	for (int i = 0; i < nops; i++)
		if (!req->ops[i].posted)
			idx[k++] = i;
	zsm_net_req_undefer(req);
	/* Counted on their links as if posted: op_done takes them off
	 * again. */
	for (int j = 0; j < k; j++) {
		struct zsm_net_comm *l = req->ops[idx[j]].link;

		l->posted.ops++;
		l->posted.data++;
		l->posted.recv += req->base.type == ZSM_REQ_RECV;
	}
	for (int j = 0; j < k; j++)
		zsm_net_req_op_done(&req->ops[idx[j]], err, 0, 0);
}

/*
 * Whether req may go to the provider now: 0; -EAGAIN, refused for now
 * (its path's link is in its handshake, or a receive's room is short,
 * parked then); or the error that ends it.
 */
static int zsm_net_ep_admit(struct zsm_net_req *req, struct zsm_net_comm *comm,
			    int nops)
{
	struct zsm_req *b = &req->base;
	struct zsm_net_ep *short_ep;
	int err;

	if (comm->closing)
		return -ECANCELED;
	err = zsm_net_comm_peer_closed(comm, b);
	if (!err)
		err = zsm_comm_error(b->comm);
	if (err)
		return err;
	/* A path's link still in its handshake: next pass. */
	if (zsm_net_req_links(req, nops))
		return zsm_net_ep_refused(req, comm);
	/* A send's path link hears its receiver's CLOSE on its own. */
	if (b->type == ZSM_REQ_SEND && req->ops[0].link != comm &&
	    zsm_net_comm_peer_closed(req->ops[0].link, b))
		return -ECONNRESET;
	short_ep = b->type == ZSM_REQ_RECV ? zsm_net_ep_rx_short(req, nops)
					   : NULL;
	if (!short_ep)
		return 0;
	err = zsm_net_ep_refused(req, comm);
	/* Until a receive completes: one of another comm's frees budget,
	 * this comm's last one lets it go regardless (zsm_net_recv_done). */
	if (err == -EAGAIN)
		zsm_proxy_park(&b->desc, &short_ep->queue.rx_room,
			       short_ep->queue.rx_inflight >=
				       short_ep->queue.rx_budget);
	return err;
}

/* The posting every kind shares: first post, checks, each operation by
 * post, and the end of those it never posted. */
static int zsm_net_ep_post_req(struct zsm_req *b, zsm_net_op_fn post)
{
	struct zsm_net_req *req = zsm_net_req_of(b);
	struct zsm_net_comm *comm = b->comm->tp;
	int nops = zsm_net_req_nops(b), err;

	err = !req->ready && zsm_net_req_ready(req) ? -ENOMEM : 0;
	if (!err && !nops) {
		/* A get of 0 bytes: nothing to move. */
		zsm_req_publish(b);
		return 0;
	}
	if (!err)
		err = zsm_net_ep_admit(req, comm, nops);
	if (err == -EAGAIN)
		return err;
	if (err)
		goto fail_rest;
	if (b->type == ZSM_REQ_SEND)
		req->cq_data = zsm_net_req_cq_data(req);
	for (int i = 0; i < nops; i++) {
		if (req->ops[i].posted)
			continue;
		/* Refused for now: no room, no credit, an earlier write or
		 * ack to wait for (NCCL tests none of a closed comm's
		 * requests any more). */
		err = zsm_net_ep_post_with(req, i, post);
		if (err == -EAGAIN)
			err = zsm_net_ep_refused(req, comm);
		if (err == -EAGAIN)
			return err;
		if (err)
			goto fail_rest;
	}
	zsm_net_req_undefer(req);
	if (b->type == ZSM_REQ_RECV)
		for (int i = 0; i < nops; i++)
			zsm_net_comm_grant_check(req->ops[i].link);
	return 0;

fail_rest:
	zsm_net_req_fail_rest(req, nops, err);
	return 0;
}

int zsm_net_ep_post_send(struct zsm_req *b)
{
	return zsm_net_ep_post_req(b, zsm_net_op_send);
}

int zsm_net_ep_post_recv(struct zsm_req *b)
{
	return zsm_net_ep_post_req(b, zsm_net_op_recv);
}

int zsm_net_ep_post_flush(struct zsm_req *b)
{
	return zsm_net_ep_post_req(b, zsm_net_op_flush);
}

int zsm_net_ep_post_rma(struct zsm_req *b)
{
	return zsm_net_ep_post_req(b, zsm_net_rma_post_op);
}

void zsm_net_ep_tick(struct zsm_net_ep *ep, uint64_t now)
{
	if (now < ep->pass.next_tick_ns)
		return;
	ep->pass.next_tick_ns = now + zsm_comm_check_ns();
	/* Parked requests see now and then what else changed for them: a
	 * comm failed (its requests end in their post), or a rule of their
	 * own; completions alone wake them otherwise. */
	zsm_proxy_room_flush(&ep->queue.tx_room);
	zsm_proxy_room_flush(&ep->queue.rx_room);
	zsm_net_comm_expire(ep, now);
	zsm_net_comm_grant_late(ep);
	zsm_net_peer_check(ep, now);
	zsm_net_ctrl_drop_summary(ep, now, 0);
}

int zsm_net_ep_busy(const struct zsm_net_ep *ep)
{
	if (ep->queue.tx_inflight || ep->queue.rx_inflight || ep->ctrl.head ||
	    ep->ctrl.tx || ep->windows || zsm_net_drain_busy(ep))
		return 1;
	/* Comms NCCL does not hold yet: handshakes, with their clocks, and
	 * ones the engine frees if nobody comes back for them; and sends
	 * held for their GRANT, as in flight (net_credit.h). */
	for (const struct zsm_net_comm *c = ep->comms; c; c = c->ep_next)
		if (c->type != ZSM_COMM_LISTEN &&
		    (c->closing || zsm_net_comm_waits(c) ||
		     /* a path's link in its handshake: the provider
		      * connects only while polled */
		     (c->paths.parent && c->hs == ZSM_COMM_CONNECTING) ||
		     /* acquire: pairs with the release in
		      * zsm_entry_publish_comm. */
		     (c->owner && !atomic_load_explicit(&c->owner->published,
							memory_order_acquire))))
			return 1;
	return 0;
}

static int zsm_net_ep_pass(struct zsm_net_ep *ep, uint64_t now)
{
	int events;

	/* An endpoint with nothing in flight is not polled: only when its
	 * fd said something came, or its timed work is due. */
	if (!ep->pass.kicked && now < ep->pass.next_tick_ns &&
	    !zsm_net_ep_busy(ep))
		return 0;
	ep->pass.begin_ns = now;
	events = zsm_net_ep_progress(ep);
	/* Its fd said something came (the scan's own looks are not news;
	 * while it finds strays it goes on by itself, net_drain.c). */
	if (ep->pass.kicked)
		ep->pass.active_ns = now;
	if (ep->pass.kicked && !events)
		zsm_net_drain_hint(ep);
	ep->pass.kicked = 0;
	zsm_net_ctrl_progress(ep);
	zsm_net_ep_tick(ep, now);
	zsm_net_drain_tick(ep, now);
	/* Each look of the stray scan completes through the queue, the next
	 * one posted as it does: read it again for the scan, up to its
	 * budget (net_drain.c). */
	for (int i = 0; i < ZSM_NET_DRAIN_READS && zsm_net_drain_looking(ep);
	     i++) {
		int n = zsm_net_ep_progress(ep);

		if (!n)
			break;
		events += n;
	}
	zsm_net_ep_pump_hint(ep);
	return events;
}

/*
 * Whether a retired endpoint still serves a comm that works (or a
 * listener).  One whose comms all failed or close is not polled: its
 * silent peer's connection may come back with the transfers it held,
 * and a pass would move them into buffers NCCL freed after closing
 * those comms one by one (seen with paths in netns-linkdown).
 */
static int zsm_net_ep_serves(const struct zsm_net_ep *ep)
{
	for (const struct zsm_net_comm *c = ep->comms; c; c = c->ep_next)
		if (!c->closing && !zsm_net_comm_failed(c))
			return 1;
	return 0;
}

static int zsm_net_progress_all(void *self)
{
	struct zsm_net_topo *topo = self;
	int events = 0;
	uint64_t now = zsm_now_ns();

	for (int i = 0; i < topo->ndevs; i++) {
		struct zsm_net_dev *dev = &topo->devs[i];
		struct zsm_net_ep *ep;
		int at = 0;

		while ((ep = zsm_net_dev_next_ep(dev, &at)))
			events += zsm_net_ep_pass(ep, now);
		for (ep = dev->retired; ep; ep = ep->retired_next)
			if (zsm_net_ep_serves(ep))
				events += zsm_net_ep_pass(ep, now);
		if (dev->retired)
			zsm_net_ep_reap(dev);
	}
	return events;
}

static int zsm_net_busy(void *self)
{
	struct zsm_net_topo *topo = self;

	for (int i = 0; i < topo->ndevs; i++) {
		struct zsm_net_dev *dev = &topo->devs[i];
		struct zsm_net_ep *ep;
		int at = 0;

		if (dev->retired)
			return 1;
		while ((ep = zsm_net_dev_next_ep(dev, &at)))
			if (zsm_net_ep_busy(ep))
				return 1;
	}
	return 0;
}

/* Each endpoint's wait fd, once fi_trywait says nothing is pending. */
static int zsm_net_wait_fds(void *self, struct pollfd *fds, int max)
{
	struct zsm_net_topo *topo = self;
	struct zsm_net_ep *ep;
	struct fid *fid;
	int n = 0, at = 0, i = 0;

	while (i < topo->ndevs) {
		ep = zsm_net_dev_next_ep(&topo->devs[i], &at);
		if (!ep) {
			i++;
			at = 0;
			continue;
		}
		/* No fd: look in now and then.  Nor for a while after
		 * something came: what arrives without a completion (a
		 * stray, which the provider keeps) is found by the timed
		 * scan, and the fd says nothing more about it. */
		if (ep->fi.wait_fd < 0 || n == max ||
		    zsm_now_ns() - ep->pass.active_ns < 4 * zsm_comm_check_ns())
			return 0;
		fid = &ep->fi.cq->fid;
		if (fi_trywait(ep->fi.fabric, &fid, 1))
			return -EAGAIN; /* something is there: pass first */
		fds[n].fd = ep->fi.wait_fd;
		fds[n].events = POLLIN;
		fds[n].revents = 0;
		n++;
	}
	return n;
}

/* An fd said something arrived: every endpoint is looked at next. */
static void zsm_net_kick(void *self)
{
	struct zsm_net_topo *topo = self;

	for (int i = 0; i < topo->ndevs; i++) {
		struct zsm_net_ep *ep;
		int at = 0;

		while ((ep = zsm_net_dev_next_ep(&topo->devs[i], &at)))
			ep->pass.kicked = 1;
	}
}

const struct zsm_transport_ops zsm_net_progress_ops = {
	.name = "net",
	.progress = zsm_net_progress_all,
	.busy = zsm_net_busy,
	.wait_fds = zsm_net_wait_fds,
	.kick = zsm_net_kick,
};

void *zsm_net_progress_self(void)
{
	return &zsm_net_topo;
}
