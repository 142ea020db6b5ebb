/* SPDX-License-Identifier: MIT */
/*
 * Owns the group: every rank joined to every other both ways by the entry
 * points' comms, and the exchanges run over them.  NCCL gives the RMA
 * plugin no collective helper, so connect builds one: each rank connects
 * to every other rank's listener and accepts as many connections, then a
 * hello on each link says whose it is (accepts come in any order).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/handle.h"
#include "common/log.h"
#include "common/param.h"
#include "group/group_int.h"

int zsm_group_enabled(void)
{
	if (zsm_param_int(ZSM_P_RMA))
		return 0;
	ZSM_INFO("group: one-sided operations are off (ZSM_RMA=0): no RMA "
		 "tables, no zsm API");
	return -ENOTSUP;
}

uint64_t zsm_group_deadline_ns(void)
{
	return zsm_now_ns() +
	       (uint64_t)zsm_param_int(ZSM_P_CONNECT_TIMEOUT_MS) * 1000000ULL;
}

void zsm_group_nap(void)
{
	struct timespec ts = {0, 50000};

	nanosleep(&ts, NULL);
}

int zsm_group_lookup(const char *call, const void *h, int type, void **obj)
{
	int ret = zsm_handle_get((uint64_t)(uintptr_t)h,
				 (enum zsm_handle_type)type, obj);

	if (ret)
		ZSM_WARN("group: %s: %p is not a live zsm %s", call, h,
			 zsm_handle_type_name((enum zsm_handle_type)type));
	return ret;
}

int zsm_group_bad_arg(const char *call, const char *what)
{
	ZSM_WARN("group: %s: %s", call, what);
	return -EINVAL;
}

int zsm_group_release(const char *call, const void *h, int type, void **obj)
{
	int ret = zsm_handle_close((uint64_t)(uintptr_t)h,
				   (enum zsm_handle_type)type, obj);

	if (ret)
		ZSM_WARN("group: %s: %p is not a live zsm %s", call, h,
			 zsm_handle_type_name((enum zsm_handle_type)type));
	return ret;
}

int zsm_group_wait(void *req, uint64_t deadline_ns)
{
	int done = 0, ret;

	while (!(ret = zsm_test(req, &done, NULL)) && !done) {
		if (zsm_now_ns() > deadline_ns) {
			ZSM_WARN("group: a peer did not answer within "
				 "ZSM_CONNECT_TIMEOUT_MS (%lld ms)",
				 zsm_param_int(ZSM_P_CONNECT_TIMEOUT_MS));
			return -ETIMEDOUT;
		}
		zsm_group_nap();
	}
	return ret;
}

int zsm_group_listen(void *ctx, int dev, void *handle, void **listen)
{
	struct zsm_group_listener *l;
	uint64_t h;
	int ret;

	if (!listen)
		return zsm_group_bad_arg("listen", "listenComm is NULL");
	*listen = NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->dev = dev;
	ret = zsm_listen(ctx, dev, handle, &l->lc);
	if (!ret && zsm_handle_open(ZSM_H_RMA_LISTEN, l, &h))
		ret = -ENOMEM;
	if (ret) {
		if (l->lc)
			zsm_close_listen(l->lc);
		free(l);
		return ret;
	}
	*listen = (void *)(uintptr_t)h;
	return 0;
}

int zsm_group_close_listen(void *listen)
{
	struct zsm_group_listener *l;
	int ret = zsm_group_release("closeListen", listen, ZSM_H_RMA_LISTEN,
				  (void **)&l);

	if (ret)
		return ret;
	ret = zsm_close_listen(l->lc);
	free(l);
	return ret;
}

/* Close every link c has and free it (unpublished). */
static void zsm_group_coll_free(struct zsm_group *c)
{
	for (int p = 0; p < c->nranks; p++) {
		if (c->send_mh && c->send_mh[p])
			zsm_dereg_mr(c->send[p], c->send_mh[p]);
		if (c->recv_mh && c->recv_mh[p])
			zsm_dereg_mr(c->recv[p], c->recv_mh[p]);
		if (c->send && c->send[p])
			zsm_close_send(c->send[p]);
		if (c->recv && c->recv[p])
			zsm_close_recv(c->recv[p]);
	}
	zsm_group_xchg_fini(c);
	free(c->send);
	free(c->recv);
	free(c->send_mh);
	free(c->recv_mh);
	free(c->kind);
	free(c->scratch);
	free(c);
}

