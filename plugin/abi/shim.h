/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the per-version tables: each vN file converts its
 * arguments and calls the core; properties are copied down from the newest
 * struct so every field of every version is written.
 */
#ifndef ZSM_ABI_SHIM_H
#define ZSM_ABI_SHIM_H

#include "abi/nccl_net.h"
#include "entry/entry.h"

/* What the core restates of NCCL's constants must be NCCL's. */
_Static_assert(ZSM_MEM_HOST == NCCL_PTR_HOST && ZSM_MEM_CUDA == NCCL_PTR_CUDA &&
		       ZSM_MEM_DMABUF == NCCL_PTR_DMABUF,
	       "memory types are NCCL's bits");
_Static_assert(ZSM_NCCL_MAX_REQUESTS == NCCL_NET_MAX_REQUESTS,
	       "requests per comm are NCCL's");
_Static_assert(ZSM_HANDLE_BYTES == NCCL_NET_HANDLE_MAXSIZE,
	       "the connection handle is NCCL's size");
_Static_assert(ZSM_ID_UNDEF == NCCL_NET_ID_UNDEF, "an unset id is NCCL's");

#define ZSM_EXPORT __attribute__((visibility("default")))
#define ZSM_R(expr) zsm_nccl_result(expr)

/*
 * The ncclResult_t for an internal -errno: the user's mistakes (a send
 * larger than its receive, a bad setting, a handle used after close, a
 * call in a forked child) are ncclInvalidUsage, a bad argument
 * ncclInvalidArgument, whatever the peer or the link did ncclRemoteError,
 * the rest the system's.  docs/design.md ("Error codes") says which
 * condition of which entry point gives which; every slot of every table
 * returns through here, so a table version never changes the code.
 */
ncclResult_t zsm_nccl_result(int err);

/* The log sink that writes to NCCL's logger (NULL for a NULL logger). */
zsm_log_sink_fn zsm_abi_log_sink_for(ncclDebugLogger_t logger);

ncclResult_t zsm_shim_props_v8(int dev, ncclNetProperties_v8_t *p);
ncclResult_t zsm_shim_props_v9(int dev, ncclNetProperties_v9_t *p);
ncclResult_t zsm_shim_props_v11(int dev, ncclNetProperties_v11_t *p);
ncclResult_t zsm_shim_props_v12(int dev, ncclNetProperties_v12_t *p);

/* Slots whose signature is the same in every version. */
ncclResult_t zsm_shim_devices(int *ndev);
ncclResult_t zsm_shim_make_vdevice_v9(int *d, ncclNetVDeviceProps_v9_t *p);
ncclResult_t zsm_shim_make_vdevice_v12(int *d, ncclNetVDeviceProps_v12_t *p);
ncclResult_t zsm_shim_accept(void *listen_comm, void **recv_comm,
			     ncclNetDeviceHandle_t **dev_comm);
ncclResult_t zsm_shim_reg_mr(void *comm, void *data, size_t size, int type,
			     void **mh);
ncclResult_t zsm_shim_reg_mr_dmabuf(void *comm, void *data, size_t size,
				    int type, uint64_t offset, int fd,
				    void **mh);
ncclResult_t zsm_shim_dereg_mr(void *comm, void *mh);
ncclResult_t zsm_shim_iflush(void *recv_comm, int n, void **data, int *sizes,
			     void **mhs, void **request);
ncclResult_t zsm_shim_test(void *request, int *done, int *sizes);
ncclResult_t zsm_shim_close_send(void *comm);
ncclResult_t zsm_shim_close_recv(void *comm);
ncclResult_t zsm_shim_close_listen(void *comm);
ncclResult_t zsm_shim_listen_legacy(int dev, void *handle, void **listen_comm);
ncclResult_t zsm_shim_connect_legacy(int dev, void *handle, void **send_comm,
				     ncclNetDeviceHandle_t **dev_comm);
ncclResult_t zsm_shim_isend(void *comm, void *data, size_t size, int tag,
			    void *mh, void *phandle, void **request);
ncclResult_t zsm_shim_irecv(void *comm, int n, void **data, size_t *sizes,
			    int *tags, void **mhs, void **phandles,
			    void **request);
ncclResult_t zsm_shim_init_v11(void **ctx, uint64_t comm_id,
			       ncclNetCommConfig_t *config,
			       ncclDebugLogger_t logger,
			       ncclProfilerCallback_t prof);
ncclResult_t zsm_shim_listen_v11(void *ctx, int dev, void *handle,
				 void **listen_comm);
ncclResult_t zsm_shim_connect_v11(void *ctx, int dev, void *handle,
				  void **send_comm,
				  ncclNetDeviceHandle_t **dev_comm);
ncclResult_t zsm_shim_finalize(void *ctx);
ncclResult_t zsm_shim_set_net_attr(void *ctx, ncclNetAttr_t *attr);

/* The slots every table fills the same way, from regMr on. */
#define ZSM_SHIM_COMMON_SLOTS                                                 \
	.accept = zsm_shim_accept, .regMr = zsm_shim_reg_mr,                  \
	.regMrDmaBuf = zsm_shim_reg_mr_dmabuf, .deregMr = zsm_shim_dereg_mr,  \
	.iflush = zsm_shim_iflush, .test = zsm_shim_test,                     \
	.closeSend = zsm_shim_close_send, .closeRecv = zsm_shim_close_recv,   \
	.closeListen = zsm_shim_close_listen, .getDeviceMr = NULL,            \
	.irecvConsumed = NULL

#endif
