/* SPDX-License-Identifier: MIT */
/*
 * Owns net's life in the process: the devices found at init, the checks
 * of settings that depend on them, each device's endpoint (opened at init,
 * so listen and connect never wait for a provider to start), and what it
 * tells getProperties.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_domain.h>

#include "common/cuda.h"
#include "common/log.h"
#include "common/param.h"
#include "net/net.h"
#include "net/net_api.h"

struct zsm_net_topo zsm_net_topo;

/* Devices whose endpoint does not open are dropped, with a warning. */
static int zsm_net_open_endpoints(void)
{
	struct zsm_net_topo *t = &zsm_net_topo;
	int kept = 0;

	for (int i = 0; i < t->ndevs; i++) {
		struct zsm_net_ep *ep;

		zsm_net_dev_plan_duplex(&t->devs[i]);
		zsm_net_dev_plan_paths(&t->devs[i]);
		if (zsm_net_ep_get(&t->devs[i], &ep) != 0) {
			ZSM_WARN("net: device %s is left out: its endpoint "
				 "does not open",
				 t->devs[i].name);
			zsm_net_dev_drop(&t->devs[i]);
			continue;
		}
		if (kept != i) {
			t->devs[kept] = t->devs[i];
			t->devs[kept].ep->dev = &t->devs[kept];
		}
		kept++;
	}
	for (int i = kept; i < t->ndevs; i++)
		memset(&t->devs[i], 0, sizeof(t->devs[i]));
	t->ndevs = kept;
	if (kept == 0) {
		ZSM_WARN("net: no device endpoint could be opened");
		return -ENODEV;
	}
	return 0;
}

/*
 * ZSM_CHECKSUM carries the checksum beside the data key in 8 bytes of
 * remote CQ data: a device without them cannot check what it receives,
 * and a setting that is silently not honoured is worse than none.
 */
static int zsm_net_check_checksum(void)
{
	int ret = 0;

	if (!zsm_param_int(ZSM_P_CHECKSUM))
		return 0;
	for (int i = 0; i < zsm_net_topo.ndevs; i++) {
		const struct zsm_net_dev *dev = &zsm_net_topo.devs[i];

		/* What zsm_net_ep_open's crc will say, known before it. */
		if (dev->info->domain_attr->cq_data_size >= 8)
			continue;
		ZSM_WARN("ZSM_CHECKSUM=1 needs 8 bytes of remote CQ data, and "
			 "device %s (%s) offers %zu: unset ZSM_CHECKSUM",
			 dev->name, dev->info->fabric_attr->prov_name,
			 dev->info->domain_attr->cq_data_size);
		ret = -EDOM;
	}
	return ret;
}

/* Per device: does it take GPU buffers (said once, at INFO)? */
static void zsm_net_plan_gdr(void)
{
	int cuda = zsm_cuda_ready(), min_cc = zsm_cuda_min_cc();
	int dmabuf = zsm_cuda_dmabuf_ok();

	for (int i = 0; i < zsm_net_topo.ndevs; i++) {
		struct zsm_net_dev *dev = &zsm_net_topo.devs[i];

		zsm_net_dev_plan_gdr(dev, cuda, min_cc, dmabuf);
		ZSM_INFO("net: %s: %s", dev->name, dev->gdr.why);
	}
}

int zsm_net_init(void)
{
	int ret = zsm_net_topo_discover(&zsm_net_topo);

	if (ret)
		return ret;
	if (zsm_net_topo.ndevs == 0) {
		ZSM_WARN("net: no usable libfabric device (zsm-info tells "
			 "why each offer was passed over)");
		ret = -ENODEV;
		goto err;
	}
	ret = zsm_net_check_checksum();
	if (ret)
		goto err;
	/* Open every endpoint now: listen() and connect() must not block,
	 * and opening one takes tens of milliseconds. */
	ret = zsm_net_open_endpoints();
	if (ret)
		goto err;
	/* GPU buffers to other hosts go through the provider (FI_HMEM);
	 * the driver is loaded once the provider has started. */
	zsm_cuda_init();
	zsm_net_plan_gdr();
	return 0;
err:
	zsm_net_topo_free(&zsm_net_topo);
	return ret;
}

void zsm_net_close_endpoints(void)
{
	zsm_net_topo_settle(&zsm_net_topo);
	for (int i = 0; i < zsm_net_topo.ndevs; i++) {
		struct zsm_net_dev *dev = &zsm_net_topo.devs[i];
		struct zsm_net_ep *ep;
		int at;

		/* Paths' endpoints first: their operations name requests of
		 * comms that path 0's close frees.  Each close empties its
		 * slot, so the walk starts over. */
		at = 2;
		while ((ep = zsm_net_dev_next_ep(dev, &at))) {
			zsm_net_ep_close(ep);
			at = 2;
		}
		at = 0;
		while ((ep = zsm_net_dev_next_ep(dev, &at))) {
			zsm_net_ep_close(ep);
			at = 0;
		}
		while (dev->retired) {
			ep = dev->retired;
			dev->retired = ep->retired_next;
			zsm_net_ep_close(ep);
		}
	}
}

void zsm_net_fini(void)
{
	zsm_net_topo_free(&zsm_net_topo);
}

int zsm_net_ndevs(void)
{
	/* Acquire: pairs with zsm_net_make_vdev's release, so a device
	 * counted here is whole; the engine's own walks hold its lock. */
	return __atomic_load_n(&zsm_net_topo.ndevs, __ATOMIC_ACQUIRE);
}

int zsm_net_make_vdev(const int *devs, int n, int *out)
{
	struct zsm_net_topo *t = &zsm_net_topo;
	struct zsm_net_dev *dev = &t->devs[t->ndevs];
	struct zsm_net_ep *ep;
	int ret;

	if (t->ndevs == ZSM_NET_MAX_DEVS) {
		ZSM_WARN("makeVDevice: no room for a device beyond %d",
			 ZSM_NET_MAX_DEVS);
		return -ENOSPC;
	}
	ret = zsm_net_topo_fuse(t, devs, n, dev);
	if (ret)
		return ret;
	zsm_net_dev_plan_duplex(dev);
	zsm_net_dev_plan_paths(dev);
	if (zsm_net_ep_get(dev, &ep) != 0) {
		ZSM_WARN("makeVDevice: the endpoint of %s does not open",
			 dev->name);
		zsm_net_dev_drop(dev);
		return -EIO;
	}
	ZSM_INFO("net: device %d is %s: %s", t->ndevs, dev->name,
		 dev->rails.why);
	*out = t->ndevs;
	/* Release: pairs with zsm_net_ndevs' acquire (the device is whole
	 * before anyone off the engine lock counts it). */
	__atomic_store_n(&t->ndevs, t->ndevs + 1, __ATOMIC_RELEASE);
	return 0;
}

int zsm_net_gdr_any(void)
{
	for (int i = 0; i < zsm_net_topo.ndevs; i++)
		if (zsm_net_topo.devs[i].gdr.reg != ZSM_HMEM_REG_NONE)
			return 1;
	return 0;
}

void zsm_net_props(int dev, struct zsm_props *props)
{
	zsm_net_dev_props(&zsm_net_topo.devs[dev], dev, props);
	props->ptr_support |= zsm_net_topo.devs[dev].gdr.ptr_support;
}
