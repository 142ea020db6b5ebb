/* SPDX-License-Identifier: MIT */
/*
 * Owns ce's use of CUDA: the driver table (loaded at run time), what regMr
 * records of a GPU buffer, the receiver's cache of the sender's opened
 * allocations, and the copies on the channel's own stream: cuMemcpyAsync
 * between two GPUs' memory runs on a copy engine, so no SM is used.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ce/ce.h"
#include "ce/ce_int.h"
#include "common/log.h"

static struct zsm_cuda_drv zsm_ce_cu;
static int zsm_ce_cu_state; /* 0 not tried, 1 ready, -errno unusable */

int zsm_ce_cuda_init(void)
{
	char why[256] = "";
	int ret;

	if (zsm_ce_cu_state)
		return zsm_ce_cu_state > 0 ? 0 : zsm_ce_cu_state;
	ret = zsm_cuda_drv_open(&zsm_ce_cu, why, sizeof(why));
	if (ret) {
		zsm_ce_cu_state = ret;
		ZSM_INFO("ce: no GPU buffers (%s): host memory only", why);
		return ret;
	}
	zsm_ce_cu_state = 1;
	ZSM_INFO("ce: CUDA driver %d, %d device(s): GPU buffers of "
		 "same-host comms move on copy engines",
		 zsm_ce_cu.driver_version, zsm_ce_cu.ndev);
	return 0;
}

int zsm_ce_cuda_ready(void)
{
	return zsm_ce_cu_state > 0;
}

int zsm_ce_cuda_mr_prepare(void *data, size_t size, struct zsm_ce_gpu_mr *out)
{
	zsm_cu_deviceptr p = (zsm_cu_deviceptr)(uintptr_t)data, base = 0;
	size_t len = 0;
	zsm_cu_result res;
	char why[256];

	memset(out, 0, sizeof(*out));
	res = zsm_ce_cu.mem_get_address_range(&base, &len, p);
	if (res != ZSM_CU_SUCCESS || p + size > base + len) {
		zsm_cuda_drv_fail(&zsm_ce_cu, res, why, sizeof(why),
				  "%zu bytes at %p are not one CUDA "
				  "allocation",
				  size, data);
		ZSM_WARN("ce: regMr: %s", why);
		return -EINVAL;
	}
	res = zsm_ce_cu.ipc_get_mem_handle(&out->ipc, base);
	if (res != ZSM_CU_SUCCESS) {
		zsm_cuda_drv_fail(&zsm_ce_cu, res, why, sizeof(why),
				  "cuIpcGetMemHandle of the allocation at "
				  "0x%llx",
				  base);
		ZSM_WARN("ce: regMr: %s (cuMem/VMM allocations are not "
			 "exported yet)",
			 why);
		return -EOPNOTSUPP;
	}
	res = zsm_ce_cu.pointer_get_attribute(&out->ctx,
					      ZSM_CU_POINTER_ATTRIBUTE_CONTEXT,
					      p);
	if (res != ZSM_CU_SUCCESS) {
		zsm_cuda_drv_fail(&zsm_ce_cu, res, why, sizeof(why),
				  "the context of %p", data);
		ZSM_WARN("ce: regMr: %s", why);
		return -EINVAL;
	}
	out->base = base;
	return 0;
}

