/* SPDX-License-Identifier: MIT */
/* CRC32C: the standard check value, both paths agree, bits are seen. */
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "zsm_test.h"

static void test_crc32c_check_value(void **state)
{
	(void)state;
	zsm_assert_int_eq(zsm_crc32c("123456789", 9), 0xe3069283u);
	zsm_assert_int_eq(zsm_crc32c_table("123456789", 9), 0xe3069283u);
	zsm_assert_int_eq(zsm_crc32c("", 0), 0);
}

static void test_crc32c_paths_agree_at_any_alignment(void **state)
{
	unsigned char *buf = malloc(4096 + 16);

	(void)state;
	for (int i = 0; i < 4096 + 16; i++)
		buf[i] = (unsigned char)(i * 131 + 7);
	for (size_t off = 0; off < 9; off++)
		for (size_t len = 0; len < 4096; len += 1 + len / 3)
			zsm_assert_int_eq(zsm_crc32c(buf + off, len),
					  zsm_crc32c_table(buf + off, len));
	free(buf);
}

static void test_crc32c_sees_every_bit(void **state)
{
	unsigned char buf[300];
	uint32_t good;

	(void)state;
	memset(buf, 0x5a, sizeof(buf));
	good = zsm_crc32c(buf, sizeof(buf));
	for (size_t bit = 0; bit < sizeof(buf) * 8; bit += 7) {
		buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
		assert_true(zsm_crc32c(buf, sizeof(buf)) != good);
		buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32c_check_value),
		cmocka_unit_test(test_crc32c_paths_agree_at_any_alignment),
		cmocka_unit_test(test_crc32c_sees_every_bit),
	};

	return cmocka_run_group_tests_name("crc32c", tests, NULL, NULL);
}
