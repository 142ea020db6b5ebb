/* SPDX-License-Identifier: MIT */
/* ncclNetPlugin_v8 (NCCL 2.20+): int sizes, no contexts. */
#include "abi/shim.h"

static ncclResult_t zsm_v8_init(ncclDebugLogger_t logger)
{
	return ZSM_R(zsm_init(NULL, 0, NCCL_NET_TRAFFIC_CLASS_UNDEF,
			      zsm_abi_log_sink_for(logger)));
}

static ncclResult_t zsm_v8_isend(void *comm, void *data, int size, int tag,
				 void *mh, void **request)
{
	if (size < 0)
		return ncclInternalError;
	return ZSM_R(zsm_isend(comm, data, (size_t)size, tag, mh, request));
}

static ncclResult_t zsm_v8_irecv(void *comm, int n, void **data, int *sizes,
				 int *tags, void **mhs, void **request)
{
	size_t wide[ZSM_MAX_RECVS] = {0};

	*request = NULL;
	if (n < 1 || n > ZSM_MAX_RECVS) /* refused there, with a message */
		return ZSM_R(zsm_irecv(comm, n, data, wide, tags, mhs, request));
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 0)
			return ncclInternalError;
		wide[i] = (size_t)sizes[i];
	}
	return ZSM_R(zsm_irecv(comm, n, data, wide, tags, mhs, request));
}

ZSM_EXPORT const ncclNet_v8_t ncclNetPlugin_v8 = {
	.name = "zsm",
	.init = zsm_v8_init,
	.devices = zsm_shim_devices,
	.getProperties = zsm_shim_props_v8,
	.listen = zsm_shim_listen_legacy,
	.connect = zsm_shim_connect_legacy,
	.isend = zsm_v8_isend,
	.irecv = zsm_v8_irecv,
	ZSM_SHIM_COMMON_SLOTS,
};
