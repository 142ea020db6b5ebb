/* SPDX-License-Identifier: MIT */
/* Owns the engine lock, the descriptor queue and the proxy thread. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/param.h"
#include "common/ring.h"
#include "proxy/proxy.h"

#define ZSM_PROXY_MAX_TRANSPORTS 4
/* How long after a test() pass the thread keeps out of the way. */
#define ZSM_PROXY_ASSIST_WINDOW_NS 1000000ULL
/* Naps while operations are in flight grow from MIN to MAX. */
#define ZSM_PROXY_NAP_MIN_NS 16000ULL
#define ZSM_PROXY_NAP_MAX_NS 1000000ULL
/*
 * With nothing in flight the thread blocks on the transports' fds and its
 * eventfd.  A transport without fds is looked at this often instead: an
 * endpoint with no comms still receives what it must answer (a connection
 * request for a listener just closed is refused at once, not left to the
 * connector's timeout), strays to drain, and the provider's own
 * connection traffic.  4 passes a second cost an idle process nothing it
 * would notice.
 */
#define ZSM_PROXY_IDLE_NAP_NS 250000000ULL
/* A room's round stops after this many fifos it could not fit. */
#define ZSM_PROXY_ROOM_MISSES 16
/* The fds an idle sleep watches besides the eventfd. */
#define ZSM_PROXY_WAIT_FDS 32

struct zsm_proxy {
	pthread_mutex_t lock; /* the engine lock */
	struct zsm_ring queue;
	/* Fifos with descriptors their transport refused that no room
	 * parks, retried on every pass, oldest first: engine only. */
	struct zsm_proxy_fifos held;
	/* Rooms with parked fifos: engine only. */
	struct zsm_proxy_room *rooms;
	/* The transports' hooks, and the instance each drives. */
	const struct zsm_transport_ops *transports[ZSM_PROXY_MAX_TRANSPORTS];
	void *selves[ZSM_PROXY_MAX_TRANSPORTS];
	int ntransports;
	int inline_mode;
	int assist; /* enum zsm_proxy_assist_mode */
	uint64_t spin_ns;
	pthread_t thread;
	int have_thread;
	int efd;
	atomic_int stop;
	atomic_int sleeping;
	/* Bumped under the lock by every caller that leaves the engine
	 * (zsm_proxy_caller_leave): the thread sleeps only if no caller came
	 * since its last pass. */
	atomic_uint changes;
	atomic_uint_fast64_t last_assist_ns;
	/* A connect or accept caller found the engine taken. */
	atomic_int caller_missed;
};

static struct zsm_proxy zsm_proxy = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.efd = -1,
};

void zsm_proxy_add_transport(const struct zsm_transport_ops *ops, void *self)
{
	for (int i = 0; i < zsm_proxy.ntransports; i++)
		if (zsm_proxy.transports[i] == ops)
			return;
	if (zsm_proxy.ntransports < ZSM_PROXY_MAX_TRANSPORTS) {
		zsm_proxy.selves[zsm_proxy.ntransports] = self;
		zsm_proxy.transports[zsm_proxy.ntransports++] = ops;
	}
}

void zsm_proxy_lock(void)
{
	pthread_mutex_lock(&zsm_proxy.lock);
}

void zsm_proxy_unlock(void)
{
	pthread_mutex_unlock(&zsm_proxy.lock);
}

int zsm_proxy_caller_drives(void)
{
	return zsm_proxy.inline_mode;
}

int zsm_proxy_caller_enter(void)
{
	if (zsm_proxy.inline_mode) {
		pthread_mutex_lock(&zsm_proxy.lock);
		return 0;
	}
	if (!pthread_mutex_trylock(&zsm_proxy.lock))
		return 0;
	/* relaxed: a hint for the thread's next turn (zsm_proxy_main);
	 * the lock itself orders what follows. */
	atomic_store_explicit(&zsm_proxy.caller_missed, 1,
			      memory_order_relaxed);
	return -EBUSY;
}

static void zsm_proxy_list_append(struct zsm_proxy_fifos *l,
				  struct zsm_proxy_fifo *f)
{
	f->next_held = NULL;
	f->prev_held = l->tail;
	if (l->tail)
		l->tail->next_held = f;
	else
		l->head = f;
	l->tail = f;
}

