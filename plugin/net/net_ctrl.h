/* SPDX-License-Identifier: MIT */
/* net's control plane (net_ctrl.c): receives, refusals, drops. */
#ifndef ZSM_NET_CTRL_H
#define ZSM_NET_CTRL_H

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

/*
 * Control receives an endpoint keeps posted.  Anyone who can reach the
 * endpoint can send control-tagged messages, and what arrives while every
 * control receive is taken waits in the provider's unexpected queue, each
 * in a buffer of its eager size (rxm: 16.5 KiB, from a pool that grows
 * 1024 at a time, zeroed, and never shrinks).  With 16 posted, 8000 junk
 * messages a second outran them between two passes: the pool grew, the
 * growth ate the engine's CPU, the queue grew faster, and a connection
 * request waited behind 13-15 s of junk.  As many as a flood brings
 * between two passes of a loaded engine land in zsm's own buffers
 * instead; each is a control message's size (the spill buffer takes
 * anything longer), so 256 cost 48 KiB, not 4 MiB.  Many more would
 * add to the posted receives the provider may walk to match a message.
 */
#define ZSM_NET_CTRL_RX 256

/* Control messages the endpoint refused a comm for, answers in flight. */
#define ZSM_NET_NACKS 8
/* How long an RMA_REFUSED whose send failed is sent again (net_ctrl.c). */
#define ZSM_NET_REFUSED_RETRY_NS (5ULL * 1000000000ULL)

struct zsm_net_nack {
	struct zsm_net_op op;
	struct zsm_ctrl_msg msg;
	fi_addr_t to;
	void *slot; /* msg's copy in the send pool (needs_mr), or NULL */
};

/* Why control messages are dropped, each counted and said once. */
enum zsm_net_drop {
	ZSM_DROP_SHORT,	      /* shorter than a control message */
	ZSM_DROP_FOREIGN,     /* not zsm's magic */
	ZSM_DROP_VERSION,     /* another wire version */
	ZSM_DROP_MALFORMED,   /* bad type, ids or lengths */
	ZSM_DROP_UNKNOWN,     /* for no live comm, or a closed one */
	ZSM_DROP_KEY,	      /* the wrong key for its comm */
	ZSM_DROP_STATE,	      /* not expected in the comm's state */
	ZSM_DROP_ADDRESS,     /* a peer address unlike ours */
	ZSM_DROP_TRUNCATED,   /* larger than any control message */
	ZSM_DROP_REPLAY,      /* a CONN_REQ already being answered */
	ZSM_DROP_DATA,	      /* a data message no live comm takes */
	ZSM_DROP_NKINDS,
};

struct zsm_net_ctrl_rx;


/* An endpoint's control plane (net_ctrl.c).  Engine lock. */
struct zsm_net_ep_ctrl {
	int tx; /* control sends in flight */
	struct zsm_net_comm *head, *tail; /* comms with control to send */
	struct zsm_net_ctrl_rx *rx;	  /* the control receives */
	void *mr;			  /* their registration, or NULL */
	int nrx;
	int rx_unposted; /* refused by the provider: post again */
	size_t len;	 /* each control receive's buffer */
	struct zsm_net_nack nacks[ZSM_NET_NACKS];
	/* Where zsm's own messages are sent from when the provider wants
	 * descriptors (needs_mr); unused otherwise. */
	struct zsm_net_txpool txpool;
};

/* Messages an endpoint dropped, by kind, and what was said of them. */
struct zsm_net_ep_drops {
	uint64_t n[ZSM_DROP_NKINDS];
	uint64_t said[ZSM_DROP_NKINDS];
	uint64_t said_ns;
};


/* net_ctrl.c: the control plane. */
int zsm_net_ctrl_init(struct zsm_net_ep *ep);
void zsm_net_ctrl_fini(struct zsm_net_ep *ep);
/* Queue control message type t of comm (sent by the next pass). */
void zsm_net_ctrl_want(struct zsm_net_comm *comm, enum zsm_ctrl_type t);
/* Engine pass: post what is queued and receives to post again. */
void zsm_net_ctrl_progress(struct zsm_net_ep *ep);
/* A control operation completed (receive, send or refusal). */
void zsm_net_ctrl_complete(struct zsm_net_op *op, int err, size_t len,
			   uint64_t tag);
/* Refuse a CONN_REQ at once: a CONN_ACK with status err. */
void zsm_net_ctrl_nack(struct zsm_net_ep *ep, const struct zsm_ctrl_msg *m,
		       fi_addr_t to, int err);
/* Count a dropped message of kind; said at WARN the first time, and as
 * a count now and then (net_ctrl.c). */
void zsm_net_ctrl_drop(struct zsm_net_ep *ep, enum zsm_net_drop kind,
		       const char *detail);
void zsm_net_ctrl_drop_summary(struct zsm_net_ep *ep, uint64_t now, int all);

#endif
