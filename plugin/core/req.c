/* SPDX-License-Identifier: MIT */
/*
 * Owns requests: each comm's pool, which NCCL threads allocate from and
 * free to, of the size its transport's requests take, and the engine's
 * publication of a request's result.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/handle.h"
#include "core/comm.h"

static struct zsm_req *zsm_req_at(struct zsm_req_slab *s, int i)
{
	return (struct zsm_req *)(void *)(s->reqs + (size_t)i * s->size);
}

/* Request number n of pool p (its slab is in the table). */
static struct zsm_req *zsm_req_number(struct zsm_req_pool *p, uint32_t n)
{
	return zsm_req_at(p->slab[n / ZSM_REQ_SLAB], (int)(n % ZSM_REQ_SLAB));
}

/* The next top of the free list: a new tag, and number + 1 (0: empty). */
static uint64_t zsm_req_top(uint64_t old, uint32_t link)
{
	return (((old >> 32) + 1) << 32) | link;
}

static void zsm_req_push(struct zsm_req_pool *p, struct zsm_req *r)
{
	/* relaxed: the exchange below publishes what it read. */
	uint64_t top = atomic_load_explicit(&p->top, memory_order_relaxed);

	do {
		/* relaxed: published by the release below. */
		atomic_store_explicit(&r->next_free, (uint32_t)top,
				      memory_order_relaxed);
		/* release: pairs with the acquire in zsm_req_pop, which
		 * then sees r's link and everything done to r before. */
	} while (!atomic_compare_exchange_weak_explicit(
		&p->top, &top, zsm_req_top(top, r->pool_number + 1),
		memory_order_release, memory_order_relaxed));
}

static struct zsm_req *zsm_req_pop(struct zsm_req_pool *p)
{
	/* acquire: pairs with the release in zsm_req_push. */
	uint64_t top = atomic_load_explicit(&p->top, memory_order_acquire);

	for (;;) {
		struct zsm_req *r;
		uint32_t next;

		if (!(uint32_t)top)
			return NULL;
		r = zsm_req_number(p, (uint32_t)top - 1);
		/* relaxed: ordered by the acquire of top; a link changed
		 * since came with a new tag, and the exchange fails. */
		next = atomic_load_explicit(&r->next_free,
					    memory_order_relaxed);
		/* acquire, both: as the load above, for r or the new top. */
		if (atomic_compare_exchange_weak_explicit(
			    &p->top, &top, zsm_req_top(top, next),
			    memory_order_acquire, memory_order_acquire))
			return r;
	}
}

/* A handle slot for every request of a new slab; 0 or -ENOMEM. */
static int zsm_req_slab_reserve(struct zsm_req_slab *s)
{
	for (int i = 0; i < ZSM_REQ_SLAB; i++) {
		struct zsm_req *r = zsm_req_at(s, i);

		if (zsm_handle_reserve(ZSM_H_REQ, r, &r->handle_index) == 0)
			continue;
		while (i-- > 0)
			zsm_handle_release(zsm_req_at(s, i)->handle_index);
		return -ENOMEM;
	}
	return 0;
}

/* Grow c's pool by a slab when it is still empty and below its bound:
 * most comms never need more than the first few. */
static void zsm_req_grow(struct zsm_comm *c)
{
	struct zsm_req_pool *p = &c->pool;
	/* Each request starts on a cache line of its own. */
	size_t size = (c->ops->req_size + 63) & ~(size_t)63;
	struct zsm_req_slab *s;
	int n;

	pthread_mutex_lock(&p->grow_lock);
	/* relaxed, all: the lock orders the writers of nslabs and
	 * max_reqs; a push not seen yet costs one slab too many at most. */
	n = atomic_load_explicit(&p->nslabs, memory_order_relaxed);
	if ((uint32_t)atomic_load_explicit(&p->top, memory_order_relaxed) ||
	    n == ZSM_REQ_SLABS ||
	    n * ZSM_REQ_SLAB >=
		    atomic_load_explicit(&p->max_reqs, memory_order_relaxed))
		goto out;
	s = calloc(1, sizeof(*s) + ZSM_REQ_SLAB * size);
	if (!s)
		goto out;
	s->size = size;
	if (zsm_req_slab_reserve(s)) {
		free(s);
		goto out;
	}
	p->slab[n] = s;
	for (int i = 0; i < ZSM_REQ_SLAB; i++)
		zsm_req_at(s, i)->pool_number = (uint32_t)(n * ZSM_REQ_SLAB + i);
	/* release: pairs with the acquire in zsm_req_next (the engine). */
	atomic_store_explicit(&p->nslabs, n + 1, memory_order_release);
	for (int i = ZSM_REQ_SLAB - 1; i >= 0; i--)
		zsm_req_push(p, zsm_req_at(s, i));
out:
	pthread_mutex_unlock(&p->grow_lock);
}

void zsm_req_pool_init(struct zsm_comm *c)
{
	pthread_mutex_init(&c->pool.grow_lock, NULL);
	/* relaxed: nobody else sees c before it is published. */
	atomic_store_explicit(&c->pool.max_reqs, ZSM_MAX_REQUESTS,
			      memory_order_relaxed);
}

