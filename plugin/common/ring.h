/* SPDX-License-Identifier: MIT */
/*
 * Bounded multi-producer single-consumer queue of pointers.  Each slot has
 * a sequence number, so producers claim a slot with one CAS on the tail and
 * publish by storing the slot's sequence; the consumer never takes a slot a
 * producer is still filling.  Several NCCL threads submit at once; only the
 * progress engine (one holder of the engine lock at a time) consumes.
 */
#ifndef ZSM_COMMON_RING_H
#define ZSM_COMMON_RING_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

struct zsm_ring_slot {
	atomic_uint_fast64_t seq;
	void *item;
};

struct zsm_ring {
	alignas(64) atomic_uint_fast64_t tail; /* producers */
	/* Written by the consumer only (under the proxy lock), read also by
	 * the proxy's sleep check outside it. */
	alignas(64) atomic_uint_fast64_t head;
	alignas(64) uint64_t mask;
	struct zsm_ring_slot *slots;
};

/* depth is rounded up to a power of two. */
int zsm_ring_init(struct zsm_ring *ring, uint32_t depth);
void zsm_ring_fini(struct zsm_ring *ring);
/* 0, or -EAGAIN when full. */
int zsm_ring_push(struct zsm_ring *ring, void *item);
/* The oldest item, or NULL when empty (or the next slot is not yet filled). */
void *zsm_ring_pop(struct zsm_ring *ring);
/* A hint: exact only when no producer is running. */
int zsm_ring_empty(struct zsm_ring *ring);

#endif
