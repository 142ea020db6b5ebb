/* SPDX-License-Identifier: MIT */
/*
 * Owns the version-neutral entry points the ABI shims call for comms,
 * registrations and requests: every argument NCCL hands over is checked
 * here, and every object NCCL holds is a handle (common/handle.h), so a
 * stale, doubled or forged one is refused without touching freed memory.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/cuda.h"
#include "common/handle.h"
#include "common/log.h"
#include "core/api.h"
#include "core/comm.h"
#include "core/plugin.h"
#include "net/net_api.h"
#include "proxy/proxy.h"

static void *zsm_entry_handle_out(uint64_t h)
{
	return (void *)(uintptr_t)h;
}

/*
 * The object behind handle h of type, or an error said once here: the
 * call, what the handle is not, and the likely cause.
 */
static int zsm_entry_lookup(const char *call, const void *h,
			    enum zsm_handle_type type, void **obj)
{
	int ret = zsm_handle_get((uint64_t)(uintptr_t)h, type, obj);

	if (ret == -EBADF)
		ZSM_WARN("%s: %s %p was closed or has ended (used after "
			 "close, twice, or after its comm closed)",
			 call, zsm_handle_type_name(type), h);
	else if (ret)
		ZSM_WARN("%s: %p is not a zsm %s", call, h,
			 zsm_handle_type_name(type));
	return ret;
}

/* A send or receive comm, for the calls that take either: a closed one
 * is -EBADF, as for the calls that take one kind. */
static int zsm_entry_any_comm(const char *call, const void *h,
			      struct zsm_comm **c)
{
	void *obj;
	int s = zsm_handle_get((uint64_t)(uintptr_t)h, ZSM_H_SEND, &obj);
	int r = s ? zsm_handle_get((uint64_t)(uintptr_t)h, ZSM_H_RECV, &obj)
		  : 0;

	if (s && r) {
		ZSM_WARN("%s: %p is not a live zsm send or receive comm%s",
			 call, h,
			 s == -EBADF || r == -EBADF ? " (closed)" : "");
		return s == -EBADF || r == -EBADF ? -EBADF : -EINVAL;
	}
	*c = obj;
	return 0;
}

static int zsm_entry_null(const char *call, const char *what)
{
	ZSM_WARN("%s: %s is NULL", call, what);
	return -EINVAL;
}

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
	ret = zsm_plugin_enter("listen");
	if (!ret)
		ret = zsm_plugin_dev_check(dev);
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
	ret = zsm_plugin_enter("connect");
	if (!ret)
		ret = zsm_plugin_dev_check(dev);
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
	ret = zsm_plugin_enter("accept");
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
	if (zsm_plugin_in_child(call))
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

/*
 * [data, data + size) of host memory is mapped: a registration of an
 * address that is not would only fail later, inside a transfer.  mincore
 * fails with ENOMEM on unmapped pages and reads nothing (msync would do
 * too, but valgrind takes its range for memory being read).  A fixed
 * vector keeps the probe of a large buffer off the heap.
 */
static int zsm_entry_host_range_ok(const void *data, size_t size)
{
	unsigned char vec[4096];
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t at, end;

	if (!size)
		return 1;
	if (!data || (uintptr_t)data + size < (uintptr_t)data)
		return 0;
	at = (uintptr_t)data & ~(page - 1);
	end = (uintptr_t)data + size;
	while (at < end) {
		uintptr_t len = end - at;

		if (len > sizeof(vec) * page)
			len = sizeof(vec) * page;
		if (mincore((void *)at, len, vec))
			return 0;
		at += len;
	}
	return 1;
}

/* NCCL's handle for mr, the registration of [data, data + size). */
static int zsm_entry_mr_publish(struct zsm_mr *mr, const void *data,
				size_t size, void **mh)
{
	uint64_t h;
	int ret;

	mr->start = (uintptr_t)data;
	mr->size = size;
	ret = zsm_handle_open(ZSM_H_MR, mr, &h);

	if (ret) {
		ZSM_WARN("%s: out of memory for a registration handle",
			 mr->ops->name);
		zsm_mr_put(mr);
		return ret;
	}
	mr->handle = h;
	*mh = zsm_entry_handle_out(h);
	return 0;
}

