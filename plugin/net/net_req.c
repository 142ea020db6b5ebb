/* SPDX-License-Identifier: MIT */
/*
 * Owns net's part of requests: the engine's accounting of each request's
 * operations, what a receive got, and the flush of a grouped receive.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "common/log.h"
#include "common/param.h"
#include "net/net.h"

uint64_t zsm_net_req_cq_data(const struct zsm_net_req *req)
{
	const struct zsm_mr *mr = req->base.mh[0];
	const struct zsm_net_comm *comm = req->ops[0].link;
	uint64_t data = comm->data_key;

	/* Host memory only: a GPU buffer is not the CPU's to read. */
	if (comm->ep->fi.crc && zsm_param_int(ZSM_P_CHECKSUM) &&
	    (!mr || mr->type == ZSM_MEM_HOST))
		data |= ZSM_CQ_HAS_CRC |
			(uint64_t)zsm_crc32c(req->base.data[0],
					     req->base.len[0])
				<< 32;
	return data;
}

/*
 * A message without its comm's key matched receive op i of req: someone
 * who is not the comm's peer sent it (or a comm long gone did).  The
 * receive can be posted again for the real message only where that keeps
 * NCCL's matching order: no later receive of the same tag is posted on
 * the comm.  0 when it was posted again.
 */
static int zsm_net_req_repost(struct zsm_net_req *req, int i)
{
	struct zsm_net_comm *comm = req->ops[i].link;
	struct zsm_comm *c = req->base.comm;

	zsm_net_ctrl_drop(comm->ep, ZSM_DROP_DATA,
			  "a message without its receive comm's key");
	for (struct zsm_req *b = zsm_req_next(c, NULL); b;
	     b = zsm_req_next(c, b)) {
		struct zsm_net_req *r = zsm_net_req_of(b);

		if (b->type != ZSM_REQ_RECV || r == req)
			continue;
		for (int k = 0; k < b->n; k++)
			if (r->ops[k].posted == 1 &&
			    b->tag[k] == req->base.tag[i])
				return -EPROTO;
	}
	req->ops[i].posted = 0;
	/* The same receive again, not one more for the sender to fill. */
	comm->credit.posted--;
	return zsm_net_ep_post_recv_op(req, i);
}

/*
 * What a receive op got, once the provider is done with it: a message
 * longer than the receive (its tail went to the spill buffer, see
 * zsm_net_post_recv) is the receive's error, and with ZSM_CHECKSUM the
 * bytes must be the ones sent.  Returns the op's error; *len becomes the
 * size NCCL sees.
 */
static int zsm_net_req_recv_done(struct zsm_net_op *op, int err, size_t *len,
				 uint64_t data)
{
	struct zsm_net_req *req = op->req;
	struct zsm_net_comm *comm = op->link;

	if (!err && *len > req->base.len[op->index])
		err = -EMSGSIZE;
	if (!err && (data & ZSM_CQ_HAS_CRC) &&
	    zsm_crc32c(req->base.data[op->index], *len) !=
		    (uint32_t)(data >> 32)) {
		ZSM_WARN("net: %s: receive comm %u: a %zu-byte message was "
			 "altered in flight (its checksum does not match)",
			 comm->ep->dev->name, comm->local_id, *len);
		err = -EBADMSG;
	}
	if (err)
		*len = 0; /* a failed receive holds nothing NCCL may read */
	return err;
}

/* Whether req, which the provider finished, still waits for word from
 * the peer: a send for its receive to be known posted (net_credit.h), a
 * put for its SIGNAL to be known applied (net_rma.c). */
static int zsm_net_req_waits(const struct zsm_net_comm *comm,
			     const struct zsm_net_req *req)
{
	if (req->base.type == ZSM_REQ_SEND)
		return zsm_net_credit_unasked(&comm->credit, req->get_seq);
	if (req->base.type == ZSM_REQ_PUT)
		return req->get_seq && comm->rma.acked < req->get_seq;
	return 0;
}

