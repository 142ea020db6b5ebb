/* SPDX-License-Identifier: MIT */
/*
 * Owns the receiving side of ce transfers: matching Ready slots to
 * posted receives in order, copying with process_vm_readv (or the GPU's
 * copy engines), applying puts and signals in the window's owner and
 * answering gets, then marking each slot Complete.  Engine only.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "ce/ce.h"
#include "ce/ce_int.h"
#include "common/cuda_win.h"
#include "common/log.h"
#include "proxy/proxy.h"

/* Receiver: one sub-receive of req is over. */
static void zsm_ce_sub_done(struct zsm_ce_chan *ch, struct zsm_ce_req *req,
			    int sub, int err, size_t len)
{
	req->sub[sub] = 2;
	req->base.sizes[sub] = (int)len;
	if (err && !req->base.error)
		req->base.error = err;
	if (--req->base.remaining == 0) {
		zsm_ce_unlink(ch, req);
		zsm_ce_publish(req);
	}
}

/*
 * Receiver: add m's signal to its word, in one of our windows.  The
 * peer chose window and offset: a word outside every window of ours, or
 * not 8-byte aligned (an atomic add across cache lines is a split lock,
 * which some kernels answer with SIGBUS), fails the comm.
 */
static int zsm_ce_signal_apply(struct zsm_ce_chan *ch,
			       const struct zsm_ce_slot *m)
{
	struct zsm_ce_mr *w = zsm_ce_mr_window(m->sig.win);
	char why[160];

	if (!w || w->size < 8 || m->sig.off % 8 || m->sig.off > w->size - 8 ||
	    (uintptr_t)(w->start + m->sig.off) % 8) {
		snprintf(why, sizeof(why),
			 "a signal at offset %llu of window %llx, %s",
			 (unsigned long long)m->sig.off,
			 (unsigned long long)m->sig.win,
			 w ? "outside it or not 8-byte aligned"
			   : "which is not one of this process's");
		zsm_ce_fail(ch, -EPROTO, why);
		return -EPROTO;
	}
	if (w->gpu)
		return zsm_cuda_win_word_add(
			w->g.ctx,
			(zsm_cu_deviceptr)(uintptr_t)(w->start + m->sig.off),
			m->sig.add);
	/* release: pairs with the acquire load of whoever waits on the
	 * word; the put's bytes were copied before. */
	__atomic_fetch_add((uint64_t *)(void *)(w->start + m->sig.off),
			   m->sig.add, __ATOMIC_RELEASE);
	return 0;
}

/* Receiver: put seq (ch->rx.slot) is over: its signal, then its slot back. */
static void zsm_ce_put_end(struct zsm_ce_chan *ch, uint64_t seq, int err,
			   size_t len)
{
	struct zsm_ce_slot *s = zsm_ce_slot_of(ch, seq);

	if (!err && ch->rx.slot.sig.win)
		err = zsm_ce_signal_apply(ch, &ch->rx.slot);
	if (ch->rx.put_req.base.mh[0])
		zsm_mr_put_locked(ch->rx.put_req.base.mh[0]);
	ch->rx.put_req.base.mh[0] = NULL;
	s->err = err;
	s->len = err ? 0 : len;
	/* release: pairs with the acquire in zsm_ce_progress_sender. */
	atomic_store_explicit(&s->done, seq + 1, memory_order_release);
}

/* Receiver: message seq is over; its slot goes back to the sender. */
static void zsm_ce_finish(struct zsm_ce_chan *ch, uint64_t seq,
			  struct zsm_ce_req *req, int sub, int err, size_t len)
{
	struct zsm_ce_slot *s = zsm_ce_slot_of(ch, seq);

	if (req == &ch->rx.put_req) {
		zsm_ce_put_end(ch, seq, err, len);
		return;
	}

	/* A message larger than its receive is the receive's error (as on
	 * net, where the sender cannot know): the send was handed over. */
	s->err = err == -EMSGSIZE ? 0 : err;
	s->len = len;
	/* release: pairs with the acquire in zsm_ce_progress_sender. */
	atomic_store_explicit(&s->done, seq + 1, memory_order_release);
	zsm_ce_sub_done(ch, req, sub, err, len);
}

