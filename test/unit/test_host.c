/* SPDX-License-Identifier: MIT */
/* Host identity: which input wins, and what its hash promises. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/host.h"
#include "common/param.h"
#include "zsm_test.h"

#define BOOT "f341f61a-d8a3-4e82-9e83-375eb344d795"

static const char *fake_zsm_hostid;

static const char *fake_getenv(const char *name)
{
	if (strcmp(name, "ZSM_HOSTID") == 0)
		return fake_zsm_hostid;
	return NULL;
}

/* The real NCCL_HOSTID and ZSM_HOSTID of the test's environment must not
 * leak into the cases. */
static int reset(void **state)
{
	(void)state;
	fake_zsm_hostid = NULL;
	unsetenv("NCCL_HOSTID");
	return zsm_param_load(fake_getenv);
}

static void test_host_zsm_hostid_wins(void **state)
{
	enum zsm_host_source src;
	char id[ZSM_HOST_ID_MAX];

	(void)state;
	zsm_assert_int_eq(zsm_host_id_pick("ns-a", "nccl-id", "node1", BOOT,
					   id, sizeof(id), &src),
			  0);
	assert_string_equal(id, "ns-a");
	zsm_assert_int_eq(src, ZSM_HOST_SRC_ZSM_HOSTID);
}

static void test_host_nccl_hostid_beats_default(void **state)
{
	enum zsm_host_source src;
	char id[ZSM_HOST_ID_MAX];

	(void)state;
	/* ZSM_HOSTID's default is empty: that is "not set". */
	zsm_assert_int_eq(zsm_host_id_pick("", "nccl-id", "node1", BOOT, id,
					   sizeof(id), &src),
			  0);
	assert_string_equal(id, "nccl-id");
	zsm_assert_int_eq(src, ZSM_HOST_SRC_NCCL_HOSTID);
	zsm_assert_int_eq(zsm_host_id_pick(NULL, "nccl-id", "node1", BOOT, id,
					   sizeof(id), &src),
			  0);
	assert_string_equal(id, "nccl-id");
}

static void test_host_default_is_hostname_and_boot_id(void **state)
{
	enum zsm_host_source src;
	char id[ZSM_HOST_ID_MAX];

	(void)state;
	zsm_assert_int_eq(zsm_host_id_pick(NULL, "", "node1", BOOT, id,
					   sizeof(id), &src),
			  0);
	assert_string_equal(id, "node1:" BOOT);
	zsm_assert_int_eq(src, ZSM_HOST_SRC_BOOT_ID);
	/* No boot id (no /proc): the hostname alone, and said so. */
	zsm_assert_int_eq(zsm_host_id_pick(NULL, NULL, "node1", "", id,
					   sizeof(id), &src),
			  0);
	assert_string_equal(id, "node1");
	zsm_assert_int_eq(src, ZSM_HOST_SRC_HOSTNAME);
}

static void test_host_nothing_to_go_on_is_refused(void **state)
{
	enum zsm_host_source src;
	char id[ZSM_HOST_ID_MAX];

	(void)state;
	zsm_assert_int_eq(zsm_host_id_pick(NULL, NULL, "", BOOT, id,
					   sizeof(id), &src),
			  -EINVAL);
}

static void test_host_too_long_is_refused(void **state)
{
	enum zsm_host_source src;
	char id[8];

	(void)state;
	zsm_assert_int_eq(zsm_host_id_pick(NULL, "12345678", "n", BOOT, id,
					   sizeof(id), &src),
			  -ENAMETOOLONG);
	zsm_assert_int_eq(zsm_host_id_pick(NULL, NULL, "node1", BOOT, id,
					   sizeof(id), &src),
			  -ENAMETOOLONG);
	zsm_assert_int_eq(zsm_host_id_pick(NULL, "1234567", "n", BOOT, id,
					   sizeof(id), &src),
			  0);
}

/* The plugin's path: ZSM_HOSTID through the param table, NCCL_HOSTID
 * through the environment, each over the next. */
