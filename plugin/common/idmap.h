/* SPDX-License-Identifier: MIT */
/*
 * A map from 32-bit ids to objects that also hands out the ids: random,
 * never 0, below a limit, unused.  Random ids keep a peer (or anyone who
 * can reach the endpoint) from naming a comm it was not told about, or
 * one that does not exist yet.  Open addressing with linear probing and
 * tombstones; grows by doubling.  Not thread-safe: the owner locks.
 */
#ifndef ZSM_COMMON_IDMAP_H
#define ZSM_COMMON_IDMAP_H

#include <stdint.h>

struct zsm_idmap_slot {
	uint32_t id; /* 0: empty; ZSM_IDMAP_GONE: removed */
	void *obj;
};

struct zsm_idmap {
	struct zsm_idmap_slot *slots;
	uint32_t cap; /* a power of two, or 0 */
	uint32_t used; /* live entries */
	uint32_t dead; /* tombstones */
	uint32_t max_id;
	uint64_t rng; /* xorshift state, seeded from getrandom */
};

void zsm_idmap_init(struct zsm_idmap *m, uint32_t max_id);
void zsm_idmap_fini(struct zsm_idmap *m);
/* A fresh id for obj: 0 and *id, or -ENOMEM. */
int zsm_idmap_add(struct zsm_idmap *m, void *obj, uint32_t *id);
/* The object of id, or NULL. */
void *zsm_idmap_find(const struct zsm_idmap *m, uint32_t id);
/* Forget id (no-op when absent). */
void zsm_idmap_remove(struct zsm_idmap *m, uint32_t id);

/* A random 64-bit value, never 0 (keys and nonces). */
uint64_t zsm_random64(void);

#endif
