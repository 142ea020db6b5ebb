/* SPDX-License-Identifier: MIT */
/* Owns the list of live registrations and their reference counts. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/mr_cache.h"

void zsm_mr_cache_init(struct zsm_mr_cache *c,
		       const struct zsm_mr_cache_ops *ops, void *arg,
		       int enabled)
{
	c->ops = ops;
	c->arg = arg;
	c->enabled = enabled;
	c->entries = NULL;
	c->hits = c->misses = 0;
}

void zsm_mr_cache_fini(struct zsm_mr_cache *c)
{
	struct zsm_mr_entry *e, *next;

	for (e = c->entries; e; e = next) {
		next = e->next;
		c->ops->dereg(c->arg, e->prov);
		free(e);
	}
	c->entries = NULL;
}

int zsm_mr_cache_get(struct zsm_mr_cache *c, const void *addr, size_t len,
		     int type, struct zsm_mr_entry **out)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)addr & ~(page - 1);
	uintptr_t end = ((uintptr_t)addr + len + page - 1) & ~(page - 1);
	struct zsm_mr_entry *e;
	int ret;

	if (end <= start)
		end = start + page; /* 0-byte buffers still get a handle */
	if (c->enabled) {
		for (e = c->entries; e; e = e->next) {
			if (e->type == type && e->start <= start &&
			    end <= e->end) {
				e->refs++;
				c->hits++;
				*out = e;
				return 0;
			}
		}
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	ret = c->ops->reg(c->arg, start, end - start, type, &e->prov);
	if (ret) {
		free(e);
		return ret;
	}
	e->start = start;
	e->end = end;
	e->type = type;
	e->refs = 1;
	e->next = c->entries;
	c->entries = e;
	c->misses++;
	*out = e;
	return 0;
}

void zsm_mr_cache_put(struct zsm_mr_cache *c, struct zsm_mr_entry *e)
{
	struct zsm_mr_entry **pp;

	if (--e->refs > 0)
		return;
	for (pp = &c->entries; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			break;
		}
	}
	c->ops->dereg(c->arg, e->prov);
	free(e);
}