static int zsm_entry_reg_check(const char *call, void *data, size_t size,
			       int type, void **mh)
{
	if (!mh)
		return zsm_entry_null(call, "mhandle");
	*mh = NULL;
	if (type != ZSM_MEM_HOST && type != ZSM_MEM_CUDA &&
	    type != ZSM_MEM_DMABUF) {
		ZSM_WARN("%s: memory type %d is none of host (%d), CUDA (%d) "
			 "or dma-buf (%d)",
			 call, type, ZSM_MEM_HOST, ZSM_MEM_CUDA,
			 ZSM_MEM_DMABUF);
		return -EINVAL;
	}
	if (size > ZSM_MAX_REG_BYTES ||
	    (type == ZSM_MEM_HOST && !zsm_entry_host_range_ok(data, size)) ||
	    (type != ZSM_MEM_HOST && size && !data)) {
		ZSM_WARN("%s: %zu bytes at %p are not memory this process "
			 "can register",
			 call, size, data);
		return -EINVAL;
	}
	return 0;
}

/* regMr and regMrDmaBuf: fd >= 0 with its offset names a dma-buf. */
static int zsm_entry_reg(const char *call, void *comm, void *data,
			 size_t size, int type, int fd, uint64_t offset,
			 void **mh)
{
	struct zsm_comm *c;
	struct zsm_mr *mr;
	int ret = zsm_entry_reg_check(call, data, size, type, mh);

	if (!ret)
		ret = zsm_plugin_enter(call);
	if (!ret)
		ret = zsm_entry_any_comm(call, comm, &c);
	if (ret)
		return ret;
	if (type != ZSM_MEM_HOST && !zsm_cuda_ready()) {
		ZSM_WARN("%s of GPU memory, but no CUDA driver was loaded "
			 "(ptrSupport says host only)",
			 call);
		return -EINVAL;
	}
	ret = c->ops->reg_mr(c, data, size,
			     type == ZSM_MEM_HOST ? ZSM_MEM_HOST : ZSM_MEM_CUDA,
			     fd, offset, &mr);
	if (ret)
		return ret;
	return zsm_entry_mr_publish(mr, data, size, mh);
}

int zsm_reg_mr(void *comm, void *data, size_t size, int type, void **mh)
{
	if (type == ZSM_MEM_DMABUF) {
		if (mh)
			*mh = NULL;
		ZSM_WARN("regMr: dma-buf memory comes through regMrDmaBuf");
		return -EINVAL;
	}
	return zsm_entry_reg("regMr", comm, data, size, type, -1, 0, mh);
}

int zsm_reg_mr_dmabuf(void *comm, void *data, size_t size, int type,
		      uint64_t offset, int fd, void **mh)
{
	return zsm_entry_reg("regMrDmaBuf", comm, data, size, type,
			     type == ZSM_MEM_HOST ? -1 : fd, offset, mh);
}

int zsm_dereg_mr(void *comm, void *mh)
{
	struct zsm_mr *mr;
	struct zsm_comm *c = NULL;
	void *obj;
	int ret;

	if (!mh || zsm_plugin_in_child("deregMr"))
		return 0;
	ret = zsm_handle_close((uint64_t)(uintptr_t)mh, ZSM_H_MR,
			       (void **)&mr);
	if (ret) {
		ZSM_WARN("deregMr: %p %s", mh,
			 ret == -EBADF ? "was already deregistered"
				       : "is not a zsm registration");
		return ret;
	}
	mr->handle = 0;
	if (mr->ops->mr_forget &&
	    !zsm_handle_get((uint64_t)(uintptr_t)comm, ZSM_H_SEND, &obj))
		c = obj;
	/* The peer may hold what it opened for the registration until told
	 * (NCCL may free the buffer next).  Requests still using it keep
	 * it until they end. */
	if (c && c->ops == mr->ops) {
		zsm_proxy_lock();
		mr->ops->mr_forget(c, mr);
		zsm_proxy_unlock();
	}
	zsm_mr_put(mr);
	return 0;
}

/*
 * [data, data + len) lies in mr's registered bytes: a transfer past them
 * would have the provider (or ce's copy) read or write memory NCCL never
 * registered.  Said once here when not.
 */
static int zsm_entry_mr_covers(const char *call, const struct zsm_mr *mr,
			       const void *data, size_t len)
{
	uintptr_t at = (uintptr_t)data;

	if (!len || (at >= mr->start && at - mr->start <= mr->size &&
		     len <= mr->size - (at - mr->start)))
		return 0;
	ZSM_WARN("%s: %zu bytes at %p do not lie in their registration of "
		 "%zu bytes at %p",
		 call, len, data, mr->size, (void *)mr->start);
	return -EINVAL;
}

