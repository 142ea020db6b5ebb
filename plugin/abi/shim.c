/* SPDX-License-Identifier: MIT */
/* Owns the argument conversions every ncclNetPlugin_vN table shares. */
#include <errno.h>
#include <string.h>

#include "abi/shim.h"
#include "common/log.h"

ncclResult_t zsm_nccl_result(int err)
{
	switch (err) {
	case 0:
		return ncclSuccess;
	case -EMSGSIZE: /* a send larger than the posted receive */
	case -EDOM:	/* a ZSM_* setting the user must fix */
	case -EBADF:	/* a handle used after its close, or twice */
	case -ECHILD:	/* a call in a child forked after init */
		return ncclInvalidUsage;
	case -EINVAL: /* an argument that cannot be right */
		return ncclInvalidArgument;
	case -EPROTO:	    /* the peer broke the wire protocol */
	case -ECONNRESET:   /* the peer or the link to it is gone */
	case -ECONNREFUSED: /* nobody listens where the handle says */
	case -ECANCELED:
	case -ETIMEDOUT:
	case -EBADMSG: /* a message altered in flight (ZSM_CHECKSUM) */
		return ncclRemoteError;
	default:
		return ncclSystemError;
	}
}


static int zsm_shim_no_props(void)
{
	ZSM_WARN("getProperties: props is NULL");
	return -EINVAL;
}

/* vProps: the devices NCCL fused into dev, or dev alone. */
static void zsm_shim_vprops(int *ndevs, int *devs, size_t room,
			    const struct zsm_props *z, int dev)
{
	memset(devs, 0, room * sizeof(*devs));
	if (z->nfused < 2 || (size_t)z->nfused > room) {
		*ndevs = 1;
		devs[0] = dev;
		return;
	}
	*ndevs = z->nfused;
	for (int k = 0; k < z->nfused; k++)
		devs[k] = z->fused[k];
}

/* makeVDevice: NCCL's device list, fused; v9 to v11 fuse 4 at most, v12
 * 8 (the size of their vProps). */
ncclResult_t zsm_shim_make_vdevice_v9(int *d, ncclNetVDeviceProps_v9_t *p)
{
	return ZSM_R(zsm_make_vdevice(p ? p->devs : NULL, p ? p->ndevs : 0,
				      NCCL_NET_MAX_DEVS_PER_NIC_V11, d));
}

ncclResult_t zsm_shim_make_vdevice_v12(int *d, ncclNetVDeviceProps_v12_t *p)
{
	return ZSM_R(zsm_make_vdevice(p ? p->devs : NULL, p ? p->ndevs : 0,
				      NCCL_NET_MAX_DEVS_PER_NIC_V12, d));
}

#define ZSM_COPY_COMMON(p, z)                                                 \
	do {                                                                  \
		(p)->name = (z).name;                                         \
		(p)->pciPath = (z).pci_path;                                  \
		(p)->guid = (z).guid;                                         \
		(p)->ptrSupport = (z).ptr_support;                            \
		(p)->regIsGlobal = (z).reg_is_global;                         \
		(p)->speed = (z).speed_mbps;                                  \
		(p)->port = (z).port;                                         \
		(p)->latency = (z).latency_us;                                \
		(p)->maxComms = (z).max_comms;                                \
		(p)->maxRecvs = (z).max_recvs;                                \
		(p)->netDeviceType = NCCL_NET_DEVICE_HOST;                    \
		(p)->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;      \
	} while (0)

#define ZSM_COPY_V9(p, z, dev)                                                \
	do {                                                                  \
		ZSM_COPY_COMMON(p, z);                                        \
		(p)->forceFlush = (z).force_flush;                            \
		zsm_shim_vprops(&(p)->vProps.ndevs, (p)->vProps.devs,         \
				sizeof((p)->vProps.devs) /                    \
					sizeof((p)->vProps.devs[0]),          \
				&(z), (dev));                                 \
		(p)->maxP2pBytes = (z).max_p2p_bytes;                         \
		(p)->maxCollBytes = (z).max_coll_bytes;                       \
	} while (0)

ncclResult_t zsm_shim_props_v8(int dev, ncclNetProperties_v8_t *p)
{
	struct zsm_props z;
	int ret = p ? zsm_get_properties(dev, &z) : zsm_shim_no_props();

	if (ret)
		return ZSM_R(ret);
	memset(p, 0, sizeof(*p));
	ZSM_COPY_COMMON(p, z);
	return ncclSuccess;
}

ncclResult_t zsm_shim_props_v9(int dev, ncclNetProperties_v9_t *p)
{
	struct zsm_props z;
	int ret = p ? zsm_get_properties(dev, &z) : zsm_shim_no_props();

	if (ret)
		return ZSM_R(ret);
	memset(p, 0, sizeof(*p));
	ZSM_COPY_V9(p, z, dev);
	return ncclSuccess;
}

