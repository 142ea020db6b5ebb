/* SPDX-License-Identifier: MIT */
/*
 * Owns ce's use of CUDA: the driver table (loaded at run time), what regMr
 * records of a GPU buffer, the receiver's cache of the sender's opened
 * allocations (and the sender's of the receiver's GPU windows, for its
 * gets), and the copies on ce's own stream (one per context):
 * cuMemcpyAsync between two GPUs' memory runs on a copy engine, so no SM
 * is used.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ce/ce.h"
#include "ce/ce_int.h"
#include "common/cuda.h"
#include "common/log.h"
#include "common/param.h"
#include "proxy/proxy.h"

/* Which of its comm's sides a channel is, for messages: the sender
 * opens the receiver's allocations too, for its gets. */
static const char *zsm_ce_side(const struct zsm_ce_chan *ch)
{
	return ch->side == ZSM_CE_SENDER ? "send" : "receive";
}

/* Numbers of GPU registrations: regMr may run on any thread. */
static atomic_ullong zsm_ce_reg_ids;

/*
 * A cuMem allocation has no IPC handle: export it as a POSIX fd (NCCL
 * allocates with that handle type), kept open until deregMr.
 */
static int zsm_ce_cuda_export(zsm_cu_deviceptr base, struct zsm_ce_gpu_mr *out,
			      char *why, size_t why_len)
{
	zsm_cu_mem_handle h;
	zsm_cu_result res;
	int fd = -1;

	res = zsm_cuda_table()->mem_retain_allocation_handle(&h,
						     (void *)(uintptr_t)base);
	if (res != ZSM_CU_SUCCESS)
		return zsm_cuda_drv_fail(zsm_cuda_table(), res, why, why_len,
					 "0x%llx has neither an IPC handle "
					 "nor a cuMem allocation handle",
					 base);
	res = zsm_cuda_table()->mem_export(&fd, h, ZSM_CU_MEM_HANDLE_TYPE_POSIX_FD, 0);
	zsm_cuda_table()->mem_release(h);
	if (res != ZSM_CU_SUCCESS)
		return zsm_cuda_drv_fail(zsm_cuda_table(), res, why, why_len,
					 "exporting the cuMem allocation at "
					 "0x%llx as a file descriptor (made "
					 "without CU_MEM_HANDLE_TYPE_POSIX_"
					 "FILE_DESCRIPTOR?)",
					 base);
	out->vmm_fd = fd;
	return 0;
}

int zsm_ce_cuda_mr_try(void *data, size_t size, struct zsm_ce_gpu_mr *out,
		       char *why, size_t why_len)
{
	zsm_cu_deviceptr p = (zsm_cu_deviceptr)(uintptr_t)data, base = 0;
	size_t len = 0;
	zsm_cu_result res;

	memset(out, 0, sizeof(*out));
	res = zsm_cuda_table()->mem_get_address_range(&base, &len, p);
	if (res != ZSM_CU_SUCCESS || p + size > base + len) {
		zsm_cuda_drv_fail(zsm_cuda_table(), res, why, why_len,
				  "%zu bytes at %p are not one CUDA "
				  "allocation",
				  size, data);
		return -EINVAL;
	}
	out->vmm_fd = -1;
	res = zsm_cuda_table()->ipc_get_mem_handle(&out->ipc, base);
	if (res != ZSM_CU_SUCCESS) {
		/* cuMem memory (NCCL's own): export the allocation. */
		int ret = zsm_ce_cuda_export(base, out, why, why_len);

		if (ret) {
			return ret;
		}
	}
	res = zsm_cuda_table()->pointer_get_attribute(&out->dev,
					      ZSM_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
					      p);
	if (res == ZSM_CU_SUCCESS)
		res = zsm_cuda_table()->pointer_get_attribute(
			&out->ctx, ZSM_CU_POINTER_ATTRIBUTE_CONTEXT, p);
	if (res != ZSM_CU_SUCCESS) {
		zsm_cuda_drv_fail(zsm_cuda_table(), res, why, why_len,
				  "the context of %p", data);
		return -EINVAL;
	}
	out->base = base;
	out->alloc_size = len;
	/* relaxed: only uniqueness matters. */
	out->reg_id = atomic_fetch_add_explicit(&zsm_ce_reg_ids, 1,
						memory_order_relaxed) +
		      1;
	if (out->vmm_fd >= 0 || !out->ctx) {
		/* cuMem memory belongs to no context: copy in the device's
		 * primary one (held until deregMr). */
		zsm_cu_device d;

		res = zsm_cuda_table()->device_get(&d, out->dev);
		if (res == ZSM_CU_SUCCESS)
			res = zsm_cuda_table()->device_primary_ctx_retain(&out->ctx, d);
		if (res != ZSM_CU_SUCCESS) {
			zsm_cuda_drv_fail(zsm_cuda_table(), res, why, why_len,
					  "the primary context of GPU %d",
					  out->dev);
			zsm_ce_cuda_mr_release(out);
			return -EIO;
		}
		out->primary = 1;
	}
	return 0;
}

