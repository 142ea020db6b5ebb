/* SPDX-License-Identifier: MIT */
/*
 * Owns the comm base object: its life from creation to release, the one
 * failure path every transport reports through, and the two-step close
 * (NCCL's close queues it behind the comm's earlier work and waits until
 * the transport writes none of its buffers; the engine frees the comm
 * once the transport is done with it).
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "common/handle.h"
#include "common/log.h"
#include "common/param.h"
#include "core/comm.h"

/* Every comm, for teardown: engine lock. */
static struct zsm_comm *zsm_comm_all;

struct zsm_close_wait {
	atomic_int quiet;
};

/* How long a close waits for the transport to give the buffers back. */
#define ZSM_COMM_CLOSE_WAIT_NS (5ULL * 1000000000ULL)

static int zsm_comm_post_desc(struct zsm_desc *d);
static void zsm_comm_cancel_desc(struct zsm_desc *d);

struct zsm_comm *zsm_comm_new(int type)
{
	struct zsm_comm *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->type = (uint8_t)type;
	/* relaxed, all: nobody else sees c before it is published. */
	atomic_store_explicit(&c->state, ZSM_COMM_CONNECTING,
			      memory_order_relaxed);
	zsm_req_pool_init(c);
	c->close_req.desc.post = zsm_comm_post_desc;
	c->close_req.desc.cancel = zsm_comm_cancel_desc;
	c->close_req.desc.fifo = &c->fifo;
	/* The requests ahead of it, parked for room, end now. */
	c->close_req.desc.wakes = 1;
	c->close_req.type = ZSM_REQ_CLOSE;
	c->close_req.comm = c;
	c->next = zsm_comm_all;
	if (zsm_comm_all)
		zsm_comm_all->prev = c;
	zsm_comm_all = c;
	return c;
}

void zsm_comm_bind(struct zsm_comm *c, const struct zsm_comm_ops *ops,
		   void *tp, uint32_t id, const char *dev)
{
	c->ops = ops;
	c->tp = tp;
	c->id = id;
	c->dev = dev;
}

const char *zsm_comm_kind(const struct zsm_comm *c)
{
	return c->type == ZSM_COMM_SEND	  ? "send"
	       : c->type == ZSM_COMM_RECV ? "receive"
					  : "listen";
}

uint64_t zsm_comm_check_ns(void)
{
	uint64_t every = (uint64_t)zsm_param_int(ZSM_P_PEER_CHECK_MS) *
			 1000000ULL / 4;

	/* Often enough for the check's resolution, never more than a few
	 * times a second. */
	if (every < 10000000ULL)
		every = 10000000ULL;
	if (every > 250000000ULL)
		every = 250000000ULL;
	return every;
}

int zsm_comm_error(const struct zsm_comm *c)
{
	/* acquire: pairs with the release in zsm_comm_fail. */
	return atomic_load_explicit(&c->error, memory_order_acquire);
}

void zsm_comm_fail(struct zsm_comm *c, int err, const char *why)
{
	int zero = 0;

	/* release: pairs with the acquires in isend/irecv/connect, which
	 * then refuse new work on this comm. */
	if (!atomic_compare_exchange_strong_explicit(&c->error, &zero, err,
						     memory_order_release,
						     memory_order_relaxed))
		return;
	if (why)
		ZSM_WARN("%s: %s: %s comm %u (peer pid %u, %s): %s; failing it",
			 c->ops->name, c->dev, zsm_comm_kind(c), c->id,
			 c->peer.pid,
			 c->peer.same_host ? "this host" : "another host", why);
	/* release: pairs with the acquire in connect. */
	atomic_store_explicit(&c->state, ZSM_COMM_FAILED, memory_order_release);
	c->ops->fail(c, err);
}

void zsm_comm_quiet(struct zsm_comm *c)
{
	if (!c->close_wait)
		return;
	/* release: pairs with the acquire in zsm_comm_close. */
	atomic_store_explicit(&c->close_wait->quiet, 1, memory_order_release);
	c->close_wait = NULL;
}

void zsm_comm_release(struct zsm_comm *c)
{
	uint64_t h;

	zsm_comm_quiet(c);
	zsm_comm_handshake_gone(c);
	zsm_req_pool_fini(c);
	if (c->prev)
		c->prev->next = c->next;
	else
		zsm_comm_all = c->next;
	if (c->next)
		c->next->prev = c->prev;
	/* Teardown frees comms NCCL never closed: their handles die too. */
	/* acquire: pairs with the releases in zsm_entry_publish_comm and
	 * zsm_entry_close. */
	h = atomic_load_explicit(&c->handle, memory_order_acquire);
	if (h) {
		void *obj;

		zsm_handle_close(h,
				 c->type == ZSM_COMM_SEND   ? ZSM_H_SEND
				 : c->type == ZSM_COMM_RECV ? ZSM_H_RECV
							    : ZSM_H_LISTEN,
				 &obj);
	}
	free(c);
}

