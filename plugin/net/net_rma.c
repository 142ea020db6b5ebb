/* SPDX-License-Identifier: MIT */
/*
 * Owns net's one-sided operations: windows, the writes and reads of puts
 * and gets on a comm's link, and signals.  Under the saw mechanism
 * (net_rma_plan.h) a put's signal is a SIGNAL message posted right after
 * its write on the same endpoint, to the same peer: the provider delivers
 * it after the write's bytes (FI_ORDER_SAW, asked for when the endpoint
 * was opened), and the peer's engine applies it when the message comes,
 * so a signal the peer sees shows every earlier write of the link.  Under
 * fence the writes ask for delivery completions (FI_DELIVERY_COMPLETE)
 * and a signal waits in its comm's fifo until none of the comm's writes
 * is outstanding, so any provider with RMA gives the same guarantee, for
 * a round trip per signal.  Under writedata (providers that order
 * nothing: efa) every write carries the id of the peer's receive comm
 * in remote CQ data, the peer's engine counts the writes that landed,
 * and a signal, which says how many writes its sender had posted, waits
 * at the peer until that many have.
 *
 * GPU windows are staged: no provider here writes GPU memory, so a GPU
 * window's registration covers a pinned host mirror of it.  A put from a
 * GPU window first copies its bytes down into the mirror (a copy-engine
 * copy on our own stream, never a kernel) and writes from there; a put
 * into a GPU window lands in the owner's mirror and is followed by a
 * SIGNAL naming its bytes, on which the owner copies them up before it
 * applies the signal, so the strong guarantee holds for GPU windows too.
 * Gets are net_rma_get.c's; their GET messages share the signals' path
 * here (held back with them under writedata).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "common/handle.h"
#include "common/log.h"
#include "net/net.h"
#include "net/net_api.h"
#include "net/net_fi_abi.h"

int zsm_net_rma_reg_window_op(struct zsm_comm *c, void *data, size_t size,
			      int type, struct zsm_mr **out,
			      struct zsm_rma_window *win)
{
	struct zsm_net_comm *comm = c->tp;
	struct zsm_net_ep *ep = comm->ep;
	struct zsm_net_mr *mr;
	int ret;

	if (ep->rma == ZSM_RMA_MECH_NONE) {
		ZSM_WARN("net: %s: no one-sided operations: %s", ep->dev->name,
			 ep->dev->rma.why);
		return -EOPNOTSUPP;
	}
	ret = zsm_net_mr_reg_window(ep, data, size, type, &mr);
	if (ret)
		return ret;
	/* Without FI_MR_VIRT_ADDR, remote addresses count from the start of
	 * the registration, which is the window's own (or its mirror's). */
	win->addr = !(ep->mr_mode & FI_MR_VIRT_ADDR) ? 0
		    : mr->mirror.host ? (uint64_t)(uintptr_t)mr->mirror.host
							 : (uint64_t)(uintptr_t)data;
	win->key = fi_mr_key(mr->window);
	win->size = size;
	win->flags = mr->mirror.host ? ZSM_WIN_GPU | ZSM_WIN_STAGED : 0;
	*out = &mr->base;
	return 0;
}

int zsm_net_rma_can_signal(struct zsm_comm *c)
{
	const struct zsm_net_comm *comm = c->tp;
	const struct zsm_net_ep *ep = comm->ep;

	if (ep->rma == ZSM_RMA_MECH_SAW || ep->rma == ZSM_RMA_MECH_FENCE ||
	    ep->rma == ZSM_RMA_MECH_WRITEDATA)
		return 0;
	ZSM_WARN("net: %s: signals by %s are not built yet", ep->dev->name,
		 zsm_net_rma_mech_name(ep->rma));
	return -EOPNOTSUPP;
}

/* A put into a staged window is always followed by a SIGNAL naming it. */
static int zsm_net_rma_notice(const struct zsm_req *b)
{
	return b->type == ZSM_REQ_PUT &&
	       (b->rma.sig_id ||
		(b->len[0] > 0 && (b->rma.dst_flags & ZSM_WIN_STAGED)));
}

int zsm_net_rma_nops(const struct zsm_req *b)
{
	/* A get: its GET, then its read. */
	if (b->type == ZSM_REQ_GET)
		return b->len[0] > 0 ? 2 : 0;
	return (b->len[0] > 0) + zsm_net_rma_notice(b);
}

