/* SPDX-License-Identifier: MIT */
/* Owns the GPUDirect decision of net_hmem.h. */
#include "net/net_hmem.h"

#include <stdio.h>
#include <string.h>

#include "abi/nccl_net.h"

static void zsm_net_hmem_host(struct zsm_net_hmem_plan *out, const char *why)
{
	out->ptr_support = NCCL_PTR_HOST;
	out->reg = ZSM_HMEM_REG_NONE;
	snprintf(out->why, sizeof(out->why), "host memory only: %s", why);
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

void zsm_net_hmem_decide(const struct zsm_net_hmem_in *in,
			 struct zsm_net_hmem_plan *out)
{
	char why[160];

	memset(out, 0, sizeof(*out));
	if (!in->gdr_param) {
		zsm_net_hmem_host(out, "ZSM_GDR=0");
		return;
	}
	if (!in->cuda) {
		zsm_net_hmem_host(out, "no CUDA driver or device");
		return;
	}
	if (in->prov_hmem && !zsm_net_hmem_rdma_prov(in->prov)) {
		snprintf(why, sizeof(why),
			 "%s offers FI_HMEM, but not as GPUDirect RDMA (it "
			 "would copy through host memory itself)",
			 in->prov ? in->prov : "the provider");
		zsm_net_hmem_host(out, why);
		return;
	}
	if (!in->prov_hmem) {
		snprintf(why, sizeof(why),
			 "%s offers no FI_HMEM (a libfabric built without "
			 "CUDA, or a provider without GPUDirect)",
			 in->prov ? in->prov : "the provider");
		zsm_net_hmem_host(out, why);
		return;
	}
	/*
	 * Before Hopper NCCL calls iflush after each GPUDirect receive and
	 * relies on it to order the NIC's writes before the kernel's reads;
	 * a flush that does nothing would hand the kernel stale bytes.
	 */
	if (!in->min_cc) {
		zsm_net_hmem_host(out, "the GPUs' compute capability is "
				       "unknown, and GPUs before Hopper need "
				       "a flush after GPUDirect writes, "
				       "which zsm does not do yet");
		return;
	}
	if (in->min_cc < ZSM_HMEM_NO_FLUSH_CC) {
		snprintf(why, sizeof(why),
			 "a GPU of compute capability %d.%d needs a flush "
			 "after GPUDirect writes, which zsm does not do yet",
			 in->min_cc / 10, in->min_cc % 10);
		zsm_net_hmem_host(out, why);
		return;
	}
	out->ptr_support = NCCL_PTR_HOST | NCCL_PTR_CUDA;
	out->reg = ZSM_HMEM_REG_CUDA;
	snprintf(out->why, sizeof(out->why),
		 "GPU buffers through %s's FI_HMEM (CUDA registrations; no "
		 "flush needed on compute capability %d.%d)",
		 in->prov ? in->prov : "the provider", in->min_cc / 10,
		 in->min_cc % 10);
}
