/* SPDX-License-Identifier: MIT */
/*
 * kill: rank --victim dies (_exit, no goodbye) while the others still need
 * it, and every survivor must get an error, not a hang and not a success:
 *   between  after the first AllGather, before the second;
 *   during   a thread of the victim exits a few milliseconds into its
 *            second AllGather (make --counts large enough to be mid-way);
 *   wait     after one AllGather the survivors wait for a signal from the
 *            victim, which never sends it.
 * A survivor calls AllGather (up to --calls times) until one fails; calls
 * that succeed must bring the right bytes.  Once one fails, the
 * communicator must report an error through zsm_comm_get_async_error and
 * refuse the next AllGather, put, signal and wait with that error; then
 * zsm_comm_destroy must return.  A process that dies is seen as dead
 * (docs/api.md, "Failures"), so that error must not be the wait timeout's
 * -ETIMEDOUT: ZSM_WAIT_TIMEOUT_MS (the parent's default: 60 s) only bounds
 * how long a regression takes to say so, and the parent's deadline
 * catches a call that never returns.
 */
#include "api_ranks.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void *die_soon(void *arg)
{
	struct timespec ts = {0, 5 * 1000 * 1000};

	(void)arg;
	nanosleep(&ts, NULL);
	/* The whole process, in the middle of whatever the main thread
	 * does. */
	_exit(API_VICTIM_EXIT);
	return NULL;
}

static int gather(zsm_comm_t comm, unsigned char *buf, size_t count, int k,
		  int *ret)
{
	int n = api_opt.nranks, me = api_rank;

	memset(buf, 0x5a, (size_t)n * count);
	api_fill(buf + (size_t)me * count, count,
		 api_seed((uint32_t)me, (uint32_t)k, 0xd0, 0), 0);
	api_phase("AllGather %d", k);
	*ret = zsm_all_gather(buf + (size_t)me * count, buf, count, zsm_uint8,
			      comm, NULL);
	if (*ret)
		return 0;
	for (int r = 0; r < n; r++)
		if (api_check(buf + (size_t)r * count, count,
			      api_seed((uint32_t)r, (uint32_t)k, 0xd0, 0),
			      0) >= 0)
			API_FAIL("AllGather %d succeeded with other bytes from "
				 "rank %d",
				 k, r);
	return 0;
}

static int victim(zsm_comm_t comm, unsigned char *buf, size_t count)
{
	const char *mode = api_opt.kill_mode;
	pthread_t t;
	int ret;

	if (gather(comm, buf, count, 0, &ret) || ret)
		API_FAIL("the victim's first AllGather: %s",
			 ret ? zsm_strerror(ret) : "bad bytes");
	printf("rank %d: dies now (%s)\n", api_rank, mode);
	fflush(stdout);
	if (strcmp(mode, "between") == 0)
		_exit(API_VICTIM_EXIT);
	if (strcmp(mode, "wait") == 0) {
		/* Long enough that the survivors are waiting. */
		struct timespec ts = {0, 300 * 1000 * 1000};

		nanosleep(&ts, NULL);
		_exit(API_VICTIM_EXIT);
	}
	if (pthread_create(&t, NULL, die_soon, NULL))
		API_FAIL("pthread_create");
	for (int k = 1; k < api_opt.calls; k++)
		(void)gather(comm, buf, count, k, &ret);
	/* All done before the thread woke: it ends us anyway. */
	for (;;)
		pause();
}

int api_kill_run(zsm_comm_t comm)
{
	int n = api_opt.nranks, me = api_rank, v = api_opt.victim;
	/* A live peer where there is one (2 ranks: the victim). */
	int other = (me + 1) % n == v ? (me + 2) % n : (me + 1) % n;
	int wait_mode = strcmp(api_opt.kill_mode, "wait") == 0;
	size_t count = api_opt.counts[0] ? api_opt.counts[0] : 4096;
	unsigned char *buf = api_alloc((size_t)n * count);
	zsm_wait_signal_desc_t d = {.op_cnt = 1, .peer = v};
	int ret = 0, err = 0, k, qret;
	zsm_window_t win;
	double t0;

	if (other == me)
		other = v;
	if (strcmp(api_opt.kill_mode, "between") &&
	    strcmp(api_opt.kill_mode, "during") && !wait_mode)
		API_FAIL("unknown --kill-mode %s", api_opt.kill_mode);
	if (!buf)
		API_FAIL("out of memory");
	api_phase("registering a window");
	if (api_win_pair(comm, buf, (size_t)n * count, &win, NULL, 0, NULL))
		return 1;
	if (me == v)
		return victim(comm, buf, count);
	t0 = api_now_ms();
	for (k = 0; k < (wait_mode ? 1 : api_opt.calls); k++) {
		t0 = api_now_ms();
		if (gather(comm, buf, count, k, &ret))
			return 1;
		if (ret)
			break;
	}
	if (!ret && wait_mode) {
		t0 = api_now_ms();
		api_phase("waiting for the victim's signal");
		ret = zsm_wait_signal(1, &d, comm, NULL);
	}
	if (!ret)
		API_FAIL("every call succeeded though rank %d died", v);
	printf("rank %d: %s %d failed after %.0f ms: %d (%s)\n", me,
	       wait_mode && k == 1 ? "the wait after AllGather" : "AllGather",
	       k, api_now_ms() - t0, ret, zsm_strerror(ret));
	qret = zsm_comm_get_async_error(comm, &err);
	if (!err)
		API_FAIL("zsm_comm_get_async_error returned %d and no error "
			 "after a call failed with %d",
			 qret, ret);
	if (err == -ETIMEDOUT)
		API_FAIL("the communicator failed by ZSM_WAIT_TIMEOUT_MS, not "
			 "because rank %d died",
			 v);
	/* Each refused at once with the communicator's error. */
	api_phase("calls on the failed communicator");
	ret = zsm_all_gather(buf + (size_t)me * count, buf, count, zsm_uint8,
			     comm, NULL);
	if (ret != err)
		API_FAIL("an AllGather on the failed comm returned %d, want "
			 "its error %d",
			 ret, err);
	ret = zsm_put_signal(buf, 1, zsm_uint8, other, win, 0, 0, 0, 0, comm,
			     NULL);
	if (ret != err)
		API_FAIL("a put to live rank %d on the failed comm returned "
			 "%d, want %d",
			 other, ret, err);
	ret = zsm_signal(other, 0, 0, 0, comm, NULL);
	if (ret != err)
		API_FAIL("a signal on the failed comm returned %d, want %d",
			 ret, err);
	d.peer = other;
	ret = zsm_wait_signal(1, &d, comm, NULL);
	if (ret != err)
		API_FAIL("a wait on the failed comm returned %d, want %d", ret,
			 err);
	api_phase("zsm_comm_destroy on the failed communicator");
	t0 = api_now_ms();
	ret = zsm_comm_destroy(comm);
	printf("rank %d: the communicator's error %d (%s); zsm_comm_destroy "
	       "returned %d after %.0f ms: PASS\n",
	       me, err, zsm_strerror(err), ret, api_now_ms() - t0);
	free(buf);
	return 0;
}
