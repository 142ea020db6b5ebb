/* SPDX-License-Identifier: MIT */
/*
 * Owns memory registration with the provider: the one place that honours
 * the mr_mode bits a provider asks for, behind the registration cache.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "ce/ce.h"
#include "common/log.h"
#include "common/mr_cache.h"
#include "common/param.h"
#include "net/net.h"

static int zsm_net_mr_prov_reg(void *arg, uintptr_t start, size_t len,
			       int type, void **prov)
{
	struct zsm_net_ep *ep = arg;
	struct fid_mr *mr = NULL;
	struct fi_mr_attr attr = {0};
	struct iovec iov = {.iov_base = (void *)start, .iov_len = len};
	static uint64_t next_key;
	int ret;

	/* Host memory on a provider that does not need registrations: the
	 * handle only carries a NULL descriptor. */
	if (!ep->needs_mr && type == NCCL_PTR_HOST) {
		*prov = NULL;
		return 0;
	}
	attr.iface = FI_HMEM_SYSTEM;
	if (type == NCCL_PTR_CUDA && ep->dev->gdr.reg == ZSM_HMEM_REG_CUDA) {
		/* GPUDirect: the provider pins the GPU pages itself. */
		ret = zsm_ce_cuda_ptr_device((void *)start, &attr.device.cuda);
		if (ret) {
			ZSM_WARN("net: %s: %zu bytes at 0x%lx are not GPU "
				 "memory CUDA knows",
				 ep->dev->name, len, (unsigned long)start);
			return -EINVAL;
		}
		attr.iface = FI_HMEM_CUDA;
	} else if (type != NCCL_PTR_HOST) {
		ZSM_WARN("net: %s: registering memory of type %d is not "
			 "supported (%s)",
			 ep->dev->name, type, ep->dev->gdr.why);
		return -ENOTSUP;
	}
	attr.mr_iov = &iov;
	attr.iov_count = 1;
	attr.access = FI_SEND | FI_RECV;
	/* FI_MR_PROV_KEY: the provider picks the key; else keys must be
	 * unique per domain. */
	attr.requested_key = (ep->mr_mode & FI_MR_PROV_KEY) ? 0 : ++next_key;
	ret = fi_mr_regattr(ep->domain, &attr, 0, &mr);
	if (ret) {
		ZSM_WARN("net: %s: fi_mr_regattr of %zu bytes of %s memory "
			 "failed: %s%s",
			 ep->dev->name, len,
			 attr.iface == FI_HMEM_CUDA ? "GPU" : "host",
			 fi_strerror(-ret),
			 attr.iface == FI_HMEM_CUDA
				 ? " (ZSM_GDR=0 keeps GPU buffers off the "
				   "network)"
				 : "");
		return -EIO;
	}
	/* FI_MR_ENDPOINT: a registration works only once bound and enabled. */
	if (ep->mr_mode & FI_MR_ENDPOINT) {
		ret = fi_mr_bind(mr, &ep->ep->fid, 0);
		if (!ret)
			ret = fi_mr_enable(mr);
		if (ret) {
			ZSM_WARN("net: %s: binding a registration to the "
				 "endpoint failed: %s",
				 ep->dev->name, fi_strerror(-ret));
			fi_close(&mr->fid);
			return -EIO;
		}
	}
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

int zsm_net_mr_reg(struct zsm_net_ep *ep, void *data, size_t size, int type,
		   struct zsm_net_mr **out)
{
	struct zsm_net_mr *mr = calloc(1, sizeof(*mr));
	int ret;

	if (!mr)
		return -ENOMEM;
	/* The domain is opened FI_THREAD_DOMAIN: registrations from the
	 * service thread serialise with the engine through its lock. */
	zsm_proxy_lock();
	ret = zsm_mr_cache_get(ep->mr_cache, data, size, type, &mr->entry);
	zsm_proxy_unlock();
	if (ret) {
		free(mr);
		return ret;
	}
	mr->magic = ZSM_MR_MAGIC;
	mr->ep = ep;
	mr->type = type;
	mr->desc = mr->entry->prov ? fi_mr_desc(mr->entry->prov) : NULL;
	*out = mr;
	return 0;
}

int zsm_net_mr_dereg(struct zsm_net_mr *mr)
{
	struct zsm_net_ep *ep = mr->ep;

	zsm_proxy_lock();
	zsm_mr_cache_put(ep->mr_cache, mr->entry);
	zsm_proxy_unlock();
	mr->magic = 0;
	free(mr);
	return 0;
}