void zsm_req_pool_reserve(struct zsm_comm *c, int max)
{
	pthread_mutex_lock(&c->pool.grow_lock);
	/* relaxed: a bound zsm_req_grow reads under the same lock. */
	if (max > atomic_load_explicit(&c->pool.max_reqs,
				       memory_order_relaxed))
		atomic_store_explicit(&c->pool.max_reqs, max,
				      memory_order_relaxed);
	pthread_mutex_unlock(&c->pool.grow_lock);
}

struct zsm_req *zsm_req_alloc(struct zsm_comm *c)
{
	struct zsm_req *req = zsm_req_pop(&c->pool);

	if (!req) {
		zsm_req_grow(c);
		req = zsm_req_pop(&c->pool);
	}
	if (!req)
		return NULL; /* NCCL retries on a NULL request */
	/* Only what a use may read before it writes starts again from
	 * zero: the caller fills the buffers, the registrations were
	 * dropped (NULL) when the request was last freed, and most of the
	 * transport's part is set by its first post (this runs for every
	 * isend and irecv). */
	req->error = 0;
	/* relaxed: as state below. */
	atomic_store_explicit(&req->orphan, 0, memory_order_relaxed);
	memset(req + 1, 0, c->ops->req_clear);
	req->comm = c;
	zsm_comm_submit_init(req);
	/* relaxed: published to the engine by the queue's release. */
	atomic_store_explicit(&req->state, ZSM_REQ_PENDING,
			      memory_order_relaxed);
	return req;
}

/* Drop the registrations req held (the last may free one). */
static void zsm_req_drop_mrs(struct zsm_req *req, int locked)
{
	for (int i = 0; i < ZSM_MAX_RECVS; i++) {
		if (!req->mh[i])
			continue;
		if (locked)
			zsm_mr_put_locked(req->mh[i]);
		else
			zsm_mr_put(req->mh[i]);
		req->mh[i] = NULL;
	}
}

void zsm_req_free(struct zsm_req *req)
{
	struct zsm_comm *c = req->comm;

	/* A second test() of its handle is refused from here on. */
	zsm_handle_disarm(req->handle_index);
	/* acquire: pairs with the release in zsm_req_orphan.  The
	 * transport may still complete it late, into its buffers: keep it
	 * and its registrations until the comm goes. */
	if (atomic_load_explicit(&req->orphan, memory_order_acquire))
		return;
	zsm_req_drop_mrs(req, 0);
	zsm_req_push(&c->pool, req);
}

void zsm_req_pool_fini(struct zsm_comm *c)
{
	struct zsm_req_pool *p = &c->pool;
	/* relaxed, all: the comm's last user is gone (engine, at its
	 * release). */
	int n = atomic_load_explicit(&p->nslabs, memory_order_relaxed);

	for (int k = 0; k < n; k++) {
		for (int i = 0; i < ZSM_REQ_SLAB; i++) {
			struct zsm_req *r = zsm_req_at(p->slab[k], i);

			zsm_req_drop_mrs(r, 1);
			zsm_handle_release(r->handle_index);
		}
		free(p->slab[k]);
		p->slab[k] = NULL;
	}
	atomic_store_explicit(&p->nslabs, 0, memory_order_relaxed);
	atomic_store_explicit(&p->top, 0, memory_order_relaxed);
	pthread_mutex_destroy(&p->grow_lock);
}

struct zsm_req *zsm_req_next(struct zsm_comm *c, struct zsm_req *prev)
{
	/* acquire: pairs with the release in zsm_req_grow; the slab's
	 * table entry and its requests' numbers first. */
	uint32_t n = (uint32_t)atomic_load_explicit(&c->pool.nslabs,
						    memory_order_acquire);
	uint32_t next = prev ? prev->pool_number + 1 : 0;

	return next < n * ZSM_REQ_SLAB ? zsm_req_number(&c->pool, next)
				       : NULL;
}

void zsm_req_publish(struct zsm_req *req)
{
	/* release: pairs with the acquire in zsm_test; sizes and the
	 * received bytes are visible before the state. */
	atomic_store_explicit(&req->state,
			      req->error ? req->error : ZSM_REQ_DONE,
			      memory_order_release);
}

void zsm_req_orphan(struct zsm_req *req, int err)
{
	/* release: pairs with the acquire in zsm_req_free, so a test() that
	 * sees the error below also sees the request is kept. */
	atomic_store_explicit(&req->orphan, 1, memory_order_release);
	req->error = err;
	/* release: pairs with the acquire in zsm_test. */
	atomic_store_explicit(&req->state, err, memory_order_release);
}

const char *zsm_req_what(const struct zsm_req *req)
{
	switch (req->type) {
	case ZSM_REQ_SEND:
		return "send";
	case ZSM_REQ_FLUSH:
		return "flush";
	case ZSM_REQ_PUT:
		return req->rma.sig_id ? (req->len[0] ? "put with signal"
						      : "signal")
				       : "put";
	case ZSM_REQ_GET:
		return "get";
	default:
		return "receive";
	}
}
