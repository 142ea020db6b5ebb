/* SPDX-License-Identifier: MIT */
/*
 * What plugin/api's files share.  The API edge (api_entry.c) is the only
 * file that knows include/zsm/zsm.h's types; below it everything takes
 * plain types and returns 0 or -errno.
 *
 * How a call moves data: the caller queues operations for the comm's agent
 * thread and rings the comm's operation door on the stream (a ready word
 * per slot, api_door.h); the agent, seeing a slot's ready word reach an
 * operation, hands it to the engine as a put (entry.h's handle-free
 * zsm_entry_put) and, once it completes, publishes the slot's done word,
 * which the stream waits on.
 * Signals land in the comm's signal door: its done words are the signal
 * counters peers add into (registered as a window on every rank), and
 * streams wait on them directly.  A failure fails both doors, which
 * releases every stream.  In host-memory mode the words are plain memory
 * and the caller waits on them itself.
 */
#ifndef ZSM_API_INT_H
#define ZSM_API_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "boot/boot.h"
#include "api/api_door.h"
#include "common/cuda_drv.h"

/* Signal contexts callers may use (zsm.h's ZSM_MAX_CTX, asserted there). */
#define ZSM_API_CTX 4
/* Rows of the signal door: the callers' contexts, then the collectives'
 * Ready words (two: by the call's parity) and Complete signals.  Row r's
 * word for peer p is slot r * nranks + p. */
#define ZSM_API_ROW_READY(k) (ZSM_API_CTX + (unsigned int)((k) & 1))
#define ZSM_API_ROW_DONE (ZSM_API_CTX + 2)
#define ZSM_API_ROWS (ZSM_API_CTX + 3)
/* A put that signals nothing (the earlier pieces of a collective's block:
 * the last piece's signal covers them). */
#define ZSM_API_ROW_NONE 0xffffffffu
/* A collective's block goes in pieces of this size, so that the next
 * piece's staging copy and the last one's transfer overlap on transports
 * that stage GPU memory through host memory. */
#define ZSM_API_PIECE (4UL << 20)

/*
 * A collective's Ready is not a count but a word that says which call it
 * is and what this rank gives in it, so that a peer checks the call
 * matches before it writes into our recvbuff (docs/api.md, "Mismatched
 * calls"): bits 63-49 the call's number mod 2^15, bit 48 the kind, bits
 * 47-0 the bytes per rank.  Each Ready adds to its parity's word the
 * difference from the word it left there two calls before, so that the
 * word holds exactly this call's (signals only add).  A peer is never
 * two calls ahead of our check (its Ready k + 2 follows its block of
 * k + 1, which waits for our Ready k + 1, which follows our block of k,
 * which follows the check), so the parity word of call k holds call k's
 * word or call k - 2's.
 */
enum zsm_api_coll_kind { ZSM_API_ALLGATHER, ZSM_API_ALLTOALL };
#define ZSM_API_COLL_BYTES_MAX ((1ULL << 48) - 1)

static inline uint64_t zsm_api_ready_word(uint64_t k, int kind,
					  uint64_t bytes)
{
	return (k & 0x7fffu) << 49 | (uint64_t)(kind & 1) << 48 | bytes;
}

/* Whether word is the Ready of the same call as want (whatever its
 * count). */
static inline int zsm_api_ready_same_call(uint64_t word, uint64_t want)
{
	return word >> 49 == want >> 49;
}

/* Wait entries an operation holds in place; more go to the heap, kept
 * with the operation for its next use. */
#define ZSM_API_WAIT_INLINE 4

struct zsm_comm;
struct zsm_mr;
struct zsm_req;
struct zsm_rma_window;

/* A window as one peer sees it, resolved when it is registered: the
 * peer's descriptor, and our registration for the link to it. */
struct zsm_api_target {
	const struct zsm_rma_window *win;
	struct zsm_mr *mr;
};

struct zsm_api_op {
	struct zsm_api_op *next;
	/* Of the operation door: a peer's (a put with signal, or a signal
	 * alone) or the waits' (signal counters to reach, timed). */
	unsigned int slot;
	uint64_t seq;
	/* PUT */
	int peer;
	const struct zsm_api_win *src, *dst; /* NULL: a signal alone */
	uint64_t src_off, dst_off;
	size_t size;
	unsigned int sig_row;
	uint64_t sig_add; /* the signal adds this (0: 1) */
	/* A collective's put: not before the peer's Ready word on pre_row
	 * (0: no condition) is of the same call as pre_val, our own Ready
	 * word of it; a different count there is a mismatch. */
	unsigned int pre_row;
	uint64_t pre_val;
	uint64_t coll; /* the collective it is part of (0: none) */
	struct zsm_req *req; /* in flight */
	/* WAIT: signal door slots and the counts each must reach, in
	 * place or (wcap above ZSM_API_WAIT_INLINE) on the heap */
	unsigned int nwait, wcap;
	unsigned int *wslot;
	uint64_t *wval;
	unsigned int wslot_in[ZSM_API_WAIT_INLINE];
	uint64_t wval_in[ZSM_API_WAIT_INLINE];
	/* When the stream reached it (0: not yet), for the timeout. */
	uint64_t reached_ns;
};

