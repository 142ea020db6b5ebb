/* SPDX-License-Identifier: MIT */
/*
 * Owns the plugin's lifetime: init/finalize reference counting, teardown
 * at unload, and what a process forked after init may still do.  The
 * entry points for comms, registrations and requests are in entry_*.c.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cuda.h"
#include "common/cuda_win.h"
#include "common/handle.h"
#include "common/host.h"
#include "common/log.h"
#include "common/param.h"
#include "entry/entry.h"
#include "core/comm.h"
#include "entry/lifetime.h"
#include "entry/select.h"
#include "net/net_api.h"
#include "proxy/proxy.h"
#include "zsm_config.h"

struct zsm_ctx {
	uint64_t comm_id;
	int traffic_class;
};

static pthread_mutex_t zsm_entry_life_lock = PTHREAD_MUTEX_INITIALIZER;
static int zsm_entry_life_refs;
/*
 * Set in a child forked after init.  Its endpoints, shared windows and
 * sockets are its parent's, its proxy thread did not survive the fork and
 * the locks may be held by threads that did not either: nothing the
 * parent initialised may be used or torn down there.
 */
static volatile int zsm_entry_life_forked;

static void zsm_entry_life_atfork_prepare(void)
{
	/* No init or finalize runs across the fork. */
	pthread_mutex_lock(&zsm_entry_life_lock);
}

static void zsm_entry_life_atfork_parent(void)
{
	pthread_mutex_unlock(&zsm_entry_life_lock);
}

static void zsm_entry_life_atfork_child(void)
{
	if (zsm_entry_life_refs > 0) {
		zsm_entry_life_forked = 1;
		/* NCCL's logger takes locks other threads may have held. */
		zsm_log_set_sink(NULL);
	}
	pthread_mutex_unlock(&zsm_entry_life_lock);
}

__attribute__((constructor)) static void zsm_entry_life_load(void)
{
	/* glibc drops the handlers again when the plugin is unloaded. */
	pthread_atfork(zsm_entry_life_atfork_prepare, zsm_entry_life_atfork_parent,
		       zsm_entry_life_atfork_child);
}

int zsm_entry_life_in_child(const char *call)
{
	static int said;

	if (!zsm_entry_life_forked)
		return 0;
	if (!said++)
		ZSM_INFO("%s in pid %d, forked after the plugin was "
			 "initialised: its teardown is left to the parent",
			 call, (int)getpid());
	return 1;
}

