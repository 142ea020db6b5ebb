/* SPDX-License-Identifier: MIT */
/*
 * libfabric opened at run time (net/net_fi_lib.c): a missing library or
 * symbol is a clear error that leaves nothing half loaded, and each of the
 * six functions is the one the linker binds for our headers.  This test
 * links libfabric itself, so its own calls are that reference.
 */
#include <errno.h>
#include <string.h>

#include "log_capture.h"
#include "net/net_fi_lib.h"
#include "zsm_test.h"

static int teardown(void **state)
{
	(void)state;
	zsm_log_capture_stop();
	return 0;
}

static void assert_nothing_loaded(void)
{
	assert_null(zsm_fi.getinfo);
	assert_null(zsm_fi.freeinfo);
	assert_null(zsm_fi.dupinfo);
	assert_null(zsm_fi.fabric);
	assert_null(zsm_fi.strerror);
	assert_null(zsm_fi.version);
}

static void test_fi_lib_missing_library_is_refused(void **state)
{
	(void)state;
	zsm_log_capture_start();
	zsm_assert_int_eq(zsm_fi_lib_open("libzsm-no-such-fabric.so.1"),
			  -ENOENT);
	assert_non_null(strstr(zsm_log_captured,
			       "cannot load libfabric "
			       "(libzsm-no-such-fabric.so.1)"));
	assert_nothing_loaded();
}

static void test_fi_lib_missing_symbol_is_refused(void **state)
{
	(void)state;
	zsm_log_capture_start();
	/* A library that loads but has none of the six. */
	zsm_assert_int_eq(zsm_fi_lib_open("libc.so.6"), -ENOSYS);
	assert_non_null(
		strstr(zsm_log_captured, "libc.so.6 has no fi_getinfo@FABRIC_"));
	assert_nothing_loaded();
}

static void test_fi_lib_binds_the_linked_versions(void **state)
{
	(void)state;
	zsm_log_capture_start();
	zsm_assert_int_eq(zsm_fi_lib_load(), 0);
	/* The same functions as this test's own, linked, references. */
	assert_true(zsm_fi.getinfo == fi_getinfo);
	assert_true(zsm_fi.freeinfo == fi_freeinfo);
	assert_true(zsm_fi.dupinfo == fi_dupinfo);
	assert_true(zsm_fi.fabric == fi_fabric);
	assert_true(zsm_fi.strerror == fi_strerror);
	assert_true(zsm_fi.version == fi_version);
	zsm_assert_int_eq(zsm_fi_version(), fi_version());
	/* Loaded once: a second call changes nothing and says nothing. */
	zsm_assert_int_eq(zsm_fi_lib_open("libzsm-no-such-fabric.so.1"), 0);
	assert_true(zsm_fi.getinfo == fi_getinfo);
	assert_string_equal(zsm_log_captured, "");
}

int main(void)
{
	/* In this order: the failures first, while nothing is loaded. */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fi_lib_missing_library_is_refused),
		cmocka_unit_test(test_fi_lib_missing_symbol_is_refused),
		cmocka_unit_test(test_fi_lib_binds_the_linked_versions),
	};
	return cmocka_run_group_tests_name("fi_lib", tests, NULL, teardown);
}
