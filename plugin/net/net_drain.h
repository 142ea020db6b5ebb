/* SPDX-License-Identifier: MIT */
/* The stray scan (net_drain.c): messages for no live comm, discarded. */
#ifndef ZSM_NET_DRAIN_H
#define ZSM_NET_DRAIN_H

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

/* A set of tags the stray scan looks in: those whose top len bits are
 * tag's.  held: tag is that of a message zsm keeps, found there. */
struct zsm_net_drain_prefix {
	uint64_t tag;
	int len;
	int held;
};

/* Down to one comm id: the bits below it are the caller's tag. */
#define ZSM_DRAIN_LEAF (64 - ZSM_TAG_BITS_USER)

/* Operations a sweep of the stray scan has out at most: receives kept
 * posted on rxm, discards elsewhere (net_drain.c).  A look
 * (FI_PEEK) on rxm of libfabric 1.17 first lets its connections bring in
 * all they hold, each message in a pool buffer of 16.5 KiB: a discard per
 * look lost to a flood by a thousand to one.  A receive posted takes an
 * unexpected stray without that, and one still posted takes the next
 * stray as it lands, before it costs a buffer; a read of the queue brings
 * in at most what the receives posted then take. */
#define ZSM_DRAIN_SWEEP_MAX 1024

/* The stray scan (net_drain.c): the prefixes still to look in, the one
 * being looked in, and what is left of this pass's looks. */
struct zsm_net_drain {
	struct zsm_net_op op;
	/* One each: a provider may keep its own state in an operation's
	 * context while it is in flight (FI_CONTEXT2); the free ones. */
	struct zsm_net_op sweep_ops[ZSM_DRAIN_SWEEP_MAX];
	uint16_t sweep_free[ZSM_DRAIN_SWEEP_MAX];
	int nfree;
	int state;
	int budget;
	int found; /* strays discarded since the scan began */
	int soon;  /* the next scan starts next pass */
	uint64_t next_ns;
	uint64_t ended_ns; /* when the last scan ended */
	struct zsm_net_drain_prefix cur;
	/* A set that holds strays only, being swept: receives posted, how
	 * many it keeps posted, when one last took a stray, how many are
	 * being cancelled, and whether all are (the sweep ends with the
	 * last back). */
	struct zsm_net_drain_prefix sweep;
	int sweep_out;
	int sweep_want;
	uint64_t sweep_hit_ns;
	int sweep_cancelling;
	int sweep_stop;
	int top;
	struct zsm_net_drain_prefix stack[ZSM_DRAIN_LEAF + 2];
};


/* net_drain.c: strays: messages for no live comm, discarded. */
/* The length of the shortest prefix of a stray's tag under which no
 * message is kept: the set one sweep discards from. */
int zsm_net_drain_stray_len(const struct zsm_net_ep *ep, uint64_t tag);
/* Whether no message under the set is kept, with the comms there are now:
 * a sweep asks before each round. */
int zsm_net_drain_strays_only(const struct zsm_net_ep *ep,
			      struct zsm_net_drain_prefix q);
void zsm_net_drain_tick(struct zsm_net_ep *ep, uint64_t now);
void zsm_net_drain_complete(struct zsm_net_ep *ep, struct zsm_net_op *op,
			    int err, uint64_t tag);
/* The provider's fd woke the engine and no operation completed: what
 * came may be strays, and the scan starts soon (ZSM_DRAIN_HINT_NS). */
void zsm_net_drain_hint(struct zsm_net_ep *ep);
/* A receive comm was made: a sweep whose set holds its tags stops. */
void zsm_net_drain_comm_made(struct zsm_net_ep *ep);
/* A look or a discard is in flight, or the scan goes on next pass. */
int zsm_net_drain_busy(const struct zsm_net_ep *ep);
/* A look of the scan is with the provider. */
int zsm_net_drain_looking(const struct zsm_net_ep *ep);

#endif
