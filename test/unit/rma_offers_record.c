/* SPDX-License-Identifier: MIT */
/*
 * rma-offers-record: what libfabric answers, on this machine, to the three
 * offers each zsm device asks for one-sided operations, in the format of
 * rma_offers.h (a file of test/unit/data/rma_offers/).  The devices are
 * zsm's own (ZSM_PROVIDER, ZSM_DOMAIN choose them as for the plugin), and
 * each query is the device's offer with the caps and order of
 * net_rma_plan.h added, as net_rma_dev.c asks it.  Run it where a provider
 * we have no recording of lives, and keep its output as that provider's
 * file once its writedata line is filled in.
 */
#include <stdio.h>
#include <string.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_domain.h>

#include "common/param.h"
#include "net/net.h"
#include "rma_offers.h"

static const struct {
	uint64_t caps, order;
} rec_asks[OFFERS_ASKS] = {
	[OFFERS_ATOMIC] = {ZSM_NET_RMA_ATOMIC_CAPS, ZSM_NET_RMA_ATOMIC_ORDER},
	[OFFERS_SAW] = {ZSM_NET_RMA_CAPS, ZSM_NET_RMA_SAW_ORDER},
	[OFFERS_PLAIN] = {ZSM_NET_RMA_CAPS, 0},
};

/* fi_query_atomic(FI_UINT64, FI_SUM) on o's domain: "1", "0", or "-"
 * where o has no FI_ATOMIC. */
static const char *rec_sum_u64(struct fi_info *o)
{
	struct fid_fabric *fabric = NULL;
	struct fid_domain *domain = NULL;
	struct fi_atomic_attr attr;
	const char *ret = "0";

	if (!(o->caps & FI_ATOMIC))
		return "-";
	if (!fi_fabric(o->fabric_attr, &fabric, NULL) &&
	    !fi_domain(fabric, o, &domain, NULL) &&
	    !fi_query_atomic(domain, FI_UINT64, FI_SUM, &attr, 0))
		ret = "1";
	if (domain)
		fi_close(&domain->fid);
	if (fabric)
		fi_close(&fabric->fid);
	return ret;
}

static void rec_offer(struct fi_info *o)
{
	printf("offer\n  caps ");
	offers_print_flags(stdout, OFFERS_CAPS, o->caps);
	printf("\n  tx_msg_order ");
	offers_print_flags(stdout, OFFERS_ORDER, o->tx_attr->msg_order);
	printf("\n  rx_msg_order ");
	offers_print_flags(stdout, OFFERS_ORDER, o->rx_attr->msg_order);
	printf("\n  max_order_waw_size %zu\n  max_msg_size %zu\n"
	       "  cq_data_size %zu\n  mr_mode ",
	       o->ep_attr->max_order_waw_size, o->ep_attr->max_msg_size,
	       o->domain_attr->cq_data_size);
	offers_print_flags(stdout, OFFERS_MR,
			   (uint64_t)(unsigned)o->domain_attr->mr_mode);
	printf("\n  atomic_sum_u64 %s\nend\n", rec_sum_u64(o));
}

static void rec_dev(const struct zsm_net_dev *dev)
{
	printf("# %s on %s, libfabric %u.%u\n", dev->name,
	       dev->info->fabric_attr->prov_name,
	       FI_MAJOR(fi_version()), FI_MINOR(fi_version()));
	printf("# zsm chose: %s\n", dev->rma.why);
	printf("provider %s\n", dev->info->fabric_attr->prov_name);
	printf("writedata ?  # fill in: 1 when `ZSM_RMA_SIGNAL=writedata "
	       "ZSM_LOG=info zsm-info` says the probe passed, else 0\n");
	for (int i = 0; i < OFFERS_ASKS; i++) {
		struct fi_info *hints = fi_dupinfo(dev->info), *list = NULL;
		int ret;

		if (!hints)
			return;
		hints->caps |= rec_asks[i].caps;
		hints->tx_attr->msg_order |= rec_asks[i].order;
		hints->rx_attr->msg_order |= rec_asks[i].order;
		ret = fi_getinfo(dev->info->fabric_attr->api_version, NULL,
				 NULL, 0, hints, &list);
		fi_freeinfo(hints);
		printf("\nquery %s\n", offers_ask_name[i]);
		if (ret) {
			printf("# fi_getinfo: %s\n", fi_strerror(-ret));
			continue;
		}
		for (struct fi_info *o = list; o; o = o->next)
			rec_offer(o);
		fi_freeinfo(list);
	}
}

int main(void)
{
	struct zsm_net_topo topo;
	int n;

	if (zsm_param_load(NULL) || zsm_net_topo_discover(&topo)) {
		fprintf(stderr, "rma-offers-record: zsm found no devices\n");
		return 1;
	}
	n = topo.ndevs;
	for (int i = 0; i < n; i++) {
		if (i)
			printf("\n");
		rec_dev(&topo.devs[i]);
	}
	zsm_net_topo_free(&topo);
	return n ? 0 : 1;
}
