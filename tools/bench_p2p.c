/* SPDX-License-Identifier: MIT */
/*
 * zsm-bench's stream and ping-pong: messages over the plugin's ncclNet
 * table (or --raw's endpoint) between the pair, posted again while the
 * plugin says "later", waited for with a stall limit, flushed with --gpu;
 * buffers filled, poisoned and read as host or GPU memory; the timed runs
 * and the untimed check of each size before them.
 */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "bench.h"
#include "bench_raw.h"
#include "common/cuda_drv.h"
#include "oob.h"
#include "pattern.h"
#include "zsm_client.h"

#define BENCH_TAG 0x2b

/* One isend/irecv; NULL means "later". */
static void *bench_isend_try(struct bench *b, void *data, size_t size)
{
	void *req = NULL;
	int r;

	if (b->raw) {
		r = bench_raw_isend(b->raw, data, size, &req);
		if (r)
			bench_die("fi_tsend of %zu bytes failed: %s (%d)", size,
				  bench_raw_strerror(r), r);
		return req;
	}
	BENCH_CALL(zsm_client_isend(b->c, b->send, data, size, BENCH_TAG,
				    b->smh, &req));
	return req;
}

/* isend/irecv with NULL-request retry, bounded. */
static void *bench_isend(struct bench *b, void *data, size_t size)
{
	uint64_t t0 = zsm_client_now_ns();
	void *req;

	for (;;) {
		req = bench_isend_try(b, data, size);
		if (req)
			return req;
		if (zsm_client_now_ns() - t0 > BENCH_STALL_MS * 1000000ull)
			bench_die("isend(size %zu) returned a NULL request for "
				  "%d ms",
				  size, BENCH_STALL_MS);
	}
}

static void *bench_irecv_try(struct bench *b, void *data, size_t size)
{
	int tag = BENCH_TAG;
	void *req = NULL;
	int r;

	if (b->raw) {
		r = bench_raw_irecv(b->raw, data, size, &req);
		if (r)
			bench_die("fi_trecv of %zu bytes failed: %s (%d)", size,
				  bench_raw_strerror(r), r);
		return req;
	}
	BENCH_CALL(zsm_client_irecv(b->c, b->recv, 1, &data, &size, &tag,
				    &b->rmh, &req));
	return req;
}

static void *bench_irecv(struct bench *b, void *data, size_t size)
{
	uint64_t t0 = zsm_client_now_ns();
	void *req;

	for (;;) {
		req = bench_irecv_try(b, data, size);
		if (req)
			return req;
		if (zsm_client_now_ns() - t0 > BENCH_STALL_MS * 1000000ull)
			bench_die("irecv(size %zu) returned a NULL request for "
				  "%d ms",
				  size, BENCH_STALL_MS);
	}
}

/*
 * One test() of either transport; the plugin's error codes are positive,
 * libfabric's negative, which is how bench_test_str tells them apart.
 */
static int bench_test(struct bench *b, void *req, int *done, int *size)
{
	int sizes[64];
	size_t len = 0;
	int r;

	if (b->raw) {
		r = bench_raw_test(b->raw, req, done, &len);
		*size = len > INT_MAX ? INT_MAX : (int)len;
		return r;
	}
	r = zsm_client_test(b->c, req, done, sizes);
	*size = !r && *done ? sizes[0] : 0;
	return r;
}

static const char *bench_test_str(int r)
{
	return r < 0 ? bench_raw_strerror(r) : zsm_client_result_str(r);
}

/* zsm_client_wait for --raw: test until done, bounded. */
static int bench_poll_wait(struct bench *b, void *req, int *size)
{
	uint64_t t0 = zsm_client_now_ns();
	int done = 0, r;

	for (;;) {
		r = bench_test(b, req, &done, size);
		if (r || done)
			return r;
		if (zsm_client_now_ns() - t0 > BENCH_STALL_MS * 1000000ull)
			return ZSM_CLIENT_TIMEOUT;
	}
}

static int bench_wait(struct bench *b, void *req, const char *what, size_t size)
{
	int sizes[64] = { 0 };
	int r = b->raw ? bench_poll_wait(b, req, sizes)
		       : zsm_client_wait(b->c, req, sizes, BENCH_STALL_MS);

	if (r == ZSM_CLIENT_TIMEOUT)
		bench_die("%s of %zu bytes: test() not done after %d ms", what,
			  size, BENCH_STALL_MS);
	if (r)
		bench_die("%s of %zu bytes: test() failed: %s (%d)", what, size,
			  bench_test_str(r), r);
	return sizes[0];
}

/*
 * After a receive into GPU memory completes, NCCL calls iflush before
 * anything reads the data, so that a plugin can make the NIC's writes
 * visible to the GPU; we do the same, timed like NCCL's, and with --flush
 * after host receives too.  A NULL request means nothing to wait for.
 * Like NCCL, 0-byte receives are not flushed.
 */
