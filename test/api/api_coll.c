/* SPDX-License-Identifier: MIT */
/*
 * allgather / alltoall: every count of --counts times every element size
 * of --esizes times every mode of --modes, --iters calls each, back to
 * back on the same two windows.  Each call's data depends on (source
 * rank, destination rank, call number), so a block from the wrong rank, a
 * shifted or stale one does not verify.  Every byte of both windows
 * outside the live ranges holds a pattern of its position that no call
 * may change: a write past either end of recvbuff, or into the send
 * window, shows.
 *
 * Window 0: [guard][recv area][guard][send area (samewin)][guard].
 * recvbuff moves by a few elements from case to case (the same offset on
 * every rank, as the API requires); an out-of-place sendbuff lies at an
 * offset that differs between ranks, in window 1 or in window 0's send
 * area.
 */
#include "api_ranks.h"

#include <stdlib.h>
#include <string.h>

#define GUARD 4096
#define SLACK 64 /* room for the moving offsets */

/* A window and the ranges a call may use; every other byte is guard. */
struct win {
	unsigned char *base;
	size_t size;
	uint32_t gseed;
	zsm_window_t h;
	size_t off[2], len[2];
};

static void win_live(struct win *w, int k, size_t off, size_t len)
{
	/* The last call's range becomes guard again. */
	api_fill(w->base + w->off[k], w->len[k], w->gseed, w->off[k]);
	w->off[k] = off;
	w->len[k] = len;
}

static int win_check(const struct win *w, const char *what)
{
	size_t s[2], e[2], pos = 0;
	int nr = 0;

	/* The live ranges that hold bytes, in address order. */
	for (int k = 0; k < 2; k++)
		if (w->len[k]) {
			s[nr] = w->off[k];
			e[nr++] = w->off[k] + w->len[k];
		}
	if (nr == 2 && s[1] < s[0]) {
		size_t ts = s[0], te = e[0];

		s[0] = s[1];
		e[0] = e[1];
		s[1] = ts;
		e[1] = te;
	}
	for (int k = 0; k <= nr; k++) {
		size_t end = k < nr ? s[k] : w->size;
		long bad = api_check(w->base + pos, end - pos, w->gseed, pos);

		if (bad >= 0)
			API_FAIL("%s: byte %zu of the window, outside the "
				 "call's buffers, was changed",
				 what, pos + (size_t)bad);
		if (k < nr)
			pos = e[k];
	}
	return 0;
}

static int win_make(zsm_comm_t comm, struct win *w, size_t size,
		    uint32_t gseed)
{
	memset(w, 0, sizeof(*w));
	w->size = size;
	w->gseed = gseed;
	w->base = api_alloc(size);
	if (!w->base)
		API_FAIL("out of memory for a %zu-byte window", size);
	api_fill(w->base, size, gseed, 0);
	return api_win_pair(comm, w->base, size, &w->h, NULL, 0, NULL);
}

struct coll_case {
	int a2a;
	size_t count;
	int esize;
	zsm_datatype_t dt;
	int mode;
	int it;
	uint32_t no; /* same on every rank */
};

/* Seed of the block src sends dst in this call (allgather: to all). */
static uint32_t block_seed(const struct coll_case *c, int src, int dst)
{
	return api_seed((uint32_t)src, c->a2a ? (uint32_t)dst : 0xffffu,
			(uint32_t)c->it, c->no);
}

static const char *mode_name(int mode)
{
	return mode == API_MODE_INPLACE ? "in place"
	       : mode == API_MODE_OOP	? "out of place"
					: "out of place, same window";
}

