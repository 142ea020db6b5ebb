/* SPDX-License-Identifier: MIT */
/*
 * Owns memory registration with the provider: the one place that honours
 * the mr_mode bits a provider asks for, behind the registration cache.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "common/cuda.h"
#include "common/handle.h"
#include "common/log.h"
#include "common/mr_cache.h"
#include "common/param.h"
#include "net/net.h"
#include "net/net_api.h"
#include "net/net_fi_abi.h"

/* Access every registration asks for: what the endpoint can do with it. */
static uint64_t zsm_net_mr_access(const struct zsm_net_ep *ep)
{
	/* Flushes read registered buffers back through the endpoint; puts
	 * write from them and gets read into them. */
	return FI_SEND | FI_RECV | (ep->dev->read ? FI_REMOTE_READ : 0) |
	       (ep->rma ? FI_WRITE | FI_READ : 0);
}

/*
 * fi_mr_regattr, then the binding FI_MR_ENDPOINT asks for.  `what` names
 * the memory for the warning; hint follows it.
 */
static int zsm_net_mr_attr_reg(struct zsm_net_ep *ep,
			       struct zsm_fi_mr_attr *attr, uint64_t flags,
			       const char *what, const char *hint,
			       struct fid_mr **out)
{
	/* Keys unique per domain unless the provider picks them. */
	static uint64_t next_key;
	struct fid_mr *mr = NULL;
	int ret;

	attr->requested_key =
		(ep->fi.mr_mode & FI_MR_PROV_KEY) ? 0 : ++next_key;
	ret = zsm_fi_mr_regattr(ep->fi.domain, attr, flags, &mr);
	if (ret) {
		ZSM_WARN("net: %s: fi_mr_regattr of %s failed: %s%s",
			 ep->dev->name, what, zsm_fi_strerror(-ret), hint);
		return -EIO;
	}
	if (ep->fi.mr_mode & FI_MR_ENDPOINT) {
		ret = fi_mr_bind(mr, &ep->fi.ep->fid, 0);
		if (!ret)
			ret = fi_mr_enable(mr);
		if (ret) {
			ZSM_WARN("net: %s: binding a registration to the "
				 "endpoint failed: %s",
				 ep->dev->name, zsm_fi_strerror(-ret));
			fi_close(&mr->fid);
			return -EIO;
		}
	}
	*out = mr;
	return 0;
}

/*
 * GPU memory as a dma-buf: NCCL's fd when regMrDmaBuf gave one
 * (ep->dmabuf.fd, under the engine lock), else one the driver exports now.
 * -ENOSYS when no fd could be had or the provider refuses dma-bufs: the
 * caller registers CUDA memory instead.
 */
static int zsm_net_mr_dmabuf_reg(struct zsm_net_ep *ep, uintptr_t start,
				 size_t len, struct zsm_fi_mr_attr *attr,
				 struct fid_mr **out)
{
	struct zsm_fi_mr_dmabuf dmabuf = { .len = len };
	char what[96];
	void *base = ep->dmabuf.base;
	uint64_t offset = 0;
	int fd = ep->dmabuf.fd, own = -1, ret;

	if (ep->dmabuf.refused)
		return -ENOSYS;
	/* NCCL's fd covers its buffer from byte 0; a cached range reaching
	 * below that takes an fd of its own. */
	if (fd >= 0 && start < (uintptr_t)base)
		fd = -1;
	if (fd < 0) {
		if (zsm_cuda_dmabuf_get((void *)start, len, &own, &base,
					   &offset))
			return -ENOSYS;
		fd = own;
	}
	dmabuf.fd = fd;
	dmabuf.base_addr = base;
	dmabuf.offset = start - (uintptr_t)base;
	attr->dmabuf = &dmabuf;
	snprintf(what, sizeof(what), "a %zu-byte GPU dma-buf", len);
	ret = zsm_net_mr_attr_reg(ep, attr, ZSM_FI_MR_DMABUF, what,
				  " (GPU memory is registered as CUDA memory "
				  "from now on; ZSM_DMABUF=0 does so from the "
				  "start)",
				  out);
	/* The provider imported it; NCCL closes its own. */
	if (own >= 0)
		close(own);
	/* A provider or kernel without dma-buf support refuses them all;
	 * CUDA registrations may still work (nvidia-peermem). */
	if (ret)
		ep->dmabuf.refused = 1;
	return ret ? -ENOSYS : 0;
}

