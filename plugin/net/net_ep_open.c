/* SPDX-License-Identifier: MIT */
/*
 * Owns the per-device endpoint's life: opening its fabric, domain,
 * address vector, completion queue and RDM endpoint with zsm's own parts
 * on them, retiring it after a peer went silent, and closing it once the
 * provider holds none of its operations.  Every call here runs under
 * the engine lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "common/log.h"
#include "common/param.h"
#include "net/net.h"
#include "net/net_api.h"
#include "net/net_fi_abi.h"

/* Send queue entries kept for control messages (net_ctrl.c); receives
 * keep the control receives (ZSM_NET_CTRL_RX). */
#define ZSM_NET_CTRL_RESERVE 64
/* How long a close waits for the provider to give back its operations. */
#define ZSM_NET_CLOSE_DRAIN_NS (1000ULL * 1000000ULL)

/*
 * The provider's objects of ep, from offer fi: fabric, domain, address
 * vector, completion queue (with a file descriptor to block on while
 * nothing is in flight, where the provider has one) and the enabled
 * endpoint with its address.  On failure *step names the call.
 */
static int zsm_net_ep_open_fi(struct zsm_net_ep *ep, struct fi_info *fi,
			      const char **step)
{
	struct fi_cq_attr cq_attr = {
		.format = FI_CQ_FORMAT_TAGGED,
		.wait_obj = FI_WAIT_FD,
		.size = 4096,
	};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	int ret;

	*step = "fi_fabric";
	ret = zsm_fi_fabric(fi->fabric_attr, &ep->fi.fabric, NULL);
	if (ret)
		return ret;
	*step = "fi_domain";
	ret = fi_domain(ep->fi.fabric, fi, &ep->fi.domain, NULL);
	if (ret)
		return ret;
	*step = "fi_av_open";
	ret = fi_av_open(ep->fi.domain, &av_attr, &ep->fi.av, NULL);
	if (ret)
		return ret;
	/* A provider without a wait fd gets looked at now and then. */
	*step = "fi_cq_open";
	ep->fi.wait_fd = -1;
	ret = fi_cq_open(ep->fi.domain, &cq_attr, &ep->fi.cq, NULL);
	if (ret) {
		cq_attr.wait_obj = FI_WAIT_NONE;
		ret = fi_cq_open(ep->fi.domain, &cq_attr, &ep->fi.cq, NULL);
	} else if (fi_control(&ep->fi.cq->fid, FI_GETWAIT, &ep->fi.wait_fd)) {
		ep->fi.wait_fd = -1;
	}
	if (ret)
		return ret;
	*step = "fi_endpoint";
	ret = fi_endpoint(ep->fi.domain, fi, &ep->fi.ep, NULL);
	if (ret)
		return ret;
	*step = "fi_ep_bind(av)";
	ret = fi_ep_bind(ep->fi.ep, &ep->fi.av->fid, 0);
	if (ret)
		return ret;
	*step = "fi_ep_bind(cq)";
	ret = fi_ep_bind(ep->fi.ep, &ep->fi.cq->fid, FI_TRANSMIT | FI_RECV);
	if (ret)
		return ret;
	*step = "fi_enable";
	ret = fi_enable(ep->fi.ep);
	if (ret)
		return ret;
	*step = "fi_getname";
	ep->fi.addr_len = sizeof(ep->fi.addr);
	return fi_getname(&ep->fi.ep->fid, ep->fi.addr, &ep->fi.addr_len);
}

/* What ep may keep in the provider's queues, from offer fi's sizes. */
static void zsm_net_ep_budgets(struct zsm_net_ep *ep,
			       const struct fi_info *fi)
{
	size_t inflight;

	/* A probe or a handshake message must never wait for room behind
	 * data: with the provider's queue full of sends a peer cannot
	 * take yet, a probe that cannot go out reads as a dead peer. */
	ep->queue.tx_budget = fi->tx_attr->size > 2 * ZSM_NET_CTRL_RESERVE
				? fi->tx_attr->size - ZSM_NET_CTRL_RESERVE
				: fi->tx_attr->size / 2;
	/* Receives: the control receives are the reserve. */
	ep->ctrl.nrx = fi->rx_attr->size > 2 * ZSM_NET_CTRL_RX
			       ? ZSM_NET_CTRL_RX
			       : (int)(fi->rx_attr->size / 2);
	ep->queue.rx_budget = fi->rx_attr->size - (size_t)ep->ctrl.nrx;
	/* Half of it shared; the rest is each comm's room for its next
	 * receive (zsm_net_ep_rx_room). */
	ep->queue.rx_budget /= 2;
	/* What the provider surely sends without the receiver: its eager
	 * size where zsm knows it, else what it injects. */
	ep->queue.eager_max = ep->dev->eager ? ep->dev->eager
				       : fi->tx_attr->inject_size;
	/* Each send the provider holds may take one of its buffers (rxm:
	 * 16.5 KiB, from pools that grow and are never given back), and so
	 * may each transfer in progress at the receiver: how many sends zsm
	 * keeps there bounds both.  Receives are not held back: one waiting
	 * in zsm's fifo gives its sender no room (net_credit.h), and if the
	 * posted ones all waited for data that needs it, nothing would
	 * move; a posted receive costs rxm over tcp no buffer. */
	inflight = (size_t)zsm_param_int(ZSM_P_NET_INFLIGHT);
	if (ep->queue.tx_budget > inflight)
		ep->queue.tx_budget = inflight;
}

