/* SPDX-License-Identifier: MIT */
/*
 * Owns the plugin's lifetime: init/finalize reference counting, teardown
 * at unload, and what a process forked after init may still do.  The
 * entry points for comms, registrations and requests are in entry.c.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_domain.h>

#include "ce/ce.h"
#include "common/cuda.h"
#include "common/handle.h"
#include "common/host.h"
#include "common/log.h"
#include "common/param.h"
#include "core/api.h"
#include "core/plugin.h"
#include "net/net.h"
#include "proxy/proxy.h"
#include "zsm_config.h"

struct zsm_ctx {
	uint64_t comm_id;
	int traffic_class;
};

struct zsm_net_topo zsm_net_topo;

static pthread_mutex_t zsm_plugin_lock = PTHREAD_MUTEX_INITIALIZER;
static int zsm_plugin_refs;
/*
 * Set in a child forked after init.  Its endpoints, shared windows and
 * sockets are its parent's, its proxy thread did not survive the fork and
 * the locks may be held by threads that did not either: nothing the
 * parent initialised may be used or torn down there.
 */
static volatile int zsm_plugin_forked;

static void zsm_plugin_atfork_prepare(void)
{
	/* No init or finalize runs across the fork. */
	pthread_mutex_lock(&zsm_plugin_lock);
}

static void zsm_plugin_atfork_parent(void)
{
	pthread_mutex_unlock(&zsm_plugin_lock);
}

static void zsm_plugin_atfork_child(void)
{
	if (zsm_plugin_refs > 0) {
		zsm_plugin_forked = 1;
		/* NCCL's logger takes locks other threads may have held. */
		zsm_log_set_sink(NULL);
	}
	pthread_mutex_unlock(&zsm_plugin_lock);
}

__attribute__((constructor)) static void zsm_plugin_load(void)
{
	/* glibc drops the handlers again when the plugin is unloaded. */
	pthread_atfork(zsm_plugin_atfork_prepare, zsm_plugin_atfork_parent,
		       zsm_plugin_atfork_child);
}

int zsm_plugin_in_child(const char *call)
{
	static int said;

	if (!zsm_plugin_forked)
		return 0;
	if (!said++)
		ZSM_INFO("%s in pid %d, forked after the plugin was "
			 "initialised: its teardown is left to the parent",
			 call, (int)getpid());
	return 1;
}

int zsm_plugin_enter(const char *call)
{
	static int said;

	if (!zsm_plugin_forked)
		return 0;
	if (!said++)
		ZSM_WARN("%s in pid %d, which was forked after the plugin was "
			 "initialised: the parent's comms and endpoints cannot "
			 "be used here, and the plugin cannot start again in "
			 "this process (start children before NCCL, or with "
			 "the spawn method); every call fails",
			 call, (int)getpid());
	return -ECHILD;
}

static void zsm_plugin_teardown_locked(void)
{
	zsm_proxy_stop();
	zsm_proxy_lock();
	for (int i = 0; i < zsm_net_topo.ndevs; i++) {
		struct zsm_net_dev *dev = &zsm_net_topo.devs[i];

		zsm_net_ep_close(dev->ep);
		while (dev->retired) {
			struct zsm_net_ep *ep = dev->retired;

			dev->retired = ep->retired_next;
			zsm_net_ep_close(ep);
		}
	}
	zsm_proxy_unlock();
	/* The comms' GPU mappings are closing on their own thread, which
	 * must be gone before NCCL unloads us. */
	zsm_ce_unmap_stop(5000);
	zsm_net_topo_free(&zsm_net_topo);
	zsm_plugin_refs = 0;
}

/*
 * Streams share the device's hardware queues, in order, once there are
 * more of them than CUDA_DEVICE_MAX_CONNECTIONS (8 unless set): ce's
 * copy stream may then sit behind NCCL's kernel, which spins until the
 * copy lands.  Frameworks set 1 to order their kernels; say what it
 * costs here.
 */
static void zsm_plugin_check_connections(void)
{
	const char *v = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
	char *end;
	long n;

	if (!v || !*v)
		return;
	n = strtol(v, &end, 10);
	if (*end || n >= 8)
		return;
	ZSM_WARN("ce: CUDA_DEVICE_MAX_CONNECTIONS=%s gives each GPU fewer "
		 "hardware queues than the default 8: ce's copies for a "
		 "same-host comm can queue behind the NCCL kernel that waits "
		 "for them, and NCCL hangs; unset it, or keep GPU buffers "
		 "off ce (ZSM_CE_GPU=0, NCCL_NET_GDR_LEVEL unset)",
		 v);
}

