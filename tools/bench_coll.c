/* SPDX-License-Identifier: MIT */
/*
 * zsm-bench --coll (the program zsm-bench-coll, which zsm-bench runs for
 * --coll): AllGather and AlltoAll through zsm's public API
 * (include/zsm/zsm.h), called from the shared library as any program
 * would call it, and linked to nothing else of zsm.  N ranks: forked on this host (rank 0 is this process),
 * each with its own ZSM_HOSTID when --hosts asks, or one rank per process
 * started by a launcher (zsm_comm_init_env).  With --gpu each rank's
 * buffers are CUDA memory of its device and every call goes on a CUDA
 * stream, timed from the call to the stream's completion seen by the host;
 * otherwise the comm is in host-memory mode and a call is complete when it
 * returns.  The ranks keep in step, and gather their times, through the
 * API itself: small in-place AllGathers on a host-memory window.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zsm/zsm.h>

#include "bench.h"
#include "common/clock.h"
#include "common/cuda_drv.h"
#include "oob.h"
#include "pattern.h"

/* Ranks one zsm-bench forks; a launcher may start more. */
#define COLL_MAX_FORK 64
#define COLL_MAX_RANKS 4096
/* Timed calls per size: the control window holds one time per call. */
#define COLL_MAX_ITERS 100000
/* Without --iters: calls until a rank has received about this much. */
#define COLL_BYTES_BUDGET (1ull << 30)
#define COLL_MIN_ITERS 10
#define COLL_DEFAULT_MAX_ITERS 1000
#define COLL_PROBE_TIMEOUT_S 60

struct coll {
	const struct bench_opts *o;
	int rank;
	int nranks;
	int forked;
	int gpu; /* CUDA ordinal, or -1: host memory */
	struct zsm_cuda_drv cu;
	zsm_cu_stream stream;
	zsm_comm_t comm;
	zsm_window_t win_ctl;
	zsm_window_t win_recv;
	zsm_window_t win_send;
	/* Host or device addresses, as --gpu says. */
	unsigned char *recv;
	unsigned char *send;
	size_t recv_size;
	size_t send_size;
	/* The control window (host memory): nranks slots of ctl_slot
	 * bytes, for barriers and the gathered times. */
	unsigned char *ctl;
	size_t ctl_slot;
	/* Host copy of a GPU region, for fills and checks. */
	unsigned char *stage;
	double *t;
	FILE *csv;
	char mem[COLL_MAX_FORK * 10];
	const char *doing;
};

static struct coll *coll_g;
/* Fork mode, rank 0: the other ranks, 0 once reaped. */
static pid_t coll_pids[COLL_MAX_FORK];
static int coll_kids_left;

/* Async-signal-safe output: the handlers below use only these. */
static void coll_write(const char *s)
{
	ssize_t r = write(2, s, strlen(s));

	(void)r;
}

static void coll_write_num(long v)
{
	char buf[24];
	int n = sizeof(buf) - 1;

	buf[n] = '\0';
	if (v < 0)
		v = -v;
	do {
		buf[--n] = (char)('0' + v % 10);
		v /= 10;
	} while (v && n > 0);
	coll_write(buf + n);
}

static void coll_kill_kids(void)
{
	for (int i = 0; i < COLL_MAX_FORK; i++)
		if (coll_pids[i] > 0)
			kill(coll_pids[i], SIGKILL);
}

__attribute__((noreturn)) static void coll_vdie(const char *fmt, va_list ap)
{
	fprintf(stderr, "zsm-bench: rank %d: ", coll_g ? coll_g->rank : -1);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	fflush(NULL);
	/* Rank 0 takes the ranks it forked down with it (they would also
	 * die with it, by PR_SET_PDEATHSIG). */
	coll_kill_kids();
	exit(1);
}

__attribute__((format(printf, 1, 2), noreturn)) static void
coll_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	coll_vdie(fmt, ap);
}

/* bench_opts.c's, for a bad option. */
void bench_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	coll_vdie(fmt, ap);
}

