/* SPDX-License-Identifier: MIT */
/*
 * putsignal: --iters rounds.  In each, every rank puts to every peer with
 * zsm_put_signal on every context (one or two puts, of sizes from 1 byte
 * to 64 KiB + 3, from odd offsets of its source window), then zero to two
 * zsm_signal alone; each rank waits for what every peer sent it and
 * checks the bytes.  The waits take three shapes by round: one call for
 * every (peer, ctx); one call per (peer, ctx), split in two where more
 * than one signal is due (running totals); and the last context first,
 * after which every earlier put from that peer must be there (the order
 * zsm.h promises), then the others.  Each (round, ctx, source, put) has a
 * slot of its own in the target window, so no put waits for a reader;
 * every byte of the window outside the puts' ranges must keep a pattern of
 * its position.  --big B ends with one put of B bytes to the next rank.
 */
#include "api_ranks.h"

#include <stdlib.h>
#include <string.h>

#define SLOT (65536 + 64)
#define GUARD 4096

static const size_t put_sizes[] = {1, 8, 4097, 65536 + 3, 24, 2048};
#define NSIZES (sizeof(put_sizes) / sizeof(put_sizes[0]))

static int nputs(int rd, int c, int src, int dst)
{
	return 1 + (rd + c + src + dst) % 2;
}

static int nsigs(int rd, int c, int src, int dst)
{
	return (rd + 2 * c + src + dst) % 3;
}

static size_t put_size(int rd, int c, int src, int dst, int k)
{
	return put_sizes[(size_t)(rd * 7 + c * 3 + src + dst * 5 + k) %
			 NSIZES];
}

/* Where the put lands: its slot, a few bytes in. */
static size_t put_off(int rd, int c, int src, int k)
{
	size_t slot = ((size_t)(rd * ZSM_MAX_CTX + c) * (size_t)api_opt.nranks +
		       (size_t)src) * 2 + (size_t)k;

	return slot * SLOT + (size_t)((rd + c + src + k) % 4) * 4;
}

static uint32_t put_seed(int rd, int c, int src, int dst, int k)
{
	return api_seed((uint32_t)src, (uint32_t)dst,
			(uint32_t)(rd * ZSM_MAX_CTX + c), (uint32_t)k + 100u);
}

/* The widest type the size is a whole number of. */
static int put_esize(size_t sz)
{
	return sz % 8 == 0 ? 8 : sz % 4 == 0 ? 4 : sz % 2 == 0 ? 2 : 1;
}

static int send_round(zsm_comm_t comm, unsigned char *local,
		      zsm_window_t win, int rd, int *ops)
{
	int n = api_opt.nranks, me = api_rank, ret;

	for (int c = 0; c < ZSM_MAX_CTX; c++)
		for (int step = 1; step < n; step++) {
			int p = (me + step) % n;

			for (int k = 0; k < nputs(rd, c, me, p); k++) {
				size_t sz = put_size(rd, c, me, p, k);
				int es = put_esize(sz);
				/* Odd source offsets too. */
				unsigned char *src = local + (rd + k) % 8;

				api_fill(src, sz, put_seed(rd, c, me, p, k), 0);
				api_phase("round %d: put_signal %zu bytes to "
					  "rank %d, ctx %d",
					  rd, sz, p, c);
				ret = zsm_put_signal(src, sz / (size_t)es,
						     api_dtype(es, rd + k), p,
						     win, put_off(rd, c, me, k),
						     0, c, 0, comm, NULL);
				if (ret)
					API_FAIL("round %d: zsm_put_signal of "
						 "%zu bytes to rank %d, ctx "
						 "%d: %s",
						 rd, sz, p, c,
						 zsm_strerror(ret));
				(*ops)++;
			}
			for (int s = 0; s < nsigs(rd, c, me, p); s++) {
				api_phase("round %d: signal to rank %d, ctx %d",
					  rd, p, c);
				ret = zsm_signal(p, 0, c, 0, comm, NULL);
				if (ret)
					API_FAIL("round %d: zsm_signal to rank "
						 "%d, ctx %d: %s",
						 rd, p, c, zsm_strerror(ret));
				(*ops)++;
			}
		}
	return 0;
}

