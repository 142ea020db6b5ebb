/* SPDX-License-Identifier: MIT */
/* Connection handles: they fit NCCL's 128 bytes and foreign ones are refused. */
#include <string.h>
#include <unistd.h>

#include "common/host.h"
#include "net/net.h"
#include "zsm_test.h"

static void encode(struct zsm_net_handle *h)
{
	uint8_t addr[16];

	for (int i = 0; i < 16; i++)
		addr[i] = (uint8_t)(i * 7);
	zsm_net_handle_encode(h, 42, 0x1234567, addr, sizeof(addr), 99);
}

static void test_net_handle_fits_nccl_buffer(void **state)
{
	(void)state;
	zsm_assert_int_eq(sizeof(struct zsm_net_handle),
			  ZSM_HANDLE_BYTES);
}

static void test_net_handle_round_trip(void **state)
{
	struct zsm_net_handle h;
	uint8_t copy[ZSM_HANDLE_BYTES];

	(void)state;
	encode(&h);
	/* NCCL ships it as bytes: a copy must decode the same. */
	memcpy(copy, &h, sizeof(copy));
	zsm_assert_int_eq(zsm_net_handle_check((void *)copy), 0);
	zsm_assert_int_eq(((struct zsm_net_handle *)copy)->listen_id, 42);
	zsm_assert_int_eq(((struct zsm_net_handle *)copy)->addr_len, 16);
	zsm_assert_int_eq(((struct zsm_net_handle *)copy)->addr[3], 21);
	zsm_assert_int_eq(((struct zsm_net_handle *)copy)->conn_id, 0);
	zsm_assert_int_eq(((struct zsm_net_handle *)copy)->magic,
			  ZSM_HANDLE_MAGIC);
}

static void test_net_handle_round_trip_keeps_host_and_pid(void **state)
{
	struct zsm_net_handle h, *back;
	uint8_t copy[ZSM_HANDLE_BYTES];
	uint8_t addr[16] = {1};
	uint64_t hash = zsm_host_id_hash("ns-a");

	(void)state;
	/* A hash with its top bit set must not lose it on the way. */
	hash |= 1ULL << 63;
	zsm_net_handle_encode(&h, 42, 0x1234567, addr, sizeof(addr), hash);
	memcpy(copy, &h, sizeof(copy));
	back = (struct zsm_net_handle *)copy;
	zsm_assert_int_eq(zsm_net_handle_check(back), 0);
	assert_true(back->host_hash == hash);
	zsm_assert_int_eq(back->pid, getpid());
}

static void test_net_handle_foreign_magic_is_refused(void **state)
{
	struct zsm_net_handle h;

	(void)state;
	encode(&h);
	h.magic ^= 1;
	zsm_assert_int_eq(zsm_net_handle_check(&h), -EINVAL);
}

static void test_net_handle_other_version_is_refused(void **state)
{
	struct zsm_net_handle h;

	(void)state;
	encode(&h);
	h.version++;
	zsm_assert_int_eq(zsm_net_handle_check(&h), -EINVAL);
}

static void test_net_handle_damaged_fields_are_refused(void **state)
{
	struct zsm_net_handle h;

	(void)state;
	encode(&h);
	h.addr_len = ZSM_NET_ADDR_MAX + 1;
	zsm_assert_int_eq(zsm_net_handle_check(&h), -EINVAL);
	encode(&h);
	h.addr_len = 0;
	zsm_assert_int_eq(zsm_net_handle_check(&h), -EINVAL);
	encode(&h);
	h.listen_id = 0;
	zsm_assert_int_eq(zsm_net_handle_check(&h), -EINVAL);
	encode(&h);
	h.listen_id = ZSM_TAG_ID_MAX + 1;
	zsm_assert_int_eq(zsm_net_handle_check(&h), -EINVAL);
	encode(&h);
	h.nonce = 0;
	zsm_assert_int_eq(zsm_net_handle_check(&h), -EINVAL);
}

static void test_net_handle_zeroed_buffer_is_refused(void **state)
{
	struct zsm_net_handle h;

	(void)state;
	memset(&h, 0, sizeof(h));
	zsm_assert_int_eq(zsm_net_handle_check(&h), -EINVAL);
}

static void test_net_handle_tags_do_not_collide(void **state)
{
	(void)state;
	/* Data and control tags of the same id differ; ids never spill into
	 * the user bits, and the whole tag fits cxi's 48 bits. */
	assert_true(zsm_tag_data(5, 3) != zsm_tag_ctrl(5, 3));
	assert_true(zsm_tag_data(5, ZSM_TAG_USER_MAX) < zsm_tag_data(6, 0));
	assert_true(zsm_tag_ctrl(ZSM_TAG_ID_MAX, ZSM_CTRL_PING) < (1ULL << 48));
	assert_true(zsm_tag_data(ZSM_TAG_ID_MAX, ZSM_TAG_USER_MAX) < ZSM_TAG_CTRL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_net_handle_fits_nccl_buffer),
		cmocka_unit_test(test_net_handle_round_trip),
		cmocka_unit_test(test_net_handle_round_trip_keeps_host_and_pid),
		cmocka_unit_test(test_net_handle_foreign_magic_is_refused),
		cmocka_unit_test(test_net_handle_other_version_is_refused),
		cmocka_unit_test(test_net_handle_damaged_fields_are_refused),
		cmocka_unit_test(test_net_handle_zeroed_buffer_is_refused),
		cmocka_unit_test(test_net_handle_tags_do_not_collide),
	};
	return cmocka_run_group_tests_name("net_handle", tests, NULL, NULL);
}