static int zsm_net_mr_prov_reg(void *arg, uintptr_t start, size_t len,
			       int type, void **prov)
{
	struct zsm_net_ep *ep = arg;
	const struct zsm_net_hmem_plan *gdr = &ep->dev->gdr;
	struct fid_mr *mr = NULL;
	struct zsm_fi_mr_attr attr = {0};
	struct iovec iov = {.iov_base = (void *)start, .iov_len = len};
	char what[96];
	int ret;

	/* Host memory on a provider that does not need registrations, and
	 * no flush reading it back: the handle only carries a NULL
	 * descriptor. */
	if (!ep->fi.needs_mr && type == ZSM_MEM_HOST && !gdr->flush_host) {
		*prov = NULL;
		return 0;
	}
	attr.mr_iov = &iov;
	attr.iov_count = 1;
	attr.access = zsm_net_mr_access(ep);
	attr.iface = FI_HMEM_SYSTEM;
	if (type == ZSM_MEM_CUDA && gdr->reg != ZSM_HMEM_REG_NONE) {
		/* GPUDirect: the provider pins the GPU pages itself. */
		ret = zsm_cuda_ptr_device((void *)start, &attr.device.cuda);
		if (ret) {
			ZSM_WARN("net: %s: %zu bytes at 0x%lx are not GPU "
				 "memory CUDA knows",
				 ep->dev->name, len, (unsigned long)start);
			return -EINVAL;
		}
		attr.iface = FI_HMEM_CUDA;
		if (gdr->reg == ZSM_HMEM_REG_DMABUF) {
			ret = zsm_net_mr_dmabuf_reg(ep, start, len, &attr,
						    &mr);
			if (ret != -ENOSYS) {
				*prov = mr;
				return ret;
			}
			attr.mr_iov = &iov;
		}
	} else if (type != ZSM_MEM_HOST) {
		ZSM_WARN("net: %s: registering memory of type %d is not "
			 "supported (%s)",
			 ep->dev->name, type, gdr->why);
		return -ENOTSUP;
	}
	snprintf(what, sizeof(what), "%zu bytes of %s memory", len,
		 attr.iface == FI_HMEM_CUDA ? "GPU" : "host");
	ret = zsm_net_mr_attr_reg(ep, &attr, 0, what,
				  attr.iface == FI_HMEM_CUDA
					  ? " (ZSM_GDR=0 keeps GPU buffers "
					    "off the network)"
					  : "",
				  &mr);
	if (ret)
		return ret;
	*prov = mr;
	return 0;
}

static void zsm_net_mr_prov_dereg(void *arg, void *prov)
{
	(void)arg;
	if (prov)
		fi_close(&((struct fid_mr *)prov)->fid);
}

static const struct zsm_mr_cache_ops zsm_net_mr_cache_ops = {
	.reg = zsm_net_mr_prov_reg,
	.dereg = zsm_net_mr_prov_dereg,
};

int zsm_net_mr_init(struct zsm_net_ep *ep)
{
	ep->mr_cache = calloc(1, sizeof(*ep->mr_cache));
	if (!ep->mr_cache)
		return -ENOMEM;
	zsm_mr_cache_init(ep->mr_cache, &zsm_net_mr_cache_ops, ep,
			  (int)zsm_param_int(ZSM_P_MR_CACHE));
	return 0;
}

void zsm_net_mr_fini(struct zsm_net_ep *ep)
{
	if (!ep->mr_cache)
		return;
	zsm_mr_cache_fini(ep->mr_cache);
	free(ep->mr_cache);
	ep->mr_cache = NULL;
}

