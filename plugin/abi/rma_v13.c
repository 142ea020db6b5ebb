/* SPDX-License-Identifier: MIT */
/* ncclRmaPlugin_v13 (NCCL 2.30, GIN v13's layout): device and GIN handles
 * out of createContext and the registrations (none: no device code),
 * every signal strong. */
#include "abi/rma_shim.h"

static ncclResult_t zsm_rma_v13_create(void *coll, ncclGinConfig_v13_t *cfg,
				       void **ctx,
				       ncclNetDeviceHandle_t **dev)
{
	if (dev)
		*dev = NULL;
	return ZSM_R(zsm_rma_ctx_create(coll, cfg ? cfg->nContexts : 1, ctx));
}

static ncclResult_t zsm_rma_v13_reg(void *coll, void *data, size_t size,
				    int type, uint64_t flags, void **mh,
				    void **gin)
{
	if (gin)
		*gin = NULL;
	return ZSM_R(zsm_rma_reg_sym(coll, data, size, type, flags, mh));
}

ZSM_EXPORT const ncclRma_v13_t ncclRmaPlugin_v13 = {
	ZSM_RMA_SHIM_SLOTS,
	.createContext = zsm_rma_v13_create,
	.regMrSym = zsm_rma_v13_reg,
	.iputSignal = zsm_rma_shim_iput_signal,
	.ginProgress = zsm_rma_shim_progress,
};
