/* SPDX-License-Identifier: MIT */
/*
 * Owns the one-sided entry points, put (with or without a signal) and
 * get: the peer's window and offset are checked against the window's
 * description before a request is queued.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "common/handle.h"
#include "common/log.h"
#include "core/comm.h"
#include "entry/entry.h"
#include "entry/entry_int.h"
#include "entry/lifetime.h"
#include "proxy/proxy.h"

int zsm_entry_win_check(const char *call, const char *what,
			const struct zsm_rma_window *w, uint64_t off,
			uint64_t len)
{
	if (!w)
		return zsm_entry_null(call, what);
	if (!w->id || off > w->size || len > w->size - off) {
		ZSM_WARN("%s: %llu bytes at %llu of the peer's %s window of "
			 "%llu bytes%s",
			 call, (unsigned long long)len, (unsigned long long)off,
			 what, (unsigned long long)w->size,
			 w->id ? "" : " (not a window: id 0)");
		return -EINVAL;
	}
	return 0;
}

/* What a put or get of size bytes at buf, to or from the peer's window
 * win at off, needs of c: 0, or an error said once here. */
static int zsm_entry_rma_check(const char *call, int type, struct zsm_comm *c,
			       const void *buf, size_t size,
			       const struct zsm_rma_window *win, uint64_t off,
			       const struct zsm_req_rma *sig)
{
	int ret = 0;

	if (size > ZSM_MAX_P2P_BYTES || (size && !buf)) {
		ZSM_WARN("%s of %zu bytes at %p: %s", call, size, buf,
			 size > ZSM_MAX_P2P_BYTES ? "above maxP2pBytes"
						  : "NULL buffer");
		return -EINVAL;
	}
	if (size || type == ZSM_REQ_GET)
		ret = zsm_entry_win_check(call, "target", win, off, size);
	if (!ret && !c->ops->reg_window) {
		ZSM_WARN("%s: the comm moves its data by %s, which has no "
			 "one-sided operations yet",
			 call, c->ops->name);
		ret = -EOPNOTSUPP;
	}
	/* A get asks the owner to make its bytes ready, a message of the
	 * same kind as a signal. */
	if (!ret && (sig->sig_id || (type == ZSM_REQ_GET && size)))
		ret = c->ops->can_signal ? c->ops->can_signal(c) : -EOPNOTSUPP;
	if (!ret)
		ret = zsm_entry_life_enter(call);
	return ret ? ret : zsm_comm_error(c);
}

/* req as a put or get of size bytes at buf (registration mr, held) and
 * the window side win at off. */
static void zsm_entry_rma_fill(struct zsm_req *req, int type, void *buf,
			       size_t size, struct zsm_mr *mr,
			       const struct zsm_rma_window *win, uint64_t off,
			       const struct zsm_req_rma *sig)
{
	req->type = (uint8_t)type;
	req->n = 1;
	req->remaining = 1;
	zsm_entry_req_buf(req, 0, buf, size, 0, mr);
	req->rma = *sig;
	if (size) {
		req->rma.addr = win->addr + off;
		req->rma.key = win->key;
		req->rma.dst_id = win->id;
		req->rma.dst_flags = win->flags;
	}
}

/* The signal part of a put: 0, or -EINVAL said. */
static int zsm_entry_sig_of(const struct zsm_rma_window *sig, uint64_t sig_off,
			    uint64_t sig_add, size_t size,
			    struct zsm_req_rma *s)
{
	*s = (struct zsm_req_rma){0};
	if (!sig) {
		if (size)
			return 0;
		ZSM_WARN("iput of 0 bytes without a signal: nothing to do");
		return -EINVAL;
	}
	/* A signal word is 64 bits, aligned in its window. */
	if (sig_off % 8) {
		ZSM_WARN("iput: signal offset %llu is not 8-byte aligned",
			 (unsigned long long)sig_off);
		return -EINVAL;
	}
	if (zsm_entry_win_check("iput", "signal", sig, sig_off, 8))
		return -EINVAL;
	s->sig_id = sig->id;
	s->sig_off = sig_off;
	s->sig_add = sig_add;
	s->sig_addr = sig->addr + sig_off;
	s->sig_key = sig->key;
	s->sig_flags = sig->flags;
	return 0;
}

