/* SPDX-License-Identifier: MIT */
/*
 * Owns bounce buffers: where a receive smaller than the device's
 * trunc_unsafe lands, so that the provider never truncates a message
 * (which, on the tcp core under rxm, drops the connection every comm to
 * that peer shares and loses the next message on another comm).  The
 * receive completes into the bounce buffer; a message longer than the
 * posted receive is then an error of that receive alone, and anything
 * else is copied out.  Buffers come in slabs made on demand and kept
 * until the endpoint closes.  Engine only.
 */
#include <errno.h>
#include <stdlib.h>

#include "common/log.h"
#include "net/net.h"

#define ZSM_NET_BOUNCE_SLAB 32

struct zsm_net_bounce {
	struct zsm_net_bounce *next;
	void *buf;
	void *desc;
};

struct zsm_net_bounce_slab {
	struct zsm_net_bounce_slab *next;
	void *mem;
	void *mr;
	struct zsm_net_bounce b[ZSM_NET_BOUNCE_SLAB];
};

static int zsm_net_bounce_grow(struct zsm_net_ep *ep)
{
	size_t len = ep->dev->trunc_unsafe;
	struct zsm_net_bounce_slab *s = calloc(1, sizeof(*s));
	void *desc = NULL;

	if (!s)
		return -ENOMEM;
	s->mem = aligned_alloc(64, len * ZSM_NET_BOUNCE_SLAB);
	if (!s->mem) {
		free(s);
		return -ENOMEM;
	}
	if (ep->needs_mr &&
	    zsm_net_mr_reg_internal(ep, s->mem, len * ZSM_NET_BOUNCE_SLAB,
				    &s->mr, &desc)) {
		free(s->mem);
		free(s);
		return -ENOMEM;
	}
	for (int i = 0; i < ZSM_NET_BOUNCE_SLAB; i++) {
		s->b[i].buf = (char *)s->mem + (size_t)i * len;
		s->b[i].desc = desc;
		s->b[i].next = ep->bounce_free;
		ep->bounce_free = &s->b[i];
	}
	s->next = ep->bounce_slabs;
	ep->bounce_slabs = s;
	return 0;
}

int zsm_net_bounce_get(struct zsm_net_ep *ep, struct zsm_net_bounce **out)
{
	struct zsm_net_bounce *b;

	if (!ep->bounce_free && zsm_net_bounce_grow(ep)) {
		ZSM_WARN("net: %s: out of memory for a bounce buffer",
			 ep->dev->name);
		return -ENOMEM;
	}
	b = ep->bounce_free;
	ep->bounce_free = b->next;
	*out = b;
	return 0;
}

void zsm_net_bounce_put(struct zsm_net_ep *ep, struct zsm_net_bounce *b)
{
	b->next = ep->bounce_free;
	ep->bounce_free = b;
}

void *zsm_net_bounce_buf(struct zsm_net_bounce *b)
{
	return b->buf;
}

void *zsm_net_bounce_desc(struct zsm_net_bounce *b)
{
	return b->desc;
}

void zsm_net_bounce_fini(struct zsm_net_ep *ep)
{
	struct zsm_net_bounce_slab *s, *next;

	for (s = ep->bounce_slabs; s; s = next) {
		next = s->next;
		if (s->mr)
			zsm_net_mr_dereg_internal(s->mr);
		free(s->mem);
		free(s);
	}
	ep->bounce_slabs = NULL;
	ep->bounce_free = NULL;
}
