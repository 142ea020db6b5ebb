/* SPDX-License-Identifier: MIT */
/* net's registrations, through the endpoint's cache (net_mr.c). */
#ifndef ZSM_NET_MR_H
#define ZSM_NET_MR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include "common/cuda_win.h"
#include "common/idmap.h"
#include "core/transport.h"
#include "net/net_credit.h"
#include "net/net_ep.h"
#include "net/net_fi_lib.h"
#include "net/net_hmem.h"
#include "net/net_rma_plan.h"
#include "net/net_txpool.h"
#include "net/net_wire.h"
#include "proxy/proxy.h"

/* A provider registration (through the endpoint's cache). */
struct zsm_net_mr {
	struct zsm_mr base; /* first */
	struct zsm_net_mr *ep_next, **ep_prev; /* ep->mrs, engine lock */
	struct zsm_net_ep *ep;
	struct zsm_mr_entry *entry;
	void *desc;
	/* A window (zsm_reg_window): its own provider registration, with
	 * remote access, instead of a cache entry; and its bytes. */
	struct fid_mr *window;
	char *start;
	size_t size;
	/* A GPU window on a device that writes host memory only: start is
	 * the GPU memory, and the registration covers its pinned host copy
	 * (mirror.host). */
	struct zsm_cuda_win_mirror mirror;
	/* A window of a duplex device is registered in both endpoints'
	 * domains: peers write it through the receiving one, puts read it
	 * through the sending one.  The registration on the other endpoint
	 * than ep, or NULL. */
	struct fid_mr *twin;
	void *twin_desc;
	struct zsm_net_ep *twin_ep;
};

static inline struct zsm_net_mr *zsm_net_mr_of(struct zsm_mr *m)
{
	return zsm_container_of(m, struct zsm_net_mr, base);
}

/* mr's descriptor for operations on ep. */
static inline void *zsm_net_mr_desc(const struct zsm_net_mr *mr,
				    const struct zsm_net_ep *ep)
{
	return mr->twin && mr->twin_ep == ep ? mr->twin_desc : mr->desc;
}

int zsm_net_mr_reg(struct zsm_net_ep *ep, void *data, size_t size, int type,
		   struct zsm_net_mr **out);
/* The comm ops' reg_mr and mr_free (net_mr.c). */
int zsm_net_mr_reg_op(struct zsm_comm *c, void *data, size_t size, int type,
		      int dmabuf_fd, uint64_t offset, struct zsm_mr **out);
void zsm_net_mr_free_op(struct zsm_mr *mr);
/* Teardown, engine lock held: free every registration left on ep. */
void zsm_net_mr_close_all(struct zsm_net_ep *ep);
/* Teardown of ep: the registrations other endpoints' windows keep in
 * ep's domain go first (engine lock). */
void zsm_net_mr_drop_twins(struct zsm_net_ep *ep);
/* regMrDmaBuf: GPU memory whose dma-buf NCCL exported (fd, closed by
 * NCCL after the call; data is at offset in it). */
int zsm_net_mr_reg_dmabuf(struct zsm_net_ep *ep, void *data, size_t size,
			  int fd, uint64_t offset, struct zsm_net_mr **out);
int zsm_net_mr_init(struct zsm_net_ep *ep);
void zsm_net_mr_fini(struct zsm_net_ep *ep);
/* The page flush reads land in, registered; and its release. */
int zsm_net_mr_flush_init(struct zsm_net_ep *ep);
void zsm_net_mr_flush_fini(struct zsm_net_ep *ep);
/* What a read of data, inside mr, names remotely; -ENOENT when mr has no
 * provider registration. */
int zsm_net_mr_flush_target(const struct zsm_net_mr *mr, const void *data,
			    uint64_t *addr, uint64_t *key);
/* A registration of len bytes at buf for the endpoint's own use (control
 * receives, the spill buffer, send slots) with access (FI_SEND, ...):
 * *mr and *desc, or -errno. */
int zsm_net_mr_reg_internal(struct zsm_net_ep *ep, void *buf, size_t len,
			    uint64_t access, void **mr, void **desc);
void zsm_net_mr_dereg_internal(void *mr);

#endif
