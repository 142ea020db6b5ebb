/* SPDX-License-Identifier: MIT */
/*
 * Owns ce transfers: the transport operations the proxy drives for comms
 * on a ce channel.  Senders publish Ready slots and finish when the slot
 * is Complete; receivers match slots to posted receives in order, copy
 * with process_vm_readv and mark the slot Complete.  Puts and gets are
 * slots too, served by the receiver (the window's owner) in the same
 * order: a put's bytes it copies in, a get it answers with where the
 * sender reads the bytes.  Engine only.
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

struct zsm_ce_chan *zsm_ce_chans;

static struct zsm_ce_slot *zsm_ce_slot_of(struct zsm_ce_chan *ch, uint64_t n)
{
	return &ch->win->slots[n % ZSM_CE_SLOTS];
}

static void zsm_ce_push(struct zsm_ce_chan *ch, struct zsm_ce_req *req)
{
	req->next = NULL;
	if (ch->tail)
		ch->tail->next = req;
	else
		ch->head = req;
	ch->tail = req;
}

static void zsm_ce_unlink(struct zsm_ce_chan *ch, struct zsm_ce_req *req)
{
	struct zsm_ce_req *prev = NULL, *r;

	for (r = ch->head; r && r != req; r = r->next)
		prev = r;
	if (!r)
		return;
	if (prev)
		prev->next = r->next;
	else
		ch->head = r->next;
	if (ch->tail == r)
		ch->tail = prev;
}

/* Publish the result; test() may free and reuse req from here on. */
static void zsm_ce_publish(struct zsm_ce_req *req)
{
	zsm_req_publish(&req->base);
}

void zsm_ce_xfer_abort(struct zsm_ce_chan *ch, int err)
{
	struct zsm_ce_req *req;

	/* Pipelined copies still write into these receives: let them land
	 * before NCCL may reuse the buffers. */
	zsm_ce_cuda_pipe_drain(ch);
	ch->pipe_n = ch->pipe_new = 0;
	ch->cur_req = NULL;
	ch->claiming = 0;
	if (ch->put_req.base.mh[0])
		zsm_mr_put_locked(ch->put_req.base.mh[0]);
	ch->put_req.base.mh[0] = NULL;
	while ((req = ch->head)) {
		ch->head = req->next;
		if (!req->base.error)
			req->base.error = err;
		zsm_ce_publish(req);
	}
	ch->tail = NULL;
}

/* The core says it, once, and comes back through zsm_ce_chan_fail. */
static void zsm_ce_fail(struct zsm_ce_chan *ch, int err, const char *why)
{
	if (!ch->failed)
		zsm_comm_fail(ch->comm, err, why);
}

/*
 * Copy n bytes between local and the peer's remote address: a read from
 * the peer or a write into it, fenced against the peer's close.  Bytes
 * copied, or -errno.
 */
static ssize_t zsm_ce_peer_io(struct zsm_ce_chan *ch, void *local,
			      uint64_t remote, size_t n, int write)
{
	struct iovec l = {.iov_base = local, .iov_len = n};
	struct iovec r = {.iov_base = (void *)(uintptr_t)remote, .iov_len = n};
	ssize_t got;
	int err = 0;

	/* seq_cst, both: the Dekker pair of struct zsm_ce_window. */
	atomic_store(&ch->win->busy[ch->side], 1);
	if (atomic_load(&ch->win->closed[!ch->side])) {
		atomic_store(&ch->win->busy[ch->side], 0);
		return -ECONNRESET;
	}
	if (!write)
		got = process_vm_readv(ch->peer_pid, &l, 1, &r, 1, 0);
	else
		got = process_vm_writev(ch->peer_pid, &l, 1, &r, 1, 0);
	if (got < 0)
		err = errno;
	/* release: the copy is over before the peer may close. */
	atomic_store_explicit(&ch->win->busy[ch->side], 0,
			      memory_order_release);
	if (got < 0)
		return err == ESRCH ? -ECONNRESET : -err;
	return got ? got : -EIO;
}

/* A receiver reads from the sender, a sender writes into the receiver. */
static ssize_t zsm_ce_peer_copy(struct zsm_ce_chan *ch, void *local,
				uint64_t remote, size_t n)
{
	return zsm_ce_peer_io(ch, local, remote, n, ch->side == ZSM_CE_SENDER);
}

/*
 * Where the peer reads buffer 0 of req: the buffer itself, or for a GPU
 * window it cannot open its place in the window's pinned host mirror,
 * copied down first (on our stream: a copy engine, no kernel).  0, or
 * -errno (said).
 */
static int zsm_ce_stage_out(struct zsm_ce_req *req, uint64_t *addr)
{
	const struct zsm_mr *m = req->base.mh[0];
	const struct zsm_ce_mr *mr;
	void *host;
	int ret;

	*addr = (uint64_t)(uintptr_t)req->base.data[0];
	if (!m || m->ops != &zsm_ce_comm_ops)
		return 0;
	mr = (const struct zsm_ce_mr *)(const void *)m;
	if (!mr->mirror.host || !req->base.len[0])
		return 0;
	ret = zsm_cuda_win_mirror_down(&mr->mirror, req->base.data[0],
				       req->base.len[0], &host);
	*addr = (uint64_t)(uintptr_t)host;
	return ret;
}