/*
 * Where a put's write takes its bytes from: the source itself, or for a
 * GPU window's bytes their place in its mirror, copied down first (again
 * when the provider asked us to retry: the same bytes).  0, or -errno.
 */
static int zsm_net_rma_source(struct zsm_net_req *req, void **buf)
{
	struct zsm_req *b = &req->base;
	struct zsm_net_mr *mr = b->mh[0] && b->mh[0]->ops == &zsm_net_comm_ops
					? zsm_net_mr_of(b->mh[0])
					: NULL;

	*buf = b->data[0];
	if (!mr || !mr->mirror.host)
		return 0;
	return zsm_cuda_win_mirror_down(&mr->mirror, b->data[0], b->len[0],
					buf);
}

/* A put's write whose completion says its bytes are at the target. */
static ssize_t zsm_net_rma_write_delivered(struct zsm_net_req *req,
					   struct zsm_net_op *op, void *buf)
{
	struct zsm_req *b = &req->base;
	struct zsm_net_comm *comm = b->comm->tp;
	struct iovec iov = {.iov_base = buf, .iov_len = b->len[0]};
	struct fi_rma_iov rma = {.addr = b->rma.addr, .len = b->len[0],
				 .key = b->rma.key};
	struct fi_msg_rma msg = {
		.msg_iov = &iov,
		.desc = &req->mr_desc[0],
		.iov_count = 1,
		.addr = comm->peer,
		.rma_iov = &rma,
		.rma_iov_count = 1,
		.context = &op->fi_ctx,
	};

	return fi_writemsg(comm->ep->ep, &msg,
			   FI_DELIVERY_COMPLETE | FI_COMPLETION);
}

void zsm_net_rma_op_done(struct zsm_net_op *op)
{
	struct zsm_net_req *req = op->req;
	struct zsm_req *b = &req->base;
	struct zsm_net_comm *comm = b->comm->tp;

	if (b->type == ZSM_REQ_PUT && b->len[0] > 0 && op->index == 0)
		comm->rma_writes--;
	else if (req->sig_slot) {
		/* The SIGNAL's or GET's send: its copy may go. */
		zsm_net_txpool_put(&comm->ep->txpool, req->sig_slot);
		req->sig_slot = NULL;
	}
}

ssize_t zsm_net_rma_send_msg(struct zsm_net_req *req, struct zsm_net_op *op,
			     enum zsm_ctrl_type t)
{
	struct zsm_net_comm *comm = req->base.comm->tp;
	struct zsm_net_ep *ep = comm->ep;
	void *buf = &req->sig, *desc = NULL;
	ssize_t ret;

	if (ep->needs_mr) {
		buf = zsm_net_txpool_copy(&ep->txpool, &req->sig,
					  sizeof(req->sig), &desc);
		if (!buf)
			return -FI_EAGAIN;
	}
	ret = fi_tsend(ep->ep, buf, sizeof(req->sig), desc, comm->peer,
		       zsm_tag_ctrl(comm->peer_id, t), &op->fi_ctx);
	if (ret)
		zsm_net_txpool_put(&ep->txpool, ep->needs_mr ? buf : NULL);
	else if (ep->needs_mr)
		req->sig_slot = buf;
	return ret;
}

/* Op i of a put or get: the write or read of its bytes, or the signal
 * after them (the last op). */
