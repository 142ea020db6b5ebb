/* SPDX-License-Identifier: MIT */
/*
 * One-sided operations the target cannot apply, over tcp;ofi_rxm (two
 * processes, ce off): rank 0 puts into rank 1's windows through a
 * descriptor that is wrong, then right behind it (not waiting) BURST good
 * puts, each with an INC of one signal word.
 *   --case stale    a window rank 1 registered, sent, then deregistered
 *                   (a registration its owner gave up): the provider
 *                   refuses the write;
 *   --case outside  a real window whose descriptor's size was forged, the
 *                   put past its end: the provider refuses it;
 *   --case signal   a signal whose window id is forged: rank 1's engine
 *                   refuses it.
 * Rank 0: the bad put fails, and its comm fails within LIMIT_S; each
 * good put reported done was applied: rank 1's word counts at least as
 * many (a put with a signal is done only once its owner said it applied
 * the signal, so none behind a refused signal is).  Rank 1: its
 * receive comm fails within LIMIT_S (the path of its one WARN), and the
 * bad put changed nothing.  Before the fix the bad put was reported done
 * and lost with every put behind it, without a word on either side.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "entry/entry.h"
#include "core_pair.h"
#include "oob.h"

#define WIN 65536
#define PUT 4096
#define BURST 64
#define LIMIT_S 30

enum { CASE_STALE, CASE_OUTSIDE, CASE_SIGNAL };
static int which = -1;

struct wins {
	struct zsm_rma_window data, sig, stale;
};

static void nap(void)
{
	struct timespec ts = {0, 20000};

	nanosleep(&ts, NULL);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* test() until req is done: its result. */
static int wait_req(void *req)
{
	int done = 0, ret;

	while (!(ret = zsm_test(req, &done, NULL)) && !done)
		nap();
	return ret;
}

/* Until comm failed, at most LIMIT_S: 1 when it did. */
static int fails_in_time(void *comm)
{
	double t0 = now_s();

	while (!zsm_comm_failed(comm)) {
		if (now_s() - t0 > LIMIT_S)
			return 0;
		zsm_progress();
		nap();
	}
	return 1;
}

static int target(void)
{
	unsigned char *data = calloc(1, WIN), *stale = calloc(1, WIN);
	uint64_t *sig = calloc(8, 8);
	void *ctx, *lc, *rc = NULL, *mh[3] = {0};
	char handle[ZSM_HANDLE_BYTES];
	unsigned ok;
	struct wins w;

	if (!data || !stale || !sig)
		return oob_fail("out of memory");
	if (zsm_init(&ctx, 0, -1, NULL) || zsm_listen(ctx, 0, handle, &lc) ||
	    oob_send(handle, sizeof(handle)))
		return oob_fail("init or listen failed");
	if (core_pair_accept(lc, &rc))
		return OOB_FAIL;
	if (zsm_reg_window(rc, data, WIN, ZSM_MEM_HOST, &mh[0], &w.data) ||
	    zsm_reg_window(rc, sig, 64, ZSM_MEM_HOST, &mh[1], &w.sig) ||
	    zsm_reg_window(rc, stale, WIN, ZSM_MEM_HOST, &mh[2], &w.stale))
		return oob_fail("regWindow failed");
	/* Given up, as a rank whose registration timed out does. */
	zsm_dereg_mr(rc, mh[2]);
	if (oob_send(&w, sizeof(w)))
		return OOB_FAIL;
	oob_doing("waiting for the refusal to fail the comm");
	if (!fails_in_time(rc))
		return oob_fail("the bad put left our comm standing after %d s",
				LIMIT_S);
	if (oob_recv(&ok, sizeof(ok)))
		return OOB_FAIL;
	/* acquire: pairs with the engine's release add. */
	if (__atomic_load_n(&sig[0], __ATOMIC_ACQUIRE) ||
	    data[WIN - 1] || stale[0])
		return oob_fail("the bad put changed our memory");
	if (__atomic_load_n(&sig[1], __ATOMIC_ACQUIRE) < ok)
		return oob_fail("%u good puts reported done, %llu applied", ok,
				(unsigned long long)sig[1]);
	printf("rank 1: comm failed; %u good puts reported done, %llu "
	       "applied\n",
	       ok, (unsigned long long)sig[1]);
	if (oob_barrier())
		return OOB_FAIL;
	zsm_dereg_mr(rc, mh[0]);
	zsm_dereg_mr(rc, mh[1]);
	zsm_close_recv(rc);
	zsm_close_listen(lc);
	zsm_finalize(ctx);
	free(data);
	free(stale);
	free(sig);
	return OOB_PASS;
}