#define COLL_CALL(expr)                                                        \
	do {                                                                   \
		int r_ = (expr);                                               \
		if (r_)                                                        \
			coll_die("%s failed: %s (%d)", #expr,                  \
				 zsm_strerror(r_), r_);                        \
	} while (0)

/*
 * Rank 0 of a forked run: a thread that reaps the other ranks, so that one
 * that ended badly ends the run at once, whatever rank 0 is waiting for.
 * A thread rather than a SIGCHLD handler: a handler would interrupt the
 * library's own waits in rank 0 with EINTR.
 */
static void *coll_watch(void *arg)
{
	int st, code;
	pid_t p;

	(void)arg;
	while ((p = waitpid(-1, &st, 0)) != 0) {
		int k;

		if (p < 0) {
			if (errno == EINTR)
				continue;
			break; /* ECHILD: every rank is reaped */
		}
		for (k = 0; k < COLL_MAX_FORK && coll_pids[k] != p; k++)
			;
		if (k == COLL_MAX_FORK)
			continue; /* not a rank */
		coll_pids[k] = 0;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
			/* release: pairs with the acquire load in
			 * coll_forked, which then may exit. */
			__atomic_fetch_sub(&coll_kids_left, 1,
					   __ATOMIC_RELEASE);
			continue;
		}
		code = WIFEXITED(st) && WEXITSTATUS(st) == OOB_SKIP ? OOB_SKIP
								    : 1;
		coll_write("zsm-bench: rank ");
		coll_write_num(k);
		if (WIFEXITED(st)) {
			coll_write(" exited with status ");
			coll_write_num(WEXITSTATUS(st));
		} else {
			coll_write(" was killed by signal ");
			coll_write_num(WTERMSIG(st));
		}
		coll_write("; stopping the other ranks\n");
		coll_kill_kids();
		_exit(code);
	}
	return NULL;
}

static void coll_on_alarm(int sig)
{
	(void)sig;
	coll_write("zsm-bench: rank ");
	coll_write_num(coll_g ? coll_g->rank : -1);
	coll_write(": --timeout (");
	coll_write_num(coll_g ? (long)coll_g->o->step_timeout_s : 0);
	coll_write(" s for each step) ran out in ");
	coll_write(coll_g && coll_g->doing ? coll_g->doing : "the start");
	coll_write("\n");
	coll_kill_kids();
	_exit(1);
}

/* Name the step for the alarm's message and give it --timeout: a bound on
 * the whole step (all the timed calls of a size, say), as zsm-bench's
 * other modes bound each size. */
static void coll_step(struct coll *c, const char *what)
{
	c->doing = what;
	alarm(c->o->step_timeout_s);
}

static double coll_now(void)
{
	return (double)zsm_now_ns() / 1e9;
}

static void *coll_alloc_host(size_t size)
{
	void *p;

	size = (size + 4095) / 4096 * 4096;
	p = aligned_alloc(4096, size ? size : 4096);
	if (!p)
		coll_die("out of memory for %zu bytes", size);
	memset(p, 0, size ? size : 4096);
	return p;
}

/* ---------------------------------------------------------------- CUDA */

static zsm_cu_deviceptr coll_dptr(const unsigned char *p)
{
	return (zsm_cu_deviceptr)(uintptr_t)p;
}

/* --poll nap: a sleep of 1 % of the time waited so far, at most 50 us,
 * after the first 100 us, so that a call's time grows by at most 1 % (or
 * 50 us).  It asks whether a host spinning on cuStreamQuery takes CPU
 * time or driver locks that zsm's own threads need during a long call
 * (on the H200 machine it did not: docs/benchmarking.md). */
static void coll_nap(uint64_t waited_ns)
{
	struct timespec ts = { 0, 0 };
	uint64_t ns = waited_ns / 100;

	if (waited_ns < 100000)
		return;
	ts.tv_nsec = (long)(ns < 50000 ? ns : 50000);
	nanosleep(&ts, NULL);
}

