/* SPDX-License-Identifier: MIT */
/* Owns the slots the RMA tables share: argument checks NCCL's types need,
 * and the calls into plugin/rma. */
#include <string.h>

#include "abi/rma_shim.h"

ncclResult_t zsm_rma_shim_init(void **ctx, uint64_t comm_id,
			       ncclDebugLogger_t logger)
{
	int ret = zsm_init(ctx, comm_id, NCCL_NET_TRAFFIC_CLASS_UNDEF,
			   zsm_abi_log_sink_for(logger));

	/* Off (ZSM_RMA=0): refused here, before NCCL counts on us. */
	if (!ret) {
		ret = zsm_group_enabled();
		if (ret) {
			zsm_finalize(*ctx);
			*ctx = NULL;
		}
	}
	return ZSM_R(ret);
}

ncclResult_t zsm_rma_shim_props(int dev, ncclNetProperties_v12_t *p)
{
	ncclResult_t r = zsm_shim_props_v12(dev, p);
	struct zsm_props z;
	int ret;

	if (r != ncclSuccess)
		return r;
	ret = zsm_get_properties(dev, &z);
	if (ret)
		return ZSM_R(ret);
	/* NCCL's proxy drives an RMA plugin; windows in host memory, and
	 * GPU memory wherever the driver is (no dma-buf: NCCL then
	 * registers GPU windows with regMrSym). */
	p->netDeviceType = NCCL_NET_DEVICE_GIN_PROXY;
	p->ptrSupport = NCCL_PTR_HOST |
			((z.window_ptr_support & ZSM_MEM_CUDA) ? NCCL_PTR_CUDA
								: 0);
	return ncclSuccess;
}

ncclResult_t zsm_rma_shim_listen(void *ctx, int dev, void *handle,
				 void **listen)
{
	return ZSM_R(zsm_group_listen(ctx, dev, handle, listen));
}

ncclResult_t zsm_rma_shim_connect(void *ctx, void **handles, int nranks,
				  int rank, void *listen, void **coll)
{
	return ZSM_R(zsm_group_connect(ctx, handles, nranks, rank, listen, coll));
}

ncclResult_t zsm_rma_shim_dereg(void *coll, void *mh)
{
	return ZSM_R(zsm_group_dereg_sym(coll, mh));
}

ncclResult_t zsm_rma_shim_ctx_destroy(void *ctx)
{
	return ZSM_R(zsm_rma_ctx_destroy(ctx));
}

ncclResult_t zsm_rma_shim_close_coll(void *coll)
{
	return ZSM_R(zsm_group_close(coll));
}

ncclResult_t zsm_rma_shim_close_listen(void *listen)
{
	return ZSM_R(zsm_group_close_listen(listen));
}

ncclResult_t zsm_rma_shim_iput(void *ctx, int context, uint64_t src_off,
			       void *src_mh, size_t size, uint64_t dst_off,
			       void *dst_mh, uint32_t rank, void **request)
{
	return ZSM_R(zsm_rma_iput(ctx, context, src_off, src_mh, size,
				  dst_off, dst_mh, rank, NULL, request));
}

ncclResult_t zsm_rma_shim_iput_signal(void *ctx, int context,
				      uint64_t src_off, void *src_mh,
				      size_t size, uint64_t dst_off,
				      void *dst_mh, uint32_t rank,
				      uint64_t sig_off, void *sig_mh,
				      uint64_t sig_value, uint32_t sig_op,
				      void **request)
{
	struct zsm_rma_signal sig = {.sym = sig_mh, .off = sig_off,
				     .value = sig_value, .op = sig_op};

	return ZSM_R(zsm_rma_iput(ctx, context, src_off, src_mh, size,
				  dst_off, dst_mh, rank, &sig, request));
}

ncclResult_t zsm_rma_shim_iget(void *ctx, int context, uint64_t remote_off,
			       void *remote_mh, size_t size,
			       uint64_t local_off, void *local_mh,
			       uint32_t rank, void **request)
{
	return ZSM_R(zsm_rma_iget(ctx, context, remote_off, remote_mh, size,
				  local_off, local_mh, rank, request));
}

ncclResult_t zsm_rma_shim_iflush(void *ctx, int context, void *mh,
				 uint32_t rank, void **request)
{
	return ZSM_R(zsm_rma_iflush(ctx, context, mh, rank, request));
}

ncclResult_t zsm_rma_shim_test(void *coll, void *request, int *done)
{
	return ZSM_R(zsm_rma_test(coll, request, done));
}

ncclResult_t zsm_rma_shim_progress(void *ctx)
{
	/* zsm's thread drives every transfer, but NCCL's RMA proxy calls
	 * this in its loop, also while its streams wait on signal words
	 * and call nothing: a pass here lands what came without waiting
	 * for our thread's next look (and is the only driver with
	 * ZSM_PROXY=inline). */
	(void)ctx;
	return ZSM_R(zsm_progress());
}

ncclResult_t zsm_rma_shim_last_error(void *ctx, bool *failed)
{
	int f = 0, ret;

	/* A NULL failed is refused there, with a message. */
	ret = zsm_rma_last_error(ctx, failed ? &f : NULL);
	if (failed)
		*failed = f != 0;
	return ZSM_R(ret);
}
