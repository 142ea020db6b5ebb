/* SPDX-License-Identifier: MIT */
/*
 * zsm-bench --raw: tagged sends and receives straight on libfabric, with
 * no plugin in between.  The offer is chosen as the plugin chooses its
 * device 0, so that both runs use the same provider on the same domain.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "bench_raw_int.h"
#include "net/net.h"

#define RAW_TAG 0x2bull
#define RAW_CQ_BATCH 16

/*
 * --rma: the offer zsm's RMA endpoint opens on dev, where zsm signals the
 * way bench_raw_rma.c mirrors (saw); else NULL, with *why.
 */
static struct fi_info *raw_rma_offer(const struct zsm_net_dev *dev,
				     const char **why)
{
	static char line[sizeof(dev->rma.why) + 128];

	if (!dev->rma_info) {
		snprintf(line, sizeof(line), "zsm has %s", dev->rma.why);
		*why = line;
		return NULL;
	}
	if (dev->rma.mech != ZSM_RMA_MECH_SAW) {
		snprintf(line, sizeof(line),
			 "zsm signals by %s on %s; --raw --rma builds only "
			 "saw's (a message after the write)",
			 zsm_net_rma_mech_name(dev->rma.mech), dev->name);
		*why = line;
		return NULL;
	}
	return fi_dupinfo(dev->rma_info);
}

int bench_raw_open(struct bench_raw **out, int rma, const char **why)
{
	struct fi_cq_attr cq_attr = { 0 };
	struct fi_av_attr av_attr = { 0 };
	struct zsm_net_topo topo;
	struct bench_raw *r;
	int ret;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r) {
		*why = "out of memory";
		return -FI_ENOMEM;
	}
	/* The plugin's own discovery, so both runs use the same offer. */
	ret = zsm_net_topo_discover(&topo);
	if (ret || topo.ndevs == 0) {
		*why = "no offer matches ZSM_PROVIDER / FI_PROVIDER / "
		       "ZSM_DOMAIN (zsm-info says why)";
		if (!ret)
			zsm_net_topo_free(&topo);
		ret = -FI_ENODATA;
		goto fail;
	}
	*why = "out of memory";
	if (rma) {
		r->fi = raw_rma_offer(&topo.devs[0], why);
		r->mech = zsm_net_rma_mech_name(topo.devs[0].rma.mech);
	} else {
		r->fi = fi_dupinfo(topo.devs[0].info);
	}
	zsm_net_topo_free(&topo);
	if (!r->fi) {
		ret = rma ? -FI_EOPNOTSUPP : -FI_ENOMEM;
		goto fail;
	}
	r->need_desc = !!(r->fi->domain_attr->mr_mode & FI_MR_LOCAL);
	*why = "fi_fabric";
	ret = fi_fabric(r->fi->fabric_attr, &r->fabric, NULL);
	if (ret)
		goto fail;
	*why = "fi_domain";
	ret = fi_domain(r->fabric, r->fi, &r->domain, NULL);
	if (ret)
		goto fail;
	*why = "fi_endpoint";
	ret = fi_endpoint(r->domain, r->fi, &r->ep, NULL);
	if (ret)
		goto fail;
	cq_attr.format = FI_CQ_FORMAT_TAGGED;
	cq_attr.size = 2 * RAW_NREQ;
	*why = "fi_cq_open";
	ret = fi_cq_open(r->domain, &cq_attr, &r->cq, NULL);
	if (ret)
		goto fail;
	av_attr.type = FI_AV_TABLE;
	av_attr.count = 2;
	*why = "fi_av_open";
	ret = fi_av_open(r->domain, &av_attr, &r->av, NULL);
	if (ret)
		goto fail;
	*why = "fi_ep_bind";
	ret = fi_ep_bind(r->ep, &r->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_ep_bind(r->ep, &r->av->fid, 0);
	if (ret)
		goto fail;
	*why = "fi_enable";
	ret = fi_enable(r->ep);
	if (ret)
		goto fail;
	for (int i = RAW_NREQ - 1; i >= 0; i--) {
		r->reqs[i].next_free = r->free_reqs;
		r->free_reqs = &r->reqs[i];
	}
	r->peer = FI_ADDR_UNSPEC;
	*why = NULL;
	*out = r;
	return 0;
fail:
	bench_raw_close(r);
	return ret < 0 ? ret : -ret;
}

void bench_raw_close(struct bench_raw *r)
{
	if (!r)
		return;
	/* The endpoint goes before what is bound to it. */
	if (r->ep)
		fi_close(&r->ep->fid);
	for (int i = 0; i < r->nmr; i++)
		fi_close(&r->mrs[i].mr->fid);
	if (r->av)
		fi_close(&r->av->fid);
	if (r->cq)
		fi_close(&r->cq->fid);
	if (r->domain)
		fi_close(&r->domain->fid);
	if (r->fabric)
		fi_close(&r->fabric->fid);
	if (r->fi)
		fi_freeinfo(r->fi);
	free(r);
}

const char *bench_raw_provider(const struct bench_raw *r)
{
	return r->fi->fabric_attr->prov_name;
}

const char *bench_raw_domain(const struct bench_raw *r)
{
	return r->fi->domain_attr->name;
}

size_t bench_raw_max_msg(const struct bench_raw *r)
{
	return r->fi->ep_attr->max_msg_size;
}

int bench_raw_name(struct bench_raw *r, void *addr, size_t *len)
{
	return fi_getname(&r->ep->fid, addr, len);
}

