/* SPDX-License-Identifier: MIT */
/*
 * A receive comm closed while the engine holds one of its receives (the
 * endpoint's receive budget full of receives no sender will match: rxm's
 * queue made small, FI_OFI_RXM_RX_SIZE), well after it was made.  Its
 * close is queued behind that receive, which must end at the close
 * (cancelled, as a send held for want of room does): before, it stayed
 * held, and the close waited 5 s for transfers that never come, gave up
 * with a WARN and left the comm behind.  Passes after the close then read
 * the engine's queues, where valgrind sees any use of the freed comm.
 * ZSM_PROXY=inline makes it deterministic: the close's own passes are the
 * only ones.  Every call must succeed, with no WARN.
 * usage: close_held PLUGIN.so
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zsm_client.h"

/* The receive budget with rxm's queue at 64 (half of it: zsm keeps room
 * for control messages), and the receives that fill it: maxRecvs buffers
 * per irecv. */
#define HELD_BUDGET 32
#define HELD_GROUP 8
#define HELD_SIZE 4096
/* Twice ZSM_CONNECT_TIMEOUT_MS and some: the comm's handshake is long
 * past its expiry.  That timeout must still let the handshake finish
 * under valgrind on a loaded machine (100 ms did not, beside two busy
 * loops). */
#define HELD_TIMEOUT_MS "2000"
#define HELD_AGE_US 4200000

#define CHECK(call, what)                                                     \
	do {                                                                  \
		int r_ = (call);                                              \
		if (r_ != ncclSuccess) {                                      \
			printf("FAIL: %s: %s\n", what,                        \
			       zsm_client_result_str(r_));                    \
			return 1;                                             \
		}                                                             \
	} while (0)

int main(int argc, char **argv)
{
	static char buf[(HELD_BUDGET + HELD_GROUP) * HELD_SIZE];
	char handle[128] = {0};
	void *lc = NULL, *sc = NULL, *rc = NULL, *mh = NULL;
	void *req[HELD_BUDGET / HELD_GROUP + 1] = {0};
	struct zsm_client *c;
	struct zsm_client_props props;
	const char *what = "";
	int nreq = HELD_BUDGET / HELD_GROUP + 1;
	unsigned warns;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PLUGIN.so\n", argv[0]);
		return 2;
	}
	setenv("ZSM_PROXY", "inline", 1);
	setenv("ZSM_CE", "0", 1);
	setenv("ZSM_CONNECT_TIMEOUT_MS", HELD_TIMEOUT_MS, 1);
	setenv("FI_OFI_RXM_RX_SIZE", "64", 1);
	CHECK(zsm_client_open(argv[1], 0, &c), "open");
	CHECK(zsm_client_init(c, 0x636c6f73u), "init");
	CHECK(zsm_client_get_properties(c, 0, &props), "getProperties");
	if (props.max_recvs < HELD_GROUP) {
		printf("SKIP: maxRecvs %d, below %d\n", props.max_recvs,
		       HELD_GROUP);
		return 77;
	}
	CHECK(zsm_client_listen(c, 0, handle, &lc), "listen");
	CHECK(zsm_client_connect_accept(c, 0, handle, lc, &sc, &rc, 30000,
					&what),
	      what);
	CHECK(zsm_client_reg_mr(c, rc, buf, sizeof(buf), NCCL_PTR_HOST, &mh),
	      "regMr");
	/* The budget's worth of receives, then one more, which the engine
	 * holds: no sender ever matches them. */
	for (int i = 0; i < nreq; i++) {
		void *data[HELD_GROUP], *mhs[HELD_GROUP];
		size_t sizes[HELD_GROUP];
		int tags[HELD_GROUP];

		for (int j = 0; j < HELD_GROUP; j++) {
			data[j] = buf + ((size_t)i * HELD_GROUP + (size_t)j) *
						HELD_SIZE;
			sizes[j] = HELD_SIZE;
			tags[j] = i * HELD_GROUP + j;
			mhs[j] = mh;
		}
		CHECK(zsm_client_irecv(c, rc, HELD_GROUP, data, sizes, tags,
				       mhs, &req[i]),
		      "irecv");
		if (!req[i]) {
			printf("FAIL: irecv %d of %d gave no request\n", i + 1,
			       nreq);
			return 1;
		}
	}
	for (int i = 0; i < nreq; i++) {
		int done = 1;

		CHECK(zsm_client_test(c, req[i], &done, NULL), "test");
		if (done) {
			printf("FAIL: receive %d finished with no sender\n", i);
			return 1;
		}
	}
	/* Older than a handshake may get: abandoned, if it were one. */
	usleep(HELD_AGE_US);
	warns = zsm_client_warns();
	CHECK(zsm_client_close_recv(c, rc), "closeRecv");
	if (zsm_client_warns() != warns) {
		printf("FAIL: closeRecv logged %u WARN(s): the held receive "
		       "kept the close waiting\n",
		       zsm_client_warns() - warns);
		return 1;
	}
	/* Passes after the close, which read the engine's queues. */
	for (int i = 0; i < 100; i++)
		(void)zsm_client_progress(c);
	CHECK(zsm_client_close_send(c, sc), "closeSend");
	CHECK(zsm_client_close_listen(c, lc), "closeListen");
	CHECK(zsm_client_finalize(c), "finalize");
	if (zsm_client_warns() != warns) {
		printf("FAIL: %u WARN(s) after the close\n",
		       zsm_client_warns() - warns);
		return 1;
	}
	zsm_client_close(c);
	printf("PASS: a comm closed behind a held receive: closed at once, "
	       "nothing used after it\n");
	return 0;
}
