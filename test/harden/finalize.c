/* SPDX-License-Identifier: MIT */
/*
 * Case "finalize_queued" (issue 32, finding 5): finalize with comms left
 * open and 400 sends queued but never tested.  NCCL may free a send's
 * buffer once it no longer cares for the send (an aborted communicator),
 * so finalize must cancel what is still queued instead of posting it.
 * The sender frees the buffer of every send that no engine could post
 * before finalize (all but the early allowance) before it calls
 * finalize: a send posted from there reads freed memory (ASan's
 * report).  With ZSM_PROXY=inline nothing
 * drives the engine before finalize, so no send may reach the receiver
 * at all, which the plain build checks too; with the thread, the sends it
 * posted before are the sender's to deliver, and ASan checks the rest.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harden.h"

#define F_SENDS 400
#define F_SIZE 1024
/* A comm takes 256 requests in flight: two comms. */
#define F_COMMS 2

/*
 * The early allowance (ZSM_EARLY_MSGS, the receiver's): the sends of a
 * comm that its engine may post before any receive is posted.  The
 * thread may post those at any moment, so their bytes stay valid; every
 * later one waits for a GRANT that no receive posted before the
 * sender's finalize can give.
 */
static int h_finalize_early(void)
{
	const char *e = getenv("ZSM_EARLY_MSGS");

	return e && *e ? atoi(e) : 4;
}

static int h_finalize_sender(struct h_ctx *x, void *const *comms)
{
	int keep = h_finalize_early() * F_COMMS;
	unsigned char *early = malloc((size_t)keep * F_SIZE);
	unsigned char *late = malloc((size_t)(F_SENDS - keep) * F_SIZE);
	void *req;

	H_EXPECT(early && late && keep < F_SENDS, "out of memory");
	memset(early, 0x5a, (size_t)keep * F_SIZE);
	memset(late, 0x5a, (size_t)(F_SENDS - keep) * F_SIZE);
	for (int i = 0; i < F_SENDS; i++) {
		unsigned char *at = i < keep ? early + (size_t)i * F_SIZE
					     : late + (size_t)(i - keep) * F_SIZE;

		H_TRY(h_post_send(x, comms[i % F_COMMS], at, F_SIZE, 1 + i,
				  NULL, &req));
	}
	/* Gone, as the caller's frame or buffer is once it gave up. */
	free(late);
	H_CALL(zsm_client_finalize(x->c));
	zsm_client_close(x->c);
	x->c = NULL;
	free(early);
	return OOB_PASS;
}

/* Receives for every send, once the sender finalized: how many came
 * (a comm may fail as its peer's endpoint goes: ce's does). */
static int h_finalize_arrivals(struct h_ctx *x, void *const *comms,
			       int *arrived)
{
	static unsigned char buf[F_SENDS][F_SIZE];
	void *req[F_SENDS];
	uint64_t t0;

	*arrived = 0;
	t0 = zsm_client_now_ns();
	for (int i = 0; i < F_SENDS; i++) {
		void *data = buf[i], *mh = NULL;
		size_t size = F_SIZE;
		int tag = 1 + i;

		do {
			req[i] = NULL;
			if (zsm_client_irecv(x->c, comms[i % F_COMMS], 1, &data,
					     &size, &tag, &mh, &req[i]))
				break; /* the comm failed: nothing comes */
			H_EXPECT(zsm_client_now_ns() - t0 < H_NS(20000),
				 "irecv kept returning a NULL request");
		} while (!req[i]);
	}
	t0 = zsm_client_now_ns();
	while (zsm_client_now_ns() - t0 < H_NS(1500)) {
		for (int i = 0; i < F_SENDS; i++) {
			int done = 0, r;

			if (!req[i])
				continue;
			/* A receive the comm's failure ended got nothing. */
			r = zsm_client_test(x->c, req[i], &done, NULL);
			if (done || r != ncclSuccess) {
				req[i] = NULL;
				*arrived += r == ncclSuccess;
			}
		}
	}
	return OOB_PASS;
}

int h_case_finalize_queued(int rank, void *arg)
{
	const char *proxy = getenv("ZSM_PROXY");
	int inline_mode = proxy && !strcmp(proxy, "inline");
	void *send[F_COMMS] = {NULL}, *recv[F_COMMS] = {NULL};
	struct h_ctx x;
	int arrived;

	(void)arg;
	H_TRY(h_setup(&x, rank));
	send[0] = x.send;
	recv[0] = x.recv;
	for (int i = 1; i < F_COMMS; i++)
		H_TRY(h_connect(&x, 1, &send[i], &recv[i]));
	if (rank == 0) {
		H_TRY(h_finalize_sender(&x, send));
		H_OOB(oob_barrier());
		return OOB_PASS;
	}
	H_OOB(oob_barrier()); /* the sender finalized */
	H_TRY(h_finalize_arrivals(&x, recv, &arrived));
	printf("# finalize_queued: %d of %d sends arrived after their "
	       "sender's finalize (proxy %s)\n",
	       arrived, F_SENDS, inline_mode ? "inline" : "thread");
	H_EXPECT(!inline_mode || arrived == 0,
		 "%d sends that nothing had posted before finalize arrived: "
		 "finalize posted them",
		 arrived);
	for (int i = 1; i < F_COMMS; i++)
		H_CALL(zsm_client_close_recv(x.c, recv[i]));
	return h_teardown(&x);
}
