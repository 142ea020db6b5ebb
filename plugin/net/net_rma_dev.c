/* SPDX-License-Identifier: MIT */
/*
 * Owns a device's one-sided plan: asks libfabric which of the orderings
 * and operations the signal mechanisms need it grants on the device's
 * provider and domain, probes fi_writedata where the choice hangs on it,
 * and keeps the offer the RMA endpoints will open (net_rma_plan.h says
 * what each mechanism needs and why).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "common/log.h"
#include "common/param.h"
#include "net/net.h"
#include "proxy/proxy.h"

/* How long the writedata probe waits for its loopback write. */
#define ZSM_NET_RMA_PROBE_NS (1000ULL * 1000000ULL)

/*
 * dev's provider and domain asked for caps and message order on top of
 * what its endpoint has; a copy of the offer zsm_net_rma_offer_pick()
 * takes from the answer, else NULL.
 */
static struct fi_info *zsm_net_rma_offer(const struct zsm_net_dev *dev,
					 uint64_t caps, uint64_t order)
{
	struct fi_info *hints = zsm_fi_dupinfo(dev->info), *list = NULL;
	const struct fi_info *pick;
	struct fi_info *offer = NULL;

	if (!hints)
		return NULL;
	hints->caps |= caps;
	hints->tx_attr->msg_order |= order;
	hints->rx_attr->msg_order |= order;
	if (zsm_fi_getinfo(dev->info->fabric_attr->api_version, NULL, NULL, 0,
			   hints, &list))
		list = NULL;
	zsm_fi_freeinfo(hints);
	pick = zsm_net_rma_offer_pick(list, caps, order);
	if (pick)
		offer = zsm_fi_dupinfo(pick);
	if (list)
		zsm_fi_freeinfo(list);
	return offer;
}

static void zsm_net_rma_offer_free(struct fi_info *fi)
{
	if (fi)
		zsm_fi_freeinfo(fi);
}

/* The objects of the loopback probe of fi_writedata. */
struct zsm_net_rma_probe {
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct fid_mr *mr, *src_mr;
	fi_addr_t self;
	uint64_t src, dst;
	struct fi_context2 ctx;
};

/* An endpoint of fi that can write to itself, and the 8 bytes it
 * writes and receives: 0, or nonzero when the provider cannot. */
static int zsm_net_rma_probe_open(struct zsm_net_rma_probe *p,
				  const struct fi_info *fi)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_DATA,
				     .size = 16};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	uint8_t addr[ZSM_NET_ADDR_MAX];
	size_t addr_len = sizeof(addr);
	uint64_t mode = fi->domain_attr->mr_mode;

	if (zsm_fi_fabric(fi->fabric_attr, &p->fabric, NULL) ||
	    fi_domain(p->fabric, (struct fi_info *)fi, &p->domain, NULL) ||
	    fi_av_open(p->domain, &av_attr, &p->av, NULL) ||
	    fi_cq_open(p->domain, &cq_attr, &p->cq, NULL) ||
	    fi_endpoint(p->domain, (struct fi_info *)fi, &p->ep, NULL) ||
	    fi_ep_bind(p->ep, &p->av->fid, 0) ||
	    fi_ep_bind(p->ep, &p->cq->fid, FI_TRANSMIT | FI_RECV) ||
	    fi_enable(p->ep) || fi_getname(&p->ep->fid, addr, &addr_len) ||
	    fi_av_insert(p->av, addr, 1, &p->self, 0, NULL) != 1 ||
	    fi_mr_reg(p->domain, &p->dst, sizeof(p->dst), FI_REMOTE_WRITE, 0,
		      0x2a, 0, &p->mr, NULL))
		return -EIO;
	if ((mode & FI_MR_ENDPOINT) &&
	    (fi_mr_bind(p->mr, &p->ep->fid, 0) || fi_mr_enable(p->mr)))
		return -EIO;
	if ((mode & FI_MR_LOCAL) &&
	    fi_mr_reg(p->domain, &p->src, sizeof(p->src), FI_WRITE, 0, 0x2b,
		      0, &p->src_mr, NULL))
		return -EIO;
	return 0;
}

static void zsm_net_rma_probe_close(struct zsm_net_rma_probe *p)
{
	struct fid *fids[] = {
		p->ep ? &p->ep->fid : NULL,
		p->mr ? &p->mr->fid : NULL,
		p->src_mr ? &p->src_mr->fid : NULL,
		p->cq ? &p->cq->fid : NULL,
		p->av ? &p->av->fid : NULL,
		p->domain ? &p->domain->fid : NULL,
		p->fabric ? &p->fabric->fid : NULL,
	};

	for (size_t i = 0; i < sizeof(fids) / sizeof(fids[0]); i++)
		if (fids[i])
			fi_close(fids[i]);
}

/* The write's own completion, and its bytes at the target, by the
 * probe's deadline from t0: 1 when both came. */
static int zsm_net_rma_probe_wait(struct zsm_net_rma_probe *p, uint64_t t0)
{
	int done = 0;

	while (zsm_now_ns() - t0 < ZSM_NET_RMA_PROBE_NS) {
		struct fi_cq_data_entry e;
		ssize_t n = fi_cq_read(p->cq, &e, 1);

		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = {0};

			fi_cq_readerr(p->cq, &err, 0);
			if (err.op_context == &p->ctx)
				break;
			continue;
		}
		if (n == 1 && e.op_context == &p->ctx)
			done = 1;
		if (done && p->dst == p->src)
			break;
	}
	return done && p->dst == p->src;
}

