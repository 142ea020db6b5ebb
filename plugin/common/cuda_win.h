/* SPDX-License-Identifier: MIT */
/*
 * What one-sided windows in GPU memory need of the driver, for net and ce
 * alike: the context to copy in, copies between a window and host memory
 * that finish before returning, and the atomic-looking update of a
 * signal word in device memory.  Everything runs on a non-blocking
 * stream of our own per context: never ordered after the application's
 * work, which may be waiting for these very bytes (a stream waiting on
 * a signal word would hold a copy on the legacy stream for ever).
 * Engine only (the engine lock serialises every call).
 */
#ifndef ZSM_COMMON_CUDA_WIN_H
#define ZSM_COMMON_CUDA_WIN_H

#include <stddef.h>
#include <stdint.h>

#include "common/cuda_drv.h"

/* The context a GPU buffer is copied in: the one it was allocated in, or
 * for cuMem memory (which belongs to none) its device's primary context,
 * retained until zsm_cuda_win_ctx_put. */
struct zsm_cuda_win_ctx {
	zsm_cu_context ctx;
	int dev;
	int primary;
};

/* 0, or -errno with why filled. */
int zsm_cuda_win_ctx_get(const void *p, struct zsm_cuda_win_ctx *out,
			 char *why, size_t why_len);
void zsm_cuda_win_ctx_put(struct zsm_cuda_win_ctx *c);
/*
 * dst <- src, n bytes, in ctx; host sides must be pinned (the driver's
 * staging of pageable memory may wait for the device).  Returns once the
 * bytes are in place: 0, or -errno (said).
 */
int zsm_cuda_win_copy(zsm_cu_context ctx, zsm_cu_deviceptr dst,
		      zsm_cu_deviceptr src, size_t n);
/*
 * The word at device address word += add: read, added and written back
 * in stream order.  Atomic only because the engine is the one writer of
 * every signal word (NCCL registers them NEVER_RESET).  0 or -errno.
 */
int zsm_cuda_win_word_add(zsm_cu_context ctx, zsm_cu_deviceptr word,
			  uint64_t add);
/* Pin [p, p + n) for copies in ctx (made current for the call, the
 * caller's own restored): 0 or -errno (said). */
int zsm_cuda_win_pin(zsm_cu_context ctx, void *p, size_t n);
void zsm_cuda_win_unpin(void *p);
/*
 * A GPU window's pinned host mirror, for transports whose peers cannot
 * reach the window's GPU memory: puts out of it copy bytes down first,
 * puts into it land in the mirror and are copied up.
 */
struct zsm_cuda_win_mirror {
	char *host; /* NULL: none */
	char *dev;  /* the window */
	struct zsm_cuda_win_ctx ctx;
};
/* 0, or -errno with why filled (nothing to free then). */
int zsm_cuda_win_mirror_new(struct zsm_cuda_win_mirror *m, void *dev,
			    size_t size, char *why, size_t why_len);
void zsm_cuda_win_mirror_free(struct zsm_cuda_win_mirror *m);
/* Bytes [p, p + n) of the window down into the mirror; *host is their
 * place there.  0 or -errno (said). */
int zsm_cuda_win_mirror_down(const struct zsm_cuda_win_mirror *m,
			     const void *p, size_t n, void **host);
/* Bytes [off, off + n) of the mirror up into the window. */
int zsm_cuda_win_mirror_up(const struct zsm_cuda_win_mirror *m, size_t off,
			   size_t n);
/* Destroy the streams (the engine is stopping). */
void zsm_cuda_win_fini(void);

#endif
