/* SPDX-License-Identifier: MIT */
/*
 * Recorded answers of a provider to the three offers a zsm device asks
 * for one-sided operations (net_rma_plan.h: atomic, saw, plain), as text
 * files under test/unit/data/rma_offers/, one per provider.  The format:
 *
 *   # a comment, to the end of the line
 *   provider NAME          the provider name zsm sees ("tcp;ofi_rxm")
 *   writedata 1|0          what zsm's loopback fi_writedata probe gives
 *   query atomic|saw|plain  the answer to that ask: the offers below it,
 *                          in fi_getinfo's order; none is -FI_ENODATA
 *   offer                  one fi_info of the answer, up to "end":
 *     caps FLAGS
 *     tx_msg_order FLAGS
 *     rx_msg_order FLAGS
 *     max_order_waw_size N
 *     max_msg_size N
 *     cq_data_size N
 *     mr_mode FLAGS
 *     atomic_sum_u64 1|0|-  fi_query_atomic(FI_UINT64, FI_SUM) on the
 *                          offer's domain; - where the offer has no
 *                          FI_ATOMIC
 *   end
 *
 * FLAGS are libfabric's names joined by '|' (FI_RMA|FI_READ), a 0x
 * number, or 0; N is a number or SIZE_MAX.  Every field of an offer must
 * be there: nothing defaults.  rma-offers-record writes this format.
 */
#ifndef ZSM_TEST_RMA_OFFERS_H
#define ZSM_TEST_RMA_OFFERS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <rdma/fabric.h>

enum offers_ask { OFFERS_ATOMIC, OFFERS_SAW, OFFERS_PLAIN, OFFERS_ASKS };

/* "atomic", "saw", "plain". */
extern const char *const offers_ask_name[OFFERS_ASKS];

#define OFFERS_MAX 8

struct offers_answer {
	struct fi_info *list; /* NULL: no offer (-FI_ENODATA) */
	int n;
	int sum_u64[OFFERS_MAX]; /* per offer in list order: 1, 0, -1 (-) */
};

struct offers_rec {
	char prov[64];
	int writedata;
	struct offers_answer ask[OFFERS_ASKS];
};

/* Read path into rec: 0, or -EINVAL/-ENOMEM/-errno with "path:line: what"
 * in err. */
int offers_load(const char *path, struct offers_rec *rec, char *err,
		size_t errlen);
void offers_free(struct offers_rec *rec);

/* The FLAGS of the format, for a caps, msg_order or mr_mode value. */
enum offers_kind { OFFERS_CAPS, OFFERS_ORDER, OFFERS_MR };
void offers_print_flags(FILE *f, enum offers_kind kind, uint64_t v);

#endif