/*
 * Wait for the stream with a deadline, polling: the host sees the end of
 * the work as soon as the driver does, which is what a call's time ends
 * with.  Then the comm must still be sound: a failed comm releases its
 * streams, which would otherwise look like a fast call.
 */
static void coll_sync(struct coll *c, const char *what)
{
	uint64_t t0 = zsm_now_ns(), limit, waited;
	zsm_cu_result r;
	int err = 0;

	limit = (uint64_t)c->o->step_timeout_s * 1000000000ull;
	while (c->stream) {
		r = c->cu.stream_query(c->stream);
		if (r == ZSM_CU_SUCCESS)
			break;
		if (r != ZSM_CU_ERROR_NOT_READY) {
			char why[BENCH_WHY_MAX];

			zsm_cuda_drv_fail(&c->cu, r, why, sizeof(why),
					  "cuStreamQuery after %s", what);
			coll_die("%s", why);
		}
		waited = zsm_now_ns() - t0;
		if (waited > limit)
			coll_die("%s: the stream is not done after %u s",
				 what, c->o->step_timeout_s);
		if (c->o->poll == BENCH_POLL_NAP)
			coll_nap(waited);
	}
	COLL_CALL(zsm_comm_get_async_error(c->comm, &err));
	if (err)
		coll_die("%s: the comm failed: %s (%d)", what,
			 zsm_strerror(err), err);
}

static void coll_cuda_open(struct coll *c)
{
	char why[BENCH_WHY_MAX];

	if (zsm_cuda_drv_open(&c->cu, why, sizeof(why)) ||
	    zsm_cuda_drv_use_device(&c->cu, c->gpu, why, sizeof(why)))
		coll_die("CUDA device %d: %s", c->gpu, why);
	if (c->cu.stream_create(&c->stream, ZSM_CU_STREAM_NON_BLOCKING))
		coll_die("cuStreamCreate on device %d failed", c->gpu);
}

/* Host memory, or device memory of the rank's GPU. */
static unsigned char *coll_alloc(struct coll *c, size_t size)
{
	char why[BENCH_WHY_MAX];
	zsm_cu_deviceptr d = 0;

	if (c->gpu < 0)
		return coll_alloc_host(size);
	if (zsm_cuda_drv_alloc(&c->cu, size ? size : 1, &d, why,
			       sizeof(why)) ||
	    zsm_cuda_drv_memset(&c->cu, d, 0, size ? size : 1, why,
				sizeof(why)))
		coll_die("%s", why);
	return (unsigned char *)(uintptr_t)d;
}

static void coll_free(struct coll *c, unsigned char *p)
{
	char why[BENCH_WHY_MAX];

	if (!p)
		return;
	if (c->gpu < 0)
		free(p);
	else if (zsm_cuda_drv_free(&c->cu, coll_dptr(p), why, sizeof(why)))
		fprintf(stderr, "zsm-bench: rank %d: %s\n", c->rank, why);
}

/* Copy the host bytes at src to p (host or device). */
static void coll_put_bytes(struct coll *c, unsigned char *p,
			   const unsigned char *src, size_t len)
{
	char why[BENCH_WHY_MAX];

	if (!len)
		return;
	if (c->gpu < 0) {
		if (p != src)
			memcpy(p, src, len);
		return;
	}
	if (zsm_cuda_drv_copy_htod(&c->cu, coll_dptr(p), src, len, why,
				   sizeof(why)))
		coll_die("%s", why);
}

/* The bytes at p as the host can read them. */
static const unsigned char *coll_get_bytes(struct coll *c,
					   const unsigned char *p, size_t len)
{
	char why[BENCH_WHY_MAX];

	if (c->gpu < 0 || !len)
		return p;
	if (zsm_cuda_drv_copy_dtoh(&c->cu, c->stage, coll_dptr(p), len, why,
				   sizeof(why)))
		coll_die("%s", why);
	return c->stage;
}

/*
 * A host-to-device copy from pageable memory may return before its DMA
 * is done, and the comm's stream does not wait for the default stream:
 * the data must be in place before the call that reads it.
 */