/* Receiver: the current send is over. */
static void zsm_ce_complete(struct zsm_ce_chan *ch, int err, size_t len)
{
	struct zsm_ce_req *req = ch->rx.req;
	uint64_t seq = ch->next++;

	ch->rx.req = NULL;
	zsm_ce_finish(ch, seq, req, ch->rx.sub, err, len);
}

/*
 * Receiver, GPU send: one copy on our stream out of the sender's
 * allocation (opened once per channel), polled through an event.  ctx and
 * dev are our GPU buffer's, or NULL/0 for a host buffer.  Returns 1 when
 * the send is over.
 */
static int zsm_ce_copy_from_gpu(struct zsm_ce_chan *ch, struct zsm_ce_slot *s,
				zsm_cu_context ctx, int dev,
				zsm_cu_deviceptr dst)
{
	int ret;

	if (!ch->gpu.busy) {
		ret = s->size ? zsm_ce_cuda_copy(ch, ctx, dev, dst, s) : 1;
		if (ret) {
			zsm_ce_complete(ch, ret < 0 ? ret : 0, 0);
			return 1;
		}
		return 0;
	}
	ret = zsm_ce_cuda_copy_done(ch);
	if (!ret)
		return 0;
	zsm_ce_complete(ch, ret < 0 ? ret : 0, ret < 0 ? 0 : s->size);
	return 1;
}

static int zsm_ce_recv_gpu(const struct zsm_ce_req *req, int sub)
{
	return zsm_ce_gpu(req, sub) != NULL;
}

/*
 * Receiver, any send involving GPU memory.  A GPU send is one async copy
 * on our stream, into GPU or host memory.  NCCL mixes kinds (some of its
 * buffers stay in host memory while others are on the GPU), so host to
 * GPU reads the peer's bytes into a bounce buffer a piece at a time and
 * copies each piece up.  Returns 1 when the send is over.
 */
static int zsm_ce_copy_mixed(struct zsm_ce_chan *ch, struct zsm_ce_slot *s,
			     struct zsm_ce_req *req)
{
	int sub = ch->rx.sub, ret;
	zsm_cu_deviceptr dst = (zsm_cu_deviceptr)(uintptr_t)req->base.data[sub];
	size_t n;
	ssize_t got;

	if (s->gpu) {
		const struct zsm_ce_gpu_mr *g =
			zsm_ce_gpu(req, sub);

		return zsm_ce_copy_from_gpu(ch, s, g ? g->ctx : NULL,
					    g ? g->dev : 0, dst);
	}
	/* Host to GPU: a bounce piece at a time, each copied up before the
	 * next is read. */
	if (ch->gpu.busy) {
		ret = zsm_ce_cuda_copy_done(ch);
		if (!ret)
			return 0;
		if (ret < 0) {
			zsm_ce_complete(ch, ret, ch->rx.off);
			return 1;
		}
		ch->rx.off += ch->gpu.chunk;
	}
	n = s->size - ch->rx.off;
	if (!n) {
		zsm_ce_complete(ch, 0, s->size);
		return 1;
	}
	if (!zsm_ce_cuda_bounce(ch, zsm_ce_gpu(req, sub)->ctx)) {
		zsm_ce_complete(ch, -ENOMEM, ch->rx.off);
		return 1;
	}
	if (n > ZSM_CE_CHUNK)
		n = ZSM_CE_CHUNK;
	got = zsm_ce_peer_copy(ch, ch->gpu.bounce, s->addr + ch->rx.off, n);
	ret = got < 0 ? (int)got
		      : zsm_ce_cuda_copy_up(ch, zsm_ce_gpu(req, sub)->ctx,
					    zsm_ce_gpu(req, sub)->dev,
					    dst + ch->rx.off, ch->gpu.bounce,
					    (size_t)got);
	if (ret) {
		zsm_ce_complete(ch, ret, ch->rx.off);
		return 1;
	}
	ch->gpu.chunk = (size_t)got;
	return 0;
}

/* Receiver: the copy of the current send failed (err, a read of n bytes). */
static int zsm_ce_copy_failed(struct zsm_ce_chan *ch, ssize_t err, size_t n)
{
	if (err != -ECONNRESET)
		ZSM_WARN("ce: receive comm %u: reading %zu bytes of pid %d: %s",
			 ch->comm->id, n, (int)ch->peer_pid,
			 strerror((int)-err));
	return err == -ECONNRESET ? -ECONNRESET : -EIO;
}

