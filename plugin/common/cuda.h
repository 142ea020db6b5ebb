/* SPDX-License-Identifier: MIT */
/*
 * The process's CUDA state, below every transport: the driver table
 * (libcuda loaded at run time, see cuda_drv.h), what its devices can do,
 * and the questions net and ce both ask of a GPU buffer (its device, a
 * dma-buf of it).  Without a driver the plugin serves host memory only.
 */
#ifndef ZSM_COMMON_CUDA_H
#define ZSM_COMMON_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "common/cuda_drv.h"

/* Load the driver once per load of the plugin; 0 or -errno (said at INFO). */
int zsm_cuda_init(void);
/* Whether GPU buffers can be taken (the driver is there, with a device). */
int zsm_cuda_ready(void);
/* The driver table; only while zsm_cuda_ready(). */
const struct zsm_cuda_drv *zsm_cuda_table(void);
/*
 * A context for work no buffer names one for (a copy between the peer's
 * GPU memory and host memory): GPU 0's primary context, taken on first
 * use and made current on the calling thread then.  Engine only.
 */
int zsm_cuda_default_ctx(zsm_cu_context *ctx, char *why, size_t why_len);
/* Whether the driver loads modules lazily (CUDA_MODULE_LOADING=LAZY). */
int zsm_cuda_lazy(void);
/* The lowest compute capability of the devices (10 * major + minor), 0
 * when unknown or no driver. */
int zsm_cuda_min_cc(void);
/* The device ordinal of GPU memory at p, for provider registrations. */
int zsm_cuda_ptr_device(const void *p, int *dev);
/* 1 when p is device memory (cudaMalloc, cuMem), 0 when it is host
 * memory (pinned or not) or there is no driver. */
int zsm_cuda_ptr_is_device(const void *p);
/* Whether every device exports its memory as dma-bufs. */
int zsm_cuda_dmabuf_ok(void);
/*
 * A dma-buf fd (the caller closes it) of the pages holding [p, p + size):
 * *base is the address of the dma-buf's byte 0 and *offset that of p in
 * it.  0 or -errno.
 */
int zsm_cuda_dmabuf_get(const void *p, size_t size, int *fd, void **base,
			uint64_t *offset);
/*
 * Unit tests: use this table instead of libcuda's (a copy is taken).
 * NULL goes back to "not tried".
 */
void zsm_cuda_use_table(const struct zsm_cuda_drv *table);

#endif
