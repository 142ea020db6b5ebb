/* SPDX-License-Identifier: MIT */
/* Id maps: ids are unique, in range and never 0; removal and growth. */
#include <stdlib.h>

#include "common/idmap.h"
#include "zsm_test.h"

static void test_idmap_ids_unique_in_range(void **state)
{
	enum { N = 5000 };
	struct zsm_idmap m;
	uint32_t *ids = calloc(N, sizeof(*ids));
	int *objs = calloc(N, sizeof(*objs));

	(void)state;
	zsm_idmap_init(&m, (1u << 23) - 1);
	for (int i = 0; i < N; i++) {
		zsm_assert_int_eq(zsm_idmap_add(&m, &objs[i], &ids[i]), 0);
		assert_true(ids[i] >= 1 && ids[i] <= (1u << 23) - 1);
	}
	for (int i = 0; i < N; i++)
		assert_ptr_equal(zsm_idmap_find(&m, ids[i]), &objs[i]);
	/* Half go: the rest are still found, the gone ones are not. */
	for (int i = 0; i < N; i += 2)
		zsm_idmap_remove(&m, ids[i]);
	for (int i = 0; i < N; i++)
		assert_ptr_equal(zsm_idmap_find(&m, ids[i]),
				 i % 2 ? &objs[i] : NULL);
	zsm_assert_int_eq(m.used, N / 2);
	assert_null(zsm_idmap_find(&m, 0));
	zsm_idmap_fini(&m);
	free(ids);
	free(objs);
}

static void test_idmap_small_space_fills_and_refuses(void **state)
{
	struct zsm_idmap m;
	uint32_t id, seen[9] = {0};
	int obj;

	(void)state;
	zsm_idmap_init(&m, 8);
	/* At most half the space is handed out, so a new id is found
	 * quickly even by random probing. */
	for (int i = 0; i < 4; i++) {
		zsm_assert_int_eq(zsm_idmap_add(&m, &obj, &id), 0);
		assert_true(id >= 1 && id <= 8);
		zsm_assert_int_eq(seen[id], 0);
		seen[id] = 1;
	}
	assert_true(zsm_idmap_add(&m, &obj, &id) < 0);
	zsm_idmap_fini(&m);
}

static void test_idmap_churn_keeps_finding(void **state)
{
	struct zsm_idmap m;
	uint32_t ids[64];
	int objs[64];

	(void)state;
	zsm_idmap_init(&m, 1000000);
	for (int i = 0; i < 64; i++)
		zsm_assert_int_eq(zsm_idmap_add(&m, &objs[i], &ids[i]), 0);
	/* Tombstones pile up and are swept by rebuilds. */
	for (int round = 0; round < 20000; round++) {
		int k = round % 64;

		zsm_idmap_remove(&m, ids[k]);
		zsm_assert_int_eq(zsm_idmap_add(&m, &objs[k], &ids[k]), 0);
	}
	for (int i = 0; i < 64; i++)
		assert_ptr_equal(zsm_idmap_find(&m, ids[i]), &objs[i]);
	assert_true(m.cap <= 1024);
	zsm_idmap_fini(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idmap_ids_unique_in_range),
		cmocka_unit_test(test_idmap_small_space_fills_and_refuses),
		cmocka_unit_test(test_idmap_churn_keeps_finding),
	};

	return cmocka_run_group_tests_name("idmap", tests, NULL, NULL);
}