static void coll_settle(struct coll *c)
{
	if (c->gpu >= 0 && c->cu.ctx_synchronize())
		coll_die("cuCtxSynchronize failed after writing the buffers");
}

/* ------------------------------------------------------- control window */

/* In-place AllGather of this rank's first `bytes` of its control slot. */
static void coll_ctl_gather(struct coll *c, size_t bytes, const char *what)
{
	COLL_CALL(zsm_all_gather(c->ctl + (size_t)c->rank * bytes, c->ctl,
				 bytes, zsm_uint8, c->comm,
				 (zsm_stream_t)c->stream));
	coll_sync(c, what);
}

/* Every rank has come here: an AllGather of 8 bytes. */
static void coll_barrier(struct coll *c)
{
	uint64_t mine = 0x62617272u + (uint64_t)c->rank;

	memcpy(c->ctl + (size_t)c->rank * 8, &mine, 8);
	coll_ctl_gather(c, 8, "a barrier (an 8-byte AllGather on the control "
			      "window)");
}

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
static int coll_rank_main(struct coll *c, zsm_unique_id_t *id)
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

/* ------------------------------------------------------------ launching */

/* --gpu's list: one ordinal for every rank, or one per rank. */
static int coll_gpu_of(const struct bench_opts *o, int rank, int nranks)
{
	const char *p = o->gpu_list;
	long v = 0;
	int k = 0, count = 1;
	char *end;

	if (!o->gpu)
		return -1;
	if (!p || !*p)
		return 0;
	for (const char *q = p; *q; q++)
		count += *q == ',';
	if (count != 1 && count != nranks) {
		fprintf(stderr,
			"zsm-bench: --gpu %s: give one device for every rank "
			"or one per rank (%d)\n",
			p, nranks);
		exit(1);
	}
	for (;;) {
		errno = 0;
		v = strtol(p, &end, 10);
		if (errno || end == p || v < 0 || v > 1023 ||
		    (*end && *end != ',')) {
			fprintf(stderr,
				"zsm-bench: --gpu: '%s' is not a list of "
				"device numbers 0..1023\n",
				o->gpu_list);
			exit(1);
		}
		if (count == 1 || k == rank)
			return (int)v;
		k++;
		p = end + 1;
	}
}

/* --hosts' word for rank r, into buf; NULL when --hosts is not given. */
static const char *coll_host_of(const struct bench_opts *o, int rank,
				int nranks, char *buf, size_t len)
{
	const char *p = o->coll_hosts, *e;
	int k = 0, count = 1;

	if (!p)
		return NULL;
	for (const char *q = p; *q; q++)
		count += *q == ',';
	if (count != nranks) {
		fprintf(stderr,
			"zsm-bench: --hosts %s: give one host id per rank "
			"(%d)\n",
			p, nranks);
		exit(1);
	}
	for (; k < rank; k++)
		p = strchr(p, ',') + 1;
	e = strchr(p, ',');
	if (!e)
		e = p + strlen(p);
	if (e == p) {
		fprintf(stderr, "zsm-bench: --hosts %s: an empty host id\n",
			o->coll_hosts);
		exit(1);
	}
	snprintf(buf, len, "zsm-bench-host-%.*s", (int)(e - p), p);
	return buf;
}

/*
 * --gpu, before anything forks: a throwaway child opens CUDA and each
 * device asked for (this process must not touch CUDA before it forks the
 * ranks), and says why not.  OOB_PASS, OOB_SKIP (no CUDA: the one line
 * saying why is printed) or exit on another failure.
 */