int zsm_ce_cuda_mr_prepare(void *data, size_t size, struct zsm_ce_gpu_mr *out)
{
	char why[256];
	int ret = zsm_ce_cuda_mr_try(data, size, out, why, sizeof(why));

	if (ret)
		ZSM_WARN("ce: regMr: %s", why);
	return ret;
}

void zsm_ce_cuda_mr_release(struct zsm_ce_gpu_mr *mr)
{
	zsm_cu_device d;

	if (mr->vmm_fd >= 0)
		close(mr->vmm_fd);
	mr->vmm_fd = -1;
	if (mr->primary && zsm_cuda_table()->device_get(&d, mr->dev) == ZSM_CU_SUCCESS)
		zsm_cuda_table()->device_primary_ctx_release(d);
	mr->primary = 0;
}

/* Map the peer's exported cuMem allocation into our address space. */
static int zsm_ce_cuda_import(struct zsm_ce_chan *ch, const struct zsm_ce_slot *s,
			      int dev, struct zsm_ce_ipc_map *m)
{
	zsm_cu_mem_access access = {
		.type = ZSM_CU_MEM_LOCATION_TYPE_DEVICE,
		.id = dev,
		.flags = ZSM_CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
	};
	zsm_cu_result res;
	char why[256];
	int fd, err;

	fd = zsm_ce_pidfd_getfd(ch->pidfd, s->alloc.vmm_fd);
	if (fd < 0) {
		err = -errno;
		ZSM_WARN("ce: %s comm %u: taking pid %d's cuMem export: "
			 "%s",
			 zsm_ce_side(ch), ch->comm->id, (int)ch->peer_pid,
			 strerror(errno));
		return err;
	}
	m->size = s->alloc.size;
	res = zsm_cuda_table()->mem_import(&m->handle, (void *)(uintptr_t)fd,
				   ZSM_CU_MEM_HANDLE_TYPE_POSIX_FD);
	close(fd);
	if (res == ZSM_CU_SUCCESS)
		res = zsm_cuda_table()->mem_address_reserve(&m->ptr, m->size, 0, 0, 0);
	if (res == ZSM_CU_SUCCESS)
		res = zsm_cuda_table()->mem_map(m->ptr, m->size, 0, m->handle, 0);
	if (res == ZSM_CU_SUCCESS)
		res = zsm_cuda_table()->mem_set_access(m->ptr, m->size, &access, 1);
	if (res != ZSM_CU_SUCCESS) {
		err = zsm_cuda_drv_fail(zsm_cuda_table(), res, why, sizeof(why),
					"mapping pid %d's cuMem allocation "
					"(%llu bytes)",
					(int)ch->peer_pid,
					(unsigned long long)m->size);
		ZSM_WARN("ce: %s comm %u: %s", zsm_ce_side(ch), ch->comm->id,
			 why);
		return err;
	}
	return 0;
}

static void zsm_ce_cuda_unmap(struct zsm_ce_ipc_map *m)
{
	if (!m->vmm) {
		zsm_cuda_table()->ipc_close_mem_handle(m->ptr);
		return;
	}
	if (m->ptr) {
		zsm_cuda_table()->mem_unmap(m->ptr, m->size);
		zsm_cuda_table()->mem_address_free(m->ptr, m->size);
	}
	if (m->handle)
		zsm_cuda_table()->mem_release(m->handle);
}