static void bench_flush(struct bench *b, void *data, int got)
{
	void *req = NULL;
	int r;

	if ((!b->o.gpu && !b->o.flush) || got <= 0)
		return;
	BENCH_CALL(zsm_client_iflush(b->c, b->recv, 1, &data, &got, &b->rmh,
				     &req));
	if (!req) {
		b->flush_null++;
		return;
	}
	b->flush_reqs++;
	r = zsm_client_wait(b->c, req, NULL, BENCH_STALL_MS);
	if (r == ZSM_CLIENT_TIMEOUT)
		bench_die("iflush of %d bytes: test() not done after %d ms",
			  got, BENCH_STALL_MS);
	if (r)
		bench_die("iflush of %d bytes: test() failed: %s (%d)", got,
			  zsm_client_result_str(r), r);
}

/* A buffer pointer that is a device address under --gpu. */
static zsm_cu_deviceptr bench_dptr(const unsigned char *p)
{
	return (zsm_cu_deviceptr)(uintptr_t)p;
}

/* Write message `seed`'s pattern at p, in host or GPU memory. */
void bench_fill(struct bench *b, unsigned char *p, size_t len,
		uint32_t seed)
{
	char why[BENCH_WHY_MAX];

	if (!b->o.gpu) {
		zsm_pattern_fill(p, len, seed);
		return;
	}
	if (!len)
		return;
	zsm_pattern_fill(b->stage, len, seed);
	if (zsm_cuda_drv_copy_htod(&b->cu, bench_dptr(p), b->stage, len, why,
				   sizeof(why)))
		bench_die("%s", why);
}

/* Overwrite a receive slot, so that bytes not received show. */
void bench_poison(struct bench *b, unsigned char *p, size_t len)
{
	char why[BENCH_WHY_MAX];

	if (!b->o.gpu) {
		memset(p, 0xCD, len);
		return;
	}
	if (len && zsm_cuda_drv_memset(&b->cu, bench_dptr(p), 0xCD, len, why,
				       sizeof(why)))
		bench_die("%s", why);
}

/* The bytes at p as the host can read them: p, or a copy from the GPU. */
const unsigned char *bench_host_view(struct bench *b,
				     const unsigned char *p, size_t len)
{
	char why[BENCH_WHY_MAX];

	if (!b->o.gpu || !len)
		return p;
	if (zsm_cuda_drv_copy_dtoh(&b->cu, b->stage, bench_dptr(p), len, why,
				   sizeof(why)))
		bench_die("%s", why);
	return b->stage;
}

/* Slot k of a buffer: distinct while BENCH_WINDOW of them fit. */
unsigned char *bench_slot(unsigned char *buf, size_t buf_size,
			  size_t size, long k)
{
	if (size * BENCH_WINDOW <= buf_size)
		return buf + (size_t)(k % BENCH_WINDOW) * size;
	return buf;
}

/*
 * Stream `count` messages 0 -> 1 with up to BENCH_WINDOW in flight.
 * Returns the seconds from the barrier to the last completion.
 */
double bench_stream_run(struct bench *b, size_t size, long count)
{
	void *req[BENCH_WINDOW];
	long posted = 0, completed = 0;
	uint64_t t0, last;
	int got, done, r;

	BENCH_OOB(oob_barrier());
	t0 = zsm_client_now_ns();
	last = t0;
	while (completed < count) {
		while (posted < count && posted - completed < BENCH_WINDOW) {
			void *q;

			if (b->rank == 0)
				q = bench_isend_try(b, b->sbuf, size);
			else
				q = bench_irecv_try(b,
						    bench_slot(b->rbuf,
							       b->rbuf_size,
							       size, posted),
						    size);
			if (!q)
				break;
			req[posted % BENCH_WINDOW] = q;
			posted++;
		}
		if (completed == posted) {
			/* Nothing in flight and the plugin said "later". */
			if (zsm_client_now_ns() - last >
			    BENCH_STALL_MS * 1000000ull)
				bench_die("stream: %s returned a NULL request "
					  "for %d ms with nothing in flight",
					  b->rank ? "irecv" : "isend",
					  BENCH_STALL_MS);
			continue;
		}
		r = bench_test(b, req[completed % BENCH_WINDOW], &done, &got);
		if (r)
			bench_die("stream %s %ld of %zu bytes: test() failed: "
				  "%s (%d)",
				  b->rank ? "receive" : "send", completed, size,
				  bench_test_str(r), r);
		if (done) {
			if (b->rank == 1)
				bench_flush(b,
					    bench_slot(b->rbuf, b->rbuf_size,
						       size, completed),
					    got);
			completed++;
			last = zsm_client_now_ns();
		} else if (zsm_client_now_ns() - last >
			   BENCH_STALL_MS * 1000000ull) {
			bench_die("stream %s %ld of %zu bytes: not done after "
				  "%d ms",
				  b->rank ? "receive" : "send", completed, size,
				  BENCH_STALL_MS);
		}
	}
	return (double)(last - t0) / 1e9;
}

