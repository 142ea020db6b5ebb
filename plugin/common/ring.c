/* SPDX-License-Identifier: MIT */
/* Owns the MPSC descriptor queue's slots and sequence protocol. */
#include <errno.h>
#include <stdlib.h>

#include "common/ring.h"

int zsm_ring_init(struct zsm_ring *ring, uint32_t depth)
{
	uint64_t n = 1;

	while (n < depth)
		n <<= 1;
	ring->slots = calloc(n, sizeof(*ring->slots));
	if (!ring->slots)
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++)
		/* relaxed: the ring is not shared until init returns. */
		atomic_store_explicit(&ring->slots[i].seq, i,
				      memory_order_relaxed);
	ring->mask = n - 1;
	atomic_init(&ring->head, 0);
	/* relaxed: as above. */
	atomic_store_explicit(&ring->tail, 0, memory_order_relaxed);
	return 0;
}

void zsm_ring_fini(struct zsm_ring *ring)
{
	free(ring->slots);
	ring->slots = NULL;
}

int zsm_ring_push(struct zsm_ring *ring, void *item)
{
	/* relaxed: the tail is only a ticket; slot seq carries the data. */
	uint64_t pos = atomic_load_explicit(&ring->tail, memory_order_relaxed);

	for (;;) {
		struct zsm_ring_slot *s = &ring->slots[pos & ring->mask];
		/* acquire: pairs with the consumer's release in zsm_ring_pop,
		 * so the slot is really free before we overwrite it. */
		uint64_t seq = atomic_load_explicit(&s->seq,
						    memory_order_acquire);
		int64_t diff = (int64_t)(seq - pos);

		if (diff == 0) {
			/* relaxed CAS: claiming the ticket publishes nothing;
			 * the release store of seq below does. */
			if (atomic_compare_exchange_weak_explicit(
				    &ring->tail, &pos, pos + 1,
				    memory_order_relaxed,
				    memory_order_relaxed)) {
				s->item = item;
				/* release: pairs with the acquire in
				 * zsm_ring_pop; item is visible first. */
				atomic_store_explicit(&s->seq, pos + 1,
						      memory_order_release);
				return 0;
			}
		} else if (diff < 0) {
			return -EAGAIN; /* the consumer is a lap behind */
		} else {
			/* relaxed: another producer took pos; a new ticket. */
			pos = atomic_load_explicit(&ring->tail,
						   memory_order_relaxed);
		}
	}
}

/* relaxed: head has one writer, the consumer; a reader elsewhere (the
 * sleep check) may see it late, which only costs that check a nap. */
static uint64_t zsm_ring_head(struct zsm_ring *ring)
{
	return atomic_load_explicit(&ring->head, memory_order_relaxed);
}

void *zsm_ring_pop(struct zsm_ring *ring)
{
	uint64_t head = zsm_ring_head(ring);
	struct zsm_ring_slot *s = &ring->slots[head & ring->mask];
	/* acquire: pairs with the producer's release in zsm_ring_push. */
	uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
	void *item;

	if (seq != head + 1)
		return NULL;
	item = s->item;
	/* release: pairs with the producer's acquire; we are done reading
	 * item before the slot is handed back for the next lap. */
	atomic_store_explicit(&s->seq, head + ring->mask + 1,
			      memory_order_release);
	/* relaxed: see zsm_ring_head. */
	atomic_store_explicit(&ring->head, head + 1, memory_order_relaxed);
	return item;
}

int zsm_ring_empty(struct zsm_ring *ring)
{
	uint64_t head = zsm_ring_head(ring);
	struct zsm_ring_slot *s = &ring->slots[head & ring->mask];

	/* acquire: same pairing as zsm_ring_pop. */
	return atomic_load_explicit(&s->seq, memory_order_acquire) != head + 1;
}