/*
 * Receiver, a shared send: read pieces until none is left to claim, then
 * wait for the sender's word that its pieces are written.  Returns 1
 * when the send is over.
 */
static int zsm_ce_copy_shared(struct zsm_ce_chan *ch, struct zsm_ce_slot *s,
			      struct zsm_ce_req *req)
{
	if (!ch->rx.claims_over) {
		int ret = zsm_ce_copy_pieces(ch, s, ch->rx.slot.size,
					     req->base.data[ch->rx.sub],
					     ch->rx.slot.addr, &ch->rx.off,
					     &ch->rx.piece_left);

		if (ret > 0)
			return 0;
		if (ret < 0) {
			ch->rx.claim_err = zsm_ce_copy_failed(ch, ret,
							   ch->rx.piece_left);
			if (ch->rx.claim_err == -ECONNRESET) {
				/* The sender is gone or closing: it writes
				 * nothing more. */
				ch->rx.claiming = 0;
				zsm_ce_complete(ch, -ECONNRESET, 0);
				return 1;
			}
		}
		ch->rx.claims_over = 1;
	}
	/* acquire: pairs with the release in zsm_ce_help; the sender's
	 * bytes are in our buffer before its word.  Until then it may still
	 * be writing, so the receive cannot end, not even in error. */
	if (atomic_load_explicit(&s->helped, memory_order_acquire) !=
	    ch->next + 1)
		return 0;
	ch->rx.claiming = 0;
	if (ch->rx.claim_err) {
		zsm_ce_complete(ch, ch->rx.claim_err, 0);
		return 1;
	}
	if (s->help_err) {
		if (!ch->rx.no_help)
			ZSM_INFO("ce: receive comm %u: pid %d cannot write into "
				 "this process (%s): this side copies whole "
				 "messages from now on",
				 ch->comm->id, (int)ch->peer_pid,
				 strerror(-s->help_err));
		ch->rx.no_help = 1;
		/* The piece it could not write, by the one-side path; the
		 * sender says which, and it must lie inside the message. */
		if (s->help_fail.off > ch->rx.slot.size ||
		    s->help_fail.len > ch->rx.slot.size - s->help_fail.off) {
			zsm_ce_complete(ch, -EPROTO, 0);
			return 1;
		}
		ch->rx.off = s->help_fail.off;
		ch->rx.end = s->help_fail.off + s->help_fail.len;
		return 0;
	}
	zsm_ce_complete(ch, 0, ch->rx.slot.size);
	return 1;
}

/* Receiver: copy the next piece of the current send; 1 when it is over. */
static int zsm_ce_copy(struct zsm_ce_chan *ch)
{
	struct zsm_ce_slot *s = zsm_ce_slot_of(ch, ch->next);
	struct zsm_ce_req *req = ch->rx.req;
	size_t n;
	ssize_t got;

	if (ch->rx.slot.gpu || zsm_ce_recv_gpu(req, ch->rx.sub)) {
		/* One stream: pipelined copies first. */
		if (ch->gpu.pipe_n)
			return 0;
		return zsm_ce_copy_mixed(ch, &ch->rx.slot, req);
	}
	if (ch->rx.claiming)
		return zsm_ce_copy_shared(ch, s, req);
	n = ch->rx.end - ch->rx.off;
	if (n) {
		if (n > ZSM_CE_CHUNK)
			n = ZSM_CE_CHUNK;
		got = zsm_ce_peer_copy(ch,
				       (char *)req->base.data[ch->rx.sub] +
					       ch->rx.off,
				       ch->rx.slot.addr + ch->rx.off, n);
		if (got < 0) {
			zsm_ce_complete(ch, zsm_ce_copy_failed(ch, got, n),
					ch->rx.off);
			return 1;
		}
		ch->rx.off += (uint64_t)got;
		if (ch->rx.off < ch->rx.end)
			return 0;
	}
	zsm_ce_complete(ch, 0, ch->rx.slot.size);
	return 1;
}

static void zsm_ce_take_slot(struct zsm_ce_chan *ch, struct zsm_ce_slot *s,
			     struct zsm_ce_req *req, int i);