static void zsm_proxy_list_unlink(struct zsm_proxy_fifos *l,
				  struct zsm_proxy_fifo *f)
{
	if (f->prev_held)
		f->prev_held->next_held = f->next_held;
	else
		l->head = f->next_held;
	if (f->next_held)
		f->next_held->prev_held = f->prev_held;
	else
		l->tail = f->prev_held;
	f->next_held = f->prev_held = NULL;
}

/* f, held and on no list: onto the room its refusal named, or else the
 * held list. */
static void zsm_proxy_place(struct zsm_proxy_fifo *f)
{
	struct zsm_proxy_room *r = f->park;

	f->room = r;
	if (!r) {
		zsm_proxy_list_append(&zsm_proxy.held, f);
		return;
	}
	zsm_proxy_list_append(&r->parked, f);
	if (!r->listed) {
		r->listed = 1;
		r->next = zsm_proxy.rooms;
		zsm_proxy.rooms = r;
	}
}

/* f, parked: onto the held list, retried on the next pass. */
static void zsm_proxy_unpark(struct zsm_proxy_fifo *f)
{
	zsm_proxy_list_unlink(&f->room->parked, f);
	f->park = NULL;
	zsm_proxy_place(f);
}

void zsm_proxy_park(struct zsm_desc *desc, struct zsm_proxy_room *r,
		    int exhausted)
{
	desc->fifo->park = r;
	r->exhausted = exhausted;
}

void zsm_proxy_room_freed(struct zsm_proxy_room *r)
{
	r->freed = 1;
}

void zsm_proxy_fifo_kick(struct zsm_proxy_fifo *f)
{
	if (f->held && f->room)
		zsm_proxy_unpark(f);
}

