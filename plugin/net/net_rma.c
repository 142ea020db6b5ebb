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
 * at the peer until that many have.  Under atomic (providers whose NIC
 * adds in hardware, ordered with writes: cxi) a signal into a host word
 * is an fi_atomic FI_SUM posted right after the put's write on the same
 * endpoint, which FI_ORDER_WAW makes land after it: no target CPU.
 *
 * GPU windows are staged: no provider here writes GPU memory, so a GPU
 * window's registration covers a pinned host mirror of it.  A put from a
 * GPU window first copies its bytes down into the mirror (a copy-engine
 * copy on our own stream, never a kernel) and writes from there; a put
 * into a GPU window lands in the owner's mirror and is followed by a
 * SIGNAL naming its bytes, on which the owner copies them up before it
 * applies the signal, so the strong guarantee holds for GPU windows too.
 *
 * Under atomic, what the NIC cannot do still takes that SIGNAL: the copy
 * up of a put into a staged window, and a signal into a staged window's
 * word (the owner adds it in GPU memory; one word is only ever updated
 * one way).  Nothing orders a message after writes there, so the SIGNAL
 * goes with FI_FENCE: after every earlier write and add of the link.  And
 * nothing orders a later add after the owner's engine: each such SIGNAL
 * asks the owner to say when it was applied (SIGNALED), and the link's
 * next add waits in the comm's fifo, and the link's later requests with
 * it, until the owner said so for every SIGNAL before it.  A staged put
 * or GPU word followed by a host word's signal thus costs a round trip
 * through the owner's engine; links whose words are all host (or all
 * staged) never wait.
 *
 * Gets are net_rma_get.c's; their GET messages share the signals' path
 * here (held back with them under writedata, fenced under atomic).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_atomic.h>
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
	win->addr = !(ep->fi.mr_mode & FI_MR_VIRT_ADDR) ? 0
		    : mr->mirror.host ? (uint64_t)(uintptr_t)mr->mirror.host
							 : (uint64_t)(uintptr_t)data;
	/* Peers write it through the endpoint they connect to: on a duplex
	 * device, the receiving one's registration is theirs. */
	win->key = fi_mr_key(mr->twin && !ep->rx_role ? mr->twin : mr->window);
	win->size = size;
	win->flags = mr->mirror.host ? ZSM_WIN_GPU | ZSM_WIN_STAGED : 0;
	if ((uintptr_t)data % 8)
		win->flags |= ZSM_WIN_UNALIGNED;
	*out = &mr->base;
	return 0;
}

int zsm_net_rma_can_signal(struct zsm_comm *c)
{
	const struct zsm_net_comm *comm = c->tp;
	const struct zsm_net_ep *ep = comm->ep;

	if (ep->rma != ZSM_RMA_MECH_NONE)
		return 0;
	ZSM_WARN("net: %s: no one-sided operations: %s", ep->dev->name,
		 ep->dev->rma.why);
	return -EOPNOTSUPP;
}

static struct zsm_net_ep *zsm_net_rma_ep(const struct zsm_req *b)
{
	return ((struct zsm_net_comm *)b->comm->tp)->ep;
}

/* atomic: the NIC adds b's signal, into a host word of an aligned window
 * (the owner refuses the others, which go to it as messages). */
static int zsm_net_rma_nic_adds(const struct zsm_req *b)
{
	return zsm_net_rma_ep(b)->rma == ZSM_RMA_MECH_ATOMIC &&
	       b->rma.sig_id &&
	       !(b->rma.sig_flags & (ZSM_WIN_STAGED | ZSM_WIN_UNALIGNED));
}

/* A SIGNAL follows b: for a signal the NIC does not add, and after every
 * put into a staged window, naming it. */
static int zsm_net_rma_notice(const struct zsm_req *b)
{
	return b->type == ZSM_REQ_PUT &&
	       ((b->rma.sig_id && !zsm_net_rma_nic_adds(b)) ||
		(b->len[0] > 0 && (b->rma.dst_flags & ZSM_WIN_STAGED)));
}

