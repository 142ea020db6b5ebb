/* SPDX-License-Identifier: MIT */
/* The one clock every layer times things with: monotonic nanoseconds. */
#ifndef ZSM_COMMON_CLOCK_H
#define ZSM_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t zsm_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

#endif
