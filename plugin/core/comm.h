/* SPDX-License-Identifier: MIT */
/*
 * The core's own view of comms, requests and registrations (the
 * transports see core/transport.h only).
 */
#ifndef ZSM_CORE_COMM_H
#define ZSM_CORE_COMM_H

#include "core/transport.h"

/* A new comm of type, CONNECTING, with no transport yet (engine lock). */
struct zsm_comm *zsm_comm_new(int type);
/* "send", "receive" or "listen", for messages. */
const char *zsm_comm_kind(const struct zsm_comm *c);
/* NCCL's close: queue it behind the comm's work and wait (at most 5 s)
 * until the transport writes none of its buffers. */
int zsm_comm_close(struct zsm_comm *c);
/* Engine: close c now (a comm that failed before NCCL got it). */
void zsm_comm_close_locked(struct zsm_comm *c);
/* Teardown, engine lock: close every comm, then free what is left once
 * the transports are gone. */
void zsm_comm_close_all(void);
void zsm_comm_free_all(void);
/* A request or close descriptor of req->comm, for the proxy's queue. */
void zsm_comm_submit_init(struct zsm_req *req);

/* Requests: each comm's pool, of its transport's request size. */
#define ZSM_REQ_SLAB 32

struct zsm_req_slab {
	struct zsm_req_slab *next;
	size_t size; /* of each request */
	/* ZSM_REQ_SLAB requests of that size follow. */
	_Alignas(64) unsigned char reqs[];
};

/* A request of c's pool (req_clear bytes of its transport part zeroed),
 * or NULL when c has ZSM_MAX_REQUESTS in use or memory runs out (NCCL
 * retries). */
struct zsm_req *zsm_req_alloc(struct zsm_comm *c);
/* test() is done with req: back to the pool, its registrations dropped
 * (an orphan stays out until the comm goes). */
void zsm_req_free(struct zsm_req *req);
void zsm_req_pool_fini(struct zsm_comm *c);

#endif
