/* SPDX-License-Identifier: MIT */
/* ncclNetPlugin_v11 (NCCL 2.28.3+): per-communicator contexts, finalize. */
#include "abi/shim.h"

ZSM_EXPORT const ncclNet_v11_t ncclNetPlugin_v11 = {
	.name = "zsm",
	.init = zsm_shim_init_v11,
	.devices = zsm_shim_devices,
	.getProperties = zsm_shim_props_v11,
	.listen = zsm_shim_listen_v11,
	.connect = zsm_shim_connect_v11,
	.isend = zsm_shim_isend,
	.irecv = zsm_shim_irecv,
	ZSM_SHIM_COMMON_SLOTS,
	.makeVDevice = zsm_shim_make_vdevice_v9,
	.finalize = zsm_shim_finalize,
	.setNetAttr = zsm_shim_set_net_attr,
};