static int zsm_ce_take_put(struct zsm_ce_chan *ch, struct zsm_ce_slot *s);
static int zsm_ce_take_get(struct zsm_ce_chan *ch, struct zsm_ce_slot *s);

/*
 * Receiver: match the next published send to the oldest posted receive
 * that has a free sub-receive of its tag.  Returns 1 when it took one.
 */
static int zsm_ce_match(struct zsm_ce_chan *ch)
{
	struct zsm_ce_slot *s = zsm_ce_slot_of(ch, ch->next);
	struct zsm_ce_slot *m = &ch->rx.slot;
	struct zsm_ce_req *req;
	int i = 0;

	/* acquire: pairs with the release in zsm_ce_post_send. */
	if (atomic_load_explicit(&s->seq, memory_order_acquire) !=
	    ch->next + 1)
		return 0;
	/* From here on the slot as it is now, whatever the sender writes
	 * into it later: the size checked is the size copied. */
	m->addr = s->addr;
	m->size = s->size;
	m->tag = s->tag;
	m->gpu = s->gpu;
	m->alloc = s->alloc;
	m->kind = s->kind;
	m->put = s->put;
	m->sig = s->sig;
	if (m->kind == ZSM_CE_KIND_PUT)
		return zsm_ce_take_put(ch, s);
	if (m->kind == ZSM_CE_KIND_GET)
		return zsm_ce_take_get(ch, s);
	for (req = ch->head; req; req = req->next) {
		for (i = 0; i < req->base.n; i++)
			if (req->sub[i] == 0 && req->base.tag[i] == m->tag)
				break;
		if (i < req->base.n)
			break;
	}
	if (!req)
		return 0; /* its receive is not posted yet */
	req->sub[i] = 1;
	zsm_ce_take_slot(ch, s, req, i);
	return 1;
}

/* Receiver: copy the message of slot s (as ch->rx.slot holds it) into
 * buffer i of req. */
static void zsm_ce_take_slot(struct zsm_ce_chan *ch, struct zsm_ce_slot *s,
			struct zsm_ce_req *req, int i)
{
	struct zsm_ce_slot *m = &ch->rx.slot;

	ch->rx.req = req;
	ch->rx.sub = i;
	ch->rx.off = 0;
	ch->rx.end = m->size;
	if (m->size > req->base.len[i]) {
		/* test() says it; the sizes are for a debugging eye. */
		ZSM_INFO("ce: receive comm %u: a %llu-byte message for a "
			 "%zu-byte receive (tag %d)",
			 ch->comm->id, (unsigned long long)m->size,
			 req->base.len[i], m->tag);
		zsm_ce_complete(ch, -EMSGSIZE, 0);
	} else if (m->size >= ZSM_CE_SPLIT_MIN && !ch->rx.no_help && !m->gpu &&
		   !zsm_ce_recv_gpu(req, i)) {
		/* The sender's core takes pieces too. */
		ch->rx.claiming = 1;
		ch->rx.claims_over = 0;
		ch->rx.claim_err = 0;
		ch->rx.piece_left = 0;
		s->dst = (uint64_t)(uintptr_t)req->base.data[i];
		/* relaxed: published by the release below. */
		atomic_store_explicit(&s->claim, 0, memory_order_relaxed);
		/* release: pairs with the acquire in zsm_ce_help; dst and
		 * claim are written first. */
		atomic_store_explicit(&s->matched, ch->next + 1,
				      memory_order_release);
	}
}

/*
 * Receiver: the window of ours a put or get (ch->rx.slot) names, when its
 * bytes lie inside it.  The peer named them: anything else is NULL, with
 * why filled.
 */
static struct zsm_ce_mr *zsm_ce_cur_window(struct zsm_ce_chan *ch,
					   const char *what, char *why,
					   size_t why_len)
{
	const struct zsm_ce_slot *m = &ch->rx.slot;
	struct zsm_ce_mr *w = zsm_ce_mr_window(m->put.win);
	uintptr_t start = w ? (uintptr_t)w->start : 0;

	if (w && m->put.dst >= start && m->put.dst - start <= w->size &&
	    m->size <= w->size - (m->put.dst - start))
		return w;
	snprintf(why, why_len, "a %s of %llu bytes at %llx of window %llx, %s",
		 what, (unsigned long long)m->size,
		 (unsigned long long)m->put.dst,
		 (unsigned long long)m->put.win,
		 w ? "past its end" : "which is not one of ours");
	return NULL;
}

