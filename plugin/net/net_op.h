/* SPDX-License-Identifier: MIT */
/* A libfabric operation of net's, as its completion names it. */
#ifndef ZSM_NET_OP_H
#define ZSM_NET_OP_H

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
#include "net/net_rma_plan.h"
#include "net/net_txpool.h"
#include "net/net_wire.h"
#include "proxy/proxy.h"

/* Kind of a libfabric operation, from its context. */
enum zsm_net_op_kind {
	ZSM_OP_SEND,
	ZSM_OP_RECV,
	ZSM_OP_FLUSH,
	ZSM_OP_CTRL_RECV, /* one of the endpoint's control receives */
	ZSM_OP_CTRL_SEND, /* a comm's control message */
	ZSM_OP_NACK,	  /* the endpoint's refusal of a CONN_REQ */
	ZSM_OP_DRAIN,	  /* a look at, or discard of, a stray message */
};

struct zsm_net_comm;
struct zsm_net_req;
struct zsm_net_peer;
struct zsm_net_close_wait;

struct zsm_net_op {
	struct fi_context2 fi_ctx; /* first: FI_CONTEXT2 mode */
	struct zsm_net_req *req;
	/* A request's op: the link it goes on, whose endpoint, credit and
	 * counts it uses (set at the request's first post). */
	struct zsm_net_comm *link;
	void *owner; /* comm or listen for control ops */
	uint8_t kind;
	uint8_t index;
	uint8_t posted;
	uint8_t path; /* a data op: which of its comm's paths (net_path.h) */
};

struct zsm_net_mr;

#endif
