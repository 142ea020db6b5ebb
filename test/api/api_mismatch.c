/* SPDX-License-Identifier: MIT */
/*
 * mismatch: ranks whose collectives do not match must all fail with
 * -EPROTO (docs/api.md, "Mismatched calls"), not return success with
 * wrong data, and not hang.  First three matched AllGathers of different
 * sizes (4096, 8192 and 0 bytes per rank: sizes may change from call to
 * call, and each call's word replaces the one two calls before), whose
 * bytes are checked; then one call where rank 0 differs from the others:
 *   count  rank 0 gathers 4096 bytes per rank, the others 8192;
 *   kind   rank 0 calls AlltoAll of 4096 bytes per peer, the others
 *          AllGather of 4096;
 *   zero   rank 0 gathers 0 bytes, the others 4096.
 * The last rank comes to that call a second late, so that the others
 * have usually failed and destroyed their communicators before it calls
 * (its puts to them then fail): it must still see the mismatch, whose
 * Readys it holds, and return -EPROTO, whichever order the ranks run in.
 * Every rank's window has room for the largest call, so that no size
 * check against a peer's window refuses it first.  Every rank must get
 * -EPROTO from that call, then from zsm_comm_get_async_error and from
 * the next AllGather; rank 0, whose count no peer shares, must find no
 * peer's block written into its recvbuff.  ZSM_WAIT_TIMEOUT_MS (meson:
 * 30 s) bounds a call that waits for a Ready that never comes: a
 * -ETIMEDOUT is a failure of the test.
 */
#include "api_ranks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SMALL 4096
#define BIG 8192
#define POISON 0x5a

static unsigned char *buf; /* recv: [0, n * BIG); send: [n * BIG, 3n * BIG) */
static size_t area;

/* An AllGather of blk bytes per rank (out of place), or an AlltoAll
 * when a2a, numbered no. */
static int call(zsm_comm_t comm, int a2a, size_t blk, uint32_t no)
{
	int n = api_opt.nranks, me = api_rank;
	unsigned char *send = buf + area;

	memset(buf, POISON, area);
	for (int j = 0; j < (a2a ? n : 1); j++)
		api_fill(send + (size_t)j * blk, blk,
			 api_seed((uint32_t)me, (uint32_t)j, no, 0xe0), 0);
	api_phase("%s %u of %zu bytes per rank", a2a ? "AlltoAll" : "AllGather",
		  no, blk);
	if (a2a)
		return zsm_all_to_all(send, buf, blk, zsm_uint8, comm, NULL);
	return zsm_all_gather(send, buf, blk, zsm_uint8, comm, NULL);
}

static int matched(zsm_comm_t comm, size_t blk, uint32_t no)
{
	int ret = call(comm, 0, blk, no);

	if (ret)
		API_FAIL("matched AllGather %u of %zu bytes: %d (%s)", no, blk,
			 ret, zsm_strerror(ret));
	for (int r = 0; r < api_opt.nranks; r++)
		if (api_check(buf + (size_t)r * blk, blk,
			      api_seed((uint32_t)r, 0, no, 0xe0), 0) >= 0)
			API_FAIL("matched AllGather %u: block of rank %d is "
				 "wrong",
				 no, r);
	return 0;
}

/* What this rank calls in the mismatched call. */
static int odd_call(zsm_comm_t comm, const char *mode)
{
	int odd = api_rank == 0;

	if (strcmp(mode, "count") == 0)
		return call(comm, 0, odd ? SMALL : BIG, 9);
	if (strcmp(mode, "kind") == 0)
		return call(comm, odd, SMALL, 9);
	return call(comm, 0, odd ? 0 : SMALL, 9);
}

int api_mismatch_run(zsm_comm_t comm)
{
	const char *mode = api_opt.mismatch ? api_opt.mismatch : "count";
	int n = api_opt.nranks, ret, err = 0;
	zsm_window_t w;

	area = (size_t)n * BIG;
	buf = api_alloc(3 * area);
	if (!buf)
		API_FAIL("out of memory");
	if (api_win_pair(comm, buf, 3 * area, &w, NULL, 0, NULL) ||
	    matched(comm, SMALL, 1) || matched(comm, BIG, 2) ||
	    matched(comm, 0, 3))
		return 1;
	if (api_rank == n - 1)
		sleep(1);
	ret = odd_call(comm, mode);
	if (ret != -EPROTO)
		API_FAIL("mismatched call (%s): returned %d (%s), want -EPROTO",
			 mode, ret, zsm_strerror(ret));
	/* Past its own block ([0, SMALL), copied locally). */
	if (api_rank == 0)
		for (size_t i = SMALL; i < area; i++)
			if (buf[i] != POISON)
				API_FAIL("mismatched call (%s): byte %zu of "
					 "rank 0's recvbuff was written",
					 mode, i);
	if (zsm_comm_get_async_error(comm, &err) || err != -EPROTO)
		API_FAIL("zsm_comm_get_async_error: %d, want -EPROTO", err);
	ret = call(comm, 0, SMALL, 10);
	if (ret != -EPROTO)
		API_FAIL("AllGather after the mismatch: %d (%s), want -EPROTO",
			 ret, zsm_strerror(ret));
	printf("rank %d: mismatched %s: -EPROTO\n", api_rank, mode);
	/* The window goes with the communicator. */
	return 0;
}