/*
 * A send, or a put: a slot the receiver serves in order.  A put names
 * where its bytes go in one of the receiver's windows, and its signal;
 * the receiver copies the bytes (from our GPU memory too: it opens the
 * allocation as for a send) and applies the signal once they, and every
 * earlier put's, are in place, so no signal shows before its data.
 */
static int zsm_ce_post_slot(struct zsm_ce_chan *ch, struct zsm_ce_req *req)
{
	struct zsm_ce_slot *s;

	/* seq_cst: see struct zsm_ce_window. */
	if (atomic_load(&ch->win->closed[ZSM_CE_RECEIVER])) {
		req->base.error = -ECONNRESET;
		zsm_ce_publish(req);
		return 0;
	}
	if (ch->next - ch->oldest >= ZSM_CE_SLOTS)
		return -EAGAIN;
	s = zsm_ce_slot_of(ch, ch->next);
	/* A get's buffer is ours to fill: the receiver needs none of it. */
	s->addr = 0;
	if (req->base.type != ZSM_REQ_GET && zsm_ce_stage_out(req, &s->addr)) {
		req->base.error = -EIO;
		zsm_ce_publish(req);
		return 0;
	}
	s->size = req->base.len[0];
	s->tag = req->base.tag[0];
	s->kind = req->base.type == ZSM_REQ_PUT	  ? ZSM_CE_KIND_PUT
		  : req->base.type == ZSM_REQ_GET ? ZSM_CE_KIND_GET
						  : ZSM_CE_KIND_SEND;
	s->put_dst = req->base.rma.addr;
	s->put_win = req->base.rma.dst_id;
	s->sig_win = req->base.rma.sig_id;
	s->sig_off = req->base.rma.sig_off;
	s->sig_add = req->base.rma.sig_add;
	s->err = 0;
	s->len = 0;
	s->gpu = req->base.type != ZSM_REQ_GET && zsm_ce_gpu(req, 0);
	s->vmm_fd = -1;
	req->src = s->addr;
	if (s->gpu && (uintptr_t)req->base.data[0] != s->addr)
		s->gpu = 0; /* staged out: host bytes now */
	if (s->gpu) {
		/* The receiver opens our allocation and copies from it. */
		const struct zsm_ce_gpu_mr *g = zsm_ce_gpu(req, 0);

		s->ipc = g->ipc;
		s->ipc_off = s->addr - g->base;
		s->vmm_fd = g->vmm_fd;
		s->reg_id = g->reg_id;
		s->alloc_size = g->alloc_size;
	}
	req->seq = ch->next;
	zsm_ce_push(ch, req);
	/* release: pairs with the acquire in zsm_ce_match; the slot's fields
	 * are written before the receiver sees its number. */
	atomic_store_explicit(&s->seq, ch->next + 1, memory_order_release);
	ch->next++;
	return 0;
}

/* A put's or get's window must be the peer's: its key names the owner. */
static int zsm_ce_rma_check(struct zsm_ce_chan *ch, struct zsm_ce_req *req)
{
	uint64_t key = req->base.rma.key;

	if (!req->base.len[0])
		return 0; /* a signal alone: its owner checks the word */
	if ((pid_t)key != ch->peer_pid) {
		ZSM_WARN("ce: send comm %u: a %s into a window of pid %d, not "
			 "of the peer (pid %d)",
			 ch->comm->id, zsm_req_what(&req->base), (int)key,
			 (int)ch->peer_pid);
		return -EINVAL;
	}
	return 0;
}

int zsm_ce_xfer_post(struct zsm_req *b)
{
	struct zsm_ce_req *req = zsm_ce_req_of(b);
	struct zsm_comm *comm = b->comm;
	struct zsm_ce_chan *ch = comm->tp;
	int err = zsm_comm_error(comm);

	if (comm->closing || !ch)
		err = -ECANCELED;
	if (err) {
		req->base.error = err;
		zsm_ce_publish(req);
		return 0;
	}
	if (req->base.type == ZSM_REQ_PUT || req->base.type == ZSM_REQ_GET) {
		err = zsm_ce_rma_check(ch, req);
		if (err) {
			req->base.error = err;
			zsm_ce_publish(req);
			return 0;
		}
	}
	if (req->base.type == ZSM_REQ_GET && !req->base.len[0]) {
		zsm_ce_publish(req); /* nothing to read */
		return 0;
	}
	if (req->base.type == ZSM_REQ_SEND || req->base.type == ZSM_REQ_PUT ||
	    req->base.type == ZSM_REQ_GET)
		return zsm_ce_post_slot(ch, req);
	for (int i = 0; i < req->base.n; i++) {
		req->sub[i] = 0;
		req->base.sizes[i] = 0;
	}
	req->base.remaining = req->base.n;
	zsm_ce_push(ch, req);
	return 0;
}

