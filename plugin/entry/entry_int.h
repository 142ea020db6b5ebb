/* SPDX-License-Identifier: MIT */
/* What the entry points' files share: handle look-ups, registration
 * checks and request hand-off (entry_handle.c, entry_mr.c, entry_xfer.c,
 * entry_rma.c). */
#ifndef ZSM_ENTRY_ENTRY_INT_H
#define ZSM_ENTRY_ENTRY_INT_H

#include <stddef.h>
#include <stdint.h>

#include "common/handle.h"
#include "core/transport.h"

/* A handle as the caller holds it. */
static inline void *zsm_entry_handle_out(uint64_t h)
{
	return (void *)(uintptr_t)h;
}

/*
 * The object behind handle h of type, or an error said once here: the
 * call, what the handle is not, and the likely cause.
 */
int zsm_entry_lookup(const char *call, const void *h,
		     enum zsm_handle_type type, void **obj);

/* A send or receive comm, for the calls that take either: a closed one
 * is -EBADF, as for the calls that take one kind. */
int zsm_entry_any_comm(const char *call, const void *h,
		       struct zsm_comm **c);

/* Says that the call's argument what is NULL: -EINVAL. */
int zsm_entry_null(const char *call, const char *what);

/* NCCL's handle for mr, the registration of [data, data + size). */
int zsm_entry_mr_publish(struct zsm_mr *mr, const void *data,
			 size_t size, void **mh);

/* The arguments of a registration (type, range, mh) make sense, or
 * -EINVAL said once here; *mh is NULL from here on. */
int zsm_entry_reg_check(const char *call, void *data, size_t size,
			int type, void **mh);

/*
 * [data, data + len) lies in mr's registered bytes: a transfer past them
 * would have the provider (or ce's copy) read or write memory NCCL never
 * registered.  Said once here when not.
 */
int zsm_entry_mr_covers(const char *call, const struct zsm_mr *mr,
			const void *data, size_t len);

/* The registration behind mh for a transfer of [data, data + len) on c,
 * held: NULL and 0 when there is none and c can do without. */
int zsm_entry_mr_take(const char *call, struct zsm_comm *c, void *mh,
		      const void *data, size_t len, struct zsm_mr **out);

/* [off, off + len) lies inside window w: said once here when not. */
int zsm_entry_win_check(const char *call, const char *what,
			const struct zsm_rma_window *w, uint64_t off,
			uint64_t len);

/* A request of c for a transfer that holds mr, or NULL when none is free
 * (mr dropped then). */
struct zsm_req *zsm_entry_req_get(struct zsm_comm *c,
				  struct zsm_mr *mr);

/* Buffer i of a request. */
void zsm_entry_req_buf(struct zsm_req *req, int i, void *data,
		       size_t len, int tag, struct zsm_mr *mh);

/*
 * Queue req and give NCCL its handle; a full queue frees it and gives a
 * NULL request, which NCCL retries (wait: a flush, which it does not).
 */
void zsm_entry_submit(struct zsm_req *req, int wait, void **request);

#endif
