/* SPDX-License-Identifier: MIT */
/*
 * Owns a communicator's agent: what watches the operation door's ready
 * words, hands each operation the stream (or a host-memory call) has
 * reached to the engine as a put (entry.h's handle-free zsm_entry_put),
 * publishes its done word once it completes, and watches waits for their
 * signals and for time.  In GPU mode a thread of its own runs it, fed by
 * a list callers push to without a lock; in host-memory mode the calling
 * thread runs it until its call is over.  It makes no CUDA call.  Any
 * failure (a put refused or failed, a peer's link down, a wait past
 * ZSM_WAIT_TIMEOUT_MS) fails the communicator, which releases every
 * stream.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api_int.h"
#include "common/clock.h"
#include "common/log.h"
#include "entry/entry.h"
#include "group/group.h"

/* How often links are asked whether they failed, while work waits. */
#define ZSM_API_LINK_CHECK_NS 10000000ULL
/*
 * While operations wait for their streams, the agent polls (yielding) for
 * this long after its last progress, then naps, from MIN up to MAX: a put
 * the stream reaches is seen within a nap, and a stream that waits long
 * (a kernel before it) costs a core only for the spin.  While puts are in
 * flight it never naps: each turn's test drives the engine, as a test()
 * loop does for a put of zsm-bench's or NCCL's, and on tcp that pass moves
 * bytes (a 64 MiB put would otherwise see a pass every 50 us only).
 */
#define ZSM_API_SPIN_NS 2000000ULL
#define ZSM_API_NAP_MIN_NS 2000L
#define ZSM_API_NAP_MAX_NS 50000L
/* Puts in flight per peer: the link holds ZSM_MAX_REQUESTS requests per
 * set, and a put that finds none waits in its queue for one. */
#define ZSM_API_INFLIGHT 128
/* With nothing queued, the thread sleeps until woken, looking this
 * often. */
#define ZSM_API_IDLE_NS 100000000L
/* A host-memory call ends a wait the agent could not end (its own
 * timeout fails the comm first) this long after ZSM_WAIT_TIMEOUT_MS. */
#define ZSM_API_BACKSTOP_MS 60000

/* Per ops slot, agent only: operations in order. */
struct zsm_api_fifo {
	struct zsm_api_op *head, *tail;
};

struct zsm_api_agent {
	struct zsm_api_comm *c;
	struct zsm_api_fifo *fifo; /* [nranks + 1] */
	uint64_t last_check_ns;
	int inflight; /* puts issued and not yet done, this pass */
	long held;    /* operations in the fifos */
	/* A call a peer's Ready does not match (0: none), and what to say
	 * when the comm fails for it. */
	uint64_t mismatch;
	char mismatch_why[224];
	/* GPU mode: what callers queued, newest first, taken whole. */
	_Atomic(struct zsm_api_op *) in;
	sem_t wake;
	atomic_int sleeping; /* the thread is in, or going into, its wait */
	atomic_int stop;
	pthread_t thread;
	int running;
	/* Its pace: when it last moved anything, and its next nap. */
	uint64_t last_move;
	long nap;
};

void zsm_api_agent_push(struct zsm_api_comm *c, struct zsm_api_op *head,
			long n)
{
	struct zsm_api_agent *a = c->agent;
	struct zsm_api_op *first = head, *rev = NULL, *top;

	/* Relaxed: the count is a gauge; retirement's release decrement is
	 * what callers pair with. */
	atomic_fetch_add_explicit(&c->outstanding, n, memory_order_relaxed);
	/* The list is newest first: the chain goes on reversed, its first
	 * operation last. */
	while (head) {
		struct zsm_api_op *next = head->next;

		head->next = rev;
		rev = head;
		head = next;
	}
	/* relaxed: a failed exchange only tries again. */
	top = atomic_load_explicit(&a->in, memory_order_relaxed);
	do
		first->next = top;
	/* release: pairs with the acquire exchange in zsm_api_take. */
	while (!atomic_compare_exchange_weak_explicit(&a->in, &top, rev,
						      memory_order_release,
						      memory_order_relaxed));
	/* seq_cst: pairs with the fence in zsm_api_sleep (Dekker): either
	 * the agent sees our push, or we see it going to sleep. */
	atomic_thread_fence(memory_order_seq_cst);
	/* relaxed: ordered by the fence above. */
	if (atomic_load_explicit(&a->sleeping, memory_order_relaxed))
		sem_post(&a->wake);
}