static int coll_gpu_probe(const struct bench_opts *o, int nranks)
{
	char why[2 * BENCH_WHY_MAX] = "", mem[COLL_MAX_FORK * 10];
	int fds[2], st = 0;
	ssize_t got = 0;
	pid_t pid;

	if (!o->gpu)
		return 0;
	mem[0] = '\0';
	for (int r = 0; r < nranks; r++) {
		size_t used = strlen(mem);

		snprintf(mem + used, sizeof(mem) - used, "%sgpu%d",
			 r ? "," : "", coll_gpu_of(o, r, nranks));
	}
	if (pipe(fds))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		struct zsm_cuda_drv cu;
		char w[BENCH_WHY_MAX];
		int r, code = 0;

		close(fds[0]);
		alarm(COLL_PROBE_TIMEOUT_S);
		memset(&cu, 0, sizeof(cu));
		r = zsm_cuda_drv_open(&cu, w, sizeof(w));
		for (int k = 0; !r && k < nranks; k++)
			r = zsm_cuda_drv_use_device(
				&cu, coll_gpu_of(o, k, nranks), w, sizeof(w));
		if (r == -ENOENT || r == -ENOSYS || r == -ENODEV)
			code = OOB_SKIP;
		else if (r)
			code = 1;
		if (r && write(fds[1], w, strlen(w)) < 0)
			code = 1;
		_exit(code);
	}
	close(fds[1]);
	for (;;) {
		ssize_t n = read(fds[0], why + got, sizeof(why) - 1 - (size_t)got);

		if (n > 0 && (size_t)(got += n) < sizeof(why) - 1)
			continue;
		if (n < 0 && errno == EINTR)
			continue;
		break;
	}
	why[got] = '\0';
	close(fds[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (WIFEXITED(st) && WEXITSTATUS(st) == OOB_SKIP) {
		fprintf(stderr,
			"zsm-bench: --coll --gpu %s skipped: CUDA is not "
			"available: %s\n",
			mem, why);
		return OOB_SKIP;
	}
	fprintf(stderr, "zsm-bench: --coll --gpu %s: %s\n", mem,
		why[0] ? why
		       : WIFSIGNALED(st) ? "the CUDA probe was killed"
					 : "the CUDA probe failed");
	exit(1);
}

static void coll_fill_mem(struct coll *c)
{
	size_t used;

	if (c->gpu < 0) {
		snprintf(c->mem, sizeof(c->mem), "host");
		return;
	}
	/* '+' between ranks: the CSV's columns are commas. */
	c->mem[0] = '\0';
	for (int r = 0; r < c->nranks; r++) {
		used = strlen(c->mem);
		snprintf(c->mem + used, sizeof(c->mem) - used, "%sgpu%d",
			 r ? "+" : "", coll_gpu_of(c->o, r, c->nranks));
	}
}

/* The id from rank 0, over this rank's pipe, within --timeout. */
static void coll_read_id(struct coll *c, int fd, zsm_unique_id_t *id)
{
	size_t got = 0;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int ms = (int)(c->o->step_timeout_s > 2000000 ? 2000000000
						      : c->o->step_timeout_s *
								1000);

	while (got < sizeof(*id)) {
		ssize_t n;
		int r = poll(&p, 1, ms);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			coll_die("no unique id from rank 0 within %u s",
				 c->o->step_timeout_s);
		n = read(fd, (char *)id + got, sizeof(*id) - got);
		if (n <= 0)
			coll_die("rank 0 closed its pipe before sending the "
				 "unique id");
		got += (size_t)n;
	}
	close(fd);
}

static int coll_forked(struct coll *c)
{
	int nranks = c->nranks, fds[COLL_MAX_FORK][2], rank = 0;
	pid_t parent = getpid();
	sigset_t all, old;
	zsm_unique_id_t id;
	pthread_t watcher;
	char host[160];
	const char *h;

	fflush(NULL);
	for (int r = 1; r < nranks; r++) {
		pid_t pid;

		if (pipe(fds[r]))
			coll_die("pipe: %s", strerror(errno));
		pid = fork();
		if (pid < 0)
			coll_die("fork: %s", strerror(errno));
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(1);
			memset(coll_pids, 0, sizeof(coll_pids));
			for (int k = 1; k < r; k++)
				close(fds[k][1]);
			close(fds[r][1]);
			rank = r;
			c->rank = r;
			coll_read_id(c, fds[r][0], &id);
			break;
		}
		close(fds[r][0]);
		coll_pids[r] = pid;
		coll_kids_left++;
	}
	c->rank = rank;
	c->gpu = coll_gpu_of(c->o, rank, nranks);
	h = coll_host_of(c->o, rank, nranks, host, sizeof(host));
	if (h && setenv("ZSM_HOSTID", h, 1))
		coll_die("setenv ZSM_HOSTID: %s", strerror(errno));
	if (rank != 0)
		exit(coll_rank_main(c, &id));
	/* The watcher takes no signal: the alarm is the main thread's. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if (pthread_create(&watcher, NULL, coll_watch, NULL))
		coll_die("cannot start the thread that watches the ranks");
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_detach(watcher);
	COLL_CALL(zsm_get_unique_id(&id));
	for (int r = 1; r < nranks; r++) {
		if (write(fds[r][1], &id, sizeof(id)) != (ssize_t)sizeof(id))
			coll_die("cannot send the unique id to rank %d: %s", r,
				 strerror(errno));
		close(fds[r][1]);
	}
	coll_rank_main(c, &id);
	/* The others end on their own once their last call is done. */
	coll_step(c, "waiting for the other ranks to exit");
	/* acquire: pairs with the watcher's release decrement. */
	while (__atomic_load_n(&coll_kids_left, __ATOMIC_ACQUIRE) > 0)
		usleep(10000);
	alarm(0);
	return 0;
}

