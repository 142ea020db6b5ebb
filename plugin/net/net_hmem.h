/* SPDX-License-Identifier: MIT */
/*
 * Whether a network device takes GPU buffers (GPUDirect RDMA through
 * libfabric's FI_HMEM), how it registers them, and how iflush makes the
 * NIC's writes visible; decided once per device from what the provider,
 * the CUDA driver and the user allow.  Pure, so unit tests can walk every
 * case on a machine with neither a GPU nor such a provider.
 */
#ifndef ZSM_NET_HMEM_H
#define ZSM_NET_HMEM_H

#include <stddef.h>
#include <stdint.h>

/* ZSM_GDR_FLUSH, in its table's order. */
enum zsm_net_flush_param {
	ZSM_FLUSH_PARAM_AUTO = 0,
	ZSM_FLUSH_PARAM_NEVER,
	ZSM_FLUSH_PARAM_ALWAYS,
};

struct zsm_net_hmem_in {
	const char *prov;   /* provider name, for the reason */
	int prov_hmem;	    /* it offered FI_HMEM for this domain */
	int prov_read;	    /* its offer has FI_RMA reads (loopback flush) */
	uint32_t fi_api;    /* the FI_VERSION the device's fabric speaks */
	int cuda;	    /* a CUDA driver with at least one device */
	int min_cc;	    /* lowest compute capability, 10 * major + minor */
	int cuda_dmabuf;    /* every GPU exports dma-bufs, the driver can */
	int gdr_param;	    /* ZSM_GDR: 0 never */
	int dmabuf_param;   /* ZSM_DMABUF: 0 never */
	int flush_param;    /* ZSM_GDR_FLUSH */
};

enum zsm_net_hmem_reg {
	ZSM_HMEM_REG_NONE = 0, /* host memory only */
	ZSM_HMEM_REG_CUDA,     /* fi_mr_regattr with iface FI_HMEM_CUDA */
	ZSM_HMEM_REG_DMABUF,   /* fi_mr_regattr of a dma-buf (FI_MR_DMABUF) */
};

struct zsm_net_hmem_plan {
	int ptr_support; /* ZSM_MEM_* bits for getProperties */
	enum zsm_net_hmem_reg reg;
	int flush_gpu;	 /* iflush reads back GPU buffers */
	int flush_host;	 /* ... and host buffers (ZSM_GDR_FLUSH=always) */
	char why[320];	 /* what was decided and why, for one INFO line */
};

/* Hopper and later need no flush after GPUDirect writes (the ABI notes). */
#define ZSM_HMEM_NO_FLUSH_CC 90

void zsm_net_hmem_decide(const struct zsm_net_hmem_in *in,
			 struct zsm_net_hmem_plan *out);

#endif
