/* SPDX-License-Identifier: MIT */
/*
 * Owns batches: the operations of one call, numbered on their door slots,
 * handed to the agent, and rung on the stream in one go (api_int.h says
 * how the doors work).  A batch lives on its caller's stack and its
 * operations come from the communicator's pool: a call allocates nothing.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "api/api_int.h"
#include "common/cuda.h"
#include "common/log.h"

int zsm_api_batch_new(struct zsm_api_comm *c, struct zsm_api_batch *b)
{
	memset(b, 0, sizeof(*b));
	b->c = c;
	return zsm_api_comm_error(c);
}

void zsm_api_batch_drop(struct zsm_api_batch *b)
{
	while (b->head) {
		struct zsm_api_op *op = b->head;

		b->head = op->next;
		zsm_api_pool_put(&b->c->pool, op);
	}
	if (b->wait)
		zsm_api_pool_put(&b->c->pool, b->wait);
	b->wait = NULL;
}

int zsm_api_batch_put(struct zsm_api_batch *b, const struct zsm_api_op *put)
{
	struct zsm_api_op *op = zsm_api_pool_get(&b->c->pool);

	if (!op)
		return -ENOMEM;
	op->slot = (unsigned int)put->peer;
	op->peer = put->peer;
	op->src = put->src;
	op->src_off = put->src_off;
	op->size = put->size;
	op->dst = put->dst;
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
	b->n++;
	return 0;
}

int zsm_api_batch_wait(struct zsm_api_batch *b, int peer, unsigned int row,
		       uint64_t value)
{
	struct zsm_api_op *w = b->wait;

	if (!w) {
		w = zsm_api_pool_get(&b->c->pool);
		if (!w)
			return -ENOMEM;
		w->slot = (unsigned int)b->c->nranks;
		w->peer = -1;
		b->wait = w;
	}
	if (zsm_api_op_wait_room(w, w->nwait + 1))
		return -ENOMEM;
	w->wslot[w->nwait] = row * (unsigned int)b->c->nranks +
			     (unsigned int)peer;
	w->wval[w->nwait++] = value;
	return 0;
}

/* A slot of the call's list (api_int.h, struct zsm_api_scratch), once. */
static void zsm_api_batch_slot(struct zsm_api_scratch *k, unsigned int slot)
{
	if (k->mark[slot] == k->batch)
		return;
	k->mark[slot] = k->batch;
	k->slots[k->n++] = slot;
}

/* Sequence numbers for the batch's operations, in order, and the call's
 * slots with the last of each. */
static void zsm_api_batch_number(struct zsm_api_batch *b)
{
	struct zsm_api_comm *c = b->c;
	struct zsm_api_scratch *k = &c->scratch;

	k->batch++;
	k->n = 0;
	for (struct zsm_api_op *op = b->head; op; op = op->next) {
		op->seq = ++c->seq[op->slot];
		zsm_api_batch_slot(k, op->slot);
	}
	k->nput = k->n;
	if (b->wait) {
		b->wait->seq = ++c->seq[c->nranks];
		zsm_api_batch_slot(k, (unsigned int)c->nranks);
	}
	for (unsigned int i = 0; i < k->n; i++)
		k->seqs[i] = c->seq[k->slots[i]];
}

/* One more door operation into o, rung once o is full: 0 or -errno. */
static int zsm_api_ring_add(zsm_cu_stream stream, struct zsm_api_door_op *o,
			    unsigned int *n, struct zsm_api_door_op op)
{
	o[(*n)++] = op;
	if (*n < ZSM_API_DOOR_OPS)
		return 0;
	*n = 0;
	return zsm_api_door_batch(stream, ZSM_API_DOOR_OPS, o);
}

/*
 * The stream's side in GPU mode: writes of the puts' ready words (the last
 * per slot covers the earlier ones), between's copies, then the wait's
 * ready word and the waits: the puts' done words and the counters.  On a
 * stream with nothing left to run the ready words are stored now
 * (zsm_api_door_post): the puts need not wait for the GPU to schedule
 * the stream, which under another process's kernels is a time slice.
 */
static int zsm_api_batch_ring_gpu(struct zsm_api_batch *b,
				  zsm_cu_stream stream,
				  int (*between)(void *, zsm_cu_stream),
				  void *arg)
{
	struct zsm_api_comm *c = b->c;
	struct zsm_api_scratch *k = &c->scratch;
	unsigned int n = 0;
	int ret = 0;

	if (k->nput)
		ret = zsm_api_door_post(c->ops, stream, k->nput, k->slots,
					k->seqs, NULL);
	if (!ret && between)
		ret = between(arg, stream);
	if (!ret && b->wait)
		ret = zsm_api_ring_add(stream, k->o, &n,
				       (struct zsm_api_door_op){
					       c->ops, b->wait->slot, 0,
					       b->wait->seq});
	for (unsigned int i = 0; !ret && i < k->nput; i++)
		ret = zsm_api_ring_add(stream, k->o, &n,
				       (struct zsm_api_door_op){
					       c->ops, k->slots[i], 1,
					       k->seqs[i]});
	for (unsigned int i = 0; !ret && b->wait && i < b->wait->nwait; i++)
		ret = zsm_api_ring_add(stream, k->o, &n,
				       (struct zsm_api_door_op){
					       c->sig, b->wait->wslot[i], 1,
					       b->wait->wval[i]});
	if (!ret && n)
		ret = zsm_api_door_batch(stream, n, k->o);
	return ret;
}

/* The batch's operations as one chain, in order (the wait last). */
static struct zsm_api_op *zsm_api_batch_chain(struct zsm_api_batch *b,
					      long *n)
{
	struct zsm_api_op *head = b->head;

	*n = b->n;
	if (b->wait) {
		if (b->tail)
			b->tail->next = b->wait;
		else
			head = b->wait;
		b->wait->next = NULL;
		++*n;
	}
	b->head = b->tail = b->wait = NULL;
	return head;
}

int zsm_api_batch_finish(struct zsm_api_batch *b, zsm_cu_stream stream,
			 int (*before)(void *arg, zsm_cu_stream stream),
			 int (*between)(void *arg, zsm_cu_stream stream),
			 void *arg)
{
	struct zsm_api_comm *c = b->c;
	struct zsm_api_scratch *k = &c->scratch;
	struct zsm_api_op *head;
	long n;
	int ret = before ? before(arg, stream) : 0;

	if (ret) {
		zsm_api_batch_drop(b);
		return ret;
	}
	zsm_api_batch_number(b);
	/* Host-memory mode: the ready words, now. */
	if (c->gpu)
		ret = zsm_api_batch_ring_gpu(b, stream, between, arg);
	else if (k->n)
		ret = zsm_api_door_ring(c->ops, NULL, k->n, k->slots, k->seqs);
	/* The agent owns the operations from here, rung or not: a ring
	 * that failed fails the comm, which drops them. */
	head = zsm_api_batch_chain(b, &n);
	if (c->gpu && head)
		zsm_api_agent_push(c, head, n);
	else if (head)
		zsm_api_agent_hold(c, head, n);
	if (ret)
		zsm_api_comm_fail(c, ret, "the stream refused the operations");
	if (!ret && !c->gpu && between)
		ret = between(arg, NULL);
	if (!ret && !c->gpu)
		ret = zsm_api_agent_run(c, k->n, k->slots, k->seqs);
	/* A failure found by the agent is the comm's error. */
	return ret ? (zsm_api_comm_error(c) ? zsm_api_comm_error(c) : ret)
		   : 0;
}
