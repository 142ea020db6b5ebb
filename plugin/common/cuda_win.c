/* SPDX-License-Identifier: MIT */
/*
 * Owns the driver work of GPU windows (cuda_win.h): one non-blocking
 * stream per context, made on first use, and a pinned word for signal
 * updates.  Copies are waited for by polling the stream: the engine has
 * nothing else to do for the comm until the bytes are in place, and the
 * wait is bounded (a device that stops answering is an error, not a
 * hang).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/cuda.h"
#include "common/cuda_win.h"
#include "common/log.h"

/* A copy the device has not finished in this long will not finish. */
#define ZSM_CUDA_WIN_WAIT_NS (60ULL * 1000000000ULL)
#define ZSM_CUDA_WIN_STREAMS 32

static struct {
	zsm_cu_context ctx;
	zsm_cu_stream stream;
} zsm_cuda_win_streams[ZSM_CUDA_WIN_STREAMS];
static uint64_t *zsm_cuda_win_scratch; /* pinned, 64 bytes */

static int zsm_cuda_win_say(zsm_cu_result res, const char *what, size_t n)
{
	char why[256];
	int err = zsm_cuda_drv_fail(zsm_cuda_table(), res, why, sizeof(why),
				    "%s (%zu bytes)", what, n);

	ZSM_WARN("GPU window: %s", why);
	return err;
}

int zsm_cuda_win_ctx_get(const void *p, struct zsm_cuda_win_ctx *out,
			 char *why, size_t why_len)
{
	const struct zsm_cuda_drv *d = zsm_cuda_table();
	zsm_cu_deviceptr ptr = (zsm_cu_deviceptr)(uintptr_t)p;
	zsm_cu_result res;
	zsm_cu_device dev;

	memset(out, 0, sizeof(*out));
	if (!zsm_cuda_ready()) {
		snprintf(why, why_len, "no CUDA driver");
		return -ENODEV;
	}
	res = d->pointer_get_attribute(&out->dev,
				       ZSM_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
				       ptr);
	if (res == ZSM_CU_SUCCESS)
		res = d->pointer_get_attribute(
			&out->ctx, ZSM_CU_POINTER_ATTRIBUTE_CONTEXT, ptr);
	if (res != ZSM_CU_SUCCESS)
		return zsm_cuda_drv_fail(d, res, why, why_len,
					 "the device of %p", p);
	if (out->ctx)
		return 0;
	/* cuMem memory (NCCL's windows) belongs to no context. */
	res = d->device_get(&dev, out->dev);
	if (res == ZSM_CU_SUCCESS)
		res = d->device_primary_ctx_retain(&out->ctx, dev);
	if (res != ZSM_CU_SUCCESS)
		return zsm_cuda_drv_fail(d, res, why, why_len,
					 "the primary context of GPU %d",
					 out->dev);
	out->primary = 1;
	return 0;
}

void zsm_cuda_win_ctx_put(struct zsm_cuda_win_ctx *c)
{
	zsm_cu_device dev;

	if (c->primary && zsm_cuda_table()->device_get(&dev, c->dev) ==
				  ZSM_CU_SUCCESS)
		zsm_cuda_table()->device_primary_ctx_release(dev);
	memset(c, 0, sizeof(*c));
}

/* ctx's stream, made current with ctx; NULL on failure (said). */
static zsm_cu_stream zsm_cuda_win_stream(zsm_cu_context ctx)
{
	const struct zsm_cuda_drv *d = zsm_cuda_table();
	zsm_cu_result res = d->ctx_set_current(ctx);
	int i;

	if (res != ZSM_CU_SUCCESS) {
		zsm_cuda_win_say(res, "entering the window's context", 0);
		return NULL;
	}
	for (i = 0; i < ZSM_CUDA_WIN_STREAMS; i++) {
		if (zsm_cuda_win_streams[i].ctx == ctx)
			return zsm_cuda_win_streams[i].stream;
		if (!zsm_cuda_win_streams[i].ctx)
			break;
	}
	if (i == ZSM_CUDA_WIN_STREAMS) {
		ZSM_WARN("GPU window: windows in more than %d CUDA contexts",
			 ZSM_CUDA_WIN_STREAMS);
		return NULL;
	}
	res = d->stream_create(&zsm_cuda_win_streams[i].stream,
			       ZSM_CU_STREAM_NON_BLOCKING);
	if (res != ZSM_CU_SUCCESS) {
		zsm_cuda_win_say(res, "a stream for window copies", 0);
		return NULL;
	}
	zsm_cuda_win_streams[i].ctx = ctx;
	return zsm_cuda_win_streams[i].stream;
}

static int zsm_cuda_win_wait(zsm_cu_stream st, size_t n)
{
	uint64_t deadline = zsm_now_ns() + ZSM_CUDA_WIN_WAIT_NS;
	zsm_cu_result res;

	while ((res = zsm_cuda_table()->stream_query(st)) ==
	       ZSM_CU_ERROR_NOT_READY) {
		if (zsm_now_ns() > deadline) {
			ZSM_WARN("GPU window: a %zu-byte copy has not finished "
				 "in %llu s",
				 n, ZSM_CUDA_WIN_WAIT_NS / 1000000000ULL);
			return -ETIMEDOUT;
		}
	}
	return res == ZSM_CU_SUCCESS ? 0 : zsm_cuda_win_say(res, "a copy", n);
}

