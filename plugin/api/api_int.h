/* SPDX-License-Identifier: MIT */
/*
 * What plugin/api's files share.  The API edge (api_entry.c) is the only
 * file that knows include/zsm/zsm.h's types; below it everything takes
 * plain types and returns 0 or -errno.
 *
 * How a call moves data: the caller queues operations for the comm's agent
 * thread and rings the comm's operation door on the stream (a ready word
 * per slot, cuda_door.h); the agent, seeing a slot's ready word reach an
 * operation, hands it to the engine as an RMA put (plugin/rma) and, once
 * it completes, publishes the slot's done word, which the stream waits on.
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
#include "common/cuda_door.h"
#include "common/cuda_drv.h"

/* Signal contexts callers may use (zsm.h's ZSM_MAX_CTX, asserted there). */
#define ZSM_API_CTX 4
/* Rows of the signal door: the callers' contexts, then the collectives'
 * Ready and Complete signals.  Row r's word for peer p is slot
 * r * nranks + p. */
#define ZSM_API_ROW_READY ZSM_API_CTX
#define ZSM_API_ROW_DONE (ZSM_API_CTX + 1)
#define ZSM_API_ROWS (ZSM_API_CTX + 2)
/* A put that signals nothing (the earlier pieces of a collective's block:
 * the last piece's signal covers them). */
#define ZSM_API_ROW_NONE 0xffffffffu
/* A collective's block goes in pieces of this size, so that the next
 * piece's staging copy and the last one's transfer overlap on transports
 * that stage GPU memory through host memory. */
#define ZSM_API_PIECE (4UL << 20)

struct zsm_api_op {
	struct zsm_api_op *next;
	/* Of the operation door: a peer's (a put with signal, or a signal
	 * alone) or the waits' (signal counters to reach, timed). */
	unsigned int slot;
	uint64_t seq;
	/* PUT */
	int peer;
	void *src_sym, *dst_sym; /* plugin/rma registrations */
	uint64_t src_off, dst_off;
	size_t size;
	unsigned int sig_row;
	/* Not before the peer's signal on this row reached pre_val (0:
	 * no condition): a collective's put waits for the target's Ready. */
	unsigned int pre_row;
	uint64_t pre_val;
	void *req;
	/* WAIT: signal door slots and the counts each must reach */
	unsigned int nwait;
	unsigned int *wslot;
	uint64_t *wval;
	/* When the stream reached it (0: not yet), for the timeout. */
	uint64_t reached_ns;
};

struct zsm_api_win {
	struct zsm_api_comm *comm;
	char *base;
	size_t size;
	void *sym;
	int device; /* GPU memory */
	struct zsm_api_win *next;
	uint64_t handle;
};

struct zsm_api_comm {
	int nranks, rank;
	int gpu; /* GPU mode: a CUDA context was current at init */
	zsm_cu_context cuctx;
	void *plugin; /* the core's init context */
	struct zsm_boot *boot;
	void *listen, *coll, *rctx; /* plugin/rma's objects */
	/* Operation door: slot p for puts to rank p, slot nranks for
	 * waits. */
	struct zsm_cuda_door *ops;
	/* Signal door: the counters (see ZSM_API_ROWS). */
	struct zsm_cuda_door *sig;
	void *sig_sym;
	/* Callers' state, under lock. */
	pthread_mutex_t lock;
	uint64_t *seq;	  /* [ops slot]: the last sequence number given */
	uint64_t *expect; /* [sig slot]: counts waits have asked for */
	uint64_t colls;	  /* collectives so far (their Ready/Complete) */
	struct zsm_api_win *wins;
	/* The registered bounce window for in-place AlltoAll, and the pinned
	 * staging buffer for a GPU's own block. */
	struct zsm_api_win *bounce; /* its memory: bounce_buf */
	void *bounce_buf;
	void *stage;
	size_t stage_size;
	/* Operations queued for the agent, oldest first. */
	struct zsm_api_op *in_head, *in_tail;
	pthread_cond_t wake;
	int stop;
	pthread_t agent;
	int have_agent;
	/* Operations queued and not yet retired by the agent. */
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
/* The window holding [p, p + len), or NULL.  Lock held. */
struct zsm_api_win *zsm_api_win_find(struct zsm_api_comm *c, const void *p,
				     size_t len);

/* api_agent.c */
int zsm_api_agent_start(struct zsm_api_comm *c);
void zsm_api_agent_stop(struct zsm_api_comm *c);
/* Queue op for the agent (lock held). */
void zsm_api_agent_push(struct zsm_api_comm *c, struct zsm_api_op *op);
void zsm_api_op_free(struct zsm_api_op *op);

/* api_ops.c.  A batch holds the comm's lock from _new to _finish (or
 * _drop), so that sequence numbers follow the stream's order. */
struct zsm_api_batch;
int zsm_api_batch_new(struct zsm_api_comm *c, struct zsm_api_batch **out);
/* A put of size bytes (0: the signal alone, NULL syms) to peer, adding 1
 * to its counter on sig_row, issued once our counter of peer's signals on
 * pre_row reached pre_val (0: at once). */
int zsm_api_batch_put(struct zsm_api_batch *b, int peer, void *src_sym,
		      uint64_t src_off, size_t size, void *dst_sym,
		      uint64_t dst_off, unsigned int sig_row,
		      unsigned int pre_row, uint64_t pre_val);
/* Wait until our counter of peer's signals on row reaches value. */
int zsm_api_batch_wait(struct zsm_api_batch *b, int peer, unsigned int row,
		       uint64_t value);
/*
 * Queue the operations and ring the door on stream (host-memory mode:
 * now); before(arg) runs before the ring and between(arg) after it, both
 * with stream (a collective's staging and own-block copies; either may be
 * NULL); then the stream waits for the puts and signals (host-memory
 * mode: this call waits).  Frees b, unlocks.
 */
int zsm_api_batch_finish(struct zsm_api_batch *b, zsm_cu_stream stream,
			 int (*before)(void *arg, zsm_cu_stream stream),
			 int (*between)(void *arg, zsm_cu_stream stream),
			 void *arg);
/* Give up b (an argument was wrong): nothing queued, unlocks. */
void zsm_api_batch_drop(struct zsm_api_batch *b);

/* api_coll.c */
int zsm_api_put_signal(struct zsm_api_comm *c, const void *src, size_t size,
		       int peer, struct zsm_api_win *dst, size_t dst_off,
		       int ctx, zsm_cu_stream stream);
int zsm_api_signal(struct zsm_api_comm *c, int peer, int ctx,
		   zsm_cu_stream stream);
int zsm_api_wait_signal(struct zsm_api_comm *c, int n, const int *peers,
			const int *ctxs, const int *counts,
			zsm_cu_stream stream);
int zsm_api_all_gather(struct zsm_api_comm *c, const void *send, void *recv,
		       size_t bytes, zsm_cu_stream stream);
int zsm_api_all_to_all(struct zsm_api_comm *c, const void *send, void *recv,
		       size_t bytes, zsm_cu_stream stream);

#endif