/*
 * A request the provider finished that still waits for word from the
 * peer: not done yet, unless its comm failed, which fails it.  1 when
 * held.
 */
static int zsm_net_req_hold(struct zsm_net_comm *comm, struct zsm_net_req *req)
{
	struct zsm_req *b = &req->base;

	if (b->error || !zsm_net_req_waits(comm, req))
		return 0;
	b->error = zsm_comm_error(b->comm);
	if (b->error)
		return 0;
	req->held_next = comm->held;
	comm->held = req;
	return 1;
}

/* What each path carried (said when its comm closes). */
static void zsm_net_req_count(struct zsm_net_comm *comm,
			      const struct zsm_req *b, size_t len)
{
	if (b->type != ZSM_REQ_SEND && b->type != ZSM_REQ_RECV)
		return;
	comm->paths.msgs++;
	comm->paths.bytes += b->type == ZSM_REQ_RECV ? len : b->len[0];
}

void zsm_net_req_op_done(struct zsm_net_op *op, int err, size_t len,
			 uint64_t data)
{
	struct zsm_net_req *req = op->req;
	struct zsm_req *b = &req->base;
	struct zsm_net_comm *comm = op->link;
	/* relaxed: engine-only write, see zsm_req_orphan. */
	int orphan = atomic_load_explicit(&b->orphan, memory_order_relaxed);
	int was_posted = op->posted == 1;

	/* Posted ones leave the endpoint's count (the op posters);
	 * fail_rest completes some that never were. */
	if (was_posted) {
		if (b->type == ZSM_REQ_RECV)
			comm->ep->queue.rx_inflight--;
		else
			comm->ep->queue.tx_inflight--;
		if (b->type == ZSM_REQ_PUT || b->type == ZSM_REQ_GET)
			zsm_net_rma_op_done(op, err);
	}
	op->posted = 2;
	comm->posted.ops--;
	comm->posted.data--;
	comm->posted.recv -= b->type == ZSM_REQ_RECV;
	if (!comm->posted.recv)
		comm->posted.recv_max = 0;
	if (b->type == ZSM_REQ_RECV && !err && !orphan &&
	    comm->ep->fi.cq_data &&
	    (data & ZSM_CQ_KEY_MASK) != comm->data_key) {
		if (zsm_net_req_repost(req, op->index) == 0)
			return;
		zsm_net_comm_fail(comm, -EPROTO,
				  "a message without this comm's key took a "
				  "receive that cannot be posted again in "
				  "order");
		err = -EPROTO;
	}
	if (b->type == ZSM_REQ_RECV) {
		/* A message of the peer's took it (or it was cancelled,
		 * when the comm is done for): the sender's allowance moves
		 * on (net_credit.h). */
		if (was_posted) {
			zsm_net_credit_on_arrival(&comm->credit);
			zsm_net_comm_grant_check(comm);
		}
		err = zsm_net_req_recv_done(op, err, &len, data);
	}
	/* A get's bytes are the request's only once in its own memory. */
	if (b->type == ZSM_REQ_GET && was_posted && !err && !orphan)
		err = zsm_net_rma_get_landed(op);
	if (orphan) {
		/* A late completion of an already reported request. */
		if (comm->closing)
			zsm_net_comm_maybe_free(comm);
		return;
	}
	if (err == -ECANCELED) {
		/* A cancel caused by a failed peer reports why the comm
		 * failed. */
		int why = zsm_comm_error(b->comm);

		if (why)
			err = why;
	}
	/* Only what arrives is word from the peer: a send completes when
	 * our provider took it, which it does with the link down. */
	if (!err && b->type == ZSM_REQ_RECV)
		zsm_net_peer_heard(comm->remote.obj, comm->ep->pass.begin_ns);
	if (err && !b->error)
		b->error = err;
	if (b->type == ZSM_REQ_RECV)
		b->sizes[op->index] = (int)len;
	else
		b->sizes[0] = (int)b->len[0];
	if (!err)
		zsm_net_req_count(comm, b, len);
	if (--b->remaining == 0 && !zsm_net_req_hold(comm, req))
		zsm_req_publish(b);
	if (comm->closing)
		zsm_net_comm_maybe_free(comm);
}

