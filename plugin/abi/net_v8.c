/* SPDX-License-Identifier: MIT */
/* ncclNetPlugin_v8 (NCCL 2.20+): int sizes, no contexts. */
#include <errno.h>

#include "abi/shim.h"
#include "common/log.h"

static ncclResult_t zsm_v8_init(ncclDebugLogger_t logger)
{
	return ZSM_R(zsm_init(NULL, 0, NCCL_NET_TRAFFIC_CLASS_UNDEF,
			      zsm_abi_log_sink_for(logger)));
}

/* v8's sizes are ints: a negative one is a bad argument, as a size past
 * maxP2pBytes is in the versions with size_t sizes. */
static int zsm_v8_bad_size(const char *call, int size)
{
	ZSM_WARN("%s of %d bytes", call, size);
	return -EINVAL;
}

static ncclResult_t zsm_v8_isend(void *comm, void *data, int size, int tag,
				 void *mh, void **request)
{
	if (size < 0) {
		if (request)
			*request = NULL;
		return ZSM_R(zsm_v8_bad_size("isend", size));
	}
	return ZSM_R(zsm_isend(comm, data, (size_t)size, tag, mh, request));
}

static ncclResult_t zsm_v8_irecv(void *comm, int n, void **data, int *sizes,
				 int *tags, void **mhs, void **request)
{
	size_t wide[ZSM_MAX_RECVS] = {0};

	/* n, the arrays and request are checked there, with a message. */
	if (n < 1 || n > ZSM_MAX_RECVS || !sizes || !request)
		return ZSM_R(zsm_irecv(comm, n, data, sizes ? wide : NULL,
				       tags, mhs, request));
	*request = NULL;
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 0)
			return ZSM_R(zsm_v8_bad_size("irecv", sizes[i]));
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
