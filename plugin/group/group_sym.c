/* SPDX-License-Identifier: MIT */
/*
 * Owns symmetric registrations: every rank registers its copy of a window
 * (entry/entry.h, zsm_reg_window) in the same order, and the descriptors are
 * exchanged over the collective comm, so a put to rank r names r's copy
 * by offset alone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/handle.h"
#include "common/log.h"
#include "group/group_int.h"

_Static_assert(sizeof(struct zsm_rma_window) * ZSM_GROUP_KINDS <=
		       ZSM_GROUP_XCHG_BODY,
	       "a rank's window descriptors fit its part of an exchange");

/* The comm to register a window on for links of kind k: every net link
 * shares the device's endpoint and every ce link the process, so one
 * registration per kind serves every peer.  NULL: no link of that kind. */
static void *zsm_group_sym_comm(const struct zsm_group *c, int k)
{
	for (int p = 0; p < c->nranks; p++)
		if (c->send[p] && c->kind[p] == k)
			return c->send[p];
	return NULL;
}

static void zsm_group_sym_free(struct zsm_group_sym *s)
{
	/* Its comms may be closed by now (closeColl first): deregMr needs
	 * the registration alone then. */
	for (int k = 0; k < ZSM_GROUP_KINDS; k++)
		if (s->mh[k])
			zsm_dereg_mr(s->comm[k], s->mh[k]);
	free(s->win);
	free(s);
}

int zsm_group_reg_sym(void *coll, void *data, size_t size, int type,
		      void **out)
{
	struct zsm_group *c;
	struct zsm_group_sym *s;
	struct zsm_rma_window mine[ZSM_GROUP_KINDS];
	uint32_t slot = 0;
	int ret = 0, reserved = 0;

	if (!out)
		return zsm_group_bad_arg("regMrSym", "mhandle is NULL");
	*out = NULL;
	ret = zsm_group_lookup("regMrSym", coll, ZSM_H_RMA_COLL, (void **)&c);
	if (ret)
		return ret;
	memset(mine, 0, sizeof(mine));
	s = calloc(1, sizeof(*s));
	if (!s) /* said to the others too (see below) */
		return zsm_group_reg_sym_refuse(coll, -ENOMEM);
	s->coll = c;
	s->base = data;
	s->size = size;
	s->win = calloc((size_t)c->nranks * ZSM_GROUP_KINDS, sizeof(*s->win));
	if (!s->win)
		ret = -ENOMEM;
	/* A rank that cannot register still joins the exchange, saying so,
	 * so that no peer waits for it: the exchange then fails on every
	 * rank, as it does where any rank gives up waiting. */
	for (int k = 0; !ret && k < ZSM_GROUP_KINDS; k++) {
		s->comm[k] = zsm_group_sym_comm(c, k);
		if (s->comm[k])
			ret = zsm_reg_window(s->comm[k], data, size, type,
					     &s->mh[k], &mine[k]);
	}
	/* The handle's slot before the exchange: what can fail here must
	 * fail every rank, not this one alone after the others succeeded. */
	if (!ret)
		ret = zsm_handle_reserve(ZSM_H_RMA_SYM, s, &slot);
	reserved = !ret;
	if (ret)
		memset(mine, 0, sizeof(mine));
	ret = zsm_group_agree(c, mine, sizeof(mine), ret, s->win);
	if (ret) {
		if (reserved)
			zsm_handle_release(slot);
		zsm_group_sym_free(s);
		return ret;
	}
	s->handle = zsm_handle_arm(slot);
	*out = (void *)(uintptr_t)s->handle;
	return 0;
}

int zsm_group_reg_sym_refuse(void *coll, int status)
{
	struct zsm_rma_window none[ZSM_GROUP_KINDS];
	struct zsm_group *c;

	if (zsm_group_lookup("regMrSym", coll, ZSM_H_RMA_COLL, (void **)&c))
		return status;
	memset(none, 0, sizeof(none));
	(void)zsm_group_agree(c, none, sizeof(none), status, NULL);
	return status;
}

int zsm_group_dereg_sym(void *coll, void *sym)
{
	struct zsm_group_sym *s;
	int ret;

	(void)coll;
	ret = zsm_group_release("deregMrSym", sym, ZSM_H_RMA_SYM, (void **)&s);
	if (ret)
		return ret;
	zsm_group_sym_free(s);
	return 0;
}

int zsm_group_sym_size(void *sym, int rank, uint64_t *size)
{
	struct zsm_group_sym *s;
	int ret = zsm_group_lookup("size", sym, ZSM_H_RMA_SYM, (void **)&s);

	*size = 0;
	if (ret)
		return ret;
	if (rank < 0 || rank >= s->coll->nranks)
		return -EINVAL;
	*size = rank == s->coll->rank ? s->size
				       : zsm_group_sym_win(s, rank)->size;
	return 0;
}

int zsm_group_sym_link(void *sym, int rank, const struct zsm_rma_window **win,
		     void **mh)
{
	struct zsm_group_sym *s;
	int ret = zsm_group_lookup("sym_link", sym, ZSM_H_RMA_SYM, (void **)&s);

	if (!ret && (rank < 0 || rank >= s->coll->nranks ||
		     rank == s->coll->rank)) {
		ZSM_WARN("group: sym_link: rank %d of %d (this is rank %d)",
			 rank, s->coll->nranks, s->coll->rank);
		ret = -EINVAL;
	}
	if (ret)
		return ret;
	*win = zsm_group_sym_win(s, rank);
	*mh = zsm_group_sym_mh(s, rank);
	return 0;
}
