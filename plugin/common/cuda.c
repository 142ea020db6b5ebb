/* SPDX-License-Identifier: MIT */
/* Owns the process's CUDA driver table and what its devices can do. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/cuda.h"
#include "common/log.h"

static struct zsm_cuda_drv zsm_cuda_drv_table;
static int zsm_cuda_state; /* 0 not tried, 1 ready, -errno unusable */

int zsm_cuda_init(void)
{
	char why[256] = "";
	int ret;

	if (zsm_cuda_state)
		return zsm_cuda_state > 0 ? 0 : zsm_cuda_state;
	ret = zsm_cuda_drv_open(&zsm_cuda_drv_table, why, sizeof(why));
	if (ret) {
		zsm_cuda_state = ret;
		ZSM_INFO("cuda: no GPU buffers (%s): host memory only", why);
		return ret;
	}
	zsm_cuda_state = 1;
	ZSM_INFO("cuda: driver %d, %d device(s): GPU buffers can be "
		 "taken",
		 zsm_cuda_drv_table.driver_version, zsm_cuda_drv_table.ndev);
	return 0;
}

int zsm_cuda_ready(void)
{
	return zsm_cuda_state > 0;
}

const struct zsm_cuda_drv *zsm_cuda_table(void)
{
	return &zsm_cuda_drv_table;
}

int zsm_cuda_default_ctx(zsm_cu_context *ctx, char *why, size_t why_len)
{
	if (!zsm_cuda_ready()) {
		snprintf(why, why_len, "no CUDA driver");
		return -ENODEV;
	}
	if (!zsm_cuda_drv_table.ctx &&
	    zsm_cuda_drv_use_device(&zsm_cuda_drv_table, 0, why, why_len))
		return -EIO;
	*ctx = zsm_cuda_drv_table.ctx;
	return 0;
}

int zsm_cuda_lazy(void)
{
	return zsm_cuda_state > 0 && zsm_cuda_drv_table.lazy_loading;
}

int zsm_cuda_min_cc(void)
{
	int lowest = 0;

	for (int i = 0; zsm_cuda_ready() && i < zsm_cuda_drv_table.ndev; i++) {
		zsm_cu_device d;
		int major, minor;

		if (zsm_cuda_drv_table.device_get(&d, i) != ZSM_CU_SUCCESS ||
		    zsm_cuda_drv_table.device_get_attribute(
			    &major,
			    ZSM_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
			    d) != ZSM_CU_SUCCESS ||
		    zsm_cuda_drv_table.device_get_attribute(
			    &minor,
			    ZSM_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
			    d) != ZSM_CU_SUCCESS)
			return 0;
		if (!lowest || major * 10 + minor < lowest)
			lowest = major * 10 + minor;
	}
	return lowest;
}

int zsm_cuda_ptr_device(const void *p, int *dev)
{
	zsm_cu_result res;

	if (!zsm_cuda_ready())
		return -ENODEV;
	res = zsm_cuda_drv_table.pointer_get_attribute(
		dev, ZSM_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
		(zsm_cu_deviceptr)(uintptr_t)p);
	if (res != ZSM_CU_SUCCESS)
		return zsm_cuda_drv_fail(&zsm_cuda_drv_table, res, NULL, 0,
					 "the device of %p", p);
	return 0;
}

int zsm_cuda_ptr_is_device(const void *p)
{
	unsigned int type = 0;

	/* Memory the driver never saw fails the query: host memory. */
	if (!zsm_cuda_ready() ||
	    zsm_cuda_drv_table.pointer_get_attribute(
		    &type, ZSM_CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
		    (zsm_cu_deviceptr)(uintptr_t)p) != ZSM_CU_SUCCESS)
		return 0;
	return type == ZSM_CU_MEMORYTYPE_DEVICE;
}

int zsm_cuda_dmabuf_ok(void)
{
	if (!zsm_cuda_ready() || !zsm_cuda_drv_table.mem_get_handle_range)
		return 0;
	for (int i = 0; i < zsm_cuda_drv_table.ndev; i++) {
		zsm_cu_device d;
		int ok = 0;

		if (zsm_cuda_drv_table.device_get(&d, i) != ZSM_CU_SUCCESS ||
		    zsm_cuda_drv_table.device_get_attribute(
			    &ok, ZSM_CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
			    d) != ZSM_CU_SUCCESS ||
		    !ok)
			return 0;
	}
	return zsm_cuda_drv_table.ndev > 0;
}

int zsm_cuda_dmabuf_get(const void *p, size_t size, int *fd,
			   void **base, uint64_t *offset)
{
	/* The driver exports whole host pages, like NCCL does. */
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)p & ~(page - 1);
	uintptr_t end = ((uintptr_t)p + size + page - 1) & ~(page - 1);
	zsm_cu_result res;
	char why[320];
	int out = -1, ret;

	*fd = -1;
	if (!zsm_cuda_ready() || !zsm_cuda_drv_table.mem_get_handle_range)
		return -ENOSYS;
	res = zsm_cuda_drv_table.mem_get_handle_range(
		&out, (zsm_cu_deviceptr)start, end - start,
		ZSM_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	if (res != ZSM_CU_SUCCESS) {
		ret = zsm_cuda_drv_fail(&zsm_cuda_drv_table, res, why, sizeof(why),
					"a dma-buf of %zu bytes at %p", size,
					p);
		/* The caller falls back to a CUDA registration. */
		ZSM_INFO("cuda: %s", why);
		return ret;
	}
	*fd = out;
	*base = (void *)start;
	*offset = (uintptr_t)p - start;
	return 0;
}

void zsm_cuda_use_table(const struct zsm_cuda_drv *table)
{
	memset(&zsm_cuda_drv_table, 0, sizeof(zsm_cuda_drv_table));
	zsm_cuda_state = 0;
	if (!table)
		return;
	zsm_cuda_drv_table = *table;
	zsm_cuda_state = 1;
}

