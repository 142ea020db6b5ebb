/* SPDX-License-Identifier: MIT */
/* net's request: the core's, and what libfabric needs of it (net_req.c). */
#ifndef ZSM_NET_REQ_H
#define ZSM_NET_REQ_H

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
#include "net/net_fi_lib.h"
#include "net/net_hmem.h"
#include "net/net_op.h"
#include "net/net_rma_plan.h"
#include "net/net_txpool.h"
#include "net/net_wire.h"
#include "proxy/proxy.h"

/* net's request: the core's, and what libfabric needs of it. */
struct zsm_net_req {
	struct zsm_req base; /* first */
	/* Zeroed for each use (zsm_comm_ops.req_clear); the rest is set by
	 * the first post. */
	uint8_t ready;	     /* ops and descriptors set (first post) */
	uint8_t deferred;    /* refused by the provider once */
	void *mr_desc[ZSM_MAX_RECVS];
	struct zsm_net_op ops[ZSM_MAX_RECVS];
	/* Flush: the remote side of the read (address and key). */
	uint64_t rma_addr;
	uint64_t rma_key;
	/* Send: the remote CQ data it carries (key, checksum). */
	uint64_t cq_data;
	/* Put with a signal: the message that follows its write; a get:
	 * its GET (net_rma_get.c). */
	struct zsm_sig_msg sig;
	/* sig's copy in the send pool while posted (needs_mr). */
	void *sig_slot;
	/* atomic: the value the NIC adds, and its copy in the send pool
	 * while posted (needs_mr). */
	uint64_t operand;
	void *add_slot;
	/* Get: its GET's number on the comm (the owner's answer counts
	 * them), and until when that answer may take.  Set when the GET
	 * goes.  A send: its number among the comm's data messages, set
	 * when it is posted (net_credit.h).  A put: its SIGNAL's number
	 * among those the comm asked to hear back about (rma.asked), 0
	 * without one; set when the SIGNAL goes. */
	uint64_t get_seq;
	uint64_t get_deadline_ns;
	/* A send the provider finished, not reported until its receive is
	 * known to be posted (net_credit.h), or a put until its SIGNAL is
	 * known applied: the next on its comm's list. */
	struct zsm_net_req *held_next;
};

static inline struct zsm_net_req *zsm_net_req_of(struct zsm_req *r)
{
	return zsm_container_of(r, struct zsm_net_req, base);
}


/* An operation completed: err, the length the provider reports, and the
 * message's remote CQ data (receives). */
void zsm_net_req_op_done(struct zsm_net_op *op, int err, size_t len,
			 uint64_t data);
/* A send's remote CQ data: its comm's data key, and a checksum. */
uint64_t zsm_net_req_cq_data(const struct zsm_net_req *req);
void zsm_net_req_undefer(struct zsm_net_req *req);
/* Report the sends comm held whose receives the peer has now said are
 * posted; with err (the comm failed), every one, failed with err. */
void zsm_net_req_report_held(struct zsm_net_comm *comm, int err);
/* The comm ops' posts, one per kind (net_ep.c): sends, receives,
 * flushes, and puts and gets alike. */
int zsm_net_ep_post_send(struct zsm_req *req);
int zsm_net_ep_post_recv(struct zsm_req *req);
int zsm_net_ep_post_flush(struct zsm_req *req);
int zsm_net_ep_post_rma(struct zsm_req *req);
/* The comm ops' flush (net_req.c). */
int zsm_net_flush_op(struct zsm_comm *c, int n, void **data, const int *sizes,
		     struct zsm_mr **mrs, struct zsm_req *req, int *flush);

#endif