/* The registration behind mh for a transfer of [data, data + len) on c,
 * held: NULL and 0 when there is none and c can do without. */
static int zsm_entry_mr_take(const char *call, struct zsm_comm *c, void *mh,
			     const void *data, size_t len, struct zsm_mr **out)
{
	struct zsm_mr *mr;
	int ret;

	*out = NULL;
	if (!mh) {
		if (!c->ops->needs_mr(c))
			return 0;
		ZSM_WARN("%s: %s: %s needs registered buffers, and this one "
			 "came without a memory handle",
			 call, c->ops->name, c->dev);
		return -EINVAL;
	}
	ret = zsm_entry_lookup(call, mh, ZSM_H_MR, (void **)&mr);
	if (!ret)
		ret = zsm_entry_mr_covers(call, mr, data, len);
	if (ret)
		return ret;
	if (mr->ops != c->ops) {
		/* Host memory needs no registration where the comm's
		 * transport needs none; anything else is the other
		 * transport's and means nothing here. */
		if (mr->type == ZSM_MEM_HOST && !c->ops->needs_mr(c))
			return 0;
		ZSM_WARN("%s: registration %p was made on a comm that moves "
			 "its data by %s, and this comm uses %s",
			 call, mh, mr->ops->name, c->ops->name);
		return -EINVAL;
	}
	zsm_mr_hold(mr);
	*out = mr;
	return 0;
}

static int zsm_entry_tag_check(const char *call, int tag)
{
	if (tag < 0 || (unsigned)tag > ZSM_TAG_MAX) {
		ZSM_WARN("%s: tag %d outside [0, %u]", call, tag, ZSM_TAG_MAX);
		return -EINVAL;
	}
	return 0;
}

/* A request of c for a transfer that holds mr, or NULL when none is free
 * (mr dropped then). */
static struct zsm_req *zsm_entry_req_get(struct zsm_comm *c,
					 struct zsm_mr *mr)
{
	struct zsm_req *req = zsm_req_alloc(c);

	if (!req && mr)
		zsm_mr_put(mr);
	return req;
}

/* Buffer i of a request. */
static void zsm_entry_req_buf(struct zsm_req *req, int i, void *data,
			      size_t len, int tag, struct zsm_mr *mh)
{
	req->data[i] = data;
	req->len[i] = len;
	req->tag[i] = tag;
	req->mh[i] = mh;
}

/*
 * Queue req and give NCCL its handle; a full queue frees it and gives a
 * NULL request, which NCCL retries (wait: a flush, which it does not).
 */
static void zsm_entry_submit(struct zsm_req *req, int wait, void **request)
{
	if (wait) {
		zsm_proxy_submit_wait(&req->desc);
	} else if (zsm_proxy_submit(&req->desc)) {
		zsm_req_free(req);
		return;
	}
	*request = zsm_entry_handle_out(zsm_handle_arm(req->handle_index));
}

int zsm_isend(void *send_comm, void *data, size_t size, int tag, void *mh,
	      void **request)
{
	struct zsm_comm *c;
	struct zsm_req *req;
	struct zsm_mr *mr;
	int ret;

	if (!request)
		return zsm_entry_null("isend", "request");
	*request = NULL;
	ret = zsm_plugin_enter("isend");
	if (!ret)
		ret = zsm_entry_lookup("isend", send_comm, ZSM_H_SEND,
				       (void **)&c);
	if (ret)
		return ret;
	if (size > ZSM_MAX_P2P_BYTES || (size && !data)) {
		ZSM_WARN("isend of %zu bytes at %p: %s", size, data,
			 size > ZSM_MAX_P2P_BYTES ? "above maxP2pBytes"
						  : "NULL buffer");
		return -EINVAL;
	}
	ret = zsm_entry_tag_check("isend", tag);
	if (!ret)
		ret = zsm_comm_error(c);
	if (ret)
		return ret;
	ret = zsm_entry_mr_take("isend", c, mh, data, size, &mr);
	if (ret)
		return ret;
	req = zsm_entry_req_get(c, mr);
	if (!req)
		return 0; /* NCCL retries a NULL request */
	req->type = ZSM_REQ_SEND;
	req->n = 1;
	req->remaining = 1;
	zsm_entry_req_buf(req, 0, data, size, tag, mr);
	zsm_entry_submit(req, 0, request);
	return 0;
}

