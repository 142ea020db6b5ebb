/* SPDX-License-Identifier: MIT */
/*
 * Case "ctrl_flood" (issue 32, item 5): any process that can reach an
 * endpoint can flood it with junk control messages.  Before this was
 * fixed, 2000 to 8000 a second made a valid connect wait 13 to 15 s.
 * Here a thread of rank 0 floods rank 1's endpoint at 8000 a second
 * while rank 0 connects to it; a comm made before the flood keeps
 * exchanging messages (and probing its peer) all through it.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "attacker.h"
#include "harden.h"

#define H_HANDLE NCCL_NET_HANDLE_MAXSIZE
#define H_FLOOD_RATE 8000 /* junk messages a second */
#define H_FLOOD_TICK_MS 10
/*
 * A connect under the flood must be answered within this.  The issue asks
 * for 1 s; on a 2-core machine loaded to 20 by other jobs 20 runs took 0
 * to 268 ms, so twice that leaves room for a busier moment and still
 * fails what this guards against: before the fix, 13 to 15 s or never
 * (20 s, 3 runs of 3).  Times the time scale (valgrind).
 */
#define H_FLOOD_CONNECT_MS 2000
/* Junk sent before the connect: 3 s of flood. */
#define H_FLOOD_BEFORE (3 * H_FLOOD_RATE)
/* How long the live comm's receive waits with its peer silent: past
 * twice ZSM_PEER_CHECK_MS (1 s), so only answered probes keep it. */
#define H_FLOOD_SILENCE_MS 3000

struct h_flood {
	struct h_attacker *a;
	struct h_victim v;
	atomic_int stop;
	atomic_ulong sent;
	uint64_t t0;
};

/* One junk control message: the kinds a victim checks and drops. */
static void h_flood_one(struct h_flood *f, unsigned long i)
{
	unsigned char m[H_JUNK_BYTES];
	uint32_t id;
	size_t len = h_attacker_junk_ctrl(f->a, &f->v, m, i, &id);

	h_attacker_ctrl(f->a, id, 1, m, len);
}

static void *h_flood_main(void *arg)
{
	struct h_flood *f = arg;
	uint64_t t0 = f->t0;

	/* relaxed: a request to stop; the join is the synchronisation. */
	while (!atomic_load_explicit(&f->stop, memory_order_relaxed)) {
		uint64_t due = (zsm_client_now_ns() - t0) / 1000000ULL *
			       H_FLOOD_RATE / 1000;

		/* relaxed: only this thread writes it; the waiter in
		 * h_flood_start only reads a count. */
		unsigned long n = atomic_load_explicit(&f->sent,
						       memory_order_relaxed);

		while (n < due &&
		       !atomic_load_explicit(&f->stop, memory_order_relaxed)) {
			h_flood_one(f, n++);
			atomic_store_explicit(&f->sent, n,
					      memory_order_relaxed);
		}
		h_attacker_poll(f->a);
		usleep(H_FLOOD_TICK_MS * 1000);
	}
	return NULL;
}

/* Connect (rank 0) or accept (rank 1) under the flood: how long it took. */
static int h_flood_connect(struct h_ctx *x, char *handle, void *listen,
			   void **comm, uint64_t *took_ms)
{
	uint64_t t0 = zsm_client_now_ns();
	int r;

	oob_doing(x->rank ? "accept under the flood" : "connect under the "
						       "flood");
	while (!*comm) {
		H_EXPECT(zsm_client_now_ns() - t0 < H_NS(20000),
			 "no connection in 20 s under the flood");
		r = x->rank ? zsm_client_accept(x->c, listen, comm)
			    : zsm_client_connect(x->c, 0, handle, comm);
		H_EXPECT(r == ncclSuccess, "%s under the flood: %s",
			 x->rank ? "accept" : "connect",
			 zsm_client_result_str(r));
	}
	*took_ms = (zsm_client_now_ns() - t0) / 1000000ULL;
	return OOB_PASS;
}

/* Messages both comms exchange under the flood, every byte checked; the
 * live comm also waits for one a while, probing its silent peer. */