int zsm_entry_put(struct zsm_comm *c, void *src, size_t size,
		  struct zsm_mr *mr, const struct zsm_rma_window *dst,
		  uint64_t dst_off, const struct zsm_rma_window *sig,
		  uint64_t sig_off, uint64_t sig_add, struct zsm_req **out)
{
	struct zsm_req_rma s;
	struct zsm_req *req;
	int ret = zsm_entry_sig_of(sig, sig_off, sig_add, size, &s);

	*out = NULL;
	if (!ret)
		ret = zsm_entry_rma_check("iput", ZSM_REQ_PUT, c, src, size,
					  dst, dst_off, &s);
	if (ret)
		return ret;
	if (size && mr)
		zsm_mr_hold(mr);
	req = zsm_entry_req_get(c, size ? mr : NULL);
	if (!req)
		return 0; /* none free: the caller asks again */
	zsm_entry_rma_fill(req, ZSM_REQ_PUT, src, size, size ? mr : NULL, dst,
			   dst_off, &s);
	/* Posted now where the engine is free: the issuer's next look may
	 * be long in coming (it waits on a signal word), and the hand-off
	 * to our thread is most of a small put's time. */
	if (zsm_proxy_submit_drive(&req->desc)) {
		zsm_req_free(req);
		return 0; /* the queue is full: the caller asks again */
	}
	*out = req;
	return 0;
}

/* iget's request on c (a held mr, given up on failure). */
static int zsm_entry_get(struct zsm_comm *c, void *dst, size_t size,
			 struct zsm_mr *mr, const struct zsm_rma_window *src,
			 uint64_t src_off, struct zsm_req **out)
{
	const struct zsm_req_rma none = {0};
	struct zsm_req *req;
	int ret = zsm_entry_rma_check("iget", ZSM_REQ_GET, c, dst, size, src,
				      src_off, &none);

	*out = NULL;
	if (ret) {
		if (mr)
			zsm_mr_put(mr);
		return ret;
	}
	req = zsm_entry_req_get(c, mr);
	if (!req)
		return 0;
	zsm_entry_rma_fill(req, ZSM_REQ_GET, dst, size, mr, src, src_off,
			   &none);
	if (zsm_proxy_submit_drive(&req->desc)) {
		zsm_req_free(req);
		return 0;
	}
	*out = req;
	return 0;
}

/* The comm behind send_comm and the registration behind mh for size
 * bytes at buf (held; NULL where the comm needs none). */
static int zsm_entry_rma_args(const char *call, void *send_comm, void *buf,
			      size_t size, void *mh, void **request,
			      struct zsm_comm **c, struct zsm_mr **mr)
{
	int ret;

	*mr = NULL;
	if (!request)
		return zsm_entry_null(call, "request");
	*request = NULL;
	ret = zsm_entry_life_enter(call);
	if (!ret)
		ret = zsm_entry_lookup(call, send_comm, ZSM_H_SEND,
				       (void **)c);
	if (!ret && size && buf && size <= ZSM_MAX_P2P_BYTES)
		ret = zsm_entry_mr_take(call, *c, mh, buf, size, mr);
	return ret;
}

int zsm_iput(void *send_comm, void *src, size_t size, void *mh,
	     const struct zsm_rma_window *dst, uint64_t dst_off,
	     const struct zsm_rma_window *sig, uint64_t sig_off,
	     uint64_t sig_add, void **request)
{
	struct zsm_comm *c;
	struct zsm_mr *mr;
	struct zsm_req *req = NULL;
	int ret = zsm_entry_rma_args("iput", send_comm, src, size, mh,
				     request, &c, &mr);

	if (!ret)
		ret = zsm_entry_put(c, src, size, mr, dst, dst_off, sig,
				    sig_off, sig_add, &req);
	/* The request holds its own. */
	if (mr)
		zsm_mr_put(mr);
	if (req)
		*request = zsm_entry_handle_out(
			zsm_handle_arm(req->handle_index));
	return ret;
}

int zsm_iget(void *send_comm, void *dst, size_t size, void *mh,
	     const struct zsm_rma_window *src, uint64_t src_off,
	     void **request)
{
	struct zsm_comm *c;
	struct zsm_mr *mr;
	struct zsm_req *req = NULL;
	int ret = zsm_entry_rma_args("iget", send_comm, dst, size, mh,
				     request, &c, &mr);

	/* mr passes to zsm_entry_get, which gives it up on failure. */
	if (!ret)
		ret = zsm_entry_get(c, dst, size, mr, src, src_off, &req);
	if (req)
		*request = zsm_entry_handle_out(
			zsm_handle_arm(req->handle_index));
	return ret;
}

int zsm_entry_comm_of(void *send_comm, struct zsm_comm **out)
{
	return zsm_entry_lookup("put", send_comm, ZSM_H_SEND, (void **)out);
}

int zsm_entry_mr_of(void *mh, struct zsm_mr **out)
{
	*out = NULL;
	return mh ? zsm_entry_lookup("put", mh, ZSM_H_MR, (void **)out) : 0;
}