/* Connect to every peer and accept as many: the accepted comms land in
 * c->recv in arrival order, to be sorted by the hello. */
static int zsm_group_join(struct zsm_group *c, struct zsm_group_listener *l,
			void **nccl_handles, uint64_t deadline)
{
	int peers = c->nranks - 1, sent = 0, got = 0, ret = 0;
	/* A connect keeps its progress in the handle it is given (net_wire.h):
	 * ours, not NCCL's, which it may hand to other calls. */
	char (*handles)[ZSM_HANDLE_BYTES] =
		calloc((unsigned)c->nranks, ZSM_HANDLE_BYTES);

	if (!handles)
		return -ENOMEM;
	for (int p = 0; p < c->nranks; p++)
		memcpy(handles[p], nccl_handles[p], ZSM_HANDLE_BYTES);

	while (sent < peers || got < peers) {
		for (int p = 0; p < c->nranks; p++) {
			if (p == c->rank || c->send[p])
				continue;
			ret = zsm_connect(NULL, l->dev, handles[p],
					  &c->send[p]);
			if (ret) {
				ZSM_WARN("group: connect: rank %d could not "
					 "reach rank %d",
					 c->rank, p);
				goto out;
			}
			sent += c->send[p] != NULL;
		}
		if (got < peers) {
			ret = zsm_accept(l->lc, &c->recv[got]);
			if (ret)
				goto out;
			got += c->recv[got] != NULL;
		}
		if (zsm_now_ns() > deadline) {
			ZSM_WARN("group: connect: rank %d joined %d of %d peers "
				 "one way and %d the other within "
				 "ZSM_CONNECT_TIMEOUT_MS",
				 c->rank, sent, peers, got);
			ret = -ETIMEDOUT;
			goto out;
		}
		if (sent < peers || got < peers)
			zsm_group_nap();
	}
out:
	free(handles);
	return ret;
}

/* The scratch for exchanges, registered on every link: the hello's, then
 * the agreed exchanges'. */
static size_t zsm_group_hello_bytes(const struct zsm_group *c)
{
	return ZSM_GROUP_XCHG_BYTES * (size_t)(c->nranks + 1);
}