/* Each of in (a chain, in order) to its slot's fifo: 1 when there were
 * any. */
static int zsm_api_sort(struct zsm_api_agent *a, struct zsm_api_op *in)
{
	int moved = 0;

	while (in) {
		struct zsm_api_op *next = in->next;
		struct zsm_api_fifo *f = &a->fifo[in->slot];

		in->next = NULL;
		if (f->tail)
			f->tail->next = in;
		else
			f->head = in;
		f->tail = in;
		in = next;
		a->held++;
		moved = 1;
	}
	return moved;
}

void zsm_api_agent_hold(struct zsm_api_comm *c, struct zsm_api_op *head,
			long n)
{
	/* Relaxed: as in zsm_api_agent_push; this thread retires them. */
	atomic_fetch_add_explicit(&c->outstanding, n, memory_order_relaxed);
	zsm_api_sort(c->agent, head);
}

static void zsm_api_retire(struct zsm_api_agent *a, struct zsm_api_fifo *f)
{
	struct zsm_api_op *op = f->head;

	f->head = op->next;
	if (!f->head)
		f->tail = NULL;
	a->held--;
	zsm_api_door_done(a->c->ops, op->slot, op->seq);
	zsm_api_pool_put(&a->c->pool, op);
	/* Release: pairs with the acquire in zsm_api_comm_quiesce. */
	atomic_fetch_sub_explicit(&a->c->outstanding, 1, memory_order_release);
}

/* Whether op has been at the head, reached, for longer than allowed. */
static int zsm_api_overdue(struct zsm_api_op *op, uint64_t now)
{
	int ms = zsm_api_wait_timeout_ms();

	if (!op->reached_ns)
		op->reached_ns = now;
	return ms && now - op->reached_ns > (uint64_t)ms * 1000000u;
}

static int zsm_api_reached(const struct zsm_api_comm *c,
			   const struct zsm_api_op *op)
{
	return zsm_api_door_geq(zsm_api_door_ready(c->ops, op->slot),
				 op->seq);
}

static uint64_t zsm_api_counter(const struct zsm_api_comm *c,
				unsigned int row, int peer)
{
	return zsm_api_door_done_get(c->sig,
				      row * (unsigned int)c->nranks +
					      (unsigned int)peer);
}

/* What every slot waits for, said once when the comm fails for time:
 * which step of which peer never came. */
static void zsm_api_dump(struct zsm_api_agent *a)
{
	struct zsm_api_comm *c = a->c;

	for (int s = 0; s <= c->nranks; s++) {
		const struct zsm_api_op *op = a->fifo[s].head;
		unsigned int n = 0;

		for (const struct zsm_api_op *o = op; o; o = o->next)
			n++;
		ZSM_WARN("api: rank %d: %s %d: stream reached %llu, done %llu, "
			 "%u queued; oldest: seq %llu%s, pre %u/%#llx (have "
			 "%#llx)",
			 c->rank, s < c->nranks ? "puts to rank" : "waits, slot",
			 s,
			 (unsigned long long)zsm_api_door_ready(c->ops,
								 (unsigned)s),
			 (unsigned long long)zsm_api_door_done_get(
				 c->ops, (unsigned)s),
			 n, op ? (unsigned long long)op->seq : 0ULL,
			 op && op->req ? " (issued)" : "",
			 op ? op->pre_row : 0U,
			 op ? (unsigned long long)op->pre_val : 0ULL,
			 op && op->pre_row && s < c->nranks
				 ? (unsigned long long)zsm_api_counter(
					   c, op->pre_row, s)
				 : 0ULL);
	}
}

/* A collective's Ready: a signal alone that no condition holds back. */
static int zsm_api_op_is_ready(const struct zsm_api_op *op)
{
	return op->coll && !op->pre_row;
}

static const char *zsm_api_kind_name(uint64_t word)
{
	return (word >> 48 & 1) == ZSM_API_ALLTOALL ? "AlltoAll" : "AllGather";
}

/* Peer's Ready word is of op's call but not ours: noted (the first one);
 * the comm fails once our own Readys of the call are out. */
static void zsm_api_mismatch_note(struct zsm_api_agent *a,
				  const struct zsm_api_op *op, uint64_t word)
{
	if (a->mismatch)
		return;
	a->mismatch = op->coll;
	snprintf(a->mismatch_why, sizeof(a->mismatch_why),
		 "collective %llu does not match rank %d's: its %s of %llu "
		 "bytes per rank against this rank's %s of %llu",
		 (unsigned long long)op->coll, op->peer,
		 zsm_api_kind_name(word),
		 (unsigned long long)(word & ZSM_API_COLL_BYTES_MAX),
		 zsm_api_kind_name(op->pre_val),
		 (unsigned long long)(op->pre_val & ZSM_API_COLL_BYTES_MAX));
}

