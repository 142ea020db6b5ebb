/* SPDX-License-Identifier: MIT */
/*
 * Owns net's gets.  A get reads the owner's window with fi_read, but only
 * once the owner said its bytes are ready.  The initiator first sends a
 * GET naming them (net_wire.h), on its link and ordered like a signal
 * after every earlier put of the link: saw delivers it after the writes,
 * writedata holds it at the owner until they landed, atomic sends it
 * with FI_FENCE, and fence lets it leave once they were delivered.  The owner's engine checks that the
 * bytes lie in one of its windows, copies a staged (GPU) window's bytes
 * down into the mirror the read will find them in, and answers with a
 * GET_READY.  So the read sees every earlier put of the link, in host and
 * GPU windows alike, and a GPU window's own writes up to the answer.  A
 * get into a staged window of ours reads into its mirror and copies the
 * bytes up before the request completes.
 *
 * The request waits for the answer in its comm's fifo: the link's later
 * operations wait behind it, a round trip.  An answer that does not come
 * within ZSM_NET_GET_WAIT_NS fails the comm; an owner that refuses or
 * fails a get fails its comm and says so in its answer, which fails ours.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "common/clock.h"
#include "common/log.h"
#include "net/net.h"
#include "net/net_api.h"

/* The owner's answer comes within this, or never: its engine copies at
 * most a window's bytes down (each copy bounded by cuda_win's own wait)
 * and a dead owner is found by the peer check well before. */
#define ZSM_NET_GET_WAIT_NS (120ULL * 1000000000ULL)

void zsm_net_rma_msg_head(const struct zsm_net_comm *comm,
			  struct zsm_sig_msg *m, enum zsm_ctrl_type t)
{
	memset(m, 0, sizeof(*m));
	m->magic = ZSM_HANDLE_MAGIC;
	m->version = ZSM_HANDLE_VERSION;
	m->type = (uint16_t)t;
	m->src_id = comm->local_id;
	m->dst_id = comm->remote.id;
	m->key = comm->remote.key;
}

/* A get's local registration when it is a staged window of ours. */
static struct zsm_net_mr *zsm_net_rma_get_staged(const struct zsm_req *b)
{
	struct zsm_net_mr *mr;

	if (!b->mh[0] || b->mh[0]->ops != &zsm_net_comm_ops)
		return NULL;
	mr = zsm_net_mr_of(b->mh[0]);
	return mr->mirror.host ? mr : NULL;
}

/* Op 0: the GET, once it may leave. */
static ssize_t zsm_net_rma_get_ask(struct zsm_net_req *req,
				   struct zsm_net_op *op)
{
	struct zsm_req *b = &req->base;
	struct zsm_net_comm *comm = b->comm->tp;
	struct zsm_net_ep *ep = comm->ep;
	struct zsm_sig_msg *m = &req->sig;
	ssize_t ret;

	/* Where the provider orders no message after the writes (fence),
	 * the GET waits, as a signal does, until every earlier write of the
	 * comm completed; it stays in the comm's fifo meanwhile.  Under
	 * atomic its FI_FENCE does that (zsm_net_rma_send_msg). */
	if (ep->rma == ZSM_RMA_MECH_FENCE && comm->rma.writes)
		return -FI_EAGAIN;
	zsm_net_rma_msg_head(comm, m, ZSM_CTRL_GET);
	m->put_win = b->rma.dst_id;
	m->put_addr = b->rma.addr;
	m->put_len = b->len[0];
	m->writes = comm->rma.posted;
	ret = zsm_net_rma_send_msg(req, op, ZSM_CTRL_GET);
	if (!ret) {
		req->get_seq = ++comm->rma.gets_sent;
		req->get_deadline_ns = zsm_now_ns() + ZSM_NET_GET_WAIT_NS;
	}
	return ret;
}