static void test_host_init_follows_precedence(void **state)
{
	char id[ZSM_HOST_ID_MAX];

	(void)state;
	zsm_assert_int_eq(zsm_host_init(), 0);
	/* Without /proc (some sandboxes) the hostname alone is the default. */
	assert_true(zsm_host_source() == ZSM_HOST_SRC_BOOT_ID ||
		    zsm_host_source() == ZSM_HOST_SRC_HOSTNAME);

	setenv("NCCL_HOSTID", "from-nccl", 1);
	zsm_assert_int_eq(zsm_host_init(), 0);
	zsm_assert_int_eq(zsm_host_source(), ZSM_HOST_SRC_NCCL_HOSTID);
	zsm_assert_int_eq(zsm_host_identity(id, sizeof(id)), 0);
	assert_string_equal(id, "from-nccl");

	fake_zsm_hostid = "from-zsm";
	zsm_assert_int_eq(zsm_param_load(fake_getenv), 0);
	zsm_assert_int_eq(zsm_host_init(), 0);
	zsm_assert_int_eq(zsm_host_source(), ZSM_HOST_SRC_ZSM_HOSTID);
	zsm_assert_int_eq(zsm_host_identity(id, sizeof(id)), 0);
	assert_string_equal(id, "from-zsm");
	zsm_assert_int_eq(zsm_host_hash(), zsm_host_id_hash("from-zsm"));
	zsm_assert_int_eq(zsm_host_identity(id, 4), -ENOSPC);
}

static void test_host_hash_differs_per_id(void **state)
{
	(void)state;
	assert_true(zsm_host_id_hash("ns-a") != zsm_host_id_hash("ns-b"));
	assert_true(zsm_host_id_hash("node1:" BOOT) !=
		    zsm_host_id_hash("node2:" BOOT));
	/* One bit of input moves about half the output bits. */
	zsm_assert_int_eq(__builtin_popcountll(zsm_host_id_hash("node1") ^
					       zsm_host_id_hash("node2")) > 16,
			  1);
}

static void test_host_hash_is_stable(void **state)
{
	char copy[32];

	(void)state;
	snprintf(copy, sizeof(copy), "%s", "ns-a");
	zsm_assert_int_eq(zsm_host_id_hash("ns-a"), zsm_host_id_hash(copy));
	/* Both processes of a test must agree through the real path too. */
	fake_zsm_hostid = "ns-a";
	zsm_assert_int_eq(zsm_param_load(fake_getenv), 0);
	zsm_assert_int_eq(zsm_host_init(), 0);
	zsm_assert_int_eq(zsm_host_hash(), zsm_host_id_hash(copy));
}

static void test_host_hash_is_never_zero(void **state)
{
	char id[32];

	(void)state;
	assert_true(zsm_host_id_hash("") != 0);
	for (int i = 0; i < 100000; i++) {
		snprintf(id, sizeof(id), "host-%d", i);
		assert_true(zsm_host_id_hash(id) != 0);
	}
}

/* Distinct identities almost never share a hash: none in 100000. */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void test_host_hash_has_no_collisions(void **state)
{
	enum { N = 100000 };
	uint64_t *h = malloc(N * sizeof(*h));
	char id[32];

	(void)state;
	assert_non_null(h);
	for (int i = 0; i < N; i++) {
		snprintf(id, sizeof(id), "node%d", i);
		h[i] = zsm_host_id_hash(id);
	}
	qsort(h, N, sizeof(*h), cmp_u64);
	for (int i = 1; i < N; i++)
		assert_true(h[i] != h[i - 1]);
	free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_host_zsm_hostid_wins, reset),
		cmocka_unit_test_setup(test_host_nccl_hostid_beats_default,
				       reset),
		cmocka_unit_test_setup(
			test_host_default_is_hostname_and_boot_id, reset),
		cmocka_unit_test_setup(test_host_nothing_to_go_on_is_refused,
				       reset),
		cmocka_unit_test_setup(test_host_too_long_is_refused, reset),
		cmocka_unit_test_setup(test_host_init_follows_precedence,
				       reset),
		cmocka_unit_test_setup(test_host_hash_differs_per_id, reset),
		cmocka_unit_test_setup(test_host_hash_is_stable, reset),
		cmocka_unit_test_setup(test_host_hash_is_never_zero, reset),
		cmocka_unit_test_setup(test_host_hash_has_no_collisions,
				       reset),
	};
	return cmocka_run_group_tests_name("host", tests, NULL, NULL);
}
