/* SPDX-License-Identifier: MIT */
/*
 * The CUDA driver table launches nothing: no name it resolves starts a
 * kernel, a graph or a host function, or loads code (checked here with a
 * list of this test's own, so a mistake in zsm_cuda_drv_refused cannot
 * hide one), and zsm_cuda_drv_refused refuses what it must.
 */
#include <string.h>

#include "common/cuda_drv.h"
#include "zsm_test.h"

/* Launch and code-loading entry points of the driver API, by prefix. */
static const char *const launchers[] = {
	"cuLaunch",    "cuGraphLaunch", "cuGraphAddKernel", "cuGraphExecKernel",
	"cuModuleLoad", "cuModuleGetFunction", "cuModuleGetGlobal",
	"cuModuleGetTexRef", "cuModuleEnumerate", "cuModuleUnload",
	"cuLibrary",   "cuLink",	"cuKernel",	    "cuFunc",
	"cuStreamAddCallback",
};

/* cuModuleGetLoadingMode reads a setting and loads nothing: the one
 * cuModule name the table may hold (for ce's lazy-loading notice). */
static int launches(const char *name)
{
	if (!strcmp(name, "cuModuleGetLoadingMode"))
		return 0;
	if (!strncmp(name, "cuModule", 8))
		return 1;
	for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++)
		if (!strncmp(name, launchers[i], strlen(launchers[i])))
			return 1;
	return 0;
}

static void test_table_names_launch_nothing(void **state)
{
	const char *name;
	size_t i, seen_batch = 0, seen_alloc = 0;

	(void)state;
	for (i = 0; (name = zsm_cuda_drv_symbol(i)); i++) {
		if (launches(name))
			fail_msg("the CUDA table resolves %s, a launch or "
				 "code-loading entry point",
				 name);
		assert_int_equal(zsm_cuda_drv_refused(name), 0);
		seen_batch += !strcmp(name, "cuStreamBatchMemOp_v2");
		seen_alloc += !strcmp(name, "cuMemAlloc_v2");
	}
	/* The walk saw the whole list: a required entry and an optional
	 * one (the list's second part) are both in it. */
	zsm_assert_int_eq(seen_alloc, 1);
	zsm_assert_int_eq(seen_batch, 1);
	assert_true(i > 40);
}

static void test_refused_names(void **state)
{
	static const char *const bad[] = {
		"cuLaunchKernel",	  "cuLaunchKernelEx",
		"cuLaunchKernel_ptsz",	  "cuLaunchCooperativeKernel",
		"cuLaunchHostFunc",	  "cuLaunchHostFunc_ptsz",
		"cuGraphLaunch",	  "cuGraphLaunch_ptsz",
		"cuModuleLoad",		  "cuModuleLoadData",
		"cuModuleLoadDataEx",	  "cuModuleLoadFatBinary",
		"cuModuleGetFunction",	  "cuLibraryLoadData",
		"cuLibraryGetKernel",	  "cuKernelGetFunction",
		"cuStreamAddCallback",	  "cuGraphAddKernelNode_v2",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (!zsm_cuda_drv_refused(bad[i]))
			fail_msg("zsm_cuda_drv_refused lets %s through",
				 bad[i]);
	assert_int_equal(zsm_cuda_drv_refused("cuStreamBatchMemOp_v2"), 0);
	assert_int_equal(zsm_cuda_drv_refused("cuMemcpyAsync"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_names_launch_nothing),
		cmocka_unit_test(test_refused_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
