/* SPDX-License-Identifier: MIT */
/* Shared by the cmocka unit tests: readable integer assertions. */
#ifndef ZSM_TEST_H
#define ZSM_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

/* cmocka 1.1.5 prints integers in hex only; say which values differed. */
#define zsm_assert_int_eq(a, b)                                               \
	do {                                                                  \
		long long zsm_a_ = (long long)(a), zsm_b_ = (long long)(b);   \
		if (zsm_a_ != zsm_b_)                                         \
			fail_msg("%s == %s / resolved %lld == %lld", #a, #b,  \
				 zsm_a_, zsm_b_);                             \
	} while (0)

#endif
