/* SPDX-License-Identifier: MIT */
/*
 * The parts of libfabric's ABI newer than the headers we build against
 * (Debian 12 ships 1.17), declared from libfabric's fi_mr(3) and
 * fi_cq(3) and pinned to the older layouts with static asserts.
 *
 * Why we need them: dma-buf registration (FI_MR_DMABUF) arrived in
 * libfabric 1.20, and a provider accepts it only from a fabric opened with
 * API version 1.20 or later (efa checks).  Asking for that version changes
 * how libfabric reads two structs we hand it:
 *   - struct fi_mr_attr grows fields after `device` (hmem_data from 1.18,
 *     then page_size, base_mr and sub_mr_cnt), which libfabric reads when
 *     the fabric's API version says they are there;
 *   - struct fi_cq_err_entry grows src_addr after err_data_size, which
 *     fi_cq_readerr writes.
 * So every registration goes through zsm_fi_mr_attr (zero past `device`
 * means "not used" in every version) and every error read into
 * zsm_fi_cq_err, whatever the version, and a newer library never reads or
 * writes past our structs.
 */
#ifndef ZSM_NET_FI_ABI_H
#define ZSM_NET_FI_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

/* fi_mr_regattr flag: attr->dmabuf, not attr->mr_iov, names the memory. */
#define ZSM_FI_MR_DMABUF (1ULL << 40)
/* The first API version whose fabrics take ZSM_FI_MR_DMABUF. */
#define ZSM_FI_API_DMABUF FI_VERSION(1, 20)

/* The memory is bytes [offset, offset + len) of the dma-buf fd, and
 * base_addr is the virtual address of the dma-buf's byte 0. */
struct zsm_fi_mr_dmabuf {
	int fd;
	uint64_t offset;
	size_t len;
	void *base_addr;
};

struct zsm_fi_mr_attr {
	union {
		const struct iovec *mr_iov;
		const struct zsm_fi_mr_dmabuf *dmabuf;
	};
	size_t iov_count;
	uint64_t access;
	uint64_t offset;
	uint64_t requested_key;
	void *context;
	size_t auth_key_size;
	uint8_t *auth_key;
	enum fi_hmem_iface iface;
	union {
		uint64_t reserved;
		int cuda;
	} device;
	/* Newer than 1.17: left zero. */
	void *hmem_data;
	size_t page_size;
	const struct fid_mr *base_mr;
	size_t sub_mr_cnt;
};

#define ZSM_FI_SAME_FIELD(ours, theirs, f)                                    \
	(offsetof(struct ours, f) == offsetof(struct theirs, f) &&            \
	 sizeof(((struct ours *)0)->f) == sizeof(((struct theirs *)0)->f))

_Static_assert(ZSM_FI_SAME_FIELD(zsm_fi_mr_attr, fi_mr_attr, mr_iov) &&
		       ZSM_FI_SAME_FIELD(zsm_fi_mr_attr, fi_mr_attr,
					 iov_count) &&
		       ZSM_FI_SAME_FIELD(zsm_fi_mr_attr, fi_mr_attr, access) &&
		       ZSM_FI_SAME_FIELD(zsm_fi_mr_attr, fi_mr_attr, offset) &&
		       ZSM_FI_SAME_FIELD(zsm_fi_mr_attr, fi_mr_attr,
					 requested_key) &&
		       ZSM_FI_SAME_FIELD(zsm_fi_mr_attr, fi_mr_attr, context) &&
		       ZSM_FI_SAME_FIELD(zsm_fi_mr_attr, fi_mr_attr,
					 auth_key_size) &&
		       ZSM_FI_SAME_FIELD(zsm_fi_mr_attr, fi_mr_attr,
					 auth_key) &&
		       ZSM_FI_SAME_FIELD(zsm_fi_mr_attr, fi_mr_attr, iface) &&
		       ZSM_FI_SAME_FIELD(zsm_fi_mr_attr, fi_mr_attr, device),
	       "zsm_fi_mr_attr must begin exactly as fi_mr_attr");
_Static_assert(offsetof(struct zsm_fi_mr_attr, hmem_data) == 80 &&
		       offsetof(struct zsm_fi_mr_attr, sub_mr_cnt) == 104 &&
		       sizeof(struct zsm_fi_mr_attr) == 112 &&
		       sizeof(struct zsm_fi_mr_attr) >= sizeof(struct fi_mr_attr),
	       "zsm_fi_mr_attr: libfabric 2.x layout on LP64");
_Static_assert(offsetof(struct zsm_fi_mr_dmabuf, offset) == 8 &&
		       offsetof(struct zsm_fi_mr_dmabuf, len) == 16 &&
		       offsetof(struct zsm_fi_mr_dmabuf, base_addr) == 24 &&
		       sizeof(struct zsm_fi_mr_dmabuf) == 32,
	       "fi_mr_dmabuf layout on LP64");

/* fi_cq_readerr's entry with room for the fields newer versions write. */
struct zsm_fi_cq_err {
	struct fi_cq_err_entry e;
	fi_addr_t src_addr; /* 1.20 and later */
	uint8_t spare[64];  /* whatever comes after, never read */
};
_Static_assert(offsetof(struct zsm_fi_cq_err, src_addr) ==
		       sizeof(struct fi_cq_err_entry),
	       "src_addr follows err_data_size");

/* fi_mr_regattr through our layout; the cast is the point of the file. */
static inline int zsm_fi_mr_regattr(struct fid_domain *domain,
				    const struct zsm_fi_mr_attr *attr,
				    uint64_t flags, struct fid_mr **mr)
{
	return fi_mr_regattr(domain, (const struct fi_mr_attr *)attr, flags,
			     mr);
}

#endif