/* The spill buffer control receives take as their second part. */
static int zsm_net_ep_spill_init(struct zsm_net_ep *ep, size_t size)
{
	ep->spill = aligned_alloc(64, size);
	if (!ep->spill)
		return -FI_ENOMEM;
	if (!ep->fi.needs_mr)
		return 0;
	return zsm_net_mr_reg_internal(ep, ep->spill, size, FI_SEND | FI_RECV,
				       &ep->spill_mr, &ep->spill_desc);
}

/* zsm's own parts of ep: registration cache, flush page, send slots,
 * spill buffer, control receives.  On failure *step names the part. */
static int zsm_net_ep_open_parts(struct zsm_net_ep *ep, const char **step)
{
	struct zsm_net_dev *dev = ep->dev;
	size_t slot = sizeof(struct zsm_ctrl_msg);
	int ret;

	zsm_idmap_init(&ep->ids, ZSM_TAG_ID_MAX);
	*step = "registration cache";
	ret = zsm_net_mr_init(ep);
	if (ret)
		return ret;
	if (dev->read) {
		/* Flushes read our own memory back through the NIC. */
		*step = "fi_av_insert(own address)";
		ret = fi_av_insert(ep->fi.av, ep->fi.addr, 1, &ep->flush.self,
				   0, NULL);
		if (ret != 1)
			return ret < 0 ? ret : -FI_EINVAL;
		*step = "registering the flush page";
		ret = zsm_net_mr_flush_init(ep);
		if (ret)
			return ret;
	}
	if (ep->fi.needs_mr) {
		if (slot < sizeof(struct zsm_sig_msg))
			slot = sizeof(struct zsm_sig_msg);
		*step = "registering the send slots";
		ret = zsm_net_txpool_init(ep, &ep->ctrl.txpool, slot,
					  ZSM_NET_TXPOOL_SLOTS);
		if (ret)
			return ret;
	}
	if (dev->trunc_unsafe) {
		*step = "the spill buffer";
		ret = zsm_net_ep_spill_init(ep, dev->trunc_unsafe);
		if (ret)
			return ret;
	}
	*step = "posting the control receives";
	return zsm_net_ctrl_init(ep);
}

static void zsm_net_ep_say_open(const struct zsm_net_ep *ep,
				const struct fi_info *fi)
{
	ZSM_INFO("net: endpoint open on %s (%s), address %zu bytes, "
		 "receives %s, %s%s",
		 ep->dev->name, fi->fabric_attr->prov_name, ep->fi.addr_len,
		 ep->fi.directed ? "for one source" : "from any source",
		 ep->fi.cq_data ? "keys in remote CQ data"
			     : "no remote CQ data: data messages carry no "
			       "key",
		 !ep->fi.needs_mr ? ""
		 : (fi->domain_attr->mr_mode & FI_MR_LOCAL)
			 ? ", every buffer registered (FI_MR_LOCAL)"
			 : ", every buffer registered (ZSM_MR_LOCAL)");
}

static struct zsm_net_ep *zsm_net_ep_new(struct zsm_net_dev *dev,
					 int rx_role,
					 const struct fi_info *fi)
{
	struct zsm_net_ep *ep = calloc(1, sizeof(*ep));

	if (!ep)
		return NULL;
	ep->dev = dev;
	ep->rx_role = rx_role;
	ep->dmabuf.fd = -1;
	ep->flush.self = FI_ADDR_NOTAVAIL;
	ep->fi.mr_mode = fi->domain_attr->mr_mode;
	/* ZSM_MR_LOCAL: the path of providers that want every buffer
	 * registered (verbs, efa-direct), taken on any provider, where
	 * none of those NICs is. */
	ep->fi.needs_mr = (fi->domain_attr->mr_mode & FI_MR_LOCAL) != 0 ||
		       zsm_param_int(ZSM_P_MR_LOCAL);
	ep->rma = dev->rma_info ? dev->rma.mech : ZSM_RMA_MECH_NONE;
	ep->fi.addr_format = fi->addr_format;
	ep->fi.directed = (fi->caps & FI_DIRECTED_RECV) != 0;
	ep->fi.cq_data = fi->domain_attr->cq_data_size >= 4;
	ep->fi.crc = fi->domain_attr->cq_data_size >= 8;
	return ep;
}

