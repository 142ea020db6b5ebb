/* SPDX-License-Identifier: MIT */
/*
 * zsm-bench --coll, one rank: AllGather and AlltoAll called through zsm's
 * API, each size's results checked byte-exact and then timed, the
 * medians printed by rank 0; the comm, its windows and buffers set up and
 * closed.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_coll.h"
#include "pattern.h"

/* ----------------------------------------------------------- the calls */

static const char *coll_name(int which)
{
	return which == BENCH_COLL_AG ? "all_gather" : "all_to_all";
}

/* Where a call reads: in place, the own block of recv (AllGather) or recv
 * itself (AlltoAll). */
static unsigned char *coll_sendbuf(struct coll *c, int which, size_t size)
{
	if (!c->o->inplace)
		return c->send;
	return which == BENCH_COLL_AG ? c->recv + (size_t)c->rank * size
				      : c->recv;
}

static int coll_call(struct coll *c, int which, size_t size)
{
	zsm_stream_t s = (zsm_stream_t)c->stream;

	if (which == BENCH_COLL_AG)
		return zsm_all_gather(coll_sendbuf(c, which, size), c->recv,
				      size, zsm_uint8, c->comm, s);
	return zsm_all_to_all(coll_sendbuf(c, which, size), c->recv, size,
			      zsm_uint8, c->comm, s);
}

/* The bytes of the block from rank src to rank dst (-1: AllGather's block
 * of src, the same for every receiver). */
static uint32_t coll_seed(size_t size, int src, int dst)
{
	return bench_seed(size, (long)src * (COLL_MAX_RANKS + 1) + dst + 1);
}

/*
 * One call, untimed, and every byte of recv checked: each block must hold
 * its sender's pattern.  Blocks not yet written are poisoned first, so
 * that a block not delivered shows.
 */
static void coll_verify(struct coll *c, int which, size_t size)
{
	size_t n = (size_t)c->nranks, all = n * size, j;
	const unsigned char *h;
	unsigned char *src = c->stage;
	long bad;
	int r;

	coll_step(c, "writing the check's patterns");
	if (which == BENCH_COLL_AG) {
		/* recv: poison, and in place the own block's pattern. */
		memset(src, 0xCD, all);
		if (c->o->inplace)
			zsm_pattern_fill(src + (size_t)c->rank * size, size,
					 coll_seed(size, c->rank, -1));
		coll_put_bytes(c, c->recv, src, all);
		if (!c->o->inplace) {
			zsm_pattern_fill(src, size,
					 coll_seed(size, c->rank, -1));
			coll_put_bytes(c, c->send, src, size);
		}
	} else {
		/* Block j of what this rank sends is for rank j. */
		for (j = 0; j < n; j++)
			zsm_pattern_fill(src + j * size, size,
					 coll_seed(size, c->rank, (int)j));
		coll_put_bytes(c, c->o->inplace ? c->recv : c->send, src, all);
		if (!c->o->inplace) {
			memset(src, 0xCD, all);
			coll_put_bytes(c, c->recv, src, all);
		}
	}
	coll_settle(c);
	coll_barrier(c);
	coll_step(c, "the checked call");
	r = coll_call(c, which, size);
	if (r)
		coll_die("%s of %zu bytes (checked call) failed: %s (%d)",
			 coll_name(which), size, zsm_strerror(r), r);
	coll_sync(c, "the checked call");
	h = coll_get_bytes(c, c->recv, all);
	for (j = 0; j < n; j++) {
		uint32_t seed = which == BENCH_COLL_AG
					? coll_seed(size, (int)j, -1)
					: coll_seed(size, (int)j, c->rank);

		bad = zsm_pattern_check(h + j * size, size, seed);
		if (bad >= 0)
			coll_die("verify: %s of %zu bytes: byte %ld of the "
				 "block from rank %zu is 0x%02x, expected "
				 "0x%02x",
				 coll_name(which), size, bad, j,
				 h[j * size + (size_t)bad],
				 zsm_pattern_byte(seed, (size_t)bad));
	}
}

static long coll_iters(const struct coll *c, size_t size)
{
	unsigned long long per = (unsigned long long)size *
				 (unsigned long long)(c->nranks - 1);
	unsigned long long n;

	if (c->o->iters)
		return c->o->iters;
	n = COLL_BYTES_BUDGET / (per ? per : 1);
	if (n < COLL_MIN_ITERS)
		n = COLL_MIN_ITERS;
	return (long)(n > COLL_DEFAULT_MAX_ITERS ? COLL_DEFAULT_MAX_ITERS : n);
}