static int h_flood_traffic(struct h_ctx *x, void *comm)
{
	struct h_ctx fresh = *x;

	oob_doing("messages on the live comm");
	for (int i = 0; i < 20; i++)
		H_TRY(h_exchange(x, 64 + 1999 * (size_t)i, (unsigned char)i));
	oob_doing("a receive on the live comm waiting, probing its peer");
	if (x->rank == 0)
		usleep(H_FLOOD_SILENCE_MS * 1000);
	H_TRY(h_exchange(x, 4096, 77));
	oob_doing("messages on the comm made under the flood");
	fresh.send = x->rank ? NULL : comm;
	fresh.recv = x->rank ? comm : NULL;
	for (int i = 0; i < 20; i++)
		H_TRY(h_exchange(&fresh, 64 + 1999 * (size_t)i,
				 (unsigned char)i));
	oob_doing(NULL);
	return OOB_PASS;
}

/* Both ranks under the flood, once rank 0's attacker has sent a few
 * seconds' worth. */
static int h_flood_run(struct h_ctx *x, char *handle, void *listen)
{
	void *comm = NULL;
	uint64_t took = 0;
	long rss0 = h_rss_kib();

	H_OOB(oob_barrier()); /* the flood runs */
	oob_doing("messages on the live comm");
	for (int i = 0; i < 20; i++)
		H_TRY(h_exchange(x, 1000 + 997 * (size_t)i, (unsigned char)i));
	H_TRY(h_flood_connect(x, handle, listen, &comm, &took));
	if (x->rank == 0) {
		printf("# ctrl_flood: connect took %llu ms under %d junk "
		       "control messages a second\n",
		       (unsigned long long)took, H_FLOOD_RATE);
		H_EXPECT(took < (uint64_t)H_MS(H_FLOOD_CONNECT_MS),
			 "a connect under %d junk control messages a second "
			 "took %llu ms",
			 H_FLOOD_RATE, (unsigned long long)took);
	}
	H_TRY(h_flood_traffic(x, comm));
	if (x->rank) {
		long rss = h_rss_kib();

		printf("# ctrl_flood: victim RSS %ld KiB before the flood, "
		       "%ld KiB in it\n",
		       rss0, rss);
	}
	H_OOB(oob_barrier()); /* the flood stops */
	if (x->rank)
		H_CALL(zsm_client_close_recv(x->c, comm));
	else
		H_CALL(zsm_client_close_send(x->c, comm));
	return OOB_PASS;
}

/* Rank 0's attacker, started: a thread that floods until stopped, from
 * the barrier on at least H_FLOOD_BEFORE messages behind it. */
static int h_flood_start(struct h_flood *f, pthread_t *flooder)
{
	uint64_t t0;

	H_EXPECT(!h_attacker_open(&f->a, &f->v), "no attacker endpoint");
	f->t0 = zsm_client_now_ns();
	H_EXPECT(!pthread_create(flooder, NULL, h_flood_main, f),
		 "starting the flood");
	/* relaxed: a progress count, read to wait; nothing is read
	 * through it. */
	for (t0 = zsm_client_now_ns();
	     atomic_load_explicit(&f->sent, memory_order_relaxed) <
	     H_FLOOD_BEFORE;
	     usleep(10000))
		if (zsm_client_now_ns() - t0 > H_NS(30000)) {
			atomic_store_explicit(&f->stop, 1,
					      memory_order_relaxed);
			pthread_join(*flooder, NULL);
			return oob_fail("the attacker sent only %lu junk "
					"messages in 30 s",
					(unsigned long)f->sent);
		}
	return OOB_PASS;
}

int h_case_ctrl_flood(int rank, void *arg)
{
	char handle[H_HANDLE] = {0};
	struct h_flood f = {.a = NULL};
	struct h_ctx x;
	void *listen = NULL;
	pthread_t flooder;
	int st;

	(void)arg;
	H_TRY(h_setup(&x, rank));
	H_TRY(h_listen_victim(&x, handle, &listen, &f.v));
	if (rank == 1) {
		st = h_flood_run(&x, handle, listen);
		H_CALL(zsm_client_close_listen(x.c, listen));
	} else {
		st = h_flood_start(&f, &flooder);
		if (st != OOB_PASS) {
			h_attacker_close(f.a);
			return st;
		}
		st = h_flood_run(&x, handle, NULL);
		atomic_store_explicit(&f.stop, 1, memory_order_relaxed);
		pthread_join(flooder, NULL);
		printf("# ctrl_flood: %lu junk control messages sent in "
		       "%llu ms\n",
		       (unsigned long)f.sent,
		       (unsigned long long)((zsm_client_now_ns() - f.t0) /
					    1000000ULL));
		h_attacker_close(f.a);
	}
	if (st != OOB_PASS)
		return st;
	return h_teardown(&x);
}
