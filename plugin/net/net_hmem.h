/* SPDX-License-Identifier: MIT */
/*
 * Whether a network device takes GPU buffers (GPUDirect RDMA through
 * libfabric's FI_HMEM), decided once per device from what the provider,
 * the CUDA driver and the user allow.  Pure, so unit tests can walk every
 * case on a machine with neither a GPU nor such a provider.
 */
#ifndef ZSM_NET_HMEM_H
#define ZSM_NET_HMEM_H

#include <stddef.h>

struct zsm_net_hmem_in {
	const char *prov;   /* provider name, for the reason */
	int prov_hmem;	    /* it offered FI_HMEM for this domain */
	int cuda;	    /* a CUDA driver with at least one device */
	int min_cc;	    /* lowest compute capability, 10 * major + minor */
	int gdr_param;	    /* ZSM_GDR: 0 never */
};

enum zsm_net_hmem_reg {
	ZSM_HMEM_REG_NONE = 0, /* host memory only */
	ZSM_HMEM_REG_CUDA,     /* fi_mr_regattr with iface FI_HMEM_CUDA */
};

struct zsm_net_hmem_plan {
	int ptr_support; /* NCCL_PTR_* for getProperties */
	enum zsm_net_hmem_reg reg;
	char why[192];	 /* what was decided and why, for one INFO line */
};

/* Hopper and later need no flush after GPUDirect writes (the ABI notes). */
#define ZSM_HMEM_NO_FLUSH_CC 90

void zsm_net_hmem_decide(const struct zsm_net_hmem_in *in,
			 struct zsm_net_hmem_plan *out);

#endif