ssize_t zsm_net_rma_get_post(struct zsm_net_req *req, int i)
{
	struct zsm_req *b = &req->base;
	struct zsm_net_comm *comm = b->comm->tp;
	struct zsm_net_mr *mr = zsm_net_rma_get_staged(b);
	char *buf = b->data[0];
	char why[160];
	ssize_t ret;

	if (i == 0)
		return zsm_net_rma_get_ask(req, &req->ops[0]);
	if (comm->rma.gets_ready < req->get_seq) {
		if (zsm_now_ns() > req->get_deadline_ns) {
			snprintf(why, sizeof(why),
				 "no answer to a get of %zu bytes in %llu s "
				 "(GET %llu, %llu answered)",
				 b->len[0],
				 ZSM_NET_GET_WAIT_NS / 1000000000ULL,
				 (unsigned long long)req->get_seq,
				 (unsigned long long)comm->rma.gets_ready);
			/* The next retry finds the comm failed and ends the
			 * request with its error. */
			zsm_net_comm_fail(comm, -ETIMEDOUT, why);
		}
		return -FI_EAGAIN;
	}
	if (mr) {
		uintptr_t off = (uintptr_t)buf - (uintptr_t)mr->start;

		/* Our GPU window's provider registration is its mirror's;
		 * the core checked only the peer's side. */
		if ((uintptr_t)buf < (uintptr_t)mr->start || off > mr->size ||
		    b->len[0] > mr->size - off) {
			ZSM_WARN("net: a get of %zu bytes into %p, outside its "
				 "%zu-byte GPU window at %p",
				 b->len[0], (void *)buf, mr->size,
				 (void *)mr->start);
			return -FI_EINVAL;
		}
		buf = mr->mirror.host + off;
	}
	ret = fi_read(comm->ep->fi.ep, buf, b->len[0], req->mr_desc[0],
		      comm->remote.addr, b->rma.addr, b->rma.key,
		      &req->ops[1].fi_ctx);
	if (!ret)
		comm->rma.bytes += b->len[0];
	return ret;
}

int zsm_net_rma_get_landed(struct zsm_net_op *op)
{
	const struct zsm_req *b = &op->req->base;
	struct zsm_net_mr *mr = zsm_net_rma_get_staged(b);

	if (b->type != ZSM_REQ_GET || op->index != 1 || !mr)
		return 0;
	/* In the mirror now (get_post checked the range): up to the GPU
	 * before the request says done.  cuda_win said why on failure. */
	return zsm_cuda_win_mirror_up(&mr->mirror,
				      (size_t)((char *)b->data[0] - mr->start),
				      b->len[0])
		       ? -EIO
		       : 0;
}

void zsm_net_rma_get_serve(struct zsm_net_comm *c,
			   const struct zsm_sig_msg *m)
{
	struct zsm_net_mr *mr = zsm_net_rma_window(c->ep, m->put_win);
	uint64_t base = 0, off;
	char why[200];
	void *host;
	int ret = 0;

	/* Without FI_MR_VIRT_ADDR the read names offsets into the
	 * registration, which is the window's mirror for a GPU window. */
	if (mr && (c->ep->fi.mr_mode & FI_MR_VIRT_ADDR))
		base = (uint64_t)(uintptr_t)(mr->mirror.host ? mr->mirror.host
							      : mr->start);
	/* The peer named the bytes: they must lie inside a window of ours
	 * before anything is copied for them. */
	if (!mr || m->put_addr < base || m->put_addr - base > mr->size ||
	    m->put_len > mr->size - (m->put_addr - base)) {
		snprintf(why, sizeof(why),
			 "a get of %llu bytes at %llx of window %llx, %s",
			 (unsigned long long)m->put_len,
			 (unsigned long long)m->put_addr,
			 (unsigned long long)m->put_win,
			 !mr ? "which is not one of this endpoint's"
			     : "outside it");
		ret = -EPROTO;
	} else if (mr->mirror.host) {
		/* GPU writes never reach the mirror: bring the bytes down
		 * before the peer reads them there. */
		off = m->put_addr - base;
		ret = zsm_cuda_win_mirror_down(&mr->mirror, mr->start + off,
					       m->put_len, &host);
		if (ret)
			snprintf(why, sizeof(why),
				 "copying a get's %llu bytes down from its GPU "
				 "window failed",
				 (unsigned long long)m->put_len);
	}
	c->rma.gets_served++;
	if (ret && !c->rma.get_err)
		c->rma.get_err = ret;
	/* Answered even when it failed: the initiator learns it now, not
	 * at its deadline. */
	zsm_net_ctrl_want(c, ZSM_CTRL_GET_READY);
	if (ret)
		zsm_net_comm_fail(c, ret, why);
}

void zsm_net_rma_get_ready(struct zsm_net_comm *c,
			   const struct zsm_ctrl_msg *m)
{
	char why[160];
	int err = m->status;

	zsm_net_peer_heard(c->remote.obj, c->ep->pass.begin_ns);
	if (!err && m->credit <= c->rma.gets_sent) {
		if (m->credit > c->rma.gets_ready)
			c->rma.gets_ready = m->credit;
		return;
	}
	if (err)
		snprintf(why, sizeof(why),
			 "the peer failed a get of ours (%s; its log says "
			 "why)",
			 err < 0 && err > -4096 ? strerror(-err) : "?");
	else
		snprintf(why, sizeof(why),
			 "the peer answered %llu gets, of %llu asked",
			 (unsigned long long)m->credit,
			 (unsigned long long)c->rma.gets_sent);
	zsm_net_comm_fail(c, err < 0 && err > -4096 ? err : -EPROTO, why);
}