static int coll_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * warmup untimed calls, then iters calls each timed on its own, from a
 * barrier: the call and its stream's completion.  A call's time is that
 * of the slowest rank (the collective is done when every rank has its
 * data); the row is the median of those.
 */
static void coll_run_size(struct coll *c, int which, size_t size)
{
	long iters = coll_iters(c, size), warmup, i;
	size_t slot = (size_t)iters * sizeof(double);
	double med, gbps, algbw, *all = (double *)(void *)c->ctl;
	char sz[32];
	int r;

	warmup = c->o->warmup >= 0 ? c->o->warmup
				   : (iters / 10 > 2 ? iters / 10 : 2);
	if (c->o->verify)
		coll_verify(c, which, size);
	coll_step(c, "the warm-up calls");
	for (i = 0; i < warmup; i++) {
		r = coll_call(c, which, size);
		if (r)
			coll_die("%s of %zu bytes failed: %s (%d)",
				 coll_name(which), size, zsm_strerror(r), r);
		coll_sync(c, "a warm-up call");
	}
	coll_step(c, "the timed calls");
	for (i = 0; i < iters; i++) {
		double t0;

		coll_barrier(c);
		t0 = coll_now();
		r = coll_call(c, which, size);
		if (r)
			coll_die("%s of %zu bytes failed: %s (%d)",
				 coll_name(which), size, zsm_strerror(r), r);
		coll_sync(c, "a timed call");
		c->t[i] = coll_now() - t0;
	}
	coll_step(c, "gathering the times");
	memcpy(c->ctl + (size_t)c->rank * slot, c->t, slot);
	coll_ctl_gather(c, slot, "gathering the times");
	if (c->rank != 0)
		return;
	for (i = 0; i < iters; i++)
		for (int k = 1; k < c->nranks; k++)
			if (all[(size_t)k * (size_t)iters + (size_t)i] > all[i])
				all[i] = all[(size_t)k * (size_t)iters +
					     (size_t)i];
	qsort(all, (size_t)iters, sizeof(double), coll_cmp_double);
	med = iters % 2 ? all[iters / 2]
			: (all[iters / 2 - 1] + all[iters / 2]) / 2;
	if (med <= 0)
		med = 1e-9;
	gbps = (double)size * (double)(c->nranks - 1) / med / 1e9;
	algbw = (double)size * (double)c->nranks / med / 1e9;
	printf("%-10s  %8s  %10.4f  %10.4f  %10.2f\n", coll_name(which),
	       bench_size_str(size, sz, sizeof(sz)), gbps, algbw, med * 1e6);
	fflush(stdout);
	if (c->csv) {
		fprintf(c->csv, "zsm-api,%s,%zu,%.6f,%.3f,%s\n",
			coll_name(which), size, gbps, med * 1e6, c->mem);
		fflush(c->csv);
	}
}

/* ------------------------------------------------------- set-up, close */

static size_t coll_max_size(const struct bench_opts *o)
{
	size_t max = 0;

	for (int i = 0; i < o->nsizes; i++)
		if (o->sizes[i] > max)
			max = o->sizes[i];
	return max;
}

/* Windows in the same order on every rank: control, recv, send. */
static void coll_setup(struct coll *c)
{
	size_t max = coll_max_size(c->o), n = (size_t)c->nranks;
	long most = 0;

	for (int i = 0; i < c->o->nsizes; i++)
		if (coll_iters(c, c->o->sizes[i]) > most)
			most = coll_iters(c, c->o->sizes[i]);
	if (max > SIZE_MAX / n)
		coll_die("--sizes: %zu bytes x %d ranks does not fit in memory",
			 max, c->nranks);
	c->t = calloc((size_t)most, sizeof(double));
	c->ctl_slot = (size_t)most * sizeof(double);
	c->ctl = coll_alloc_host(n * c->ctl_slot);
	c->recv_size = n * max;
	/* AlltoAll sends a block to each rank; AllGather one block. */
	c->send_size = c->o->inplace ? 0
			: c->o->coll & BENCH_COLL_A2A ? n * max
						      : max;
	c->stage = coll_alloc_host(c->recv_size);
	if (!c->t)
		coll_die("out of memory");
	c->recv = coll_alloc(c, c->recv_size);
	if (c->send_size)
		c->send = coll_alloc(c, c->send_size);
	coll_step(c, "registering the windows");
	COLL_CALL(zsm_comm_window_register(c->comm, c->ctl, n * c->ctl_slot,
					   &c->win_ctl, 0));
	COLL_CALL(zsm_comm_window_register(c->comm, c->recv,
					   c->recv_size ? c->recv_size : 1,
					   &c->win_recv, 0));
	if (c->send)
		COLL_CALL(zsm_comm_window_register(c->comm, c->send,
						   c->send_size ? c->send_size
								: 1,
						   &c->win_send, 0));
}

