/* SPDX-License-Identifier: MIT */
/*
 * zsm-bench --raw --rma: one-sided puts on libfabric alone, built as zsm
 * builds them on a device whose signals go by saw (plugin/net/net_rma.c):
 * the endpoint is the offer zsm's RMA endpoint opens (FI_RMA and
 * FI_TAGGED, FI_ORDER_SAW and WAW), a put is fi_write into the peer's
 * registered window, and its signal a 48-byte tagged message (zsm's own
 * struct zsm_sig_msg) posted right after the write on the same endpoint,
 * which the provider delivers after the write's bytes; the target adds it
 * to the word when its completion comes.  What zsm adds on top (requests,
 * its thread, checks of the peer) is the difference the bench measures.
 */
#include <stdint.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "bench_raw_int.h"
#include "common/clock.h"

/* Not the data tag of bench_raw.c. */
#define RAW_SIG_TAG 0x5167ull
/* How long a signal may find the provider's queue full. */
#define RAW_SIG_WAIT_NS (20ull * 1000000000ull)

const char *bench_raw_mech(const struct bench_raw *r)
{
	return r->mech ? r->mech : "none";
}

int bench_raw_win_reg(struct bench_raw *r, void *buf, size_t len,
		      struct bench_raw_win *win)
{
	struct raw_mr *m;
	int ret = raw_mr_reg(r, buf, len,
			     FI_WRITE | FI_READ | FI_REMOTE_WRITE |
				     FI_REMOTE_READ | FI_SEND | FI_RECV,
			     &m);

	if (ret)
		return ret;
	/* As zsm: without FI_MR_VIRT_ADDR a peer's addresses count from
	 * the registration's start. */
	win->addr = (r->fi->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
			    ? (uint64_t)(uintptr_t)buf
			    : 0;
	win->key = fi_mr_key(m->mr);
	win->size = len;
	win->id = (uint64_t)(m - r->mrs) + 1;
	return 0;
}

/* Post signal receives until sig_want are; a full queue leaves the rest
 * to the next progress. */
static int raw_rma_sig_fill(struct bench_raw *r)
{
	while (r->sig_posted < r->sig_want) {
		struct raw_req *q = raw_get(r);
		ssize_t ret;

		if (!q)
			return -FI_ENOSPC;
		q->sig_rx = 1;
		ret = fi_trecv(r->ep, &q->sig, sizeof(q->sig), NULL, r->peer,
			       RAW_SIG_TAG, 0, &q->op[0].ctx);
		if (ret) {
			raw_put(r, q);
			return ret == -FI_EAGAIN ? 0 : (int)ret;
		}
		r->sig_posted++;
	}
	return 0;
}

int bench_raw_sig_listen(struct bench_raw *r, int n)
{
	r->sig_want = n;
	return raw_rma_sig_fill(r);
}

int raw_rma_on_signal(struct bench_raw *r, struct raw_req *q)
{
	const struct zsm_sig_msg m = q->sig;
	const struct raw_mr *w;

	raw_put(r, q);
	r->sig_posted--;
	/* The same checks zsm makes before it adds: -FI_EINVAL. */
	if (m.type != ZSM_CTRL_SIGNAL || m.win < 1 || m.win > (uint64_t)r->nmr)
		return -FI_EINVAL;
	w = &r->mrs[m.win - 1];
	if (w->len < 8 || m.off % 8 || m.off > w->len - 8 ||
	    (uintptr_t)(w->base + m.off) % 8)
		return -FI_EINVAL;
	/* release: pairs with the acquire load of the rank that waits on
	 * the word (bench_rma.c); the write before it landed when the
	 * provider read it off the link, before this message. */
	__atomic_fetch_add((uint64_t *)(void *)(w->base + m.off), m.add,
			   __ATOMIC_RELEASE);
	return raw_rma_sig_fill(r);
}

int bench_raw_progress(struct bench_raw *r)
{
	int ret = raw_poll(r);

	return ret ? ret : raw_rma_sig_fill(r);
}

/* The signal after q's write: the provider's queue may be full for a
 * while, and only progress empties it. */
static int raw_rma_post_signal(struct bench_raw *r, struct raw_req *q)
{
	uint64_t t0 = zsm_now_ns();
	ssize_t ret;
	int p;

	for (;;) {
		ret = fi_tsend(r->ep, &q->sig, sizeof(q->sig), NULL, r->peer,
			       RAW_SIG_TAG, &q->op[1].ctx);
		if (ret != -FI_EAGAIN)
			return (int)ret;
		if (zsm_now_ns() - t0 > RAW_SIG_WAIT_NS)
			return -FI_ETIMEDOUT;
		p = raw_poll(r);
		if (p)
			return p;
	}
}

int bench_raw_put(struct bench_raw *r, void *src, size_t len,
		  const struct bench_raw_win *dst, uint64_t dst_off,
		  const struct bench_raw_win *sig, uint64_t sig_off,
		  void **req)
{
	struct raw_req *q = raw_get(r);
	ssize_t ret;

	*req = NULL;
	if (!q)
		return raw_poll(r);
	ret = fi_write(r->ep, src, len, raw_desc(r, src), r->peer,
		       dst->addr + dst_off, dst->key, &q->op[0].ctx);
	if (ret) {
		raw_put(r, q);
		/* Full queues drain only through progress. */
		return ret == -FI_EAGAIN ? raw_poll(r) : (int)ret;
	}
	*req = q;
	if (!sig)
		return 0;
	q->sig.magic = ZSM_HANDLE_MAGIC;
	q->sig.version = ZSM_HANDLE_VERSION;
	q->sig.type = ZSM_CTRL_SIGNAL;
	q->sig.win = sig->id;
	q->sig.off = sig_off;
	q->sig.add = 1;
	q->left = 2;
	ret = raw_rma_post_signal(r, q);
	if (ret) {
		/* The write is out: the request ends with it, failed. */
		q->left = 1;
		q->err = (int)ret;
	}
	return 0;
}
