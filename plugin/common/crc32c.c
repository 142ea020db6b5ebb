/* SPDX-License-Identifier: MIT */
/* Owns CRC32C: the hardware path, the table path and the choice. */
#include <string.h>

#include "common/crc32c.h"

/* The reflected Castagnoli polynomial. */
#define ZSM_CRC32C_POLY 0x82f63b78u

static uint32_t zsm_crc32c_tab[256];

static void zsm_crc32c_make_table(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ ZSM_CRC32C_POLY : c >> 1;
		zsm_crc32c_tab[i] = c;
	}
}

uint32_t zsm_crc32c_table(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint32_t c = ~0u;

	if (!zsm_crc32c_tab[1])
		zsm_crc32c_make_table();
	while (len--)
		c = zsm_crc32c_tab[(c ^ *p++) & 0xff] ^ (c >> 8);
	return ~c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t
zsm_crc32c_sse42(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint64_t c = ~0u;

	for (; len && ((uintptr_t)p & 7); len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	for (; len >= 8; len -= 8, p += 8) {
		uint64_t v;

		memcpy(&v, p, sizeof(v));
		c = __builtin_ia32_crc32di(c, v);
	}
	for (; len; len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return ~(uint32_t)c;
}
#endif

uint32_t zsm_crc32c(const void *buf, size_t len)
{
#if defined(__x86_64__)
	static int have = -1;

	if (have < 0) {
		__builtin_cpu_init();
		have = __builtin_cpu_supports("sse4.2");
	}
	if (have)
		return zsm_crc32c_sse42(buf, len);
#endif
	return zsm_crc32c_table(buf, len);
}
