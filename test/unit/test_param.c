/* SPDX-License-Identifier: MIT */
/* The ZSM_* table: defaults, parsing, range checks, refusal of bad values. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/param.h"
#include "log_capture.h"
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
	zsm_log_capture_start();
	return zsm_param_load(fake_getenv);
}

static int forget_logger(void **state)
{
	(void)state;
	zsm_log_capture_stop();
	return 0;
}

/* Loading with name=text is refused, with a WARN holding every part. */
static void assert_refused(const char *name, const char *text,
			   const char *allowed)
{
	char want[160];

	set_env(name, text);
	zsm_log_capture_start();
	if (zsm_param_load(fake_getenv) != -EINVAL)
		fail_msg("%s='%s' was taken", name, text);
	snprintf(want, sizeof(want), "%s='%s' is not allowed", name, text);
	if (!strstr(zsm_log_captured, want) ||
	    !strstr(zsm_log_captured, allowed))
		fail_msg("%s='%s': want a WARN with \"%s\" and \"%s\", got "
			 "\"%s\"",
			 name, text, want, allowed, zsm_log_captured);
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

static void test_param_int_not_plain_decimal_is_refused(void **state)
{
	/* Octal, hex, signs, spaces, leading zeros, exponents, overflow. */
	static const char *const bad[] = {
		"0400", "0x100", "0X100", "+1", "-1", " 5", "5 ", "\t5",
		"0100000", "00", "1e3", "1.5", "1_000", "1,000", "",
		"99999999999999999999", "9223372036854775808",
	};
	const char *allowed = "use a decimal integer in [100, 3600000], "
			      "digits only (no sign, space, leading zero "
			      "or hex)";

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_refused("ZSM_CONNECT_TIMEOUT_MS", bad[i], allowed);
		/* The previous value stays. */
		zsm_assert_int_eq(zsm_param_int(ZSM_P_CONNECT_TIMEOUT_MS),
				  30000);
	}
}

static void test_param_int_plain_decimal_is_read(void **state)
{
	static const struct {
		const char *name, *text;
		enum zsm_param_id id;
		long long want;
	} good[] = {
		{"ZSM_CONNECT_TIMEOUT_MS", "100", ZSM_P_CONNECT_TIMEOUT_MS,
		 100},
		{"ZSM_CONNECT_TIMEOUT_MS", "400", ZSM_P_CONNECT_TIMEOUT_MS,
		 400},
		{"ZSM_CONNECT_TIMEOUT_MS", "3600000",
		 ZSM_P_CONNECT_TIMEOUT_MS, 3600000},
		{"ZSM_PEER_CHECK_MS", "0", ZSM_P_PEER_CHECK_MS, 0},
		{"ZSM_PROXY_SPIN_US", "1000000", ZSM_P_PROXY_SPIN_US,
		 1000000},
		{"ZSM_MR_CACHE", "0", ZSM_P_MR_CACHE, 0},
		{"ZSM_MR_CACHE", "1", ZSM_P_MR_CACHE, 1},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		set_env(good[i].name, good[i].text);
		zsm_assert_int_eq(zsm_param_load(fake_getenv), 0);
		zsm_assert_int_eq(zsm_param_int(good[i].id), good[i].want);
	}
	assert_string_equal(zsm_log_captured, "");
}

static void test_param_bool_not_0_or_1_is_refused(void **state)
{
	static const char *const bad[] = {"01", "+1", " 1", "1 ", "2",
					  "0x1", "true", ""};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_refused("ZSM_MR_CACHE", bad[i], "use 0 or 1");
		zsm_assert_int_eq(zsm_param_int(ZSM_P_MR_CACHE), 1);
	}
}

static void test_param_list_with_empty_item_is_refused(void **state)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
		{"lo,,eth0", "item 2 is empty"},
		{"lo,", "item 2 is empty"},
		{",lo", "item 1 is empty"},
		{",", "item 1 is empty"},
		{"lo, eth0", "item 2 (' eth0') holds a space"},
		{"lo ,eth0", "item 1 ('lo ') holds a space"},
		{" ", "item 1 (' ') holds a space"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_refused("ZSM_DOMAIN", bad[i].text, bad[i].why);
		assert_string_equal(zsm_param_str(ZSM_P_DOMAIN), "");
	}
	assert_non_null(
		strstr(zsm_log_captured, "use names separated by commas"));
}

static void test_param_list_of_names_is_read(void **state)
{
	static const char *const good[] = {"", "lo", "lo,eth0", "a,b,c",
					   "mlx5_0:1"};

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		set_env("ZSM_DOMAIN", good[i]);
		zsm_assert_int_eq(zsm_param_load(fake_getenv), 0);
		assert_string_equal(zsm_param_str(ZSM_P_DOMAIN), good[i]);
	}
	assert_string_equal(zsm_log_captured, "");
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
			long long v = strtoll(d->def, NULL, 10);

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
		cmocka_unit_test_setup(
			test_param_int_not_plain_decimal_is_refused, reset),
		cmocka_unit_test_setup(test_param_int_plain_decimal_is_read,
				       reset),
		cmocka_unit_test_setup(test_param_bool_not_0_or_1_is_refused,
				       reset),
		cmocka_unit_test_setup(
			test_param_list_with_empty_item_is_refused, reset),
		cmocka_unit_test_setup(test_param_list_of_names_is_read,
				       reset),
		cmocka_unit_test_setup(test_param_unknown_choice_is_refused,
				       reset),
		cmocka_unit_test_setup(test_param_defaults_are_within_range,
				       reset),
	};
	return cmocka_run_group_tests_name("param", tests, NULL,
					   forget_logger);
}