int zsm_irecv(void *recv_comm, int n, void **data, const size_t *sizes,
	      const int *tags, void **mhs, void **request)
{
	struct zsm_mr *mr[ZSM_MAX_RECVS] = {0};
	struct zsm_comm *c;
	struct zsm_req *req;
	int ret, i;

	if (!request)
		return zsm_entry_null("irecv", "request");
	*request = NULL;
	ret = zsm_plugin_enter("irecv");
	if (!ret)
		ret = zsm_entry_lookup("irecv", recv_comm, ZSM_H_RECV,
				       (void **)&c);
	if (ret)
		return ret;
	if (n < 1 || n > ZSM_MAX_RECVS || !data || !sizes || !tags) {
		ZSM_WARN("irecv of %d buffers (maxRecvs %d)%s", n,
			 ZSM_MAX_RECVS,
			 data && sizes && tags ? "" : ", NULL arrays");
		return -EINVAL;
	}
	for (i = 0; i < n && !ret; i++) {
		ret = zsm_entry_tag_check("irecv", tags[i]);
		if (!ret && sizes[i] && !data[i])
			ret = zsm_entry_null("irecv", "a buffer");
		if (!ret && sizes[i] > ZSM_MAX_P2P_BYTES) {
			ZSM_WARN("irecv of %zu bytes: above maxP2pBytes",
				 sizes[i]);
			ret = -EINVAL;
		}
	}
	if (!ret)
		ret = zsm_comm_error(c);
	for (i = 0; i < n && !ret; i++)
		ret = zsm_entry_mr_take("irecv", c, mhs ? mhs[i] : NULL,
					data[i], sizes[i], &mr[i]);
	req = ret ? NULL : zsm_req_alloc(c);
	if (!req) {
		for (i = 0; i < n; i++)
			if (mr[i])
				zsm_mr_put(mr[i]);
		return ret; /* 0: NCCL retries a NULL request */
	}
	req->type = ZSM_REQ_RECV;
	req->n = (uint8_t)n;
	req->remaining = (uint8_t)n;
	for (i = 0; i < n; i++) {
		zsm_entry_req_buf(req, i, data[i], sizes[i], tags[i], mr[i]);
		req->sizes[i] = 0;
	}
	zsm_entry_submit(req, 0, request);
	return 0;
}

int zsm_iflush(void *recv_comm, int n, void **data, const int *sizes,
	       void **mhs, void **request)
{
	struct zsm_mr *mrs[ZSM_MAX_RECVS] = {0};
	struct zsm_comm *c;
	struct zsm_req *req;
	int flush = 0, ret;

	if (!request)
		return zsm_entry_null("iflush", "request");
	*request = NULL;
	ret = zsm_plugin_enter("iflush");
	if (!ret)
		ret = zsm_entry_lookup("iflush", recv_comm, ZSM_H_RECV,
				       (void **)&c);
	if (ret)
		return ret;
	if (n < 1 || n > ZSM_MAX_RECVS || !data || !sizes) {
		ZSM_WARN("iflush of %d buffers (maxRecvs %d)%s", n,
			 ZSM_MAX_RECVS, data && sizes ? "" : ", NULL arrays");
		return -EINVAL;
	}
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 0) {
			ZSM_WARN("iflush: buffer %d of %d bytes", i, sizes[i]);
			return -EINVAL;
		}
	}
	/* Whether the transport may read anything back at all, before any
	 * handle is looked at or a request taken. */
	ret = c->ops->flush(c, n, data, sizes, mrs, NULL, &flush);
	if (ret || !flush)
		return ret;
	/* It reads back at most one buffer, the last that got bytes: only
	 * that one's handle must be good. */
	for (int i = n - 1; i >= 0; i--) {
		if (sizes[i] == 0)
			continue;
		if (mhs && mhs[i]) {
			ret = zsm_entry_lookup("iflush", mhs[i], ZSM_H_MR,
					       (void **)&mrs[i]);
			if (!ret)
				ret = zsm_entry_mr_covers("iflush", mrs[i],
							  data[i],
							  (size_t)sizes[i]);
			if (ret)
				return ret;
		}
		break;
	}
	ret = zsm_comm_error(c);
	if (ret)
		return ret;
	req = zsm_req_alloc(c);
	if (!req) {
		/* A NULL request would say "flushed": fail instead. */
		ZSM_WARN("iflush: no request left on this comm (%d in use)",
			 ZSM_MAX_REQUESTS);
		return -ENOMEM;
	}
	ret = c->ops->flush(c, n, data, sizes, mrs, req, &flush);
	if (ret || !flush) {
		zsm_req_free(req);
		return ret;
	}
	zsm_entry_submit(req, 1, request);
	return 0;
}

