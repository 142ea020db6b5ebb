/* SPDX-License-Identifier: MIT */
/* Owns filling and checking test buffers with the seeded pattern. */
#include "pattern.h"

void zsm_pattern_fill(unsigned char *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = zsm_pattern_byte(seed, i);
}

long zsm_pattern_check(const unsigned char *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != zsm_pattern_byte(seed, i))
			return (long)i;
	return -1;
}