static int zsm_net_ep_open(struct zsm_net_dev *dev, int path, int rx_role,
			   struct zsm_net_ep **out)
{
	/* The offer with RMA and the ordering its signals need, where the
	 * device has one (net_rma_dev.c): one endpoint serves both; the
	 * path's NIC's, on a device that spans several (net_rail.c). */
	struct fi_info *fi = zsm_net_rail_offer(dev, path);
	/* Duplex: the pump thread drives the provider beside the engine,
	 * so the domain must take calls from two threads at once. */
	struct fi_info *safe = NULL;
	struct zsm_net_ep *ep;
	const char *step = "";
	int ret;

	if (zsm_net_dev_pumped(dev)) {
		safe = zsm_fi_dupinfo(fi);
		if (!safe)
			return -ENOMEM;
		safe->domain_attr->threading = FI_THREAD_SAFE;
		fi = safe;
	}
	ep = zsm_net_ep_new(dev, rx_role, fi);
	if (!ep) {
		if (safe)
			zsm_fi_freeinfo(safe);
		return -ENOMEM;
	}
	ep->path = path;
	ret = zsm_net_ep_open_fi(ep, fi, &step);
	if (!ret) {
		zsm_net_ep_budgets(ep, fi);
		ret = zsm_net_ep_open_parts(ep, &step);
	}
	if (ret) {
		ZSM_WARN("net: opening the %sendpoint of path %d on %s failed "
			 "at %s: %s",
			 rx_role ? "receiving " : "", path, dev->name, step,
			 zsm_fi_strerror(ret < 0 ? -ret : ret));
		if (safe)
			zsm_fi_freeinfo(safe);
		zsm_net_ep_close(ep);
		return -EIO;
	}
	zsm_net_ep_say_open(ep, fi);
	if (zsm_net_dev_pumped(dev) && zsm_net_pump_start(ep))
		ZSM_WARN("net: %s: no pump thread for the %s endpoint: both "
			 "directions share the engine's",
			 dev->name, rx_role ? "receiving" : "sending");
	if (safe)
		zsm_fi_freeinfo(safe);
	*out = ep;
	return 0;
}

/* Where the device keeps its current endpoint of a path and role. */
static struct zsm_net_ep **zsm_net_ep_slot(struct zsm_net_dev *dev, int path,
					   int rx_role)
{
	if (path > 0)
		return &dev->path_ep[path - 1][rx_role];
	return rx_role ? &dev->ep_rx : &dev->ep;
}

/* The device's current endpoint of a path and role, opened on first
 * use. */
static int zsm_net_ep_current_path(struct zsm_net_dev *dev, int path,
				   int rx_role, struct zsm_net_ep **out)
{
	struct zsm_net_ep **slot = zsm_net_ep_slot(dev, path, rx_role);
	int ret = *slot ? 0 : zsm_net_ep_open(dev, path, rx_role, slot);

	*out = *slot;
	return ret;
}

static int zsm_net_ep_current(struct zsm_net_dev *dev, int rx_role,
			      struct zsm_net_ep **out)
{
	return zsm_net_ep_current_path(dev, 0, rx_role, out);
}

int zsm_net_ep_get_path(struct zsm_net_dev *dev, int p, int rx_role,
			struct zsm_net_ep **out)
{
	return zsm_net_ep_current_path(dev, p, dev->duplex && rx_role, out);
}

int zsm_net_dev_pumped(const struct zsm_net_dev *dev)
{
	return dev->duplex || (dev->paths > 1 && dev->path_pumps);
}

struct zsm_net_ep *zsm_net_dev_next_ep(struct zsm_net_dev *dev, int *i)
{
	/* 2 per path: path p's sending, then receiving endpoint. */
	while (*i < 2 * ZSM_NET_PATHS_MAX) {
		int at = (*i)++;
		struct zsm_net_ep *ep = *zsm_net_ep_slot(dev, at / 2, at % 2);

		if (ep)
			return ep;
	}
	return NULL;
}

