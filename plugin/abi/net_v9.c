/* SPDX-License-Identifier: MIT */
/* ncclNetPlugin_v9 (NCCL 2.24+): size_t sizes, virtual devices. */
#include "abi/shim.h"

static ncclResult_t zsm_v9_init(ncclDebugLogger_t logger)
{
	return ZSM_R(zsm_init(NULL, 0, NCCL_NET_TRAFFIC_CLASS_UNDEF,
			      zsm_abi_log_sink_for(logger)));
}

static ncclResult_t zsm_v9_isend(void *comm, void *data, size_t size, int tag,
				 void *mh, void **request)
{
	return ZSM_R(zsm_isend(comm, data, size, tag, mh, request));
}

static ncclResult_t zsm_v9_irecv(void *comm, int n, void **data, size_t *sizes,
				 int *tags, void **mhs, void **request)
{
	return ZSM_R(zsm_irecv(comm, n, data, sizes, tags, mhs, request));
}

ZSM_EXPORT const ncclNet_v9_t ncclNetPlugin_v9 = {
	.name = "zsm",
	.init = zsm_v9_init,
	.devices = zsm_shim_devices,
	.getProperties = zsm_shim_props_v9,
	.listen = zsm_shim_listen_legacy,
	.connect = zsm_shim_connect_legacy,
	.isend = zsm_v9_isend,
	.irecv = zsm_v9_irecv,
	ZSM_SHIM_COMMON_SLOTS,
	.makeVDevice = zsm_shim_make_vdevice_v9,
};
