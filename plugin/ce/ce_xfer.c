/* SPDX-License-Identifier: MIT */
/*
 * Owns ce transfers' sending side and progress: the transport operations
 * the proxy drives for comms on a ce channel.  Senders publish Ready
 * slots and finish when the slot is Complete; the receiving side
 * (ce_recv.c) matches slots to posted receives in order, copies with
 * process_vm_readv and marks the slot Complete.  Puts and gets are slots
 * too, served by the receiver (the window's owner) in the same order.
 * Engine only.
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

static void zsm_ce_push(struct zsm_ce_chan *ch, struct zsm_ce_req *req)
{
	req->next = NULL;
	if (ch->tail)
		ch->tail->next = req;
	else
		ch->head = req;
	ch->tail = req;
}

void zsm_ce_unlink(struct zsm_ce_chan *ch, struct zsm_ce_req *req)
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
void zsm_ce_publish(struct zsm_ce_req *req)
{
	zsm_req_publish(&req->base);
}

void zsm_ce_xfer_abort(struct zsm_ce_chan *ch, int err)
{
	struct zsm_ce_req *req;

	/* Pipelined copies still write into these receives: let them land
	 * before NCCL may reuse the buffers. */
	zsm_ce_cuda_pipe_drain(ch);
	ch->gpu.pipe_n = ch->gpu.pipe_new = 0;
	ch->rx.req = NULL;
	ch->rx.claiming = 0;
	if (ch->rx.put_req.base.mh[0])
		zsm_mr_put_locked(ch->rx.put_req.base.mh[0]);
	ch->rx.put_req.base.mh[0] = NULL;
	while ((req = ch->head)) {
		ch->head = req->next;
		if (!req->base.error)
			req->base.error = err;
		zsm_ce_publish(req);
	}
	ch->tail = NULL;
}