void zsm_comm_link_gone(struct zsm_comm *c, void *tp)
{
	if (c->tp == tp || !c->ops) {
		zsm_comm_release(c);
		return;
	}
	/* A comm whose close began dropped the link first: not this one. */
	if (c->setup == tp)
		c->setup = NULL;
	zsm_comm_close_locked(c);
}

void zsm_comm_close_locked(struct zsm_comm *c)
{
	if (c->closing)
		return;
	c->closing = 1;
	/* The setup link of a comm that moved to another transport goes
	 * first: it calls nothing back from here on. */
	if (c->setup && c->setup != c->tp)
		c->setup_ops->drop_link(c->setup);
	c->setup = NULL;
	c->ops->close(c);
}

/* The engine's post of every descriptor the core queues. */
static int zsm_comm_post_desc(struct zsm_desc *d)
{
	struct zsm_req *req = (struct zsm_req *)d;

	if (req->type == ZSM_REQ_CLOSE) {
		zsm_comm_close_locked(req->comm);
		return 0;
	}
	if (!req->comm->ops->post[req->type]) {
		/* Never made: a transport's flush that needs no read, say. */
		req->error = -EOPNOTSUPP;
		zsm_req_publish(req);
		return 0;
	}
	return req->comm->ops->post[req->type](req);
}

/*
 * The engine stops with d never posted (finalize with comms left open).
 * A request must not start: whoever queued it may have freed its buffers
 * since.  Its comm fails (-ECANCELED; the proxy says how many went), and
 * its post then ends it as a failed comm's transport ends any request,
 * with that error and reading none of its buffers.  A close runs as
 * posted.
 */
static void zsm_comm_cancel_desc(struct zsm_desc *d)
{
	struct zsm_req *req = (struct zsm_req *)d;

	if (req->type != ZSM_REQ_CLOSE)
		zsm_comm_fail(req->comm, -ECANCELED, NULL);
	(void)zsm_comm_post_desc(d);
}

void zsm_comm_submit_init(struct zsm_req *req)
{
	req->desc.post = zsm_comm_post_desc;
	req->desc.cancel = zsm_comm_cancel_desc;
	req->desc.fifo = &req->comm->fifo;
	req->desc.next = NULL;
}

int zsm_comm_close(struct zsm_comm *c)
{
	struct zsm_close_wait w;
	uint64_t t0 = zsm_now_ns();
	uint32_t id = c->id;
	const char *name = c->ops->name;

	atomic_init(&w.quiet, 0);
	/* Its requests end with it, on every transport alike: a test() of
	 * one from here on is refused as closed, even where the transport
	 * still holds it for a while (their memory stays until then). */
	pthread_mutex_lock(&c->pool.grow_lock);
	for (struct zsm_req *r = zsm_req_next(c, NULL); r;
	     r = zsm_req_next(c, r))
		zsm_handle_disarm(r->handle_index);
	pthread_mutex_unlock(&c->pool.grow_lock);
	/* release: pairs with the acquire in the transports' posts, which
	 * may see it before the close itself is queued (held sends go
	 * first). */
	atomic_store_explicit(&c->close_asked, 1, memory_order_release);
	/* Published to the engine by the queue with the close itself; the
	 * comm may be freed as soon as it is queued. */
	c->close_wait = &w;
	zsm_proxy_submit_wait(&c->close_req.desc);
	/* acquire: pairs with the release in zsm_comm_quiet. */
	while (!atomic_load_explicit(&w.quiet, memory_order_acquire)) {
		if (zsm_now_ns() - t0 > ZSM_COMM_CLOSE_WAIT_NS) {
			ZSM_WARN("%s: close of comm %u: the transport still "
				 "holds some of its transfers after %llu s; "
				 "their buffers must stay allocated",
				 name, id,
				 ZSM_COMM_CLOSE_WAIT_NS / 1000000000ULL);
			/* The engine must not tell a frame that is gone; a
			 * comm not quiet yet is not freed yet either. */
			zsm_proxy_lock();
			/* relaxed: under the engine lock, its only writer. */
			if (!atomic_load_explicit(&w.quiet,
						  memory_order_relaxed))
				c->close_wait = NULL;
			zsm_proxy_unlock();
			break;
		}
		if (!zsm_proxy_pass())
			sched_yield();
	}
	return 0;
}

void zsm_comm_close_all(void)
{
	struct zsm_comm *c;

	/* A close may free other comms (a listener's unaccepted ones): look
	 * again from the start after each. */
	for (;;) {
		for (c = zsm_comm_all; c && (c->closing || !c->ops);
		     c = c->next)
			;
		if (!c)
			return;
		zsm_comm_close_locked(c);
	}
}

void zsm_comm_free_all(void)
{
	while (zsm_comm_all) {
		struct zsm_comm *c = zsm_comm_all;

		ZSM_INFO("%s: comm %u was still held at teardown",
			 c->ops ? c->ops->name : "core", c->id);
		zsm_comm_release(c);
	}
}