/* Take the next piece of s, a message of size bytes as this side knows
 * it, for this side; its length, 0 when none is left.  Both sides call it
 * on the same slot. */
static uint64_t zsm_ce_claim(struct zsm_ce_slot *s, uint64_t size,
			     uint64_t *off)
{
	/* relaxed: only the count is shared; the bytes are published by
	 * helped and done. */
	uint64_t k = atomic_fetch_add_explicit(&s->claim, 1,
					       memory_order_relaxed);

	if (k >= (size + ZSM_CE_PIECE - 1) / ZSM_CE_PIECE)
		return 0;
	*off = k * ZSM_CE_PIECE;
	return size - *off < ZSM_CE_PIECE ? size - *off : ZSM_CE_PIECE;
}

/*
 * Copy claimed pieces of s between local and the peer's remote (reads on
 * the receiving side, writes on the sending side), up to a chunk; the
 * piece in hand is *off and *left.  1: the chunk is spent; 0: no piece
 * is left to claim and ours are copied; -errno: a copy failed, and *off
 * and *left name what is left of its piece.
 */
static int zsm_ce_copy_pieces(struct zsm_ce_chan *ch, struct zsm_ce_slot *s,
			      uint64_t size, char *local, uint64_t remote,
			      uint64_t *off, uint64_t *left)
{
	uint64_t budget = ZSM_CE_CHUNK;

	while (budget) {
		ssize_t got;

		if (!*left) {
			*left = zsm_ce_claim(s, size, off);
			if (!*left)
				return 0;
		}
		got = zsm_ce_peer_copy(ch, local + *off, remote + *off,
				       *left < budget ? *left : budget);
		if (got < 0)
			return (int)got;
		*off += (uint64_t)got;
		*left -= (uint64_t)got;
		ch->shared_bytes += (uint64_t)got;
		budget -= (uint64_t)got; /* got <= the length asked for */
	}
	return 1;
}

/*
 * Sender: the receiver shares the oldest send; write pieces of it into
 * the receiver's buffer, up to a chunk per pass.  Returns 1 when it did
 * something.
 */
static int zsm_ce_help(struct zsm_ce_chan *ch)
{
	struct zsm_ce_req *req = ch->head;
	struct zsm_ce_slot *s;
	uint64_t mark;
	int ret;

	if (!req)
		return 0;
	s = zsm_ce_slot_of(ch, req->seq);
	mark = req->seq + 1;
	/* acquire: pairs with the release in zsm_ce_match.  helped is ours:
	 * relaxed. */
	if (atomic_load_explicit(&s->matched, memory_order_acquire) != mark ||
	    atomic_load_explicit(&s->helped, memory_order_relaxed) == mark)
		return 0;
	if (ch->help_seq != mark) {
		ch->help_seq = mark;
		ch->help_left = 0;
		s->help_err = 0;
	}
	/* From where the receiver reads too (a staged window's mirror);
	 * our own note of it, not the slot's, which the peer can write. */
	ret = zsm_ce_copy_pieces(ch, s, req->base.len[0],
				 (char *)(uintptr_t)req->src, s->dst,
				 &ch->help_off, &ch->help_left);
	if (ret > 0)
		return 1; /* more next pass */
	if (ret < 0) {
		/* The receiver copies the rest of this piece itself. */
		s->help_err = ret;
		s->help_fail_off = ch->help_off;
		s->help_fail_len = ch->help_left;
	}
	/* release: pairs with the acquire in zsm_ce_copy_shared; our bytes,
	 * help_err and the failed range are written first. */
	atomic_store_explicit(&s->helped, mark, memory_order_release);
	return 1;
}

/*
 * Sender: the receiver answered get req (slot s, done seen): read its
 * bytes from where the answer says, a chunk per call so that a large get
 * does not hold the engine, into our buffer (host or GPU memory).  1 when
 * the get is over (its result set), 0 when more is left.
 */