/*
 * -EPROTO for a mismatched call, once every Ready of ours up to that
 * call has completed: each peer then holds our word and finds the
 * mismatch itself, rather than seeing only that we went away.
 */
static void zsm_api_mismatch_fail(struct zsm_api_agent *a)
{
	struct zsm_api_comm *c = a->c;

	for (int s = 0; s < c->nranks; s++)
		for (const struct zsm_api_op *op = a->fifo[s].head; op;
		     op = op->next)
			if (op->peer >= 0 && zsm_api_op_is_ready(op) &&
			    op->coll <= a->mismatch)
				return;
	zsm_api_comm_fail(c, -EPROTO, a->mismatch_why);
}

/* Whether a queued put of a collective that the stream reached already
 * holds a peer's Ready of its call that does not match ours (noted). */
static int zsm_api_mismatch_find(struct zsm_api_agent *a)
{
	struct zsm_api_comm *c = a->c;

	for (int s = 0; s < c->nranks && !a->mismatch; s++)
		for (const struct zsm_api_op *op = a->fifo[s].head; op;
		     op = op->next) {
			uint64_t word;

			if (!op->pre_row || op->req || op->peer < 0 ||
			    !zsm_api_reached(c, op))
				continue;
			word = zsm_api_counter(c, op->pre_row, op->peer);
			if (word != op->pre_val &&
			    zsm_api_ready_same_call(word, op->pre_val))
				zsm_api_mismatch_note(a, op, word);
		}
	return a->mismatch != 0;
}

/*
 * Fail the comm with err, unless a call in hand does not match a peer's:
 * that is the cause (the peer that found it first may have failed and
 * closed its links, which is what err reports), and -EPROTO what every
 * rank of it is to return.
 */
static void zsm_api_fail(struct zsm_api_agent *a, int err, const char *why)
{
	if (zsm_api_mismatch_find(a))
		zsm_api_comm_fail(a->c, -EPROTO, a->mismatch_why);
	else
		zsm_api_comm_fail(a->c, err, why);
}

/* Whether a collective's put may go: 1; 0 not yet (the peer's Ready has
 * not come, or does not match); -1 the comm failed. */
static int zsm_api_pre(struct zsm_api_agent *a, struct zsm_api_op *op,
		       uint64_t now)
{
	uint64_t word;
	char why[160];

	if (!op->pre_row)
		return 1;
	word = zsm_api_counter(a->c, op->pre_row, op->peer);
	if (word == op->pre_val)
		return 1;
	if (zsm_api_ready_same_call(word, op->pre_val)) {
		zsm_api_mismatch_note(a, op, word);
		return 0;
	}
	if (!zsm_api_overdue(op, now))
		return 0;
	snprintf(why, sizeof(why),
		 "rank %d's Ready of collective %llu never came within "
		 "ZSM_WAIT_TIMEOUT_MS",
		 op->peer, (unsigned long long)op->coll);
	zsm_api_dump(a);
	zsm_api_fail(a, -ETIMEDOUT, why);
	return -1;
}

int zsm_api_op_issue(struct zsm_api_comm *c, struct zsm_api_op *op)
{
	const struct zsm_api_target *src = op->src ? &op->src->at[op->peer]
						   : NULL;
	const struct zsm_api_target *dst = op->dst ? &op->dst->at[op->peer]
						   : NULL;
	int sig = op->sig_row != ZSM_API_ROW_NONE;

	return zsm_entry_put(
		c->link[op->peer], src ? op->src->base + op->src_off : NULL,
		op->size, src ? src->mr : NULL, dst ? dst->win : NULL,
		op->dst_off, sig ? c->sig_win.at[op->peer].win : NULL,
		sig ? zsm_api_door_done_at(op->sig_row *
						    (unsigned int)c->nranks +
					    (unsigned int)c->rank)
		    : 0,
		op->sig_add ? op->sig_add : 1, &op->req);
}

/* Hand op to the engine: 1 issued, 0 no request free now (it stays
 * queued), -1 the comm failed. */
