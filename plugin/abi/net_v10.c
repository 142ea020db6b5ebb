/* SPDX-License-Identifier: MIT */
/* ncclNetPlugin_v10 (NCCL 2.26+): profiler callback, per-connect config. */
#include "abi/shim.h"

static ncclResult_t zsm_v10_init(ncclDebugLogger_t logger,
				 ncclProfilerCallback_t prof)
{
	(void)prof;
	return ZSM_R(zsm_init(NULL, 0, NCCL_NET_TRAFFIC_CLASS_UNDEF,
			      zsm_abi_log_sink_for(logger)));
}

static ncclResult_t zsm_v10_connect(int dev, ncclNetCommConfig_t *config,
				    void *handle, void **send_comm,
				    ncclNetDeviceHandle_t **dev_comm)
{
	(void)config;
	return zsm_shim_connect_legacy(dev, handle, send_comm, dev_comm);
}

ZSM_EXPORT const ncclNet_v10_t ncclNetPlugin_v10 = {
	.name = "zsm",
	.init = zsm_v10_init,
	.devices = zsm_shim_devices,
	.getProperties = zsm_shim_props_v9,
	.listen = zsm_shim_listen_legacy,
	.connect = zsm_v10_connect,
	.isend = zsm_shim_isend,
	.irecv = zsm_shim_irecv,
	ZSM_SHIM_COMMON_SLOTS,
	.makeVDevice = zsm_shim_make_vdevice_v9,
};