static int zsm_ce_get_read(struct zsm_ce_chan *ch, struct zsm_ce_req *req,
			   const struct zsm_ce_slot *s)
{
	struct zsm_ce_slot *a = &ch->get_ans;
	const struct zsm_ce_gpu_mr *g = zsm_ce_gpu(req, 0);
	char *dst = (char *)req->base.data[0] + req->got;
	size_t len = req->base.len[0], n;
	ssize_t got;
	int err;

	if (ch->get_seq != req->seq + 1) {
		/* Taken once: the receiver can write its slot at any time. */
		ch->get_seq = req->seq + 1;
		req->got = 0;
		a->err = s->err;
		a->addr = s->addr;
		a->gpu = s->gpu;
		a->ipc = s->ipc;
		a->ipc_off = s->ipc_off;
		a->vmm_fd = s->vmm_fd;
		a->reg_id = s->reg_id;
		a->alloc_size = s->alloc_size;
		if (a->err) {
			req->base.error = a->err;
			return 1;
		}
		/* Our copy must stay inside the allocation it opens. */
		if (a->gpu && (a->ipc_off > a->alloc_size ||
			       len > a->alloc_size - a->ipc_off)) {
			ZSM_WARN("ce: send comm %u: pid %d answered a get of %zu "
				 "bytes with %llu bytes at %llu of a GPU "
				 "allocation: past its end",
				 ch->comm->id, (int)ch->peer_pid, len,
				 (unsigned long long)a->alloc_size,
				 (unsigned long long)a->ipc_off);
			req->base.error = -EPROTO;
			return 1;
		}
	}
	n = len - req->got < ZSM_CE_CHUNK ? len - req->got : ZSM_CE_CHUNK;
	if (a->gpu) {
		err = zsm_ce_cuda_get(ch, g ? g->ctx : NULL, g ? g->dev : 0, dst,
				      a, req->got, n);
		got = err ? err : (ssize_t)n;
	} else if (!g) {
		got = zsm_ce_peer_io(ch, dst, a->addr + req->got, n, 0);
	} else if (!zsm_ce_cuda_bounce(ch, g->ctx)) {
		got = -ENOMEM;
	} else {
		/* Host bytes up into our GPU memory, from pinned memory. */
		got = zsm_ce_peer_io(ch, ch->bounce, a->addr + req->got, n, 0);
		err = got > 0 ? zsm_cuda_win_copy(
					g->ctx, (zsm_cu_deviceptr)(uintptr_t)dst,
					(zsm_cu_deviceptr)(uintptr_t)ch->bounce,
					(size_t)got)
			      : 0;
		if (err)
			got = err;
	}
	if (got < 0) {
		if (got != -ECONNRESET && !a->gpu)
			ZSM_WARN("ce: send comm %u: reading %zu bytes of pid "
				 "%d for a get: %s",
				 ch->comm->id, n, (int)ch->peer_pid,
				 strerror((int)-got));
		req->base.error = got == -ECONNRESET ? -ECONNRESET : -EIO;
		return 1;
	}
	req->got += (uint64_t)got;
	if (req->got < len)
		return 0;
	req->base.sizes[0] = (int)len;
	return 1;
}

/* Sender: finish, in order, the sends the receiver marked Complete (a
 * get once it also read its bytes). */
static int zsm_ce_progress_sender(struct zsm_ce_chan *ch)
{
	struct zsm_ce_req *req;
	int events = zsm_ce_help(ch);

	while ((req = ch->head)) {
		struct zsm_ce_slot *s = zsm_ce_slot_of(ch, req->seq);

		/* acquire: pairs with the release in zsm_ce_complete (and
		 * zsm_ce_get_answer: the answer is read after it). */
		if (atomic_load_explicit(&s->done, memory_order_acquire) !=
		    req->seq + 1)
			break;
		if (req->base.type == ZSM_REQ_GET) {
			events++;
			/* One chunk per pass; the later ones wait their
			 * turn, finishing in order. */
			if (!zsm_ce_get_read(ch, req, s))
				break;
		} else {
			req->base.error = s->err;
			req->base.sizes[0] = (int)req->base.len[0];
		}
		ch->head = req->next;
		if (!ch->head)
			ch->tail = NULL;
		ch->oldest = req->seq + 1;
		zsm_ce_publish(req);
		events++;
	}
	/* seq_cst: see struct zsm_ce_window. */
	if (ch->head && atomic_load(&ch->win->closed[ZSM_CE_RECEIVER]))
		zsm_ce_xfer_abort(ch, -ECONNRESET);
	return events;
}

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
	struct zsm_ce_mr *w = zsm_ce_mr_window(m->sig_win);
	char why[160];

	if (!w || w->size < 8 || m->sig_off % 8 || m->sig_off > w->size - 8 ||
	    (uintptr_t)(w->start + m->sig_off) % 8) {
		snprintf(why, sizeof(why),
			 "a signal at offset %llu of window %llx, %s",
			 (unsigned long long)m->sig_off,
			 (unsigned long long)m->sig_win,
			 w ? "outside it or not 8-byte aligned"
			   : "which is not one of this process's");
		zsm_ce_fail(ch, -EPROTO, why);
		return -EPROTO;
	}
	if (w->gpu)
		return zsm_cuda_win_word_add(
			w->g.ctx,
			(zsm_cu_deviceptr)(uintptr_t)(w->start + m->sig_off),
			m->sig_add);
	/* release: pairs with the acquire load of whoever waits on the
	 * word; the put's bytes were copied before. */
	__atomic_fetch_add((uint64_t *)(void *)(w->start + m->sig_off),
			   m->sig_add, __ATOMIC_RELEASE);
	return 0;
}

