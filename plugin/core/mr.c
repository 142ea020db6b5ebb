/* SPDX-License-Identifier: MIT */
/* Owns registrations' references; each transport frees its own kind. */
#include "core/transport.h"

void zsm_mr_hold(struct zsm_mr *mr)
{
	/* relaxed: the caller holds a reference already, which keeps mr;
	 * only the count changes. */
	atomic_fetch_add_explicit(&mr->refs, 1, memory_order_relaxed);
}

/* 1 when this was the last reference. */
static int zsm_mr_drop(struct zsm_mr *mr)
{
	/* acq_rel: the last dropper sees every holder's use of mr before
	 * it frees it (acquire), each holder's use comes before its drop
	 * (release). */
	return atomic_fetch_sub_explicit(&mr->refs, 1, memory_order_acq_rel) ==
	       1;
}

void zsm_mr_put(struct zsm_mr *mr)
{
	if (!zsm_mr_drop(mr))
		return;
	zsm_proxy_lock();
	mr->ops->mr_free(mr);
	zsm_proxy_unlock();
}

void zsm_mr_put_locked(struct zsm_mr *mr)
{
	if (zsm_mr_drop(mr))
		mr->ops->mr_free(mr);
}
