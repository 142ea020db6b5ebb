/* SPDX-License-Identifier: MIT */
/*
 * Owns the API's windows: memory every rank registers in the same order
 * (the group's symmetric registrations), found again by address for the
 * buffers calls name, with each peer's descriptor and our registration
 * for the link to it resolved once, here, for the agent's puts.
 */
#include <errno.h>
#include <stdlib.h>

#include "api/api_int.h"
#include "common/cuda.h"
#include "common/handle.h"
#include "common/log.h"
#include "entry/entry.h"
#include "group/group.h"

int zsm_api_win_targets(struct zsm_api_comm *c, void *sym,
			struct zsm_api_target **at)
{
	int ret = 0;

	*at = calloc((size_t)c->nranks, sizeof(**at));
	if (!*at)
		return -ENOMEM;
	for (int p = 0; !ret && p < c->nranks; p++) {
		void *mh = NULL;

		if (p == c->rank)
			continue;
		ret = zsm_group_sym_link(sym, p, &(*at)[p].win, &mh);
		if (!ret)
			ret = zsm_entry_mr_of(mh, &(*at)[p].mr);
	}
	return ret;
}

int zsm_api_win_register(struct zsm_api_comm *c, void *buf, size_t size,
			 struct zsm_api_win **out)
{
	struct zsm_api_win *w = calloc(1, sizeof(*w));
	uint32_t slot = 0;
	int ret, reserved;

	*out = NULL;
	if (!w)
		return -ENOMEM;
	w->comm = c;
	w->base = buf;
	w->size = size;
	w->device = zsm_cuda_ptr_is_device(buf);
	if (w->device && !c->gpu) {
		/* Still joins the exchange below, empty, so that no peer
		 * waits for this rank. */
		ZSM_WARN("api: window_register: %p is GPU memory, and this "
			 "communicator is in host-memory mode (no CUDA context "
			 "was current at init)",
			 buf);
		ret = zsm_group_reg_sym(c->group.coll, NULL, 0, ZSM_MEM_HOST,
					&w->sym);
		if (!ret)
			zsm_group_dereg_sym(c->group.coll, w->sym);
		free(w);
		return -EINVAL;
	}
	pthread_mutex_lock(&c->lock);
	/* The handle's slot first: a registration that failed here after
	 * the exchange would fail this rank alone.  Without one this rank
	 * still joins the exchange, saying so: it fails on every rank. */
	reserved = !zsm_handle_reserve(ZSM_H_API_WIN, w, &slot);
	if (!reserved)
		ret = zsm_group_reg_sym_refuse(c->group.coll, -ENOMEM);
	else
		ret = zsm_group_reg_sym(c->group.coll, buf, size,
					w->device ? ZSM_MEM_CUDA : ZSM_MEM_HOST,
					&w->sym);
	/* A registration made everywhere that this rank cannot resolve
	 * (no memory) fails here alone: its puts would have no target. */
	if (!ret)
		ret = zsm_api_win_targets(c, w->sym, &w->at);
	if (ret && w->sym) {
		zsm_group_dereg_sym(c->group.coll, w->sym);
		w->sym = NULL;
	}
	if (!ret) {
		w->handle = zsm_handle_arm(slot);
		w->next = c->wins;
		c->wins = w;
	} else if (reserved) {
		zsm_handle_release(slot);
	}
	pthread_mutex_unlock(&c->lock);
	if (ret) {
		free(w->at);
		free(w);
		return ret;
	}
	*out = w;
	return 0;
}

static void zsm_api_win_unlink(struct zsm_api_comm *c, struct zsm_api_win *w)
{
	for (struct zsm_api_win **p = &c->wins; *p; p = &(*p)->next) {
		if (*p == w) {
			*p = w->next;
			return;
		}
	}
}

int zsm_api_win_deregister(struct zsm_api_comm *c, struct zsm_api_win *w)
{
	void *obj;
	int ret;

	/* A put in flight may still read or name it. */
	ret = zsm_api_comm_quiesce(c);
	if (ret && ret != zsm_api_comm_error(c))
		return ret;
	pthread_mutex_lock(&c->lock);
	zsm_api_win_unlink(c, w);
	if (c->staging.bounce == w)
		c->staging.bounce = NULL;
	pthread_mutex_unlock(&c->lock);
	zsm_handle_close(w->handle, ZSM_H_API_WIN, &obj);
	ret = zsm_group_dereg_sym(c->group.coll, w->sym);
	free(w->at);
	free(w);
	return ret;
}

void zsm_api_win_free_all(struct zsm_api_comm *c)
{
	while (c->wins) {
		struct zsm_api_win *w = c->wins;
		void *obj;

		c->wins = w->next;
		zsm_handle_close(w->handle, ZSM_H_API_WIN, &obj);
		zsm_group_dereg_sym(c->group.coll, w->sym);
		free(w->at);
		free(w);
	}
}

int zsm_api_win_get(const char *call, struct zsm_api_comm *c, uint64_t h,
		    struct zsm_api_win **out)
{
	int ret = zsm_handle_get(h, ZSM_H_API_WIN, (void **)out);

	if (ret) {
		ZSM_WARN("api: %s: %#llx is not a live zsm window", call,
			 (unsigned long long)h);
		return ret;
	}
	if ((*out)->comm != c) {
		ZSM_WARN("api: %s: the window belongs to another communicator",
			 call);
		return -EINVAL;
	}
	return 0;
}

struct zsm_api_win *zsm_api_win_find(struct zsm_api_comm *c, const void *p,
				     size_t len)
{
	const char *q = p;

	for (struct zsm_api_win *w = c->wins; w; w = w->next)
		if (q >= w->base && (size_t)(q - w->base) <= w->size &&
		    len <= w->size - (size_t)(q - w->base))
			return w;
	return NULL;
}
