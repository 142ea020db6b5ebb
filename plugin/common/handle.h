/* SPDX-License-Identifier: MIT */
/*
 * The handles NCCL holds for zsm's objects: contexts, comms, memory
 * registrations and requests.  A handle is never a pointer but a slot
 * index with a type and a generation, so a stale, doubled or forged one
 * is refused with a clear error without touching memory that may have
 * been freed: the slots themselves are never freed while the plugin is
 * loaded.
 *
 *   bits 63..40  generation of the slot (bumped on every open and close)
 *   bits 39..32  type
 *   bits 31..0   slot index + 1 (0 is never a handle)
 *
 * Opening and closing a slot take a lock (they are rare, except for
 * requests, whose slots are reserved with their pool and only armed and
 * disarmed); looking one up is two atomic loads.
 */
#ifndef ZSM_COMMON_HANDLE_H
#define ZSM_COMMON_HANDLE_H

#include <stdint.h>

enum zsm_handle_type {
	ZSM_H_CTX = 1,
	ZSM_H_LISTEN,
	ZSM_H_SEND,
	ZSM_H_RECV,
	ZSM_H_MR,
	ZSM_H_REQ,
	ZSM_H_RMA_LISTEN, /* plugin/rma's objects */
	ZSM_H_RMA_COLL,
	ZSM_H_RMA_SYM,
	ZSM_H_RMA_CTX,
	ZSM_H_API_COMM, /* plugin/api's objects */
	ZSM_H_API_WIN,
	ZSM_H_NTYPES,
};

/* "send comm", "registration", ... for messages. */
const char *zsm_handle_type_name(enum zsm_handle_type type);

/*
 * A new slot for obj: 0 and its handle in *out, or -ENOMEM.  The handle
 * is live at once.
 */
int zsm_handle_open(enum zsm_handle_type type, void *obj, uint64_t *out);
/*
 * Close the live handle h of type: 0 and its object in *obj, exactly once;
 * -EBADF when h names a slot of that type that was closed (or reused
 * since), -EINVAL when it is not a handle of that type at all.  The slot
 * goes back to the free list.
 */
int zsm_handle_close(uint64_t h, enum zsm_handle_type type, void **obj);
/* The live object behind h: 0 or the errors of zsm_handle_close. */
int zsm_handle_get(uint64_t h, enum zsm_handle_type type, void **obj);

/*
 * Request slots: reserved once with a request (not live), armed for each
 * use (a fresh handle), disarmed when the request is freed, released with
 * its pool.  Arm and disarm are the owner's alone and take no lock.
 */
int zsm_handle_reserve(enum zsm_handle_type type, void *obj, uint32_t *index);
uint64_t zsm_handle_arm(uint32_t index);
void zsm_handle_disarm(uint32_t index);
void zsm_handle_release(uint32_t index);

/* Slots in use, for tests. */
unsigned zsm_handle_count(void);
/* Free every slot at unload: every handle is dead from here on. */
void zsm_handle_fini(void);

#endif
