/* SPDX-License-Identifier: MIT */
/*
 * zsm-bench --coll's plumbing: dying (with the ranks rank 0 forked), the
 * thread that reaps them, the alarm of --timeout with async-signal-safe
 * messages, host or CUDA memory of a rank and its copies, and the control
 * window's gathers and barrier.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_coll.h"
#include "common/clock.h"
#include "oob.h"

struct coll *coll_g;
/* Fork mode, rank 0: the other ranks, 0 once reaped. */
pid_t coll_pids[COLL_MAX_FORK];
int coll_kids_left;

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

void coll_die(const char *fmt, ...)
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

/*
 * Rank 0 of a forked run: a thread that reaps the other ranks, so that one
 * that ended badly ends the run at once, whatever rank 0 is waiting for.
 * A thread rather than a SIGCHLD handler: a handler would interrupt the
 * library's own waits in rank 0 with EINTR.
 */
void *coll_watch(void *arg)
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

void coll_on_alarm(int sig)
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
void coll_step(struct coll *c, const char *what)
{
	c->doing = what;
	alarm(c->o->step_timeout_s);
}

double coll_now(void)
{
	return (double)zsm_now_ns() / 1e9;
}

void *coll_alloc_host(size_t size)
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
void coll_sync(struct coll *c, const char *what)
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

void coll_cuda_open(struct coll *c)
{
	char why[BENCH_WHY_MAX];

	if (zsm_cuda_drv_open(&c->cu, why, sizeof(why)) ||
	    zsm_cuda_drv_use_device(&c->cu, c->gpu, why, sizeof(why)))
		coll_die("CUDA device %d: %s", c->gpu, why);
	if (c->cu.stream_create(&c->stream, ZSM_CU_STREAM_NON_BLOCKING))
		coll_die("cuStreamCreate on device %d failed", c->gpu);
}

/* Host memory, or device memory of the rank's GPU. */
unsigned char *coll_alloc(struct coll *c, size_t size)
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

void coll_free(struct coll *c, unsigned char *p)
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
void coll_put_bytes(struct coll *c, unsigned char *p,
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
const unsigned char *coll_get_bytes(struct coll *c,
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
void coll_settle(struct coll *c)
{
	if (c->gpu >= 0 && c->cu.ctx_synchronize())
		coll_die("cuCtxSynchronize failed after writing the buffers");
}

/* ------------------------------------------------------- control window */

/* In-place AllGather of this rank's first `bytes` of its control slot. */
void coll_ctl_gather(struct coll *c, size_t bytes, const char *what)
{
	COLL_CALL(zsm_all_gather(c->ctl + (size_t)c->rank * bytes, c->ctl,
				 bytes, zsm_uint8, c->comm,
				 (zsm_stream_t)c->stream));
	coll_sync(c, what);
}

/* Every rank has come here: an AllGather of 8 bytes. */
void coll_barrier(struct coll *c)
{
	uint64_t mine = 0x62617272u + (uint64_t)c->rank;

	memcpy(c->ctl + (size_t)c->rank * 8, &mine, 8);
	coll_ctl_gather(c, 8, "a barrier (an 8-byte AllGather on the control "
			      "window)");
}
