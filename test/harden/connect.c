/* SPDX-License-Identifier: MIT */
/*
 * Cases of connection set-up: abandoned connects (issue 12, finding 2),
 * refusals known at once (2), and peer addresses that are not the
 * endpoint's kind (5).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attacker.h"
#include "harden.h"

#define H_ABANDONED 100
#define H_HANDLE NCCL_NET_HANDLE_MAXSIZE

/* Connect and accept one pair on handle, then one message across. */
static int h_fresh_pair(struct h_ctx *x, const char *after)
{
	void *send = NULL, *recv = NULL;

	H_TRY(h_connect(x, 1, &send, &recv));
	x->send = send;
	x->recv = recv;
	H_OOB(oob_barrier());
	if (h_exchange(x, 70000, 9) != OOB_PASS)
		return oob_fail("a fresh connection after %s carried nothing",
				after);
	return OOB_PASS;
}

/*
 * Connects started and never called again (an abort during set-up) must
 * expire by themselves, however many: today's NCCL retries a connect
 * until it finishes, a job that gives up does not.
 */
int h_case_connect_abandon(int rank, void *arg)
{
	static char handles[H_ABANDONED][H_HANDLE];
	void *listen[H_ABANDONED], *comm;
	struct h_ctx x;

	(void)arg;
	H_TRY(h_open(&x, rank));
	if (rank == 1) {
		for (int i = 0; i < H_ABANDONED; i++)
			H_CALL(zsm_client_listen(x.c, 0, handles[i],
						 &listen[i]));
		H_OOB(oob_send(handles, sizeof(handles)));
	} else {
		H_OOB(oob_recv(handles, sizeof(handles)));
		/* Called until each is under way (zsm keeps that in the
		 * handle, bytes 20..23), then left. */
		for (int i = 0; i < H_ABANDONED; i++) {
			uint32_t started = 0;
			uint64_t t0 = zsm_client_now_ns();

			do {
				comm = NULL;
				H_CALL(zsm_client_connect(x.c, 0, handles[i],
							  &comm));
				memcpy(&started, handles[i] + 20,
				       sizeof(started));
			} while (!started && !comm &&
				 zsm_client_now_ns() - t0 < H_NS(5000));
		}
	}
	H_OOB(oob_barrier());
	H_TRY(h_fresh_pair(&x, "100 abandoned connects"));
	if (rank == 1)
		for (int i = 0; i < H_ABANDONED; i++)
			H_CALL(zsm_client_close_listen(x.c, listen[i]));
	return h_teardown(&x);
}

/* Rank 0: connect on handle must fail, and within limit_ms. */
static int h_refused(struct h_ctx *x, void *handle, const char *what,
		     int limit_ms)
{
	uint64_t t0 = zsm_client_now_ns();
	void *comm = NULL;
	int r;

	do
		r = zsm_client_connect(x->c, 0, handle, &comm);
	while (r == ncclSuccess && !comm &&
	       zsm_client_now_ns() - t0 < H_NS(60000));
	H_EXPECT(r != ncclSuccess,
		 "connect to %s %s", what,
		 comm ? "succeeded" : "still pending after 60 s");
	H_EXPECT(zsm_client_now_ns() - t0 < H_NS(limit_ms),
		 "connect to %s took %.1f s to fail (%s), although the peer "
		 "refused at once",
		 what, (double)(zsm_client_now_ns() - t0) / 1e9,
		 zsm_client_result_str(r));
	return OOB_PASS;
}

/* A child that listens, hands its handle up, and is gone. */
static int h_dead_listener(char *handle)
{
	int fds[2], status;
	pid_t pid;

	H_EXPECT(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0,
		 "socketpair");
	pid = fork();
	H_EXPECT(pid >= 0, "fork");
	if (pid == 0) {
		struct h_ctx c;
		void *listen;
		char h[H_HANDLE] = {0};

		close(fds[0]);
		if (h_open(&c, 1) == OOB_PASS &&
		    zsm_client_listen(c.c, 0, h, &listen) == ncclSuccess)
			(void)!write(fds[1], h, sizeof(h));
		_exit(0);
	}
	close(fds[1]);
	H_EXPECT(read(fds[0], handle, H_HANDLE) == H_HANDLE,
		 "the dying listener gave no handle");
	close(fds[0]);
	waitpid(pid, &status, 0);
	return OOB_PASS;
}

