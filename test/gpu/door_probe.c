/* SPDX-License-Identifier: MIT */
/*
 * door_probe: the stream doorbell (api/api_door.h) on a real GPU, for
 * the GPU machine.  A CPU thread plays the proxy (acquire loads of ready,
 * done published at once); the main thread rings N times on one stream
 * and reports the time per operation and the CPU time of each ring.
 * Then it checks that fail() releases a stream blocked on a wait no one
 * answers.  Exit 0 passed, 1 failed, 77 no CUDA device here.
 *
 * usage: door_probe [N]   (default 10000)
 *
 * cuda.h is included only to check that zsm's own declarations of the
 * memory operations match the toolkit's.
 */
#include <cuda.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/clock.h"
#include "common/cuda.h"
#include "api/api_door.h"
#include "common/log.h"

_Static_assert(sizeof(zsm_cu_memop) == sizeof(CUstreamBatchMemOpParams),
	       "memop size");
_Static_assert(offsetof(zsm_cu_memop, value.address) ==
		       offsetof(CUstreamBatchMemOpParams, waitValue.address),
	       "memop address");
_Static_assert(offsetof(zsm_cu_memop, value.value64) ==
		       offsetof(CUstreamBatchMemOpParams, waitValue.value64),
	       "memop value64");
_Static_assert(offsetof(zsm_cu_memop, value.flags) ==
		       offsetof(CUstreamBatchMemOpParams, writeValue.flags),
	       "memop flags");
_Static_assert(ZSM_CU_STREAM_MEM_OP_WAIT_VALUE_64 ==
		       CU_STREAM_MEM_OP_WAIT_VALUE_64,
	       "WAIT_VALUE_64");
_Static_assert(ZSM_CU_STREAM_MEM_OP_WRITE_VALUE_64 ==
		       CU_STREAM_MEM_OP_WRITE_VALUE_64,
	       "WRITE_VALUE_64");
_Static_assert(ZSM_CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS ==
		       CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS,
	       "attribute 122");
_Static_assert(ZSM_CU_MEMHOSTALLOC_DEVICEMAP == CU_MEMHOSTALLOC_DEVICEMAP,
	       "DEVICEMAP");
_Static_assert(ZSM_CU_STREAM_NON_BLOCKING == CU_STREAM_NON_BLOCKING,
	       "NON_BLOCKING");
_Static_assert(ZSM_CU_STREAM_CAPTURE_STATUS_NONE ==
		       CU_STREAM_CAPTURE_STATUS_NONE,
	       "CAPTURE_STATUS_NONE");

#define DEADLINE_NS (60ull * 1000000000ull)

struct proxy {
	struct zsm_api_door *door;
	uint64_t upto;
	_Atomic int stop;
	uint64_t answered;
};

static void *proxy_run(void *arg)
{
	struct proxy *p = arg;
	uint64_t seen = 0;

	while (seen < p->upto && !atomic_load_explicit(&p->stop,
						       memory_order_relaxed)) {
		uint64_t r = zsm_api_door_ready(p->door, 0);

		if (r == seen)
			continue;
		seen = r;
		zsm_api_door_done(p->door, 0, r);
	}
	p->answered = seen;
	return NULL;
}

/* Wait, at most a minute, for the stream to drain; says what it waited on. */
static int drain(const struct zsm_cuda_drv *d, zsm_cu_stream s,
		 const char *what)
{
	uint64_t end = zsm_now_ns() + DEADLINE_NS;
	zsm_cu_result res;

	while ((res = d->stream_query(s)) == ZSM_CU_ERROR_NOT_READY) {
		if (zsm_now_ns() > end) {
			fprintf(stderr,
				"FAIL: the stream did not drain within 60 s "
				"(%s)\n",
				what);
			return -ETIMEDOUT;
		}
		sched_yield();
	}
	if (res != ZSM_CU_SUCCESS) {
		fprintf(stderr, "FAIL: cuStreamQuery (%s): CUDA error %d\n",
			what, res);
		return -EIO;
	}
	return 0;
}

/*
 * zsm_api_door_post on the real driver, seq to seq + 4 (no proxy): an
 * idle stream of ours is written now; one held behind a wait gets the
 * write on the stream, after the wait; an idle blocking stream and the
 * legacy stream go the stream's way.  1 on a failure, said.
 */
