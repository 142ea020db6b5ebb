/* SPDX-License-Identifier: MIT */
/* Owns the registered send slots of net_txpool.h. */
#include "net/net_txpool.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>

#include "common/log.h"
#include "net/net.h"

int zsm_net_txpool_init(struct zsm_net_ep *ep, struct zsm_net_txpool *p,
			size_t slot, unsigned nslots)
{
	int ret;

	memset(p, 0, sizeof(*p));
	p->slot = (slot + 63) & ~(size_t)63;
	p->bufs = aligned_alloc(64, p->slot * nslots);
	p->free = calloc(nslots, sizeof(*p->free));
	if (!p->bufs || !p->free) {
		zsm_net_txpool_fini(p);
		return -ENOMEM;
	}
	ret = zsm_net_mr_reg_internal(ep, p->bufs, p->slot * nslots,
				      FI_SEND | FI_WRITE, &p->mr, &p->desc);
	if (ret) {
		zsm_net_txpool_fini(p);
		return ret;
	}
	p->nslots = nslots;
	for (unsigned i = 0; i < nslots; i++)
		p->free[i] = nslots - 1 - i;
	p->nfree = nslots;
	return 0;
}

void zsm_net_txpool_fini(struct zsm_net_txpool *p)
{
	if (p->mr)
		zsm_net_mr_dereg_internal(p->mr);
	free(p->bufs);
	free(p->free);
	memset(p, 0, sizeof(*p));
}

void *zsm_net_txpool_copy(struct zsm_net_txpool *p, const void *msg,
			  size_t len, void **desc)
{
	unsigned char *buf;

	if (!p->nfree || len > p->slot)
		return NULL;
	buf = p->bufs + (size_t)p->free[--p->nfree] * p->slot;
	memcpy(buf, msg, len);
	*desc = p->desc;
	return buf;
}

void zsm_net_txpool_put(struct zsm_net_txpool *p, void *buf)
{
	size_t off;

	if (!buf)
		return;
	off = (size_t)((unsigned char *)buf - p->bufs);
	/* A slot given back twice, or not one of ours, would hand one
	 * buffer to two sends. */
	if ((unsigned char *)buf < p->bufs || off % p->slot ||
	    off / p->slot >= p->nslots || p->nfree >= p->nslots) {
		ZSM_WARN("net: a send buffer %p given back that the pool "
			 "did not lend",
			 buf);
		return;
	}
	p->free[p->nfree++] = (unsigned)(off / p->slot);
}

void *zsm_net_txpool_src(struct zsm_net_ep *ep, void *msg, size_t len,
			 void **desc)
{
	*desc = NULL;
	if (!ep->fi.needs_mr)
		return msg;
	return zsm_net_txpool_copy(&ep->ctrl.txpool, msg, len, desc);
}

void *zsm_net_txpool_posted(struct zsm_net_ep *ep, void *buf, long ret)
{
	if (!ep->fi.needs_mr)
		return NULL;
	if (ret) {
		zsm_net_txpool_put(&ep->ctrl.txpool, buf);
		return NULL;
	}
	return buf;
}