/* Round trips: rank 0 sends then receives, rank 1 echoes. */
double bench_pingpong_run(struct bench *b, size_t size, long count)
{
	uint64_t t0;
	void *rq, *sq;
	long i;
	int got;

	BENCH_OOB(oob_barrier());
	t0 = zsm_client_now_ns();
	for (i = 0; i < count; i++) {
		if (b->rank == 0) {
			rq = bench_irecv(b, b->rbuf, size);
			sq = bench_isend(b, b->sbuf, size);
			bench_wait(b, sq, "pingpong send", size);
			got = bench_wait(b, rq, "pingpong receive", size);
			bench_flush(b, b->rbuf, got);
		} else {
			rq = bench_irecv(b, b->rbuf, size);
			got = bench_wait(b, rq, "pingpong receive", size);
			bench_flush(b, b->rbuf, got);
			sq = bench_isend(b, b->sbuf, size);
			bench_wait(b, sq, "pingpong send", size);
		}
	}
	return (double)(zsm_client_now_ns() - t0) / 1e9;
}

long bench_verify_slots(const struct bench *b, size_t size)
{
	return size * BENCH_WINDOW <= b->rbuf_size ? BENCH_WINDOW : 1;
}

static void bench_verify_fail(long k, size_t size, int got, long bad,
			      const unsigned char *p, uint32_t seed)
{
	if (got != (int)size)
		bench_die("verify: message %ld of %zu bytes arrived with size "
			  "%d",
			  k, size, got);
	bench_die("verify: message %ld of %zu bytes: byte %ld is 0x%02x, "
		  "expected 0x%02x (out of order or corrupted)",
		  k, size, bad, p[bad], zsm_pattern_byte(seed, (size_t)bad));
}

/* A completed receive of message k at p: flush, then check every byte. */
static void bench_verify_recv(struct bench *b, long k, unsigned char *p,
			      size_t size, int got, uint32_t seed)
{
	const unsigned char *h;
	long bad;

	bench_flush(b, p, got);
	h = bench_host_view(b, p, size);
	bad = zsm_pattern_check(h, size, seed);
	if (got != (int)size || bad >= 0)
		bench_verify_fail(k, size, got, bad, h, seed);
}

/*
 * Untimed.  Stream: a window of messages in flight at once, each with its
 * own pattern, so that reordering shows.  Ping-pong: a few echoes, each
 * direction with its own pattern.
 */
void bench_verify(struct bench *b, int test, size_t size)
{
	long nv = bench_verify_slots(b, size), k;
	void *q[BENCH_WINDOW];
	unsigned char *p;
	int got;

	if (test == BENCH_STREAM) {
		for (k = 0; k < nv; k++) {
			if (b->rank == 0) {
				p = bench_slot(b->sbuf, b->sbuf_size, size, k);
				bench_fill(b, p, size, bench_seed(size, k));
			} else {
				p = bench_slot(b->rbuf, b->rbuf_size, size, k);
				bench_poison(b, p, size);
				q[k] = bench_irecv(b, p, size);
			}
		}
		BENCH_OOB(oob_barrier());
		for (k = 0; k < nv && b->rank == 0; k++)
			q[k] = bench_isend(
				b, bench_slot(b->sbuf, b->sbuf_size, size, k),
				size);
		for (k = 0; k < nv; k++) {
			got = bench_wait(b, q[k],
					 b->rank ? "verify receive"
						 : "verify send",
					 size);
			if (b->rank == 0)
				continue;
			p = bench_slot(b->rbuf, b->rbuf_size, size, k);
			bench_verify_recv(b, k, p, size, got,
					  bench_seed(size, k));
		}
		BENCH_OOB(oob_barrier());
		return;
	}
	for (k = 0; k < BENCH_VERIFY_MSGS; k++) {
		uint32_t there = bench_seed(size, k);
		uint32_t back = bench_seed(size, k + 1000);

		if (b->rank == 0) {
			bench_fill(b, b->sbuf, size, there);
			bench_poison(b, b->rbuf, size);
			q[1] = bench_irecv(b, b->rbuf, size);
			BENCH_OOB(oob_barrier());
			q[0] = bench_isend(b, b->sbuf, size);
			bench_wait(b, q[0], "verify send", size);
			got = bench_wait(b, q[1], "verify receive", size);
			bench_verify_recv(b, k, b->rbuf, size, got, back);
		} else {
			bench_poison(b, b->rbuf, size);
			q[1] = bench_irecv(b, b->rbuf, size);
			BENCH_OOB(oob_barrier());
			got = bench_wait(b, q[1], "verify receive", size);
			bench_verify_recv(b, k, b->rbuf, size, got, there);
			bench_fill(b, b->sbuf, size, back);
			q[0] = bench_isend(b, b->sbuf, size);
			bench_wait(b, q[0], "verify send", size);
		}
	}
}
