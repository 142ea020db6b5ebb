/* SPDX-License-Identifier: MIT */
/*
 * Owns the entry points of comms: listen, connect, accept and close,
 * each giving or taking a handle, and the few questions a caller may
 * ask of a comm.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/handle.h"
#include "common/log.h"
#include "core/comm.h"
#include "entry/entry.h"
#include "entry/entry_int.h"
#include "entry/lifetime.h"
#include "net/net_api.h"
#include "proxy/proxy.h"

/* Give NCCL comm c as a new handle of type; on failure c is closed. */
static int zsm_entry_publish_comm(struct zsm_comm *c,
				  enum zsm_handle_type type, void **out)
{
	uint64_t h;
	int ret = zsm_handle_open(type, c, &h);

	if (ret) {
		ZSM_WARN("%s: out of memory for a %s handle", c->ops->name,
			 zsm_handle_type_name(type));
		zsm_comm_close(c);
		return ret;
	}
	/* release: published pairs with the engine's acquire loads (expiry,
	 * the busy check, connect's look-up of a comm in progress); handle
	 * with zsm_comm_release's. */
	atomic_store_explicit(&c->published, 1, memory_order_release);
	atomic_store_explicit(&c->handle, h, memory_order_release);
	*out = zsm_entry_handle_out(h);
	return 0;
}

/* Engine lock held: a comm that never reached NCCL goes. */
static void zsm_entry_drop_comm(struct zsm_comm *c)
{
	if (c->ops)
		zsm_comm_close_locked(c);
	else
		zsm_comm_release(c);
}

int zsm_listen(void *ctx, int dev, void *handle, void **listen_comm)
{
	struct zsm_comm *lc;
	int ret;

	(void)ctx;
	if (!listen_comm || !handle)
		return zsm_entry_null("listen", listen_comm ? "handle"
							    : "listenComm");
	*listen_comm = NULL;
	ret = zsm_entry_life_enter("listen");
	if (!ret)
		ret = zsm_entry_life_dev_check(dev);
	if (ret)
		return ret;
	zsm_proxy_lock();
	lc = zsm_comm_new(ZSM_COMM_LISTEN);
	ret = lc ? zsm_net_listen(dev, handle, lc) : -ENOMEM;
	if (ret && lc)
		zsm_entry_drop_comm(lc);
	zsm_proxy_unlock();
	if (ret)
		return ret;
	return zsm_entry_publish_comm(lc, ZSM_H_LISTEN, listen_comm);
}

/*
 * A connect: the first call starts it, later ones (NCCL calls again
 * with the same handle until it has a comm) find it; each returns at
 * once, with a comm once the listener answered.
 */
static int zsm_entry_connect(int dev, void *handle, struct zsm_comm **out)
{
	struct zsm_comm *sc = NULL;
	int ret, state;

	*out = NULL;
	if (!zsm_net_handle_ok(handle))
		return -EINVAL;
	/* The proxy thread is in a pass (a new rxm connection can hold it
	 * for tens of ms): "not yet", NCCL calls again. */
	if (zsm_proxy_caller_enter())
		return 0;
	ret = zsm_net_connect_find(dev, handle, &sc);
	if (ret == 0) {
		sc = zsm_comm_new(ZSM_COMM_SEND);
		ret = sc ? zsm_net_connect_start(dev, handle, sc) : -ENOMEM;
		if (ret && sc)
			zsm_entry_drop_comm(sc);
		if (ret)
			goto out;
	} else if (ret < 0) {
		goto out;
	}
	ret = 0;
	if (zsm_proxy_caller_drives())
		zsm_proxy_pass_locked();
	/* acquire: pairs with the release in zsm_comm_answered and
	 * zsm_comm_fail. */
	state = atomic_load_explicit(&sc->state, memory_order_acquire);
	if (state == ZSM_COMM_CONNECTED) {
		*out = sc;
	} else if (state == ZSM_COMM_FAILED) {
		/* relaxed: ordered by the acquire of state above. */
		ret = atomic_load_explicit(&sc->error, memory_order_relaxed);
		zsm_net_connect_forget(handle);
		zsm_comm_close_locked(sc);
	}
out:
	zsm_proxy_caller_leave();
	return ret;
}