int zsm_net_ep_get(struct zsm_net_dev *dev, struct zsm_net_ep **out)
{
	return zsm_net_ep_current(dev, 0, out);
}

int zsm_net_ep_get_rx(struct zsm_net_dev *dev, struct zsm_net_ep **out)
{
	return zsm_net_ep_current(dev, dev->duplex, out);
}

int zsm_net_ep_twin(struct zsm_net_ep *ep, struct zsm_net_ep **out)
{
	*out = NULL;
	return ep->dev->duplex ? zsm_net_ep_current(ep->dev, !ep->rx_role, out)
			       : 0;
}

void zsm_net_ep_pump_hint(struct zsm_net_ep *ep)
{
	/* Sends only: posted receives wait on the fd (net_pump.c). */
	int busy = ep->queue.tx_inflight || ep->ctrl.tx || ep->ctrl.head;

	if (!ep->pump)
		return;
	/* relaxed: a hint (spin or sleep) the pump reads again each turn;
	 * nothing it guards is read through it, and only the engine writes
	 * it, so a change is a plain load and store, no locked instruction
	 * per post.  A sleeping pump is woken when sends come (the fence
	 * there pairs with its sleep's). */
	if (busy == atomic_load_explicit(&ep->pump_busy, memory_order_relaxed))
		return;
	atomic_store_explicit(&ep->pump_busy, busy, memory_order_relaxed);
	if (busy)
		zsm_net_pump_wake(ep);
}

/* Operations of ep's comms that the provider still holds. */
static unsigned long zsm_net_ep_held(const struct zsm_net_ep *ep)
{
	unsigned long n = 0;

	for (const struct zsm_net_comm *c = ep->comms; c; c = c->ep_next)
		n += (unsigned long)c->posted.ops;
	return n;
}

/* Whether ep still has zsm's work in the provider: data operations,
 * control sends in flight or queued. */
static int zsm_net_ep_unsettled(const struct zsm_net_ep *ep)
{
	return zsm_net_ep_held(ep) || ep->ctrl.tx || ep->ctrl.head;
}

/* One pass over every current endpoint of dev: what moved into *moved,
 * how many are unsettled into *busy.  Retired ones are not driven: their
 * peers went silent (zsm_net_ep_close). */
static void zsm_net_dev_settle_pass(struct zsm_net_dev *dev, int *moved,
				    int *busy)
{
	struct zsm_net_ep *ep;
	int at = 0;

	while ((ep = zsm_net_dev_next_ep(dev, &at))) {
		*moved += zsm_net_ep_progress(ep);
		*busy += zsm_net_ep_unsettled(ep);
	}
}

/*
 * tcp;ofi_rxm (libfabric 1.17) has been seen to crash inside fi_close of
 * an endpoint closed with transfers still in it (a peer killed with
 * rendezvous sends both ways): its close reads completions that refer to
 * connections it has already freed.  So teardown first lets the provider
 * finish, or fail (a dead peer's), what it holds, for a bounded time;
 * what it still holds then decides between closing and leaving the
 * endpoint open (zsm_net_ep_leave_open).
 */
void zsm_net_topo_settle(struct zsm_net_topo *topo)
{
	uint64_t t0 = zsm_now_ns();

	for (;;) {
		int moved = 0, busy = 0;

		for (int i = 0; i < topo->ndevs; i++)
			zsm_net_dev_settle_pass(&topo->devs[i], &moved, &busy);
		if (!busy || zsm_now_ns() - t0 >= ZSM_NET_CLOSE_DRAIN_NS)
			return;
		if (!moved)
			poll(NULL, 0, 1);
	}
}

