/* SPDX-License-Identifier: MIT */
/*
 * Case "fd_limit" (issue 12, finding 10): a comm runs only with a way to
 * tell that its peer died.  Out of fds (500 comms under ulimit -n 400
 * before this was fixed), a connector whose ce channel got no pidfd never
 * noticed that its receiver died.  Here the connector runs short of fds
 * and keeps a send posted on every comm; the listener is killed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "harden.h"

#define H_COMMS 48
#define H_HANDLE NCCL_NET_HANDLE_MAXSIZE

static int h_open_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 65536; fd++)
		if (fcntl(fd, F_GETFD) != -1)
			n++;
	return n;
}

int h_case_fd_limit(int rank, void *arg)
{
	static char handles[H_COMMS][H_HANDLE];
	/* Large enough that no provider finishes a send alone (eager). */
	static unsigned char bufs[H_COMMS][1 << 20];
	void *listen[H_COMMS], *comm[H_COMMS] = {0}, *req[H_COMMS];
	struct rlimit lim;
	struct h_ctx x;
	uint64_t t0;
	int left, r;

	/* Rank 1 listens and is killed; rank 0 connects and watches. */
	(void)arg;
	H_TRY(h_open(&x, rank));
	if (rank == 1) {
		for (int i = 0; i < H_COMMS; i++)
			H_CALL(zsm_client_listen(x.c, 0, handles[i],
						 &listen[i]));
		H_OOB(oob_send(handles, sizeof(handles)));
	} else {
		H_OOB(oob_recv(handles, sizeof(handles)));
		/* Room for a few comms' fds, not for all of them. */
		H_EXPECT(getrlimit(RLIMIT_NOFILE, &lim) == 0, "getrlimit");
		lim.rlim_cur = (rlim_t)h_open_fds() + 12;
		H_EXPECT(setrlimit(RLIMIT_NOFILE, &lim) == 0, "setrlimit");
	}
	/* Connects and accepts, all of them, however each came out. */
	t0 = zsm_client_now_ns();
	for (left = H_COMMS; left;) {
		H_EXPECT(zsm_client_now_ns() - t0 < H_NS(30000),
			 "%d of %d connections not made in 30 s", left,
			 H_COMMS);
		for (int i = 0; i < H_COMMS; i++) {
			if (comm[i])
				continue;
			r = rank ? zsm_client_accept(x.c, listen[i], &comm[i])
				 : zsm_client_connect(x.c, 0, handles[i],
						      &comm[i]);
			H_EXPECT(r == ncclSuccess, "%s %d: %s",
				 rank ? "accept" : "connect", i,
				 zsm_client_result_str(r));
			left -= comm[i] != NULL;
		}
	}
	if (rank == 0) {
		for (int i = 0; i < H_COMMS; i++)
			H_TRY(h_post_send(&x, comm[i], bufs[i], sizeof(bufs[i]),
					  1, NULL, &req[i]));
	}
	H_OOB(oob_barrier());
	if (rank == 1)
		oob_die();
	/* Every send must fail: nobody will ever take it. */
	t0 = zsm_client_now_ns();
	for (left = H_COMMS; left;) {
		H_EXPECT(zsm_client_now_ns() - t0 < H_NS(20000),
			 "%d of %d comms did not notice in 20 s that their "
			 "peer was killed",
			 left, H_COMMS);
		for (int i = 0; i < H_COMMS; i++) {
			int done = 0;

			if (!req[i])
				continue;
			r = zsm_client_test(x.c, req[i], &done, NULL);
			if (r == ncclSuccess && !done)
				continue;
			H_EXPECT(r != ncclSuccess,
				 "comm %d: a send to a killed peer succeeded",
				 i);
			req[i] = NULL;
			left--;
		}
	}
	for (int i = 0; i < H_COMMS; i++)
		zsm_client_close_send(x.c, comm[i]);
	zsm_client_finalize(x.c);
	zsm_client_close(x.c);
	return OOB_PASS;
}
