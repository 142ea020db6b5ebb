/* SPDX-License-Identifier: MIT */
/* The slots the RMA tables v13 and v14 share (rma_shim.c). */
#ifndef ZSM_ABI_RMA_SHIM_H
#define ZSM_ABI_RMA_SHIM_H

#include "abi/nccl_rma.h"
#include "abi/shim.h"
#include "group/group.h"
#include "rma/rma.h"

_Static_assert(ZSM_RMA_SIGNAL_INC == NCCL_NET_SIGNAL_OP_INC &&
		       ZSM_RMA_SIGNAL_ADD == NCCL_NET_SIGNAL_OP_ADD,
	       "signal ops are NCCL's");
_Static_assert(ZSM_RMA_MR_FORCE_SO == NCCL_NET_MR_FLAG_FORCE_SO &&
		       ZSM_RMA_MR_NEVER_RESET ==
			       NCCL_NET_MR_FLAG_SIGNAL_NEVER_RESET,
	       "registration flags are NCCL's");

ncclResult_t zsm_rma_shim_init(void **ctx, uint64_t comm_id,
			       ncclDebugLogger_t logger);
ncclResult_t zsm_rma_shim_props(int dev, ncclNetProperties_v12_t *p);
ncclResult_t zsm_rma_shim_listen(void *ctx, int dev, void *handle,
				 void **listen);
ncclResult_t zsm_rma_shim_connect(void *ctx, void **handles, int nranks,
				  int rank, void *listen, void **coll);
ncclResult_t zsm_rma_shim_dereg(void *coll, void *mh);
ncclResult_t zsm_rma_shim_ctx_destroy(void *ctx);
ncclResult_t zsm_rma_shim_close_coll(void *coll);
ncclResult_t zsm_rma_shim_close_listen(void *listen);
ncclResult_t zsm_rma_shim_iput(void *ctx, int context, uint64_t src_off,
			       void *src_mh, size_t size, uint64_t dst_off,
			       void *dst_mh, uint32_t rank, void **request);
ncclResult_t zsm_rma_shim_iput_signal(void *ctx, int context,
				      uint64_t src_off, void *src_mh,
				      size_t size, uint64_t dst_off,
				      void *dst_mh, uint32_t rank,
				      uint64_t sig_off, void *sig_mh,
				      uint64_t sig_value, uint32_t sig_op,
				      void **request);
ncclResult_t zsm_rma_shim_iget(void *ctx, int context, uint64_t remote_off,
			       void *remote_mh, size_t size,
			       uint64_t local_off, void *local_mh,
			       uint32_t rank, void **request);
ncclResult_t zsm_rma_shim_iflush(void *ctx, int context, void *mh,
				 uint32_t rank, void **request);
ncclResult_t zsm_rma_shim_test(void *coll, void *request, int *done);
ncclResult_t zsm_rma_shim_progress(void *ctx);
ncclResult_t zsm_rma_shim_last_error(void *ctx, bool *failed);

/* Slots 0 to 5, and from deregMrSym on but createContext's and the data
 * ops that differ. */
#define ZSM_RMA_SHIM_SLOTS                                                    \
	.name = "zsm", .init = zsm_rma_shim_init, .devices = zsm_shim_devices, \
	.getProperties = zsm_rma_shim_props,                                  \
	.listen = zsm_rma_shim_listen, .connect = zsm_rma_shim_connect,       \
	.regMrSymDmaBuf = NULL, .deregMrSym = zsm_rma_shim_dereg,             \
	.destroyContext = zsm_rma_shim_ctx_destroy,                           \
	.closeColl = zsm_rma_shim_close_coll,                                 \
	.closeListen = zsm_rma_shim_close_listen,                             \
	.iput = zsm_rma_shim_iput, .iget = zsm_rma_shim_iget,                 \
	.iflush = zsm_rma_shim_iflush, .test = zsm_rma_shim_test,             \
	.queryLastError = zsm_rma_shim_last_error,                            \
	.finalize = zsm_shim_finalize

#endif