ssize_t zsm_net_rma_post_op(struct zsm_net_req *req, int i)
{
	struct zsm_req *b = &req->base;
	struct zsm_net_comm *comm = b->comm->tp;
	struct zsm_net_ep *ep = comm->ep;
	struct zsm_net_op *op = &req->ops[i];
	struct zsm_sig_msg *m = &req->sig;

	if (b->type == ZSM_REQ_GET)
		return zsm_net_rma_get_post(req, i);
	if (b->len[0] > 0 && i == 0) {
		ssize_t ret;
		void *buf;

		if (zsm_net_rma_source(req, &buf))
			return -FI_EIO;
		if (ep->rma == ZSM_RMA_MECH_FENCE)
			ret = zsm_net_rma_write_delivered(req, op, buf);
		else if (ep->rma == ZSM_RMA_MECH_WRITEDATA)
			ret = fi_writedata(ep->ep, buf, b->len[0],
					   req->mr_desc[0], comm->peer_id,
					   comm->peer, b->rma.addr, b->rma.key,
					   &op->fi_ctx);
		else
			ret = fi_write(ep->ep, buf, b->len[0], req->mr_desc[0],
				       comm->peer, b->rma.addr, b->rma.key,
				       &op->fi_ctx);
		if (!ret) {
			comm->rma_writes++;
			comm->rma_posted++;
		}
		return ret;
	}
	/* fence: the signal goes once every earlier write of the comm was
	 * delivered; the request waits in the comm's fifo, and so do the
	 * comm's later ones. */
	if (ep->rma == ZSM_RMA_MECH_FENCE && comm->rma_writes)
		return -FI_EAGAIN;
	zsm_net_rma_msg_head(comm, m, ZSM_CTRL_SIGNAL);
	m->win = b->rma.sig_id;
	m->off = b->rma.sig_off;
	m->add = b->rma.sig_add;
	m->writes = comm->rma_posted;
	if (b->len[0] > 0 && (b->rma.dst_flags & ZSM_WIN_STAGED)) {
		m->put_win = b->rma.dst_id;
		m->put_addr = b->rma.addr;
		m->put_len = b->len[0];
	}
	return zsm_net_rma_send_msg(req, op, ZSM_CTRL_SIGNAL);
}

struct zsm_net_mr *zsm_net_rma_window(struct zsm_net_ep *ep, uint64_t id)
{
	struct zsm_mr *base;
	struct zsm_net_mr *mr;

	if (zsm_handle_get(id, ZSM_H_MR, (void **)&base) ||
	    base->ops != &zsm_net_comm_ops)
		return NULL;
	mr = zsm_net_mr_of(base);
	return mr->window && mr->ep == ep ? mr : NULL;
}

/*
 * A put into a staged window landed in its mirror: copy its bytes up to
 * the GPU window.  The peer named them: they must lie inside a staged
 * window of ours.  0, or -errno with why filled.
 */
static int zsm_net_rma_land(struct zsm_net_comm *c,
			    const struct zsm_sig_msg *m, char *why,
			    size_t why_len)
{
	struct zsm_net_mr *mr = zsm_net_rma_window(c->ep, m->put_win);
	uint64_t base, off;
	int ret;

	base = mr && (c->ep->mr_mode & FI_MR_VIRT_ADDR)
		       ? (uint64_t)(uintptr_t)mr->mirror.host
		       : 0;
	if (!mr || !mr->mirror.host || m->put_addr < base ||
	    m->put_addr - base > mr->size ||
	    m->put_len > mr->size - (m->put_addr - base)) {
		snprintf(why, why_len,
			 "a put of %llu bytes at %llx into window %llx, %s",
			 (unsigned long long)m->put_len,
			 (unsigned long long)m->put_addr,
			 (unsigned long long)m->put_win,
			 !mr	       ? "which is not one of this endpoint's"
			 : !mr->mirror.host ? "which is not a GPU window"
				       : "past its end");
		return -EPROTO;
	}
	off = m->put_addr - base;
	ret = zsm_cuda_win_mirror_up(&mr->mirror, off, m->put_len);
	if (ret)
		snprintf(why, why_len,
			 "copying a put's %llu bytes up to its GPU window "
			 "failed",
			 (unsigned long long)m->put_len);
	return ret;
}

/* A signal held back until the writes before it land (writedata). */
struct zsm_net_sig_wait {
	struct zsm_sig_msg m;
	struct zsm_net_sig_wait *next;
};

static void zsm_net_rma_apply(struct zsm_net_comm *c,
			      const struct zsm_sig_msg *m);

/* Apply, in order, the held signals whose writes have all landed. */
static void zsm_net_rma_release(struct zsm_net_comm *c)
{
	struct zsm_net_sig_wait *w;

	while ((w = c->sig_head) && w->m.writes <= c->rma_landed &&
	       !c->failed) {
		c->sig_head = w->next;
		if (!c->sig_head)
			c->sig_tail = NULL;
		zsm_net_rma_apply(c, &w->m);
		free(w);
	}
}