/* Receiver: put seq (ch->cur) is over: its signal, then its slot back. */
static void zsm_ce_put_end(struct zsm_ce_chan *ch, uint64_t seq, int err,
			   size_t len)
{
	struct zsm_ce_slot *s = zsm_ce_slot_of(ch, seq);

	if (!err && ch->cur.sig_win)
		err = zsm_ce_signal_apply(ch, &ch->cur);
	if (ch->put_req.base.mh[0])
		zsm_mr_put_locked(ch->put_req.base.mh[0]);
	ch->put_req.base.mh[0] = NULL;
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

	if (req == &ch->put_req) {
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
	struct zsm_ce_req *req = ch->cur_req;
	uint64_t seq = ch->next++;

	ch->cur_req = NULL;
	zsm_ce_finish(ch, seq, req, ch->cur_sub, err, len);
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

	if (!ch->gpu_busy) {
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
	int sub = ch->cur_sub, ret;
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
	if (ch->gpu_busy) {
		ret = zsm_ce_cuda_copy_done(ch);
		if (!ret)
			return 0;
		if (ret < 0) {
			zsm_ce_complete(ch, ret, ch->cur_off);
			return 1;
		}
		ch->cur_off += ch->gpu_chunk;
	}
	n = s->size - ch->cur_off;
	if (!n) {
		zsm_ce_complete(ch, 0, s->size);
		return 1;
	}
	if (!zsm_ce_cuda_bounce(ch, zsm_ce_gpu(req, sub)->ctx)) {
		zsm_ce_complete(ch, -ENOMEM, ch->cur_off);
		return 1;
	}
	if (n > ZSM_CE_CHUNK)
		n = ZSM_CE_CHUNK;
	got = zsm_ce_peer_copy(ch, ch->bounce, s->addr + ch->cur_off, n);
	ret = got < 0 ? (int)got
		      : zsm_ce_cuda_copy_up(ch, zsm_ce_gpu(req, sub)->ctx,
					    zsm_ce_gpu(req, sub)->dev,
					    dst + ch->cur_off, ch->bounce,
					    (size_t)got);
	if (ret) {
		zsm_ce_complete(ch, ret, ch->cur_off);
		return 1;
	}
	ch->gpu_chunk = (size_t)got;
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
	if (!ch->claims_over) {
		int ret = zsm_ce_copy_pieces(ch, s, ch->cur.size,
					     req->base.data[ch->cur_sub],
					     ch->cur.addr, &ch->cur_off,
					     &ch->piece_left);

		if (ret > 0)
			return 0;
		if (ret < 0) {
			ch->claim_err = zsm_ce_copy_failed(ch, ret,
							   ch->piece_left);
			if (ch->claim_err == -ECONNRESET) {
				/* The sender is gone or closing: it writes
				 * nothing more. */
				ch->claiming = 0;
				zsm_ce_complete(ch, -ECONNRESET, 0);
				return 1;
			}
		}
		ch->claims_over = 1;
	}
	/* acquire: pairs with the release in zsm_ce_help; the sender's
	 * bytes are in our buffer before its word.  Until then it may still
	 * be writing, so the receive cannot end, not even in error. */
	if (atomic_load_explicit(&s->helped, memory_order_acquire) !=
	    ch->next + 1)
		return 0;
	ch->claiming = 0;
	if (ch->claim_err) {
		zsm_ce_complete(ch, ch->claim_err, 0);
		return 1;
	}
	if (s->help_err) {
		if (!ch->no_help)
			ZSM_INFO("ce: receive comm %u: pid %d cannot write into "
				 "this process (%s): this side copies whole "
				 "messages from now on",
				 ch->comm->id, (int)ch->peer_pid,
				 strerror(-s->help_err));
		ch->no_help = 1;
		/* The piece it could not write, by the one-side path; the
		 * sender says which, and it must lie inside the message. */
		if (s->help_fail_off > ch->cur.size ||
		    s->help_fail_len > ch->cur.size - s->help_fail_off) {
			zsm_ce_complete(ch, -EPROTO, 0);
			return 1;
		}
		ch->cur_off = s->help_fail_off;
		ch->cur_end = s->help_fail_off + s->help_fail_len;
		return 0;
	}
	zsm_ce_complete(ch, 0, ch->cur.size);
	return 1;
}

/* Receiver: copy the next piece of the current send; 1 when it is over. */
static int zsm_ce_copy(struct zsm_ce_chan *ch)
{
	struct zsm_ce_slot *s = zsm_ce_slot_of(ch, ch->next);
	struct zsm_ce_req *req = ch->cur_req;
	size_t n;
	ssize_t got;

	if (ch->cur.gpu || zsm_ce_recv_gpu(req, ch->cur_sub)) {
		/* One stream: pipelined copies first. */
		if (ch->pipe_n)
			return 0;
		return zsm_ce_copy_mixed(ch, &ch->cur, req);
	}
	if (ch->claiming)
		return zsm_ce_copy_shared(ch, s, req);
	n = ch->cur_end - ch->cur_off;
	if (n) {
		if (n > ZSM_CE_CHUNK)
			n = ZSM_CE_CHUNK;
		got = zsm_ce_peer_copy(ch,
				       (char *)req->base.data[ch->cur_sub] +
					       ch->cur_off,
				       ch->cur.addr + ch->cur_off, n);
		if (got < 0) {
			zsm_ce_complete(ch, zsm_ce_copy_failed(ch, got, n),
					ch->cur_off);
			return 1;
		}
		ch->cur_off += (uint64_t)got;
		if (ch->cur_off < ch->cur_end)
			return 0;
	}
	zsm_ce_complete(ch, 0, ch->cur.size);
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
	struct zsm_ce_slot *m = &ch->cur;
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
	m->ipc_off = s->ipc_off;
	m->vmm_fd = s->vmm_fd;
	m->ipc = s->ipc;
	m->reg_id = s->reg_id;
	m->alloc_size = s->alloc_size;
	m->kind = s->kind;
	m->put_dst = s->put_dst;
	m->put_win = s->put_win;
	m->sig_win = s->sig_win;
	m->sig_off = s->sig_off;
	m->sig_add = s->sig_add;
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

/* Receiver: copy the message of slot s (as ch->cur holds it) into
 * buffer i of req. */
static void zsm_ce_take_slot(struct zsm_ce_chan *ch, struct zsm_ce_slot *s,
			struct zsm_ce_req *req, int i)
{
	struct zsm_ce_slot *m = &ch->cur;

	ch->cur_req = req;
	ch->cur_sub = i;
	ch->cur_off = 0;
	ch->cur_end = m->size;
	if (m->size > req->base.len[i]) {
		/* test() says it; the sizes are for a debugging eye. */
		ZSM_INFO("ce: receive comm %u: a %llu-byte message for a "
			 "%zu-byte receive (tag %d)",
			 ch->comm->id, (unsigned long long)m->size,
			 req->base.len[i], m->tag);
		zsm_ce_complete(ch, -EMSGSIZE, 0);
	} else if (m->size >= ZSM_CE_SPLIT_MIN && !ch->no_help && !m->gpu &&
		   !zsm_ce_recv_gpu(req, i)) {
		/* The sender's core takes pieces too. */
		ch->claiming = 1;
		ch->claims_over = 0;
		ch->claim_err = 0;
		ch->piece_left = 0;
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
 * Receiver: the window of ours a put or get (ch->cur) names, when its
 * bytes lie inside it.  The peer named them: anything else is NULL, with
 * why filled.
 */
static struct zsm_ce_mr *zsm_ce_cur_window(struct zsm_ce_chan *ch,
					   const char *what, char *why,
					   size_t why_len)
{
	const struct zsm_ce_slot *m = &ch->cur;
	struct zsm_ce_mr *w = zsm_ce_mr_window(m->put_win);
	uintptr_t start = w ? (uintptr_t)w->start : 0;

	if (w && m->put_dst >= start && m->put_dst - start <= w->size &&
	    m->size <= w->size - (m->put_dst - start))
		return w;
	snprintf(why, why_len, "a %s of %llu bytes at %llx of window %llx, %s",
		 what, (unsigned long long)m->size,
		 (unsigned long long)m->put_dst,
		 (unsigned long long)m->put_win,
		 w ? "past its end" : "which is not one of ours");
	return NULL;
}

/*
 * Receiver: slot s is a put (ch->cur holds it).  It is served like a
 * receive into our window, on every copy path; its signal is applied
 * when its bytes are in place (zsm_ce_put_end).  Puts never join the
 * pipe, so an earlier put is over when a later one is taken; GPU
 * messages still in the pipe land first too.  Returns 1 when taken.
 */
static int zsm_ce_take_put(struct zsm_ce_chan *ch, struct zsm_ce_slot *s)
{
	const struct zsm_ce_slot *m = &ch->cur;
	struct zsm_ce_req *req = &ch->put_req;
	struct zsm_ce_mr *w;
	char why[200];

	if (ch->pipe_n)
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
	req->base.data[0] = (void *)(uintptr_t)m->put_dst;
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
	s->len = err ? 0 : ch->cur.size;
	/* release: pairs with the acquire in zsm_ce_progress_sender; the
	 * answer is written first. */
	atomic_store_explicit(&s->done, ch->next + 1, memory_order_release);
	ch->next++;
}

/*
 * Receiver: slot s is a get (ch->cur holds it).  Taken in slot order
 * like a put, after every earlier one is over, so the bytes the sender
 * reads show every earlier put of the comm.  The answer says where they
 * are: in our host window; in a staged window's mirror, copied down
 * first (the peer cannot open that memory, and GPU writes never reach
 * the mirror); or in our GPU allocation, which the sender opens as a
 * receiver opens a GPU sender's.  Returns 1 when taken.
 */
static int zsm_ce_take_get(struct zsm_ce_chan *ch, struct zsm_ce_slot *s)
{
	const struct zsm_ce_slot *m = &ch->cur;
	struct zsm_ce_mr *w;
	char why[200];
	void *host;

	if (ch->pipe_n)
		return 0;
	w = zsm_ce_cur_window(ch, "get", why, sizeof(why));
	if (!w) {
		zsm_ce_get_answer(ch, s, -EPROTO);
		zsm_ce_fail(ch, -EPROTO, why);
		return 1;
	}
	s->gpu = 0;
	s->addr = m->put_dst;
	if (w->mirror.host) {
		if (zsm_cuda_win_mirror_down(&w->mirror,
					     (void *)(uintptr_t)m->put_dst,
					     m->size, &host)) {
			zsm_ce_get_answer(ch, s, -EIO);
			return 1;
		}
		s->addr = (uint64_t)(uintptr_t)host;
	} else if (w->gpu) {
		s->gpu = 1;
		s->ipc = w->g.ipc;
		s->ipc_off = m->put_dst - w->g.base;
		s->vmm_fd = w->g.vmm_fd;
		s->reg_id = w->g.reg_id;
		s->alloc_size = w->g.alloc_size;
	}
	zsm_ce_get_answer(ch, s, 0);
	return 1;
}

/* Receiver: finish the pipelined copies whose group's event fired. */
static int zsm_ce_pipe_reap(struct zsm_ce_chan *ch)
{
	int events = 0;

	while (ch->pipe_n > ch->pipe_new) {
		unsigned end = zsm_ce_pipe_first_end(ch), i;
		int ret = zsm_ce_cuda_pipe_query(ch, end);

		if (!ret)
			break;
		do {
			struct zsm_ce_gpu_op *op;

			i = ch->pipe_head;
			op = &ch->pipe[i];
			ch->pipe_head = (ch->pipe_head + 1) % ZSM_CE_PIPE;
			ch->pipe_n--;
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
	const struct zsm_ce_slot *s = &ch->cur;
	struct zsm_ce_req *req = ch->cur_req;
	int sub = ch->cur_sub, ret;
	struct zsm_ce_gpu_op *op;

	if (!req || req == &ch->put_req || !s->gpu || !s->size ||
	    !zsm_ce_recv_gpu(req, sub) || ch->gpu_busy)
		return 0;
	op = &ch->pipe[(ch->pipe_head + ch->pipe_n) % ZSM_CE_PIPE];
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
	ch->pipe_n++;
	ch->pipe_new++;
	ch->cur_req = NULL;
	return 1;
}

/* Receiver: queue what joined the pipe this pass; on failure end them. */
static void zsm_ce_pipe_issue(struct zsm_ce_chan *ch)
{
	unsigned first = ch->pipe_n - ch->pipe_new, n = ch->pipe_new;
	int ret = zsm_ce_cuda_pipe_issue(ch);

	if (!ret)
		return;
	/* The unissued ones are the ring's tail: drop them from it. */
	ch->pipe_n = first;
	ch->pipe_new = 0;
	for (unsigned k = 0; k < n; k++) {
		struct zsm_ce_gpu_op *op =
			&ch->pipe[(ch->pipe_head + first + k) % ZSM_CE_PIPE];

		zsm_ce_finish(ch, op->seq, op->req, op->sub, ret, 0);
	}
}

static int zsm_ce_progress_receiver(struct zsm_ce_chan *ch)
{
	int events = zsm_ce_pipe_reap(ch);

	for (;;) {
		if (ch->cur_req) {
			events++;
			/* One piece per pass: other comms get their turn. */
			if (!zsm_ce_copy(ch))
				break;
			continue;
		}
		/* A full pipe takes no more: a GPU message taken now would
		 * wait for the whole pipe to drain on the one-copy path. */
		if (ch->pipe_n == ZSM_CE_PIPE || !zsm_ce_match(ch))
			break;
		events++;
		zsm_ce_pipe_join(ch);
	}
	if (ch->pipe_new) {
		zsm_ce_pipe_issue(ch);
		events += zsm_ce_pipe_reap(ch);
	}
	/* A sender that closed sends nothing more, and what it published
	 * but we did not take may no longer be read. */
	/* seq_cst: see struct zsm_ce_window. */
	if (ch->head && !ch->cur_req && !ch->pipe_n &&
	    atomic_load(&ch->win->closed[ZSM_CE_SENDER]))
		zsm_ce_xfer_abort(ch, -ECONNRESET);
	return events;
}

/* Everything whose change means the channel moved. */
static uint64_t zsm_ce_fingerprint(const struct zsm_ce_chan *ch)
{
	uint64_t h = ch->next * 0x9e3779b97f4a7c15ULL ^ ch->oldest;

	h = h * 31 + ch->cur_off;
	h = h * 31 + (uint64_t)(uintptr_t)ch->head;
	h = h * 31 + (uint64_t)(uintptr_t)ch->cur_req;
	h = h * 31 + (uint64_t)ch->gpu_busy;
	h = h * 31 + ch->pipe_head * 64 + ch->pipe_n;
	h = h * 31 + (ch->head ? ch->head->got : 0);
	return h * 31 + (ch->head ? ch->head->base.remaining : 0);
}

/*
 * What a channel with work outstanding has waited for (at INFO: a receive
 * posted long before its peer sends is normal): the trail a hang leaves.
 */
static void zsm_ce_say_stall(struct zsm_ce_chan *ch)
{
	struct zsm_ce_slot *s = zsm_ce_slot_of(
		ch, ch->side == ZSM_CE_SENDER ? ch->oldest : ch->next);
	const struct zsm_ce_req *r = ch->head;
	char subs[160] = "";
	size_t used = 0;

	for (int i = 0; r && i < r->base.n && used < sizeof(subs); i++)
		used += (size_t)snprintf(subs + used, sizeof(subs) - used,
					 " [tag %d, %zu B, %s, %s]", r->base.tag[i],
					 r->base.len[i],
					 zsm_ce_gpu(r, i) ? "gpu"
								   : "host",
					 r->sub[i] == 2	 ? "done"
					 : r->sub[i] == 1 ? "taken"
								 : "open");
	/* acquire, both: pair with the releases in zsm_ce_post_send and
	 * zsm_ce_complete; only read for the message.  A GPU copy that has
	 * not finished in that time is wrong, not a quiet peer: WARN. */
	ZSM_LOG_AT(ch->gpu_busy || ch->pipe_n ? ZSM_LOG_WARN : ZSM_LOG_INFO,
		 "ce: %s comm %u: no progress for %llu s: message %llu "
		 "(slot seq %llu, done %llu, %llu B, tag %d, %s), oldest "
		 "request %s%s, copy %s at %llu of %llu",
		 ch->side == ZSM_CE_SENDER ? "send" : "receive",
		 ch->comm->id, ZSM_CE_STALL_NS / 1000000000ULL,
		 (unsigned long long)(ch->side == ZSM_CE_SENDER ? ch->oldest
								 : ch->next),
		 (unsigned long long)atomic_load_explicit(
			 &s->seq, memory_order_acquire),
		 (unsigned long long)atomic_load_explicit(
			 &s->done, memory_order_acquire),
		 (unsigned long long)s->size, s->tag, s->gpu ? "gpu" : "host",
		 r ? zsm_req_what(&r->base) : "none",
		 subs,
		 ch->gpu_busy || ch->pipe_n ? zsm_ce_cuda_copy_state(ch)
		 : ch->cur_req ? "host" : "none",
		 (unsigned long long)ch->cur_off,
		 (unsigned long long)ch->cur_end);
}

/* A receiver looks for puts while this process has windows. */
static int zsm_ce_serves_puts(const struct zsm_ce_chan *ch)
{
	return ch->side == ZSM_CE_RECEIVER && zsm_ce_windows;
}

static int zsm_ce_progress(void)
{
	uint64_t now = 0;
	int events = 0;

	for (struct zsm_ce_chan *ch = zsm_ce_chans; ch; ch = ch->next_chan) {
		uint64_t print;
		int got;

		/* No copy in flight may use a mapping being closed.  The
		 * notices name the sender's registrations: what a sender
		 * opened of the receiver's windows (gets) stays until the
		 * channel closes. */
		if (ch->maps && ch->side == ZSM_CE_RECEIVER && !ch->gpu_busy &&
		    !ch->pipe_n)
			events += zsm_ce_cuda_forget(ch);
		/* A receiver always looks at its next slot (one load): a
		 * put into a process without windows is refused, not left
		 * waiting; with windows it also keeps the engine busy. */
		if (ch->failed ||
		    (!ch->head && ch->side != ZSM_CE_RECEIVER)) {
			ch->last_event_ns = 0;
			continue;
		}
		got = ch->side == ZSM_CE_SENDER ? zsm_ce_progress_sender(ch)
						: zsm_ce_progress_receiver(ch);
		events += got;
		/* A copy in flight counts as an event every pass; what moved
		 * is what tells a stall. */
		print = zsm_ce_fingerprint(ch);
		got = print != ch->last_print;
		ch->last_print = print;
		if (!ch->head) {
			ch->last_event_ns = 0;
			continue;
		}
		if (!now)
			now = zsm_now_ns();
		if (got || !ch->last_event_ns) {
			ch->last_event_ns = now;
			ch->stall_said = 0;
		} else if (!ch->stall_said &&
			   now - ch->last_event_ns > ZSM_CE_STALL_NS) {
			ch->stall_said = 1;
			zsm_ce_say_stall(ch);
		}
		if (now < ch->next_check_ns)
			continue;
		ch->next_check_ns = now + zsm_comm_check_ns();
		if (zsm_ce_peer_gone(ch))
			zsm_ce_fail(ch, -ECONNRESET,
				    "the peer process has exited");
	}
	return events;
}

static int zsm_ce_busy(void)
{
	for (struct zsm_ce_chan *ch = zsm_ce_chans; ch; ch = ch->next_chan)
		if (ch->head || (!ch->failed && zsm_ce_serves_puts(ch)))
			return 1;
	return 0;
}

const struct zsm_transport_ops zsm_ce_progress_ops = {
	.name = "ce",
	.progress = zsm_ce_progress,
	.busy = zsm_ce_busy,
};