/* The peer's allocation named by ipc, opened once per channel. */
static int zsm_ce_cuda_map(struct zsm_ce_chan *ch, const zsm_cu_ipc_handle *ipc,
			   zsm_cu_deviceptr *ptr)
{
	struct zsm_ce_ipc_map *m;
	zsm_cu_result res;
	char why[256];

	for (m = ch->maps; m; m = m->next) {
		if (!memcmp(&m->ipc, ipc, sizeof(*ipc))) {
			*ptr = m->ptr;
			return 0;
		}
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->ipc = *ipc;
	res = zsm_ce_cu.ipc_open_mem_handle(
		&m->ptr, *ipc, ZSM_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
	if (res != ZSM_CU_SUCCESS) {
		int err = zsm_cuda_drv_fail(&zsm_ce_cu, res, why, sizeof(why),
					    "cuIpcOpenMemHandle of pid %d's "
					    "buffer",
					    (int)ch->peer_pid);

		ZSM_WARN("ce: receive comm %u: %s", ch->comm->local_id, why);
		free(m);
		return err;
	}
	m->next = ch->maps;
	ch->maps = m;
	*ptr = m->ptr;
	return 0;
}

static int zsm_ce_cuda_stream(struct zsm_ce_chan *ch, zsm_cu_context ctx)
{
	zsm_cu_result res;
	char why[256];

	if (ch->gpu_stream && ch->gpu_ctx == ctx)
		return 0;
	if (ch->gpu_stream) {
		/* Another device's buffer on this comm: a stream there. */
		zsm_ce_cu.event_destroy(ch->gpu_event);
		zsm_ce_cu.stream_destroy(ch->gpu_stream);
		ch->gpu_stream = NULL;
		ch->gpu_event = NULL;
	}
	res = zsm_ce_cu.stream_create(&ch->gpu_stream,
				      ZSM_CU_STREAM_NON_BLOCKING);
	if (res == ZSM_CU_SUCCESS)
		res = zsm_ce_cu.event_create(&ch->gpu_event,
					     ZSM_CU_EVENT_DISABLE_TIMING);
	if (res != ZSM_CU_SUCCESS) {
		int err = zsm_cuda_drv_fail(&zsm_ce_cu, res, why, sizeof(why),
					    "a copy stream for comm %u",
					    ch->comm->local_id);

		ZSM_WARN("ce: %s", why);
		return err;
	}
	ch->gpu_ctx = ctx;
	return 0;
}

int zsm_ce_cuda_copy(struct zsm_ce_chan *ch, zsm_cu_context ctx,
		     zsm_cu_deviceptr dst, const zsm_cu_ipc_handle *ipc,
		     uint64_t off, size_t n)
{
	zsm_cu_deviceptr src = 0;
	zsm_cu_result res;
	char why[256];
	int ret;

	/* The proxy thread serves comms of every device: say which. */
	res = zsm_ce_cu.ctx_set_current(ctx);
	if (res != ZSM_CU_SUCCESS)
		return zsm_cuda_drv_fail(&zsm_ce_cu, res, NULL, 0, "set ctx");
	ret = zsm_ce_cuda_map(ch, ipc, &src);
	if (!ret)
		ret = zsm_ce_cuda_stream(ch, ctx);
	if (ret)
		return ret;
	src += off;
	res = zsm_ce_cu.memcpy_async(dst, src, n, ch->gpu_stream);
	if (res == ZSM_CU_SUCCESS)
		res = zsm_ce_cu.event_record(ch->gpu_event, ch->gpu_stream);
	if (res != ZSM_CU_SUCCESS) {
		ret = zsm_cuda_drv_fail(&zsm_ce_cu, res, why, sizeof(why),
					"copying %zu bytes GPU to GPU", n);
		ZSM_WARN("ce: receive comm %u: %s", ch->comm->local_id, why);
		return ret;
	}
	ch->gpu_busy = 1;
	return 0;
}

int zsm_ce_cuda_copy_done(struct zsm_ce_chan *ch)
{
	zsm_cu_result res = zsm_ce_cu.event_query(ch->gpu_event);
	char why[256];
	int ret;

	if (res == ZSM_CU_ERROR_NOT_READY)
		return 0;
	ch->gpu_busy = 0;
	if (res == ZSM_CU_SUCCESS)
		return 1;
	ret = zsm_cuda_drv_fail(&zsm_ce_cu, res, why, sizeof(why),
				"a GPU copy of comm %u", ch->comm->local_id);
	ZSM_WARN("ce: %s", why);
	return ret;
}

void zsm_ce_cuda_chan_fini(struct zsm_ce_chan *ch)
{
	struct zsm_ce_ipc_map *m, *next;

	if (!ch->maps && !ch->gpu_stream)
		return;
	if (ch->gpu_ctx)
		zsm_ce_cu.ctx_set_current(ch->gpu_ctx);
	/* A copy in flight still reads the peer's memory: let it end. */
	while (ch->gpu_busy && !zsm_ce_cuda_copy_done(ch))
		;
	for (m = ch->maps; m; m = next) {
		next = m->next;
		zsm_ce_cu.ipc_close_mem_handle(m->ptr);
		free(m);
	}
	ch->maps = NULL;
	if (ch->gpu_stream) {
		zsm_ce_cu.event_destroy(ch->gpu_event);
		zsm_ce_cu.stream_destroy(ch->gpu_stream);
		ch->gpu_stream = NULL;
	}
}
