/* SPDX-License-Identifier: MIT */
/* Inside ce: the shared window and the channel, for ce_chan.c and ce_xfer.c. */
#ifndef ZSM_CE_INT_H
#define ZSM_CE_INT_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "ce/ce.h"
#include "ce/ce_wire.h"
#include "common/cuda_drv.h"
#include "common/cuda_win.h"
#include "core/transport.h"

/* ce's request: the core's, and its place in the channel. */
struct zsm_ce_req {
	struct zsm_req base; /* first */
	struct zsm_ce_req *next; /* the channel's list, engine only */
	uint64_t seq;		 /* a send's number */
	/* A receive's buffers: 0 open, 1 a message took it, 2 done. */
	uint8_t sub[ZSM_MAX_RECVS];
	uint64_t got; /* a get's bytes read so far (sender) */
	uint64_t src; /* a send's or put's bytes, where the peer reads them */
};

static inline struct zsm_ce_req *zsm_ce_req_of(struct zsm_req *r)
{
	return zsm_container_of(r, struct zsm_ce_req, base);
}

/* ce's registration: device memory (its IPC handle and context), or
 * host memory, which needs nothing. */
struct zsm_ce_mr {
	struct zsm_mr base; /* first */
	int gpu;
	struct zsm_ce_gpu_mr g;
	/* A window (reg_window): peers' puts and signals land in
	 * [start, start + size). */
	int window;
	char *start;
	size_t size;
	/* A GPU window whose allocation cannot be opened by the peer
	 * (cuMem memory made without a shareable handle type: NCCL's):
	 * puts from it go through mirror, its pinned host copy; puts into
	 * it are copied up by this process as into any GPU buffer.  g then
	 * holds only its context and device (mirror.ctx's). */
	struct zsm_cuda_win_mirror mirror;
	struct zsm_ce_mr *next, **prev; /* every one, for teardown */
};

/* The device memory buffer i of r is in, or NULL (host memory). */
static inline const struct zsm_ce_gpu_mr *zsm_ce_gpu(const struct zsm_ce_req *r,
						     int i)
{
	const struct zsm_mr *m = r->base.mh[i];
	const struct zsm_ce_mr *cm;

	if (!m || m->ops != &zsm_ce_comm_ops)
		return NULL;
	cm = (const struct zsm_ce_mr *)(const void *)m;
	return cm->gpu ? &cm->g : NULL;
}

/* One process_vm_readv moves at most this much, so that a 1 GiB receive
 * does not hold the engine from every other comm for 100 ms. */
#define ZSM_CE_CHUNK ((size_t)8 << 20)
/*
 * From this size on both sides copy a message: the receiver reads pieces
 * (process_vm_readv) and the sender writes pieces into the receiver's
 * buffer (process_vm_writev), each claiming the next piece from a shared
 * counter.  Two processes, two cores, one copy of each byte; a side that
 * runs slower, or later, simply claims fewer pieces.
 */
#define ZSM_CE_SPLIT_MIN ((size_t)1 << 20)
/* A channel with work outstanding and no progress for this long says what
 * it waits for, at INFO (once per wait): a hang then leaves a trail. */
#define ZSM_CE_STALL_NS (10ULL * 1000000000ULL)

enum { ZSM_CE_SENDER = 0, ZSM_CE_RECEIVER = 1 };

/*
 * Receiver: GPU-to-GPU copies queued on ce's stream without
 * waiting for each other.  NCCL keeps several messages in flight per
 * connection; copying them one at a time, each waiting for the previous
 * one's event, would pay a round trip per message.
 */
#define ZSM_CE_PIPE 16

struct zsm_ce_gpu_op {
	uint64_t seq;		  /* the slot's message number */
	struct zsm_ce_req *req;   /* and the receive it lands in */
	int sub;
	int last;		  /* ends a group: pipe_ev[its index] follows it */
	uint64_t size;
	zsm_cu_deviceptr dst, src;
};

/* A receiver's copy of the send it is serving. */
struct zsm_ce_chan_recv {
	/* The send being copied, if any, and its slot as it was when
	 * taken: the sender can write the slot at any time, so what was
	 * checked is what is used. */
	struct zsm_ce_req *req;
	struct zsm_ce_slot slot;
	int sub;
	uint64_t off;
	uint64_t end; /* one side copying: its range ends here */
	/* Shared copy: taking pieces (claiming), the one being copied
	 * (off, piece_left), none left to claim (claims_over), and a
	 * failure to report once the sender is done (claim_err). */
	int claiming, claims_over, claim_err;
	uint64_t piece_left;
	int no_help; /* the sender cannot write to us */
	/* The put being copied into one of our windows, dressed as a
	 * receive so that every copy path serves it (never published: its
	 * end is the slot's done). */
	struct zsm_ce_req put_req;
};

