/* SPDX-License-Identifier: MIT */
/*
 * Case "fork" (issue 12, finding 4): Python's multiprocessing forks
 * processes that hold an initialised plugin.  The child's calls must fail
 * at once (no deadlock on a lock some other thread held at the fork, no
 * wait for a proxy thread that did not survive it), its finalize and exit
 * must not hang, and nothing it does may disturb the parent's comms, which
 * share its endpoint, sockets and same-host windows.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harden.h"

#define H_FORKS 12

/* In the child: every call fails at once; then finalize, and exit(). */
static void h_child(struct h_ctx *x, int how)
{
	static unsigned char buf[256];
	char handle[NCCL_NET_HANDLE_MAXSIZE] = {0};
	void *req = NULL, *out = NULL;
	int done = 0, bad = 0;

	/* A hang here is the finding: the parent's alarm ends it. */
	if (zsm_client_isend(x->c, x->send ? x->send : x->recv, buf,
			     sizeof(buf), 1, NULL, &req) == ncclSuccess &&
	    req)
		bad |= 1;
	if (zsm_client_listen(x->c, 0, handle, &out) == ncclSuccess)
		bad |= 2;
	if (zsm_client_test(x->c, (void *)0x1, &done, NULL) == ncclSuccess)
		bad |= 4;
	/* Teardown as a child would do it: closes and finalize, then
	 * exit() with its handlers, or _exit(). */
	if (how & 1) {
		if (x->send)
			zsm_client_close_send(x->c, x->send);
		if (x->recv)
			zsm_client_close_recv(x->c, x->recv);
		zsm_client_finalize(x->c);
	}
	if (how & 2)
		exit(bad ? 10 + bad : 0);
	_exit(bad ? 10 + bad : 0);
}

static int h_fork_once(struct h_ctx *x, int round)
{
	int status = 0;
	pid_t pid, w = 0;
	uint64_t t0;

	pid = fork();
	H_EXPECT(pid >= 0, "fork failed");
	if (pid == 0) {
		/* A child left behind by a failed run dies with us. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		h_child(x, round % 4);
	}
	/* The child must be gone well before the case's own limit. */
	t0 = zsm_client_now_ns();
	while ((w = waitpid(pid, &status, WNOHANG)) == 0 &&
	       zsm_client_now_ns() - t0 < H_NS(15000))
		usleep(2000);
	if (w == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return oob_fail("round %d: the forked child (%s) hung for 15 "
				"s",
				round,
				round % 4 & 1 ? "closes and finalize"
					      : "exit only");
	}
	H_EXPECT(WIFEXITED(status),
		 "round %d: the forked child died of signal %d", round,
		 WIFSIGNALED(status) ? WTERMSIG(status) : -1);
	H_EXPECT(WEXITSTATUS(status) == 0,
		 "round %d: a call in the forked child succeeded (mask %d: 1 "
		 "isend, 2 listen, 4 test)",
		 round, WEXITSTATUS(status) - 10);
	return OOB_PASS;
}

int h_case_fork(int rank, void *arg)
{
	struct h_ctx x;

	(void)arg;
	H_TRY(h_setup(&x, rank));
	for (int round = 0; round < H_FORKS; round++) {
		/* Traffic in flight around each fork. */
		H_TRY(h_exchange(&x, 100000 + 4096 * (size_t)round,
				 (unsigned char)round));
		H_TRY(h_fork_once(&x, round));
		/* The parent's comms still work after the child is gone. */
		H_TRY(h_exchange(&x, 3 << 20, (unsigned char)(round + 100)));
		H_OOB(oob_barrier());
	}
	return h_teardown(&x);
}
