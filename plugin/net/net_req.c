/* SPDX-License-Identifier: MIT */
/*
 * Owns requests: the per-comm pool NCCL threads allocate from and free to,
 * and the engine's accounting of each request's operations.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/handle.h"
#include "common/log.h"
#include "net/net.h"

/* A handle slot for every request of a new slab; 0 or -ENOMEM. */
static int zsm_net_req_slab_reserve(struct zsm_net_req_slab *slab)
{
	for (int i = 0; i < ZSM_REQ_SLAB; i++) {
		if (zsm_handle_reserve(ZSM_H_REQ, &slab->reqs[i],
				       &slab->reqs[i].handle_index) == 0)
			continue;
		while (i-- > 0)
			zsm_handle_release(slab->reqs[i].handle_index);
		return -ENOMEM;
	}
	return 0;
}

struct zsm_net_req *zsm_net_req_alloc(struct zsm_net_comm *comm)
{
	struct zsm_net_req *req;

	pthread_mutex_lock(&comm->pool_lock);
	req = comm->free_reqs;
	if (!req && comm->nreqs < ZSM_MAX_REQUESTS) {
		/* Grow in slabs: most comms never need 256 requests. */
		struct zsm_net_req_slab *slab = calloc(1, sizeof(*slab));

		if (slab && zsm_net_req_slab_reserve(slab)) {
			free(slab);
			slab = NULL;
		}
		if (slab) {
			slab->next = comm->slabs;
			comm->slabs = slab;
			for (int i = ZSM_REQ_SLAB - 1; i >= 0; i--) {
				slab->reqs[i].next_free = comm->free_reqs;
				comm->free_reqs = &slab->reqs[i];
			}
			comm->nreqs += ZSM_REQ_SLAB;
			req = comm->free_reqs;
		}
	}
	if (req)
		comm->free_reqs = req->next_free;
	pthread_mutex_unlock(&comm->pool_lock);
	if (!req)
		return NULL; /* NCCL retries on a NULL request */
	req->desc.ops = &zsm_net_ops;
	req->desc.fifo = &comm->fifo;
	req->desc.next = NULL;
	req->deferred = 0;
	/* relaxed: as state below. */
	atomic_store_explicit(&req->orphan, 0, memory_order_relaxed);
	req->comm = comm;
	req->error = 0;
	memset(req->mh, 0, sizeof(req->mh));
	/* relaxed: published to the engine by the queue's release. */
	atomic_store_explicit(&req->state, ZSM_REQ_PENDING,
			      memory_order_relaxed);
	return req;
}

/* Drop the registrations req held (the last may free one). */
static void zsm_net_req_drop_mrs(struct zsm_net_req *req, int locked)
{
	for (int i = 0; i < ZSM_MAX_RECVS; i++) {
		if (!req->mh[i])
			continue;
		if (locked)
			zsm_net_mr_put_locked(req->mh[i]);
		else
			zsm_net_mr_put(req->mh[i]);
		req->mh[i] = NULL;
	}
}

void zsm_net_req_free(struct zsm_net_req *req)
{
	struct zsm_net_comm *comm = req->comm;

	/* A second test() of its handle is refused from here on. */
	zsm_handle_disarm(req->handle_index);
	/* acquire: pairs with the release in zsm_net_req_orphan.  The
	 * provider may still complete it late, into its buffers: keep it
	 * and its registrations until the comm goes. */
	if (atomic_load_explicit(&req->orphan, memory_order_acquire))
		return;
	zsm_net_req_drop_mrs(req, 0);
	pthread_mutex_lock(&comm->pool_lock);
	req->next_free = comm->free_reqs;
	comm->free_reqs = req;
	pthread_mutex_unlock(&comm->pool_lock);
}

void zsm_net_req_pool_fini(struct zsm_net_comm *comm)
{
	struct zsm_net_req_slab *slab, *next;

	for (slab = comm->slabs; slab; slab = next) {
		next = slab->next;
		for (int i = 0; i < ZSM_REQ_SLAB; i++) {
			zsm_net_req_drop_mrs(&slab->reqs[i], 1);
			zsm_handle_release(slab->reqs[i].handle_index);
		}
		free(slab);
	}
	comm->slabs = NULL;
	comm->free_reqs = NULL;
	pthread_mutex_destroy(&comm->pool_lock);
}

void zsm_net_req_op_done(struct zsm_net_op *op, int err, size_t len)
{
	struct zsm_net_req *req = op->req;
	struct zsm_net_comm *comm = req->comm;

	op->posted = 2;
	comm->ops_posted--;
	comm->data_ops--;
	/* relaxed: engine-only write, see zsm_net_req_orphan. */
	if (atomic_load_explicit(&req->orphan, memory_order_relaxed)) {
		/* A late completion of an already reported request. */
		if (comm->closing)
			zsm_net_comm_maybe_free(comm);
		return;
	}
	if (err == -ECANCELED) {
		/* relaxed: the engine wrote it; a cancel caused by a failed
		 * peer reports why the comm failed. */
		int why = atomic_load_explicit(&comm->error,
					       memory_order_relaxed);

		if (why)
			err = why;
	}
	if (err && !req->error)
		req->error = err;
	comm->last_event_ns = comm->ep->pass_ns;
	if (req->type == ZSM_REQ_RECV)
		req->sizes[op->index] = (int)len;
	else
		req->sizes[0] = (int)req->len[0];
	if (--req->remaining == 0) {
		/* release: pairs with the acquire in zsm_test; sizes and
		 * the received bytes are visible before the state. */
		atomic_store_explicit(&req->state,
				      req->error ? req->error : ZSM_REQ_DONE,
				      memory_order_release);
	}
	if (comm->closing)
		zsm_net_comm_maybe_free(comm);
}

const char *zsm_net_req_what(const struct zsm_net_req *req)
{
	return req->type == ZSM_REQ_SEND    ? "send"
	       : req->type == ZSM_REQ_FLUSH ? "flush"
					    : "receive";
}

void zsm_net_req_undefer(struct zsm_net_req *req)
{
	if (req->deferred) {
		req->deferred = 0;
		req->comm->deferred--;
	}
}

/*
 * Report a request whose operations the provider holds and will not give
 * back (rxm neither cancels nor fails sends to a vanished peer).
 */
void zsm_net_req_orphan(struct zsm_net_req *req, int err)
{
	/* release: pairs with the acquire in zsm_net_req_free, so a test()
	 * that sees the error below also sees the request is kept. */
	atomic_store_explicit(&req->orphan, 1, memory_order_release);
	req->error = err;
	/* release: pairs with the acquire in zsm_test. */
	atomic_store_explicit(&req->state, err, memory_order_release);
}