void zsm_proxy_room_flush(struct zsm_proxy_room *r)
{
	struct zsm_proxy_room **pp = &zsm_proxy.rooms;

	while (r->parked.head)
		zsm_proxy_unpark(r->parked.head);
	/* Unlisted now: the owner may free it.  Rooms are few. */
	for (; r->listed && *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	r->listed = 0;
	r->freed = 0;
}

/* Queue d behind its owner's held descriptors, holding the fifo. */
static void zsm_proxy_hold(struct zsm_desc *d)
{
	struct zsm_proxy_fifo *f = d->fifo;

	d->next = NULL;
	if (f->tail)
		f->tail->next = d;
	else
		f->head = d;
	f->tail = d;
	if (!f->held) {
		f->held = 1;
		zsm_proxy_place(f);
	} else if (f->room && d->wakes) {
		zsm_proxy_unpark(f);
	}
}

/*
 * Post f's held descriptors in order until one is refused; returns how
 * many were taken, and *emptied once none is left.  Each leaves the fifo
 * before it is posted: posting a close may free the fifo's owner, and
 * that close is the owner's last, so f is not read after the last post
 * (by us or, through *emptied, by the caller).  f is on no list.
 */
static int zsm_proxy_fifo_drain(struct zsm_proxy_fifo *f, int *emptied)
{
	int taken = 0;

	*emptied = !f->head;
	while (!*emptied) {
		struct zsm_desc *d = f->head;
		int last;

		f->head = d->next;
		last = !f->head;
		if (last) {
			f->tail = NULL;
			f->held = 0;
		}
		f->park = NULL; /* the post names a room, or nothing */
		if (d->post(d) == -EAGAIN) {
			d->next = f->head;
			f->head = d;
			if (!f->tail)
				f->tail = d;
			f->held = 1;
			break;
		}
		taken++;
		*emptied = last;
	}
	return taken;
}

/*
 * Retry r's parked fifos in order until r is exhausted, or refused
 * ZSM_PROXY_ROOM_MISSES that found too little (a smaller one behind them
 * may fit, but the round's cost stays bounded).  Those refused keep
 * their places, ahead of the ones not tried.
 */
static int zsm_proxy_room_retry(struct zsm_proxy_room *r)
{
	struct zsm_proxy_fifos kept = {0};
	int events = 0, misses = 0;

	r->freed = 0;
	while (r->parked.head && misses < ZSM_PROXY_ROOM_MISSES) {
		struct zsm_proxy_fifo *f = r->parked.head;
		int emptied;

		zsm_proxy_list_unlink(&r->parked, f);
		f->room = NULL;
		events += zsm_proxy_fifo_drain(f, &emptied);
		if (emptied)
			continue; /* its owner may be gone */
		if (f->park != r) {
			zsm_proxy_place(f);
			continue;
		}
		f->room = r;
		zsm_proxy_list_append(&kept, f);
		misses++;
		if (r->exhausted)
			break;
	}
	if (kept.head) {
		kept.tail->next_held = r->parked.head;
		if (r->parked.head)
			r->parked.head->prev_held = kept.tail;
		else
			r->parked.tail = kept.tail;
		r->parked.head = kept.head;
	}
	return events;
}

/* The rooms whose transport freed some: their fifos, as far as room
 * goes.  Rooms left with none leave the list. */
static int zsm_proxy_rooms_retry(void)
{
	struct zsm_proxy_room **pp = &zsm_proxy.rooms;
	int events = 0;

	while (*pp) {
		struct zsm_proxy_room *r = *pp;

		if (r->freed)
			events += zsm_proxy_room_retry(r);
		if (!r->parked.head) {
			*pp = r->next;
			r->listed = 0;
			continue;
		}
		pp = &r->next;
	}
	return events;
}

/* The next submitted descriptor, no longer counted as queued (before
 * it is posted: a close's post may free its fifo). */
static struct zsm_desc *zsm_proxy_take(void)
{
	struct zsm_desc *d = zsm_ring_pop(&zsm_proxy.queue);

	/* relaxed: read only under the engine lock, which we hold, or by
	 * its own submitter after its increment (zsm_proxy_submit_drive). */
	if (d)
		atomic_fetch_sub_explicit(&d->fifo->queued, 1,
					  memory_order_relaxed);
	return d;
}

/* Post d unless its owner has some held before it; held when refused. */
static void zsm_proxy_post(struct zsm_desc *d)
{
	if (!d->fifo->held)
		d->fifo->park = NULL;
	if (d->fifo->held || d->post(d) == -EAGAIN)
		zsm_proxy_hold(d);
}

int zsm_proxy_pass_locked(void)
{
	struct zsm_proxy_fifo *f, *next;
	struct zsm_desc *d;
	int events;

	/* Held descriptors first: each fifo's order is its owner's matching
	 * order, and a fifo still held afterwards holds back new ones of the
	 * same owner below. */
	events = 0;
	f = zsm_proxy.held.head;
	zsm_proxy.held.head = zsm_proxy.held.tail = NULL;
	for (; f; f = next) {
		int emptied;

		next = f->next_held;
		f->next_held = f->prev_held = NULL;
		events += zsm_proxy_fifo_drain(f, &emptied);
		if (!emptied) /* else its owner may be gone */
			zsm_proxy_place(f);
	}
	/* Then those parked on a room that freed some (from here on held
	 * ones wait for the next pass). */
	events += zsm_proxy_rooms_retry();
	if (zsm_proxy.queue.slots) {
		while ((d = zsm_proxy_take()) != NULL) {
			events++;
			zsm_proxy_post(d);
		}
	}
	for (int i = 0; i < zsm_proxy.ntransports; i++)
		events += zsm_proxy.transports[i]->progress(
			zsm_proxy.selves[i]);
	return events;
}

int zsm_proxy_pass(void)
{
	int ev;

	zsm_proxy_lock();
	ev = zsm_proxy_pass_locked();
	zsm_proxy_unlock();
	return ev;
}

static int zsm_proxy_busy_locked(void)
{
	if (zsm_proxy.held.head || zsm_proxy.rooms)
		return 1;
	for (int i = 0; i < zsm_proxy.ntransports; i++)
		if (zsm_proxy.transports[i]->busy(zsm_proxy.selves[i]))
			return 1;
	return 0;
}

/* Make the thread's next (or current) sleep return at once. */
static void zsm_proxy_kick(void)
{
	uint64_t one = 1;

	if (write(zsm_proxy.efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		ZSM_WARN("proxy: waking the progress thread failed: %s",
			 strerror(errno));
}

/* Only a sleeping thread is kicked, and only a running one sleeps. */
void zsm_proxy_wake(void)
{
	/* seq_cst fence: pairs with the fence in zsm_proxy_sleep_fds
	 * (Dekker): either the thread sees our pushed slot or our count of
	 * changes, or we see it sleeping. */
	atomic_thread_fence(memory_order_seq_cst);
	/* relaxed: ordered by the fence above. */
	if (atomic_load_explicit(&zsm_proxy.sleeping, memory_order_relaxed))
		zsm_proxy_kick();
}

void zsm_proxy_caller_leave(void)
{
	/*
	 * The caller may have changed engine state that the thread's last
	 * pass did not see, and a thread that found nothing busy could then
	 * sleep for good.  So the thread checks this count before it sleeps,
	 * and a sleeping one is kicked.  Only a sleeping one: a connect or
	 * accept polled in a loop used to write the eventfd on every call
	 * (3,600 writes and 2,000 wake-ups in one conformance check).
	 * relaxed: the fence in zsm_proxy_wake orders it before our look at
	 * sleeping, and pairs with the one in zsm_proxy_sleep_fds.
	 */
	atomic_fetch_add_explicit(&zsm_proxy.changes, 1, memory_order_relaxed);
	pthread_mutex_unlock(&zsm_proxy.lock);
	if (zsm_proxy.have_thread)
		zsm_proxy_wake();
}

/* Into the submission queue: 0, or -EAGAIN when it is full. */
static int zsm_proxy_push(struct zsm_desc *desc)
{
	/* relaxed: see zsm_proxy_take; the push publishes the descriptor. */
	atomic_fetch_add_explicit(&desc->fifo->queued, 1,
				  memory_order_relaxed);
	if (!zsm_ring_push(&zsm_proxy.queue, desc))
		return 0;
	atomic_fetch_sub_explicit(&desc->fifo->queued, 1,
				  memory_order_relaxed);
	return -EAGAIN;
}

int zsm_proxy_submit(struct zsm_desc *desc)
{
	if (zsm_proxy_push(desc))
		return -EAGAIN;
	if (zsm_proxy.have_thread)
		zsm_proxy_wake();
	return 0;
}

void zsm_proxy_submit_wait(struct zsm_desc *desc)
{
	while (zsm_proxy_submit(desc) == -EAGAIN)
		zsm_proxy_pass();
}

int zsm_proxy_assist_wants(int mode, const void **polled,
			   const void *waiting)
{
	int again = waiting == *polled;

	*polled = waiting;
	if (mode != ZSM_PROXY_ASSIST_WAITER)
		return mode == ZSM_PROXY_ASSIST_ALWAYS;
	/* A caller going round many requests (NCCL's proxy thread over its
	 * channels) has work of its own: leave ours to our thread.  One
	 * polling the same request again is waiting for it. */
	return again;
}

void zsm_proxy_assist(const void *waiting)
{
	/* What this thread's previous test() found pending. */
	static _Thread_local const void *polled;

	if (zsm_proxy.inline_mode) {
		zsm_proxy_pass();
		return;
	}
	if (!zsm_proxy_assist_wants(zsm_proxy.assist, &polled, waiting)) {
		/* Pure thread mode: a caller polling test() in a loop would
		 * otherwise compete with the proxy for the same core. */
		if (zsm_proxy.assist == ZSM_PROXY_ASSIST_NEVER)
			sched_yield();
		return;
	}
	if (pthread_mutex_trylock(&zsm_proxy.lock) != 0) {
		/* The proxy is in a pass, maybe copying megabytes: a caller
		 * polling test() in a loop would take its core (measured on
		 * 2 cores: a fifth of ce's bandwidth).  Where the core is
		 * free this returns at once. */
		sched_yield();
		return;
	}
	zsm_proxy_pass_locked();
	pthread_mutex_unlock(&zsm_proxy.lock);
	/* Where cores are scarce our thread keeps off the caller's core
	 * while it drives; with cores to spare a waiter's pass only cuts
	 * the hand-off, and our thread going on costs nobody. */
	if (zsm_proxy.assist == ZSM_PROXY_ASSIST_ALWAYS)
		/* relaxed: a hint for the thread's back-off, nothing hangs
		 * on it. */
		atomic_store_explicit(&zsm_proxy.last_assist_ns, zsm_now_ns(),
				      memory_order_relaxed);
}

/* A pass by the caller, the engine lock held; then unlock. */
static void zsm_proxy_drive_locked(void)
{
	zsm_proxy_pass_locked();
	pthread_mutex_unlock(&zsm_proxy.lock);
	/* As a test() pass: where cores are scarce our thread keeps off
	 * while callers drive. */
	if (zsm_proxy.assist == ZSM_PROXY_ASSIST_ALWAYS)
		/* relaxed: a hint for the thread's back-off, as in
		 * zsm_proxy_assist. */
		atomic_store_explicit(&zsm_proxy.last_assist_ns, zsm_now_ns(),
				      memory_order_relaxed);
}

/* Whether the caller may drive now: the lock taken, or 0 (yielded). */
static int zsm_proxy_drive_enter(void)
{
	if (zsm_proxy.assist == ZSM_PROXY_ASSIST_NEVER ||
	    pthread_mutex_trylock(&zsm_proxy.lock) != 0) {
		sched_yield();
		return 0;
	}
	return 1;
}

void zsm_proxy_drive(void)
{
	if (zsm_proxy.inline_mode)
		zsm_proxy_pass();
	else if (zsm_proxy_drive_enter())
		zsm_proxy_drive_locked();
}

int zsm_proxy_submit_drive(struct zsm_desc *desc)
{
	int ret;

	if (zsm_proxy.inline_mode || zsm_proxy.assist == ZSM_PROXY_ASSIST_NEVER ||
	    pthread_mutex_trylock(&zsm_proxy.lock) != 0) {
		ret = zsm_proxy_submit(desc);
		if (!ret && zsm_proxy.inline_mode)
			zsm_proxy_pass();
		return ret;
	}
	/* Nothing of its owner waits in the queue or is held: it goes to
	 * its transport now, as the pass would take it (the submission
	 * queue's hand-off is most of a small put's cost).  Otherwise our
	 * own pass takes it: no need to wake the thread for it either way.
	 * relaxed: the engine lock orders the engine's decrements before
	 * this look, and ours came before it on this thread. */
	ret = 0;
	if (desc->fifo->held ||
	    atomic_load_explicit(&desc->fifo->queued, memory_order_relaxed))
		ret = zsm_proxy_push(desc);
	/* As zsm_proxy_post, written out: this is on a small put's path
	 * (docs/design.md, "The API's path"). */
	else {
		desc->fifo->park = NULL;
		if (desc->post(desc) == -EAGAIN)
			zsm_proxy_hold(desc);
	}
	zsm_proxy_drive_locked();
	return ret;
}

/*
 * The transports' fds for an idle sleep, after each said nothing is
 * pending (engine lock held): how many went into fds[1..], and in owner[]
 * whose they are; -2 when a transport has something already (pass
 * again), and *forever 0 when one has no fds (look in now and then).
 */
static int zsm_proxy_wait_fds(struct pollfd *fds, int *owner, int *forever)
{
	int n = 0;

	*forever = 1;
	for (int i = 0; i < zsm_proxy.ntransports; i++) {
		const struct zsm_transport_ops *t = zsm_proxy.transports[i];
		int got;

		if (!t->wait_fds)
			continue; /* nothing arrives for it unasked */
		got = t->wait_fds(zsm_proxy.selves[i], fds + n,
				  ZSM_PROXY_WAIT_FDS - n);
		if (got < 0)
			return -2;
		if (got == 0)
			*forever = 0;
		for (int k = 0; k < got; k++)
			owner[n + k] = i;
		n += got;
	}
	return n;
}

/*
 * Sleep until a submission or a caller wakes us (wakeable: seen is the
 * count of callers' changes our last pass saw), one of fds[1..n] turns
 * readable, or for at most nap_ns (0: no limit).  A nap that is not
 * wakeable costs submitters nothing: test() callers are driving the
 * engine then, and the thread only checks back later.  Returns the
 * transports whose fds turned readable, as bits of their index: they
 * are kicked under the engine lock, before the next pass.
 */
static unsigned zsm_proxy_sleep_fds(struct pollfd *fds, const int *owner,
				    int n, uint64_t nap_ns,
				    const unsigned *seen)
{
	unsigned readable = 0;
	struct timespec ts = {.tv_sec = (time_t)(nap_ns / 1000000000ULL),
			      .tv_nsec = (long)(nap_ns % 1000000000ULL)};
	uint64_t v;

	fds[0].fd = zsm_proxy.efd;
	fds[0].events = POLLIN;
	fds[0].revents = 0;
	if (seen) {
		/* relaxed store, then the seq_cst fence pairing with the
		 * one in zsm_proxy_wake: after it we re-check the queue and
		 * the callers' count, so a push or a caller that came before
		 * our flag was visible is not missed.  relaxed load: ordered
		 * by the fence. */
		atomic_store_explicit(&zsm_proxy.sleeping, 1,
				      memory_order_relaxed);
		atomic_thread_fence(memory_order_seq_cst);
		if (!zsm_ring_empty(&zsm_proxy.queue) ||
		    atomic_load_explicit(&zsm_proxy.changes,
					 memory_order_relaxed) != *seen)
			goto out;
	}
	(void)!ppoll(fds, (nfds_t)(n + 1), nap_ns ? &ts : NULL, NULL);
out:
	/* relaxed: only the wake-up decision reads it. */
	atomic_store_explicit(&zsm_proxy.sleeping, 0, memory_order_relaxed);
	if (fds[0].revents & POLLIN)
		(void)!read(zsm_proxy.efd, &v, sizeof(v));
	for (int k = 1; k <= n; k++)
		if (fds[k].revents)
			readable |= 1u << owner[k - 1];
	return readable;
}

static void zsm_proxy_sleep(uint64_t nap_ns, const unsigned *seen)
{
	struct pollfd fd;

	(void)zsm_proxy_sleep_fds(&fd, NULL, 0, nap_ns, seen);
}

/* What the engine's thread carries from one turn of its loop to the
 * next. */
struct zsm_proxy_loop {
	uint64_t idle_since;
	uint64_t nap;
	unsigned kicks; /* transports whose fds turned readable */
	unsigned seen;	/* zsm_proxy.changes at the last pass */
	int ev, busy;	/* what the last pass did, and whether work waits */
	/* nfds: -1 not asked (nap as while busy), -2 a transport has
	 * something (pass again), else the fds to block on. */
	int nfds, forever;
	struct pollfd fds[ZSM_PROXY_WAIT_FDS + 1];
	int owner[ZSM_PROXY_WAIT_FDS];
};

/* One pass under the engine lock: 0 when a test() caller held it. */
static int zsm_proxy_loop_pass(struct zsm_proxy_loop *l)
{
	/* A test() caller holds the engine: it is driving, and a blocking
	 * lock would hand the lock back and forth (a futex call each way)
	 * for every message. */
	if (pthread_mutex_trylock(&zsm_proxy.lock)) {
		zsm_proxy_sleep(ZSM_PROXY_ASSIST_WINDOW_NS, NULL);
		return 0;
	}
	for (int i = 0; l->kicks && i < zsm_proxy.ntransports; i++)
		if (l->kicks & (1u << i))
			zsm_proxy.transports[i]->kick(zsm_proxy.selves[i]);
	l->kicks = 0;
	/* relaxed: callers bump it under the lock we hold. */
	l->seen = atomic_load_explicit(&zsm_proxy.changes,
				       memory_order_relaxed);
	l->ev = zsm_proxy_pass_locked();
	l->busy = zsm_proxy_busy_locked();
	l->nfds = -1;
	l->forever = 0;
	/* Blocking only once nothing happened for the longest nap: a
	 * message every few microseconds (a ping-pong between two sends)
	 * would otherwise pay fi_trywait, the sleep and an eventfd wake-up
	 * each. */
	if (!l->busy && !l->ev &&
	    zsm_now_ns() - l->idle_since >= ZSM_PROXY_NAP_MAX_NS)
		l->nfds = zsm_proxy_wait_fds(l->fds + 1, l->owner, &l->forever);
	zsm_proxy_unlock();
	return 1;
}

/*
 * A connect or accept caller never waits for the lock: let it in before
 * the next pass.  A thread that passes back to back can otherwise keep
 * it out for as long as events come (where threads run one at a time,
 * as under valgrind, the caller only runs while a pass sits in a system
 * call).  The plain load first keeps the loop free of a locked
 * instruction when nobody missed.  relaxed: see zsm_proxy_caller_enter.
 */
static void zsm_proxy_let_callers_in(void)
{
	if (atomic_load_explicit(&zsm_proxy.caller_missed,
				 memory_order_relaxed) &&
	    atomic_exchange_explicit(&zsm_proxy.caller_missed, 0,
				     memory_order_relaxed))
		sched_yield();
}

/* After a pass: go again at once, yield, nap or block, by what it did. */
static void zsm_proxy_loop_wait(struct zsm_proxy_loop *l)
{
	uint64_t now = zsm_now_ns();
	/* relaxed: see zsm_proxy_assist. */
	uint64_t last = atomic_load_explicit(&zsm_proxy.last_assist_ns,
					     memory_order_relaxed);

	if (now - last < ZSM_PROXY_ASSIST_WINDOW_NS) {
		/* A test() caller is driving: keep off its core. */
		zsm_proxy_sleep(ZSM_PROXY_ASSIST_WINDOW_NS, NULL);
		return;
	}
	if (l->ev) {
		l->idle_since = now;
		l->nap = ZSM_PROXY_NAP_MIN_NS;
		return;
	}
	if (now - l->idle_since < zsm_proxy.spin_ns) {
		sched_yield();
		return;
	}
	if (!l->busy && l->nfds != -1) {
		/* Nothing in flight for a while: block until a submission,
		 * an arrival on a transport's fd or, for a transport without
		 * one, the idle nap. */
		if (l->nfds < 0)
			return; /* something arrived: pass again */
		l->kicks = zsm_proxy_sleep_fds(
			l->fds, l->owner, l->nfds,
			l->forever ? 0 : ZSM_PROXY_IDLE_NAP_NS, &l->seen);
		return;
	}
	zsm_proxy_sleep(l->nap, &l->seen);
	l->nap = l->nap * 2 < ZSM_PROXY_NAP_MAX_NS ? l->nap * 2
						   : ZSM_PROXY_NAP_MAX_NS;
}

static void *zsm_proxy_main(void *arg)
{
	struct zsm_proxy_loop l = {
		.idle_since = zsm_now_ns(),
		.nap = ZSM_PROXY_NAP_MIN_NS,
	};

	(void)arg;
	/* relaxed: stop is a request; the join is the synchronisation. */
	while (!atomic_load_explicit(&zsm_proxy.stop, memory_order_relaxed)) {
		if (!zsm_proxy_loop_pass(&l))
			continue;
		zsm_proxy_let_callers_in();
		zsm_proxy_loop_wait(&l);
	}
	return NULL;
}

/*
 * ZSM_PROXY_ASSIST=auto: a test() that runs passes itself saves the
 * hand-off to our thread, which pays where that thread has no core of its
 * own (2 cores: ping-pong 3.3 us with it, 8 to 13 without, and stream
 * bandwidth unsteady), and where the caller only waits (zsm-bench on
 * H200s: 4 MiB GPU messages at half the bandwidth without it).  A caller
 * with work of its own loses by it: NCCL's proxy thread then drives every
 * channel's copies while ours sleeps, and all_reduce through ce on two
 * H200s with 32 CPUs ran 10 to 12% slower (docs/ce.md).  So with more
 * than 4 CPUs only a caller polling the same request twice assists.
 */
#define ZSM_PROXY_ASSIST_MAX_CPUS 4

int zsm_proxy_assist_mode(int param, int cpus)
{
	if (param != 0) /* "0" is index 1, "1" index 2 */
		return param == 2 ? ZSM_PROXY_ASSIST_ALWAYS
				  : ZSM_PROXY_ASSIST_NEVER;
	return cpus <= ZSM_PROXY_ASSIST_MAX_CPUS ? ZSM_PROXY_ASSIST_ALWAYS
						 : ZSM_PROXY_ASSIST_WAITER;
}

int zsm_proxy_cpus(void)
{
	cpu_set_t set;
	int cpus = sched_getaffinity(0, sizeof(set), &set) == 0
			   ? CPU_COUNT(&set)
			   : 0;

	return cpus > 0 ? cpus : (int)sysconf(_SC_NPROCESSORS_ONLN);
}

int zsm_proxy_start(void)
{
	int ret;

	zsm_proxy.inline_mode = zsm_param_int(ZSM_P_PROXY) == 1;
	zsm_proxy.assist = zsm_proxy_assist_mode(
		(int)zsm_param_int(ZSM_P_PROXY_ASSIST), zsm_proxy_cpus());
	zsm_proxy.spin_ns = (uint64_t)zsm_param_int(ZSM_P_PROXY_SPIN_US) * 1000;
	ret = zsm_ring_init(&zsm_proxy.queue,
			    (uint32_t)zsm_param_int(ZSM_P_QUEUE_DEPTH));
	if (ret) {
		ZSM_WARN("proxy: descriptor queue allocation failed");
		return ret;
	}
	zsm_proxy.held.head = zsm_proxy.held.tail = NULL;
	zsm_proxy.rooms = NULL;
	if (zsm_proxy.inline_mode) {
		ZSM_INFO("proxy: inline mode, progress runs inside test()");
		return 0;
	}
	zsm_proxy.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (zsm_proxy.efd < 0) {
		ret = -errno;
		ZSM_WARN("proxy: eventfd failed: %s", strerror(errno));
		goto err_ring;
	}
	/* relaxed: the thread is not running yet. */
	atomic_store_explicit(&zsm_proxy.stop, 0, memory_order_relaxed);
	/* relaxed: likewise, pthread_create publishes it. */
	atomic_store_explicit(&zsm_proxy.sleeping, 0, memory_order_relaxed);
	ret = -pthread_create(&zsm_proxy.thread, NULL, zsm_proxy_main, NULL);
	if (ret) {
		ZSM_WARN("proxy: starting the progress thread failed: %s",
			 strerror(-ret));
		goto err_efd;
	}
	/* A name top -H and profilers show (at most 15 characters). */
	(void)pthread_setname_np(zsm_proxy.thread, "zsm-proxy");
	zsm_proxy.have_thread = 1;
	ZSM_INFO("proxy: progress thread started (assist %s)",
		 zsm_proxy.assist == ZSM_PROXY_ASSIST_NEVER ? "off"
		 : zsm_proxy.assist == ZSM_PROXY_ASSIST_ALWAYS
			 ? "on"
			 : "for callers waiting on one request: more than "
			   "4 CPUs");
	return 0;

err_efd:
	close(zsm_proxy.efd);
	zsm_proxy.efd = -1;
err_ring:
	zsm_ring_fini(&zsm_proxy.queue);
	return ret;
}

/*
 * Every descriptor still held or queued goes to its cancel, each fifo in
 * its order and then the queue's: the engine stops, and a caller that
 * never tested them may have freed their buffers (finalize with comms
 * left open).  Engine lock held; returns how many went.
 */
static int zsm_proxy_cancel_fifo(struct zsm_proxy_fifo *f)
{
	struct zsm_desc *d = f->head;
	int n = 0;

	/* Emptied first: a close, its owner's last, may free f. */
	f->head = f->tail = NULL;
	f->held = 0;
	f->room = NULL;
	while (d) {
		struct zsm_desc *after = d->next;

		if (d->cancel)
			d->cancel(d);
		d = after;
		n++;
	}
	return n;
}

static int zsm_proxy_cancel_all_locked(void)
{
	struct zsm_proxy_fifo *f;
	struct zsm_desc *d;
	int n = 0;

	/* Parked ones join the held list, in their rooms' order. */
	while (zsm_proxy.rooms)
		zsm_proxy_room_flush(zsm_proxy.rooms);
	while ((f = zsm_proxy.held.head) != NULL) {
		zsm_proxy_list_unlink(&zsm_proxy.held, f);
		n += zsm_proxy_cancel_fifo(f);
	}
	while ((d = zsm_proxy_take()) != NULL) {
		if (d->cancel)
			d->cancel(d);
		n++;
	}
	return n;
}

void zsm_proxy_stop(void)
{
	uint64_t one = 1;

	if (zsm_proxy.have_thread) {
		/* relaxed: the join below orders everything after it. */
		atomic_store_explicit(&zsm_proxy.stop, 1, memory_order_relaxed);
		(void)!write(zsm_proxy.efd, &one, sizeof(one));
		pthread_join(zsm_proxy.thread, NULL);
		zsm_proxy.have_thread = 0;
		close(zsm_proxy.efd);
		zsm_proxy.efd = -1;
	}
	if (zsm_proxy.queue.slots) {
		int n;

		zsm_proxy_lock();
		n = zsm_proxy_cancel_all_locked();
		zsm_proxy_unlock();
		if (n)
			ZSM_INFO("proxy: stopping: %d queued operation(s) of "
				 "comms left open cancelled, not started",
				 n);
		zsm_ring_fini(&zsm_proxy.queue);
	}
	zsm_proxy.ntransports = 0;
}
