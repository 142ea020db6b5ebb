/* SPDX-License-Identifier: MIT */
/*
 * Owns the API's data calls: put with signal, signal, wait, and the
 * AllGather and AlltoAll schedules built on them.  A collective is, to
 * each peer, a Ready signal (our receive buffer may be written) and a
 * put of our block that waits for the peer's Ready and carries a Complete
 * signal; the stream then waits for its puts and every peer's Complete.
 * Our own block never takes a same-GPU device-to-device copy (on many
 * drivers it runs on SMs): it goes down to pinned host memory and up.
 */
#include <errno.h>
#include <string.h>

#include "api/api_int.h"
#include "common/cuda.h"
#include "common/log.h"
#include "group/group.h"

/* The window holding [p, p + len) and p's offset in it, or a WARN. */
static int zsm_api_locate(struct zsm_api_comm *c, const char *call,
			  const char *what, const void *p, size_t len,
			  struct zsm_api_win **w, uint64_t *off)
{
	*w = zsm_api_win_find(c, p, len);
	if (!*w) {
		ZSM_WARN("api: %s: %s [%p, +%zu) is not inside a window of "
			 "this communicator (zsm_comm_window_register)",
			 call, what, p, len);
		return -EINVAL;
	}
	*off = (uint64_t)((const char *)p - (*w)->base);
	return 0;
}

/* Whether [off, off + len) lies in peer's copy of w. */
static int zsm_api_fits(const char *call, struct zsm_api_win *w, int peer,
			uint64_t off, size_t len)
{
	uint64_t size = 0;
	int ret = zsm_group_sym_size(w->sym, peer, &size);

	if (!ret && (off > size || len > size - off)) {
		ZSM_WARN("api: %s: %zu bytes at offset %llu of rank %d's "
			 "window, which has %llu",
			 call, len, (unsigned long long)off, peer,
			 (unsigned long long)size);
		ret = -EINVAL;
	}
	return ret;
}

int zsm_api_put_signal(struct zsm_api_comm *c, const void *src, size_t size,
		       int peer, struct zsm_api_win *dst, size_t dst_off,
		       int ctx, zsm_cu_stream stream)
{
	struct zsm_api_batch b;
	struct zsm_api_win *sw = NULL;
	struct zsm_api_op *op;
	unsigned int slot = (unsigned int)peer;
	uint64_t soff = 0, seq;
	int ret = zsm_api_batch_new(c, &b);

	if (!ret && size)
		ret = zsm_api_locate(c, "put_signal", "localbuff", src, size,
				     &sw, &soff);
	if (!ret && size)
		ret = zsm_api_fits("put_signal", dst, peer, dst_off, size);
	if (!ret)
		ret = zsm_api_batch_put(
			&b, &(struct zsm_api_op){
				    .peer = peer,
				    .src = sw,
				    .src_off = soff,
				    .size = size,
				    .dst = size ? dst : NULL,
				    .dst_off = dst_off,
				    .sig_row = (unsigned int)ctx,
			    });
	if (ret || c->gpu) {
		if (!ret)
			return zsm_api_batch_finish(&b, stream, NULL, NULL, NULL);
		zsm_api_batch_drop(&b);
		return ret;
	}
	/* Host-memory mode: issued from here, the shortest way to the
	 * provider (docs/design.md, "The API's path"); the agent, run by
	 * this thread, sees it issued and waits for it.  Nothing of this
	 * slot is queued: every earlier call ended with its operations. */
	op = b.head;
	/* Kept here: the operation goes back to the pool once done. */
	seq = op->seq = ++c->seq[slot];
	ret = zsm_api_door_ring(c->ops, NULL, 1, &slot, &seq);
	zsm_api_agent_hold(c, op, 1);
	if (!ret)
		ret = zsm_api_op_issue(c, op);
	if (ret)
		zsm_api_comm_fail(c, ret, "a put was refused");
	return ret ? zsm_api_comm_error(c)
		   : zsm_api_agent_run(c, 1, &slot, &seq);
}

