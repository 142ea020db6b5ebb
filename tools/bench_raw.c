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

#include "bench_raw.h"
#include "net/net.h"

#define RAW_TAG 0x2bull
#define RAW_NREQ 64
#define RAW_NMR 4
#define RAW_CQ_BATCH 16

struct raw_req {
	/* First, so that a completion's op_context is the request. */
	struct fi_context2 ctx;
	struct raw_req *next_free;
	int done;
	int err;
	size_t len;
};

struct raw_mr {
	struct fid_mr *mr;
	char *base;
	size_t len;
	void *desc;
};

struct bench_raw {
	struct fi_info *fi; /* the plugin's device 0 */
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	fi_addr_t peer;
	int need_desc;
	struct raw_mr mrs[RAW_NMR];
	int nmr;
	struct raw_req reqs[RAW_NREQ];
	struct raw_req *free_reqs;
};

int bench_raw_open(struct bench_raw **out, const char **why)
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
	r->fi = fi_dupinfo(topo.devs[0].info);
	zsm_net_topo_free(&topo);
	if (!r->fi) {
		*why = "out of memory";
		ret = -FI_ENOMEM;
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

int bench_raw_reg(struct bench_raw *r, void *buf, size_t len)
{
	struct raw_mr *m;
	int ret;

	if (!r->need_desc)
		return 0;
	if (r->nmr == RAW_NMR)
		return -FI_ENOSPC;
	m = &r->mrs[r->nmr];
	ret = fi_mr_reg(r->domain, buf, len, FI_SEND | FI_RECV, 0,
			(uint64_t)r->nmr, 0, &m->mr, NULL);
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
	return 0;
}

static void *raw_desc(struct bench_raw *r, const void *buf)
{
	const char *p = buf;

	for (int i = 0; i < r->nmr; i++)
		if (p >= r->mrs[i].base && p < r->mrs[i].base + r->mrs[i].len)
			return r->mrs[i].desc;
	return NULL;
}

/* Reap what has completed; progress happens here too. */
static int raw_poll(struct bench_raw *r)
{
	struct fi_cq_tagged_entry e[RAW_CQ_BATCH];
	struct fi_cq_err_entry err;
	struct raw_req *q;
	ssize_t n;

	n = fi_cq_read(r->cq, e, RAW_CQ_BATCH);
	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		n = fi_cq_readerr(r->cq, &err, 0);
		if (n < 0)
			return (int)n;
		q = err.op_context;
		if (!q)
			return -FI_EOTHER;
		q->done = 1;
		q->err = err.err ? -err.err : -FI_EOTHER;
		return 0;
	}
	if (n < 0)
		return (int)n;
	for (ssize_t i = 0; i < n; i++) {
		q = e[i].op_context;
		q->done = 1;
		q->len = e[i].len;
	}
	return 0;
}

static struct raw_req *raw_get(struct bench_raw *r)
{
	struct raw_req *q = r->free_reqs;

	if (q) {
		r->free_reqs = q->next_free;
		memset(q, 0, sizeof(*q));
	}
	return q;
}

static void raw_put(struct bench_raw *r, struct raw_req *q)
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
			       RAW_TAG, &q->ctx);
	else
		ret = fi_trecv(r->ep, buf, len, raw_desc(r, buf), r->peer,
			       RAW_TAG, 0, &q->ctx);
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