static int zsm_api_issue(struct zsm_api_agent *a, struct zsm_api_op *op,
			 uint64_t now)
{
	char why[160];
	int ret = zsm_api_op_issue(a->c, op);

	if (!ret && op->req)
		return 1;
	if (!ret && !zsm_api_overdue(op, now))
		return 0;
	snprintf(why, sizeof(why), "a put to rank %d was %s", op->peer,
		 ret ? "refused" : "given no request within ZSM_WAIT_TIMEOUT_MS");
	zsm_api_fail(a, ret ? ret : -ETIMEDOUT, why);
	return -1;
}

/* Test op, in flight: 1 when it ended (done, or the comm failed). */
static int zsm_api_test(struct zsm_api_agent *a, struct zsm_api_op *op)
{
	char why[160];
	int done = 0, ret = zsm_entry_req_test(op->req, &done);

	if (!done)
		return 0;
	/* A request that reported its end is freed: never tested again. */
	op->req = NULL;
	op->size = 0;
	op->dst = NULL;
	op->src = NULL;
	if (ret) {
		snprintf(why, sizeof(why), "a put to rank %u failed",
			 op->slot);
		zsm_api_fail(a, ret, why);
	}
	op->peer = -1; /* finished */
	return 1;
}

/* Issue what the stream reached on one put slot, in order; test what is
 * in flight; retire the finished prefix.  1 when anything moved. */
static int zsm_api_puts(struct zsm_api_agent *a, struct zsm_api_fifo *f,
			uint64_t now)
{
	struct zsm_api_comm *c = a->c;
	int moved = 0, issuing = 1, inflight = 0, go;

	for (struct zsm_api_op *op = f->head; op; op = op->next) {
		if (op->req) {
			inflight++;
			a->inflight++;
			if (zsm_api_test(a, op)) {
				if (zsm_api_comm_error(c))
					return 1;
				moved = 1;
			}
			continue;
		}
		if (op->peer < 0 || !issuing)
			continue;
		if (inflight >= ZSM_API_INFLIGHT || !zsm_api_reached(c, op)) {
			issuing = 0;
			continue;
		}
		go = zsm_api_pre(a, op, now);
		if (go > 0)
			go = zsm_api_issue(a, op, now);
		if (go < 0)
			return 1;
		if (!go) {
			issuing = 0;
			continue;
		}
		inflight++;
		a->inflight++;
		moved = 1;
	}
	/* Finished operations leave in order: a done word covers every
	 * operation of its slot before it. */
	while (f->head && f->head->peer < 0) {
		zsm_api_retire(a, f);
		moved = 1;
	}
	return moved;
}

/* The oldest wait: retire it once every counter reached its value. */
static int zsm_api_waits(struct zsm_api_agent *a, struct zsm_api_fifo *f,
			 uint64_t now)
{
	struct zsm_api_comm *c = a->c;
	struct zsm_api_op *op = f->head;
	char why[160];

	if (!op || !zsm_api_reached(c, op))
		return 0;
	for (unsigned int i = 0; i < op->nwait; i++) {
		if (zsm_api_door_geq(zsm_api_door_done_get(c->sig,
							     op->wslot[i]),
				      op->wval[i]))
			continue;
		if (zsm_api_overdue(op, now)) {
			snprintf(why, sizeof(why),
				 "a wait for rank %u's signals (row %u) to "
				 "reach %llu saw %llu within "
				 "ZSM_WAIT_TIMEOUT_MS",
				 op->wslot[i] % (unsigned int)c->nranks,
				 op->wslot[i] / (unsigned int)c->nranks,
				 (unsigned long long)op->wval[i],
				 (unsigned long long)zsm_api_door_done_get(
					 c->sig, op->wslot[i]));
			zsm_api_dump(a);
			zsm_api_fail(a, -ETIMEDOUT, why);
			return 1;
		}
		return 0;
	}
	zsm_api_retire(a, f);
	return 1;
}

/*
 * A peer's link that failed, or a rank whose process went away (its
 * bootstrap link closed without a leave), fails the comm; asked now and
 * then while work waits, so that a wait for a dead rank's signal ends
 * though no transport has anything outstanding to it.
 */