/* mr is complete: count it in and list it on its endpoint (engine lock). */
static void zsm_net_mr_link_locked(struct zsm_net_ep *ep,
				   struct zsm_net_mr *mr)
{
	mr->ep = ep;
	mr->base.ops = &zsm_net_comm_ops;
	/* relaxed: nobody else knows mr yet. */
	atomic_init(&mr->base.refs, 1);
	mr->ep_next = ep->mrs;
	if (ep->mrs)
		ep->mrs->ep_prev = &mr->ep_next;
	mr->ep_prev = &ep->mrs;
	ep->mrs = mr;
}

static int zsm_net_mr_get(struct zsm_net_ep *ep, void *data, size_t size,
			  int type, int dmabuf_fd, uint64_t dmabuf_offset,
			  struct zsm_net_mr **out)
{
	struct zsm_net_mr *mr = calloc(1, sizeof(*mr));
	int ret;

	if (!mr)
		return -ENOMEM;
	/* The domain is opened FI_THREAD_DOMAIN: registrations from the
	 * service thread serialise with the engine through its lock, which
	 * also keeps the dma-buf fd ours until the registration is done. */
	zsm_proxy_lock();
	ep->dmabuf.fd = dmabuf_fd;
	ep->dmabuf.base = (char *)data - dmabuf_offset;
	ret = zsm_mr_cache_get(ep->mr_cache, data, size, type, &mr->entry);
	ep->dmabuf.fd = -1;
	ep->dmabuf.base = NULL;
	if (!ret) {
		mr->base.type = type;
		mr->desc = mr->entry->prov ? fi_mr_desc(mr->entry->prov)
					   : NULL;
		zsm_net_mr_link_locked(ep, mr);
	}
	zsm_proxy_unlock();
	if (ret) {
		free(mr);
		return ret;
	}
	*out = mr;
	return 0;
}

int zsm_net_mr_reg(struct zsm_net_ep *ep, void *data, size_t size, int type,
		   struct zsm_net_mr **out)
{
	return zsm_net_mr_get(ep, data, size, type, -1, 0, out);
}

/*
 * A window: a provider registration of its own with remote access (a
 * cache entry may be shared with registrations peers must not write),
 * even where host memory needs none for local use.
 */
int zsm_net_mr_reg_window(struct zsm_net_ep *ep, void *data, size_t size,
			  int type, struct zsm_net_mr **out)
{
	struct zsm_fi_mr_attr attr = {0};
	struct iovec iov = {.iov_base = data, .iov_len = size};
	struct zsm_net_mr *mr = calloc(1, sizeof(*mr));
	char what[96];
	int ret;

	if (!mr)
		return -ENOMEM;
	/* No provider here writes GPU memory: its writes land in the
	 * mirror, and the engine copies them up when told. */
	if (type == ZSM_MEM_CUDA) {
		char why[256];

		ret = zsm_cuda_win_mirror_new(&mr->mirror, data, size, why,
					      sizeof(why));
		if (ret) {
			ZSM_WARN("net: %s: a %zu-byte GPU window: %s",
				 ep->dev->name, size, why);
			free(mr);
			return ret;
		}
		iov.iov_base = mr->mirror.host;
	}
	attr.mr_iov = &iov;
	attr.iov_count = 1;
	attr.access = zsm_net_mr_access(ep) | FI_REMOTE_WRITE | FI_REMOTE_READ;
	attr.iface = FI_HMEM_SYSTEM;
	snprintf(what, sizeof(what), "a %zu-byte window%s", size,
		 mr->mirror.host ? " (a GPU window's host copy)" : "");
	/* FI_THREAD_DOMAIN: registrations serialise with the engine. */
	zsm_proxy_lock();
	ret = zsm_net_mr_attr_reg(ep, &attr, 0, what, "", &mr->window);
	/* A duplex device: the same bytes in the other endpoint's domain
	 * too (its windows count, as ours: a provider that places peers'
	 * writes in software does so only while it is polled). */
	if (!ret) {
		ret = zsm_net_ep_twin(ep, &mr->twin_ep);
		if (!ret && mr->twin_ep)
			ret = zsm_net_mr_attr_reg(mr->twin_ep, &attr, 0, what,
						  "", &mr->twin);
		if (ret)
			fi_close(&mr->window->fid);
	}
	if (!ret) {
		mr->base.type = type;
		mr->desc = fi_mr_desc(mr->window);
		if (mr->twin) {
			mr->twin_desc = fi_mr_desc(mr->twin);
			mr->twin_ep->windows++;
		} else {
			mr->twin_ep = NULL;
		}
		mr->start = data;
		mr->size = size;
		ep->windows++;
		zsm_net_mr_link_locked(ep, mr);
	}
	/* An endpoint with windows is polled (tcp places writes only
	 * then): wake a thread that went to sleep before. */
	zsm_proxy_caller_leave();
	if (ret) {
		zsm_cuda_win_mirror_free(&mr->mirror);
		free(mr);
		return ret;
	}
	*out = mr;
	return 0;
}