int bench_raw_set_peer(struct bench_raw *r, const void *addr)
{
	int n = fi_av_insert(r->av, addr, 1, &r->peer, 0, NULL);

	return n == 1 ? 0 : (n < 0 ? n : -FI_EINVAL);
}

int raw_mr_reg(struct bench_raw *r, void *buf, size_t len, uint64_t access,
	       struct raw_mr **out)
{
	struct raw_mr *m;
	int ret;

	if (r->nmr == RAW_NMR)
		return -FI_ENOSPC;
	m = &r->mrs[r->nmr];
	/* Keys of our own only where the provider does not pick them. */
	ret = fi_mr_reg(r->domain, buf, len, access, 0,
			(r->fi->domain_attr->mr_mode & FI_MR_PROV_KEY)
				? 0
				: (uint64_t)r->nmr + 1,
			0, &m->mr, NULL);
	if (ret)
		return ret;
	if (r->fi->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		ret = fi_mr_bind(m->mr, &r->ep->fid, 0);
		if (!ret)
			ret = fi_mr_enable(m->mr);
		if (ret) {
			fi_close(&m->mr->fid);
			return ret;
		}
	}
	m->base = buf;
	m->len = len;
	m->desc = fi_mr_desc(m->mr);
	r->nmr++;
	*out = m;
	return 0;
}

int bench_raw_reg(struct bench_raw *r, void *buf, size_t len)
{
	struct raw_mr *m;

	if (!r->need_desc)
		return 0;
	return raw_mr_reg(r, buf, len, FI_SEND | FI_RECV, &m);
}

void *raw_desc(struct bench_raw *r, const void *buf)
{
	const char *p = buf;

	for (int i = 0; i < r->nmr; i++)
		if (p >= r->mrs[i].base && p < r->mrs[i].base + r->mrs[i].len)
			return r->mrs[i].desc;
	return NULL;
}

/* One operation of q ended (err: its error, or 0); q is done with its
 * last. */
static int raw_op_done(struct bench_raw *r, struct raw_req *q, int err,
		       size_t len)
{
	if (q->sig_rx) {
		/* A failed signal receive loses a signal: the run cannot go
		 * on. */
		return err ? err : raw_rma_on_signal(r, q);
	}
	if (err && !q->err)
		q->err = err;
	if (!err && len > q->len)
		q->len = len;
	if (--q->left == 0)
		q->done = 1;
	return 0;
}

int raw_poll(struct bench_raw *r)
{
	struct fi_cq_tagged_entry e[RAW_CQ_BATCH];
	struct fi_cq_err_entry err;
	struct raw_op *op;
	ssize_t n;
	int ret;

	n = fi_cq_read(r->cq, e, RAW_CQ_BATCH);
	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		n = fi_cq_readerr(r->cq, &err, 0);
		if (n < 0)
			return (int)n;
		op = err.op_context;
		if (!op)
			return -FI_EOTHER;
		return raw_op_done(r, op->req, err.err ? -err.err : -FI_EOTHER,
				   0);
	}
	if (n < 0)
		return (int)n;
	for (ssize_t i = 0; i < n; i++) {
		op = e[i].op_context;
		ret = raw_op_done(r, op->req, 0, e[i].len);
		if (ret)
			return ret;
	}
	return 0;
}

struct raw_req *raw_get(struct bench_raw *r)
{
	struct raw_req *q = r->free_reqs;

	if (q) {
		r->free_reqs = q->next_free;
		memset(q, 0, sizeof(*q));
		q->op[0].req = q;
		q->op[1].req = q;
		q->left = 1;
	}
	return q;
}

void raw_put(struct bench_raw *r, struct raw_req *q)
{
	q->next_free = r->free_reqs;
	r->free_reqs = q;
}

static int raw_post(struct bench_raw *r, int send, void *buf, size_t len,
		    void **req)
{
	struct raw_req *q = raw_get(r);
	ssize_t ret;

	*req = NULL;
	if (!q)
		return raw_poll(r);
	if (send)
		ret = fi_tsend(r->ep, buf, len, raw_desc(r, buf), r->peer,
			       RAW_TAG, &q->op[0].ctx);
	else
		ret = fi_trecv(r->ep, buf, len, raw_desc(r, buf), r->peer,
			       RAW_TAG, 0, &q->op[0].ctx);
	if (ret == -FI_EAGAIN) {
		/* Full queues drain only through progress. */
		raw_put(r, q);
		return raw_poll(r);
	}
	if (ret) {
		raw_put(r, q);
		return (int)ret;
	}
	*req = q;
	return 0;
}

int bench_raw_isend(struct bench_raw *r, void *buf, size_t len, void **req)
{
	return raw_post(r, 1, buf, len, req);
}

int bench_raw_irecv(struct bench_raw *r, void *buf, size_t len, void **req)
{
	return raw_post(r, 0, buf, len, req);
}

int bench_raw_test(struct bench_raw *r, void *req, int *done, size_t *len)
{
	struct raw_req *q = req;
	int ret;

	*done = 0;
	if (!q->done) {
		ret = raw_poll(r);
		if (ret)
			return ret;
	}
	if (!q->done)
		return 0;
	ret = q->err;
	*len = q->len;
	*done = 1;
	raw_put(r, q);
	return ret;
}

const char *bench_raw_strerror(int err)
{
	return fi_strerror(err < 0 ? -err : err);
}