static void zsm_api_links(struct zsm_api_agent *a, uint64_t now)
{
	struct zsm_api_comm *c = a->c;
	int failed = 0, gone = -1;
	char why[128];

	if (now - a->last_check_ns < ZSM_API_LINK_CHECK_NS)
		return;
	a->last_check_ns = now;
	/* Acquire: pairs with init's release once set-up is over. */
	if (atomic_load_explicit(&c->watching, memory_order_acquire) &&
	    zsm_boot_watch(c->boot, &gone)) {
		snprintf(why, sizeof(why),
			 "rank %d went away without destroying its "
			 "communicator%s",
			 gone, gone == 0 && c->rank ? " (or rank 0 saw a rank go)"
						    : "");
		zsm_api_fail(a, -ECONNRESET, why);
		return;
	}
	if (!zsm_group_failed(c->group.coll, &failed) && failed)
		zsm_api_fail(a, -ECONNRESET,
			     "a link to a peer failed (the peer died or its "
			     "network went away)");
}

/* After a failure: every stream was released; drop what is queued,
 * waiting for puts in flight to end so their requests go back. */
static int zsm_api_drain(struct zsm_api_agent *a, struct zsm_api_fifo *f,
			 int stop)
{
	while (f->head) {
		struct zsm_api_op *op = f->head;
		int done = 0;

		/* At stop, a request still pending is left to the link's
		 * close, which ends it. */
		if (op->req && !stop) {
			(void)zsm_entry_req_test(op->req, &done);
			if (!done)
				return 0;
		}
		op->req = NULL;
		zsm_api_retire(a, f);
	}
	return 1;
}

static void zsm_api_nap(long ns)
{
	struct timespec ts = {0, ns};

	nanosleep(&ts, NULL);
}

/* What callers queued, oldest first (NULL: nothing). */
static struct zsm_api_op *zsm_api_take(struct zsm_api_agent *a)
{
	/* acquire: pairs with the release exchange in zsm_api_agent_push,
	 * so the operations' fields are ours to read. */
	struct zsm_api_op *in =
		atomic_exchange_explicit(&a->in, NULL, memory_order_acquire);
	struct zsm_api_op *rev = NULL;

	while (in) {
		struct zsm_api_op *next = in->next;

		in->next = rev;
		rev = in;
		in = next;
	}
	return rev;
}

/* The thread with nothing to do: sleep until a push or a stop wakes it,
 * or ZSM_API_IDLE_NS passed. */
static void zsm_api_sleep(struct zsm_api_agent *a)
{
	struct timespec ts;

	/* relaxed: ordered by the fence below. */
	atomic_store_explicit(&a->sleeping, 1, memory_order_relaxed);
	/* seq_cst: pairs with the fence in zsm_api_agent_push (Dekker). */
	atomic_thread_fence(memory_order_seq_cst);
	/* relaxed: ordered by the fence above; the take that follows
	 * acquires. */
	if (!atomic_load_explicit(&a->in, memory_order_relaxed) &&
	    !atomic_load_explicit(&a->stop, memory_order_relaxed)) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += ZSM_API_IDLE_NS;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		(void)sem_timedwait(&a->wake, &ts);
	}
	atomic_store_explicit(&a->sleeping, 0, memory_order_relaxed);
}

/* After a failure: drain every fifo; 1 once all are empty. */
static int zsm_api_drain_all(struct zsm_api_agent *a, int stop)
{
	int empty = 1;

	for (int i = 0; i <= a->c->nranks; i++)
		empty &= zsm_api_drain(a, &a->fifo[i], stop);
	return empty;
}

/* One turn of the agent over what it holds: 1 when anything moved. */
static int zsm_api_pass(struct zsm_api_agent *a, int news)
{
	struct zsm_api_comm *c = a->c;
	int n = c->nranks, moved = 0;
	uint64_t now = zsm_now_ns();

	/* A pass of the engine now, as NCCL's RMA proxy asks for one
	 * (rmaProgress) while it has work: signals coming in are applied
	 * without waiting for the proxy thread's next look. */
	if (news || a->held)
		zsm_progress();
	a->inflight = 0;
	for (int i = 0; i < n; i++)
		if (a->fifo[i].head)
			moved |= zsm_api_puts(a, &a->fifo[i], now);
	moved |= zsm_api_waits(a, &a->fifo[n], now);
	if (a->mismatch)
		zsm_api_mismatch_fail(a);
	if (a->held)
		zsm_api_links(a, now);
	return moved;
}

/* Between passes: yield while things move or puts are in flight, nap
 * (growing) once nothing moved for a while. */
static void zsm_api_pace(struct zsm_api_agent *a, int moved)
{
	uint64_t now = zsm_now_ns();

	if (moved) {
		a->last_move = now;
		a->nap = ZSM_API_NAP_MIN_NS;
	} else if (now - a->last_move > ZSM_API_SPIN_NS && !a->inflight) {
		zsm_api_nap(a->nap);
		if (a->nap < ZSM_API_NAP_MAX_NS)
			a->nap *= 2;
	} else {
		sched_yield();
	}
}