/* A sender's help with its own sends, and the get it reads. */
struct zsm_ce_chan_send {
	uint64_t help_seq;  /* the send being helped, number + 1 */
	uint64_t help_off;  /* the piece it copies, */
	uint64_t help_left; /* and what is left of it */
	/* The get being read (its number + 1), and its slot's answer as
	 * it was when taken: the receiver can write the slot at any time,
	 * so what was checked is what is used. */
	uint64_t get_seq;
	struct zsm_ce_slot get_ans;
};

/* What the engine watches of a channel: its checks and stalls. */
struct zsm_ce_chan_watch {
	uint64_t next_check_ns;
	uint64_t last_event_ns; /* work outstanding and no progress since */
	int stall_said;		/* this stall was reported */
	uint64_t last_print;	/* what the channel looked like last pass */
	/* Bytes this side copied of shared messages: only the unit test
	 * reads it, to see that both sides took pieces. */
	uint64_t shared_bytes;
};

/* A receiver's GPU copies (ce_cuda.c). */
struct zsm_ce_chan_gpu {
	/* The copy in flight on our stream, and the sender's allocations
	 * opened so far (closed with the channel). */
	int busy;
	zsm_cu_context ctx;
	int dev;
	size_t chunk; /* host to GPU: the piece on its way up */
	zsm_cu_stream stream;
	zsm_cu_event event;
	struct zsm_ce_ipc_map *maps;
	uint64_t forget_tail; /* deregMr notices handled */
	/* The pipelined copies, oldest first; the last pipe_new of them
	 * are not issued yet. */
	struct zsm_ce_gpu_op pipe[ZSM_CE_PIPE];
	unsigned pipe_head, pipe_n, pipe_new;
	zsm_cu_event pipe_ev[ZSM_CE_PIPE];
	void *bounce; /* host bytes on their way into our GPU buffer */
};

struct zsm_ce_chan {
	struct zsm_ce_window *win;
	size_t win_len;
	int memfd;	  /* sender: the window's fd, named in CONN_REQ */
	int pidfd;	  /* the peer process: readable once it exits */
	pid_t peer_pid;
	int side;	  /* ZSM_CE_SENDER or ZSM_CE_RECEIVER */
	struct zsm_comm *comm;
	/* Engine only. */
	uint64_t next;	  /* sender: next send's number; receiver: next to take */
	uint64_t oldest;  /* sender: oldest send not yet done */
	struct zsm_ce_req *head, *tail; /* sends published / receives posted */
	struct zsm_ce_chan_recv rx;
	struct zsm_ce_chan_send tx;
	struct zsm_ce_chan_watch watch;
	int failed;
	struct zsm_ce_chan_gpu gpu;
	struct zsm_ce_chan *next_chan; /* every started channel */
};

/* An opened allocation of the peer's (ce_cuda.c). */
struct zsm_ce_ipc_map {
	zsm_cu_ipc_handle ipc;
	uint64_t reg_id;	/* the sender's registration that opened it */
	int vmm;		/* 1: an imported cuMem export, else ipc */
	size_t size;		/* cuMem: the mapped range */
	zsm_cu_mem_handle handle;
	zsm_cu_deviceptr ptr;
	zsm_cu_context ctx;	/* where it was opened, to close it there */
	unsigned comm_id;	/* for the log: the channel's comm */
	pid_t peer;		/* and the sender */
	struct zsm_ce_ipc_map *next;
};

/* ce_cuda.c: close m in its context, saying so with the time it took,
 * and free it.  Any thread. */
void zsm_ce_cuda_close_map(struct zsm_ce_ipc_map *m);
/*
 * ce_unmap.c: close m on the unmap thread (started on first use), so
 * the engine never waits for the device.  0, or -errno when there is no
 * thread (the caller closes m itself).  flush waits up to timeout_ms
 * for every queued close to end (0, or -ETIMEDOUT); zsm_ce_unmap_stop
 * is in ce.h.
 */
int zsm_ce_unmap_post(struct zsm_ce_ipc_map *m);
int zsm_ce_unmap_flush(unsigned timeout_ms);

/* ce_cuda.c, engine only.  Start dst <- the peer's allocation ipc at
 * off, n bytes, on ce's stream in ctx; 0 or -errno. */