int zsm_api_signal(struct zsm_api_comm *c, int peer, int ctx,
		   zsm_cu_stream stream)
{
	return zsm_api_put_signal(c, NULL, 0, peer, NULL, 0, ctx, stream);
}

int zsm_api_wait_signal(struct zsm_api_comm *c, int n,
			const struct zsm_api_wait_desc *w,
			zsm_cu_stream stream)
{
	struct zsm_api_batch b;
	int ret = zsm_api_batch_new(c, &b);

	for (int i = 0; !ret && i < n; i++) {
		const char *d = w->base + (size_t)i * w->stride;
		int peer, ctx, count;
		unsigned int slot;

		memcpy(&peer, d + w->peer_at, sizeof(peer));
		memcpy(&ctx, d + w->ctx_at, sizeof(ctx));
		memcpy(&count, d + w->count_at, sizeof(count));
		slot = (unsigned int)ctx * (unsigned int)c->nranks +
		       (unsigned int)peer;

		c->expect[slot] += (uint64_t)count;
		ret = zsm_api_batch_wait(&b, peer, (unsigned int)ctx,
					 c->expect[slot]);
	}
	if (ret) {
		zsm_api_batch_drop(&b);
		return ret;
	}
	return zsm_api_batch_finish(&b, stream, NULL, NULL, NULL);
}

/* A copy within this process that never runs on SMs: one copy-engine
 * copy, or two through pinned host memory when both ends are the same
 * GPU's memory.  Host-memory mode: memcpy. */
struct zsm_api_copy {
	struct zsm_api_comm *c;
	void *dst;
	const void *src;
	size_t bytes;
};

static int zsm_api_copy_run(void *arg, zsm_cu_stream stream)
{
	struct zsm_api_copy *k = arg;
	const struct zsm_cuda_drv *d;
	zsm_cu_result res;
	char why[256] = "";
	int dd = -1, ds = -1, ret;

	if (!k->bytes || k->dst == k->src)
		return 0;
	if (!k->c->gpu) {
		memcpy(k->dst, k->src, k->bytes);
		return 0;
	}
	d = zsm_cuda_table();
	if (zsm_cuda_ptr_is_device(k->dst))
		zsm_cuda_ptr_device(k->dst, &dd);
	if (zsm_cuda_ptr_is_device(k->src))
		zsm_cuda_ptr_device(k->src, &ds);
	if (dd >= 0 && dd == ds) {
		zsm_cu_deviceptr stage =
			(zsm_cu_deviceptr)(uintptr_t)k->c->staging.buf;

		res = d->memcpy_async(stage,
				      (zsm_cu_deviceptr)(uintptr_t)k->src,
				      k->bytes, stream);
		if (res == ZSM_CU_SUCCESS)
			res = d->memcpy_async(
				(zsm_cu_deviceptr)(uintptr_t)k->dst, stage,
				k->bytes, stream);
	} else {
		res = d->memcpy_async((zsm_cu_deviceptr)(uintptr_t)k->dst,
				      (zsm_cu_deviceptr)(uintptr_t)k->src,
				      k->bytes, stream);
	}
	if (res == ZSM_CU_SUCCESS)
		return 0;
	ret = zsm_cuda_drv_fail(d, res, why, sizeof(why),
				"cuMemcpyAsync of %zu bytes", k->bytes);
	ZSM_WARN("api: %s", why);
	return ret;
}

/* The pinned staging buffer for own blocks, at least bytes (GPU mode). */
static int zsm_api_stage_ensure(struct zsm_api_comm *c, size_t bytes)
{
	void *p;
	int ret;

	if (!c->gpu || c->staging.size >= bytes)
		return 0;
	/* The stream may still copy through the old one. */
	ret = zsm_api_comm_quiesce(c);
	if (!ret)
		ret = zsm_api_host_alloc(c, bytes, &p);
	if (ret)
		return ret;
	zsm_api_host_free(c, c->staging.buf);
	c->staging.buf = p;
	c->staging.size = bytes;
	return 0;
}

/*
 * The registered bounce window of in-place AlltoAll, at least bytes.
 * Collective: every rank's in-place AlltoAll of the same size grows it at
 * the same call.
 */