void zsm_net_req_report_held(struct zsm_net_comm *comm, int err)
{
	struct zsm_net_req **pp = &comm->held, *r;

	while ((r = *pp)) {
		if (!err && zsm_net_req_waits(comm, r)) {
			pp = &r->held_next;
			continue;
		}
		/* Off the list first: once published, test() may reuse it. */
		*pp = r->held_next;
		if (err)
			r->base.error = err;
		zsm_req_publish(&r->base);
	}
}

void zsm_net_req_undefer(struct zsm_net_req *req)
{
	if (req->deferred) {
		req->deferred = 0;
		((struct zsm_net_comm *)req->base.comm->tp)->posted.deferred--;
	}
}

/*
 * The buffer a flush reads back: the last one that received bytes (the
 * NIC's writes to it were the last posted), or -1 when none did or the
 * device's plan needs no flush for its memory.
 */
static int zsm_net_flush_pick(const struct zsm_net_comm *comm, int n,
			      const int *sizes, struct zsm_mr **mrs)
{
	const struct zsm_net_hmem_plan *plan = &comm->ep->dev->gdr;
	int last = -1;

	if (!plan->flush_gpu && !plan->flush_host)
		return -1;
	for (int i = n - 1; i >= 0 && last < 0; i--)
		if (sizes[i] > 0)
			last = i;
	if (last < 0 || !mrs[last])
		return -1;
	if (!(mrs[last]->type == ZSM_MEM_CUDA ? plan->flush_gpu
					      : plan->flush_host))
		return -1;
	return last;
}

int zsm_net_flush_op(struct zsm_comm *c, int n, void **data, const int *sizes,
		     struct zsm_mr **mrs, struct zsm_req *b, int *flush)
{
	struct zsm_net_comm *comm = c->tp;
	const struct zsm_net_hmem_plan *plan = &comm->ep->dev->gdr;
	struct zsm_net_req *req;
	int last;

	*flush = 0;
	if (!b) {
		/* A question: may a flush be needed at all? */
		for (int i = 0; i < n; i++)
			*flush |= sizes[i] > 0;
		*flush &= plan->flush_gpu || plan->flush_host;
		return 0;
	}
	req = zsm_net_req_of(b);
	last = zsm_net_flush_pick(comm, n, sizes, mrs);
	if (last < 0)
		return 0;
	/* A few bytes suffice: the read cannot pass the NIC's earlier
	 * writes to the GPU, so once it is back they have landed. */
	if (zsm_net_mr_flush_target(zsm_net_mr_of(mrs[last]), data[last],
				    &req->rma_addr, &req->rma_key)) {
		ZSM_WARN("net: iflush: buffer %d has no provider registration "
			 "to read back",
			 last);
		return -EINVAL;
	}
	/* The read names the buffer's provider registration: keep it
	 * alive. */
	zsm_mr_hold(mrs[last]);
	b->type = ZSM_REQ_FLUSH;
	b->n = 1;
	b->remaining = 1;
	b->data[0] = comm->ep->flush.buf;
	b->len[0] = sizes[last] < 8 ? (size_t)sizes[last] : 8;
	b->mh[0] = mrs[last];
	req->mr_desc[0] = comm->ep->flush.desc;
	req->ready = 1;
	req->ops[0].req = req;
	req->ops[0].link = comm;
	req->ops[0].path = 0;
	req->ops[0].kind = ZSM_OP_FLUSH;
	req->ops[0].index = 0;
	req->ops[0].posted = 0;
	*flush = 1;
	return 0;
}
