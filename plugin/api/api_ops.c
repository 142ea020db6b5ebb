/* SPDX-License-Identifier: MIT */
/*
 * Owns batches: the operations of one call, numbered on their door slots,
 * handed to the agent, and rung on the stream in one go (api_int.h says
 * how the doors work).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "common/cuda.h"
#include "common/log.h"

struct zsm_api_batch {
	struct zsm_api_comm *c;
	struct zsm_api_op *head, *tail; /* the puts, in order */
	unsigned int nput;
	struct zsm_api_op *wait; /* NULL: nothing to wait for */
	unsigned int wmax;
};

int zsm_api_batch_new(struct zsm_api_comm *c, struct zsm_api_batch **out)
{
	struct zsm_api_batch *b = calloc(1, sizeof(*b));
	int ret;

	*out = NULL;
	if (!b)
		return -ENOMEM;
	pthread_mutex_lock(&c->lock);
	ret = zsm_api_comm_error(c);
	if (ret) {
		pthread_mutex_unlock(&c->lock);
		free(b);
		return ret;
	}
	b->c = c;
	*out = b;
	return 0;
}

static void zsm_api_batch_free(struct zsm_api_batch *b)
{
	while (b->head) {
		struct zsm_api_op *op = b->head;

		b->head = op->next;
		zsm_api_op_free(op);
	}
	zsm_api_op_free(b->wait);
	free(b);
}

void zsm_api_batch_drop(struct zsm_api_batch *b)
{
	pthread_mutex_unlock(&b->c->lock);
	zsm_api_batch_free(b);
}

int zsm_api_batch_put(struct zsm_api_batch *b, const struct zsm_api_op *put)
{
	struct zsm_api_op *op = calloc(1, sizeof(*op));

	if (!op)
		return -ENOMEM;
	op->slot = (unsigned int)put->peer;
	op->peer = put->peer;
	op->src_sym = put->src_sym;
	op->src_off = put->src_off;
	op->size = put->size;
	op->dst_sym = put->dst_sym;
	op->dst_off = put->dst_off;
	op->sig_row = put->sig_row;
	op->sig_add = put->sig_add;
	op->pre_row = put->pre_row;
	op->pre_val = put->pre_val;
	op->coll = put->coll;
	if (b->tail)
		b->tail->next = op;
	else
		b->head = op;
	b->tail = op;
	b->nput++;
	return 0;
}

int zsm_api_batch_wait(struct zsm_api_batch *b, int peer, unsigned int row,
		       uint64_t value)
{
	struct zsm_api_op *w = b->wait;

	if (!w) {
		w = calloc(1, sizeof(*w));
		if (!w)
			return -ENOMEM;
		w->slot = (unsigned int)b->c->nranks;
		b->wait = w;
	}
	if (w->nwait == b->wmax) {
		unsigned int m = b->wmax ? 2 * b->wmax : 8;
		unsigned int *s = realloc(w->wslot, m * sizeof(*s));
		uint64_t *v;

		if (!s)
			return -ENOMEM;
		w->wslot = s;
		v = realloc(w->wval, m * sizeof(*v));
		if (!v)
			return -ENOMEM;
		w->wval = v;
		b->wmax = m;
	}
	w->wslot[w->nwait] = row * (unsigned int)b->c->nranks +
			     (unsigned int)peer;
	w->wval[w->nwait++] = value;
	return 0;
}

/* Sequence numbers for the batch's operations, in order. */
static void zsm_api_batch_number(struct zsm_api_batch *b)
{
	struct zsm_api_comm *c = b->c;

	for (struct zsm_api_op *op = b->head; op; op = op->next)
		op->seq = ++c->seq[op->slot];
	if (b->wait)
		b->wait->seq = ++c->seq[c->nranks];
}

/*
 * The stream's side in GPU mode: writes of the puts' ready words (the last
 * per slot covers the earlier ones), between's copies, then the wait's
 * ready word and the waits: the puts' done words and the counters.  On a
 * stream with nothing left to run the ready words are stored now
 * (zsm_cuda_door_post): the puts need not wait for the GPU to schedule
 * the stream, which under another process's kernels is a time slice.
 */