/*
 * A write of 8 bytes with remote CQ data from an endpoint of fi to
 * itself: 1 when it lands, 0 when the provider refuses or fails it (a
 * stub), -errno when the probe itself could not be set up.
 */
static int zsm_net_rma_probe_writedata(const struct fi_info *fi)
{
	struct zsm_net_rma_probe p = {.src = 0x5a5a5a5a5a5a5a5aULL};
	const char *prov = fi->fabric_attr->prov_name;
	uint64_t t0, remote;
	int ret = zsm_net_rma_probe_open(&p, fi);

	if (ret) {
		ZSM_INFO("net: the fi_writedata probe on %s could not be set "
			 "up",
			 prov);
		goto out;
	}
	remote = (fi->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
			 ? (uint64_t)(uintptr_t)&p.dst
			 : 0;
	t0 = zsm_now_ns();
	for (;;) {
		ret = (int)fi_writedata(p.ep, &p.src, sizeof(p.src),
					p.src_mr ? fi_mr_desc(p.src_mr) : NULL,
					7, p.self, remote, fi_mr_key(p.mr),
					&p.ctx);
		if (ret != -FI_EAGAIN ||
		    zsm_now_ns() - t0 >= ZSM_NET_RMA_PROBE_NS)
			break;
		(void)fi_cq_read(p.cq, NULL, 0); /* progress */
	}
	if (ret) {
		ZSM_INFO("net: fi_writedata on %s refused a loopback write: %s",
			 prov, zsm_fi_strerror(-ret));
		ret = 0;
		goto out;
	}
	ret = zsm_net_rma_probe_wait(&p, t0);
	if (ret)
		ZSM_INFO("net: fi_writedata on %s passed a loopback write",
			 prov);
	else
		ZSM_INFO("net: fi_writedata on %s did not land a loopback "
			 "write within %llu ms",
			 prov, ZSM_NET_RMA_PROBE_NS / 1000000ULL);
out:
	zsm_net_rma_probe_close(&p);
	return ret;
}

/*
 * Whether fi's domain adds 64-bit words (FI_SUM on FI_UINT64, no fetch),
 * which is what the atomic mechanism's signals are: 1 or 0 (also when the
 * domain could not be opened to ask, said at INFO).
 */
static int zsm_net_rma_query_sum(const struct fi_info *fi)
{
	struct fi_atomic_attr attr = {0};
	struct fid_fabric *fabric = NULL;
	struct fid_domain *domain = NULL;
	int ret = 0;

	if (zsm_fi_fabric(fi->fabric_attr, &fabric, NULL) ||
	    fi_domain(fabric, (struct fi_info *)fi, &domain, NULL))
		ZSM_INFO("net: %s: could not open a domain to ask for atomic "
			 "adds",
			 fi->fabric_attr->prov_name);
	else
		ret = fi_query_atomic(domain, FI_UINT64, FI_SUM, &attr, 0) ==
			      0 &&
		      attr.count >= 1;
	if (domain)
		fi_close(&domain->fid);
	if (fabric)
		fi_close(&fabric->fid);
	return ret;
}

void zsm_net_dev_plan_rma(struct zsm_net_dev *dev)
{
	struct fi_info *atomic, *saw, *plain;
	struct zsm_net_rma_in in = {
		.prov = dev->info->fabric_attr->prov_name,
		.writedata = -1,
		.want = (int)zsm_param_int(ZSM_P_RMA_SIGNAL),
		.unbuilt = ZSM_RMA_UNBUILT,
	};

	/* FI_ATOMIC asked with WAW: a provider that emulates atomics by
	 * messages (rxm) gives up the ordering then, and offers nothing.
	 * FI_FENCE, which orders the messages staged windows still need
	 * there, is asked too, then without it where that gives nothing:
	 * the choice says which one is missing. */
	atomic = zsm_net_rma_offer(dev, ZSM_NET_RMA_ATOMIC_CAPS | FI_FENCE,
				   ZSM_NET_RMA_ATOMIC_ORDER);
	if (!atomic)
		atomic = zsm_net_rma_offer(dev, ZSM_NET_RMA_ATOMIC_CAPS,
					   ZSM_NET_RMA_ATOMIC_ORDER);
	saw = zsm_net_rma_offer(dev, ZSM_NET_RMA_CAPS, ZSM_NET_RMA_SAW_ORDER);
	plain = zsm_net_rma_offer(dev, ZSM_NET_RMA_CAPS, 0);
	zsm_net_rma_in_fill(&in, atomic, saw, plain);
	in.atomic_sum = atomic && zsm_net_rma_query_sum(atomic);
	zsm_net_rma_decide(&in, &dev->rma);
	if (dev->rma.needs_probe && plain) {
		in.writedata = zsm_net_rma_probe_writedata(plain) == 1;
		zsm_net_rma_decide(&in, &dev->rma);
	}
	switch (dev->rma.mech) {
	case ZSM_RMA_MECH_ATOMIC:
		dev->rma_info = atomic;
		atomic = NULL;
		break;
	case ZSM_RMA_MECH_SAW:
		dev->rma_info = saw;
		saw = NULL;
		break;
	case ZSM_RMA_MECH_WRITEDATA:
	case ZSM_RMA_MECH_FENCE:
		dev->rma_info = plain;
		plain = NULL;
		break;
	default:
		break;
	}
	zsm_net_rma_offer_free(atomic);
	zsm_net_rma_offer_free(saw);
	zsm_net_rma_offer_free(plain);
	if (dev->rma.refused)
		ZSM_WARN("net: %s: %s", dev->name, dev->rma.why);
	else
		ZSM_INFO("net: %s: %s", dev->name, dev->rma.why);
}
