/* SPDX-License-Identifier: MIT */
/* ncclRmaPlugin_v14 (NCCL 2.30.7+): the RMA proxy's table. */
#include "abi/rma_shim.h"

static ncclResult_t zsm_rma_v14_create(void *coll, ncclRmaConfig_v14_t *cfg,
				       void **ctx)
{
	return ZSM_R(zsm_rma_ctx_create(coll, cfg ? cfg->nContexts : 1, ctx));
}

static ncclResult_t zsm_rma_v14_reg(void *coll, void *data, size_t size,
				    int type, uint64_t flags, void **mh)
{
	return ZSM_R(zsm_rma_reg_sym(coll, data, size, type, flags, mh));
}

/* Every signal is strong: a weak one is a free subset of it. */
static ncclResult_t zsm_rma_v14_iput_signal(
	void *ctx, int context, uint64_t src_off, void *src_mh, size_t size,
	uint64_t dst_off, void *dst_mh, uint32_t rank, uint64_t sig_off,
	void *sig_mh, uint64_t sig_value, uint32_t sig_op, bool strong,
	void **request)
{
	(void)strong;
	return zsm_rma_shim_iput_signal(ctx, context, src_off, src_mh, size,
					dst_off, dst_mh, rank, sig_off, sig_mh,
					sig_value, sig_op, request);
}

ZSM_EXPORT const ncclRma_v14_t ncclRmaPlugin_v14 = {
	ZSM_RMA_SHIM_SLOTS,
	.createContext = zsm_rma_v14_create,
	.regMrSym = zsm_rma_v14_reg,
	.iputSignal = zsm_rma_v14_iput_signal,
	.rmaProgress = zsm_rma_shim_progress,
};
