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

/*
 * The transport choice, above the transports, registers these at init
 * (entry/select.c); the core calls them during each handshake, so no
 * transport names another, nor anything above it.
 */
struct zsm_comm_hooks {
	/* Connector c: fill *out (zeroed) with what else c could use. */
	void (*offer)(struct zsm_comm *c, struct zsm_offer *out);
	/* Listener's new receive comm rc and the connector's offer: fill
	 * *answer (zeroed). */
	void (*incoming)(struct zsm_comm *rc, const struct zsm_offer *offer,
			 struct zsm_offer *answer);
	/* Connector c and the listener's answer: c's transport is chosen,
	 * and *done (zeroed) tells the listener which. */
	void (*answered)(struct zsm_comm *c, const struct zsm_offer *answer,
			 struct zsm_offer *done);
	/* Listener's receive comm rc and the connector's word. */
	void (*confirmed)(struct zsm_comm *rc, const struct zsm_offer *done);
	/* c is being freed: what was offered to it and never taken goes. */
	void (*gone)(struct zsm_comm *c);
};
/* At init, before the engine runs; NULL: every comm stays on the
 * transport its handshake ran on. */
void zsm_comm_hooks_set(const struct zsm_comm_hooks *hooks);
/* c is being freed (comm.c). */
void zsm_comm_handshake_gone(struct zsm_comm *c);

/* Requests: each comm's pool, of its transport's request size. */
struct zsm_req_slab {
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
/* The pool of a new comm, and its end once the comm goes. */
void zsm_req_pool_init(struct zsm_comm *c);
void zsm_req_pool_fini(struct zsm_comm *c);
/* Let the pool hold max requests (raised only). */
void zsm_req_pool_reserve(struct zsm_comm *c, int max);

#endif
