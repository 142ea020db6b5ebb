/* SPDX-License-Identifier: MIT */
/*
 * Owns the entry points of two-sided transfers and of requests: isend,
 * irecv, iflush, test and a progress pass.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "common/handle.h"
#include "common/log.h"
#include "core/comm.h"
#include "entry/entry.h"
#include "entry/entry_int.h"
#include "entry/lifetime.h"
#include "proxy/proxy.h"

static int zsm_entry_tag_check(const char *call, int tag)
{
	if (tag < 0 || (unsigned)tag > ZSM_TAG_MAX) {
		ZSM_WARN("%s: tag %d outside [0, %u]", call, tag, ZSM_TAG_MAX);
		return -EINVAL;
	}
	return 0;
}

struct zsm_req *zsm_entry_req_get(struct zsm_comm *c,
				  struct zsm_mr *mr)
{
	struct zsm_req *req = zsm_req_alloc(c);

	if (!req && mr)
		zsm_mr_put(mr);
	return req;
}

void zsm_entry_req_buf(struct zsm_req *req, int i, void *data,
		       size_t len, int tag, struct zsm_mr *mh)
{
	req->data[i] = data;
	req->len[i] = len;
	req->tag[i] = tag;
	req->mh[i] = mh;
}

void zsm_entry_submit(struct zsm_req *req, int wait, void **request)
{
	if (wait) {
		zsm_proxy_submit_wait(&req->desc);
	} else if (zsm_proxy_submit(&req->desc)) {
		zsm_req_free(req);
		return;
	}
	*request = zsm_entry_handle_out(zsm_handle_arm(req->handle_index));
}

int zsm_isend(void *send_comm, void *data, size_t size, int tag, void *mh,
	      void **request)
{
	struct zsm_comm *c;
	struct zsm_req *req;
	struct zsm_mr *mr;
	int ret;

	if (!request)
		return zsm_entry_null("isend", "request");
	*request = NULL;
	ret = zsm_entry_life_enter("isend");
	if (!ret)
		ret = zsm_entry_lookup("isend", send_comm, ZSM_H_SEND,
				       (void **)&c);
	if (ret)
		return ret;
	if (size > ZSM_MAX_P2P_BYTES || (size && !data)) {
		ZSM_WARN("isend of %zu bytes at %p: %s", size, data,
			 size > ZSM_MAX_P2P_BYTES ? "above maxP2pBytes"
						  : "NULL buffer");
		return -EINVAL;
	}
	ret = zsm_entry_tag_check("isend", tag);
	if (!ret)
		ret = zsm_comm_error(c);
	if (ret)
		return ret;
	ret = zsm_entry_mr_take("isend", c, mh, data, size, &mr);
	if (ret)
		return ret;
	req = zsm_entry_req_get(c, mr);
	if (!req)
		return 0; /* NCCL retries a NULL request */
	req->type = ZSM_REQ_SEND;
	req->n = 1;
	req->remaining = 1;
	zsm_entry_req_buf(req, 0, data, size, tag, mr);
	zsm_entry_submit(req, 0, request);
	return 0;
}

int zsm_irecv(void *recv_comm, int n, void **data, const size_t *sizes,
	      const int *tags, void **mhs, void **request)
{
	struct zsm_mr *mr[ZSM_MAX_RECVS] = {0};
	struct zsm_comm *c;
	struct zsm_req *req;
	int ret, i;

	if (!request)
		return zsm_entry_null("irecv", "request");
	*request = NULL;
	ret = zsm_entry_life_enter("irecv");
	if (!ret)
		ret = zsm_entry_lookup("irecv", recv_comm, ZSM_H_RECV,
				       (void **)&c);
	if (ret)
		return ret;
	if (n < 1 || n > ZSM_MAX_RECVS || !data || !sizes || !tags) {
		ZSM_WARN("irecv of %d buffers (maxRecvs %d)%s", n,
			 ZSM_MAX_RECVS,
			 data && sizes && tags ? "" : ", NULL arrays");
		return -EINVAL;
	}
	for (i = 0; i < n && !ret; i++) {
		ret = zsm_entry_tag_check("irecv", tags[i]);
		if (!ret && sizes[i] && !data[i])
			ret = zsm_entry_null("irecv", "a buffer");
		if (!ret && sizes[i] > ZSM_MAX_P2P_BYTES) {
			ZSM_WARN("irecv of %zu bytes: above maxP2pBytes",
				 sizes[i]);
			ret = -EINVAL;
		}
	}
	if (!ret)
		ret = zsm_comm_error(c);
	for (i = 0; i < n && !ret; i++)
		ret = zsm_entry_mr_take("irecv", c, mhs ? mhs[i] : NULL,
					data[i], sizes[i], &mr[i]);
	req = ret ? NULL : zsm_req_alloc(c);
	if (!req) {
		for (i = 0; i < n; i++)
			if (mr[i])
				zsm_mr_put(mr[i]);
		return ret; /* 0: NCCL retries a NULL request */
	}
	req->type = ZSM_REQ_RECV;
	req->n = (uint8_t)n;
	req->remaining = (uint8_t)n;
	for (i = 0; i < n; i++) {
		zsm_entry_req_buf(req, i, data[i], sizes[i], tags[i], mr[i]);
		req->sizes[i] = 0;
	}
	zsm_entry_submit(req, 0, request);
	return 0;
}