static void zsm_net_ep_destroy(struct zsm_net_ep *ep)
{
	struct zsm_net_comm *c, *next;
	unsigned long held = zsm_net_ep_held(ep);

	zsm_net_pump_stop(ep);
	/* Comms' work parked here goes back to the engine's own list. */
	zsm_proxy_room_flush(&ep->queue.tx_room);
	zsm_proxy_room_flush(&ep->queue.rx_room);

	if (held)
		ZSM_INFO("net: %s: closing the endpoint with %lu operations "
			 "the provider did not give back in %llu ms",
			 ep->dev->name, held,
			 ZSM_NET_CLOSE_DRAIN_NS / 1000000ULL);
	/* Closing the endpoint ends every operation; then nothing refers to
	 * the comms and they can go, whether NCCL closed them or not. */
	if (ep->fi.ep)
		fi_close(&ep->fi.ep->fid);
	ep->fi.ep = NULL;
	for (c = ep->comms; c; c = next) {
		next = c->ep_next;
		zsm_net_comm_free(c);
	}
	ep->comms = NULL;
	zsm_net_ctrl_drop_summary(ep, zsm_now_ns(), 1);
	zsm_net_ctrl_fini(ep);
	zsm_net_txpool_fini(&ep->ctrl.txpool);
	if (ep->spill_mr)
		zsm_net_mr_dereg_internal(ep->spill_mr);
	free(ep->spill);
	zsm_net_mr_close_all(ep);
	zsm_net_mr_drop_twins(ep);
	zsm_net_mr_fini(ep);
	zsm_net_mr_flush_fini(ep);
	zsm_idmap_fini(&ep->ids);
	if (ep->fi.cq)
		fi_close(&ep->fi.cq->fid);
	if (ep->fi.av)
		fi_close(&ep->fi.av->fid);
	if (ep->fi.domain)
		fi_close(&ep->fi.domain->fid);
	if (ep->fi.fabric)
		fi_close(&ep->fi.fabric->fid);
	if (ep->dev && *zsm_net_ep_slot(ep->dev, ep->path, ep->rx_role) == ep)
		*zsm_net_ep_slot(ep->dev, ep->path, ep->rx_role) = NULL;
	free(ep);
}

void zsm_net_ep_retire(struct zsm_net_ep *ep)
{
	struct zsm_net_dev *dev = ep->dev;

	if (ep->retired)
		return;
	ep->retired = 1;
	if (*zsm_net_ep_slot(dev, ep->path, ep->rx_role) == ep)
		*zsm_net_ep_slot(dev, ep->path, ep->rx_role) = NULL;
	ep->retired_next = dev->retired;
	dev->retired = ep;
	ZSM_INFO("net: %s: new comms get a fresh endpoint; this one closes "
		 "with its last comm",
		 dev->name);
}

/* Retired endpoints that kept operations at the provider (zsm_net_ep_reap);
 * still reachable, so that leak checkers see where they went. */
static struct zsm_net_ep *zsm_net_ep_abandoned;

/*
 * Whether ep is to be left open, unpolled, rather than closed: the
 * provider still holds some of its operations and moves bytes only in
 * calls that drive it (data progress manual: tcp;ofi_rxm).  A close
 * there crashes libfabric 1.17's rxm (a transfer stuck on a link that
 * went down: netns-linkdown, netns-rails-linkdown), and a pass would
 * move what the link delivers once back into buffers NCCL has freed;
 * left alone it moves nothing, and the process's exit reclaims it.  A
 * provider that moves bytes on its own is closed all the same, since
 * only the close stops it.
 */
static int zsm_net_ep_leave_open(const struct zsm_net_ep *ep)
{
	return zsm_net_ep_held(ep) &&
	       ep->dev->info->domain_attr->data_progress == FI_PROGRESS_MANUAL;
}

static void zsm_net_ep_abandon(struct zsm_net_ep *ep)
{
	struct zsm_net_ep **slot = zsm_net_ep_slot(ep->dev, ep->path,
						   ep->rx_role);

	ZSM_INFO("net: %s: an endpoint of path %d still has %lu operations "
		 "with the provider: left open, unpolled",
		 ep->dev->name, ep->path, zsm_net_ep_held(ep));
	/* Its pump would poll it too. */
	zsm_net_pump_stop(ep);
	if (*slot == ep)
		*slot = NULL;
	ep->retired_next = zsm_net_ep_abandoned;
	zsm_net_ep_abandoned = ep;
}

void zsm_net_ep_close(struct zsm_net_ep *ep)
{
	if (!ep)
		return;
	/* Not driven here: zsm_net_topo_settle drove every current one
	 * already, and a retired one's peer went silent (what a pass moved
	 * now could land in freed buffers). */
	if (zsm_net_ep_leave_open(ep))
		zsm_net_ep_abandon(ep);
	else
		zsm_net_ep_destroy(ep);
}

/* Close retired endpoints all of whose comms are closing. */
void zsm_net_ep_reap(struct zsm_net_dev *dev)
{
	struct zsm_net_ep **pp = &dev->retired;

	while (*pp) {
		struct zsm_net_ep *ep = *pp;
		struct zsm_net_comm *c;

		for (c = ep->comms; c && c->closing; c = c->ep_next)
			;
		if (c) {
			pp = &ep->retired_next;
			continue;
		}
		*pp = ep->retired_next;
		if (zsm_net_ep_leave_open(ep)) {
			zsm_net_ep_abandon(ep);
			continue;
		}
		ZSM_INFO("net: %s: the retired endpoint closes", dev->name);
		zsm_net_ep_destroy(ep);
	}
}
