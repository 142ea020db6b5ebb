/* SPDX-License-Identifier: MIT */
/*
 * The progress engine and the thread that drives it.
 *
 * Who owns what: NCCL threads allocate requests and push descriptors into
 * the MPSC queue; whoever holds the engine lock (the proxy thread, or a
 * test() caller in inline mode or when assisting) pops them, posts them to
 * the transport, keeps the ones the transport refused (-EAGAIN) in the
 * in-progress list in order, and polls completions.  The lock makes the
 * engine single-threaded, so the in-progress list needs no atomics.
 */
#ifndef ZSM_PROXY_H
#define ZSM_PROXY_H

#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/clock.h"

struct zsm_desc;
struct zsm_proxy_room;

/*
 * One transport's progress hooks, behind which net and ce sit alike;
 * each takes the instance it drives, given with the hooks to
 * zsm_proxy_add_transport.  Engine lock held, all.
 */
struct zsm_transport_ops {
	const char *name;
	/* Poll completions; returns how many events it handled. */
	int (*progress)(void *self);
	/* Operations in flight that need polling (0: nothing to wait for). */
	int (*busy)(void *self);
	/*
	 * While not busy: fds that turn readable when something arrives,
	 * up to max (their count), 0 when it has none (it must be looked
	 * at now and then), -EAGAIN when something is already there (pass
	 * first).  NULL: none.
	 */
	int (*wait_fds)(void *self, struct pollfd *fds, int max);
	/* One of its fds turned readable: look at everything next pass. */
	void (*kick)(void *self);
};

/*
 * The descriptors of one owner (a comm) that its transport refused, in
 * submission order: the owner's matching order.  A refusal holds back only
 * the owner's later descriptors, never another owner's.  The owner embeds
 * it zeroed and must not free it while it is queued (a close descriptor,
 * its last, leaves it empty first).  Engine only.
 */
struct zsm_proxy_fifo {
	struct zsm_desc *head, *tail;
	/* In the engine's held list, or in the parked list of a room. */
	struct zsm_proxy_fifo *next_held, *prev_held;
	struct zsm_proxy_room *room; /* parked there; NULL: held list */
	struct zsm_proxy_room *park; /* what its last refusal waits for */
	int held;		     /* on one of those lists */
	/* Its descriptors in the submission queue, not yet taken: a caller
	 * that finds none (and none held) may post its next one itself. */
	atomic_uint queued;
};

/* Fifos in order, oldest first.  Engine only. */
struct zsm_proxy_fifos {
	struct zsm_proxy_fifo *head, *tail;
};

/*
 * Room in a resource that many owners share (a provider queue, a
 * transport's budget), which a refused descriptor waits for.  A fifo
 * whose post named a room (zsm_proxy_park) is not retried on every pass
 * but parked there until its transport says room may be back
 * (zsm_proxy_room_freed); the next pass then retries the parked fifos in
 * order, those refused again keeping their places, until the room is
 * exhausted or a few were refused, so a pass costs what it posts, not
 * what waits.  The transport embeds it
 * zeroed and flushes it (zsm_proxy_room_flush) before freeing it.
 * Engine lock for all of it.
 */
struct zsm_proxy_room {
	struct zsm_proxy_fifos parked;
	struct zsm_proxy_room *next; /* the engine's rooms with fifos */
	int listed;		     /* on that list */
	int freed;		     /* room may be back: retry */
	int exhausted;		     /* the last refusal left none at all */
};

/* Every queued object starts with this. */
struct zsm_desc {
	/* Post it: 0 done with it, -EAGAIN keep it and retry. */
	int (*post)(struct zsm_desc *desc);
	/* The engine stops with it never posted: end it without starting
	 * its work (whoever queued it may have freed its buffers).  It is
	 * not looked at again.  NULL: it is dropped. */
	void (*cancel)(struct zsm_desc *desc);
	struct zsm_proxy_fifo *fifo; /* its owner's */
	struct zsm_desc *next;	     /* in its fifo, engine only */
	/* Queued behind a parked fifo, it has the fifo retried on the next
	 * pass: it changes what those ahead wait for (a close ends them). */
	int wakes;
};