static int zsm_api_bounce_ensure(struct zsm_api_comm *c, size_t bytes)
{
	struct zsm_api_win *w;
	void *p;
	int ret;

	if (c->staging.bounce && c->staging.bounce->size >= bytes)
		return 0;
	ret = zsm_api_comm_quiesce(c);
	if (!ret && c->staging.bounce) {
		ret = zsm_api_win_deregister(c, c->staging.bounce);
		zsm_api_host_free(c, c->staging.bounce_buf);
		c->staging.bounce_buf = NULL;
	}
	if (!ret)
		ret = zsm_api_host_alloc(c, bytes, &p);
	if (ret)
		return ret;
	ret = zsm_api_win_register(c, p, bytes, &w);
	if (ret) {
		zsm_api_host_free(c, p);
		return ret;
	}
	c->staging.bounce = w;
	c->staging.bounce_buf = p;
	return 0;
}

/* One collective call: its buffers as windows and offsets, and the
 * Ready word that says it to peers. */
struct zsm_api_call {
	int kind, in_place;
	const char *name;
	const void *send;
	void *recv;
	size_t bytes, total;
	struct zsm_api_win *rw, *sw;
	uint64_t roff, soff, k, word;
};

/* The windows of x's buffers, and room in every peer's
 * recvbuff.  Count 0 looks at no buffer. */
static int zsm_api_coll_locate(struct zsm_api_comm *c,
			       struct zsm_api_call *x)
{
	int ret;

	if (!x->bytes)
		return 0;
	ret = zsm_api_locate(c, x->name, "recvbuff", x->recv, x->total,
			     &x->rw, &x->roff);
	if (!ret && !x->in_place)
		ret = zsm_api_locate(c, x->name, "sendbuff", x->send,
				     x->kind == ZSM_API_ALLGATHER ? x->bytes
								  : x->total,
				     &x->sw, &x->soff);
	for (int p = 0; !ret && p < c->nranks; p++)
		if (p != c->rank)
			ret = zsm_api_fits(x->name, x->rw, p, x->roff,
					   x->total);
	return ret;
}

/* Our block for peer p, in pieces (one signal-only put for count 0);
 * only the last piece signals Complete, which (a strong signal) covers
 * the earlier ones, and each waits for p's Ready of this call. */
static int zsm_api_coll_block(struct zsm_api_comm *c,
			      struct zsm_api_batch *b,
			      const struct zsm_api_call *x, int p)
{
	struct zsm_api_win *src = x->sw ? x->sw : x->rw;
	uint64_t off = x->sw ? x->soff : x->roff;
	size_t at = 0;
	int ret = 0;

	if (x->kind == ZSM_API_ALLGATHER)
		off += x->sw ? 0 : (uint64_t)c->rank * x->bytes;
	else if (x->in_place)
		src = c->staging.bounce, off = (uint64_t)p * x->bytes;
	else
		off += (uint64_t)p * x->bytes;
	do {
		size_t len = x->bytes - at < ZSM_API_PIECE ? x->bytes - at
							   : ZSM_API_PIECE;

		ret = zsm_api_batch_put(
			b, &(struct zsm_api_op){
				   .peer = p,
				   .src = len ? src : NULL,
				   .src_off = off + at,
				   .size = len,
				   .dst = len ? x->rw : NULL,
				   .dst_off = x->roff +
					      (uint64_t)c->rank * x->bytes + at,
				   .sig_row = at + len == x->bytes
						      ? ZSM_API_ROW_DONE
						      : ZSM_API_ROW_NONE,
				   .pre_row = ZSM_API_ROW_READY(x->k),
				   .pre_val = x->word,
				   .coll = x->k,
			   });
		at += len;
	} while (!ret && at < x->bytes);
	if (!ret)
		ret = zsm_api_batch_wait(b, p, ZSM_API_ROW_DONE, x->k);
	return ret;
}

/*
 * Call x's operations.  Every Ready first, so that no peer
 * waits behind our data; each adds to our parity word at the peer the
 * difference from what our last Ready of that parity left there (which
 * the unused slot of our own rank in expect keeps).
 */