static int post_probe(const struct zsm_cuda_drv *d,
		      struct zsm_api_door *door, zsm_cu_stream s,
		      uint64_t seq)
{
	zsm_cu_stream blocking = NULL;
	unsigned int slot = 0;
	uint64_t held = seq + 1, after = seq + 2;
	int now = -1;

	if ((void *)ZSM_CU_STREAM_LEGACY != (void *)CU_STREAM_LEGACY ||
	    (void *)ZSM_CU_STREAM_PER_THREAD != (void *)CU_STREAM_PER_THREAD) {
		fprintf(stderr, "FAIL: zsm's default stream handles are not "
				"cuda.h's\n");
		return 1;
	}
	if (zsm_api_door_post(door, s, 1, &slot, &seq, &now) || now != 1 ||
	    zsm_api_door_ready(door, 0) != seq) {
		fprintf(stderr, "FAIL: post on an idle stream: now %d, ready "
				"%llu, not %llu\n",
			now, (unsigned long long)zsm_api_door_ready(door, 0),
			(unsigned long long)seq);
		return 1;
	}
	/* A ring no one answers holds the stream at its wait. */
	if (zsm_api_door_ring(door, s, 1, &slot, &held) ||
	    zsm_api_door_post(door, s, 1, &slot, &after, &now) || now != 0) {
		fprintf(stderr, "FAIL: post behind a held wait: now %d\n",
			now);
		return 1;
	}
	if (d->stream_query(s) != ZSM_CU_ERROR_NOT_READY ||
	    zsm_api_door_ready(door, 0) == after) {
		fprintf(stderr, "FAIL: the post's write passed a held wait\n");
		return 1;
	}
	zsm_api_door_done(door, 0, held);
	if (drain(d, s, "a post's write after a released wait"))
		return 1;
	if (zsm_api_door_ready(door, 0) != after) {
		fprintf(stderr, "FAIL: ready %llu after the post's write, not "
				"%llu\n",
			(unsigned long long)zsm_api_door_ready(door, 0),
			(unsigned long long)after);
		return 1;
	}
	after++;
	if (d->stream_create(&blocking, 0) != ZSM_CU_SUCCESS ||
	    drain(d, blocking, "a new blocking stream") ||
	    zsm_api_door_post(door, blocking, 1, &slot, &after, &now) ||
	    now != 0 || drain(d, blocking, "a post's write") ||
	    zsm_api_door_ready(door, 0) != after) {
		fprintf(stderr, "FAIL: post on an idle blocking stream: now "
				"%d\n",
			now);
		return 1;
	}
	d->stream_destroy(blocking);
	after++;
	if (zsm_api_door_post(door, ZSM_CU_STREAM_LEGACY, 1, &slot, &after,
			       &now) ||
	    now != 0 || drain(d, ZSM_CU_STREAM_LEGACY, "a post's write") ||
	    zsm_api_door_ready(door, 0) != after) {
		fprintf(stderr, "FAIL: post on the legacy stream: now %d\n",
			now);
		return 1;
	}
	printf("door: post stores at once on an idle non-blocking stream, and "
	       "goes on the stream behind a held wait, on a blocking stream and "
	       "on the legacy stream\n");
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000;
	struct proxy p = { .upto = n };
	const struct zsm_cuda_drv *d;
	struct zsm_api_door *door;
	zsm_cu_context ctx;
	zsm_cu_stream s = NULL;
	char why[256] = "";
	unsigned int slot = 0;
	uint64_t t0, t1, t2, seq;
	pthread_t t;
	int ret;

	if (!n) {
		fprintf(stderr, "usage: door_probe [N > 0]\n");
		return 2;
	}
	/* zsm_cuda_init says at INFO why there is no CUDA. */
	zsm_log_set_level(ZSM_LOG_INFO);
	ret = zsm_cuda_init();
	zsm_log_set_level(ZSM_LOG_WARN);
	if (ret || zsm_cuda_default_ctx(&ctx, why, sizeof(why))) {
		printf("SKIP: no CUDA device here (%s)\n",
		       why[0] ? why : "the INFO line above says why");
		return 77;
	}
	d = zsm_cuda_table();
	if (d->stream_create(&s, ZSM_CU_STREAM_NON_BLOCKING) !=
	    ZSM_CU_SUCCESS) {
		fprintf(stderr, "FAIL: cuStreamCreate\n");
		return 1;
	}
	ret = zsm_api_door_new(ctx, 1, &door);
	if (ret) {
		fprintf(stderr, "FAIL: zsm_api_door_new: %d (see the WARN)\n",
			ret);
		return 1;
	}
	p.door = door;
	pthread_create(&t, NULL, proxy_run, &p);
	t0 = zsm_now_ns();
	for (seq = 1; seq <= n; seq++) {
		ret = zsm_api_door_ring(door, s, 1, &slot, &seq);
		if (ret) {
			fprintf(stderr, "FAIL: ring %llu: %d\n",
				(unsigned long long)seq, ret);
			break;
		}
	}
	t1 = zsm_now_ns();
	if (!ret)
		ret = drain(d, s, "rings the proxy answers");
	t2 = zsm_now_ns();
	atomic_store_explicit(&p.stop, 1, memory_order_relaxed);
	pthread_join(t, NULL);
	if (ret)
		return 1;
	printf("door: %llu rings, %.2f us per op end to end, %.2f us CPU per "
	       "ring (one write + one wait batch); proxy answered %llu\n",
	       (unsigned long long)n, (double)(t2 - t0) / 1e3 / (double)n,
	       (double)(t1 - t0) / 1e3 / (double)n,
	       (unsigned long long)p.answered);
	if (p.answered != n) {
		fprintf(stderr, "FAIL: the proxy saw ready %llu, not %llu\n",
			(unsigned long long)p.answered,
			(unsigned long long)n);
		return 1;
	}

	/* No proxy now. */
	if (post_probe(d, door, s, n + 1))
		return 1;
	/* The wait can only pass through fail(). */
	seq = n + 6;
	ret = zsm_api_door_ring(door, s, 1, &slot, &seq);
	if (ret) {
		fprintf(stderr, "FAIL: ring before fail: %d\n", ret);
		return 1;
	}
	if (d->stream_query(s) != ZSM_CU_ERROR_NOT_READY) {
		fprintf(stderr, "FAIL: the stream passed a wait no one "
				"answered\n");
		return 1;
	}
	zsm_api_door_fail(door, -EPIPE);
	if (drain(d, s, "a wait released by fail()"))
		return 1;
	seq = n + 7;
	if (zsm_api_door_ring(door, s, 1, &slot, &seq) != -EPIPE) {
		fprintf(stderr, "FAIL: a ring after fail was not refused\n");
		return 1;
	}
	printf("door: fail() released a blocked stream; later rings are "
	       "refused\nPASS\n");
	zsm_api_door_free(door);
	d->stream_destroy(s);
	return 0;
}
