/* SPDX-License-Identifier: MIT */
/* Owns the GPUDirect decision of net_hmem.h. */
#include "net/net_hmem.h"

#include <stdio.h>
#include <string.h>

#include "core/limits.h"
#include "net/net_fi_abi.h"

static const char *zsm_net_hmem_prov(const struct zsm_net_hmem_in *in)
{
	return in->prov ? in->prov : "the provider";
}

/* out->flush_host is set already. */
static void zsm_net_hmem_host(struct zsm_net_hmem_plan *out, const char *why)
{
	out->ptr_support = ZSM_MEM_HOST;
	out->reg = ZSM_HMEM_REG_NONE;
	out->flush_gpu = 0;
	snprintf(out->why, sizeof(out->why), "host memory only: %s%s", why,
		 out->flush_host ? "; iflush reads host buffers back "
				   "(ZSM_GDR_FLUSH=always)"
				 : "");
}

/*
 * Providers whose FI_HMEM means the NIC reads and writes GPU memory
 * itself.  Others (tcp, shm, sockets) may offer FI_HMEM by copying through
 * host memory with CUDA calls of their own: slower than NCCL's staging,
 * and CUDA calls inside the provider can deadlock against NCCL's.
 */
static int zsm_net_hmem_rdma_prov(const char *prov)
{
	static const char *const rdma[] = { "efa", "cxi", "verbs;ofi_rxm" };

	for (size_t i = 0; prov && i < sizeof(rdma) / sizeof(rdma[0]); i++)
		if (strcmp(prov, rdma[i]) == 0)
			return 1;
	return 0;
}

/* Why GPU buffers cannot go over this device, or NULL when they can. */
static const char *zsm_net_hmem_refuse(const struct zsm_net_hmem_in *in,
				       char *why, size_t len)
{
	if (!in->gdr_param)
		return "ZSM_GDR=0";
	if (!in->cuda)
		return "no CUDA driver or device";
	if (in->prov_hmem && !zsm_net_hmem_rdma_prov(in->prov)) {
		snprintf(why, len,
			 "%s offers FI_HMEM, but not as GPUDirect RDMA (it "
			 "would copy through host memory itself)",
			 zsm_net_hmem_prov(in));
		return why;
	}
	if (!in->prov_hmem) {
		snprintf(why, len,
			 "%s offers no FI_HMEM (a libfabric built without "
			 "CUDA, or a provider without GPUDirect)",
			 zsm_net_hmem_prov(in));
		return why;
	}
	/*
	 * Before Hopper NCCL calls iflush after each GPUDirect receive and
	 * relies on it to order the NIC's writes before the kernel's reads;
	 * a flush that does nothing would hand the kernel stale bytes.  The
	 * flush is an RMA read, so without reads there is none, unless the
	 * user says the platform orders the writes (ZSM_GDR_FLUSH=never).
	 */
	if (in->flush_param == ZSM_FLUSH_PARAM_NEVER || in->prov_read)
		return NULL;
	if (!in->min_cc)
		return "the GPUs' compute capability is unknown, GPUs before "
		       "Hopper need a flush after GPUDirect writes, and the "
		       "provider offers no RMA read to flush with";
	if (in->min_cc < ZSM_HMEM_NO_FLUSH_CC) {
		snprintf(why, len,
			 "a GPU of compute capability %d.%d needs a flush "
			 "after GPUDirect writes, and %s offers no RMA read "
			 "to flush with (ZSM_GDR_FLUSH=never if the platform "
			 "orders them)",
			 in->min_cc / 10, in->min_cc % 10,
			 zsm_net_hmem_prov(in));
		return why;
	}
	return NULL;
}

/* dma-buf registration, or why not (into why). */
static int zsm_net_hmem_dmabuf(const struct zsm_net_hmem_in *in,
			       char *why, size_t len)
{
	if (!in->dmabuf_param)
		snprintf(why, len, "ZSM_DMABUF=0");
	else if (in->fi_api < ZSM_FI_API_DMABUF)
		snprintf(why, len,
			 "libfabric %u.%u is older than 1.20, the first to "
			 "register dma-bufs",
			 FI_MAJOR(in->fi_api), FI_MINOR(in->fi_api));
	else if (!in->cuda_dmabuf)
		snprintf(why, len, "a GPU or the driver cannot export "
				   "dma-bufs");
	else
		return 1;
	return 0;
}

void zsm_net_hmem_decide(const struct zsm_net_hmem_in *in,
			 struct zsm_net_hmem_plan *out)
{
	char why[192], no_dmabuf[96];
	const char *refused;
	const char *flush;

	memset(out, 0, sizeof(*out));
	/* Forced flushes test the read path on any provider with reads,
	 * whether it takes GPU buffers or not. */
	out->flush_host = in->prov_read &&
			  in->flush_param == ZSM_FLUSH_PARAM_ALWAYS;
	refused = zsm_net_hmem_refuse(in, why, sizeof(why));
	if (refused) {
		zsm_net_hmem_host(out, refused);
		return;
	}
	out->ptr_support = ZSM_MEM_HOST | ZSM_MEM_CUDA;
	out->reg = ZSM_HMEM_REG_CUDA;
	if (zsm_net_hmem_dmabuf(in, no_dmabuf, sizeof(no_dmabuf))) {
		out->ptr_support |= ZSM_MEM_DMABUF;
		out->reg = ZSM_HMEM_REG_DMABUF;
	}
	out->flush_gpu = in->prov_read &&
			 in->flush_param != ZSM_FLUSH_PARAM_NEVER;
	if (in->flush_param == ZSM_FLUSH_PARAM_NEVER)
		flush = "no flush (ZSM_GDR_FLUSH=never)";
	else if (out->flush_gpu)
		flush = "iflush by a loopback RMA read";
	else
		flush = "no flush needed on Hopper and later (no RMA read to "
			"flush with if NCCL asks)";
	if (out->reg == ZSM_HMEM_REG_DMABUF)
		snprintf(out->why, sizeof(out->why),
			 "GPU buffers through %s's FI_HMEM, registered as "
			 "dma-bufs; %s",
			 zsm_net_hmem_prov(in), flush);
	else
		snprintf(out->why, sizeof(out->why),
			 "GPU buffers through %s's FI_HMEM, registered as "
			 "CUDA memory (no dma-buf: %s); %s",
			 zsm_net_hmem_prov(in), no_dmabuf, flush);
}
