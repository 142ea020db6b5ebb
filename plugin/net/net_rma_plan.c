/* SPDX-License-Identifier: MIT */
/* Owns the reading of offers and the choice of net_rma_plan.h. */
#include "net/net_rma_plan.h"

#include <stdio.h>

/* Remote CQ data a writedata sequence number needs. */
#define ZSM_RMA_SEQ_BYTES 4

const char *zsm_net_rma_mech_name(enum zsm_net_rma_mech mech)
{
	switch (mech) {
	case ZSM_RMA_MECH_ATOMIC:
		return "atomic";
	case ZSM_RMA_MECH_SAW:
		return "saw";
	case ZSM_RMA_MECH_WRITEDATA:
		return "writedata";
	case ZSM_RMA_MECH_FENCE:
		return "fence";
	default:
		return "none";
	}
}

const struct fi_info *zsm_net_rma_offer_pick(const struct fi_info *list,
					     uint64_t caps, uint64_t order)
{
	for (const struct fi_info *o = list; o; o = o->next) {
		if ((o->caps & caps) != caps ||
		    (o->tx_attr->msg_order & order) != order ||
		    (o->rx_attr->msg_order & order) != order)
			continue;
		/* Ordered writes only up to a size would need puts cut to
		 * it: taken as not ordered. */
		if ((order & FI_ORDER_WAW) &&
		    o->ep_attr->max_order_waw_size < o->ep_attr->max_msg_size)
			continue;
		return o;
	}
	return NULL;
}

void zsm_net_rma_in_fill(struct zsm_net_rma_in *in,
			 const struct fi_info *atomic,
			 const struct fi_info *saw,
			 const struct fi_info *plain)
{
	in->rma = plain || saw || atomic;
	in->atomic_ordered = atomic != NULL;
	in->atomic_fence = atomic && (atomic->caps & FI_FENCE);
	in->saw_ordered = saw != NULL;
	/* Sequence numbers ride on the plain offer's writes. */
	in->cq_data_size = plain ? plain->domain_attr->cq_data_size : 0;
}

static const char *zsm_net_rma_prov(const struct zsm_net_rma_in *in)
{
	return in->prov ? in->prov : "the provider";
}

/* Why mech cannot be built on what was granted; NULL when it can.  *probe
 * is set when only the writedata probe is missing. */
static const char *zsm_net_rma_lacks(const struct zsm_net_rma_in *in,
				     enum zsm_net_rma_mech mech, int *probe)
{
	*probe = 0;
	if (!in->rma)
		return "no RMA writes and reads";
	switch (mech) {
	case ZSM_RMA_MECH_ATOMIC:
		if (!in->atomic_ordered)
			return "no atomics ordered after writes (FI_ATOMIC "
			       "with FI_ORDER_WAW)";
		if (!in->atomic_sum)
			return "no 64-bit atomic add (fi_query_atomic: FI_SUM "
			       "on FI_UINT64)";
		/* The messages staged windows still need must follow the
		 * writes, which nothing else orders them after here. */
		if (!in->atomic_fence)
			return "no FI_FENCE with its atomics (the messages of "
			       "staged windows need it)";
		return NULL;
	case ZSM_RMA_MECH_SAW:
		return in->saw_ordered ? NULL
				       : "no messages ordered after writes "
					 "(FI_ORDER_SAW and WAW)";
	case ZSM_RMA_MECH_WRITEDATA:
		if (in->cq_data_size < ZSM_RMA_SEQ_BYTES)
			return "remote CQ data too small for sequence "
			       "numbers";
		if (in->writedata == 0)
			return "fi_writedata failed a loopback write (a stub)";
		if (in->writedata < 0)
			*probe = 1;
		return NULL;
	case ZSM_RMA_MECH_FENCE:
		return NULL;
	default:
		return "no such mechanism";
	}
}

static const char *const zsm_net_rma_cost[] = {
	[ZSM_RMA_MECH_ATOMIC] = "the NIC applies the signal after the "
				"writes, no target CPU; staged windows by "
				"fenced messages",
	[ZSM_RMA_MECH_SAW] = "the signal message follows the writes, the "
			     "target's engine applies it",
	[ZSM_RMA_MECH_WRITEDATA] = "writes carry sequence numbers, the "
				   "target's engine applies signals in order",
	[ZSM_RMA_MECH_FENCE] = "each signal waits for the earlier writes to "
			       "be delivered: a round trip per signal",
};

void zsm_net_rma_decide(const struct zsm_net_rma_in *in,
			struct zsm_net_rma_plan *out)
{
	static const enum zsm_net_rma_mech order[] = {
		ZSM_RMA_MECH_ATOMIC, ZSM_RMA_MECH_SAW,
		ZSM_RMA_MECH_WRITEDATA, ZSM_RMA_MECH_FENCE,
	};
	const char *lack, *grants = "";
	int probe;

	out->mech = ZSM_RMA_MECH_NONE;
	out->needs_probe = 0;
	out->refused = 0;
	if (in->want != ZSM_RMA_SIGNAL_AUTO) {
		enum zsm_net_rma_mech m = (enum zsm_net_rma_mech)in->want;

		lack = zsm_net_rma_lacks(in, m, &probe);
		if (!lack && (in->unbuilt & (1u << m)))
			lack = "it, and this build of zsm lacks it";
		if (lack) {
			out->refused = 1;
			snprintf(out->why, sizeof(out->why),
				 "one-sided operations refused: "
				 "ZSM_RMA_SIGNAL=%s, but %s grants %s",
				 zsm_net_rma_mech_name(m),
				 zsm_net_rma_prov(in), lack);
			return;
		}
		out->mech = m;
		out->needs_probe = probe;
		snprintf(out->why, sizeof(out->why),
			 "signals by %s (ZSM_RMA_SIGNAL): %s",
			 zsm_net_rma_mech_name(m), zsm_net_rma_cost[m]);
		return;
	}
	if (!in->rma) {
		snprintf(out->why, sizeof(out->why),
			 "no one-sided operations: %s grants no RMA writes "
			 "and reads",
			 zsm_net_rma_prov(in));
		return;
	}
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		lack = zsm_net_rma_lacks(in, order[i], &probe);
		if (lack)
			continue;
		if (in->unbuilt & (1u << order[i])) {
			/* Granted, but not built here: say what it would
			 * have been. */
			if (!*grants)
				grants = zsm_net_rma_mech_name(order[i]);
			continue;
		}
		out->mech = order[i];
		out->needs_probe = probe;
		snprintf(out->why, sizeof(out->why),
			 "signals by %s: %s grants it (%s)%s%s%s",
			 zsm_net_rma_mech_name(order[i]),
			 zsm_net_rma_prov(in), zsm_net_rma_cost[order[i]],
			 *grants ? "; it grants " : "", grants,
			 *grants ? " too, which this build of zsm lacks" : "");
		return;
	}
}
