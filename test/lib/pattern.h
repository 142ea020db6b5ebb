/* SPDX-License-Identifier: MIT */
/*
 * Test data: byte i of a message with a given seed.  Every byte depends on
 * both, so a reordered, shifted or truncated message does not verify.
 */
#ifndef ZSM_TEST_PATTERN_H
#define ZSM_TEST_PATTERN_H

#include <stddef.h>
#include <stdint.h>

static inline unsigned char zsm_pattern_byte(uint32_t seed, size_t i)
{
	uint32_t v = (uint32_t)i * 2654435761u + seed * 40503u + 17u;

	return (unsigned char)(v ^ (v >> 13) ^ (v >> 24));
}

void zsm_pattern_fill(unsigned char *p, size_t len, uint32_t seed);
/* Index of the first byte that differs, or -1. */
long zsm_pattern_check(const unsigned char *p, size_t len, uint32_t seed);

#endif
