/* SPDX-License-Identifier: MIT */
/*
 * Owns symmetric registrations: every rank registers its copy of a window
 * (core/api.h, zsm_reg_window) in the same order, and the descriptors are
 * exchanged over the collective comm, so a put to rank r names r's copy
 * by offset alone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/handle.h"
#include "common/log.h"
#include "rma/rma_int.h"

_Static_assert(sizeof(struct zsm_rma_window) <= ZSM_RMA_XCHG_BYTES,
	       "a window descriptor fits one rank's part of an exchange");

/* The comm a window is registered on: every net link shares the device's
 * endpoint, so one registration serves every peer. */
static void *zsm_rma_sym_comm(const struct zsm_rma_coll *c)
{
	for (int p = 0; p < c->nranks; p++)
		if (c->send[p])
			return c->send[p];
	return NULL;
}

int zsm_rma_reg_sym(void *coll, void *data, size_t size, int type,
		    uint64_t flags, void **out)
{
	struct zsm_rma_coll *c;
	struct zsm_rma_sym *s;
	struct zsm_rma_window mine = {0};
	void *comm;
	int ret, ok;

	/* Every signal word is applied once, in order, and never reset
	 * by zsm: FORCE_SO and NEVER_RESET ask nothing more of it. */
	(void)flags;
	if (!out)
		return -EINVAL;
	*out = NULL;
	ret = zsm_rma_lookup("regMrSym", coll, ZSM_H_RMA_COLL, (void **)&c);
	if (ret)
		return ret;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->coll = c;
	s->base = data;
	s->size = size;
	s->win = calloc((size_t)c->nranks, sizeof(*s->win));
	comm = s->comm = zsm_rma_sym_comm(c);
	/* A rank that cannot register still joins the exchange, with a
	 * descriptor of size 0, so that no peer waits for it; every rank
	 * then fails alike. */
	ret = !s->win ? -ENOMEM
	      : comm  ? zsm_reg_window(comm, data, size, type, &s->mh, &mine)
		      : 0;
	if (ret)
		memset(&mine, 0, sizeof(mine));
	if (s->win) {
		int x = zsm_rma_alltoall(c, &mine, sizeof(mine), s->win);

		if (!ret)
			ret = x;
	}
	ok = !ret;
	for (int p = 0; ok && p < c->nranks; p++)
		if (p != c->rank && !s->win[p].id) {
			ZSM_WARN("rma: regMrSym: rank %d could not register "
				 "its copy of the window",
				 p);
			ret = -EPROTO;
			ok = 0;
		}
	if (!ret && zsm_handle_open(ZSM_H_RMA_SYM, s, &s->handle))
		ret = -ENOMEM;
	if (ret) {
		if (s->mh)
			zsm_dereg_mr(comm, s->mh);
		free(s->win);
		free(s);
		return ret;
	}
	*out = (void *)(uintptr_t)s->handle;
	return 0;
}

int zsm_rma_dereg_sym(void *coll, void *sym)
{
	struct zsm_rma_sym *s;
	int ret;

	(void)coll;
	ret = zsm_rma_release("deregMrSym", sym, ZSM_H_RMA_SYM, (void **)&s);
	if (ret)
		return ret;
	/* Its comm may be closed by now (closeColl first): deregMr needs
	 * the registration alone then. */
	if (s->mh)
		zsm_dereg_mr(s->comm, s->mh);
	free(s->win);
	free(s);
	return 0;
}