int zsm_entry_life_enter(const char *call)
{
	static int said;

	if (!zsm_entry_life_forked)
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

static void zsm_entry_life_teardown_locked(void)
{
	zsm_proxy_stop();
	zsm_proxy_lock();
	/* Every comm NCCL left open closes; closing the endpoints then
	 * ends whatever the provider still held, and frees the rest. */
	zsm_comm_close_all();
	zsm_net_close_endpoints();
	zsm_comm_free_all();
	/* The windows' streams, once no window is left. */
	zsm_cuda_win_fini();
	zsm_proxy_unlock();
	zsm_entry_select_stop();
	zsm_net_fini();
	zsm_entry_life_refs = 0;
}

/* Take one reference, bringing the plugin up on the first. */
static int zsm_entry_life_get(zsm_log_sink_fn sink)
{
	int ret = 0;

	pthread_mutex_lock(&zsm_entry_life_lock);
	if (sink)
		zsm_log_set_sink(sink);
	if (zsm_entry_life_refs > 0) {
		zsm_entry_life_refs++;
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
	ret = zsm_net_init();
	if (ret)
		goto out;
	zsm_entry_select_start();
	ret = zsm_proxy_start();
	if (ret) {
		zsm_proxy_lock();
		zsm_net_close_endpoints();
		zsm_proxy_unlock();
		zsm_entry_select_stop();
		zsm_net_fini();
		goto out;
	}
	zsm_entry_life_refs = 1;
	ZSM_INFO("zsm %s ready: %d device(s), proxy %s", ZSM_VERSION,
		 zsm_net_ndevs(),
		 zsm_param_int(ZSM_P_PROXY) ? "inline" : "thread");
out:
	pthread_mutex_unlock(&zsm_entry_life_lock);
	return ret;
}

static void zsm_entry_life_put(void)
{
	pthread_mutex_lock(&zsm_entry_life_lock);
	if (zsm_entry_life_refs > 0 && --zsm_entry_life_refs == 0)
		zsm_entry_life_teardown_locked();
	pthread_mutex_unlock(&zsm_entry_life_lock);
}

/* NCCL dlcloses the plugin after the last comm; v8-v10 never finalize. */
__attribute__((destructor)) static void zsm_entry_life_unload(void)
{
	/* A forked child's exit must not close what its parent uses. */
	if (zsm_entry_life_forked)
		return;
	pthread_mutex_lock(&zsm_entry_life_lock);
	if (zsm_entry_life_refs > 0)
		zsm_entry_life_teardown_locked();
	pthread_mutex_unlock(&zsm_entry_life_lock);
	zsm_handle_fini();
	zsm_log_set_sink(NULL);
}

int zsm_init(void **ctx, uint64_t comm_id, int traffic_class,
	     zsm_log_sink_fn sink)
{
	struct zsm_ctx *c;
	uint64_t h;
	int ret = zsm_entry_life_enter("init");

	if (ret)
		return ret;
	if (!ctx) {
		/* v8-v10: one process-wide reference, dropped at unload. */
		static int legacy_ref;

		if (legacy_ref)
			return 0;
		ret = zsm_entry_life_get(sink);
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
	ret = zsm_entry_life_get(sink);
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
	if (!ctx || zsm_entry_life_in_child("finalize"))
		return 0;
	ret = zsm_handle_close((uint64_t)(uintptr_t)ctx, ZSM_H_CTX, &c);
	if (ret) {
		ZSM_WARN("finalize: %p %s", ctx,
			 ret == -EBADF ? "was already finalized"
				       : "is not a context init gave");
		return ret;
	}
	free(c);
	zsm_entry_life_put();
	return 0;
}

int zsm_entry_life_dev_check(int dev)
{
	if (zsm_entry_life_refs <= 0) {
		ZSM_WARN("called before a successful init");
		return -EINVAL;
	}
	if (dev < 0 || dev >= zsm_net_ndevs()) {
		ZSM_WARN("device %d does not exist (%d devices)", dev,
			 zsm_net_ndevs());
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
	ret = zsm_entry_life_enter("devices");
	if (ret)
		return ret;
	*ndev = zsm_entry_life_refs > 0 ? zsm_net_ndevs() : 0;
	return 0;
}

int zsm_make_vdevice(const int *devs, int n, int max, int *d)
{
	int ret = zsm_entry_life_enter("makeVDevice");

	if (ret)
		return ret;
	if (!d || !devs) {
		ZSM_WARN("makeVDevice: %s is NULL", d ? "props" : "d");
		return -EINVAL;
	}
	if (n < 2 || n > max) {
		ZSM_WARN("makeVDevice: %d devices: 2 to %d fuse", n, max);
		return -EINVAL;
	}
	for (int k = 0; k < n; k++) {
		ret = zsm_entry_life_dev_check(devs[k]);
		if (ret)
			return ret;
	}
	zsm_proxy_lock();
	ret = zsm_net_make_vdev(devs, n, d);
	zsm_proxy_unlock();
	return ret;
}

int zsm_get_properties(int dev, struct zsm_props *props)
{
	int ret = zsm_entry_life_enter("getProperties");

	if (!ret)
		ret = zsm_entry_life_dev_check(dev);
	if (ret)
		return ret;
	zsm_net_props(dev, props);
	zsm_entry_select_props(dev, props);
	props->window_ptr_support =
		ZSM_MEM_HOST | (zsm_cuda_ready() ? ZSM_MEM_CUDA : 0);
	return 0;
}