int zsm_ce_cuda_copy(struct zsm_ce_chan *ch, zsm_cu_context ctx, int dev,
		     zsm_cu_deviceptr dst, const struct zsm_ce_slot *s);
/*
 * The same into host memory: ctx NULL picks a context (a GPU send into a
 * host receive).  And host bytes already read from the peer (src, here)
 * up into our GPU buffer.  Both queue on ce's stream in ctx.
 */
int zsm_ce_cuda_copy_up(struct zsm_ce_chan *ch, zsm_cu_context ctx, int dev,
			zsm_cu_deviceptr dst, const void *src, size_t n);
/* The channel's pinned bounce buffer (ZSM_CE_CHUNK bytes), made on first
 * use (pinned in ctx, for every context); NULL when it cannot be had. */
void *zsm_ce_cuda_bounce(struct zsm_ce_chan *ch, zsm_cu_context ctx);
/*
 * Pipelined copies (ce_cuda.c).  pipe_add checks that op (dst in ctx,
 * from the sender's allocation named by slot s) can join the pipe and
 * fills op->src: 0, -EAGAIN when it cannot now (another context has
 * copies in flight), -errno on failure.  pipe_issue queues the pipe_new
 * newest ops on the stream (one batch where the driver has one) and
 * records the group's event.  pipe_query: 1 the group ending at ring
 * index i is done, 0 not yet, -errno failed.  pipe_drain waits for all.
 */
int zsm_ce_cuda_pipe_add(struct zsm_ce_chan *ch, zsm_cu_context ctx, int dev,
			 const struct zsm_ce_slot *s, struct zsm_ce_gpu_op *op);
int zsm_ce_cuda_pipe_issue(struct zsm_ce_chan *ch);
int zsm_ce_cuda_pipe_query(struct zsm_ce_chan *ch, unsigned i);
void zsm_ce_cuda_pipe_drain(struct zsm_ce_chan *ch);
/* The ring index whose event ends the oldest issued group of the pipe;
 * only while some op is issued (pipe_n > pipe_new). */
static inline unsigned zsm_ce_pipe_first_end(const struct zsm_ce_chan *ch)
{
	unsigned i = ch->gpu.pipe_head;

	while (!ch->gpu.pipe[i].last)
		i = (i + 1) % ZSM_CE_PIPE;
	return i;
}
/*
 * Sender, a get (ce_cuda.c): n bytes at off of the receiver's allocation
 * that answer a names (opened once per channel, as a receiver opens a
 * sender's; a->alloc.off + off + n inside it, checked by the caller) into
 * dst: our device memory in ctx, or with ctx NULL host memory, through
 * the channel's bounce buffer (n at most ZSM_CE_CHUNK).  Waits for the
 * copy: 0 or -errno (said).
 */
int zsm_ce_cuda_get(struct zsm_ce_chan *ch, zsm_cu_context ctx, int dev,
		    void *dst, const struct zsm_ce_slot *a, uint64_t off,
		    size_t n);
/* For a stall report: what the driver says of the copy in flight. */
const char *zsm_ce_cuda_copy_state(struct zsm_ce_chan *ch);
/* 1 the copy is done, 0 not yet, -errno it failed. */
int zsm_ce_cuda_copy_done(struct zsm_ce_chan *ch);
/* Close every mapping (on the unmap thread), the channel's events and
 * its hold on ce's stream. */
void zsm_ce_cuda_chan_fini(struct zsm_ce_chan *ch);
/*
 * Receiver, no copy in flight: close what was opened for the sender's
 * registrations it has dropped since the last call.  Returns how many
 * mappings were closed.
 */
int zsm_ce_cuda_forget(struct zsm_ce_chan *ch);

/*
 * The address of a word of this process that holds ZSM_CE_MAGIC: a
 * listener reads it (process_vm_readv) before it offers a window, to see
 * that it can read our memory at all.
 */
uint64_t zsm_ce_probe_addr(void);
/*
 * Receiver (listener), on a connection request from sender: read its
 * probe word, watch its process (pidfd), and make the shared window,
 * whose header names receive comm id and its key.  0, or -errno with
 * why filled (the comm then stays on net).
 */
int zsm_ce_chan_create(struct zsm_ce_chan **out, pid_t sender,
		       uint64_t probe_addr, uint32_t id, uint64_t key,
		       char *why, size_t why_len);
