/* SPDX-License-Identifier: MIT */
/*
 * Owns the look-up of the handles callers give the entry points: a
 * stale, doubled or forged one is refused, said once here, without
 * touching freed memory.
 */
#include <errno.h>
#include <stdint.h>

#include "common/handle.h"
#include "common/log.h"
#include "entry/entry_int.h"

int zsm_entry_lookup(const char *call, const void *h,
		     enum zsm_handle_type type, void **obj)
{
	int ret = zsm_handle_get((uint64_t)(uintptr_t)h, type, obj);

	if (ret == -EBADF)
		ZSM_WARN("%s: %s %p was closed or has ended (used after "
			 "close, twice, or after its comm closed)",
			 call, zsm_handle_type_name(type), h);
	else if (ret)
		ZSM_WARN("%s: %p is not a zsm %s", call, h,
			 zsm_handle_type_name(type));
	return ret;
}

int zsm_entry_any_comm(const char *call, const void *h,
		       struct zsm_comm **c)
{
	void *obj;
	int s = zsm_handle_get((uint64_t)(uintptr_t)h, ZSM_H_SEND, &obj);
	int r = s ? zsm_handle_get((uint64_t)(uintptr_t)h, ZSM_H_RECV, &obj)
		  : 0;

	if (s && r) {
		ZSM_WARN("%s: %p is not a live zsm send or receive comm%s",
			 call, h,
			 s == -EBADF || r == -EBADF ? " (closed)" : "");
		return s == -EBADF || r == -EBADF ? -EBADF : -EINVAL;
	}
	*c = obj;
	return 0;
}

int zsm_entry_null(const char *call, const char *what)
{
	ZSM_WARN("%s: %s is NULL", call, what);
	return -EINVAL;
}
