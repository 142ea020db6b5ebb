/* SPDX-License-Identifier: MIT */
/*
 * The choice of path per data message (net_path.c): both sides of a comm
 * must put the k-th message of each tag on the same path whatever order
 * the tags come in, since nothing passes between them about it.
 */
#include <limits.h>
#include <stdlib.h>

#include "net/net_path.h"
#include "zsm_test.h"

static void test_path_one_path_holds_nothing(void **state)
{
	struct zsm_net_path_seq s = {0};
	int p = -1;

	(void)state;
	for (int k = 0; k < 100; k++) {
		zsm_assert_int_eq(zsm_net_path_next(&s, k % 7, 1, &p), 0);
		zsm_assert_int_eq(p, 0);
	}
	/* The hot path of a one-path comm allocates nothing. */
	assert_null(s.slots);
	zsm_assert_int_eq(s.n, 0);
	zsm_net_path_seq_fini(&s);
}

static void test_path_tag_takes_turns(void **state)
{
	struct zsm_net_path_seq s = {0};
	int p;

	(void)state;
	for (int k = 0; k < 40; k++) {
		zsm_assert_int_eq(zsm_net_path_next(&s, 5, 4, &p), 0);
		zsm_assert_int_eq(p, k % 4);
	}
	zsm_net_path_seq_fini(&s);
}

/* Sender and receiver see the same messages per tag in another order of
 * tags (NCCL orders only within a tag): each message's path agrees. */
static void test_path_sides_agree_across_orders(void **state)
{
	enum { TAGS = 6, PER = 50, N = TAGS * PER, PATHS = 3 };
	struct zsm_net_path_seq tx = {0}, rx = {0};
	int order_tx[N], order_rx[N], path_tx[TAGS][PER], path_rx[TAGS][PER];
	int seen_tx[TAGS] = {0}, seen_rx[TAGS] = {0};

	(void)state;
	srand(12345);
	for (int i = 0; i < N; i++)
		order_tx[i] = order_rx[i] = i % TAGS;
	/* Two different shuffles of the same multiset of tags. */
	for (int i = N - 1; i > 0; i--) {
		int a = rand() % (i + 1), b = rand() % (i + 1), t;

		t = order_tx[i], order_tx[i] = order_tx[a], order_tx[a] = t;
		t = order_rx[i], order_rx[i] = order_rx[b], order_rx[b] = t;
	}
	for (int i = 0; i < N; i++) {
		int t = order_tx[i], u = order_rx[i];

		zsm_assert_int_eq(zsm_net_path_next(&tx, t * 1000, PATHS,
						    &path_tx[t][seen_tx[t]++]),
				  0);
		zsm_assert_int_eq(zsm_net_path_next(&rx, u * 1000, PATHS,
						    &path_rx[u][seen_rx[u]++]),
				  0);
	}
	for (int t = 0; t < TAGS; t++)
		for (int k = 0; k < PER; k++) {
			zsm_assert_int_eq(path_tx[t][k], path_rx[t][k]);
			zsm_assert_int_eq(path_tx[t][k], k % PATHS);
		}
	zsm_net_path_seq_fini(&tx);
	zsm_net_path_seq_fini(&rx);
}

/* Many tags, any int, through the table's growth: each keeps its count. */
static void test_path_many_tags_keep_counts(void **state)
{
	enum { TAGS = 1000 };
	struct zsm_net_path_seq s = {0};
	int p;

	(void)state;
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < TAGS; i++) {
			int tag = i == 0 ? INT_MIN : i == 1 ? INT_MAX
						  : i * 7919 - 500000;

			zsm_assert_int_eq(zsm_net_path_next(&s, tag, 8, &p), 0);
			zsm_assert_int_eq(p, round);
		}
	zsm_assert_int_eq(s.n, TAGS);
	assert_true(s.cap >= 2 * TAGS);
	zsm_net_path_seq_fini(&s);
	assert_null(s.slots);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_one_path_holds_nothing),
		cmocka_unit_test(test_path_tag_takes_turns),
		cmocka_unit_test(test_path_sides_agree_across_orders),
		cmocka_unit_test(test_path_many_tags_keep_counts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
