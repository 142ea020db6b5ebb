/* SPDX-License-Identifier: MIT */
/*
 * How a network device builds one-sided puts with strong signals: once a
 * signal is visible at the target, its put and every earlier put and
 * signal of that context are visible too.  No provider gives that for
 * free, and each grants a different part of it, so the mechanism is
 * chosen per device from what libfabric granted when asked (never from
 * the provider's name), best first:
 *
 *   atomic     writes, then fi_atomic(FI_SUM, FI_UINT64) on the same
 *              endpoint, which orders RMA and atomic writes (FI_ORDER_WAW,
 *              any size): no target CPU, no extra round trip (cxi's
 *              hardware AMOs).  Words and puts the NIC cannot reach
 *              (staged GPU windows) still take a message, which FI_FENCE
 *              orders after the writes and which later atomics wait to
 *              hear applied (net_rma.c).
 *   saw        writes, then a signal message the provider orders after
 *              them (FI_ORDER_SAW and WAW, any size, without FI_ATOMIC,
 *              whose emulation takes that ordering away on rxm); the
 *              target's engine applies it (tcp and verbs under rxm).
 *   writedata  every write carries a sequence number in remote CQ data,
 *              the signal follows as a message, and the target's engine
 *              applies signals strictly in sequence (efa: no ordering,
 *              emulated atomics).  Needs fi_writedata to work, which a
 *              loopback write probes (cxi's is a stub before 2.5).
 *   fence      the signal waits until the earlier writes completed with
 *              FI_DELIVERY_COMPLETE: a round trip per signal, any RMA.
 *
 * What libfabric granted is read from three offers a device asks for
 * (net_rma_dev.c makes the calls): atomic, saw and plain below.  Reading
 * them and choosing are pure, so unit tests walk every provider's case,
 * from its recorded fi_info answers, on a machine that has only tcp.
 */
#ifndef ZSM_NET_RMA_PLAN_H
#define ZSM_NET_RMA_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>

/* Every offer asked adds writes and reads both ways to the endpoint's. */
#define ZSM_NET_RMA_CAPS                                                      \
	(FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)
/* The atomic offer: FI_ATOMIC too, atomics ordered after writes (and
 * FI_FENCE asked first, for the messages of staged windows). */
#define ZSM_NET_RMA_ATOMIC_CAPS (ZSM_NET_RMA_CAPS | FI_ATOMIC)
#define ZSM_NET_RMA_ATOMIC_ORDER FI_ORDER_WAW
/* The saw offer: no FI_ATOMIC, messages ordered after writes. */
#define ZSM_NET_RMA_SAW_ORDER (FI_ORDER_WAW | FI_ORDER_SAW)
/* The plain offer: ZSM_NET_RMA_CAPS and no order. */

enum zsm_net_rma_mech {
	ZSM_RMA_MECH_NONE = 0,
	ZSM_RMA_MECH_ATOMIC,
	ZSM_RMA_MECH_SAW,
	ZSM_RMA_MECH_WRITEDATA,
	ZSM_RMA_MECH_FENCE,
};

/* ZSM_RMA_SIGNAL, in its table's order: auto, then the mechanisms. */
#define ZSM_RMA_SIGNAL_AUTO 0

struct zsm_net_rma_in {
	const char *prov;     /* provider name, for the reason */
	int rma;	      /* an offer with writes and reads both ways */
	int atomic_ordered;   /* one with FI_ATOMIC and WAW of any size */
	int atomic_fence;     /* that offer with FI_FENCE too */
	int atomic_sum;	      /* its domain does FI_SUM on FI_UINT64
			       * (fi_query_atomic, asked of a domain:
			       * not in_fill's) */
	int saw_ordered;      /* one without FI_ATOMIC, WAW and SAW, any size */
	size_t cq_data_size;  /* remote CQ data of the RMA offer */
	int writedata;	      /* loopback fi_writedata: 1 works, 0 not,
			       * -1 not tried */
	int want;	      /* ZSM_RMA_SIGNAL: 0 auto, else a mech */
	/* Mechanisms (1 << mech) this build lacks: passed over, and said;
	 * ZSM_RMA_UNBUILT for the real choice. */
	unsigned unbuilt;
};
/* Every mechanism is built; the mask stays for the next one. */
#define ZSM_RMA_UNBUILT 0u

struct zsm_net_rma_plan {
	enum zsm_net_rma_mech mech;
	/* The choice depends on a writedata probe not made yet
	 * (in->writedata -1): probe, then decide again. */
	int needs_probe;
	/* ZSM_RMA_SIGNAL asked for a mechanism the provider does not grant:
	 * one-sided operations are refused on this device, said in why. */
	int refused;
	char why[320];
};

/*
 * The first offer of list (fi_getinfo's answer) that grants all of caps
 * and, both ways, all of order, for writes of any size where order has
 * WAW; NULL when none does.  A provider may answer with less than was
 * asked (rxm drops WAW and SAW when FI_ATOMIC is asked), so the answer is
 * checked, not trusted.
 */
const struct fi_info *zsm_net_rma_offer_pick(const struct fi_info *list,
					     uint64_t caps, uint64_t order);
/* What the picks of the three offers (NULL: none) grant, into in; the
 * other fields of in are left as they are. */
void zsm_net_rma_in_fill(struct zsm_net_rma_in *in,
			 const struct fi_info *atomic,
			 const struct fi_info *saw,
			 const struct fi_info *plain);

void zsm_net_rma_decide(const struct zsm_net_rma_in *in,
			struct zsm_net_rma_plan *out);
/* "none", "atomic", "saw", "writedata", "fence". */
const char *zsm_net_rma_mech_name(enum zsm_net_rma_mech mech);

#endif