/* The bytes peer src put on ctx c this round. */
static int check_puts(const unsigned char *w, int rd, int c, int src,
		      const char *when)
{
	for (int k = 0; k < nputs(rd, c, src, api_rank); k++) {
		size_t sz = put_size(rd, c, src, api_rank, k);
		long bad = api_check(w + put_off(rd, c, src, k), sz,
				     put_seed(rd, c, src, api_rank, k), 0);

		if (bad >= 0)
			API_FAIL("round %d: put %d from rank %d on ctx %d "
				 "(%zu bytes): byte %ld differs %s",
				 rd, k, src, c, sz, bad, when);
	}
	return 0;
}

static int wait_one(zsm_comm_t comm, int peer, int ctx, int op_cnt,
		    int rd)
{
	zsm_wait_signal_desc_t d = {.op_cnt = op_cnt, .peer = peer,
				    .sig_idx = 0, .ctx = ctx};
	int ret;

	api_phase("round %d: waiting for %d signal(s) from rank %d, ctx %d",
		  rd, op_cnt, peer, ctx);
	ret = zsm_wait_signal(1, &d, comm, NULL);
	if (ret)
		API_FAIL("round %d: zsm_wait_signal for %d from rank %d, ctx "
			 "%d: %s",
			 rd, op_cnt, peer, ctx, zsm_strerror(ret));
	return 0;
}

static int recv_round(zsm_comm_t comm, const unsigned char *w, int rd)
{
	int n = api_opt.nranks, me = api_rank, nd = 0, ret;
	zsm_wait_signal_desc_t d[(API_MAXR - 1) * ZSM_MAX_CTX];
	int last = ZSM_MAX_CTX - 1;

	for (int p = 0; p < n; p++) {
		if (p == me)
			continue;
		for (int c = 0; c < ZSM_MAX_CTX; c++) {
			int due = nputs(rd, c, p, me) + nsigs(rd, c, p, me);

			switch (rd % 3) {
			case 0:
				d[nd++] = (zsm_wait_signal_desc_t){
					.op_cnt = due, .peer = p, .ctx = c};
				break;
			case 1:
				if (due > 1 && wait_one(comm, p, c, 1, rd))
					return 1;
				if (wait_one(comm, p, c, due > 1 ? due - 1 : 1,
					     rd))
					return 1;
				break;
			default:
				if (c != last)
					d[nd++] = (zsm_wait_signal_desc_t){
						.op_cnt = due, .peer = p,
						.ctx = c};
			}
		}
		if (rd % 3 == 2) {
			int due = nputs(rd, last, p, me) +
				  nsigs(rd, last, p, me);

			if (wait_one(comm, p, last, due, rd))
				return 1;
			for (int c = 0; c < ZSM_MAX_CTX; c++)
				if (check_puts(w, rd, c, p,
					       "once the signal of a later "
					       "context came"))
					return 1;
		}
	}
	if (nd) {
		api_phase("round %d: one wait for %d (peer, ctx)", rd, nd);
		ret = zsm_wait_signal(nd, d, comm, NULL);
		if (ret)
			API_FAIL("round %d: zsm_wait_signal of %d descs: %s",
				 rd, nd, zsm_strerror(ret));
	}
	for (int p = 0; p < n; p++)
		for (int c = 0; c < ZSM_MAX_CTX && p != me; c++)
			if (check_puts(w, rd, c, p, "after the wait"))
				return 1;
	return 0;
}