static int one_call(zsm_comm_t comm, struct win *w0, struct win *w1,
		    const struct coll_case *c)
{
	int n = api_opt.nranks, me = api_rank, ret;
	size_t blk = c->count * (size_t)c->esize, total = (size_t)n * blk;
	size_t roff = GUARD + (size_t)c->esize * (c->no % 4);
	size_t slen = c->a2a ? total : blk, soff = 0;
	unsigned char *recv = w0->base + roff, *send = NULL;
	struct win *sw = NULL;
	char what[160];

	snprintf(what, sizeof(what),
		 "%s #%u: count %zu of %d-byte type %d, %s, call %d",
		 c->a2a ? "alltoall" : "allgather", c->no, c->count, c->esize,
		 (int)c->dt, mode_name(c->mode), c->it);
	win_live(w0, 0, roff, total);
	/* Poison: a block the call does not write is not what we check. */
	memset(recv, 0x5a ^ (int)c->no, total);
	if (c->mode == API_MODE_INPLACE) {
		send = c->a2a ? recv : recv + (size_t)me * blk;
	} else {
		/* Offsets differ between ranks: the API allows any. */
		sw = c->mode == API_MODE_OOP ? w1 : w0;
		soff = (c->mode == API_MODE_OOP ? 0 : w0->size - GUARD - slen -
							      SLACK) +
		       (size_t)c->esize * ((size_t)(me + (int)c->no) % 5);
		send = sw->base + soff;
		win_live(sw, c->mode == API_MODE_OOP ? 0 : 1, soff, slen);
	}
	if (c->mode != API_MODE_SAMEWIN)
		win_live(w0, 1, 0, 0);
	if (c->mode != API_MODE_OOP)
		win_live(w1, 0, 0, 0);
	for (int j = 0; j < (c->a2a ? n : 1); j++)
		api_fill(send + (size_t)j * blk, blk, block_seed(c, me, j), 0);
	api_phase("%s", what);
	if (c->a2a)
		ret = zsm_all_to_all(send, recv, c->count, c->dt, comm, NULL);
	else
		ret = zsm_all_gather(send, recv, c->count, c->dt, comm, NULL);
	if (ret)
		API_FAIL("%s: returned %d (%s)", what, ret, zsm_strerror(ret));
	for (int r = 0; r < n; r++) {
		long bad = api_check(recv + (size_t)r * blk, blk,
				     block_seed(c, r, me), 0);

		if (bad >= 0)
			API_FAIL("%s: byte %ld of block %d (from rank %d) "
				 "is %#x, want %#x",
				 what, bad, r, r, recv[(size_t)r * blk + bad],
				 zsm_pattern_byte(block_seed(c, r, me),
						  (size_t)bad));
	}
	if (c->mode != API_MODE_INPLACE)
		for (int j = 0; j < (c->a2a ? n : 1); j++)
			if (api_check(send + (size_t)j * blk, blk,
				      block_seed(c, me, j), 0) >= 0)
				API_FAIL("%s: sendbuff was changed", what);
	if (win_check(w0, what) || win_check(w1, what))
		return 1;
	return 0;
}

int api_coll_run(zsm_comm_t comm)
{
	int a2a = strcmp(api_opt.scenario, "alltoall") == 0;
	int n = api_opt.nranks, calls = 0;
	size_t maxblk = 0, area;
	struct win w0, w1;
	double bytes = 0;
	uint32_t no = 0;

	for (int i = 0; i < api_opt.ncounts; i++)
		for (int k = 0; k < api_opt.nesizes; k++)
			if (api_opt.counts[i] * (size_t)api_opt.esizes[k] >
			    maxblk)
				maxblk = api_opt.counts[i] *
					 (size_t)api_opt.esizes[k];
	area = (size_t)n * maxblk + SLACK;
	api_phase("registering windows");
	if (win_make(comm, &w0,
		     GUARD + area + GUARD +
			     (api_opt.modes & API_MODE_SAMEWIN
				      ? (a2a ? area : maxblk + SLACK) + GUARD
				      : 0),
		     api_seed((uint32_t)api_rank, 0xa0, 0, 0)) ||
	    win_make(comm, &w1, (a2a ? area : maxblk + SLACK) + GUARD,
		     api_seed((uint32_t)api_rank, 0xa1, 0, 0)))
		return 1;
	for (int i = 0; i < api_opt.ncounts; i++)
		for (int k = 0; k < api_opt.nesizes; k++)
			for (int m = 1; m <= API_MODE_SAMEWIN; m <<= 1) {
				struct coll_case c = {
					.a2a = a2a,
					.count = api_opt.counts[i],
					.esize = api_opt.esizes[k],
					.dt = api_dtype(api_opt.esizes[k], i),
					.mode = m,
				};

				if (!(api_opt.modes & m))
					continue;
				c.no = no++;
				for (c.it = 0; c.it < api_opt.iters; c.it++) {
					if (one_call(comm, &w0, &w1, &c))
						return 1;
					calls++;
					bytes += (double)n * (double)c.count *
						 c.esize;
				}
			}
	api_phase("deregistering windows");
	if (api_win_unpair(comm, w0.h, w1.h))
		return 1;
	free(w0.base);
	free(w1.base);
	printf("rank %d: %d %s calls, %.0f bytes received and checked\n",
	       api_rank, calls, api_opt.scenario, bytes);
	return 0;
}
