/* SPDX-License-Identifier: MIT */
/*
 * Registered buffers for the small messages zsm sends on its own account
 * (control messages, refusals, signals), on providers that want a
 * descriptor for every buffer they read (FI_MR_LOCAL: verbs, efa-direct).
 * Those messages live in comms, requests and the endpoint, which are not
 * registered; each is copied into a slot of this pool when it is posted,
 * and the slot comes back when the provider completes the send.  A pool
 * that is empty makes the send wait for the next pass, as a provider that
 * says FI_EAGAIN does.  Engine lock.
 */
#ifndef ZSM_NET_TXPOOL_H
#define ZSM_NET_TXPOOL_H

#include <stddef.h>

struct zsm_net_ep;

struct zsm_net_txpool {
	unsigned char *bufs;
	size_t slot;	 /* bytes per slot */
	unsigned nslots;
	unsigned nfree;
	unsigned *free;	 /* indexes of free slots, nfree of them */
	void *mr, *desc; /* the registration of bufs */
};

/* Slots an endpoint's pool has. */
#define ZSM_NET_TXPOOL_SLOTS 1024u

/* A pool of nslots slots of at least slot bytes, registered on ep for
 * sends and for local operands of writes and atomics.  0, or -errno. */
int zsm_net_txpool_init(struct zsm_net_ep *ep, struct zsm_net_txpool *p,
			size_t slot, unsigned nslots);
void zsm_net_txpool_fini(struct zsm_net_txpool *p);
/* A copy of len bytes of msg in a free slot, and its descriptor; NULL
 * when none is free (or len is larger than a slot). */
void *zsm_net_txpool_copy(struct zsm_net_txpool *p, const void *msg,
			  size_t len, void **desc);
/* A slot zsm_net_txpool_copy gave back to the pool; NULL is ignored. */
void zsm_net_txpool_put(struct zsm_net_txpool *p, void *buf);
/*
 * The two steps around every send of zsm's own messages, on any endpoint.
 * _src: where the provider is to read len bytes of msg: msg itself, or
 * where ep needs descriptors a slot holding a copy, its descriptor in
 * *desc (else NULL); NULL when no slot is free (try on the next pass).
 * _posted: after the post of buf returned ret, the slot to give back when
 * the send completes (NULL: none); a failed post's slot goes back now.
 */
void *zsm_net_txpool_src(struct zsm_net_ep *ep, void *msg, size_t len,
			 void **desc);
void *zsm_net_txpool_posted(struct zsm_net_ep *ep, void *buf, long ret);

#endif