struct zsm_api_win {
	struct zsm_api_comm *comm;
	char *base;
	size_t size;
	void *sym;
	struct zsm_api_target *at; /* [nranks] (ours: unused) */
	int device; /* GPU memory */
	struct zsm_api_win *next;
	uint64_t handle;
};

/* The registered bounce window for in-place AlltoAll, and the pinned
 * staging buffer for a GPU's own block. */
struct zsm_api_comm_staging {
	struct zsm_api_win *bounce; /* its memory: bounce_buf */
	void *bounce_buf;
	void *buf;
	size_t size;
};

/* Operations to reuse (api_pool.c): the caller takes from own, and the
 * agent gives retired ones back on back, which the caller takes whole
 * when own runs out; every operation lives in one of chunks. */
struct zsm_api_chunk;
struct zsm_api_pool {
	struct zsm_api_op *own;
	_Atomic(struct zsm_api_op *) back;
	struct zsm_api_chunk *chunks;
	unsigned int size; /* operations in chunks */
};

/* Door operations rung in one go. */
#define ZSM_API_DOOR_OPS 256
/* A call's door slots, made at init: those its operations use, puts'
 * first and the wait's last, each with its last sequence number, so
 * that a call costs what it queues, not the communicator's size. */
struct zsm_api_scratch {
	uint64_t batch;		   /* calls numbered so far */
	uint64_t *mark;		   /* [nranks + 1]: the last call to use it */
	unsigned int *slots;	   /* [nranks + 1] */
	uint64_t *seqs;		   /* [nranks + 1] */
	unsigned int n, nput;	   /* slots used, of them puts' */
	struct zsm_api_door_op *o; /* [ZSM_API_DOOR_OPS] */
};

struct zsm_api_agent;

/* The group that joins the ranks (group/group.h): its listener and
 * itself. */
struct zsm_api_comm_group {
	void *listen, *coll;
};

struct zsm_api_comm {
	int nranks, rank;
	int gpu; /* GPU mode: a CUDA context was current at init */
	zsm_cu_context cuctx;
	void *plugin; /* the core's init context */
	struct zsm_boot *boot;
	struct zsm_api_comm_group group;
	struct zsm_comm **link;	    /* [nranks]: the send comm to each */
	/* Operation door: slot p for puts to rank p, slot nranks for
	 * waits. */
	struct zsm_api_door *ops;
	/* Signal door: the counters (see ZSM_API_ROWS), a window. */
	struct zsm_api_door *sig;
	struct zsm_api_win sig_win;
	/* For window registration and destroy; never on the data path. */
	pthread_mutex_t lock;
	/* The callers' (docs/api.md: calls on one communicator are never
	 * concurrent). */
	uint64_t *seq;	  /* [ops slot]: the last sequence number given */
	uint64_t *expect; /* [sig slot]: counts waits have asked for */
	uint64_t colls;	  /* collectives so far (their Ready/Complete) */
	struct zsm_api_win *wins;
	struct zsm_api_comm_staging staging;
	struct zsm_api_pool pool;
	struct zsm_api_scratch scratch;
	struct zsm_api_agent *agent;
	/* Operations queued and not yet retired. */
	atomic_long outstanding;
	_Atomic int err; /* the failure, or 0 */
	/* The bootstrap's set-up is over: the agent watches its links. */
	atomic_int watching;
	uint64_t handle;
};

/* api_comm.c */
int zsm_api_comm_init(const struct zsm_boot_id *id, int nranks, int rank,
		      struct zsm_api_comm **out);
int zsm_api_comm_destroy(struct zsm_api_comm *c);
/* The comm behind handle h: 0, or an error said once. */
int zsm_api_comm_get(const char *call, uint64_t h, struct zsm_api_comm **out);
/* Fail c with err (the first stays), say why once, release every stream. */
void zsm_api_comm_fail(struct zsm_api_comm *c, int err, const char *why);
int zsm_api_comm_error(const struct zsm_api_comm *c);
/* Wait until c has no operation in flight, at most the wait timeout. */
int zsm_api_comm_quiesce(struct zsm_api_comm *c);
/* The wait timeout in ms (0: none), and the host-side backstop. */
int zsm_api_wait_timeout_ms(void);

/* Host memory for staging: pinned in GPU mode (copies to and from it run
 * on copy engines, asynchronously), plain otherwise. */
int zsm_api_host_alloc(struct zsm_api_comm *c, size_t size, void **out);
void zsm_api_host_free(struct zsm_api_comm *c, void *p);

/* api_win.c */
int zsm_api_win_register(struct zsm_api_comm *c, void *buf, size_t size,
			 struct zsm_api_win **out);
int zsm_api_win_deregister(struct zsm_api_comm *c, struct zsm_api_win *w);
void zsm_api_win_free_all(struct zsm_api_comm *c);
int zsm_api_win_get(const char *call, struct zsm_api_comm *c, uint64_t h,
		    struct zsm_api_win **out);