int zsm_reg_window(void *comm, void *data, size_t size, int type, void **mh,
		   struct zsm_rma_window *win)
{
	struct zsm_comm *c;
	struct zsm_mr *mr;
	int ret;

	if (!win)
		return zsm_entry_null("regWindow", "window");
	memset(win, 0, sizeof(*win));
	ret = zsm_entry_reg_check("regWindow", data, size, type, mh);
	if (!ret)
		ret = zsm_plugin_enter("regWindow");
	if (!ret)
		ret = zsm_entry_any_comm("regWindow", comm, &c);
	if (ret)
		return ret;
	if (!size) {
		ZSM_WARN("regWindow: a window of 0 bytes");
		return -EINVAL;
	}
	if (!c->ops->reg_window) {
		ZSM_WARN("regWindow: the comm moves its data by %s, which has "
			 "no one-sided operations yet",
			 c->ops->name);
		return -EOPNOTSUPP;
	}
	ret = c->ops->reg_window(c, data, size, type, &mr, win);
	if (ret)
		return ret;
	ret = zsm_entry_mr_publish(mr, data, size, mh);
	if (!ret)
		win->id = mr->handle;
	return ret;
}

/* [off, off + len) lies inside window w: said once here when not. */
static int zsm_entry_win_check(const char *call, const char *what,
			       const struct zsm_rma_window *w, uint64_t off,
			       uint64_t len)
{
	if (!w)
		return zsm_entry_null(call, what);
	if (!w->id || off > w->size || len > w->size - off) {
		ZSM_WARN("%s: %llu bytes at %llu of the peer's %s window of "
			 "%llu bytes%s",
			 call, (unsigned long long)len, (unsigned long long)off,
			 what, (unsigned long long)w->size,
			 w->id ? "" : " (not a window: id 0)");
		return -EINVAL;
	}
	return 0;
}

/* The common part of iput and iget: a request on send_comm for size
 * bytes at buf (registration mh) and the window side addr/key. */
static int zsm_entry_rma(const char *call, int type, void *send_comm,
			 void *buf, size_t size, void *mh,
			 const struct zsm_rma_window *win, uint64_t off,
			 const struct zsm_req_rma *sig, void **request)
{
	struct zsm_comm *c;
	struct zsm_req *req;
	struct zsm_mr *mr = NULL;
	int ret;

	if (!request)
		return zsm_entry_null(call, "request");
	*request = NULL;
	ret = zsm_plugin_enter(call);
	if (!ret)
		ret = zsm_entry_lookup(call, send_comm, ZSM_H_SEND,
				       (void **)&c);
	if (ret)
		return ret;
	if (size > ZSM_MAX_P2P_BYTES || (size && !buf)) {
		ZSM_WARN("%s of %zu bytes at %p: %s", call, size, buf,
			 size > ZSM_MAX_P2P_BYTES ? "above maxP2pBytes"
						  : "NULL buffer");
		return -EINVAL;
	}
	if (size || type == ZSM_REQ_GET)
		ret = zsm_entry_win_check(call, "target", win, off, size);
	if (!ret && !c->ops->reg_window) {
		ZSM_WARN("%s: the comm moves its data by %s, which has no "
			 "one-sided operations yet",
			 call, c->ops->name);
		ret = -EOPNOTSUPP;
	}
	/* A get asks the owner to make its bytes ready, a message of the
	 * same kind as a signal. */
	if (!ret && (sig->sig_id || (type == ZSM_REQ_GET && size)))
		ret = c->ops->can_signal ? c->ops->can_signal(c) : -EOPNOTSUPP;
	if (!ret)
		ret = zsm_comm_error(c);
	if (!ret && size)
		ret = zsm_entry_mr_take(call, c, mh, buf, size, &mr);
	if (ret) {
		if (mr)
			zsm_mr_put(mr);
		return ret;
	}
	req = zsm_entry_req_get(c, mr);
	if (!req)
		return 0; /* none free: the caller asks again */
	req->type = (uint8_t)type;
	req->n = 1;
	req->remaining = 1;
	zsm_entry_req_buf(req, 0, buf, size, 0, mr);
	req->rma = *sig;
	if (size) {
		req->rma.addr = win->addr + off;
		req->rma.key = win->key;
		req->rma.dst_id = win->id;
		req->rma.dst_flags = win->flags;
	}
	/* Posted now where the engine is free: the issuer's next look may
	 * be long in coming (it waits on a signal word), and the hand-off
	 * to our thread is most of a small put's time. */
	if (zsm_proxy_submit_drive(&req->desc)) {
		zsm_req_free(req);
		return 0; /* the queue is full: the caller asks again */
	}
	*request = zsm_entry_handle_out(zsm_handle_arm(req->handle_index));
	return 0;
}

