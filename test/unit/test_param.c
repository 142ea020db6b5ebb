/* SPDX-License-Identifier: MIT */
/* The ZSM_* table: defaults, parsing, range checks, refusal of bad values. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/param.h"
#include "zsm_test.h"

static const char *fake_env[16][2];

static const char *fake_getenv(const char *name)
{
	for (int i = 0; i < 16 && fake_env[i][0]; i++)
		if (strcmp(fake_env[i][0], name) == 0)
			return fake_env[i][1];
	return NULL;
}

static void set_env(const char *name, const char *value)
{
	int i = 0;

	while (fake_env[i][0] && strcmp(fake_env[i][0], name))
		i++;
	fake_env[i][0] = name;
	fake_env[i][1] = value;
}

static int reset(void **state)
{
	(void)state;
	memset(fake_env, 0, sizeof(fake_env));
	return zsm_param_load(fake_getenv);
}

static void test_param_defaults_apply(void **state)
{
	(void)state;
	zsm_assert_int_eq(zsm_param_int(ZSM_P_QUEUE_DEPTH), 4096);
	zsm_assert_int_eq(zsm_param_int(ZSM_P_PROXY), 0);
	assert_string_equal(zsm_param_str(ZSM_P_PROVIDER), "auto");
	zsm_assert_int_eq(zsm_param_from_env(ZSM_P_QUEUE_DEPTH), 0);
}

static void test_param_env_value_is_read(void **state)
{
	(void)state;
	set_env("ZSM_QUEUE_DEPTH", "128");
	set_env("ZSM_PROXY", "inline");
	set_env("ZSM_PROVIDER", "tcp");
	zsm_assert_int_eq(zsm_param_load(fake_getenv), 0);
	zsm_assert_int_eq(zsm_param_int(ZSM_P_QUEUE_DEPTH), 128);
	zsm_assert_int_eq(zsm_param_int(ZSM_P_PROXY), 1);
	assert_string_equal(zsm_param_str(ZSM_P_PROVIDER), "tcp");
	zsm_assert_int_eq(zsm_param_from_env(ZSM_P_QUEUE_DEPTH), 1);
}

static void test_param_out_of_range_is_refused(void **state)
{
	(void)state;
	set_env("ZSM_QUEUE_DEPTH", "8");
	zsm_assert_int_eq(zsm_param_load(fake_getenv), -EINVAL);
	/* The previous values stay. */
	zsm_assert_int_eq(zsm_param_int(ZSM_P_QUEUE_DEPTH), 4096);
	set_env("ZSM_QUEUE_DEPTH", "1000000");
	zsm_assert_int_eq(zsm_param_load(fake_getenv), -EINVAL);
}

static void test_param_garbage_is_refused(void **state)
{
	(void)state;
	set_env("ZSM_PROXY_SPIN_US", "12abc");
	zsm_assert_int_eq(zsm_param_load(fake_getenv), -EINVAL);
	set_env("ZSM_PROXY_SPIN_US", "");
	zsm_assert_int_eq(zsm_param_load(fake_getenv), -EINVAL);
	set_env("ZSM_PROXY_SPIN_US", "10");
	set_env("ZSM_MR_CACHE", "yes");
	zsm_assert_int_eq(zsm_param_load(fake_getenv), -EINVAL);
}

static void test_param_unknown_choice_is_refused(void **state)
{
	(void)state;
	set_env("ZSM_PROXY", "threads");
	zsm_assert_int_eq(zsm_param_load(fake_getenv), -EINVAL);
	set_env("ZSM_PROXY", "INLINE");
	zsm_assert_int_eq(zsm_param_load(fake_getenv), 0);
	zsm_assert_int_eq(zsm_param_int(ZSM_P_PROXY), 1);
}

static void test_param_defaults_are_within_range(void **state)
{
	(void)state;
	for (int i = 0; i < ZSM_P_COUNT; i++) {
		const struct zsm_param_desc *d = &zsm_param_descs[i];

		assert_non_null(d->help);
		if (d->type == ZSM_PARAM_INT || d->type == ZSM_PARAM_BOOL) {
			long long v = strtoll(d->def, NULL, 0);

			assert_true(v >= d->min && v <= d->max);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_param_defaults_apply, reset),
		cmocka_unit_test_setup(test_param_env_value_is_read, reset),
		cmocka_unit_test_setup(test_param_out_of_range_is_refused,
				       reset),
		cmocka_unit_test_setup(test_param_garbage_is_refused, reset),
		cmocka_unit_test_setup(test_param_unknown_choice_is_refused,
				       reset),
		cmocka_unit_test_setup(test_param_defaults_are_within_range,
				       reset),
	};
	return cmocka_run_group_tests_name("param", tests, NULL, NULL);
}