/* The bad put of this case; 0 or the put's error. */
static int bad_put(void *sc, unsigned char *src, const struct wins *w,
		   void **req)
{
	struct zsm_rma_window forged;

	if (which == CASE_STALE)
		return zsm_iput(sc, src, PUT, NULL, &w->stale, 0, &w->sig, 0,
				1, req);
	forged = which == CASE_OUTSIDE ? w->data : w->sig;
	if (which == CASE_SIGNAL) {
		forged.id ^= 0x5a5a0000;
		return zsm_iput(sc, NULL, 0, NULL, NULL, 0, &forged, 0, 1,
				req);
	}
	forged.size += 2 * PUT;
	return zsm_iput(sc, src, PUT, NULL, &forged, WIN - 100, &w->sig, 0, 1,
			req);
}

static int initiator(void)
{
	unsigned char *src = malloc(PUT);
	void *ctx, *sc = NULL, *bad = NULL, *reqs[BURST] = {0};
	char handle[ZSM_HANDLE_BYTES];
	unsigned ok = 0;
	struct wins w;
	int ret;

	if (!src)
		return oob_fail("out of memory");
	memset(src, 7, PUT);
	if (zsm_init(&ctx, 0, -1, NULL) || oob_recv(handle, sizeof(handle)))
		return oob_fail("init failed");
	if (core_pair_connect(ctx, handle, &sc))
		return OOB_FAIL;
	if (oob_recv(&w, sizeof(w)))
		return OOB_FAIL;
	ret = bad_put(sc, src, &w, &bad);
	if (ret || !bad)
		return oob_fail("the bad put was not taken: %d", ret);
	/* Right behind it: each is either refused, fails, or applied. */
	for (int i = 0; i < BURST; i++)
		/* In the window's first half: the bad put aims past its end. */
		if (zsm_iput(sc, src, PUT, NULL, &w.data,
			     (uint64_t)i * PUT % (WIN / 2),
			     &w.sig, 8, 1, &reqs[i]) || !reqs[i])
			break;
	ret = wait_req(bad);
	if (ret >= 0)
		return oob_fail("the bad put was reported done");
	for (int i = 0; i < BURST && reqs[i]; i++)
		ok += wait_req(reqs[i]) == 0;
	if (!fails_in_time(sc))
		return oob_fail("our comm still stands %d s after the bad put",
				LIMIT_S);
	printf("rank 0: the bad put gave %d, the comm failed, %u of %d good "
	       "puts reported done\n",
	       ret, ok, BURST);
	/* Our comm stays open until rank 1 heard the refusal. */
	if (oob_send(&ok, sizeof(ok)) || oob_barrier())
		return OOB_FAIL;
	zsm_close_send(sc);
	zsm_finalize(ctx);
	free(src);
	return OOB_PASS;
}

int main(int argc, char **argv)
{
	static const char *const names[] = {"stale", "outside", "signal"};
	int rank;

	for (int i = 0; i < 3; i++)
		if (argc == 3 && !strcmp(argv[1], "--case") &&
		    !strcmp(argv[2], names[i]))
			which = i;
	if (which < 0) {
		fprintf(stderr, "usage: %s --case stale|outside|signal\n",
			argv[0]);
		return 2;
	}
	rank = oob_start(2 * LIMIT_S + 30);
	if (rank < 0)
		return OOB_FAIL;
	return oob_finish(rank ? target() : initiator());
}