int zsm_net_rma_nops(const struct zsm_req *b)
{
	/* A get: its GET, then its read. */
	if (b->type == ZSM_REQ_GET)
		return b->len[0] > 0 ? 2 : 0;
	return (b->len[0] > 0) + zsm_net_rma_notice(b) +
	       zsm_net_rma_nic_adds(b);
}

/* What op i of put b is, in posting order: its bytes, its SIGNAL, its
 * add. */
enum zsm_net_rma_op {
	ZSM_NET_RMA_BYTES,
	ZSM_NET_RMA_SIGNAL,
	ZSM_NET_RMA_ADD,
};

static enum zsm_net_rma_op zsm_net_rma_op_of(const struct zsm_req *b, int i)
{
	if (b->len[0] > 0 && i-- == 0)
		return ZSM_NET_RMA_BYTES;
	if (zsm_net_rma_notice(b) && i == 0)
		return ZSM_NET_RMA_SIGNAL;
	return ZSM_NET_RMA_ADD;
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

/*
 * A write or read of ours ended with an error while the comm stood: the
 * peer's provider refused it (a window the peer does not have: a stale
 * or forged descriptor, or bytes past its end; tcp then drops the
 * connection, and what followed on it), or the link broke.  Either way
 * the link's later operations cannot be known applied: the comm fails,
 * here and (RMA_REFUSED) at the peer, which says it too.
 */
static void zsm_net_rma_refused(struct zsm_net_comm *comm,
				const struct zsm_req *b, int err)
{
	char why[200];

	if (comm->closing || zsm_net_comm_failed(comm))
		return;
	comm->rma.refused.addr = b->rma.addr;
	comm->rma.refused.key = b->rma.key;
	comm->rma.refused.err = err;
	comm->rma.refused.ns = comm->ep->pass.begin_ns;
	snprintf(why, sizeof(why),
		 "the peer did not apply our %s of %zu bytes at %llx under key "
		 "%llx (%s): not a window of its (a stale or forged "
		 "descriptor), past its end, or the link broke",
		 b->type == ZSM_REQ_GET ? "read" : "write", b->len[0],
		 (unsigned long long)b->rma.addr,
		 (unsigned long long)b->rma.key, strerror(-err));
	zsm_net_comm_fail(comm, -EPROTO, why);
	zsm_net_ctrl_want(comm, ZSM_CTRL_RMA_REFUSED);
}

void zsm_net_rma_on_refused(struct zsm_net_comm *c,
			    const struct zsm_ctrl_msg *m)
{
	char why[200];

	/* The peer's errno, said as a number: any value may come. */
	snprintf(why, sizeof(why),
		 "this endpoint's provider refused the peer's write or read "
		 "at %llx under key %llx (error %d there): not a window of "
		 "ours (a stale or forged descriptor), or past its end",
		 (unsigned long long)m->rma_addr,
		 (unsigned long long)m->reply_key, (int)m->status);
	zsm_net_comm_fail(c, -EPROTO, why);
}

void zsm_net_rma_op_done(struct zsm_net_op *op, int err)
{
	struct zsm_net_req *req = op->req;
	struct zsm_req *b = &req->base;
	struct zsm_net_comm *comm = b->comm->tp;

	if (err && (b->type == ZSM_REQ_GET
			    ? op->index == 1
			    : zsm_net_rma_op_of(b, op->index) ==
				      ZSM_NET_RMA_BYTES))
		zsm_net_rma_refused(comm, b, err);
	if (b->type == ZSM_REQ_GET) {
		if (op->index == 1)
			comm->rma.bytes -= b->len[0];
		/* Its GET's send (its read holds no copy). */
		if (op->index == 0) {
			zsm_net_txpool_put(&comm->ep->ctrl.txpool,
					   req->sig_slot);
			req->sig_slot = NULL;
		}
		return;
	}
	switch (zsm_net_rma_op_of(b, op->index)) {
	case ZSM_NET_RMA_BYTES:
		comm->rma.writes--;
		comm->rma.bytes -= b->len[0];
		break;
	case ZSM_NET_RMA_SIGNAL:
		/* The signal's send: its copy may go. */
		zsm_net_txpool_put(&comm->ep->ctrl.txpool,
				   req->sig_slot);
		req->sig_slot = NULL;
		break;
	case ZSM_NET_RMA_ADD:
		zsm_net_txpool_put(&comm->ep->ctrl.txpool, req->add_slot);
		req->add_slot = NULL;
		break;
	}
}

/* Under atomic a SIGNAL or GET goes after every earlier write and add of
 * the link (FI_FENCE: nothing else orders a message after them there).
 * Every SIGNAL asks to be acknowledged, and its put is done only once
 * the owner said it applied it: an owner that refused one, or failed its
 * comm, drops the SIGNALs behind it, and their puts must not be reported
 * done meanwhile.  The owner answers once per pass for all it applied. */
ssize_t zsm_net_rma_send_msg(struct zsm_net_req *req, struct zsm_net_op *op,
			     enum zsm_ctrl_type t)
{
	struct zsm_net_comm *comm = req->base.comm->tp;
	struct zsm_net_ep *ep = comm->ep;
	int fenced = ep->rma == ZSM_RMA_MECH_ATOMIC;
	int ack = t == ZSM_CTRL_SIGNAL;
	struct iovec iov = {.iov_base = &req->sig,
			    .iov_len = sizeof(req->sig)};
	void *desc = NULL, *slot;
	struct fi_msg_tagged msg = {
		.msg_iov = &iov,
		.desc = &desc,
		.iov_count = 1,
		.addr = comm->remote.addr,
		.tag = zsm_tag_ctrl(comm->remote.id, t),
		.context = &op->fi_ctx,
	};
	ssize_t ret;

