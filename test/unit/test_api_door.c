/* SPDX-License-Identifier: MIT */
/*
 * The stream doorbell (api/api_door.h) on a fake CUDA driver table
 * whose cuStreamBatchMemOp records each batch and hands its operations to
 * a fake stream: a thread that runs them in order, writes landing in the
 * host words and waits holding the stream until their word passes.
 * Device addresses are the host words' plus an offset only the fake
 * undoes, so a host address given to the driver is caught.
 *
 * And the host-memory mode, with no CUDA at all.
 *
 * No test relies on time: each wait for the fake stream has a deadline
 * of minutes and says what it waited for.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/cuda.h"
#include "api/api_door.h"
#include "zsm_test.h"

#define DEV_OFF ((zsm_cu_deviceptr)0x100000000000ULL)
#define FAKE_OPS 4096
#define FAKE_BATCHES 64
#define DEADLINE_S 30 /* half the test's meson timeout */

static struct fake {
	int can_64; /* CAN_USE_64_BIT_STREAM_MEM_OPS */
	int refuse_batch; /* the n-th batch (1-based) fails; 0 never */
	void *host;	  /* the door's words */
	size_t host_size;
	/* What cuStreamBatchMemOp was given, batch by batch. */
	zsm_cu_memop log[FAKE_OPS];
	unsigned int batch_len[FAKE_BATCHES];
	int nbatches, nlogged;
	/* The fake stream: queued operations, run by its thread. */
	pthread_mutex_t lock;
	pthread_cond_t more;
	zsm_cu_memop q[FAKE_OPS];
	int nq;
	_Atomic int ran; /* operations the stream has finished */
	_Atomic int stop;
	int bad_address;
	pthread_t thread;
	/* What the stream queries answer. */
	unsigned int flags;	/* cuStreamGetFlags of STREAM */
	int capturing;		/* cuStreamIsCapturing of STREAM */
	int query_fails;	/* cuStreamQuery returns an error */
} fk;

static _Atomic uint64_t *fake_word(zsm_cu_deviceptr p)
{
	uintptr_t h = (uintptr_t)(p - DEV_OFF);

	if (p < DEV_OFF || h < (uintptr_t)fk.host ||
	    h + 8 > (uintptr_t)fk.host + fk.host_size || h % 8) {
		fk.bad_address++;
		return NULL;
	}
	return (_Atomic uint64_t *)h;
}

static void *fake_stream_run(void *arg)
{
	struct timespec nap = { 0, 50000 };

	(void)arg;
	for (int next = 0;; next++) {
		zsm_cu_memop op;
		_Atomic uint64_t *w;

		pthread_mutex_lock(&fk.lock);
		while (next >= fk.nq && !atomic_load(&fk.stop))
			pthread_cond_wait(&fk.more, &fk.lock);
		if (next >= fk.nq) {
			pthread_mutex_unlock(&fk.lock);
			return NULL;
		}
		op = fk.q[next];
		pthread_mutex_unlock(&fk.lock);
		w = fake_word(op.value.address);
		if (w && op.operation == ZSM_CU_STREAM_MEM_OP_WRITE_VALUE_64)
			atomic_store_explicit(w, op.value.value64,
					      memory_order_release);
		/* A wait holds the stream until the word passes; teardown
		 * ends it. */
		while (w && op.operation == ZSM_CU_STREAM_MEM_OP_WAIT_VALUE_64 &&
		       (int64_t)(atomic_load_explicit(w, memory_order_acquire) -
				 op.value.value64) < 0 &&
		       !atomic_load(&fk.stop))
			nanosleep(&nap, NULL);
		atomic_fetch_add(&fk.ran, 1);
	}
}

static zsm_cu_result fake_batch(zsm_cu_stream st, unsigned int n,
				zsm_cu_memop *ops, unsigned int flags)
{
	(void)st;
	if (n == 0 || n > ZSM_CU_BATCH_MEM_OP_MAX || flags)
		return ZSM_CU_ERROR_INVALID_VALUE;
	if (fk.nbatches + 1 == fk.refuse_batch) {
		fk.nbatches++;
		return ZSM_CU_ERROR_INVALID_VALUE;
	}
	if (fk.nbatches >= FAKE_BATCHES || fk.nlogged + (int)n > FAKE_OPS)
		return ZSM_CU_ERROR_OUT_OF_MEMORY;
	fk.batch_len[fk.nbatches++] = n;
	memcpy(&fk.log[fk.nlogged], ops, n * sizeof(*ops));
	fk.nlogged += (int)n;
	pthread_mutex_lock(&fk.lock);
	memcpy(&fk.q[fk.nq], ops, n * sizeof(*ops));
	fk.nq += (int)n;
	pthread_cond_signal(&fk.more);
	pthread_mutex_unlock(&fk.lock);
	return ZSM_CU_SUCCESS;
}