static int zsm_group_scratch(struct zsm_group *c)
{
	size_t len = zsm_group_hello_bytes(c) + zsm_group_xchg_bytes(c->nranks);

	c->scratch = calloc(1, len);
	if (!c->scratch)
		return -ENOMEM;
	for (int p = 0; p < c->nranks; p++) {
		int ret;

		if (!c->send[p])
			continue;
		ret = zsm_reg_mr(c->send[p], c->scratch, len, ZSM_MEM_HOST,
				 &c->send_mh[p]);
		if (!ret)
			ret = zsm_reg_mr(c->recv[p], c->scratch, len,
					 ZSM_MEM_HOST, &c->recv_mh[p]);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Post, on every link, the send of our part and the receive of the
 * peer's: the core may hand back no request while its queue is full
 * (retry), never here an error but the comm's.
 */
static int zsm_group_post_all(struct zsm_group *c, size_t len, int tag,
			    void **sreq, void **rreq, uint64_t deadline)
{
	for (int p = 0; p < c->nranks; p++) {
		void *slot = c->scratch + ZSM_GROUP_XCHG_BYTES * (size_t)(p + 1);
		int ret = 0;

		if (p == c->rank)
			continue;
		while (!rreq[p] && !ret) {
			ret = zsm_irecv(c->recv[p], 1, &slot, &len, &tag,
					&c->recv_mh[p], &rreq[p]);
			if (!ret && !rreq[p] && zsm_now_ns() > deadline)
				ret = -ETIMEDOUT;
		}
		while (!sreq[p] && !ret) {
			ret = zsm_isend(c->send[p], c->scratch, len, tag,
					c->send_mh[p], &sreq[p]);
			if (!ret && !sreq[p] && zsm_now_ns() > deadline)
				ret = -ETIMEDOUT;
		}
		if (ret)
			return ret;
	}
	return 0;
}

int zsm_group_alltoall(struct zsm_group *c, const void *mine, size_t len,
		     void *all)
{
	uint64_t deadline = zsm_group_deadline_ns();
	void **sreq = calloc((size_t)c->nranks, sizeof(*sreq));
	void **rreq = calloc((size_t)c->nranks, sizeof(*rreq));
	int tag = (int)(c->seq++ % ZSM_TAG_MAX), ret;

	if (!sreq || !rreq) {
		free(sreq);
		free(rreq);
		return -ENOMEM;
	}
	memcpy(c->scratch, mine, len);
	ret = zsm_group_post_all(c, len, tag, sreq, rreq, deadline);
	/* Every posted request is waited for, even after a failure: the
	 * scratch must not be freed under them. */
	for (int p = 0; p < c->nranks; p++) {
		int r = 0;

		if (sreq[p])
			r = zsm_group_wait(sreq[p], deadline);
		if (rreq[p] && !r)
			r = zsm_group_wait(rreq[p], deadline);
		if (!ret)
			ret = r;
	}
	if (!ret) {
		for (int p = 0; p < c->nranks; p++)
			memcpy((char *)all + (size_t)p * len,
			       p == c->rank ? mine
					    : c->scratch + ZSM_GROUP_XCHG_BYTES *
								   (size_t)(p + 1),
			       len);
	}
	free(sreq);
	free(rreq);
	return ret;
}

/* The hello: each link's receive comm is put in its sender's place. */
static int zsm_group_hello(struct zsm_group *c)
{
	size_t n = (unsigned)c->nranks;
	int32_t *ranks = calloc(n, sizeof(*ranks));
	void **by_rank = calloc(n, sizeof(*by_rank));
	void **mh = calloc(n, sizeof(*mh));
	int32_t me = c->rank;
	int ret;

	if (!ranks || !by_rank || !mh) {
		ret = -ENOMEM;
		goto out;
	}
	/* Accepted comms are still in arrival order: receive into slot i
	 * of arrival i, then sort. */
	ret = zsm_group_alltoall(c, &me, sizeof(me), ranks);
	if (ret)
		goto out;
	for (int i = 0; i < c->nranks; i++) {
		int32_t r;

		if (i == c->rank)
			continue;
		r = ranks[i];
		if (r < 0 || r >= c->nranks || r == c->rank || by_rank[r]) {
			ZSM_WARN("group: connect: rank %d got a hello from "
				 "rank %d, which is not a peer it waits for",
				 c->rank, r);
			ret = -EPROTO;
			goto out;
		}
		/* The scratch registration moves with its comm. */
		by_rank[r] = c->recv[i];
		mh[r] = c->recv_mh[i];
	}
	memcpy(c->recv, by_rank, n * sizeof(*by_rank));
	memcpy(c->recv_mh, mh, n * sizeof(*mh));
out:
	free(ranks);
	free(by_rank);
	free(mh);
	return ret;
}

int zsm_group_link_kind(const struct zsm_group *c, int rank)
{
	return c->kind[rank];
}

/*
 * Each link's transport, settled once it is connected.  Every rank must
 * number the transports alike, since its descriptors travel in that
 * order: the core's handshake transport ("net") is kind 0 everywhere,
 * and another one kind 1.
 */
static int zsm_group_kinds(struct zsm_group *c)
{
	c->tname[0] = "net";
	for (int p = 0; p < c->nranks; p++) {
		const char *t = p == c->rank ? c->tname[0]
					     : zsm_comm_transport(c->send[p]);
		int k = 0;

		while (k < ZSM_GROUP_KINDS && c->tname[k] && t &&
		       strcmp(c->tname[k], t))
			k++;
		if (!t || k == ZSM_GROUP_KINDS) {
			ZSM_WARN("group: connect: the link to rank %d %s", p,
				 t ? "uses a third transport" : "is not connected");
			return -EPROTO;
		}
		c->tname[k] = t;
		c->kind[p] = (uint8_t)k;
	}
	return 0;
}

/* Links that are not the handshake transport's, for the log. */
static int zsm_group_other_links(const struct zsm_group *c)
{
	int n = 0;

	for (int p = 0; p < c->nranks; p++)
		n += p != c->rank && c->kind[p] != 0;
	return n;
}

int zsm_group_connect(void *ctx, void **handles, int nranks, int rank,
		    void *listen, void **coll)
{
	struct zsm_group_listener *l;
	struct zsm_group *c;
	uint64_t deadline = zsm_group_deadline_ns();
	int ret;

	/* NCCL passes its net plugin's context here, which need not be
	 * ours: it is not used. */
	(void)ctx;
	if (!coll || !handles || nranks < 1 || rank < 0 || rank >= nranks)
		return zsm_group_bad_arg("connect", "NULL handles or collComm, "
						  "or a rank outside [0, nranks)");
	*coll = NULL;
	ret = zsm_group_lookup("connect", listen, ZSM_H_RMA_LISTEN, (void **)&l);
	if (ret)
		return ret;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->nranks = nranks;
	c->rank = rank;
	c->dev = l->dev;
	c->send = calloc((size_t)nranks, sizeof(*c->send));
	c->recv = calloc((size_t)nranks, sizeof(*c->recv));
	c->send_mh = calloc((size_t)nranks, sizeof(*c->send_mh));
	c->recv_mh = calloc((size_t)nranks, sizeof(*c->recv_mh));
	c->kind = calloc((size_t)nranks, sizeof(*c->kind));
	ret = c->send && c->recv && c->send_mh && c->recv_mh && c->kind
		      ? 0
		      : -ENOMEM;
	if (!ret)
		ret = zsm_group_join(c, l, handles, deadline);
	if (!ret) {
		/* Arrival order i < rank sits at i, the rest one up: the
		 * hello's slots skip our own. */
		for (int i = nranks - 1; i > rank; i--)
			c->recv[i] = c->recv[i - 1];
		c->recv[rank] = NULL;
		ret = zsm_group_scratch(c);
	}
	if (!ret)
		ret = zsm_group_hello(c);
	if (!ret)
		ret = zsm_group_kinds(c);
	if (!ret)
		ret = zsm_group_xchg_init(c, c->scratch + zsm_group_hello_bytes(c));
	if (!ret && zsm_handle_open(ZSM_H_RMA_COLL, c, &c->handle))
		ret = -ENOMEM;
	if (ret) {
		zsm_group_coll_free(c);
		return ret;
	}
	ZSM_INFO("group: rank %d of %d joined every peer both ways (%d by %s)",
		 rank, nranks, zsm_group_other_links(c),
		 c->tname[1] ? c->tname[1] : "another transport");
	*coll = (void *)(uintptr_t)c->handle;
	return 0;
}

int zsm_group_close(void *coll)
{
	struct zsm_group *c;
	int ret = zsm_group_release("closeColl", coll, ZSM_H_RMA_COLL,
				  (void **)&c);

	if (ret)
		return ret;
	zsm_group_coll_free(c);
	return 0;
}

int zsm_group_link(void *coll, int rank, void **send_comm)
{
	struct zsm_group *c;
	int ret = zsm_group_lookup("coll_link", coll, ZSM_H_RMA_COLL,
				 (void **)&c);

	if (!ret && (rank < 0 || rank >= c->nranks || rank == c->rank)) {
		ZSM_WARN("group: coll_link: rank %d of %d (this is rank %d)",
			 rank, c->nranks, c->rank);
		ret = -EINVAL;
	}
	if (!ret)
		*send_comm = c->send[rank];
	return ret;
}

int zsm_group_failed(void *coll, int *failed)
{
	struct zsm_group *c;
	int ret = zsm_group_lookup("failed", coll, ZSM_H_RMA_COLL,
				   (void **)&c);

	*failed = 0;
	if (ret)
		return ret;
	*failed = c->failed;
	for (int p = 0; p < c->nranks && !*failed; p++)
		if (p != c->rank)
			*failed = zsm_comm_failed(c->send[p]) ||
				  zsm_comm_failed(c->recv[p]);
	return 0;
}