ncclResult_t zsm_shim_props_v11(int dev, ncclNetProperties_v11_t *p)
{
	struct zsm_props z;
	int ret = p ? zsm_get_properties(dev, &z) : zsm_shim_no_props();

	if (ret)
		return ZSM_R(ret);
	memset(p, 0, sizeof(*p));
	ZSM_COPY_V9(p, z, dev);
	p->maxMultiRequestSize = z.max_multi_request_size;
	return ncclSuccess;
}

ncclResult_t zsm_shim_props_v12(int dev, ncclNetProperties_v12_t *p)
{
	struct zsm_props z;
	int ret = p ? zsm_get_properties(dev, &z) : zsm_shim_no_props();

	if (ret)
		return ZSM_R(ret);
	memset(p, 0, sizeof(*p));
	ZSM_COPY_V9(p, z, dev);
	p->maxMultiRequestSize = z.max_multi_request_size;
	p->railId = z.rail_id;
	p->planeId = z.plane_id;
	return ncclSuccess;
}

ncclResult_t zsm_shim_devices(int *ndev)
{
	return ZSM_R(zsm_devices(ndev));
}

ncclResult_t zsm_shim_accept(void *listen_comm, void **recv_comm,
			     ncclNetDeviceHandle_t **dev_comm)
{
	(void)dev_comm; /* host plugin: left untouched */
	return ZSM_R(zsm_accept(listen_comm, recv_comm));
}

ncclResult_t zsm_shim_reg_mr(void *comm, void *data, size_t size, int type,
			     void **mh)
{
	return ZSM_R(zsm_reg_mr(comm, data, size, type, mh));
}

ncclResult_t zsm_shim_reg_mr_dmabuf(void *comm, void *data, size_t size,
				    int type, uint64_t offset, int fd,
				    void **mh)
{
	return ZSM_R(zsm_reg_mr_dmabuf(comm, data, size, type, offset, fd, mh));
}

ncclResult_t zsm_shim_dereg_mr(void *comm, void *mh)
{
	return ZSM_R(zsm_dereg_mr(comm, mh));
}

ncclResult_t zsm_shim_iflush(void *recv_comm, int n, void **data, int *sizes,
			     void **mhs, void **request)
{
	return ZSM_R(zsm_iflush(recv_comm, n, data, sizes, mhs, request));
}

ncclResult_t zsm_shim_test(void *request, int *done, int *sizes)
{
	return ZSM_R(zsm_test(request, done, sizes));
}

ncclResult_t zsm_shim_close_send(void *comm)
{
	return ZSM_R(zsm_close_send(comm));
}

ncclResult_t zsm_shim_close_recv(void *comm)
{
	return ZSM_R(zsm_close_recv(comm));
}

ncclResult_t zsm_shim_close_listen(void *comm)
{
	return ZSM_R(zsm_close_listen(comm));
}

ncclResult_t zsm_shim_listen_legacy(int dev, void *handle, void **listen_comm)
{
	return ZSM_R(zsm_listen(NULL, dev, handle, listen_comm));
}

ncclResult_t zsm_shim_connect_legacy(int dev, void *handle, void **send_comm,
				     ncclNetDeviceHandle_t **dev_comm)
{
	(void)dev_comm;
	return ZSM_R(zsm_connect(NULL, dev, handle, send_comm));
}

ncclResult_t zsm_shim_isend(void *comm, void *data, size_t size, int tag,
			    void *mh, void *phandle, void **request)
{
	(void)phandle; /* no profiler events yet */
	return ZSM_R(zsm_isend(comm, data, size, tag, mh, request));
}

ncclResult_t zsm_shim_irecv(void *comm, int n, void **data, size_t *sizes,
			    int *tags, void **mhs, void **phandles,
			    void **request)
{
	(void)phandles;
	return ZSM_R(zsm_irecv(comm, n, data, sizes, tags, mhs, request));
}

ncclResult_t zsm_shim_init_v11(void **ctx, uint64_t comm_id,
			       ncclNetCommConfig_t *config,
			       ncclDebugLogger_t logger,
			       ncclProfilerCallback_t prof)
{
	(void)prof;
	return ZSM_R(zsm_init(ctx, comm_id,
			      config ? config->trafficClass
				     : NCCL_NET_TRAFFIC_CLASS_UNDEF,
			      zsm_abi_log_sink_for(logger)));
}

ncclResult_t zsm_shim_listen_v11(void *ctx, int dev, void *handle,
				 void **listen_comm)
{
	return ZSM_R(zsm_listen(ctx, dev, handle, listen_comm));
}

ncclResult_t zsm_shim_connect_v11(void *ctx, int dev, void *handle,
				  void **send_comm,
				  ncclNetDeviceHandle_t **dev_comm)
{
	(void)dev_comm;
	return ZSM_R(zsm_connect(ctx, dev, handle, send_comm));
}

ncclResult_t zsm_shim_finalize(void *ctx)
{
	return ZSM_R(zsm_finalize(ctx));
}

ncclResult_t zsm_shim_set_net_attr(void *ctx, ncclNetAttr_t *attr)
{
	(void)ctx;
	(void)attr; /* a hint; one endpoint serves every pattern */
	return ncclSuccess;
}