static int zsm_api_coll_queue(struct zsm_api_comm *c,
			      struct zsm_api_batch *b,
			      const struct zsm_api_call *x)
{
	unsigned int row = ZSM_API_ROW_READY(x->k);
	uint64_t *left = &c->expect[row * (unsigned int)c->nranks +
				    (unsigned int)c->rank];
	int ret = 0;

	for (int i = 1; !ret && i < c->nranks; i++)
		ret = zsm_api_batch_put(
			b, &(struct zsm_api_op){
				   .peer = (c->rank + i) % c->nranks,
				   .sig_row = row,
				   .sig_add = x->word - *left,
				   .coll = x->k,
			   });
	for (int i = 1; !ret && i < c->nranks; i++)
		ret = zsm_api_coll_block(c, b, x, (c->rank + i) % c->nranks);
	if (!ret)
		*left = x->word;
	return ret;
}

static int zsm_api_coll(struct zsm_api_comm *c, int kind, const char *call,
			const void *send, void *recv, size_t bytes,
			zsm_cu_stream stream)
{
	size_t n = (size_t)c->nranks;
	struct zsm_api_call x = {.kind = kind,
				 .name = call,
				 .send = send,
				 .recv = recv,
				 .bytes = bytes,
				 .total = n * bytes};
	struct zsm_api_copy own = {c, NULL, NULL, bytes}, stage;
	struct zsm_api_batch b;
	int ret, a2a_in_place;

	if (bytes > ZSM_API_COLL_BYTES_MAX || x.total / n != bytes) {
		ZSM_WARN("api: %s: %zu bytes per rank: more than %llu, or "
			 "%zu ranks' worth overflows",
			 call, bytes, ZSM_API_COLL_BYTES_MAX, n);
		return -EINVAL;
	}
	/* Count 0 looks at no buffer (recv may be NULL). */
	x.in_place = bytes && (kind == ZSM_API_ALLGATHER
				       ? send == (const char *)recv +
							 (size_t)c->rank * bytes
				       : send == recv);
	a2a_in_place = bytes && x.in_place && kind == ZSM_API_ALLTOALL &&
		       n > 1;
	ret = zsm_api_stage_ensure(c, x.in_place ? 0 : bytes);
	if (!ret && a2a_in_place)
		ret = zsm_api_bounce_ensure(c, x.total);
	if (!ret)
		ret = zsm_api_batch_new(c, &b);
	if (ret)
		return ret;
	ret = zsm_api_coll_locate(c, &x);
	if (!ret) {
		x.k = ++c->colls;
		x.word = zsm_api_ready_word(x.k, kind, bytes);
		ret = zsm_api_coll_queue(c, &b, &x);
		if (ret)
			c->colls--;
	}
	if (ret) {
		zsm_api_batch_drop(&b);
		return ret;
	}
	if (!x.in_place && bytes) {
		own.dst = (char *)recv + (size_t)c->rank * bytes;
		own.src = kind == ZSM_API_ALLGATHER
				  ? send
				  : (const char *)send + (size_t)c->rank * bytes;
	}
	/* In-place AlltoAll: our blocks go to the bounce window before our
	 * Ready lets peers overwrite them. */
	stage = (struct zsm_api_copy){c, c->staging.bounce_buf, recv, x.total};
	return zsm_api_batch_finish(
		&b, stream, a2a_in_place ? zsm_api_copy_run : NULL,
		x.in_place ? NULL : zsm_api_copy_run,
		/* before and between take different copies */
		x.in_place ? (void *)&stage : (void *)&own);
}

int zsm_api_all_gather(struct zsm_api_comm *c, const void *send, void *recv,
		       size_t bytes, zsm_cu_stream stream)
{
	return zsm_api_coll(c, ZSM_API_ALLGATHER, "all_gather", send, recv,
			    bytes, stream);
}

int zsm_api_all_to_all(struct zsm_api_comm *c, const void *send, void *recv,
		       size_t bytes, zsm_cu_stream stream)
{
	return zsm_api_coll(c, ZSM_API_ALLTOALL, "all_to_all", send, recv,
			    bytes, stream);
}