static void *zsm_api_agent_main(void *arg)
{
	struct zsm_api_agent *a = arg;
	struct zsm_api_comm *c = a->c;

	a->last_move = zsm_now_ns();
	for (;;) {
		/* relaxed: a stop is seen on some later turn; the join
		 * orders the rest. */
		int stop = atomic_load_explicit(&a->stop, memory_order_relaxed);
		int moved = zsm_api_sort(a, zsm_api_take(a));

		if (zsm_api_comm_error(c)) {
			if (zsm_api_drain_all(a, stop) && stop)
				break;
			zsm_api_nap(ZSM_API_NAP_MAX_NS);
			continue;
		}
		moved |= zsm_api_pass(a, moved);
		if (!a->held) {
			if (stop)
				break;
			zsm_api_sleep(a);
			continue;
		}
		zsm_api_pace(a, moved);
	}
	return NULL;
}

/* Whether each of the n slots is done up to its seqs[i]. */
static int zsm_api_all_done(const struct zsm_api_comm *c, unsigned int n,
			    const unsigned int *slots, const uint64_t *seqs)
{
	for (unsigned int i = 0; i < n; i++)
		if (!zsm_api_door_geq(zsm_api_door_done_get(c->ops, slots[i]),
				      seqs[i]))
			return 0;
	return 1;
}

int zsm_api_agent_run(struct zsm_api_comm *c, unsigned int n,
		      const unsigned int *slots, const uint64_t *seqs)
{
	struct zsm_api_agent *a = c->agent;
	int ms = zsm_api_wait_timeout_ms(), news = 1;
	uint64_t start = zsm_now_ns();

	ms = ms && ms < INT_MAX - ZSM_API_BACKSTOP_MS
		     ? ms + ZSM_API_BACKSTOP_MS
		     : INT_MAX;
	a->last_move = start;
	while (!zsm_api_comm_error(c) && !zsm_api_all_done(c, n, slots, seqs)) {
		zsm_api_pace(a, zsm_api_pass(a, news));
		news = 0;
		if (zsm_now_ns() - start > (uint64_t)ms * 1000000u)
			zsm_api_comm_fail(c, -ETIMEDOUT,
					  "a host-memory call waited too long");
	}
	/* What a failed call leaves stays queued until the destroy: its
	 * requests in flight end with their links. */
	return zsm_api_comm_error(c);
}

int zsm_api_agent_new(struct zsm_api_comm *c)
{
	struct zsm_api_agent *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	a->c = c;
	a->nap = ZSM_API_NAP_MIN_NS;
	a->fifo = calloc((size_t)c->nranks + 1, sizeof(*a->fifo));
	if (!a->fifo || sem_init(&a->wake, 0, 0)) {
		free(a->fifo);
		free(a);
		return -ENOMEM;
	}
	atomic_init(&a->in, NULL);
	atomic_init(&a->sleeping, 0);
	atomic_init(&a->stop, 0);
	c->agent = a;
	return 0;
}

void zsm_api_agent_free(struct zsm_api_comm *c)
{
	struct zsm_api_agent *a = c->agent;

	if (!a)
		return;
	sem_destroy(&a->wake);
	free(a->fifo);
	free(a);
	c->agent = NULL;
}

int zsm_api_agent_start(struct zsm_api_comm *c)
{
	struct zsm_api_agent *a = c->agent;

	if (pthread_create(&a->thread, NULL, zsm_api_agent_main, a))
		return -ENOMEM;
	(void)pthread_setname_np(a->thread, "zsm-api-agent");
	a->running = 1;
	return 0;
}

void zsm_api_agent_stop(struct zsm_api_comm *c)
{
	struct zsm_api_agent *a = c->agent;

	if (!a)
		return;
	/* Acquire: pairs with the agent's release decrement. */
	if (atomic_load_explicit(&c->outstanding, memory_order_acquire))
		zsm_api_comm_fail(c, -ECANCELED,
				  "destroyed with operations in flight");
	if (!a->running) {
		/* Host-memory mode: what a failed call left. */
		zsm_api_drain_all(a, 1);
		return;
	}
	/* relaxed: the post wakes it, and it looks again every turn. */
	atomic_store_explicit(&a->stop, 1, memory_order_relaxed);
	sem_post(&a->wake);
	pthread_join(a->thread, NULL);
	a->running = 0;
}