/* Every byte of the window: a put's where one landed, guard elsewhere. */
static int check_window(const unsigned char *w, size_t size, uint32_t gseed)
{
	size_t pos = 0;

	for (int rd = 0; rd < api_opt.iters; rd++)
		for (int c = 0; c < ZSM_MAX_CTX; c++)
			for (int src = 0; src < api_opt.nranks; src++)
				for (int k = 0; k < 2; k++) {
					size_t off = put_off(rd, c, src, k);
					size_t sz = src == api_rank ||
							    k >= nputs(rd, c,
								       src,
								       api_rank)
							    ? 0
							    : put_size(rd, c,
								       src,
								       api_rank,
								       k);
					long bad = api_check(w + pos, off - pos,
							     gseed, pos);

					if (bad >= 0)
						API_FAIL("byte %zu of the "
							 "window, outside "
							 "every put, changed",
							 pos + (size_t)bad);
					pos = off + sz;
				}
	if (api_check(w + pos, size - pos, gseed, pos) >= 0)
		API_FAIL("the window's tail changed");
	return 0;
}

static int big_put(zsm_comm_t comm)
{
	int n = api_opt.nranks, me = api_rank, ret;
	int next = (me + 1) % n, prev = (me + n - 1) % n;
	size_t big = api_opt.big, wsize = big + 2 * GUARD;
	unsigned char *w = api_alloc(wsize), *l = api_alloc(big + 8);
	uint32_t gseed = api_seed((uint32_t)me, 0xb0, 0, 0);
	zsm_window_t hw, hl;
	long bad;

	if (!w || !l)
		API_FAIL("out of memory for --big %zu", big);
	api_fill(w, wsize, gseed, 0);
	api_phase("registering the big windows");
	if (api_win_pair(comm, w, wsize, &hw, l, big + 8, &hl))
		return 1;
	api_fill(l + 3, big, api_seed((uint32_t)me, 0xb1, 0, 0), 0);
	api_phase("big put of %zu bytes to rank %d", big, next);
	ret = zsm_put_signal(l + 3, big, zsm_uint8, next, hw, GUARD + 1, 0, 1,
			     0, comm, NULL);
	if (ret)
		API_FAIL("a put of %zu bytes to rank %d: %s", big, next,
			 zsm_strerror(ret));
	if (wait_one(comm, prev, 1, 1, -1))
		return 1;
	bad = api_check(w + GUARD + 1, big, api_seed((uint32_t)prev, 0xb1, 0, 0),
			0);
	if (bad >= 0)
		API_FAIL("byte %ld of %zu from rank %d's big put differs", bad,
			 big, prev);
	if (api_check(w, GUARD + 1, gseed, 0) >= 0 ||
	    api_check(w + GUARD + 1 + big, GUARD - 1, gseed, GUARD + 1 + big) >=
		    0)
		API_FAIL("the big put wrote outside its range");
	api_phase("deregistering the big windows");
	if (api_win_unpair(comm, hw, hl))
		return 1;
	free(w);
	free(l);
	return 0;
}

int api_signal_run(zsm_comm_t comm)
{
	size_t wsize = (size_t)api_opt.iters * ZSM_MAX_CTX *
		       (size_t)api_opt.nranks * 2 * SLOT;
	unsigned char *w = api_alloc(wsize), *local = api_alloc(SLOT + 8);
	uint32_t gseed = api_seed((uint32_t)api_rank, 0xc0, 0, 0);
	zsm_window_t hw, hl;
	int ops = 0;

	if (!w || !local)
		API_FAIL("out of memory");
	api_fill(w, wsize, gseed, 0);
	api_phase("registering windows");
	if (api_win_pair(comm, w, wsize, &hw, local, SLOT + 8, &hl))
		return 1;
	for (int rd = 0; rd < api_opt.iters; rd++)
		if (send_round(comm, local, hw, rd, &ops) ||
		    recv_round(comm, w, rd))
			return 1;
	if (check_window(w, wsize, gseed))
		return 1;
	if (api_opt.big && big_put(comm))
		return 1;
	api_phase("deregistering windows");
	if (api_win_unpair(comm, hw, hl))
		return 1;
	free(w);
	free(local);
	printf("rank %d: %d rounds, %d puts and signals sent, all checked\n",
	       api_rank, api_opt.iters, ops);
	return 0;
}