static int zsm_api_batch_ring_gpu(struct zsm_api_batch *b,
				  zsm_cu_stream stream,
				  int (*between)(void *, zsm_cu_stream),
				  void *arg)
{
	struct zsm_api_comm *c = b->c;
	/* o holds the second batch: the wait's ready, the done waits, the
	 * counter waits. */
	unsigned int n = 0, max = (unsigned int)c->nranks + 1 +
				  (b->wait ? b->wait->nwait : 0);
	struct zsm_cuda_door_op *o = calloc(max, sizeof(*o));
	uint64_t *last = calloc((size_t)c->nranks, sizeof(*last));
	unsigned int *slots = calloc((size_t)c->nranks, sizeof(*slots));
	uint64_t *seqs = calloc((size_t)c->nranks, sizeof(*seqs));
	int ret = o && last && slots && seqs ? 0 : -ENOMEM;

	for (struct zsm_api_op *op = b->head; !ret && op; op = op->next)
		last[op->slot] = op->seq;
	for (int p = 0; !ret && p < c->nranks; p++)
		if (last[p]) {
			slots[n] = (unsigned int)p;
			seqs[n++] = last[p];
		}
	if (!ret && n)
		ret = zsm_cuda_door_post(c->ops, stream, n, slots, seqs, NULL);
	if (!ret && between)
		ret = between(arg, stream);
	n = 0;
	if (!ret && b->wait)
		o[n++] = (struct zsm_cuda_door_op){c->ops, b->wait->slot, 0,
						   b->wait->seq};
	for (int p = 0; !ret && p < c->nranks; p++)
		if (last[p])
			o[n++] = (struct zsm_cuda_door_op){c->ops, (unsigned)p,
							   1, last[p]};
	for (unsigned int i = 0; !ret && b->wait && i < b->wait->nwait; i++)
		o[n++] = (struct zsm_cuda_door_op){c->sig, b->wait->wslot[i],
						   1, b->wait->wval[i]};
	if (!ret && n)
		ret = zsm_cuda_door_batch(stream, n, o);
	free(o);
	free(last);
	free(slots);
	free(seqs);
	return ret;
}

/* Host-memory mode, lock held: the ready words, now. */
static int zsm_api_batch_ring_host(struct zsm_api_comm *c, const uint64_t *last,
				   uint64_t wseq)
{
	unsigned int slot;
	int ret = 0;

	for (int p = 0; !ret && p < c->nranks; p++) {
		slot = (unsigned int)p;
		if (last[p])
			ret = zsm_cuda_door_ring(c->ops, NULL, 1, &slot,
						 &last[p]);
	}
	slot = (unsigned int)c->nranks;
	if (!ret && wseq)
		ret = zsm_cuda_door_ring(c->ops, NULL, 1, &slot, &wseq);
	return ret;
}

/* Host-memory mode, unlocked: wait here for the puts and the wait. */
static int zsm_api_batch_wait_host(struct zsm_api_comm *c,
				   const uint64_t *last, uint64_t wseq)
{
	int ms = zsm_api_wait_timeout_ms(), ret = 0;

	/* The agent fails the comm first (ZSM_WAIT_TIMEOUT_MS); this only
	 * ends a wait the agent could not. */
	ms = ms && ms < INT_MAX - 60000 ? ms + 60000 : INT_MAX;
	for (int p = 0; !ret && p < c->nranks; p++)
		if (last[p])
			ret = zsm_cuda_door_wait_host(c->ops, (unsigned int)p,
						      last[p], ms);
	if (!ret && wseq)
		ret = zsm_cuda_door_wait_host(c->ops, (unsigned int)c->nranks,
					      wseq, ms);
	return ret;
}

int zsm_api_batch_finish(struct zsm_api_batch *b, zsm_cu_stream stream,
			 int (*before)(void *arg, zsm_cu_stream stream),
			 int (*between)(void *arg, zsm_cu_stream stream),
			 void *arg)
{
	struct zsm_api_comm *c = b->c;
	uint64_t *last = calloc((size_t)c->nranks, sizeof(*last));
	uint64_t wseq = 0;
	int ret = last ? 0 : -ENOMEM;

	if (!ret && before)
		ret = before(arg, stream);
	if (ret) {
		free(last);
		zsm_api_batch_drop(b);
		return ret;
	}
	zsm_api_batch_number(b);
	for (struct zsm_api_op *op = b->head; op; op = op->next)
		last[op->slot] = op->seq;
	if (b->wait)
		wseq = b->wait->seq;
	if (c->gpu)
		ret = zsm_api_batch_ring_gpu(b, stream, between, arg);
	else
		ret = zsm_api_batch_ring_host(c, last, wseq);
	/* The agent owns the operations from here, rung or not: a ring
	 * that failed fails the comm, which drops them. */
	while (b->head) {
		struct zsm_api_op *op = b->head;

		b->head = op->next;
		zsm_api_agent_push(c, op);
	}
	if (b->wait)
		zsm_api_agent_push(c, b->wait);
	b->wait = NULL;
	pthread_mutex_unlock(&c->lock);
	if (ret)
		zsm_api_comm_fail(c, ret, "the stream refused the operations");
	if (!ret && !c->gpu && between)
		ret = between(arg, NULL);
	if (!ret && !c->gpu)
		ret = zsm_api_batch_wait_host(c, last, wseq);
	if (ret == -ETIMEDOUT)
		zsm_api_comm_fail(c, ret, "a host-memory call waited too long");
	free(last);
	zsm_api_batch_free(b);
	/* A failure found by the agent is the comm's error. */
	return ret ? (zsm_api_comm_error(c) ? zsm_api_comm_error(c) : ret)
		   : 0;
}