	if (ack)
		req->sig.flags = ZSM_SIG_ACK;
	iov.iov_base = zsm_net_txpool_src(ep, &req->sig, sizeof(req->sig),
					  &desc);
	if (!iov.iov_base)
		return -FI_EAGAIN;
	ret = fenced ? fi_tsendmsg(ep->fi.ep, &msg, FI_FENCE | FI_COMPLETION)
		     : fi_tsend(ep->fi.ep, iov.iov_base, iov.iov_len, desc,
				comm->remote.addr, msg.tag, &op->fi_ctx);
	slot = zsm_net_txpool_posted(ep, iov.iov_base, ret);
	if (ret)
		return ret;
	if (slot)
		req->sig_slot = slot;
	if (ack)
		req->get_seq = ++comm->rma.asked;
	return 0;
}

/* atomic: the NIC adds the signal into the peer's host word, once the
 * owner said it applied every SIGNAL the link sent before (their copies
 * up and GPU words must show before this add does); until then the
 * request waits in its comm's fifo, and so do the comm's later ones. */
static ssize_t zsm_net_rma_post_add(struct zsm_net_req *req,
				    struct zsm_net_op *op)
{
	struct zsm_req *b = &req->base;
	struct zsm_net_comm *comm = b->comm->tp;
	struct zsm_net_ep *ep = comm->ep;
	uint64_t *operand = &req->operand;
	void *desc = NULL;
	ssize_t ret;