static void coll_close(struct coll *c)
{
	coll_step(c, "closing");
	if (c->win_send)
		COLL_CALL(zsm_comm_window_deregister(c->comm, c->win_send));
	if (c->win_recv)
		COLL_CALL(zsm_comm_window_deregister(c->comm, c->win_recv));
	if (c->win_ctl)
		COLL_CALL(zsm_comm_window_deregister(c->comm, c->win_ctl));
	COLL_CALL(zsm_comm_destroy(c->comm));
	c->comm = NULL;
	coll_free(c, c->recv);
	coll_free(c, c->send);
	free(c->ctl);
	free(c->stage);
	free(c->t);
	if (c->gpu >= 0) {
		if (c->stream && c->cu.stream_destroy(c->stream))
			fprintf(stderr, "zsm-bench: rank %d: cuStreamDestroy "
					"failed\n",
				c->rank);
		zsm_cuda_drv_close(&c->cu);
	}
	alarm(0);
}

static void coll_header(struct coll *c)
{
	const struct bench_opts *o = c->o;
	char iters[48];
	int v = 0;

	zsm_get_version(&v);
	if (o->iters)
		snprintf(iters, sizeof(iters), "%ld timed calls", o->iters);
	else
		snprintf(iters, sizeof(iters), "timed calls per size: %d..%d",
			 COLL_MIN_ITERS, COLL_DEFAULT_MAX_ITERS);
	printf("# zsm-bench: zsm API (library %d.%d, header %d.%d), %d ranks "
	       "%s, hosts %s, memory %s, %s, %s, %s%s\n",
	       v / 100, v % 100, ZSM_API_VERSION / 100, ZSM_API_VERSION % 100,
	       c->nranks, c->forked ? "forked on this host" : "from a launcher",
	       o->coll_hosts ? o->coll_hosts : "as the environment says",
	       c->mem, o->inplace ? "in place" : "out of place",
	       c->gpu < 0 ? "host-memory mode"
	       : o->poll == BENCH_POLL_NAP
		       ? "calls on a CUDA stream (the host naps between "
			 "queries)"
		       : "calls on a CUDA stream",
	       iters, o->verify ? "" : ", no verify");
	printf("# size: bytes per rank (all_gather) or per block to each "
	       "peer (all_to_all); usec: median over the timed calls of the "
	       "slowest rank's call; GB/s: bytes a rank receives per second, "
	       "(n-1) x size / usec; algGB/s: n x size / usec\n");
	printf("%-10s  %8s  %10s  %10s  %10s\n", "coll", "size", "GB/s",
	       "algGB/s", "usec");
	fflush(stdout);
	if (c->csv) {
		fprintf(c->csv, "plugin,test,size,gbps,usec,mem\n");
		fflush(c->csv);
	}
}

/* One rank's whole run; returns its exit status. */
int coll_rank_main(struct coll *c, zsm_unique_id_t *id)
{
	static const int order[] = { BENCH_COLL_AG, BENCH_COLL_A2A };

	coll_step(c, "joining the comm");
	if (c->gpu >= 0)
		coll_cuda_open(c);
	if (id) {
		COLL_CALL(zsm_comm_init_rank(&c->comm, c->nranks, *id,
					     c->rank));
	} else {
		COLL_CALL(zsm_comm_init_env(&c->comm));
		COLL_CALL(zsm_comm_user_rank(c->comm, &c->rank));
		COLL_CALL(zsm_comm_count(c->comm, &c->nranks));
		if (c->nranks < 2)
			coll_die("--coll needs 2 or more ranks; the launcher "
				 "gave %d",
				 c->nranks);
	}
	coll_setup(c);
	if (c->rank == 0) {
		if (c->o->csv) {
			c->csv = fopen(c->o->csv, "w");
			if (!c->csv)
				coll_die("cannot write %s: %s", c->o->csv,
					 strerror(errno));
		}
		coll_header(c);
	}
	for (int t = 0; t < 2; t++) {
		if (!(c->o->coll & order[t]))
			continue;
		for (int i = 0; i < c->o->nsizes; i++)
			coll_run_size(c, order[t], c->o->sizes[i]);
	}
	coll_barrier(c);
	coll_close(c);
	if (c->csv)
		fclose(c->csv);
	return 0;
}