int zsm_net_mr_reg_dmabuf(struct zsm_net_ep *ep, void *data, size_t size,
			  int fd, uint64_t offset, struct zsm_net_mr **out)
{
	return zsm_net_mr_get(ep, data, size, ZSM_MEM_CUDA, fd, offset, out);
}

int zsm_net_mr_flush_target(const struct zsm_net_mr *mr, const void *data,
			    uint64_t *addr, uint64_t *key)
{
	struct fid_mr *prov = mr->entry ? mr->entry->prov : NULL;

	if (!prov)
		return -ENOENT;
	*key = fi_mr_key(prov);
	/* Without FI_MR_VIRT_ADDR, remote addresses count from the start of
	 * the registration. */
	*addr = (mr->ep->fi.mr_mode & FI_MR_VIRT_ADDR)
			? (uint64_t)(uintptr_t)data
			: (uint64_t)((uintptr_t)data - mr->entry->start);
	return 0;
}

int zsm_net_mr_reg_internal(struct zsm_net_ep *ep, void *buf, size_t len,
			    uint64_t access, void **mr, void **desc)
{
	struct zsm_fi_mr_attr attr = {0};
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct fid_mr *m;
	int ret;

	attr.mr_iov = &iov;
	attr.iov_count = 1;
	attr.access = access;
	attr.iface = FI_HMEM_SYSTEM;
	ret = zsm_net_mr_attr_reg(ep, &attr, 0, "the endpoint's own buffers",
				  "", &m);
	if (ret)
		return ret;
	*mr = m;
	*desc = fi_mr_desc(m);
	return 0;
}

void zsm_net_mr_dereg_internal(void *mr)
{
	fi_close(&((struct fid_mr *)mr)->fid);
}

int zsm_net_mr_flush_init(struct zsm_net_ep *ep)
{
	struct zsm_fi_mr_attr attr = {0};
	struct iovec iov;
	long page = sysconf(_SC_PAGESIZE);
	int ret;

	ep->flush.buf = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ep->flush.buf == MAP_FAILED) {
		ep->flush.buf = NULL;
		return -ENOMEM;
	}
	iov.iov_base = ep->flush.buf;
	iov.iov_len = (size_t)page;
	attr.mr_iov = &iov;
	attr.iov_count = 1;
	/* The local end of reads. */
	attr.access = FI_READ;
	attr.iface = FI_HMEM_SYSTEM;
	ret = zsm_net_mr_attr_reg(ep, &attr, 0, "the flush page", "",
				  &ep->flush.mr);
	if (ret) {
		munmap(ep->flush.buf, (size_t)page);
		ep->flush.buf = NULL;
		return ret;
	}
	ep->flush.desc = fi_mr_desc(ep->flush.mr);
	return 0;
}