	if (comm->rma.acked < comm->rma.asked)
		return -FI_EAGAIN;
	req->operand = b->rma.sig_add;
	operand = zsm_net_txpool_src(ep, &req->operand, sizeof(req->operand),
				     &desc);
	if (!operand)
		return -FI_EAGAIN;
	ret = fi_atomic(ep->fi.ep, operand, 1, desc, comm->remote.addr,
			b->rma.sig_addr, b->rma.sig_key, FI_UINT64, FI_SUM,
			&op->fi_ctx);
	operand = zsm_net_txpool_posted(ep, operand, ret);
	if (operand)
		req->add_slot = operand;
	return ret;
}

/* A put's SIGNAL, after its bytes (net_rma_op_of). */
static ssize_t zsm_net_rma_post_signal(struct zsm_net_req *req,
				       struct zsm_net_op *op)
{
	struct zsm_req *b = &req->base;
	struct zsm_net_comm *comm = b->comm->tp;
	struct zsm_sig_msg *m = &req->sig;

	/* fence: the signal goes once every earlier write of the comm was
	 * delivered; the request waits in the comm's fifo, and so do the
	 * comm's later ones. */
	if (comm->ep->rma == ZSM_RMA_MECH_FENCE && comm->rma.writes)
		return -FI_EAGAIN;
	zsm_net_rma_msg_head(comm, m, ZSM_CTRL_SIGNAL);
	/* A signal the NIC adds is not the message's (its put's notice). */
	if (!zsm_net_rma_nic_adds(b)) {
		m->win = b->rma.sig_id;
		m->off = b->rma.sig_off;
		m->add = b->rma.sig_add;
	}
	m->writes = comm->rma.posted;
	if (b->len[0] > 0 && (b->rma.dst_flags & ZSM_WIN_STAGED)) {
		m->put_win = b->rma.dst_id;
		m->put_addr = b->rma.addr;
		m->put_len = b->len[0];
	}
	return zsm_net_rma_send_msg(req, op, ZSM_CTRL_SIGNAL);
}

/*
 * Op i of a put or get: the write or read of its bytes, the SIGNAL after
 * them, or (atomic) the NIC's add (net_rma_op_of).  The write is here, not
 * in a helper: it is the end of a small put's path (docs/design.md,
 * "The API's path").
 */
ssize_t zsm_net_rma_post_op(struct zsm_net_req *req, int i)
{
	struct zsm_req *b = &req->base;
	struct zsm_net_comm *comm = b->comm->tp;
	struct zsm_net_ep *ep = comm->ep;
	struct zsm_net_op *op = &req->ops[i];
	enum zsm_net_rma_op what = b->type == ZSM_REQ_GET
					   ? ZSM_NET_RMA_BYTES
					   : zsm_net_rma_op_of(b, i);
	ssize_t ret = zsm_net_ep_tx_full(req, ep);

	if (ret)
		return ret;
	if (b->type == ZSM_REQ_GET) {
		ret = zsm_net_rma_get_post(req, i);
	} else if (what == ZSM_NET_RMA_ADD) {
		ret = zsm_net_rma_post_add(req, op);
	} else if (what == ZSM_NET_RMA_SIGNAL) {
		ret = zsm_net_rma_post_signal(req, op);
	} else {
		struct iovec iov = {.iov_len = b->len[0]};
		struct fi_rma_iov rma = {.addr = b->rma.addr,
					 .len = b->len[0], .key = b->rma.key};
		struct fi_msg_rma msg = {
			.msg_iov = &iov, .desc = &req->mr_desc[0],
			.iov_count = 1, .addr = comm->remote.addr,
			.rma_iov = &rma, .rma_iov_count = 1,
			.context = &op->fi_ctx};

		if (zsm_net_rma_source(req, &iov.iov_base))
			return -FI_EIO;
		/* saw too: a write completes once its bytes landed, so one
		 * the peer's provider refuses fails here, rather than be
		 * reported done while tcp drops it and the link's later
		 * writes with it. */
		if (ep->rma == ZSM_RMA_MECH_FENCE ||
		    ep->rma == ZSM_RMA_MECH_SAW)
			ret = fi_writemsg(ep->fi.ep, &msg,
					  FI_DELIVERY_COMPLETE | FI_COMPLETION);
		else if (ep->rma == ZSM_RMA_MECH_WRITEDATA)
			ret = fi_writedata(ep->fi.ep, iov.iov_base, b->len[0],
					   req->mr_desc[0], comm->remote.id,
					   comm->remote.addr, b->rma.addr,
					   b->rma.key, &op->fi_ctx);
		else
			ret = fi_write(ep->fi.ep, iov.iov_base, b->len[0],
				       req->mr_desc[0], comm->remote.addr,
				       b->rma.addr, b->rma.key, &op->fi_ctx);
		if (!ret) {
			comm->rma.writes++;
			comm->rma.posted++;
			comm->rma.bytes += b->len[0];
		}
	}
	if (!ret)
		ep->queue.tx_inflight++;
	return ret;
}

struct zsm_net_mr *zsm_net_rma_window(struct zsm_net_ep *ep, uint64_t id)
{
	struct zsm_mr *base;
	struct zsm_net_mr *mr;