/*
 * Receiver: slot s is a put (ch->rx.slot holds it).  It is served like a
 * receive into our window, on every copy path; its signal is applied
 * when its bytes are in place (zsm_ce_put_end).  Puts never join the
 * pipe, so an earlier put is over when a later one is taken; GPU
 * messages still in the pipe land first too.  Returns 1 when taken.
 */
static int zsm_ce_take_put(struct zsm_ce_chan *ch, struct zsm_ce_slot *s)
{
	const struct zsm_ce_slot *m = &ch->rx.slot;
	struct zsm_ce_req *req = &ch->rx.put_req;
	struct zsm_ce_mr *w;
	char why[200];

	if (ch->gpu.pipe_n)
		return 0;
	if (!m->size) {
		zsm_ce_put_end(ch, ch->next++, 0, 0);
		return 1;
	}
	w = zsm_ce_cur_window(ch, "put", why, sizeof(why));
	if (!w) {
		zsm_ce_put_end(ch, ch->next++, -EPROTO, 0);
		zsm_ce_fail(ch, -EPROTO, why);
		return 1;
	}
	req->base.n = 1;
	req->base.remaining = 1;
	req->base.error = 0;
	req->base.data[0] = (void *)(uintptr_t)m->put.dst;
	req->base.len[0] = m->size;
	req->base.tag[0] = m->tag;
	zsm_mr_hold(&w->base);
	req->base.mh[0] = &w->base;
	req->sub[0] = 1;
	zsm_ce_take_slot(ch, s, req, 0);
	return 1;
}

/* Receiver: get seq is answered (err, or the slot names its bytes):
 * its slot goes back to the sender, which reads them. */
static void zsm_ce_get_answer(struct zsm_ce_chan *ch, struct zsm_ce_slot *s,
			      int err)
{
	s->err = err;
	s->len = err ? 0 : ch->rx.slot.size;
	/* release: pairs with the acquire in zsm_ce_progress_sender; the
	 * answer is written first. */
	atomic_store_explicit(&s->done, ch->next + 1, memory_order_release);
	ch->next++;
}

/*
 * Receiver: slot s is a get (ch->rx.slot holds it).  Taken in slot order
 * like a put, after every earlier one is over, so the bytes the sender
 * reads show every earlier put of the comm.  The answer says where they
 * are: in our host window; in a staged window's mirror, copied down
 * first (the peer cannot open that memory, and GPU writes never reach
 * the mirror); or in our GPU allocation, which the sender opens as a
 * receiver opens a GPU sender's.  Returns 1 when taken.
 */
static int zsm_ce_take_get(struct zsm_ce_chan *ch, struct zsm_ce_slot *s)
{
	const struct zsm_ce_slot *m = &ch->rx.slot;
	struct zsm_ce_mr *w;
	char why[200];
	void *host;

	if (ch->gpu.pipe_n)
		return 0;
	w = zsm_ce_cur_window(ch, "get", why, sizeof(why));
	if (!w) {
		zsm_ce_get_answer(ch, s, -EPROTO);
		zsm_ce_fail(ch, -EPROTO, why);
		return 1;
	}
	s->gpu = 0;
	s->addr = m->put.dst;
	if (w->mirror.host) {
		if (zsm_cuda_win_mirror_down(&w->mirror,
					     (void *)(uintptr_t)m->put.dst,
					     m->size, &host)) {
			zsm_ce_get_answer(ch, s, -EIO);
			return 1;
		}
		s->addr = (uint64_t)(uintptr_t)host;
	} else if (w->gpu) {
		s->gpu = 1;
		s->alloc.ipc = w->g.ipc;
		s->alloc.off = m->put.dst - w->g.base;
		s->alloc.vmm_fd = w->g.vmm_fd;
		s->alloc.reg_id = w->g.reg_id;
		s->alloc.size = w->g.alloc_size;
	}
	zsm_ce_get_answer(ch, s, 0);
	return 1;
}