/* Per device: does it take GPU buffers (said once, at INFO)? */
static void zsm_plugin_plan_gdr(void)
{
	int cuda = zsm_cuda_ready(), min_cc = zsm_cuda_min_cc();
	int dmabuf = zsm_cuda_dmabuf_ok();
	int gpu = cuda && zsm_param_int(ZSM_P_CE_GPU);

	for (int i = 0; i < zsm_net_topo.ndevs; i++) {
		struct zsm_net_dev *dev = &zsm_net_topo.devs[i];

		zsm_net_dev_plan_gdr(dev, cuda, min_cc, dmabuf);
		ZSM_INFO("net: %s: %s", dev->name, dev->gdr.why);
		gpu |= dev->gdr.reg != ZSM_HMEM_REG_NONE;
	}
	if (!gpu || !zsm_ce_enabled())
		return;
	/* GPU buffers of same-host comms are copied by ce on a stream while
	 * NCCL's kernel waits for them (docs/ce.md, "Lazy module loading"). */
	if (zsm_cuda_lazy())
		ZSM_WARN("ce: CUDA loads modules lazily (CUDA_MODULE_LOADING="
			 "LAZY, the default): when NCCL hands GPU buffers to "
			 "a same-host comm, a kernel loaded while NCCL's "
			 "kernel waits for one of ce's copies can hold that "
			 "copy back for ever; set CUDA_MODULE_LOADING=EAGER");
	zsm_plugin_check_connections();
}

