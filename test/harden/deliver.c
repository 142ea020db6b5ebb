/* SPDX-License-Identifier: MIT */
/*
 * A send reported done must arrive (issue 32, finding 1).  A sender may
 * send a few small messages before their receives are posted (the early
 * allowance); each waits in the receiver's provider for its receive.
 * With the provider's receive queue full of receives for messages that
 * have not come yet (other comms, whose senders are slow, or stopped),
 * the receive for such a message was held in zsm's own queue until room
 * came, and room came only when those other messages did: a send that
 * test() reported done never reached its posted receive, with no error.
 * 500 comm pairs of small messages both ways stopped so for good.  Here
 * 9 comms fill the queue with receives nobody sends to (18432 buffers,
 * more than the 16384 the provider holds), then one message goes on
 * another comm whose receive is posted after them: it must arrive.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harden.h"

/* Comms whose receives nobody sends to, each with every request it
 * may have, each of 8 buffers: 9 x 256 x 8 = 18432 receive buffers. */
#define D_IDLE_COMMS 9
#define D_IDLE_REQS 256
#define D_BUFS 8
#define D_SIZE 64
#define D_TAG 5

/* Every request comm may have, each for D_BUFS buffers in buf. */
static int d_fill(struct h_ctx *x, void *comm, unsigned char *buf, int *n)
{
	void *data[D_BUFS], *mhs[D_BUFS] = {0}, *req;
	size_t sizes[D_BUFS];
	int tags[D_BUFS], r;

	for (int i = 0; i < D_BUFS; i++) {
		data[i] = buf + (size_t)i * D_SIZE;
		sizes[i] = D_SIZE;
		tags[i] = i + 1;
	}
	for (*n = 0; *n < D_IDLE_REQS; ++*n) {
		req = NULL;
		r = zsm_client_irecv(x->c, comm, D_BUFS, data, sizes, tags,
				     mhs, &req);
		H_EXPECT(!r, "irecv on an idle comm returned %s",
			 zsm_client_result_str(r));
		if (!req)
			break; /* the comm's requests are all in use */
	}
	return OOB_PASS;
}

static int d_receiver(struct h_ctx *x, void **idle)
{
	unsigned char *buf = calloc(D_BUFS, D_SIZE), got[D_SIZE] = {0};
	void *req;
	int size = -1, n, total = 0, r;

	H_EXPECT(buf, "out of memory");
	for (int k = 0; k < D_IDLE_COMMS; k++) {
		H_TRY(d_fill(x, idle[k], buf, &n));
		total += n * D_BUFS;
	}
	printf("# deliver_held: %d receive buffers posted on %d idle comms\n",
	       total, D_IDLE_COMMS);
	fflush(stdout);
	H_TRY(h_post_recv(x, x->recv, got, sizeof(got), D_TAG, NULL, &req));
	H_OOB(oob_barrier()); /* the sender sends from here */
	H_OOB(oob_barrier()); /* its test() said the send was done */
	r = zsm_client_wait(x->c, req, &size, H_MS(5000));
	H_EXPECT(r != ZSM_CLIENT_TIMEOUT,
		 "a send its sender's test() reported done has not reached "
		 "its posted receive after 5 s (%d receives of idle comms "
		 "posted before it)",
		 total);
	H_EXPECT(!r, "receive: test returned %s", zsm_client_result_str(r));
	H_EXPECT(size == D_SIZE, "receive: %d bytes, %d sent", size, D_SIZE);
	for (int i = 0; i < D_SIZE; i++)
		H_EXPECT(got[i] == (unsigned char)(i * 3 + 1),
			 "byte %d is 0x%02x", i, got[i]);
	free(buf);
	return OOB_PASS;
}

static int d_sender(struct h_ctx *x)
{
	unsigned char msg[D_SIZE];
	void *req;

	for (int i = 0; i < D_SIZE; i++)
		msg[i] = (unsigned char)(i * 3 + 1);
	H_OOB(oob_barrier());
	H_TRY(h_post_send(x, x->send, msg, sizeof(msg), D_TAG, NULL, &req));
	H_TRY(h_wait(x, req, NULL, "send"));
	H_OOB(oob_barrier());
	return OOB_PASS;
}

int h_case_deliver_held(int rank, void *arg)
{
	void *idle_send[D_IDLE_COMMS] = {0}, *idle_recv[D_IDLE_COMMS] = {0};
	struct h_ctx x;
	int st;

	(void)arg;
	H_TRY(h_setup(&x, rank));
	for (int k = 0; k < D_IDLE_COMMS; k++)
		H_TRY(h_connect(&x, 1, &idle_send[k], &idle_recv[k]));
	st = rank == 0 ? d_sender(&x) : d_receiver(&x, idle_recv);
	if (st != OOB_PASS)
		return st;
	/* The idle comms close with their receives still posted. */
	for (int k = 0; k < D_IDLE_COMMS; k++) {
		if (idle_send[k])
			H_CALL(zsm_client_close_send(x.c, idle_send[k]));
		if (idle_recv[k])
			H_CALL(zsm_client_close_recv(x.c, idle_recv[k]));
	}
	H_OOB(oob_barrier());
	return h_teardown(&x);
}
