/* SPDX-License-Identifier: MIT */
/*
 * Who runs progress passes from test() (ZSM_PROXY_ASSIST): always where
 * the process has 4 CPUs or fewer, never when told, and with more CPUs
 * only for a caller that polls the same request again (it is waiting),
 * not for one going round many (NCCL's proxy thread).
 */
#include "proxy/proxy.h"
#include "zsm_test.h"

/* ZSM_PROXY_ASSIST's choice indices: auto, "0", "1". */
#define AUTO 0
#define OFF 1
#define ON 2

/* Three requests, known by their addresses only. */
static int reqs[3];

static void test_proxy_assist_mode_follows_cpus_and_setting(void **state)
{
	(void)state;
	zsm_assert_int_eq(zsm_proxy_assist_mode(AUTO, 1),
			  ZSM_PROXY_ASSIST_ALWAYS);
	zsm_assert_int_eq(zsm_proxy_assist_mode(AUTO, 4),
			  ZSM_PROXY_ASSIST_ALWAYS);
	zsm_assert_int_eq(zsm_proxy_assist_mode(AUTO, 5),
			  ZSM_PROXY_ASSIST_WAITER);
	zsm_assert_int_eq(zsm_proxy_assist_mode(AUTO, 256),
			  ZSM_PROXY_ASSIST_WAITER);
	/* An explicit setting wins whatever the CPUs. */
	zsm_assert_int_eq(zsm_proxy_assist_mode(OFF, 2),
			  ZSM_PROXY_ASSIST_NEVER);
	zsm_assert_int_eq(zsm_proxy_assist_mode(OFF, 64),
			  ZSM_PROXY_ASSIST_NEVER);
	zsm_assert_int_eq(zsm_proxy_assist_mode(ON, 64),
			  ZSM_PROXY_ASSIST_ALWAYS);
}

static void test_proxy_assist_waiter_only_on_a_repeat(void **state)
{
	const void *polled = NULL;

	(void)state;
	/* Going round three requests: never. */
	for (int round = 0; round < 3; round++) {
		assert_false(zsm_proxy_assist_wants(ZSM_PROXY_ASSIST_WAITER,
						    &polled, &reqs[0]));
		assert_false(zsm_proxy_assist_wants(ZSM_PROXY_ASSIST_WAITER,
						    &polled, &reqs[1]));
		assert_false(zsm_proxy_assist_wants(ZSM_PROXY_ASSIST_WAITER,
						    &polled, &reqs[2]));
	}
	/* Waiting on one: from the second poll on. */
	assert_true(zsm_proxy_assist_wants(ZSM_PROXY_ASSIST_WAITER, &polled,
					   &reqs[2]));
	assert_true(zsm_proxy_assist_wants(ZSM_PROXY_ASSIST_WAITER, &polled,
					   &reqs[2]));
	/* Moving on starts over. */
	assert_false(zsm_proxy_assist_wants(ZSM_PROXY_ASSIST_WAITER, &polled,
					    &reqs[0]));
	assert_true(zsm_proxy_assist_wants(ZSM_PROXY_ASSIST_WAITER, &polled,
					   &reqs[0]));
}

static void test_proxy_assist_fixed_modes_ignore_the_caller(void **state)
{
	const void *polled = NULL;

	(void)state;
	assert_true(zsm_proxy_assist_wants(ZSM_PROXY_ASSIST_ALWAYS, &polled,
					   &reqs[0]));
	assert_true(zsm_proxy_assist_wants(ZSM_PROXY_ASSIST_ALWAYS, &polled,
					   &reqs[1]));
	assert_false(zsm_proxy_assist_wants(ZSM_PROXY_ASSIST_NEVER, &polled,
					    &reqs[1]));
	/* Each still records what it saw. */
	assert_ptr_equal(polled, &reqs[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
			test_proxy_assist_mode_follows_cpus_and_setting),
		cmocka_unit_test(test_proxy_assist_waiter_only_on_a_repeat),
		cmocka_unit_test(
			test_proxy_assist_fixed_modes_ignore_the_caller),
	};

	return cmocka_run_group_tests_name("proxy", tests, NULL, NULL);
}