/* Devices whose endpoint does not open are dropped, with a warning. */
static int zsm_plugin_open_endpoints(void)
{
	struct zsm_net_topo *t = &zsm_net_topo;
	int kept = 0;

	for (int i = 0; i < t->ndevs; i++) {
		struct zsm_net_ep *ep;

		if (zsm_net_ep_get(&t->devs[i], &ep) != 0) {
			ZSM_WARN("net: device %s is left out: its endpoint "
				 "does not open",
				 t->devs[i].name);
			zsm_fi_freeinfo(t->devs[i].info);
			free(t->devs[i].pci_path);
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
		zsm_net_topo_free(t);
		return -ENODEV;
	}
	return 0;
}

/*
 * ZSM_CHECKSUM carries the checksum beside the data key in 8 bytes of
 * remote CQ data: a device without them cannot check what it receives,
 * and a setting that is silently not honoured is worse than none.
 */
static int zsm_plugin_check_checksum(void)
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

/* Take one reference, bringing the plugin up on the first. */
static int zsm_plugin_get(zsm_log_sink_fn sink)
{
	int ret = 0;

	pthread_mutex_lock(&zsm_plugin_lock);
	if (sink)
		zsm_log_set_sink(sink);
	if (zsm_plugin_refs > 0) {
		zsm_plugin_refs++;
		goto out;
	}
	ret = zsm_param_load(NULL);
	if (ret) {
		ret = -EDOM; /* a bad ZSM_* value: the user's to fix */
		goto out;
	}
	/* Before any handle or control message needs the host's hash. */
	ret = zsm_host_init();
	if (ret)
		goto out;
	ret = zsm_net_topo_discover(&zsm_net_topo);
	if (ret)
		goto out;
	if (zsm_net_topo.ndevs == 0) {
		ZSM_WARN("net: no usable libfabric device (zsm-info tells "
			 "why each offer was passed over)");
		zsm_net_topo_free(&zsm_net_topo);
		ret = -ENODEV;
		goto out;
	}
	ret = zsm_plugin_check_checksum();
	if (ret) {
		zsm_net_topo_free(&zsm_net_topo);
		goto out;
	}
	/* Open every endpoint now: listen() and connect() must not block,
	 * and opening one takes tens of milliseconds. */
	ret = zsm_plugin_open_endpoints();
	if (ret)
		goto out;
	zsm_proxy_add_transport(&zsm_net_ops);
	if (zsm_ce_enabled())
		zsm_proxy_add_transport(&zsm_ce_ops);
	/* GPU buffers: ce moves them between same-host processes, the
	 * provider (FI_HMEM) to other hosts. */
	zsm_cuda_init();
	zsm_plugin_plan_gdr();
	ret = zsm_proxy_start();
	if (ret) {
		zsm_net_topo_free(&zsm_net_topo);
		goto out;
	}
	zsm_plugin_refs = 1;
	ZSM_INFO("zsm %s ready: %d device(s), proxy %s", ZSM_VERSION,
		 zsm_net_topo.ndevs,
		 zsm_param_int(ZSM_P_PROXY) ? "inline" : "thread");
out:
	pthread_mutex_unlock(&zsm_plugin_lock);
	return ret;
}

static void zsm_plugin_put(void)
{
	pthread_mutex_lock(&zsm_plugin_lock);
	if (zsm_plugin_refs > 0 && --zsm_plugin_refs == 0)
		zsm_plugin_teardown_locked();
	pthread_mutex_unlock(&zsm_plugin_lock);
}

/* NCCL dlcloses the plugin after the last comm; v8-v10 never finalize. */
__attribute__((destructor)) static void zsm_plugin_unload(void)
{
	/* A forked child's exit must not close what its parent uses. */
	if (zsm_plugin_forked)
		return;
	pthread_mutex_lock(&zsm_plugin_lock);
	if (zsm_plugin_refs > 0)
		zsm_plugin_teardown_locked();
	pthread_mutex_unlock(&zsm_plugin_lock);
	zsm_handle_fini();
	zsm_log_set_sink(NULL);
}

int zsm_init(void **ctx, uint64_t comm_id, int traffic_class,
	     zsm_log_sink_fn sink)
{
	struct zsm_ctx *c;
	uint64_t h;
	int ret = zsm_plugin_enter("init");

	if (ret)
		return ret;
	if (!ctx) {
		/* v8-v10: one process-wide reference, dropped at unload. */
		static int legacy_ref;

		if (legacy_ref)
			return 0;
		ret = zsm_plugin_get(sink);
		if (!ret)
			legacy_ref = 1;
		return ret;
	}
	*ctx = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->comm_id = comm_id;
	c->traffic_class = traffic_class;
	ret = zsm_handle_open(ZSM_H_CTX, c, &h);
	if (ret) {
		free(c);
		return ret;
	}
	ret = zsm_plugin_get(sink);
	if (ret) {
		void *obj;

		zsm_handle_close(h, ZSM_H_CTX, &obj);
		free(c);
		return ret;
	}
	*ctx = (void *)(uintptr_t)h;
	return 0;
}

int zsm_finalize(void *ctx)
{
	void *c;
	int ret;

	/* NCCL 2.28.9 calls finalize after a failed init, whose context
	 * is NULL: nothing to do. */
	if (!ctx || zsm_plugin_in_child("finalize"))
		return 0;
	ret = zsm_handle_close((uint64_t)(uintptr_t)ctx, ZSM_H_CTX, &c);
	if (ret) {
		ZSM_WARN("finalize: %p %s", ctx,
			 ret == -EBADF ? "was already finalized"
				       : "is not a context init gave");
		return ret;
	}
	free(c);
	zsm_plugin_put();
	return 0;
}

int zsm_plugin_dev_check(int dev)
{
	if (zsm_plugin_refs <= 0) {
		ZSM_WARN("called before a successful init");
		return -EINVAL;
	}
	if (dev < 0 || dev >= zsm_net_topo.ndevs) {
		ZSM_WARN("device %d does not exist (%d devices)", dev,
			 zsm_net_topo.ndevs);
		return -EINVAL;
	}
	return 0;
}

int zsm_devices(int *ndev)
{
	int ret;

	if (!ndev) {
		ZSM_WARN("devices: ndev is NULL");
		return -EINVAL;
	}
	*ndev = 0;
	ret = zsm_plugin_enter("devices");
	if (ret)
		return ret;
	*ndev = zsm_plugin_refs > 0 ? zsm_net_topo.ndevs : 0;
	return 0;
}

int zsm_get_properties(int dev, struct zsm_props *props)
{
	int ret = zsm_plugin_enter("getProperties");

	if (!ret)
		ret = zsm_plugin_dev_check(dev);
	if (ret)
		return ret;
	zsm_net_dev_props(&zsm_net_topo.devs[dev], dev, props);
	props->ptr_support |= zsm_net_topo.devs[dev].gdr.ptr_support;
	/*
	 * Without FI_HMEM, same-host comms still take device memory (ce)
	 * but comms to other hosts cannot, and NCCL would hand GPU buffers
	 * to both wherever its topology allows GPUDirect: opt-in.
	 */
	if (zsm_cuda_ready() && zsm_param_int(ZSM_P_CE_GPU))
		props->ptr_support |= ZSM_MEM_CUDA;
	return 0;
}