/*
 * A listener that is closed (in a process with nothing else open), a
 * nonce that is not the listener's and a listener whose process is gone
 * all refuse at once: the connect must not take the whole connect
 * timeout (30 s by default).
 */
int h_case_refused_fast(int rank, void *arg)
{
	char closed[H_HANDLE] = {0}, wrong[H_HANDLE] = {0};
	char dead[H_HANDLE] = {0};
	struct h_ctx x;
	void *listen;

	(void)arg;
	/* The dying listener is forked before this process loads the
	 * plugin: a child of an initialised plugin may not use it. */
	if (rank == 1)
		H_TRY(h_dead_listener(dead));
	H_TRY(h_open(&x, rank));
	if (rank == 1) {
		/* Nothing else open here while rank 0 tries the closed
		 * listener: the refusal must not wait for other traffic. */
		H_CALL(zsm_client_listen(x.c, 0, closed, &listen));
		H_CALL(zsm_client_close_listen(x.c, listen));
		H_OOB(oob_send(closed, sizeof(closed)));
		H_OOB(oob_barrier());
		H_CALL(zsm_client_listen(x.c, 0, wrong, &listen));
		/* The nonce (bytes 12..15) of another listener. */
		wrong[12] ^= 0x5a;
		H_OOB(oob_send(wrong, sizeof(wrong)));
		H_OOB(oob_send(dead, sizeof(dead)));
		H_OOB(oob_barrier());
		H_CALL(zsm_client_close_listen(x.c, listen));
	} else {
		H_OOB(oob_recv(closed, sizeof(closed)));
		H_TRY(h_refused(&x, closed, "a closed listener", 10000));
		H_OOB(oob_barrier());
		H_OOB(oob_recv(wrong, sizeof(wrong)));
		H_OOB(oob_recv(dead, sizeof(dead)));
		H_TRY(h_refused(&x, wrong, "a listener under another nonce",
				10000));
		H_TRY(h_refused(&x, dead, "a listener whose process is gone",
				10000));
		H_OOB(oob_barrier());
	}
	return h_teardown(&x);
}

/*
 * Addresses of another family than the endpoint's (0, which breaks
 * libfabric 1.17's address vector), from a handle and from a connection
 * request: refused, and every later connect and accept of the process
 * still works.
 */
int h_case_bad_address(int rank, void *arg)
{
	char handle[H_HANDLE] = {0}, bad[H_HANDLE];
	struct h_attacker *a = NULL;
	unsigned char req[256];
	struct h_victim v;
	struct h_ctx x;
	void *listen = NULL, *comm = NULL;
	size_t len;

	(void)arg;
	H_TRY(h_open(&x, rank));
	if (rank == 1) {
		H_CALL(zsm_client_listen(x.c, 0, handle, &listen));
		H_OOB(oob_send(handle, sizeof(handle)));
	} else {
		H_OOB(oob_recv(handle, sizeof(handle)));
		/* sa_family 0: libfabric 1.17's address vector takes it, says
		 * it inserted nothing, and crashes or fails on the next insert. */
		memcpy(bad, handle, sizeof(bad));
		bad[32] = 0;
		bad[33] = 0;
		H_EXPECT(zsm_client_connect(x.c, 0, bad, &comm) != ncclSuccess ||
				 !comm,
			 "connect with address family 0 succeeded");
		/* The same in a connection request to the live listener. */
		h_victim_from_handle(&v, handle);
		H_EXPECT(!h_attacker_open(&a, &v), "no attacker endpoint");
		len = h_attacker_conn_req(a, &v, req, 4242, (uint32_t)getpid(),
					  -1, 0, 77);
		H_EXPECT(len, "unknown wire version %u", v.version);
		req[h_attacker_req_addr_offset(v.version)] = 0;
		H_EXPECT(!h_attacker_ctrl(a, v.listen_id, 1, req, len),
			 "sending the request");
	}
	H_OOB(oob_barrier());
	if (rank == 1)
		H_CALL(zsm_client_close_listen(x.c, listen));
	H_TRY(h_fresh_pair(&x, "addresses of the wrong family"));
	h_attacker_close(a);
	return h_teardown(&x);
}