int zsm_iput(void *send_comm, void *src, size_t size, void *mh,
	     const struct zsm_rma_window *dst, uint64_t dst_off,
	     const struct zsm_rma_window *sig, uint64_t sig_off,
	     uint64_t sig_add, void **request)
{
	struct zsm_req_rma s = {0};

	if (request)
		*request = NULL;
	if (sig) {
		/* A signal word is 64 bits, aligned in its window. */
		if (sig_off % 8) {
			ZSM_WARN("iput: signal offset %llu is not 8-byte "
				 "aligned",
				 (unsigned long long)sig_off);
			return -EINVAL;
		}
		if (zsm_entry_win_check("iput", "signal", sig, sig_off, 8))
			return -EINVAL;
		s.sig_id = sig->id;
		s.sig_off = sig_off;
		s.sig_add = sig_add;
		s.sig_addr = sig->addr + sig_off;
		s.sig_key = sig->key;
		s.sig_flags = sig->flags;
	} else if (!size) {
		ZSM_WARN("iput of 0 bytes without a signal: nothing to do");
		return -EINVAL;
	}
	return zsm_entry_rma("iput", ZSM_REQ_PUT, send_comm, src, size, mh,
			     dst, dst_off, &s, request);
}

int zsm_iget(void *send_comm, void *dst, size_t size, void *mh,
	     const struct zsm_rma_window *src, uint64_t src_off,
	     void **request)
{
	const struct zsm_req_rma none = {0};

	return zsm_entry_rma("iget", ZSM_REQ_GET, send_comm, dst, size, mh,
			     src, src_off, &none, request);
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
	pthread_mutex_lock(&c->pool_lock);
	if (sets * ZSM_MAX_REQUESTS > c->max_reqs)
		c->max_reqs = sets * ZSM_MAX_REQUESTS;
	pthread_mutex_unlock(&c->pool_lock);
	return 0;
}

int zsm_progress(void)
{
	int ret = zsm_plugin_enter("progress");

	if (!ret)
		zsm_proxy_drive();
	return ret;
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

int zsm_test(void *request, int *done, int *sizes)
{
	struct zsm_req *req;
	int state, ret;

	if (!done)
		return zsm_entry_null("test", "done");
	*done = 0;
	ret = zsm_plugin_enter("test");
	if (!ret)
		ret = zsm_entry_lookup("test", request, ZSM_H_REQ,
				       (void **)&req);
	if (ret)
		return ret;
	/* acquire: pairs with the release that publishes the result. */
	state = atomic_load_explicit(&req->state, memory_order_acquire);
	if (state == ZSM_REQ_PENDING) {
		/* A pass for a one-sided request whatever the caller polled
		 * before: NCCL's RMA proxy goes round its puts and peers, which
		 * the waiter rule (ZSM_PROXY_ASSIST=auto on many CPUs) would
		 * leave to our thread's next look. */
		if (req->type == ZSM_REQ_PUT || req->type == ZSM_REQ_GET)
			zsm_proxy_drive();
		else
			zsm_proxy_assist(req);
		/* acquire: as above; the pass may have completed it. */
		state = atomic_load_explicit(&req->state,
					     memory_order_acquire);
		if (state == ZSM_REQ_PENDING)
			return 0;
	}
	*done = 1;
	if (sizes) {
		if (req->type == ZSM_REQ_RECV)
			memcpy(sizes, req->sizes, sizeof(int) * req->n);
		else
			sizes[0] = req->sizes[0];
	}
	/* A comm's failure was said where it was found, once for all its
	 * requests; a request's own (a message larger than its receive) is
	 * said here. */
	if (state < 0 && state != -ECANCELED &&
	    state != zsm_comm_error(req->comm))
		ZSM_WARN("%s: %s failed: %s", req->comm->ops->name,
			 zsm_req_what(req),
			 state == -EMSGSIZE
				 ? "the message is larger than the posted "
				   "receive buffer"
				 : strerror(-state));
	zsm_req_free(req);
	return state < 0 ? state : 0;
}