int zsm_proxy_start(void);
/* The CPUs this process may run on. */
int zsm_proxy_cpus(void);
/* Something for the engine arrived outside it (a transport's own thread
 * saw completions): wake the thread if it sleeps. */
void zsm_proxy_wake(void);
/* Stops the thread; every descriptor still queued or held goes to its
 * cancel, in order, none to its post (finalize starts no work). */
void zsm_proxy_stop(void);
/* Queue a descriptor: 0, or -EAGAIN when the queue is full. */
int zsm_proxy_submit(struct zsm_desc *desc);
/* Submit, running the engine until there is room (for close paths). */
void zsm_proxy_submit_wait(struct zsm_desc *desc);
/* From test() of a pending request: run the engine if this mode lets
 * the caller do it (ZSM_PROXY_ASSIST). */
void zsm_proxy_assist(const void *waiting);

/*
 * One pass now if the engine is free (in inline mode, waiting for it),
 * whatever the caller polled before: for callers that drive now and then
 * among other work (NCCL's rmaProgress and its RMA proxy's tests of
 * puts).  Where cores are scarce the thread then keeps off, as after a
 * test() pass.  With ZSM_PROXY_ASSIST=0 only a yield.
 */
void zsm_proxy_drive(void);
/* Submit desc and drive (above): where the engine is free the caller
 * posts it itself (straight to its transport when nothing of its owner
 * waits before it) and runs a pass, without waking the thread for it.
 * 0, or -EAGAIN when the queue is full. */
int zsm_proxy_submit_drive(struct zsm_desc *desc);
/* Who may run passes from test() (ZSM_PROXY_ASSIST). */
enum zsm_proxy_assist_mode {
	ZSM_PROXY_ASSIST_NEVER = 0,
	ZSM_PROXY_ASSIST_ALWAYS,
	ZSM_PROXY_ASSIST_WAITER, /* a caller polling one request */
};
/* The mode for ZSM_PROXY_ASSIST's choice (0 auto, 1 "0", 2 "1") in a
 * process that may run on cpus CPUs.  Pure, for tests. */
int zsm_proxy_assist_mode(int param, int cpus);
/* Whether a test() finding `waiting` pending runs a pass in mode;
 * *polled is what the caller's previous one found, and becomes
 * `waiting`.  Pure, for tests. */
int zsm_proxy_assist_wants(int mode, const void **polled,
			   const void *waiting);
/* Run one engine pass now, waiting for the lock (connect, accept). */
int zsm_proxy_pass(void);
void zsm_proxy_lock(void);
void zsm_proxy_unlock(void);
/*
 * For calls NCCL makes in a retry loop from its own thread (connect,
 * accept), which must return at once: take the engine lock if it is free
 * (-EBUSY: the proxy thread is in a pass, say "not yet").  In inline mode
 * nobody else progresses, so the lock is waited for and the caller must
 * run a pass itself (zsm_proxy_caller_drives() says so).
 */
int zsm_proxy_caller_enter(void);
/* Unlock, and wake the proxy thread to do what the caller left to it. */
void zsm_proxy_caller_leave(void);
int zsm_proxy_caller_drives(void);
/* One pass with the lock held. */
int zsm_proxy_pass_locked(void);
/* Drive instance self of a transport by ops on every pass. */
void zsm_proxy_add_transport(const struct zsm_transport_ops *ops, void *self);
/* From a post about to return -EAGAIN: desc waits for room in r, not for
 * something of its owner's own; exhausted: r has none left for anyone
 * (else only too little for desc, and smaller ones may fit). */
void zsm_proxy_park(struct zsm_desc *desc, struct zsm_proxy_room *r,
		    int exhausted);
/* Room in r may be back (something completed): retry its fifos. */
void zsm_proxy_room_freed(struct zsm_proxy_room *r);
/* Every fifo parked on r goes back to being retried on every pass: what
 * else they may wait for (their owner failed or is closing, a rule of
 * their own) changed without r being told. */
void zsm_proxy_room_flush(struct zsm_proxy_room *r);
/* Something f's owner waits for, other than room, changed: if f is
 * parked, retry it on the next pass. */
void zsm_proxy_fifo_kick(struct zsm_proxy_fifo *f);


#endif