/* The launcher's variables, or --rendezvous/--rank/--nranks as zsm's. */
static int coll_launched(struct coll *c)
{
	const struct bench_opts *o = c->o;
	char num[32];

	if (o->rendezvous && setenv("ZSM_BOOT_ADDR", o->rendezvous, 1))
		coll_die("setenv: %s", strerror(errno));
	if (o->launch_rank >= 0) {
		snprintf(num, sizeof(num), "%d", o->launch_rank);
		if (setenv("RANK", num, 1))
			coll_die("setenv: %s", strerror(errno));
	}
	if (o->launch_nranks >= 0) {
		snprintf(num, sizeof(num), "%d", o->launch_nranks);
		if (setenv("WORLD_SIZE", num, 1))
			coll_die("setenv: %s", strerror(errno));
	}
	/* The rank is zsm's to find out: one device for this process. */
	c->gpu = coll_gpu_of(o, 0, 1);
	return coll_rank_main(c, NULL);
}

static int coll_main(const struct bench_opts *o)
{
	static struct coll c;
	struct sigaction sa;
	int r;

	memset(&c, 0, sizeof(c));
	c.o = o;
	c.gpu = -1;
	coll_g = &c;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = coll_on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	c.forked = !o->rendezvous;
	c.nranks = o->coll_ranks ? o->coll_ranks : 2;
	if (c.forked) {
		r = coll_gpu_probe(o, c.nranks);
		if (r)
			return r < 0 ? 1 : r;
		c.gpu = coll_gpu_of(o, 0, c.nranks);
		coll_fill_mem(&c);
		return coll_forked(&c);
	}
	if (o->coll_hosts) {
		fprintf(stderr,
			"zsm-bench: --hosts names the host of each forked "
			"rank; a launched rank takes ZSM_HOSTID from its own "
			"environment\n");
		return 1;
	}
	if (o->gpu && o->gpu_list && strchr(o->gpu_list, ',')) {
		fprintf(stderr, "zsm-bench: --gpu with --rendezvous takes one "
				"device: this process's\n");
		return 1;
	}
	if (coll_gpu_probe(o, 1) == OOB_SKIP)
		return OOB_SKIP;
	c.gpu = coll_gpu_of(o, 0, 1);
	if (c.gpu >= 0)
		snprintf(c.mem, sizeof(c.mem), "gpu%d", c.gpu);
	else
		snprintf(c.mem, sizeof(c.mem), "host");
	return coll_launched(&c);
}

int main(int argc, char **argv)
{
	static struct bench_opts o;

	bench_parse(&o, argc, argv);
	if (!o.coll) {
		fprintf(stderr, "zsm-bench-coll is zsm-bench --coll: give "
				"--coll all_gather|all_to_all|both\n");
		return 1;
	}
	return coll_main(&o);
}
