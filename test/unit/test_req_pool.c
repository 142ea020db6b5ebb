/* SPDX-License-Identifier: MIT */
/*
 * A comm's request pool (core/req.c): its bound, raised by reserve; a
 * walk that meets every request; and NCCL threads taking and giving
 * back requests at once without a lock, none handed out twice.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "zsm_test.h"

#define THREADS 4
#define ROUNDS 200000

/* Just enough of a transport for the pool: its request size. */
static const struct zsm_comm_ops fake_ops = {
	.name = "fake",
	.req_size = sizeof(struct zsm_req) + 40,
	.req_clear = 40,
};

static struct zsm_comm *fake_comm(void)
{
	struct zsm_comm *c = zsm_comm_new(ZSM_COMM_SEND);

	assert_non_null(c);
	zsm_comm_bind(c, &fake_ops, NULL, 1, "fake0");
	return c;
}

/* Take requests until the pool says none: how many, into out. */
static int take_all(struct zsm_comm *c, struct zsm_req **out, int cap)
{
	int n = 0;

	while (n < cap && (out[n] = zsm_req_alloc(c)))
		n++;
	return n;
}

static void test_req_pool_bound(void **state)
{
	static struct zsm_req *r[ZSM_REQ_SLABS * ZSM_REQ_SLAB + 1];
	struct zsm_comm *c = fake_comm();
	int n = take_all(c, r, (int)(sizeof(r) / sizeof(r[0])));

	(void)state;
	zsm_assert_int_eq(n, ZSM_MAX_REQUESTS);
	/* Each once, and numbered as the walk finds them. */
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			assert_ptr_not_equal(r[i], r[j]);
	zsm_req_free(r[7]);
	r[7] = zsm_req_alloc(c);
	assert_non_null(r[7]);
	assert_null(zsm_req_alloc(c));
	/* Two sets: the pool grows again, to twice the bound. */
	zsm_req_pool_reserve(c, 2 * ZSM_MAX_REQUESTS);
	n += take_all(c, r + n, (int)(sizeof(r) / sizeof(r[0])) - n);
	zsm_assert_int_eq(n, 2 * ZSM_MAX_REQUESTS);
	for (int i = 0; i < n; i++)
		zsm_req_free(r[i]);
	zsm_comm_release(c);
}

static void test_req_pool_walk_meets_all(void **state)
{
	struct zsm_req *r[3 * ZSM_REQ_SLAB];
	struct zsm_comm *c = fake_comm();
	int n = take_all(c, r, 3 * ZSM_REQ_SLAB), seen = 0;

	(void)state;
	zsm_assert_int_eq(n, 3 * ZSM_REQ_SLAB);
	for (struct zsm_req *q = zsm_req_next(c, NULL); q;
	     q = zsm_req_next(c, q)) {
		int found = 0;

		for (int i = 0; i < n; i++)
			found += q == r[i];
		zsm_assert_int_eq(found, 1);
		seen++;
	}
	zsm_assert_int_eq(seen, n);
	for (int i = 0; i < n; i++)
		zsm_req_free(r[i]);
	zsm_comm_release(c);
}

struct race {
	struct zsm_comm *c;
	/* Who holds request number k now (thread + 1, 0: nobody). */
	atomic_int owner[ZSM_REQ_SLABS * ZSM_REQ_SLAB];
	atomic_int twice; /* a request handed to two holders */
	atomic_int taken;
};

struct racer {
	struct race *race;
	int id;
};

static void *racer_main(void *arg)
{
	struct racer *me = arg;
	struct race *x = me->race;
	struct zsm_req *held[8];

	for (int round = 0; round < ROUNDS; round++) {
		int n = 1 + round % 8, got = 0;

		for (int i = 0; i < n; i++) {
			int zero = 0;

			held[got] = zsm_req_alloc(x->c);
			if (!held[got])
				break;
			/* relaxed, all: the counts are read after the join. */
			if (!atomic_compare_exchange_strong_explicit(
				    &x->owner[held[got]->pool_number], &zero,
				    me->id + 1, memory_order_relaxed,
				    memory_order_relaxed))
				atomic_fetch_add_explicit(&x->twice, 1,
							  memory_order_relaxed);
			atomic_fetch_add_explicit(&x->taken, 1,
						  memory_order_relaxed);
			got++;
		}
		while (got-- > 0) {
			atomic_store_explicit(&x->owner[held[got]->pool_number],
					      0, memory_order_relaxed);
			zsm_req_free(held[got]);
		}
	}
	return NULL;
}

static void test_req_pool_threads_never_share(void **state)
{
	static struct race x;
	struct racer who[THREADS];
	pthread_t t[THREADS];
	int slabs;

	(void)state;
	memset(&x, 0, sizeof(x));
	x.c = fake_comm();
	for (int i = 0; i < THREADS; i++) {
		who[i] = (struct racer){.race = &x, .id = i};
		assert_int_equal(pthread_create(&t[i], NULL, racer_main,
						&who[i]),
				 0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	zsm_assert_int_eq(atomic_load_explicit(&x.twice, memory_order_relaxed),
			  0);
	/* Every round took at least one (the bound is far above 32). */
	assert_true(atomic_load_explicit(&x.taken, memory_order_relaxed) >=
		    THREADS * ROUNDS);
	/* At most 32 held at once: the pool never passed its bound. */
	slabs = atomic_load_explicit(&x.c->pool.nslabs, memory_order_relaxed);
	assert_true(slabs >= 1 && slabs * ZSM_REQ_SLAB <= ZSM_MAX_REQUESTS);
	zsm_comm_release(x.c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_req_pool_bound),
		cmocka_unit_test(test_req_pool_walk_meets_all),
		cmocka_unit_test(test_req_pool_threads_never_share),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
