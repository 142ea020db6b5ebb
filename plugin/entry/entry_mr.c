/* SPDX-License-Identifier: MIT */
/*
 * Owns the entry points of registrations: every range and type a
 * caller hands over is checked here before a transport sees it, and a
 * registration is a handle whose bytes bound every transfer made with it.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/cuda.h"
#include "common/handle.h"
#include "common/log.h"
#include "core/comm.h"
#include "entry/entry.h"
#include "entry/entry_int.h"
#include "entry/lifetime.h"
#include "proxy/proxy.h"

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

int zsm_entry_mr_publish(struct zsm_mr *mr, const void *data,
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

int zsm_entry_reg_check(const char *call, void *data, size_t size,
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
		ret = zsm_entry_life_enter(call);
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

	if (!mh || zsm_entry_life_in_child("deregMr"))
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

int zsm_entry_mr_covers(const char *call, const struct zsm_mr *mr,
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

int zsm_entry_mr_take(const char *call, struct zsm_comm *c, void *mh,
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
		ret = zsm_entry_life_enter("regWindow");
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