int zsm_iflush(void *recv_comm, int n, void **data, const int *sizes,
	       void **mhs, void **request)
{
	struct zsm_mr *mrs[ZSM_MAX_RECVS] = {0};
	struct zsm_comm *c;
	struct zsm_req *req;
	int flush = 0, ret;

	if (!request)
		return zsm_entry_null("iflush", "request");
	*request = NULL;
	ret = zsm_entry_life_enter("iflush");
	if (!ret)
		ret = zsm_entry_lookup("iflush", recv_comm, ZSM_H_RECV,
				       (void **)&c);
	if (ret)
		return ret;
	if (n < 1 || n > ZSM_MAX_RECVS || !data || !sizes) {
		ZSM_WARN("iflush of %d buffers (maxRecvs %d)%s", n,
			 ZSM_MAX_RECVS, data && sizes ? "" : ", NULL arrays");
		return -EINVAL;
	}
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 0) {
			ZSM_WARN("iflush: buffer %d of %d bytes", i, sizes[i]);
			return -EINVAL;
		}
	}
	/* Whether the transport may read anything back at all, before any
	 * handle is looked at or a request taken. */
	ret = c->ops->flush(c, n, data, sizes, mrs, NULL, &flush);
	if (ret || !flush)
		return ret;
	/* It reads back at most one buffer, the last that got bytes: only
	 * that one's handle must be good. */
	for (int i = n - 1; i >= 0; i--) {
		if (sizes[i] == 0)
			continue;
		if (mhs && mhs[i]) {
			ret = zsm_entry_lookup("iflush", mhs[i], ZSM_H_MR,
					       (void **)&mrs[i]);
			if (!ret)
				ret = zsm_entry_mr_covers("iflush", mrs[i],
							  data[i],
							  (size_t)sizes[i]);
			if (ret)
				return ret;
		}
		break;
	}
	ret = zsm_comm_error(c);
	if (ret)
		return ret;
	req = zsm_req_alloc(c);
	if (!req) {
		/* A NULL request would say "flushed": fail instead. */
		ZSM_WARN("iflush: no request left on this comm (%d in use)",
			 ZSM_MAX_REQUESTS);
		return -ENOMEM;
	}
	ret = c->ops->flush(c, n, data, sizes, mrs, req, &flush);
	if (ret || !flush) {
		zsm_req_free(req);
		return ret;
	}
	zsm_entry_submit(req, 1, request);
	return 0;
}

int zsm_progress(void)
{
	int ret = zsm_entry_life_enter("progress");

	if (!ret)
		zsm_proxy_drive();
	return ret;
}

/* test() of req, found: done or not, its sizes and result. */
static int zsm_entry_req_end(struct zsm_req *req, int *done, int *sizes)
{
	/* acquire: pairs with the release that publishes the result. */
	int state = atomic_load_explicit(&req->state, memory_order_acquire);

	if (state == ZSM_REQ_PENDING) {
		/* A pass for a one-sided request whatever the caller polled
		 * before: NCCL's RMA proxy goes round its puts and peers, which
		 * the waiter rule (ZSM_PROXY_ASSIST=auto on many CPUs) would
		 * leave to our thread's next look. */
		if (req->type == ZSM_REQ_PUT || req->type == ZSM_REQ_GET)
			zsm_proxy_drive();
		else
			zsm_proxy_assist(req);
		/* acquire: as above; the pass may have completed it. */
		state = atomic_load_explicit(&req->state,
					     memory_order_acquire);
		if (state == ZSM_REQ_PENDING)
			return 0;
	}
	*done = 1;
	if (sizes) {
		if (req->type == ZSM_REQ_RECV)
			memcpy(sizes, req->sizes, sizeof(int) * req->n);
		else
			sizes[0] = req->sizes[0];
	}
	/* A comm's failure was said where it was found, once for all its
	 * requests; a request's own (a message larger than its receive) is
	 * said here. */
	if (state < 0 && state != -ECANCELED &&
	    state != zsm_comm_error(req->comm))
		ZSM_WARN("%s: %s failed: %s", req->comm->ops->name,
			 zsm_req_what(req),
			 state == -EMSGSIZE
				 ? "the message is larger than the posted "
				   "receive buffer"
				 : strerror(-state));
	zsm_req_free(req);
	return state < 0 ? state : 0;
}

int zsm_test(void *request, int *done, int *sizes)
{
	struct zsm_req *req;
	int ret;

	if (!done)
		return zsm_entry_null("test", "done");
	*done = 0;
	ret = zsm_entry_life_enter("test");
	if (!ret)
		ret = zsm_entry_lookup("test", request, ZSM_H_REQ,
				       (void **)&req);
	return ret ? ret : zsm_entry_req_end(req, done, sizes);
}

int zsm_entry_req_test(struct zsm_req *req, int *done)
{
	*done = 0;
	return zsm_entry_req_end(req, done, NULL);
}