/* The tests' stream is over once its thread ran all it was given. */
static zsm_cu_result fake_stream_query(zsm_cu_stream st)
{
	int idle;

	if (fk.query_fails)
		return ZSM_CU_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&fk.lock);
	idle = atomic_load(&fk.ran) == fk.nq;
	pthread_mutex_unlock(&fk.lock);
	return idle ? ZSM_CU_SUCCESS : ZSM_CU_ERROR_NOT_READY;
}

static zsm_cu_result fake_stream_flags(zsm_cu_stream st, unsigned int *flags)
{
	*flags = fk.flags;
	return st ? ZSM_CU_SUCCESS : ZSM_CU_ERROR_INVALID_VALUE;
}

static zsm_cu_result fake_capturing(zsm_cu_stream st, int *status)
{
	*status = fk.capturing;
	return st ? ZSM_CU_SUCCESS : ZSM_CU_ERROR_INVALID_VALUE;
}

static zsm_cu_result fake_host_alloc(void **p, size_t n, unsigned int flags)
{
	if (flags != (ZSM_CU_MEMHOSTALLOC_PORTABLE |
		      ZSM_CU_MEMHOSTALLOC_DEVICEMAP) ||
	    fk.host)
		return ZSM_CU_ERROR_INVALID_VALUE;
	fk.host = aligned_alloc(64, n);
	fk.host_size = n;
	memset(fk.host, 0xa5, n); /* the door must clear its words */
	*p = fk.host;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_dev_ptr(zsm_cu_deviceptr *d, void *p,
				  unsigned int flags)
{
	if (p != fk.host || flags)
		return ZSM_CU_ERROR_INVALID_VALUE;
	*d = (zsm_cu_deviceptr)(uintptr_t)p + DEV_OFF;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_free_host(void *p)
{
	if (p != fk.host)
		return ZSM_CU_ERROR_INVALID_VALUE;
	free(fk.host);
	fk.host = NULL;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_attr(int *v, int attr, zsm_cu_device dev)
{
	(void)dev;
	if (attr != ZSM_CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS)
		return ZSM_CU_ERROR_INVALID_VALUE;
	*v = fk.can_64;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_get_dev(zsm_cu_device *dev)
{
	*dev = 0;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_context fake_current;

static zsm_cu_result fake_ctx_get(zsm_cu_context *c)
{
	*c = fake_current;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_ctx_set(zsm_cu_context c)
{
	fake_current = c;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_error_string(zsm_cu_result e, const char **s)
{
	(void)e;
	*s = "fake failure";
	return ZSM_CU_SUCCESS;
}

static int fake_setup(void **state)
{
	struct zsm_cuda_drv t;

	(void)state;
	memset(&t, 0, sizeof(t));
	t.lib = &fk;
	t.ndev = 1;
	t.ordinal = -1;
	t.get_error_string = fake_error_string;
	t.get_error_name = fake_error_string;
	t.device_get_attribute = fake_attr;
	t.ctx_get_device = fake_get_dev;
	t.ctx_get_current = fake_ctx_get;
	t.ctx_set_current = fake_ctx_set;
	t.mem_host_alloc = fake_host_alloc;
	t.mem_host_get_device_pointer = fake_dev_ptr;
	t.mem_free_host = fake_free_host;
	t.stream_batch_mem_op = fake_batch;
	t.stream_query = fake_stream_query;
	t.stream_get_flags = fake_stream_flags;
	t.stream_is_capturing = fake_capturing;
	memset(&fk, 0, sizeof(fk));
	fk.can_64 = 1;
	fk.flags = ZSM_CU_STREAM_NON_BLOCKING;
	fake_current = NULL;
	pthread_mutex_init(&fk.lock, NULL);
	pthread_cond_init(&fk.more, NULL);
	assert_int_equal(pthread_create(&fk.thread, NULL, fake_stream_run,
					NULL),
			 0);
	zsm_cuda_use_table(&t);
	return 0;
}

static int fake_teardown(void **state)
{
	(void)state;
	pthread_mutex_lock(&fk.lock);
	atomic_store(&fk.stop, 1);
	pthread_cond_signal(&fk.more);
	pthread_mutex_unlock(&fk.lock);
	pthread_join(fk.thread, NULL);
	zsm_cuda_use_table(NULL);
	free(fk.host);
	zsm_assert_int_eq(fk.bad_address, 0);
	return 0;
}

/* The fake context the tests hand the door. */
#define CTX ((zsm_cu_context)0x1234)
#define STREAM ((zsm_cu_stream)0x5678)

/* Wait (minutes at most) until the stream has finished n operations. */
static void ran_at_least(int n, const char *what)
{
	uint64_t end = zsm_now_ns() + DEADLINE_S * 1000000000ull;

	while (atomic_load(&fk.ran) < n) {
		if (zsm_now_ns() > end)
			fail_msg("waited %d s for the fake stream to finish %d "
				 "operations (%s); it finished %d",
				 DEADLINE_S, n, what, atomic_load(&fk.ran));
		sched_yield();
	}
}

static void ready_reaches(struct zsm_api_door *door, unsigned int slot,
			  uint64_t seq)
{
	uint64_t end = zsm_now_ns() + DEADLINE_S * 1000000000ull;

	while (zsm_api_door_ready(door, slot) != seq) {
		if (zsm_now_ns() > end)
			fail_msg("waited %d s for the stream to write ready "
				 "%llu at slot %u; it is %llu",
				 DEADLINE_S, (unsigned long long)seq, slot,
				 (unsigned long long)zsm_api_door_ready(door,
									 slot));
		sched_yield();
	}
}

static struct zsm_api_door *door_of(unsigned int nslots)
{
	struct zsm_api_door *door = NULL;

	zsm_assert_int_eq(zsm_api_door_new(CTX, nslots, &door), 0);
	assert_non_null(door);
	/* The caller's context is back. */
	assert_null(fake_current);
	return door;
}

/* Op k of the log: which operation, on which word of the door. */
static void logged(int k, int operation, int ready, unsigned int slot,
		   uint64_t seq)
{
	const zsm_cu_memop *op = &fk.log[k];
	_Atomic uint64_t *w = fake_word(op->value.address);

	zsm_assert_int_eq(op->operation, operation);
	zsm_assert_int_eq(op->value.value64, seq);
	zsm_assert_int_eq(op->value.flags, 0); /* GEQ, or a plain write */
	assert_non_null(w);
	/* Word layout is the door's; the slot's two words are 64 bytes
	 * apart and slots 128. */
	zsm_assert_int_eq((uintptr_t)w - (uintptr_t)fk.host,
			  (uintptr_t)slot * 128 + (ready ? 0 : 64));
}

static void test_ring_then_done_releases(void **state)
{
	struct zsm_api_door *door = door_of(4);
	unsigned int slot = 2;
	uint64_t seq = 1;

	(void)state;
	/* The words start at 0 whatever the allocation held. */
	zsm_assert_int_eq(zsm_api_door_ready(door, 2), 0);
	zsm_assert_int_eq(zsm_api_door_ring(door, STREAM, 1, &slot, &seq), 0);
	zsm_assert_int_eq(fk.nbatches, 1);
	ready_reaches(door, 2, 1);
	ran_at_least(1, "the write of ready");
	/* The wait cannot pass: nothing published done yet. */
	zsm_assert_int_eq(atomic_load(&fk.ran), 1);
	zsm_api_door_done(door, 2, 1);
	ran_at_least(2, "the wait on done, released by done()");
	/* Again, the next sequence number, no reset. */
	seq = 2;
	zsm_assert_int_eq(zsm_api_door_ring(door, STREAM, 1, &slot, &seq), 0);
	ready_reaches(door, 2, 2);
	zsm_api_door_done(door, 2, 2);
	ran_at_least(4, "the second wait on done");
	zsm_assert_int_eq(zsm_api_door_error(door), 0);
	zsm_api_door_free(door);
	assert_null(fk.host);
}

static void test_batch_in_order(void **state)
{
	struct zsm_api_door *door = door_of(4);
	unsigned int slots[3] = { 3, 0, 1 };
	uint64_t seqs[3] = { 5, 6, 7 };

	(void)state;
	zsm_assert_int_eq(zsm_api_door_ring(door, STREAM, 3, slots, seqs), 0);
	zsm_assert_int_eq(fk.nbatches, 1);
	zsm_assert_int_eq(fk.batch_len[0], 6);
	for (int i = 0; i < 3; i++) {
		logged(i, ZSM_CU_STREAM_MEM_OP_WRITE_VALUE_64, 1, slots[i],
		       seqs[i]);
		logged(3 + i, ZSM_CU_STREAM_MEM_OP_WAIT_VALUE_64, 0, slots[i],
		       seqs[i]);
	}
	/* The wait alone: one op on done. */
	zsm_assert_int_eq(zsm_api_door_wait(door, STREAM, 1, 9), 0);
	zsm_assert_int_eq(fk.nbatches, 2);
	zsm_assert_int_eq(fk.batch_len[1], 1);
	logged(6, ZSM_CU_STREAM_MEM_OP_WAIT_VALUE_64, 0, 1, 9);
	for (int i = 0; i < 3; i++)
		zsm_api_door_done(door, slots[i], seqs[i]);
	zsm_api_door_done(door, 1, 9);
	ran_at_least(7, "three writes, three waits and the lone wait");
	zsm_api_door_free(door);
}

/* A stream with nothing left to run: the ready words are stored now, and
 * nothing goes on the stream. */
static void test_post_idle_stream_stores_now(void **state)
{
	struct zsm_api_door *door = door_of(4);
	unsigned int slots[2] = { 3, 1 };
	uint64_t seqs[2] = { 4, 9 };
	int now = -1;

	(void)state;
	zsm_assert_int_eq(zsm_api_door_post(door, STREAM, 2, slots, seqs,
					     &now),
			  0);
	zsm_assert_int_eq(now, 1);
	zsm_assert_int_eq(fk.nbatches, 0);
	zsm_assert_int_eq(zsm_api_door_ready(door, 3), 4);
	zsm_assert_int_eq(zsm_api_door_ready(door, 1), 9);
	/* The waits still go on the stream, and hold it until done. */
	zsm_assert_int_eq(zsm_api_door_wait(door, STREAM, 3, 4), 0);
	zsm_assert_int_eq(fk.nbatches, 1);
	logged(0, ZSM_CU_STREAM_MEM_OP_WAIT_VALUE_64, 0, 3, 4);
	zsm_api_door_done(door, 3, 4);
	ran_at_least(1, "the wait on done");
	zsm_api_door_free(door);
}

/*
 * A stream with work left (a wait no one has released): the writes go on
 * the stream, behind it, as one batch of writes only, and the words move
 * only once the stream gets there.
 */
static void test_post_busy_stream_enqueues(void **state)
{
	struct zsm_api_door *door = door_of(4);
	unsigned int slot = 0, slots[2] = { 2, 1 };
	uint64_t seq = 1, seqs[2] = { 7, 8 };
	int now = -1;

	(void)state;
	zsm_assert_int_eq(zsm_api_door_ring(door, STREAM, 1, &slot, &seq), 0);
	ran_at_least(1, "the write of ready before the held wait");
	zsm_assert_int_eq(zsm_api_door_post(door, STREAM, 2, slots, seqs,
					     &now),
			  0);
	zsm_assert_int_eq(now, 0);
	zsm_assert_int_eq(fk.nbatches, 2);
	zsm_assert_int_eq(fk.batch_len[1], 2);
	logged(2, ZSM_CU_STREAM_MEM_OP_WRITE_VALUE_64, 1, 2, 7);
	logged(3, ZSM_CU_STREAM_MEM_OP_WRITE_VALUE_64, 1, 1, 8);
	/* Held behind the wait: not written yet. */
	zsm_assert_int_eq(zsm_api_door_ready(door, 2), 0);
	zsm_assert_int_eq(zsm_api_door_ready(door, 1), 0);
	zsm_api_door_done(door, 0, 1);
	ready_reaches(door, 2, 7);
	ready_reaches(door, 1, 8);
	zsm_api_door_free(door);
}

/*
 * Every stream whose query would not cover what comes before the post goes
 * the stream's way: a captured one, the default streams, a blocking one
 * (it also waits for the legacy stream), and any failed query.  Each is
 * idle here, so only the rule can send it there.
 */
static void test_post_unsure_streams_enqueue(void **state)
{
	struct zsm_api_door *door = door_of(2);
	zsm_cu_stream defaults[3] = { ZSM_CU_STREAM_NULL,
				      ZSM_CU_STREAM_LEGACY,
				      ZSM_CU_STREAM_PER_THREAD };
	unsigned int slot = 1;
	uint64_t seq = 0;
	int now = -1, batches = 0;

	(void)state;
	for (int i = 0; i < 3; i++) {
		seq++;
		zsm_assert_int_eq(zsm_api_door_post(door, defaults[i], 1,
						     &slot, &seq, &now),
				  0);
		zsm_assert_int_eq(now, 0);
		zsm_assert_int_eq(fk.nbatches, ++batches);
		ready_reaches(door, 1, seq);
	}
	for (int c = 0; c < 3; c++) {
		fk.capturing = c == 0;
		fk.flags = c == 1 ? 0 : ZSM_CU_STREAM_NON_BLOCKING;
		fk.query_fails = c == 2;
		seq++;
		zsm_assert_int_eq(zsm_api_door_post(door, STREAM, 1, &slot,
						     &seq, &now),
				  0);
		zsm_assert_int_eq(now, 0);
		zsm_assert_int_eq(fk.nbatches, ++batches);
		ready_reaches(door, 1, seq);
	}
	/* The same stream, non-blocking, idle, not captured: now. */
	fk.capturing = fk.query_fails = 0;
	fk.flags = ZSM_CU_STREAM_NON_BLOCKING;
	seq++;
	zsm_assert_int_eq(zsm_api_door_post(door, STREAM, 1, &slot, &seq,
					     &now),
			  0);
	zsm_assert_int_eq(now, 1);
	zsm_assert_int_eq(fk.nbatches, batches);
	zsm_assert_int_eq(zsm_api_door_ready(door, 1), seq);
	zsm_api_door_free(door);
}

static void test_large_ring_splits(void **state)
{
	enum { N = 300 }; /* 600 operations: batches of 255, 255, 90 */
	struct zsm_api_door *door = door_of(N);
	unsigned int slots[N];
	uint64_t seqs[N];

	(void)state;
	for (unsigned int i = 0; i < N; i++) {
		slots[i] = N - 1 - i;
		seqs[i] = 1000 + i;
	}
	zsm_assert_int_eq(zsm_api_door_ring(door, STREAM, N, slots, seqs), 0);
	zsm_assert_int_eq(fk.nbatches, 3);
	zsm_assert_int_eq(fk.batch_len[0], 255);
	zsm_assert_int_eq(fk.batch_len[1], 255);
	zsm_assert_int_eq(fk.batch_len[2], 90);
	for (int i = 0; i < N; i++) {
		logged(i, ZSM_CU_STREAM_MEM_OP_WRITE_VALUE_64, 1, slots[i],
		       seqs[i]);
		logged(N + i, ZSM_CU_STREAM_MEM_OP_WAIT_VALUE_64, 0, slots[i],
		       seqs[i]);
	}
	ran_at_least(N, "every write of ready");
	for (int i = 0; i < N; i++)
		zsm_assert_int_eq(zsm_api_door_ready(door, slots[i]),
				  seqs[i]);
	for (int i = N - 1; i >= 0; i--)
		zsm_api_door_done(door, slots[i], seqs[i]);
	ran_at_least(2 * N, "every wait on done");
	zsm_api_door_free(door);
}

static void test_fail_releases_and_refuses(void **state)
{
	struct zsm_api_door *door = door_of(2);
	unsigned int slot = 0;
	uint64_t seq = 7;

	(void)state;
	zsm_assert_int_eq(zsm_api_door_ring(door, STREAM, 1, &slot, &seq), 0);
	/* A wait on slot 1, which nothing ever rang, queued behind. */
	zsm_assert_int_eq(zsm_api_door_wait(door, STREAM, 1, 40), 0);
	ready_reaches(door, 0, 7);
	zsm_api_door_fail(door, -EPIPE);
	ran_at_least(3, "the waits released by fail()");
	zsm_assert_int_eq(zsm_api_door_error(door), -EPIPE);
	/* A later error does not replace the first. */
	zsm_api_door_fail(door, -ETIMEDOUT);
	zsm_assert_int_eq(zsm_api_door_error(door), -EPIPE);
	/* done() after the failure does not take the word back. */
	zsm_api_door_done(door, 0, 8);
	zsm_assert_int_eq(zsm_api_door_wait_host(door, 0, 1000, 0), -EPIPE);
	/* Rings and waits are refused, and reach no stream. */
	seq = 8;
	zsm_assert_int_eq(zsm_api_door_ring(door, STREAM, 1, &slot, &seq),
			  -EPIPE);
	zsm_assert_int_eq(zsm_api_door_wait(door, STREAM, 1, 41), -EPIPE);
	zsm_assert_int_eq(fk.nbatches, 2);
	zsm_api_door_free(door);
}

/* fail() on a door nothing rang: its done word passes sequence numbers
 * far beyond the last ready (those of a ring that raced the failure),
 * and rings are refused. */
static void test_fail_releases_waits_ahead(void **state)
{
	struct zsm_api_door *door = door_of(1);
	unsigned int slot = 0;
	uint64_t seq = 3;

	(void)state;
	zsm_api_door_fail(door, -ECONNRESET);
	/* The word passes every seq a stream could have rung. */
	zsm_assert_int_eq(zsm_api_door_wait_host(door, 0, 1000000, 0),
			  -ECONNRESET);
	zsm_assert_int_eq(zsm_api_door_ring(door, STREAM, 1, &slot, &seq),
			  -ECONNRESET);
	zsm_assert_int_eq(fk.nbatches, 0);
	zsm_api_door_free(door);
}

/* A refused second batch leaves the stream half rung: the door fails
 * and releases what went in. */
static void test_refused_batch_fails_door(void **state)
{
	enum { N = 200 };
	struct zsm_api_door *door = door_of(N);
	unsigned int slots[N];
	uint64_t seqs[N];

	(void)state;
	for (unsigned int i = 0; i < N; i++) {
		slots[i] = i;
		seqs[i] = 1;
	}
	fk.refuse_batch = 1;
	zsm_assert_int_eq(zsm_api_door_ring(door, STREAM, N, slots, seqs),
			  -EINVAL);
	/* Nothing went in: the door stays usable. */
	zsm_assert_int_eq(zsm_api_door_error(door), 0);
	fk.refuse_batch = 3;
	zsm_assert_int_eq(zsm_api_door_ring(door, STREAM, N, slots, seqs),
			  -EINVAL);
	zsm_assert_int_eq(zsm_api_door_error(door), -EINVAL);
	zsm_assert_int_eq(fk.batch_len[1], 255);
	ran_at_least(255, "the half ring, released by the failure");
	zsm_api_door_free(door);
}

static void test_no_64_bit_memops(void **state)
{
	struct zsm_api_door *door = (void *)1;

	(void)state;
	fk.can_64 = 0;
	zsm_assert_int_eq(zsm_api_door_new(CTX, 4, &door), -EOPNOTSUPP);
	assert_null(door);
	assert_null(fk.host);
	assert_null(fake_current);
}

static void test_bad_slots(void **state)
{
	struct zsm_api_door *door = door_of(2), *none = NULL;
	unsigned int slots[2] = { 1, 2 };
	uint64_t seqs[2] = { 1, 1 };

	(void)state;
	zsm_assert_int_eq(zsm_api_door_ring(door, STREAM, 2, slots, seqs),
			  -EINVAL);
	zsm_assert_int_eq(zsm_api_door_wait(door, STREAM, 2, 1), -EINVAL);
	zsm_assert_int_eq(fk.nbatches, 0);
	zsm_assert_int_eq(zsm_api_door_new(CTX, 0, &none), -EINVAL);
	assert_null(none);
	zsm_api_door_free(door);
}

/* Host-memory mode: no CUDA table at all. */
struct host_proxy {
	struct zsm_api_door *door;
	uint64_t upto;
	int fail_at; /* fail instead of publishing this seq; 0 never */
};

static void *host_proxy_run(void *arg)
{
	struct host_proxy *p = arg;
	uint64_t seen = 0, end = zsm_now_ns() + DEADLINE_S * 1000000000ull;

	while (seen < p->upto && zsm_now_ns() < end) {
		uint64_t r = zsm_api_door_ready(p->door, 0);

		if (r == seen) {
			sched_yield();
			continue;
		}
		seen = r;
		if (p->fail_at && r == (uint64_t)p->fail_at) {
			zsm_api_door_fail(p->door, -EPIPE);
			return NULL;
		}
		zsm_api_door_done(p->door, 0, r);
	}
	return NULL;
}

static void test_host_mode(void **state)
{
	struct host_proxy p = { .upto = 50 };
	unsigned int slot = 0;
	pthread_t t;

	(void)state;
	zsm_cuda_use_table(NULL);
	zsm_assert_int_eq(zsm_api_door_new(NULL, 1, &p.door), 0);
	/* Nothing published: the host wait runs out and says so. */
	zsm_assert_int_eq(zsm_api_door_wait_host(p.door, 0, 1, 0),
			  -ETIMEDOUT);
	zsm_assert_int_eq(zsm_api_door_wait(p.door, NULL, 0, 1), -EINVAL);
	zsm_assert_int_eq(zsm_api_door_ring(p.door, STREAM, 1, &slot,
					     &p.upto),
			  -EINVAL);
	zsm_assert_int_eq(zsm_api_door_post(p.door, STREAM, 1, &slot,
					     &p.upto, NULL),
			  -EINVAL);
	zsm_assert_int_eq(zsm_api_door_ready(p.door, 0), 0);
	{
		/* Post in host mode: stored now, like ring. */
		struct zsm_api_door *d = NULL;
		uint64_t seq = 3;
		int now = -1;

		zsm_assert_int_eq(zsm_api_door_new(NULL, 1, &d), 0);
		zsm_assert_int_eq(zsm_api_door_post(d, NULL, 1, &slot, &seq,
						     &now),
				  0);
		zsm_assert_int_eq(now, 1);
		zsm_assert_int_eq(zsm_api_door_ready(d, 0), 3);
		zsm_api_door_free(d);
	}
	assert_int_equal(pthread_create(&t, NULL, host_proxy_run, &p), 0);
	for (uint64_t seq = 1; seq <= p.upto; seq++) {
		zsm_assert_int_eq(zsm_api_door_ring(p.door, NULL, 1, &slot,
						     &seq),
				  0);
		zsm_assert_int_eq(zsm_api_door_wait_host(p.door, 0, seq,
							  DEADLINE_S * 1000),
				  0);
	}
	pthread_join(t, NULL);
	zsm_api_door_free(p.door);

	/* A proxy that fails releases the host waiter with the error. */
	p.upto = 5;
	p.fail_at = 5;
	zsm_assert_int_eq(zsm_api_door_new(NULL, 1, &p.door), 0);
	assert_int_equal(pthread_create(&t, NULL, host_proxy_run, &p), 0);
	for (uint64_t seq = 1; seq <= 5; seq++) {
		zsm_assert_int_eq(zsm_api_door_ring(p.door, NULL, 1, &slot,
						     &seq),
				  0);
		zsm_assert_int_eq(zsm_api_door_wait_host(p.door, 0, seq,
							  DEADLINE_S * 1000),
				  seq < 5 ? 0 : -EPIPE);
	}
	pthread_join(t, NULL);
	zsm_api_door_free(p.door);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ring_then_done_releases,
						fake_setup, fake_teardown),
		cmocka_unit_test_setup_teardown(test_batch_in_order,
						fake_setup, fake_teardown),
		cmocka_unit_test_setup_teardown(
			test_post_idle_stream_stores_now, fake_setup,
			fake_teardown),
		cmocka_unit_test_setup_teardown(test_post_busy_stream_enqueues,
						fake_setup, fake_teardown),
		cmocka_unit_test_setup_teardown(
			test_post_unsure_streams_enqueue, fake_setup,
			fake_teardown),
		cmocka_unit_test_setup_teardown(test_large_ring_splits,
						fake_setup, fake_teardown),
		cmocka_unit_test_setup_teardown(test_fail_releases_and_refuses,
						fake_setup, fake_teardown),
		cmocka_unit_test_setup_teardown(test_fail_releases_waits_ahead,
						fake_setup, fake_teardown),
		cmocka_unit_test_setup_teardown(test_refused_batch_fails_door,
						fake_setup, fake_teardown),
		cmocka_unit_test_setup_teardown(test_no_64_bit_memops,
						fake_setup, fake_teardown),
		cmocka_unit_test_setup_teardown(test_bad_slots, fake_setup,
						fake_teardown),
		cmocka_unit_test_setup_teardown(test_host_mode, fake_setup,
						fake_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
