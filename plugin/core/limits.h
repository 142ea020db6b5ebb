/* SPDX-License-Identifier: MIT */
/*
 * The limits and value types every layer from the transports up shares:
 * the constants NCCL fixes, restated (nothing below the ABI edge knows
 * NCCL's declarations; plugin/abi asserts that they are NCCL's), a
 * device's properties and a window's description.
 */
#ifndef ZSM_CORE_LIMITS_H
#define ZSM_CORE_LIMITS_H

#include <stddef.h>
#include <stdint.h>


#define ZSM_MAX_RECVS 8
/* Requests NCCL keeps in flight per comm (its NCCL_NET_MAX_REQUESTS). */
#define ZSM_NCCL_MAX_REQUESTS 32
/* Requests a comm accepts in flight: NCCL's per-comm count x maxRecvs. */
#define ZSM_MAX_REQUESTS (ZSM_NCCL_MAX_REQUESTS * ZSM_MAX_RECVS)
/* The largest tag a send or receive may carry. */
#define ZSM_TAG_MAX ((1U << 24) - 1)
/* The connection handle NCCL ships between ranks, in bytes. */
#define ZSM_HANDLE_BYTES 128
/* A rail or plane id that says "not set". */
#define ZSM_ID_UNDEF (-1)

/* Kinds of memory, as bits (ptr_support) and as a registration's type. */
enum zsm_mem_type {
	ZSM_MEM_HOST = 1,
	ZSM_MEM_CUDA = 2,
	ZSM_MEM_DMABUF = 4,
};
/* Largest message: sizes come back to NCCL as int, so stay well inside. */
#define ZSM_MAX_P2P_BYTES (1ULL << 30)
/* Largest registration: NCCL's own bound on a buffer (1 TiB). */
#define ZSM_MAX_REG_BYTES (1ULL << 40)

/* Devices NCCL fuses into one at most (net v12's vProps; v9 to v11: 4). */
#define ZSM_MAX_FUSED 8

/* The newest properties, from which every version's struct is filled. */
struct zsm_props {
	char *name;
	char *pci_path;
	uint64_t guid;
	int ptr_support; /* ZSM_MEM_* bits */
	/* What zsm_reg_window takes (GPU memory wherever the CUDA driver
	 * is: staged through host memory where the device cannot). */
	int window_ptr_support;
	int reg_is_global;
	int force_flush;
	int speed_mbps;
	int port;
	float latency_us;
	int max_comms;
	int max_recvs;
	size_t max_p2p_bytes;
	size_t max_coll_bytes;
	int max_multi_request_size;
	int16_t rail_id;
	int16_t plane_id;
	/* A device NCCL fused (makeVDevice): the devices it fused; 0 and
	 * the device itself otherwise. */
	int nfused;
	int fused[ZSM_MAX_FUSED];
};

/*
 * A window: memory its owner registered for peers to put into and get
 * from (zsm_reg_window); the owner ships this description to its peers
 * by means of its own.
 */
struct zsm_rma_window {
	uint64_t addr; /* the provider's address of the window's byte 0 */
	uint64_t key;  /* its remote key */
	uint64_t size;
	uint64_t id;   /* its name at the owner, for signals (never 0) */
	uint64_t flags; /* ZSM_WIN_* */
};
/* The window is GPU memory. */
#define ZSM_WIN_GPU 1ULL
/* Remote writes land in a host copy of it, which the owner copies up to
 * the GPU when told: every put into it is followed by a notice. */
#define ZSM_WIN_STAGED 2ULL
/* Its byte 0 is not 8-byte aligned in its owner's memory, so no word of
 * it is a signal word: net sends signals into it to the owner, whatever
 * its mechanism, and the owner refuses them. */
#define ZSM_WIN_UNALIGNED 4ULL
/* Request sets a send comm may hold (zsm_comm_reserve). */
#define ZSM_MAX_REQUEST_SETS 16

#endif