/* Receiver: finish the pipelined copies whose group's event fired. */
static int zsm_ce_pipe_reap(struct zsm_ce_chan *ch)
{
	int events = 0;

	while (ch->gpu.pipe_n > ch->gpu.pipe_new) {
		unsigned end = zsm_ce_pipe_first_end(ch), i;
		int ret = zsm_ce_cuda_pipe_query(ch, end);

		if (!ret)
			break;
		do {
			struct zsm_ce_gpu_op *op;

			i = ch->gpu.pipe_head;
			op = &ch->gpu.pipe[i];
			ch->gpu.pipe_head =
				(ch->gpu.pipe_head + 1) % ZSM_CE_PIPE;
			ch->gpu.pipe_n--;
			zsm_ce_finish(ch, op->seq, op->req, op->sub,
				      ret < 0 ? ret : 0, ret < 0 ? 0 : op->size);
			events++;
		} while (i != end);
	}
	return events;
}

/*
 * Receiver, just taken: a GPU-to-GPU copy joins the pipe instead of
 * becoming the current copy.  Returns 1 when it did.
 */
static int zsm_ce_pipe_join(struct zsm_ce_chan *ch)
{
	const struct zsm_ce_slot *s = &ch->rx.slot;
	struct zsm_ce_req *req = ch->rx.req;
	int sub = ch->rx.sub, ret;
	struct zsm_ce_gpu_op *op;

	if (!req || req == &ch->rx.put_req || !s->gpu || !s->size ||
	    !zsm_ce_recv_gpu(req, sub) || ch->gpu.busy)
		return 0;
	op = &ch->gpu.pipe[(ch->gpu.pipe_head + ch->gpu.pipe_n) % ZSM_CE_PIPE];
	op->dst = (zsm_cu_deviceptr)(uintptr_t)req->base.data[sub];
	ret = zsm_ce_cuda_pipe_add(ch, zsm_ce_gpu(req, sub)->ctx,
				   zsm_ce_gpu(req, sub)->dev, s, op);
	if (ret == -EAGAIN)
		return 0; /* the current-copy path, once the pipe drains */
	if (ret) {
		zsm_ce_complete(ch, ret, 0);
		return 1;
	}
	op->seq = ch->next++;
	op->req = req;
	op->sub = sub;
	op->size = s->size;
	op->last = 0;
	ch->gpu.pipe_n++;
	ch->gpu.pipe_new++;
	ch->rx.req = NULL;
	return 1;
}

/* Receiver: queue what joined the pipe this pass; on failure end them. */
static void zsm_ce_pipe_issue(struct zsm_ce_chan *ch)
{
	unsigned n = ch->gpu.pipe_new, first = ch->gpu.pipe_n - n;
	int ret = zsm_ce_cuda_pipe_issue(ch);

	if (!ret)
		return;
	/* The unissued ones are the ring's tail: drop them from it. */
	ch->gpu.pipe_n = first;
	ch->gpu.pipe_new = 0;
	for (unsigned k = 0; k < n; k++) {
		unsigned at = (ch->gpu.pipe_head + first + k) % ZSM_CE_PIPE;
		struct zsm_ce_gpu_op *op = &ch->gpu.pipe[at];

		zsm_ce_finish(ch, op->seq, op->req, op->sub, ret, 0);
	}
}

int zsm_ce_progress_receiver(struct zsm_ce_chan *ch)
{
	int events = zsm_ce_pipe_reap(ch);

	for (;;) {
		if (ch->rx.req) {
			events++;
			/* One piece per pass: other comms get their turn. */
			if (!zsm_ce_copy(ch))
				break;
			continue;
		}
		/* A full pipe takes no more: a GPU message taken now would
		 * wait for the whole pipe to drain on the one-copy path. */
		if (ch->gpu.pipe_n == ZSM_CE_PIPE || !zsm_ce_match(ch))
			break;
		events++;
		zsm_ce_pipe_join(ch);
	}
	if (ch->gpu.pipe_new) {
		zsm_ce_pipe_issue(ch);
		events += zsm_ce_pipe_reap(ch);
	}
	/* A sender that closed sends nothing more, and what it published
	 * but we did not take may no longer be read. */
	/* seq_cst: see struct zsm_ce_window. */
	if (ch->head && !ch->rx.req && !ch->gpu.pipe_n &&
	    atomic_load_explicit(&ch->win->closed[ZSM_CE_SENDER],
				 memory_order_seq_cst))
		zsm_ce_xfer_abort(ch, -ECONNRESET);
	return events;
}