	if (zsm_handle_get(id, ZSM_H_MR, (void **)&base) ||
	    base->ops != &zsm_net_comm_ops)
		return NULL;
	mr = zsm_net_mr_of(base);
	return mr->window && (mr->ep == ep || (mr->twin && mr->twin_ep == ep))
		       ? mr
		       : NULL;
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

	base = mr && (c->ep->fi.mr_mode & FI_MR_VIRT_ADDR)
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

	while ((w = c->rma.sig_head) && w->m.writes <= c->rma.landed &&
	       !c->failed) {
		c->rma.sig_head = w->next;
		if (!c->rma.sig_head)
			c->rma.sig_tail = NULL;
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
	c->rma.landed++;
	if (c->rma.sig_head)
		zsm_net_rma_release(c);
}

void zsm_net_rma_comm_fini(struct zsm_net_comm *c)
{
	while (c->rma.sig_head) {
		struct zsm_net_sig_wait *w = c->rma.sig_head;

		c->rma.sig_head = w->next;
		free(w);
	}
	c->rma.sig_tail = NULL;
}

void zsm_net_rma_on_signal(struct zsm_net_comm *c,
			   const struct zsm_sig_msg *m)
{
	struct zsm_net_sig_wait *w;

	zsm_net_peer_heard(c->remote.obj, c->ep->pass.begin_ns);
	/* Signals arrive in order (the provider orders messages), so one
	 * held back holds the later ones too. */
	if (c->ep->rma == ZSM_RMA_MECH_WRITEDATA &&
	    (m->writes > c->rma.landed || c->rma.sig_head)) {
		w = malloc(sizeof(*w));
		if (!w) {
			zsm_net_comm_fail(c, -ENOMEM,
					  "no memory to hold a signal back");
			return;
		}
		w->m = *m;
		w->next = NULL;
		if (c->rma.sig_tail)
			c->rma.sig_tail->next = w;
		else
			c->rma.sig_head = w;
		c->rma.sig_tail = w;
		zsm_net_rma_release(c);
		return;
	}
	zsm_net_rma_apply(c, m);
}

/* m's put is in place (its bytes landed): copy it up where staged, then
 * add the signal.  0, or -errno with why filled. */
static int zsm_net_rma_apply_one(struct zsm_net_comm *c,
				 const struct zsm_sig_msg *m, char *why,
				 size_t why_len)
{
	struct zsm_net_mr *mr;
	int ret;

	if (m->put_len) {
		ret = zsm_net_rma_land(c, m, why, why_len);
		if (ret)
			return ret;
		if (!m->win)
			return 0; /* the notice of a put without a signal */
	}
	mr = zsm_net_rma_window(c->ep, m->win);
	/* The peer's puts went to memory it took for a window, or its
	 * signal would land outside one: what it put cannot be trusted to
	 * mean what it wanted. */
	if (!mr) {
		snprintf(why, why_len,
			 "a signal for window %llx, which is not one of this "
			 "endpoint's",
			 (unsigned long long)m->win);
		return -EPROTO;
	}
	/* The word must be whole inside the window and 8-byte aligned in
	 * memory: an atomic add across two cache lines is a split lock,
	 * which some kernels answer with SIGBUS. */
	if (mr->size < 8 || m->off % 8 || m->off > mr->size - 8 ||
	    (uintptr_t)(mr->start + m->off) % 8) {
		snprintf(why, why_len,
			 "a signal at offset %llu of a %zu-byte window at %p "
			 "(the word must lie inside it, 8-byte aligned)",
			 (unsigned long long)m->off, mr->size,
			 (void *)mr->start);
		return -EPROTO;
	}
	if (mr->mirror.host) {
		/* A word in GPU memory: we are its one writer. */
		ret = zsm_cuda_win_word_add(
			mr->mirror.ctx.ctx,
			(zsm_cu_deviceptr)(uintptr_t)(mr->start + m->off),
			m->add);
		if (ret)
			snprintf(why, why_len,
				 "a signal into a GPU window failed");
		return ret;
	}
	/* Under atomic the NIC adds into host words, and a word takes one
	 * kind of update only: a NIC's read-modify-write need not be
	 * atomic with the CPU's. */
	if (c->ep->rma == ZSM_RMA_MECH_ATOMIC) {
		snprintf(why, why_len,
			 "a signal message for a host word, which only the "
			 "NIC adds under the atomic mechanism (is "
			 "ZSM_RMA_SIGNAL alike on every rank?)");
		return -EPROTO;
	}
	/* release: pairs with the acquire load of whoever waits on the
	 * word; the write before it landed when the provider read it off
	 * the link, before this message. */
	__atomic_fetch_add((uint64_t *)(void *)(mr->start + m->off), m->add,
			   __ATOMIC_RELEASE);
	return 0;
}

/* Apply m; when its sender waits to hear (every SIGNAL asks), say it
 * applied it, or that it failed the comm: then the sender's comm fails
 * too rather than wait. */
static void zsm_net_rma_apply(struct zsm_net_comm *c,
			      const struct zsm_sig_msg *m)
{
	char why[200];
	int ret;

	if (m->type == ZSM_CTRL_GET) {
		zsm_net_rma_get_serve(c, m);
		return;
	}
	ret = zsm_net_rma_apply_one(c, m, why, sizeof(why));
	if (ret)
		zsm_net_comm_fail(c, ret, why);
	/* A refusal is said to the sender whether it asked or not: its
	 * comm fails too, rather than report later puts done that this
	 * failed comm no longer applies. */
	if (!(m->flags & ZSM_SIG_ACK) && !ret)
		return;
	if (ret && !c->rma.status)
		c->rma.status = ret;
	c->rma.applied += (m->flags & ZSM_SIG_ACK) != 0;
	zsm_net_ctrl_want(c, ZSM_CTRL_SIGNALED);
}

void zsm_net_rma_on_signaled(struct zsm_net_comm *c,
			     const struct zsm_ctrl_msg *m)
{
	char why[160];

	zsm_net_peer_heard(c->remote.obj, c->ep->pass.begin_ns);
	if (m->status) {
		/* The peer's errno, said as a number: any value may come. */
		snprintf(why, sizeof(why),
			 "the peer failed its comm (error %d there): our "
			 "signals past what it applied are lost",
			 (int)m->status);
		zsm_net_comm_fail(c, -EPROTO, why);
		return;
	}
	if (m->applied > c->rma.asked) {
		zsm_net_comm_fail(c, -EPROTO,
				  "the peer said it applied signals never "
				  "sent");
		return;
	}
	/* Counts only grow, and SIGNALEDs come in order: the newest is
	 * the largest. */
	if (m->applied > c->rma.acked) {
		c->rma.acked = m->applied;
		zsm_net_req_report_held(c, 0);
	}
}
