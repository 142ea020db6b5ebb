/* SPDX-License-Identifier: MIT */
/*
 * Owns requests: the per-comm pool NCCL threads allocate from and free to,
 * and the engine's accounting of each request's operations.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "common/handle.h"
#include "common/log.h"
#include "common/param.h"
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

uint64_t zsm_net_req_cq_data(const struct zsm_net_req *req)
{
	const struct zsm_net_mr *mr = req->mh[0];
	uint64_t data = req->comm->data_key;

	/* Host memory only: a GPU buffer is not the CPU's to read. */
	if (req->comm->ep->crc && zsm_param_int(ZSM_P_CHECKSUM) &&
	    (!mr || mr->type == ZSM_MEM_HOST))
		data |= ZSM_CQ_HAS_CRC |
			(uint64_t)zsm_crc32c(req->data[0], req->len[0]) << 32;
	return data;
}

/*
 * A message without its comm's key matched receive op i of req: someone
 * who is not the comm's peer sent it (or a comm long gone did).  The
 * receive can be posted again for the real message only where that keeps
 * NCCL's matching order: no later receive of the same tag is posted on
 * the comm.  0 when it was posted again.
 */
static int zsm_net_req_repost(struct zsm_net_req *req, int i)
{
	struct zsm_net_comm *comm = req->comm;

	zsm_net_ctrl_drop(comm->ep, ZSM_DROP_DATA,
			  "a message without its receive comm's key");
	for (struct zsm_net_req_slab *s = comm->slabs; s; s = s->next)
		for (int j = 0; j < ZSM_REQ_SLAB; j++) {
			struct zsm_net_req *r = &s->reqs[j];

			if (r->type != ZSM_REQ_RECV || r == req)
				continue;
			for (int k = 0; k < r->n; k++)
				if (r->ops[k].posted == 1 &&
				    r->tag[k] == req->tag[i])
					return -EPROTO;
		}
	req->ops[i].posted = 0;
	/* The same receive again, not one more for the sender to fill. */
	comm->credit.posted--;
	return zsm_net_ep_post_op(req, i);
}

/*
 * What a receive op got, once the provider is done with it: a message
 * longer than the receive (its tail went to the spill buffer, see
 * zsm_net_ep_post_op) is the receive's error, and with ZSM_CHECKSUM the
 * bytes must be the ones sent.  Returns the op's error; *len becomes the
 * size NCCL sees.
 */
static int zsm_net_req_recv_done(struct zsm_net_op *op, int err, size_t *len,
				 uint64_t data)
{
	struct zsm_net_req *req = op->req;

	if (!err && *len > req->len[op->index])
		err = -EMSGSIZE;
	if (!err && (data & ZSM_CQ_HAS_CRC) &&
	    zsm_crc32c(req->data[op->index], *len) != (uint32_t)(data >> 32)) {
		ZSM_WARN("net: %s: receive comm %u: a %zu-byte message was "
			 "altered in flight (its checksum does not match)",
			 req->comm->ep->dev->name, req->comm->local_id, *len);
		err = -EBADMSG;
	}
	if (err)
		*len = 0; /* a failed receive holds nothing NCCL may read */
	return err;
}

void zsm_net_req_op_done(struct zsm_net_op *op, int err, size_t len,
			 uint64_t data)
{
	struct zsm_net_req *req = op->req;
	struct zsm_net_comm *comm = req->comm;
	/* relaxed: engine-only write, see zsm_net_req_orphan. */
	int orphan = atomic_load_explicit(&req->orphan, memory_order_relaxed);
	int was_posted = op->posted == 1;

	/* Posted ones leave the endpoint's count (see zsm_net_ep_post_op);
	 * fail_rest completes some that never were. */
	if (was_posted) {
		if (req->type == ZSM_REQ_RECV)
			comm->ep->rx_inflight--;
		else
			comm->ep->tx_inflight--;
	}
	op->posted = 2;
	comm->ops_posted--;
	comm->data_ops--;
	comm->recv_ops -= req->type == ZSM_REQ_RECV;
	if (!comm->recv_ops)
		comm->recv_max = 0;
	if (req->type == ZSM_REQ_RECV && !err && !orphan &&
	    comm->ep->cq_data && (data & ZSM_CQ_KEY_MASK) != comm->data_key) {
		if (zsm_net_req_repost(req, op->index) == 0)
			return;
		zsm_net_comm_fail(comm, -EPROTO,
				  "a message without this comm's key took a "
				  "receive that cannot be posted again in "
				  "order");
		err = -EPROTO;
	}
	if (req->type == ZSM_REQ_RECV) {
		/* A message of the peer's took it (or it was cancelled,
		 * when the comm is done for): the sender's allowance moves
		 * on (net_credit.h). */
		if (was_posted) {
			zsm_net_credit_on_arrival(&comm->credit);
			zsm_net_comm_grant_check(comm);
		}
		err = zsm_net_req_recv_done(op, err, &len, data);
	}
	if (orphan) {
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
	/* Only what arrives is word from the peer: a send completes when
	 * our provider took it, which it does with the link down. */
	if (!err && req->type == ZSM_REQ_RECV)
		zsm_net_peer_heard(comm->peer_obj, comm->ep->pass_ns);
	if (err && !req->error)
		req->error = err;
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