int zsm_cuda_win_copy(zsm_cu_context ctx, zsm_cu_deviceptr dst,
		      zsm_cu_deviceptr src, size_t n)
{
	zsm_cu_stream st = zsm_cuda_win_stream(ctx);
	zsm_cu_result res;

	if (!st)
		return -EIO;
	if (!n)
		return 0;
	res = zsm_cuda_table()->memcpy_async(dst, src, n, st);
	if (res != ZSM_CU_SUCCESS)
		return zsm_cuda_win_say(res, "queueing a copy", n);
	return zsm_cuda_win_wait(st, n);
}

int zsm_cuda_win_pin(zsm_cu_context ctx, void *p, size_t n)
{
	const struct zsm_cuda_drv *d = zsm_cuda_table();
	zsm_cu_context was = NULL;
	zsm_cu_result res;

	/* Pinning needs a current context; the caller's thread (NCCL's)
	 * gets its own back. */
	if (d->ctx_get_current && d->ctx_get_current(&was) != ZSM_CU_SUCCESS)
		was = NULL;
	res = d->ctx_set_current(ctx);
	if (res == ZSM_CU_SUCCESS)
		res = d->mem_host_register(p, n,
					   ZSM_CU_MEMHOSTREGISTER_PORTABLE);
	if (was != ctx)
		d->ctx_set_current(was);
	return res == ZSM_CU_SUCCESS
		       ? 0
		       : zsm_cuda_win_say(res, "pinning host memory", n);
}

void zsm_cuda_win_unpin(void *p)
{
	zsm_cuda_table()->mem_host_unregister(p);
}

int zsm_cuda_win_word_add(zsm_cu_context ctx, zsm_cu_deviceptr word,
			  uint64_t add)
{
	zsm_cu_deviceptr host;
	int ret;

	/* Pinning needs a current context, and this may be the first call
	 * on the engine's thread. */
	if (!zsm_cuda_win_stream(ctx))
		return -EIO;
	if (!zsm_cuda_win_scratch) {
		void *p = NULL;

		if (posix_memalign(&p, 4096, 4096))
			return -ENOMEM;
		if (zsm_cuda_win_pin(ctx, p, 4096)) {
			free(p);
			return -EIO;
		}
		zsm_cuda_win_scratch = p;
	}
	host = (zsm_cu_deviceptr)(uintptr_t)zsm_cuda_win_scratch;
	ret = zsm_cuda_win_copy(ctx, host, word, 8);
	if (ret)
		return ret;
	*zsm_cuda_win_scratch += add;
	return zsm_cuda_win_copy(ctx, word, host, 8);
}

int zsm_cuda_win_mirror_new(struct zsm_cuda_win_mirror *m, void *dev,
			    size_t size, char *why, size_t why_len)
{
	void *p = NULL;
	int ret;

	memset(m, 0, sizeof(*m));
	ret = zsm_cuda_win_ctx_get(dev, &m->ctx, why, why_len);
	if (ret)
		return ret;
	if (posix_memalign(&p, 4096, size)) {
		snprintf(why, why_len, "no memory for a %zu-byte host copy",
			 size);
		zsm_cuda_win_ctx_put(&m->ctx);
		return -ENOMEM;
	}
	ret = zsm_cuda_win_pin(m->ctx.ctx, p, size);
	if (ret) {
		snprintf(why, why_len, "its %zu-byte host copy cannot be "
				       "pinned", size);
		free(p);
		zsm_cuda_win_ctx_put(&m->ctx);
		return ret;
	}
	m->host = p;
	m->dev = dev;
	return 0;
}

void zsm_cuda_win_mirror_free(struct zsm_cuda_win_mirror *m)
{
	if (!m->host)
		return;
	zsm_cuda_win_unpin(m->host);
	free(m->host);
	zsm_cuda_win_ctx_put(&m->ctx);
	memset(m, 0, sizeof(*m));
}

int zsm_cuda_win_mirror_down(const struct zsm_cuda_win_mirror *m,
			     const void *p, size_t n, void **host)
{
	size_t off = (size_t)((const char *)p - m->dev);

	*host = m->host + off;
	return zsm_cuda_win_copy(m->ctx.ctx, (zsm_cu_deviceptr)(uintptr_t)*host,
				 (zsm_cu_deviceptr)(uintptr_t)p, n);
}

int zsm_cuda_win_mirror_up(const struct zsm_cuda_win_mirror *m, size_t off,
			   size_t n)
{
	return zsm_cuda_win_copy(m->ctx.ctx,
				 (zsm_cu_deviceptr)(uintptr_t)(m->dev + off),
				 (zsm_cu_deviceptr)(uintptr_t)(m->host + off),
				 n);
}

void zsm_cuda_win_fini(void)
{
	for (int i = 0; i < ZSM_CUDA_WIN_STREAMS; i++) {
		if (!zsm_cuda_win_streams[i].ctx)
			break;
		zsm_cuda_table()->ctx_set_current(zsm_cuda_win_streams[i].ctx);
		zsm_cuda_table()->stream_destroy(
			zsm_cuda_win_streams[i].stream);
		zsm_cuda_win_streams[i].ctx = NULL;
	}
	if (zsm_cuda_win_scratch) {
		zsm_cuda_win_unpin(zsm_cuda_win_scratch);
		free(zsm_cuda_win_scratch);
		zsm_cuda_win_scratch = NULL;
	}
}