void zsm_net_rma_on_write(struct zsm_net_ep *ep, uint64_t data)
{
	struct zsm_net_comm *c =
		data <= ZSM_TAG_ID_MAX ? zsm_idmap_find(&ep->ids, (uint32_t)data)
				       : NULL;

	/* A write for a comm that is gone (or was never ours) has nothing
	 * to wait for it. */
	if (!c || c->type != ZSM_COMM_RECV)
		return;
	c->rma_landed++;
	if (c->sig_head)
		zsm_net_rma_release(c);
}

void zsm_net_rma_comm_fini(struct zsm_net_comm *c)
{
	while (c->sig_head) {
		struct zsm_net_sig_wait *w = c->sig_head;

		c->sig_head = w->next;
		free(w);
	}
	c->sig_tail = NULL;
}

void zsm_net_rma_on_signal(struct zsm_net_comm *c,
			   const struct zsm_sig_msg *m)
{
	struct zsm_net_sig_wait *w;

	zsm_net_peer_heard(c->peer_obj, c->ep->pass_ns);
	/* Signals arrive in order (the provider orders messages), so one
	 * held back holds the later ones too. */
	if (c->ep->rma == ZSM_RMA_MECH_WRITEDATA &&
	    (m->writes > c->rma_landed || c->sig_head)) {
		w = malloc(sizeof(*w));
		if (!w) {
			zsm_net_comm_fail(c, -ENOMEM,
					  "no memory to hold a signal back");
			return;
		}
		w->m = *m;
		w->next = NULL;
		if (c->sig_tail)
			c->sig_tail->next = w;
		else
			c->sig_head = w;
		c->sig_tail = w;
		zsm_net_rma_release(c);
		return;
	}
	zsm_net_rma_apply(c, m);
}

/* m's put is in place (its bytes landed): copy it up where staged, then
 * add the signal. */
static void zsm_net_rma_apply(struct zsm_net_comm *c,
			      const struct zsm_sig_msg *m)
{
	struct zsm_net_mr *mr;
	char why[200];
	int ret;

	if (m->type == ZSM_CTRL_GET) {
		zsm_net_rma_get_serve(c, m);
		return;
	}
	if (m->put_len) {
		ret = zsm_net_rma_land(c, m, why, sizeof(why));
		if (ret) {
			zsm_net_comm_fail(c, ret, why);
			return;
		}
		if (!m->win)
			return; /* the notice of a put without a signal */
	}
	mr = zsm_net_rma_window(c->ep, m->win);
	/* The peer's puts went to memory it took for a window, or its
	 * signal would land outside one: what it put cannot be trusted to
	 * mean what it wanted. */
	if (!mr) {
		snprintf(why, sizeof(why),
			 "a signal for window %llx, which is not one of this "
			 "endpoint's",
			 (unsigned long long)m->win);
		zsm_net_comm_fail(c, -EPROTO, why);
		return;
	}
	/* The word must be whole inside the window and 8-byte aligned in
	 * memory: an atomic add across two cache lines is a split lock,
	 * which some kernels answer with SIGBUS. */
	if (mr->size < 8 || m->off % 8 || m->off > mr->size - 8 ||
	    (uintptr_t)(mr->start + m->off) % 8) {
		snprintf(why, sizeof(why),
			 "a signal at offset %llu of a %zu-byte window at %p "
			 "(the word must lie inside it, 8-byte aligned)",
			 (unsigned long long)m->off, mr->size,
			 (void *)mr->start);
		zsm_net_comm_fail(c, -EPROTO, why);
		return;
	}
	if (mr->mirror.host) {
		/* A word in GPU memory: we are its one writer. */
		ret = zsm_cuda_win_word_add(
			mr->mirror.ctx.ctx,
			(zsm_cu_deviceptr)(uintptr_t)(mr->start + m->off),
			m->add);
		if (ret)
			zsm_net_comm_fail(c, ret,
					  "a signal into a GPU window failed");
		return;
	}
	/* release: pairs with the acquire load of whoever waits on the
	 * word; the write before it landed when the provider read it off
	 * the link, before this message. */
	__atomic_fetch_add((uint64_t *)(void *)(mr->start + m->off), m->add,
			   __ATOMIC_RELEASE);
}