int zsm_connect(void *ctx, int dev, void *handle, void **send_comm)
{
	struct zsm_comm *sc = NULL;
	int ret;

	(void)ctx;
	if (!send_comm || !handle)
		return zsm_entry_null("connect",
				      send_comm ? "handle" : "sendComm");
	*send_comm = NULL;
	ret = zsm_entry_life_enter("connect");
	if (!ret)
		ret = zsm_entry_life_dev_check(dev);
	if (ret)
		return ret;
	ret = zsm_entry_connect(dev, handle, &sc);
	if (ret || !sc)
		return ret;
	return zsm_entry_publish_comm(sc, ZSM_H_SEND, send_comm);
}

int zsm_accept(void *listen_comm, void **recv_comm)
{
	struct zsm_comm *lc, *rc = NULL;
	int ret;

	if (!recv_comm)
		return zsm_entry_null("accept", "recvComm");
	*recv_comm = NULL;
	ret = zsm_entry_life_enter("accept");
	if (ret)
		return ret;
	ret = zsm_entry_lookup("accept", listen_comm, ZSM_H_LISTEN,
			       (void **)&lc);
	if (ret)
		return ret;
	/* As in connect: never wait for the proxy thread's pass. */
	if (zsm_proxy_caller_enter())
		return 0;
	if (zsm_proxy_caller_drives())
		zsm_proxy_pass_locked();
	rc = zsm_net_accept(lc);
	zsm_proxy_caller_leave();
	if (!rc)
		return 0;
	return zsm_entry_publish_comm(rc, ZSM_H_RECV, recv_comm);
}

static int zsm_entry_close(const char *call, void *h,
			   enum zsm_handle_type type)
{
	struct zsm_comm *c;
	int ret;

	if (!h)
		return 0;
	/* A child's teardown must not touch what its parent shares. */
	if (zsm_entry_life_in_child(call))
		return 0;
	ret = zsm_handle_close((uint64_t)(uintptr_t)h, type, (void **)&c);
	if (ret == -EBADF) {
		ZSM_WARN("%s: %s %p is already closed", call,
			 zsm_handle_type_name(type), h);
		return ret;
	}
	if (ret) {
		ZSM_WARN("%s: %p is not a zsm %s", call, h,
			 zsm_handle_type_name(type));
		return ret;
	}
	/* release: pairs with the acquire in zsm_comm_release. */
	atomic_store_explicit(&c->handle, 0, memory_order_release);
	return zsm_comm_close(c);
}

int zsm_close_send(void *send_comm)
{
	return zsm_entry_close("closeSend", send_comm, ZSM_H_SEND);
}

int zsm_close_recv(void *recv_comm)
{
	return zsm_entry_close("closeRecv", recv_comm, ZSM_H_RECV);
}

int zsm_close_listen(void *listen_comm)
{
	return zsm_entry_close("closeListen", listen_comm, ZSM_H_LISTEN);
}

int zsm_comm_failed(void *comm)
{
	void *obj;

	if (zsm_handle_get((uint64_t)(uintptr_t)comm, ZSM_H_SEND, &obj) &&
	    zsm_handle_get((uint64_t)(uintptr_t)comm, ZSM_H_RECV, &obj))
		return 1;
	return zsm_comm_error(obj) != 0;
}

int zsm_comm_reserve(void *send_comm, int sets)
{
	struct zsm_comm *c;
	int ret = zsm_entry_lookup("reserve", send_comm, ZSM_H_SEND,
				   (void **)&c);

	if (ret)
		return ret;
	if (sets < 1 || sets > ZSM_MAX_REQUEST_SETS) {
		ZSM_WARN("reserve: %d request sets on a comm (1 to %d)", sets,
			 ZSM_MAX_REQUEST_SETS);
		return -EINVAL;
	}
	zsm_req_pool_reserve(c, sets * ZSM_MAX_REQUESTS);
	return 0;
}

const char *zsm_comm_transport(void *comm)
{
	struct zsm_comm *c;

	if (zsm_handle_get((uint64_t)(uintptr_t)comm, ZSM_H_SEND,
			   (void **)&c) &&
	    zsm_handle_get((uint64_t)(uintptr_t)comm, ZSM_H_RECV,
			   (void **)&c))
		return NULL;
	/* acquire: ops is set before state turns CONNECTED. */
	if (atomic_load_explicit(&c->state, memory_order_acquire) ==
	    ZSM_COMM_CONNECTING)
		return NULL;
	return c->ops ? c->ops->name : NULL;
}
