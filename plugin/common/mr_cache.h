/* SPDX-License-Identifier: MIT */
/*
 * Registration cache: overlapping live registrations of one domain share
 * one provider registration.  An entry lives while someone holds it, so a
 * freed and re-allocated buffer never meets a stale registration.
 */
#ifndef ZSM_COMMON_MR_CACHE_H
#define ZSM_COMMON_MR_CACHE_H

#include <stddef.h>
#include <stdint.h>

struct zsm_mr_cache_ops {
	/* Register [start, start+len): 0 and *prov set, or -errno. */
	int (*reg)(void *arg, uintptr_t start, size_t len, int type,
		   void **prov);
	void (*dereg)(void *arg, void *prov);
};

struct zsm_mr_entry {
	uintptr_t start;
	uintptr_t end;
	int type;
	int refs;
	void *prov;
	struct zsm_mr_entry *next;
};

struct zsm_mr_cache {
	const struct zsm_mr_cache_ops *ops;
	void *arg;
	int enabled; /* 0: every get registers anew */
	struct zsm_mr_entry *entries;
	uint64_t hits;
	uint64_t misses;
};

void zsm_mr_cache_init(struct zsm_mr_cache *c,
		       const struct zsm_mr_cache_ops *ops, void *arg,
		       int enabled);
/* Drops every entry, held or not; for teardown. */
void zsm_mr_cache_fini(struct zsm_mr_cache *c);
int zsm_mr_cache_get(struct zsm_mr_cache *c, const void *addr, size_t len,
		     int type, struct zsm_mr_entry **out);
void zsm_mr_cache_put(struct zsm_mr_cache *c, struct zsm_mr_entry *e);

#endif
