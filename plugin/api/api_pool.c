/* SPDX-License-Identifier: MIT */
/*
 * Owns a communicator's operations: made in chunks (the first at init),
 * taken by the calling thread and given back by the agent, so that a call
 * allocates nothing once as many operations have been in flight before.
 * The agent's returns go on a list the caller takes whole, so neither
 * side ever waits for the other.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"

struct zsm_api_chunk {
	struct zsm_api_chunk *next;
	unsigned int n;
	struct zsm_api_op ops[];
};

/* A chunk of n more operations, onto own. */
static int zsm_api_pool_grow(struct zsm_api_pool *p, unsigned int n)
{
	struct zsm_api_chunk *k =
		calloc(1, sizeof(*k) + (size_t)n * sizeof(k->ops[0]));

	if (!k)
		return -ENOMEM;
	k->n = n;
	k->next = p->chunks;
	p->chunks = k;
	p->size += n;
	for (unsigned int i = 0; i < n; i++) {
		k->ops[i].next = p->own;
		p->own = &k->ops[i];
	}
	return 0;
}

int zsm_api_pool_init(struct zsm_api_pool *p, unsigned int n)
{
	memset(p, 0, sizeof(*p));
	atomic_init(&p->back, NULL);
	return zsm_api_pool_grow(p, n);
}

void zsm_api_pool_fini(struct zsm_api_pool *p)
{
	while (p->chunks) {
		struct zsm_api_chunk *k = p->chunks;

		p->chunks = k->next;
		for (unsigned int i = 0; i < k->n; i++)
			if (k->ops[i].wcap > ZSM_API_WAIT_INLINE) {
				free(k->ops[i].wslot);
				free(k->ops[i].wval);
			}
		free(k);
	}
	p->own = NULL;
}

struct zsm_api_op *zsm_api_pool_get(struct zsm_api_pool *p)
{
	struct zsm_api_op *op;
	unsigned int wcap;
	unsigned int *wslot;
	uint64_t *wval;

	/* acquire: pairs with the release in zsm_api_pool_put, so that
	 * the agent is done with what it gave back. */
	if (!p->own)
		p->own = atomic_exchange_explicit(&p->back, NULL,
						  memory_order_acquire);
	/* As many again: a stream queued further ahead than ever. */
	if (!p->own && zsm_api_pool_grow(p, p->size))
		return NULL;
	op = p->own;
	p->own = op->next;
	wcap = op->wcap;
	wslot = op->wslot;
	wval = op->wval;
	memset(op, 0, sizeof(*op));
	if (wcap > ZSM_API_WAIT_INLINE) {
		op->wcap = wcap;
		op->wslot = wslot;
		op->wval = wval;
	} else {
		op->wcap = ZSM_API_WAIT_INLINE;
		op->wslot = op->wslot_in;
		op->wval = op->wval_in;
	}
	return op;
}

void zsm_api_pool_put(struct zsm_api_pool *p, struct zsm_api_op *op)
{
	/* relaxed: a failed exchange only tries again. */
	struct zsm_api_op *head =
		atomic_load_explicit(&p->back, memory_order_relaxed);

	do
		op->next = head;
	/* release: pairs with the acquire in zsm_api_pool_get. */
	while (!atomic_compare_exchange_weak_explicit(&p->back, &head, op,
						      memory_order_release,
						      memory_order_relaxed));
}

int zsm_api_op_wait_room(struct zsm_api_op *op, unsigned int n)
{
	unsigned int m = op->wcap;
	unsigned int *s;
	uint64_t *v;

	if (n <= m)
		return 0;
	while (m < n)
		m *= 2;
	s = malloc(m * sizeof(*s));
	v = malloc(m * sizeof(*v));
	if (!s || !v) {
		free(s);
		free(v);
		return -ENOMEM;
	}
	memcpy(s, op->wslot, op->nwait * sizeof(*s));
	memcpy(v, op->wval, op->nwait * sizeof(*v));
	if (op->wcap > ZSM_API_WAIT_INLINE) {
		free(op->wslot);
		free(op->wval);
	}
	op->wslot = s;
	op->wval = v;
	op->wcap = m;
	return 0;
}