/* The core says it, once, and comes back through zsm_ce_chan_fail. */
void zsm_ce_fail(struct zsm_ce_chan *ch, int err, const char *why)
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
	atomic_store_explicit(&ch->win->busy[ch->side], 1,
			      memory_order_seq_cst);
	if (atomic_load_explicit(&ch->win->closed[!ch->side],
				 memory_order_seq_cst)) {
		atomic_store_explicit(&ch->win->busy[ch->side], 0,
				      memory_order_seq_cst);
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
ssize_t zsm_ce_peer_copy(struct zsm_ce_chan *ch, void *local,
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
	if (atomic_load_explicit(&ch->win->closed[ZSM_CE_RECEIVER],
				 memory_order_seq_cst)) {
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
	s->put.dst = req->base.rma.addr;
	s->put.win = req->base.rma.dst_id;
	s->sig.win = req->base.rma.sig_id;
	s->sig.off = req->base.rma.sig_off;
	s->sig.add = req->base.rma.sig_add;
	s->err = 0;
	s->len = 0;
	s->gpu = req->base.type != ZSM_REQ_GET && zsm_ce_gpu(req, 0);
	s->alloc.vmm_fd = -1;
	req->src = s->addr;
	if (s->gpu && (uintptr_t)req->base.data[0] != s->addr)
		s->gpu = 0; /* staged out: host bytes now */
	if (s->gpu) {
		/* The receiver opens our allocation and copies from it. */
		const struct zsm_ce_gpu_mr *g = zsm_ce_gpu(req, 0);

		s->alloc.ipc = g->ipc;
		s->alloc.off = s->addr - g->base;
		s->alloc.vmm_fd = g->vmm_fd;
		s->alloc.reg_id = g->reg_id;
		s->alloc.size = g->alloc_size;
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

/* The channel of b's comm, or NULL with b ended: the comm failed or
 * closes. */
static struct zsm_ce_chan *zsm_ce_post_chan(struct zsm_req *b)
{
	struct zsm_comm *comm = b->comm;
	int err = zsm_comm_error(comm);

	if (comm->closing || !comm->tp)
		err = -ECANCELED;
	if (!err)
		return comm->tp;
	b->error = err;
	zsm_ce_publish(zsm_ce_req_of(b));
	return NULL;
}

int zsm_ce_post_send(struct zsm_req *b)
{
	struct zsm_ce_chan *ch = zsm_ce_post_chan(b);

	return ch ? zsm_ce_post_slot(ch, zsm_ce_req_of(b)) : 0;
}

/* A put or a get: its window checked first, a get of 0 bytes done. */
int zsm_ce_post_rma(struct zsm_req *b)
{
	struct zsm_ce_req *req = zsm_ce_req_of(b);
	struct zsm_ce_chan *ch = zsm_ce_post_chan(b);
	int err;

	if (!ch)
		return 0;
	err = zsm_ce_rma_check(ch, req);
	if (err)
		b->error = err;
	if (err || (b->type == ZSM_REQ_GET && !b->len[0])) {
		zsm_ce_publish(req); /* refused, or nothing to read */
		return 0;
	}
	return zsm_ce_post_slot(ch, req);
}

int zsm_ce_post_recv(struct zsm_req *b)
{
	struct zsm_ce_req *req = zsm_ce_req_of(b);
	struct zsm_ce_chan *ch = zsm_ce_post_chan(b);

	if (!ch)
		return 0;
	for (int i = 0; i < b->n; i++) {
		req->sub[i] = 0;
		b->sizes[i] = 0;
	}
	b->remaining = b->n;
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
int zsm_ce_copy_pieces(struct zsm_ce_chan *ch, struct zsm_ce_slot *s,
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
		ch->watch.shared_bytes += (uint64_t)got;
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
	if (ch->tx.help_seq != mark) {
		ch->tx.help_seq = mark;
		ch->tx.help_left = 0;
		s->help_err = 0;
	}
	/* From where the receiver reads too (a staged window's mirror);
	 * our own note of it, not the slot's, which the peer can write. */
	ret = zsm_ce_copy_pieces(ch, s, req->base.len[0],
				 (char *)(uintptr_t)req->src, s->dst,
				 &ch->tx.help_off, &ch->tx.help_left);
	if (ret > 0)
		return 1; /* more next pass */
	if (ret < 0) {
		/* The receiver copies the rest of this piece itself. */
		s->help_err = ret;
		s->help_fail.off = ch->tx.help_off;
		s->help_fail.len = ch->tx.help_left;
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
	struct zsm_ce_slot *a = &ch->tx.get_ans;
	const struct zsm_ce_gpu_mr *g = zsm_ce_gpu(req, 0);
	char *dst = (char *)req->base.data[0] + req->got;
	size_t len = req->base.len[0], n;
	ssize_t got;
	int err;

	if (ch->tx.get_seq != req->seq + 1) {
		/* Taken once: the receiver can write its slot at any time. */
		ch->tx.get_seq = req->seq + 1;
		req->got = 0;
		a->err = s->err;
		a->addr = s->addr;
		a->gpu = s->gpu;
		a->alloc = s->alloc;
		if (a->err) {
			req->base.error = a->err;
			return 1;
		}
		/* Our copy must stay inside the allocation it opens. */
		if (a->gpu && (a->alloc.off > a->alloc.size ||
			       len > a->alloc.size - a->alloc.off)) {
			ZSM_WARN("ce: send comm %u: pid %d answered a get of %zu "
				 "bytes with %llu bytes at %llu of a GPU "
				 "allocation: past its end",
				 ch->comm->id, (int)ch->peer_pid, len,
				 (unsigned long long)a->alloc.size,
				 (unsigned long long)a->alloc.off);
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
		zsm_cu_deviceptr up =
			(zsm_cu_deviceptr)(uintptr_t)ch->gpu.bounce;

		got = zsm_ce_peer_io(ch, ch->gpu.bounce, a->addr + req->got, n,
				     0);
		err = got > 0 ? zsm_cuda_win_copy(
					g->ctx, (zsm_cu_deviceptr)(uintptr_t)dst,
					up, (size_t)got)
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
	if (ch->head &&
	    atomic_load_explicit(&ch->win->closed[ZSM_CE_RECEIVER],
				 memory_order_seq_cst))
		zsm_ce_xfer_abort(ch, -ECONNRESET);
	return events;
}

/* Everything whose change means the channel moved. */
static uint64_t zsm_ce_fingerprint(const struct zsm_ce_chan *ch)
{
	uint64_t h = ch->next * 0x9e3779b97f4a7c15ULL ^ ch->oldest;

	h = h * 31 + ch->rx.off;
	h = h * 31 + (uint64_t)(uintptr_t)ch->head;
	h = h * 31 + (uint64_t)(uintptr_t)ch->rx.req;
	h = h * 31 + (uint64_t)ch->gpu.busy;
	h = h * 31 + ch->gpu.pipe_head * 64 + ch->gpu.pipe_n;
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
	ZSM_LOG_AT(ch->gpu.busy || ch->gpu.pipe_n ? ZSM_LOG_WARN : ZSM_LOG_INFO,
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
		 ch->gpu.busy || ch->gpu.pipe_n ? zsm_ce_cuda_copy_state(ch)
		 : ch->rx.req ? "host" : "none",
		 (unsigned long long)ch->rx.off,
		 (unsigned long long)ch->rx.end);
}

/* A receiver looks for puts while this process has windows. */
static int zsm_ce_serves_puts(const struct zsm_ce_chan *ch)
{
	return ch->side == ZSM_CE_RECEIVER && zsm_ce_windows;
}

/* self: the list of channels (zsm_ce_progress_self). */
static int zsm_ce_progress(void *self)
{
	struct zsm_ce_chan **chans = self;
	uint64_t now = 0;
	int events = 0;

	for (struct zsm_ce_chan *ch = *chans; ch; ch = ch->next_chan) {
		uint64_t print;
		int got;

		/* No copy in flight may use a mapping being closed.  The
		 * notices name the sender's registrations: what a sender
		 * opened of the receiver's windows (gets) stays until the
		 * channel closes. */
		if (ch->gpu.maps && ch->side == ZSM_CE_RECEIVER &&
		    !ch->gpu.busy && !ch->gpu.pipe_n)
			events += zsm_ce_cuda_forget(ch);
		/* A receiver always looks at its next slot (one load): a
		 * put into a process without windows is refused, not left
		 * waiting; with windows it also keeps the engine busy. */
		if (ch->failed ||
		    (!ch->head && ch->side != ZSM_CE_RECEIVER)) {
			ch->watch.last_event_ns = 0;
			continue;
		}
		got = ch->side == ZSM_CE_SENDER ? zsm_ce_progress_sender(ch)
						: zsm_ce_progress_receiver(ch);
		events += got;
		/* A copy in flight counts as an event every pass; what moved
		 * is what tells a stall. */
		print = zsm_ce_fingerprint(ch);
		got = print != ch->watch.last_print;
		ch->watch.last_print = print;
		if (!ch->head) {
			ch->watch.last_event_ns = 0;
			continue;
		}
		if (!now)
			now = zsm_now_ns();
		if (got || !ch->watch.last_event_ns) {
			ch->watch.last_event_ns = now;
			ch->watch.stall_said = 0;
		} else if (!ch->watch.stall_said &&
			   now - ch->watch.last_event_ns > ZSM_CE_STALL_NS) {
			ch->watch.stall_said = 1;
			zsm_ce_say_stall(ch);
		}
		if (now < ch->watch.next_check_ns)
			continue;
		ch->watch.next_check_ns = now + zsm_comm_check_ns();
		if (zsm_ce_peer_gone(ch))
			zsm_ce_fail(ch, -ECONNRESET,
				    "the peer process has exited");
	}
	return events;
}

static int zsm_ce_busy(void *self)
{
	struct zsm_ce_chan **chans = self;

	for (struct zsm_ce_chan *ch = *chans; ch; ch = ch->next_chan)
		if (ch->head || (!ch->failed && zsm_ce_serves_puts(ch)))
			return 1;
	return 0;
}

const struct zsm_transport_ops zsm_ce_progress_ops = {
	.name = "ce",
	.progress = zsm_ce_progress,
	.busy = zsm_ce_busy,
};

void *zsm_ce_progress_self(void)
{
	return &zsm_ce_chans;
}
