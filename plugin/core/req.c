/* SPDX-License-Identifier: MIT */
/*
 * Owns requests: each comm's pool, which NCCL threads allocate from and
 * free to, of the size its transport's requests take, and the engine's
 * publication of a request's result.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/handle.h"
#include "core/comm.h"

static struct zsm_req *zsm_req_at(struct zsm_req_slab *s, int i)
{
	return (struct zsm_req *)(void *)(s->reqs + (size_t)i * s->size);
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

/* Grow c's pool by a slab (pool lock held): most comms never need 256. */
static void zsm_req_grow(struct zsm_comm *c)
{
	/* Each request starts on a cache line of its own. */
	size_t size = (c->ops->req_size + 63) & ~(size_t)63;
	struct zsm_req_slab *s = calloc(1, sizeof(*s) + ZSM_REQ_SLAB * size);

	if (!s)
		return;
	s->size = size;
	if (zsm_req_slab_reserve(s)) {
		free(s);
		return;
	}
	s->next = c->slabs;
	c->slabs = s;
	for (int i = ZSM_REQ_SLAB - 1; i >= 0; i--) {
		struct zsm_req *r = zsm_req_at(s, i);

		r->next_free = c->free_reqs;
		c->free_reqs = r;
	}
	c->nreqs += ZSM_REQ_SLAB;
}

struct zsm_req *zsm_req_alloc(struct zsm_comm *c)
{
	struct zsm_req *req;

	pthread_mutex_lock(&c->pool_lock);
	if (!c->free_reqs && c->nreqs < c->max_reqs)
		zsm_req_grow(c);
	req = c->free_reqs;
	if (req)
		c->free_reqs = req->next_free;
	pthread_mutex_unlock(&c->pool_lock);
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
	pthread_mutex_lock(&c->pool_lock);
	req->next_free = c->free_reqs;
	c->free_reqs = req;
	pthread_mutex_unlock(&c->pool_lock);
}

void zsm_req_pool_fini(struct zsm_comm *c)
{
	struct zsm_req_slab *s, *next;

	for (s = c->slabs; s; s = next) {
		next = s->next;
		for (int i = 0; i < ZSM_REQ_SLAB; i++) {
			zsm_req_drop_mrs(zsm_req_at(s, i), 1);
			zsm_handle_release(zsm_req_at(s, i)->handle_index);
		}
		free(s);
	}
	c->slabs = NULL;
	c->free_reqs = NULL;
}

struct zsm_req *zsm_req_next(struct zsm_comm *c, struct zsm_req *prev)
{
	struct zsm_req_slab *s = c->slabs;
	int i = 0;

	if (prev) {
		/* Find prev's slab and go on after it. */
		for (; s; s = s->next) {
			unsigned char *p = (unsigned char *)prev;

			if (p >= s->reqs && p < s->reqs + ZSM_REQ_SLAB * s->size) {
				i = (int)((size_t)(p - s->reqs) / s->size) + 1;
				break;
			}
		}
	}
	for (; s; s = s->next, i = 0)
		if (i < ZSM_REQ_SLAB)
			return zsm_req_at(s, i);
	return NULL;
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