/* The peer's allocation a slot names, opened once per channel. */
static int zsm_ce_cuda_map(struct zsm_ce_chan *ch, const struct zsm_ce_slot *s,
			   int dev, zsm_cu_deviceptr *ptr)
{
	struct zsm_ce_ipc_map *m;
	zsm_cu_result res;
	uint64_t t0;
	char why[256];
	int err;

	/* Two registrations of one cudaMalloc allocation share its IPC
	 * handle, and the driver maps a handle once per process. */
	for (m = ch->gpu.maps; m; m = m->next) {
		int same = s->alloc.vmm_fd >= 0
				   ? m->vmm && m->reg_id == s->alloc.reg_id
				   : !m->vmm && !memcmp(&m->ipc, &s->alloc.ipc,
							sizeof(s->alloc.ipc));

		if (same) {
			*ptr = m->ptr;
			return 0;
		}
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	/* Rare (once per allocation and channel), and a call that might
	 * wait on the device: the pair of lines shows where a hang sits. */
	t0 = zsm_now_ns();
	ZSM_INFO("ce: %s comm %u opens pid %d's GPU allocation %llu "
		 "(%llu bytes, %s)",
		 zsm_ce_side(ch), ch->comm->id, (int)ch->peer_pid,
		 (unsigned long long)s->alloc.reg_id,
		 (unsigned long long)s->alloc.size,
		 s->alloc.vmm_fd >= 0 ? "cuMem export" : "IPC handle");
	m->reg_id = s->alloc.reg_id;
	m->comm_id = ch->comm->id;
	m->peer = ch->peer_pid;
	/* The caller made ctx current: the mapping lives there. */
	zsm_cuda_table()->ctx_get_current(&m->ctx);
	if (s->alloc.vmm_fd >= 0) {
		m->vmm = 1;
		err = zsm_ce_cuda_import(ch, s, dev, m);
		if (err) {
			zsm_ce_cuda_unmap(m);
			free(m);
			return err;
		}
	} else {
		m->ipc = s->alloc.ipc;
		res = zsm_cuda_table()->ipc_open_mem_handle(
			&m->ptr, s->alloc.ipc,
			ZSM_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
		if (res != ZSM_CU_SUCCESS) {
			err = zsm_cuda_drv_fail(zsm_cuda_table(), res, why,
						sizeof(why),
						"cuIpcOpenMemHandle of pid "
						"%d's buffer",
						(int)ch->peer_pid);
			ZSM_WARN("ce: %s comm %u: %s", zsm_ce_side(ch),
				 ch->comm->id, why);
			free(m);
			return err;
		}
	}
	m->next = ch->gpu.maps;
	ch->gpu.maps = m;
	*ptr = m->ptr;
	ZSM_INFO("ce: %s comm %u: allocation %llu open in %.3f ms",
		 zsm_ce_side(ch), ch->comm->id,
		 (unsigned long long)s->alloc.reg_id,
		 (double)(zsm_now_ns() - t0) / 1e6);
	return 0;
}

/*
 * One copy stream per context, shared by every channel of the process.
 * A device has a few hardware queues (CUDA_DEVICE_MAX_CONNECTIONS, 8 by
 * default) and streams beyond that share them in order: with a stream
 * per channel, 16 channels put ce's copies behind NCCL's own spinning
 * kernel, which waits for them, and NCCL hung (32 channels, every run).
 * Engine only.
 */
struct zsm_ce_stream {
	zsm_cu_context ctx;
	zsm_cu_stream stream;
	unsigned users;
};
#define ZSM_CE_STREAMS 64
static struct zsm_ce_stream zsm_ce_streams[ZSM_CE_STREAMS];

static int zsm_ce_stream_get(struct zsm_ce_chan *ch, zsm_cu_context ctx,
			     zsm_cu_stream *out)
{
	struct zsm_ce_stream *free_slot = NULL;
	zsm_cu_result res;
	int least, greatest;
	char why[256];

	for (int i = 0; i < ZSM_CE_STREAMS; i++) {
		struct zsm_ce_stream *st = &zsm_ce_streams[i];

		if (st->users && st->ctx == ctx) {
			st->users++;
			*out = st->stream;
			return 0;
		}
		if (!st->users && !free_slot)
			free_slot = st;
	}
	if (!free_slot) {
		ZSM_WARN("ce: receive comm %u: more than %d CUDA contexts",
			 ch->comm->id, ZSM_CE_STREAMS);
		return -ENOSPC;
	}
	/* Non-blocking, and first in line: NCCL's kernel may be spinning
	 * until this copy lands. */
	if (zsm_cuda_table()->ctx_stream_prio_range(&least, &greatest) != ZSM_CU_SUCCESS)
		greatest = 0;
	res = zsm_cuda_table()->stream_create_prio(&free_slot->stream,
					   ZSM_CU_STREAM_NON_BLOCKING, greatest);
	if (res != ZSM_CU_SUCCESS) {
		int err = zsm_cuda_drv_fail(zsm_cuda_table(), res, why, sizeof(why),
					    "a copy stream for comm %u",
					    ch->comm->id);

		ZSM_WARN("ce: %s", why);
		return err;
	}
	free_slot->ctx = ctx;
	free_slot->users = 1;
	*out = free_slot->stream;
	return 0;
}

/* The caller is in ctx, and its copies there are over. */
static void zsm_ce_stream_put(zsm_cu_context ctx)
{
	for (int i = 0; i < ZSM_CE_STREAMS; i++) {
		struct zsm_ce_stream *st = &zsm_ce_streams[i];

		if (!st->users || st->ctx != ctx)
			continue;
		if (--st->users == 0) {
			zsm_cuda_table()->stream_destroy(st->stream);
			st->stream = NULL;
			st->ctx = NULL;
		}
		return;
	}
}

/* The channel's events and its hold on the stream of its context. */
static void zsm_ce_cuda_stream_drop(struct zsm_ce_chan *ch)
{
	if (ch->gpu.event)
		zsm_cuda_table()->event_destroy(ch->gpu.event);
	ch->gpu.event = NULL;
	for (unsigned i = 0; i < ZSM_CE_PIPE; i++) {
		if (ch->gpu.pipe_ev[i])
			zsm_cuda_table()->event_destroy(ch->gpu.pipe_ev[i]);
		ch->gpu.pipe_ev[i] = NULL;
	}
	if (ch->gpu.stream)
		zsm_ce_stream_put(ch->gpu.ctx);
	ch->gpu.stream = NULL;
}

static int zsm_ce_cuda_stream(struct zsm_ce_chan *ch, zsm_cu_context ctx)
{
	zsm_cu_result res;
	char why[256];
	int ret;

	if (ch->gpu.stream && ch->gpu.ctx == ctx)
		return 0;
	if (ch->gpu.stream) {
		/* Another device's buffer on this comm (no copy is in
		 * flight: the callers see to it). */
		zsm_cu_context now = ctx;

		zsm_cuda_table()->ctx_set_current(ch->gpu.ctx);
		zsm_ce_cuda_stream_drop(ch);
		zsm_cuda_table()->ctx_set_current(now);
	}
	ret = zsm_ce_stream_get(ch, ctx, &ch->gpu.stream);
	if (ret)
		return ret;
	ch->gpu.ctx = ctx;
	res = zsm_cuda_table()->event_create(&ch->gpu.event,
				     ZSM_CU_EVENT_DISABLE_TIMING);
	if (res != ZSM_CU_SUCCESS) {
		ret = zsm_cuda_drv_fail(zsm_cuda_table(), res, why, sizeof(why),
					"an event for comm %u",
					ch->comm->id);
		ZSM_WARN("ce: %s", why);
		zsm_ce_cuda_stream_drop(ch);
		return ret;
	}
	return 0;
}

/* Make ctx current on this thread: the proxy serves comms of every
 * device.  0 or -errno. */
static int zsm_ce_cuda_enter(zsm_cu_context ctx)
{
	zsm_cu_result res = zsm_cuda_table()->ctx_set_current(ctx);

	return res == ZSM_CU_SUCCESS
		       ? 0
		       : zsm_cuda_drv_fail(zsm_cuda_table(), res, NULL, 0, "set ctx");
}

/* Queue dst <- src on ce's stream in ctx and mark it with the channel's
 * event. */
static int zsm_ce_cuda_start(struct zsm_ce_chan *ch, zsm_cu_context ctx,
			     int dev, zsm_cu_deviceptr dst, zsm_cu_deviceptr src,
			     size_t n)
{
	zsm_cu_result res;
	char why[256];
	int ret = zsm_ce_cuda_stream(ch, ctx);

	if (ret)
		return ret;
	ch->gpu.dev = dev;
	/* Our own non-blocking stream: never ordered after NCCL's kernels,
	 * which may be waiting for these very bytes. */
	res = zsm_cuda_table()->memcpy_async(dst, src, n, ch->gpu.stream);
	if (res == ZSM_CU_SUCCESS)
		res = zsm_cuda_table()->event_record(ch->gpu.event,
						     ch->gpu.stream);
	if (res != ZSM_CU_SUCCESS) {
		ret = zsm_cuda_drv_fail(zsm_cuda_table(), res, why, sizeof(why),
					"copying %zu bytes", n);
		ZSM_WARN("ce: receive comm %u: %s", ch->comm->id, why);
		return ret;
	}
	ch->gpu.busy = 1;
	return 0;
}

int zsm_ce_cuda_pipe_add(struct zsm_ce_chan *ch, zsm_cu_context ctx, int dev,
			 const struct zsm_ce_slot *s, struct zsm_ce_gpu_op *op)
{
	zsm_cu_deviceptr src = 0;
	int ret;

	/* A channel copies in one context at a time. */
	if (ch->gpu.stream && ch->gpu.ctx != ctx &&
	    (ch->gpu.pipe_n || ch->gpu.busy))
		return -EAGAIN;
	ret = zsm_ce_cuda_enter(ctx);
	if (!ret)
		ret = zsm_ce_cuda_stream(ch, ctx);
	if (ret)
		return ret;
	ch->gpu.dev = dev;
	ret = zsm_ce_cuda_map(ch, s, dev, &src);
	if (ret)
		return ret;
	op->src = src + s->alloc.off;
	return 0;
}

int zsm_ce_cuda_pipe_issue(struct zsm_ce_chan *ch)
{
	zsm_cu_deviceptr dsts[ZSM_CE_PIPE], srcs[ZSM_CE_PIPE];
	size_t sizes[ZSM_CE_PIPE], idx0 = 0;
	zsm_cu_memcpy_attr attr = {
		/* The sender may reuse its buffer once we say Complete,
		 * which follows the event: stream order is all we need. */
		.src_access_order = ZSM_CU_MEMCPY_SRC_ACCESS_ORDER_STREAM,
		.flags = ZSM_CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE,
	};
	unsigned n = ch->gpu.pipe_new, first = ch->gpu.pipe_n - n, last;
	zsm_cu_result res = ZSM_CU_SUCCESS;
	char why[256];

	if (!n)
		return 0;
	last = (ch->gpu.pipe_head + ch->gpu.pipe_n - 1) % ZSM_CE_PIPE;
	for (unsigned k = 0; k < n; k++) {
		unsigned at = (ch->gpu.pipe_head + first + k) % ZSM_CE_PIPE;
		struct zsm_ce_gpu_op *op = &ch->gpu.pipe[at];

		dsts[k] = op->dst;
		srcs[k] = op->src;
		sizes[k] = op->size;
		op->last = 0;
	}
	if (!ch->gpu.pipe_ev[last])
		res = zsm_cuda_table()->event_create(&ch->gpu.pipe_ev[last],
					     ZSM_CU_EVENT_DISABLE_TIMING);
	if (res == ZSM_CU_SUCCESS && n > 1 && zsm_cuda_table()->memcpy_batch)
		res = zsm_cuda_table()->memcpy_batch(dsts, srcs, sizes, n, &attr, &idx0,
					     1, ch->gpu.stream);
	else
		for (unsigned k = 0; k < n && res == ZSM_CU_SUCCESS; k++)
			res = zsm_cuda_table()->memcpy_async(dsts[k], srcs[k], sizes[k],
						     ch->gpu.stream);
	if (res == ZSM_CU_SUCCESS)
		res = zsm_cuda_table()->event_record(ch->gpu.pipe_ev[last],
						     ch->gpu.stream);
	if (res != ZSM_CU_SUCCESS) {
		int err = zsm_cuda_drv_fail(zsm_cuda_table(), res, why, sizeof(why),
					    "queueing %u copies", n);

		ZSM_WARN("ce: receive comm %u: %s", ch->comm->id, why);
		return err;
	}
	ch->gpu.pipe[last].last = 1;
	ch->gpu.pipe_new = 0;
	return 0;
}

/* 1 the event fired, 0 not yet, -errno (said, naming what) on failure. */
static int zsm_ce_cuda_event_done(struct zsm_ce_chan *ch, zsm_cu_event e,
				  const char *what)
{
	zsm_cu_result res = zsm_cuda_table()->event_query(e);
	char why[256];
	int ret;

	if (res == ZSM_CU_ERROR_NOT_READY)
		return 0;
	if (res == ZSM_CU_SUCCESS)
		return 1;
	ret = zsm_cuda_drv_fail(zsm_cuda_table(), res, why, sizeof(why),
				"%s of comm %u", what, ch->comm->id);
	ZSM_WARN("ce: %s", why);
	return ret;
}

int zsm_ce_cuda_pipe_query(struct zsm_ce_chan *ch, unsigned i)
{
	return zsm_ce_cuda_event_done(ch, ch->gpu.pipe_ev[i], "GPU copies");
}

void zsm_ce_cuda_pipe_drain(struct zsm_ce_chan *ch)
{
	unsigned issued = ch->gpu.pipe_n - ch->gpu.pipe_new;

	if (!issued)
		return;
	if (ch->gpu.ctx)
		zsm_cuda_table()->ctx_set_current(ch->gpu.ctx);
	/* The newest issued op ends its group, and events complete in
	 * stream order: its event is the last to fire. */
	while (zsm_ce_cuda_pipe_query(
		       ch, (ch->gpu.pipe_head + issued - 1) % ZSM_CE_PIPE) == 0)
		;
}

/* A context for copies into host memory: the channel's, or GPU 0's. */
static int zsm_ce_cuda_any_ctx(struct zsm_ce_chan *ch, zsm_cu_context *ctx,
			       int *dev)
{
	char why[256];

	if (ch->gpu.ctx) {
		*ctx = ch->gpu.ctx;
		*dev = ch->gpu.dev;
		return 0;
	}
	if (zsm_cuda_default_ctx(ctx, why, sizeof(why))) {
		ZSM_WARN("ce: no CUDA context for a GPU-to-host copy: %s", why);
		return -EIO;
	}
	*dev = 0;
	return 0;
}

/* The peer's allocation slot s names, opened in *ctx (NULL: picked, a
 * copy into host memory), which is made current: its start in *src. */
static int zsm_ce_cuda_peer_src(struct zsm_ce_chan *ch, zsm_cu_context *ctx,
				int *dev, const struct zsm_ce_slot *s,
				zsm_cu_deviceptr *src)
{
	int ret = *ctx ? 0 : zsm_ce_cuda_any_ctx(ch, ctx, dev);

	if (!ret)
		ret = zsm_ce_cuda_enter(*ctx);
	if (!ret)
		ret = zsm_ce_cuda_map(ch, s, *dev, src);
	return ret;
}

int zsm_ce_cuda_copy(struct zsm_ce_chan *ch, zsm_cu_context ctx, int dev,
		     zsm_cu_deviceptr dst, const struct zsm_ce_slot *s)
{
	zsm_cu_deviceptr src = 0;
	int ret = zsm_ce_cuda_peer_src(ch, &ctx, &dev, s, &src);

	if (ret)
		return ret;
	return zsm_ce_cuda_start(ch, ctx, dev, dst, src + s->alloc.off,
				 s->size);
}

void *zsm_ce_cuda_bounce(struct zsm_ce_chan *ch, zsm_cu_context ctx)
{
	zsm_cu_result res;
	char why[256];

	if (ch->gpu.bounce)
		return ch->gpu.bounce;
	res = zsm_cuda_table()->ctx_set_current(ctx);
	if (res != ZSM_CU_SUCCESS)
		return NULL;
	ch->gpu.bounce = malloc(ZSM_CE_CHUNK);
	if (!ch->gpu.bounce)
		return NULL;
	/*
	 * Pinned: a copy up from pageable memory goes through the driver's
	 * own staging, which may wait for work on the device, and NCCL's
	 * kernel there may be waiting for these very bytes.
	 */
	res = zsm_cuda_table()->mem_host_register(ch->gpu.bounce, ZSM_CE_CHUNK,
					  ZSM_CU_MEMHOSTREGISTER_PORTABLE);
	if (res != ZSM_CU_SUCCESS) {
		zsm_cuda_drv_fail(zsm_cuda_table(), res, why, sizeof(why),
				  "pinning a %zu-byte bounce buffer",
				  (size_t)ZSM_CE_CHUNK);
		ZSM_WARN("ce: %s comm %u: %s", zsm_ce_side(ch), ch->comm->id,
			 why);
		free(ch->gpu.bounce);
		ch->gpu.bounce = NULL;
	}
	return ch->gpu.bounce;
}

int zsm_ce_cuda_get(struct zsm_ce_chan *ch, zsm_cu_context ctx, int dev,
		    void *dst, const struct zsm_ce_slot *a, uint64_t off,
		    size_t n)
{
	zsm_cu_deviceptr src = 0;
	int host = !ctx, ret = zsm_ce_cuda_peer_src(ch, &ctx, &dev, a, &src);

	if (ret)
		return ret;
	src += a->alloc.off + off;
	/* Copy-engine copies on a stream of our own (cuda_win.h), waited
	 * for here: a get's bytes are ours only once they are in place. */
	if (!host)
		return zsm_cuda_win_copy(ctx, (zsm_cu_deviceptr)(uintptr_t)dst,
					 src, n);
	/* Pinned: NCCL's host window is pageable, and the driver's staging
	 * of pageable memory may wait for work on the device. */
	if (!zsm_ce_cuda_bounce(ch, ctx))
		return -ENOMEM;
	ret = zsm_cuda_win_copy(ctx,
				(zsm_cu_deviceptr)(uintptr_t)ch->gpu.bounce,
				src, n);
	if (!ret)
		memcpy(dst, ch->gpu.bounce, n);
	return ret;
}

int zsm_ce_cuda_copy_up(struct zsm_ce_chan *ch, zsm_cu_context ctx, int dev,
			zsm_cu_deviceptr dst, const void *src, size_t n)
{
	int ret = zsm_ce_cuda_enter(ctx);

	if (ret)
		return ret;
	return zsm_ce_cuda_start(ch, ctx, dev, dst,
				 (zsm_cu_deviceptr)(uintptr_t)src, n);
}

const char *zsm_ce_cuda_copy_state(struct zsm_ce_chan *ch)
{
	/* The oldest pipelined group, or the current copy. */
	zsm_cu_event e = ch->gpu.pipe_n > ch->gpu.pipe_new
				 ? ch->gpu.pipe_ev[zsm_ce_pipe_first_end(ch)]
				 : ch->gpu.event;
	zsm_cu_result ev = zsm_cuda_table()->event_query(e);
	zsm_cu_result st = zsm_cuda_table()->stream_query(ch->gpu.stream);

	if (ev == ZSM_CU_ERROR_NOT_READY && st == ZSM_CU_ERROR_NOT_READY)
		return zsm_cuda_table()->lazy_loading
			       ? "on the GPU, not finished (event and stream "
				 "busy; with CUDA_MODULE_LOADING=LAZY a "
				 "kernel being loaded can hold it back while "
				 "NCCL's kernel waits: set "
				 "CUDA_MODULE_LOADING=EAGER)"
			       : "on the GPU, not finished (event and stream "
				 "busy)";
	if (ev == ZSM_CU_ERROR_NOT_READY)
		return "on the GPU, event not ready, stream idle";
	if (ev == ZSM_CU_SUCCESS)
		return "on the GPU, finished but not yet seen";
	return "on the GPU, event query failed";
}

int zsm_ce_cuda_copy_done(struct zsm_ce_chan *ch)
{
	int ret = zsm_ce_cuda_event_done(ch, ch->gpu.event, "a GPU copy");

	if (ret)
		ch->gpu.busy = 0;
	return ret;
}

void zsm_ce_cuda_close_map(struct zsm_ce_ipc_map *m)
{
	/* Rare, and a call that may wait for the device: the pair of
	 * lines shows where a hang sits (as for opening). */
	uint64_t t0 = zsm_now_ns();

	ZSM_INFO("ce: receive comm %u closes pid %d's GPU allocation %llu",
		 m->comm_id, (int)m->peer, (unsigned long long)m->reg_id);
	zsm_cuda_table()->ctx_set_current(m->ctx);
	zsm_ce_cuda_unmap(m);
	ZSM_INFO("ce: receive comm %u: allocation %llu closed in %.3f ms",
		 m->comm_id, (unsigned long long)m->reg_id,
		 (double)(zsm_now_ns() - t0) / 1e6);
	free(m);
}

/* Close one opened allocation, on the unmap thread where there is one:
 * the engine must not wait for the device. */
static void zsm_ce_cuda_drop(struct zsm_ce_ipc_map **link)
{
	struct zsm_ce_ipc_map *m = *link;

	*link = m->next;
	if (zsm_ce_unmap_post(m))
		zsm_ce_cuda_close_map(m);
}

int zsm_ce_cuda_forget(struct zsm_ce_chan *ch)
{
	/* acquire: pairs with the release in zsm_ce_chan_forget; the ids
	 * are written before the head moves. */
	uint64_t head = atomic_load_explicit(&ch->win->forget_head,
					     memory_order_acquire);
	struct zsm_ce_ipc_map **link;
	int all = head - ch->gpu.forget_tail > ZSM_CE_FORGET, closed = 0;

	if (head == ch->gpu.forget_tail)
		return 0;
	if (!zsm_param_int(ZSM_P_CE_GPU_UNMAP)) {
		/* Kept until the comm closes: the notices are only read. */
		ch->gpu.forget_tail = head;
		return 0;
	}
	for (; ch->gpu.forget_tail < head; ch->gpu.forget_tail++) {
		uint64_t id =
			ch->win->forget[ch->gpu.forget_tail % ZSM_CE_FORGET];

		for (link = &ch->gpu.maps; *link;) {
			if (all || (*link)->reg_id == id) {
				zsm_ce_cuda_drop(link);
				closed++;
			} else {
				link = &(*link)->next;
			}
		}
		if (all)
			ch->gpu.forget_tail = head - 1;
	}
	return closed;
}

void zsm_ce_chan_forget(struct zsm_ce_chan *ch, const struct zsm_ce_gpu_mr *mr)
{
	uint64_t n;

	if (!ch || ch->side != ZSM_CE_SENDER)
		return;
	n = atomic_load_explicit(&ch->win->forget_head, memory_order_relaxed);
	ch->win->forget[n % ZSM_CE_FORGET] = mr->reg_id;
	/* release: pairs with the acquire in zsm_ce_cuda_forget. */
	atomic_store_explicit(&ch->win->forget_head, n + 1,
			      memory_order_release);
}

void zsm_ce_cuda_chan_fini(struct zsm_ce_chan *ch)
{
	if (!ch->gpu.maps && !ch->gpu.stream && !ch->gpu.bounce &&
	    !ch->gpu.pipe_n)
		return;
	if (ch->gpu.ctx)
		zsm_cuda_table()->ctx_set_current(ch->gpu.ctx);
	/* A copy in flight still reads the peer's memory: let it end. */
	while (ch->gpu.busy && !zsm_ce_cuda_copy_done(ch))
		;
	zsm_ce_cuda_pipe_drain(ch);
	ch->gpu.pipe_n = ch->gpu.pipe_new = 0;
	while (ch->gpu.maps)
		zsm_ce_cuda_drop(&ch->gpu.maps);
	zsm_ce_cuda_stream_drop(ch);
	if (ch->gpu.bounce) {
		zsm_cuda_table()->mem_host_unregister(ch->gpu.bounce);
		free(ch->gpu.bounce);
		ch->gpu.bounce = NULL;
	}
}