/*
 * What to tell the peer of ch's window: the receiver's fd for it and its
 * address in the receiver, or (sender) -1 and the sender's mapping.
 */
int zsm_ce_chan_offer(const struct zsm_ce_chan *ch, int32_t *fd,
		      uint64_t *addr);
/*
 * Sender (connector), on the answer: take the window's fd from the
 * receiver's process, the one the handle named (so no one else's fd is
 * ever taken), map it and check that its header names receive comm id
 * with key and that the receiver's memory can be read.  0, or -errno
 * with why filled (the comm then uses net).
 */
int zsm_ce_chan_attach(struct zsm_ce_chan **out, pid_t receiver, int fd,
		       uint64_t addr, uint32_t id, uint64_t key, char *why,
		       size_t why_len);
/* Engine: the handshake is done; data requests of comm go through ce. */
void zsm_ce_chan_start(struct zsm_ce_chan *ch, struct zsm_comm *comm,
		       pid_t peer);
/* Engine: the comm failed: end ch's requests with err. */
void zsm_ce_chan_fail(struct zsm_ce_chan *ch, int err);
/*
 * Engine: the comm closes or failed before starting: end its requests
 * with err, tell the peer, wait for a copy in flight, unmap.
 */
void zsm_ce_chan_close(struct zsm_ce_chan *ch, int err);
/* Let the closes of peers' GPU mappings end (up to timeout_ms) and end
 * their thread; a close still waiting for the device is left behind,
 * with a warning. */
void zsm_ce_unmap_stop(unsigned timeout_ms);

/* ce_chan.c: a copy of fd of the process behind pidfd, or -1 (errno). */
int zsm_ce_pidfd_getfd(int pidfd, int fd);
/* ce_chan.c: whether the peer process has exited (its pidfd is readable). */
int zsm_ce_peer_gone(const struct zsm_ce_chan *ch);
/* ce_xfer.c: the comm ops' posts, one per kind (engine): sends, puts
 * and gets alike, receives; ce makes no flush requests. */
int zsm_ce_post_send(struct zsm_req *req);
int zsm_ce_post_rma(struct zsm_req *req);
int zsm_ce_post_recv(struct zsm_req *req);
/* ce_mr.c: the comm ops' registration hooks. */
int zsm_ce_mr_reg(struct zsm_comm *c, void *data, size_t size, int type,
		  int dmabuf_fd, uint64_t offset, struct zsm_mr **out);
void zsm_ce_mr_free(struct zsm_mr *mr);
void zsm_ce_mr_forget(struct zsm_comm *c, struct zsm_mr *mr);
int zsm_ce_mr_reg_window(struct zsm_comm *c, void *data, size_t size,
			 int type, struct zsm_mr **out,
			 struct zsm_rma_window *win);
/* The window of this process named id (a peer's put or signal), or
 * NULL.  Engine lock. */
struct zsm_ce_mr *zsm_ce_mr_window(uint64_t id);
/* ce windows registered: receivers look for puts while there are any. */
extern int zsm_ce_windows;
/* Teardown: every registration left goes (engine lock). */
void zsm_ce_mr_close_all(void);
/* ce_xfer.c: end every request still in ch with err (engine). */
void zsm_ce_xfer_abort(struct zsm_ce_chan *ch, int err);
/* ce_xfer.c: every started channel. */
extern struct zsm_ce_chan *zsm_ce_chans;

/* What ce_xfer.c (the sender's side and the progress loop) and
 * ce_recv.c (the receiver's side) share. */
static inline struct zsm_ce_slot *zsm_ce_slot_of(struct zsm_ce_chan *ch,
						 uint64_t n)
{
	return &ch->win->slots[n % ZSM_CE_SLOTS];
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
		       uint64_t *off, uint64_t *left);

/* The core says it, once, and comes back through zsm_ce_chan_fail. */
void zsm_ce_fail(struct zsm_ce_chan *ch, int err, const char *why);

/* A receiver reads from the sender, a sender writes into the receiver. */
ssize_t zsm_ce_peer_copy(struct zsm_ce_chan *ch, void *local,
			 uint64_t remote, size_t n);

/* Publish the result; test() may free and reuse req from here on. */
void zsm_ce_publish(struct zsm_ce_req *req);

/* Take req off ch's list of requests in flight. */
void zsm_ce_unlink(struct zsm_ce_chan *ch, struct zsm_ce_req *req);

/* A pass of ch's receiving side: how much it did (0: nothing). */
int zsm_ce_progress_receiver(struct zsm_ce_chan *ch);

#endif