void zsm_net_mr_flush_fini(struct zsm_net_ep *ep)
{
	if (ep->flush.mr)
		fi_close(&ep->flush.mr->fid);
	ep->flush.mr = NULL;
	if (ep->flush.buf)
		munmap(ep->flush.buf, (size_t)sysconf(_SC_PAGESIZE));
	ep->flush.buf = NULL;
}

static void zsm_net_mr_free_locked(struct zsm_net_mr *mr)
{
	*mr->ep_prev = mr->ep_next;
	if (mr->ep_next)
		mr->ep_next->ep_prev = mr->ep_prev;
	if (mr->window) {
		fi_close(&mr->window->fid);
		mr->ep->windows--;
		if (mr->twin) {
			fi_close(&mr->twin->fid);
			mr->twin_ep->windows--;
		}
		zsm_cuda_win_mirror_free(&mr->mirror);
	} else
		zsm_mr_cache_put(mr->ep->mr_cache, mr->entry);
	free(mr);
}

void zsm_net_mr_free_op(struct zsm_mr *mr)
{
	zsm_net_mr_free_locked(zsm_net_mr_of(mr));
}

int zsm_net_mr_reg_op(struct zsm_comm *c, void *data, size_t size, int type,
		      int dmabuf_fd, uint64_t offset, struct zsm_mr **out)
{
	struct zsm_net_comm *comm = c->tp;
	struct zsm_net_ep *ep = comm->ep;
	struct zsm_net_mr *mr;
	int ret;

	if (type == ZSM_MEM_CUDA && ep->dev->gdr.reg == ZSM_HMEM_REG_NONE) {
		ZSM_WARN("net: %s: GPU buffers on a comm to another host, "
			 "and this device takes host memory only (%s)",
			 ep->dev->name, ep->dev->gdr.why);
		return -EOPNOTSUPP;
	}
	/* Only devices that register dma-bufs take NCCL's fd; the others
	 * register the memory as CUDA memory. */
	if (type == ZSM_MEM_CUDA && dmabuf_fd >= 0 &&
	    ep->dev->gdr.reg == ZSM_HMEM_REG_DMABUF)
		ret = zsm_net_mr_get(ep, data, size, type, dmabuf_fd, offset,
				     &mr);
	else
		ret = zsm_net_mr_get(ep, data, size, type, -1, 0, &mr);
	if (ret)
		return ret;
	*out = &mr->base;
	return 0;
}

/*
 * Teardown: every registration goes, whether NCCL dropped it or not; a
 * handle still open is closed, so a later deregMr is refused cleanly.
 */
void zsm_net_mr_close_all(struct zsm_net_ep *ep)
{
	while (ep->mrs) {
		struct zsm_net_mr *mr = ep->mrs;
		void *obj;

		if (mr->base.handle)
			zsm_handle_close(mr->base.handle, ZSM_H_MR, &obj);
		zsm_net_mr_free_locked(mr);
	}
}

/* The windows of ep (one endpoint's list) with a registration in dead's
 * domain lose it. */
static void zsm_net_mr_drop_twins_of(struct zsm_net_ep *ep,
				     struct zsm_net_ep *dead)
{
	for (struct zsm_net_mr *mr = ep ? ep->mrs : NULL; mr; mr = mr->ep_next)
		if (mr->twin && mr->twin_ep == dead) {
			fi_close(&mr->twin->fid);
			dead->windows--;
			mr->twin = NULL;
			mr->twin_desc = NULL;
			mr->twin_ep = NULL;
		}
}

void zsm_net_mr_drop_twins(struct zsm_net_ep *ep)
{
	struct zsm_net_dev *dev = ep->dev;
	struct zsm_net_ep *e;
	int at = 0;

	if (!dev || !dev->duplex)
		return;
	while ((e = zsm_net_dev_next_ep(dev, &at)))
		zsm_net_mr_drop_twins_of(e, ep);
	for (struct zsm_net_ep *r = dev->retired; r; r = r->retired_next)
		zsm_net_mr_drop_twins_of(r, ep);
}