/* The window holding [p, p + len), or NULL. */
struct zsm_api_win *zsm_api_win_find(struct zsm_api_comm *c, const void *p,
				     size_t len);

/* The targets of sym on every peer (*at: [nranks], freed by the
 * caller). */
int zsm_api_win_targets(struct zsm_api_comm *c, void *sym,
			struct zsm_api_target **at);

/* api_pool.c */
int zsm_api_pool_init(struct zsm_api_pool *p, unsigned int n);
void zsm_api_pool_fini(struct zsm_api_pool *p);
/* An operation, cleared (its wait room kept): NULL only when none is
 * left and no more memory.  The calling thread only. */
struct zsm_api_op *zsm_api_pool_get(struct zsm_api_pool *p);
/* Give op back: any one thread at a time (the agent's). */
void zsm_api_pool_put(struct zsm_api_pool *p, struct zsm_api_op *op);
/* Room for n wait entries in op: 0 or -ENOMEM. */
int zsm_api_op_wait_room(struct zsm_api_op *op, unsigned int n);

/* api_agent.c.  In GPU mode a thread runs the agent; in host-memory
 * mode the calling thread does, until its call is over. */
int zsm_api_agent_new(struct zsm_api_comm *c);
void zsm_api_agent_free(struct zsm_api_comm *c);
int zsm_api_agent_start(struct zsm_api_comm *c);
void zsm_api_agent_stop(struct zsm_api_comm *c);
/* Queue n operations (a chain, in order) for the agent thread. */
void zsm_api_agent_push(struct zsm_api_comm *c, struct zsm_api_op *head,
			long n);
/* Host-memory mode: n operations (a chain, in order) to the agent's
 * queues now. */
void zsm_api_agent_hold(struct zsm_api_comm *c, struct zsm_api_op *head,
			long n);
/* Host-memory mode: run the agent until each of the n slots of the
 * operation door has done up to its seqs[i], or the comm failed. */
int zsm_api_agent_run(struct zsm_api_comm *c, unsigned int n,
		      const unsigned int *slots, const uint64_t *seqs);
/* Hand op to the engine: 0 (op->req NULL: no request free now, try
 * again), or -errno. */
int zsm_api_op_issue(struct zsm_api_comm *c, struct zsm_api_op *op);

/* api_ops.c.  A batch lives on its caller's stack from _new to _finish
 * (or _drop); sequence numbers follow the stream's order because calls
 * on one communicator are never concurrent. */
struct zsm_api_batch {
	struct zsm_api_comm *c;
	struct zsm_api_op *head, *tail; /* the puts, in order */
	long n;
	struct zsm_api_op *wait; /* NULL: nothing to wait for */
};
int zsm_api_batch_new(struct zsm_api_comm *c, struct zsm_api_batch *b);
/* A put as put describes it (struct zsm_api_op's fields from peer to
 * coll): size bytes (0: the signal alone, NULL windows) to peer, adding
 * sig_add (0: 1) to its word on sig_row (ZSM_API_ROW_NONE: no signal),
 * issued once pre_row's condition holds. */
int zsm_api_batch_put(struct zsm_api_batch *b,
		      const struct zsm_api_op *put);
/* Wait until our counter of peer's signals on row reaches value. */
int zsm_api_batch_wait(struct zsm_api_batch *b, int peer, unsigned int row,
		       uint64_t value);
/*
 * Queue the operations and ring the door on stream (host-memory mode:
 * now); before(arg) runs before the ring and between(arg) after it, both
 * with stream (a collective's staging and own-block copies; either may be
 * NULL); then the stream waits for the puts and signals (host-memory
 * mode: this call waits).
 */
int zsm_api_batch_finish(struct zsm_api_batch *b, zsm_cu_stream stream,
			 int (*before)(void *arg, zsm_cu_stream stream),
			 int (*between)(void *arg, zsm_cu_stream stream),
			 void *arg);
/* Give up b (an argument was wrong): nothing queued. */
void zsm_api_batch_drop(struct zsm_api_batch *b);

/* api_coll.c */
int zsm_api_put_signal(struct zsm_api_comm *c, const void *src, size_t size,
		       int peer, struct zsm_api_win *dst, size_t dst_off,
		       int ctx, zsm_cu_stream stream);
int zsm_api_signal(struct zsm_api_comm *c, int peer, int ctx,
		   zsm_cu_stream stream);
/* The caller's wait descriptors as they lie, without a copy: entry i at
 * base + i * stride, its peer, context and count (ints) at those offsets
 * of it. */
struct zsm_api_wait_desc {
	const char *base;
	size_t stride, peer_at, ctx_at, count_at;
};
int zsm_api_wait_signal(struct zsm_api_comm *c, int n,
			const struct zsm_api_wait_desc *w,
			zsm_cu_stream stream);
int zsm_api_all_gather(struct zsm_api_comm *c, const void *send, void *recv,
		       size_t bytes, zsm_cu_stream stream);
int zsm_api_all_to_all(struct zsm_api_comm *c, const void *send, void *recv,
		       size_t bytes, zsm_cu_stream stream);

#endif
