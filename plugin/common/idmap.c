/* SPDX-License-Identifier: MIT */
/* Owns id maps: their slots, probing and growth, and random ids. */
#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/idmap.h"

#define ZSM_IDMAP_GONE UINT32_MAX
#define ZSM_IDMAP_MIN_CAP 64u

uint64_t zsm_random64(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v)) {
		struct timespec ts;

		/* No entropy pool yet (early boot): weaker, still varied. */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		v = ((uint64_t)ts.tv_nsec << 32 ^ (uint64_t)ts.tv_sec ^
		     (uint64_t)getpid() << 16) *
		    0x9e3779b97f4a7c15ULL;
	}
	return v ? v : 1;
}

void zsm_idmap_init(struct zsm_idmap *m, uint32_t max_id)
{
	m->slots = NULL;
	m->cap = m->used = m->dead = 0;
	m->max_id = max_id;
	m->rng = zsm_random64();
}

void zsm_idmap_fini(struct zsm_idmap *m)
{
	free(m->slots);
	m->slots = NULL;
	m->cap = m->used = m->dead = 0;
}

static uint32_t zsm_idmap_hash(uint32_t id)
{
	/* ids are random already; mix anyway, tests pick them by hand. */
	return id * 0x9e3779b1u;
}

static struct zsm_idmap_slot *zsm_idmap_lookup(const struct zsm_idmap *m,
					       uint32_t id)
{
	if (!m->cap)
		return NULL;
	for (uint32_t i = zsm_idmap_hash(id) & (m->cap - 1), n = 0; n < m->cap;
	     i = (i + 1) & (m->cap - 1), n++) {
		if (m->slots[i].id == id)
			return &m->slots[i];
		if (m->slots[i].id == 0)
			return NULL;
	}
	return NULL;
}

static void zsm_idmap_put(struct zsm_idmap_slot *slots, uint32_t cap,
			  uint32_t id, void *obj)
{
	uint32_t i = zsm_idmap_hash(id) & (cap - 1);

	while (slots[i].id != 0 && slots[i].id != ZSM_IDMAP_GONE)
		i = (i + 1) & (cap - 1);
	slots[i].id = id;
	slots[i].obj = obj;
}

/* Keep the table at most half full, tombstones counted. */
static int zsm_idmap_room(struct zsm_idmap *m)
{
	struct zsm_idmap_slot *old = m->slots;
	uint32_t cap = m->cap, ncap;

	if ((m->used + m->dead + 1) * 2 <= cap)
		return 0;
	/* Rebuilt at a quarter full at most: tombstones go, and the next
	 * rebuild is far. */
	ncap = cap ? cap : ZSM_IDMAP_MIN_CAP;
	while ((uint64_t)(m->used + 1) * 4 > ncap)
		ncap *= 2;
	m->slots = calloc(ncap, sizeof(*m->slots));
	if (!m->slots) {
		m->slots = old;
		return -ENOMEM;
	}
	m->cap = ncap;
	m->dead = 0;
	for (uint32_t i = 0; i < cap; i++)
		if (old[i].id != 0 && old[i].id != ZSM_IDMAP_GONE)
			zsm_idmap_put(m->slots, ncap, old[i].id, old[i].obj);
	free(old);
	return 0;
}

static uint32_t zsm_idmap_next(struct zsm_idmap *m)
{
	/* xorshift64: ids need only be unguessable to a remote peer
	 * between reseeds, and the seed came from getrandom. */
	m->rng ^= m->rng << 13;
	m->rng ^= m->rng >> 7;
	m->rng ^= m->rng << 17;
	return (uint32_t)(m->rng >> 16) % m->max_id + 1;
}

int zsm_idmap_add(struct zsm_idmap *m, void *obj, uint32_t *id)
{
	uint32_t v;

	if (m->used >= m->max_id / 2 || zsm_idmap_room(m))
		return -ENOMEM;
	do
		v = zsm_idmap_next(m);
	while (zsm_idmap_lookup(m, v));
	zsm_idmap_put(m->slots, m->cap, v, obj);
	m->used++;
	*id = v;
	return 0;
}

void *zsm_idmap_find(const struct zsm_idmap *m, uint32_t id)
{
	struct zsm_idmap_slot *s;

	if (id == 0 || id == ZSM_IDMAP_GONE)
		return NULL;
	s = zsm_idmap_lookup(m, id);
	return s ? s->obj : NULL;
}

void zsm_idmap_remove(struct zsm_idmap *m, uint32_t id)
{
	struct zsm_idmap_slot *s = id ? zsm_idmap_lookup(m, id) : NULL;

	if (!s)
		return;
	s->id = ZSM_IDMAP_GONE;
	s->obj = NULL;
	m->used--;
	m->dead++;
}
