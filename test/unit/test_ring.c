/* SPDX-License-Identifier: MIT */
/* The MPSC descriptor queue: order, capacity, and concurrent producers. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "common/ring.h"
#include "zsm_test.h"

static void test_ring_pop_empty_returns_null(void **state)
{
	struct zsm_ring r;

	(void)state;
	zsm_assert_int_eq(zsm_ring_init(&r, 8), 0);
	assert_null(zsm_ring_pop(&r));
	assert_true(zsm_ring_empty(&r));
	zsm_ring_fini(&r);
}

static void test_ring_fifo_order(void **state)
{
	struct zsm_ring r;
	uintptr_t i;

	(void)state;
	zsm_assert_int_eq(zsm_ring_init(&r, 16), 0);
	/* Several laps, so wrap-around is covered. */
	for (int lap = 0; lap < 5; lap++) {
		for (i = 1; i <= 10; i++)
			zsm_assert_int_eq(zsm_ring_push(&r, (void *)i), 0);
		for (i = 1; i <= 10; i++)
			zsm_assert_int_eq((uintptr_t)zsm_ring_pop(&r), i);
	}
	zsm_ring_fini(&r);
}

static void test_ring_push_full_returns_eagain(void **state)
{
	struct zsm_ring r;

	(void)state;
	/* 5 rounds up to 8 slots. */
	zsm_assert_int_eq(zsm_ring_init(&r, 5), 0);
	for (uintptr_t i = 1; i <= 8; i++)
		zsm_assert_int_eq(zsm_ring_push(&r, (void *)i), 0);
	zsm_assert_int_eq(zsm_ring_push(&r, (void *)9), -EAGAIN);
	zsm_assert_int_eq((uintptr_t)zsm_ring_pop(&r), 1);
	zsm_assert_int_eq(zsm_ring_push(&r, (void *)9), 0);
	zsm_ring_fini(&r);
}

#define PRODUCERS 4
#define PER_PRODUCER 20000

struct producer {
	struct zsm_ring *ring;
	uintptr_t id;
};

static void *producer_main(void *arg)
{
	struct producer *p = arg;

	for (uintptr_t i = 0; i < PER_PRODUCER; i++) {
		void *item = (void *)((p->id << 32) | (i + 1));

		/* Yield when full: under valgrind threads share one core. */
		while (zsm_ring_push(p->ring, item) == -EAGAIN)
			sched_yield();
	}
	return NULL;
}

static void test_ring_many_producers_lose_nothing(void **state)
{
	struct zsm_ring r;
	pthread_t t[PRODUCERS];
	struct producer p[PRODUCERS];
	uintptr_t next[PRODUCERS] = {0};
	long got = 0;

	(void)state;
	zsm_assert_int_eq(zsm_ring_init(&r, 64), 0);
	for (int i = 0; i < PRODUCERS; i++) {
		p[i].ring = &r;
		p[i].id = (uintptr_t)i;
		pthread_create(&t[i], NULL, producer_main, &p[i]);
	}
	while (got < (long)PRODUCERS * PER_PRODUCER) {
		uintptr_t v = (uintptr_t)zsm_ring_pop(&r);
		uintptr_t id, seq;

		if (!v) {
			sched_yield();
			continue;
		}
		id = v >> 32;
		seq = v & 0xffffffffu;
		assert_true(id < PRODUCERS);
		/* Each producer's items arrive in its own order. */
		zsm_assert_int_eq(seq, next[id] + 1);
		next[id] = seq;
		got++;
	}
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(t[i], NULL);
	assert_null(zsm_ring_pop(&r));
	zsm_ring_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_pop_empty_returns_null),
		cmocka_unit_test(test_ring_fifo_order),
		cmocka_unit_test(test_ring_push_full_returns_eagain),
		cmocka_unit_test(test_ring_many_producers_lose_nothing),
	};
	return cmocka_run_group_tests_name("ring", tests, NULL, NULL);
}
