/* SPDX-License-Identifier: MIT */
/*
 * CRC32C (Castagnoli), for ZSM_CHECKSUM: the SSE4.2 instruction where the
 * CPU has it (about 8 bytes a cycle), a table otherwise.  Starts and ends
 * with the usual inversion, so crc32c("123456789") is 0xe3069283.
 */
#ifndef ZSM_COMMON_CRC32C_H
#define ZSM_COMMON_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t zsm_crc32c(const void *buf, size_t len);
/* The portable path alone, for tests that compare both. */
uint32_t zsm_crc32c_table(const void *buf, size_t len);

#endif
