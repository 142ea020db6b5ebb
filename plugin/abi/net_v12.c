/* SPDX-License-Identifier: MIT */
/* ncclNetPlugin_v12 (NCCL 2.30.3+): v11 with 8-way vNICs, rail/plane ids. */
#include "abi/shim.h"

ZSM_EXPORT const ncclNet_v12_t ncclNetPlugin_v12 = {
	.name = "zsm",
	.init = zsm_shim_init_v11,
	.devices = zsm_shim_devices,
	.getProperties = zsm_shim_props_v12,
	.listen = zsm_shim_listen_v11,
	.connect = zsm_shim_connect_v11,
	.isend = zsm_shim_isend,
	.irecv = zsm_shim_irecv,
	ZSM_SHIM_COMMON_SLOTS,
	.makeVDevice = zsm_shim_make_vdevice_v12,
	.finalize = zsm_shim_finalize,
	.setNetAttr = zsm_shim_set_net_attr,
};
