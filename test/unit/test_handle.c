/* SPDX-License-Identifier: MIT */
/*
 * The handles NCCL holds: a closed, doubled, reused, retyped or forged one
 * is refused, and a reused slot never answers for its previous object.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/handle.h"
#include "zsm_test.h"

static int objs[4];

static int handle_teardown(void **state)
{
	(void)state;
	zsm_handle_fini();
	return 0;
}

static void test_handle_open_get_close(void **state)
{
	uint64_t h;
	void *obj = NULL;

	(void)state;
	zsm_assert_int_eq(zsm_handle_open(ZSM_H_SEND, &objs[0], &h), 0);
	assert_true(h != 0);
	zsm_assert_int_eq(zsm_handle_get(h, ZSM_H_SEND, &obj), 0);
	assert_ptr_equal(obj, &objs[0]);
	zsm_assert_int_eq(zsm_handle_count(), 1);
	obj = NULL;
	zsm_assert_int_eq(zsm_handle_close(h, ZSM_H_SEND, &obj), 0);
	assert_ptr_equal(obj, &objs[0]);
	zsm_assert_int_eq(zsm_handle_count(), 0);
}

static void test_handle_second_close_is_ebadf(void **state)
{
	uint64_t h;
	void *obj;

	(void)state;
	zsm_assert_int_eq(zsm_handle_open(ZSM_H_RECV, &objs[1], &h), 0);
	zsm_assert_int_eq(zsm_handle_close(h, ZSM_H_RECV, &obj), 0);
	zsm_assert_int_eq(zsm_handle_close(h, ZSM_H_RECV, &obj), -EBADF);
	zsm_assert_int_eq(zsm_handle_get(h, ZSM_H_RECV, &obj), -EBADF);
}

static void test_handle_reused_slot_refuses_old_handle(void **state)
{
	uint64_t a, b;
	void *obj = NULL;

	(void)state;
	zsm_assert_int_eq(zsm_handle_open(ZSM_H_SEND, &objs[0], &a), 0);
	zsm_assert_int_eq(zsm_handle_close(a, ZSM_H_SEND, &obj), 0);
	/* The free slot is taken again, by another object. */
	zsm_assert_int_eq(zsm_handle_open(ZSM_H_SEND, &objs[2], &b), 0);
	zsm_assert_int_eq((uint32_t)a, (uint32_t)b);
	assert_true(a != b);
	zsm_assert_int_eq(zsm_handle_get(a, ZSM_H_SEND, &obj), -EBADF);
	zsm_assert_int_eq(zsm_handle_close(a, ZSM_H_SEND, &obj), -EBADF);
	zsm_assert_int_eq(zsm_handle_get(b, ZSM_H_SEND, &obj), 0);
	assert_ptr_equal(obj, &objs[2]);
	zsm_assert_int_eq(zsm_handle_close(b, ZSM_H_SEND, &obj), 0);
}

static void test_handle_wrong_type_is_einval(void **state)
{
	uint64_t h;
	void *obj;

	(void)state;
	zsm_assert_int_eq(zsm_handle_open(ZSM_H_LISTEN, &objs[3], &h), 0);
	zsm_assert_int_eq(zsm_handle_get(h, ZSM_H_RECV, &obj), -EINVAL);
	zsm_assert_int_eq(zsm_handle_close(h, ZSM_H_SEND, &obj), -EINVAL);
	/* Still live for its own type. */
	zsm_assert_int_eq(zsm_handle_close(h, ZSM_H_LISTEN, &obj), 0);
}

static void test_handle_forged_values_are_refused(void **state)
{
	static const uint64_t forged[] = {
		0, 1, 0x10, UINT64_MAX, 0xdeadbeefULL,
		(uint64_t)(uintptr_t)&objs[0], /* a real pointer */
		(uint64_t)ZSM_H_SEND << 32 | 0xffffffffULL,
	};
	uint64_t h;
	void *obj;

	(void)state;
	zsm_assert_int_eq(zsm_handle_open(ZSM_H_SEND, &objs[0], &h), 0);
	for (size_t i = 0; i < sizeof(forged) / sizeof(forged[0]); i++)
		assert_true(zsm_handle_get(forged[i], ZSM_H_SEND, &obj) < 0);
	/* Every single bit flipped. */
	for (int bit = 0; bit < 64; bit++)
		assert_true(zsm_handle_get(h ^ (1ULL << bit), ZSM_H_SEND,
					   &obj) < 0);
	zsm_assert_int_eq(zsm_handle_close(h, ZSM_H_SEND, &obj), 0);
}

static void test_handle_request_slot_arms_anew_each_use(void **state)
{
	uint32_t idx;
	uint64_t first, second;
	void *obj;

	(void)state;
	zsm_assert_int_eq(zsm_handle_reserve(ZSM_H_REQ, &objs[1], &idx), 0);
	/* Reserved is not live. */
	first = zsm_handle_arm(idx);
	zsm_assert_int_eq(zsm_handle_get(first, ZSM_H_REQ, &obj), 0);
	assert_ptr_equal(obj, &objs[1]);
	zsm_handle_disarm(idx);
	zsm_assert_int_eq(zsm_handle_get(first, ZSM_H_REQ, &obj), -EBADF);
	/* The recycled request: the old handle names nothing. */
	second = zsm_handle_arm(idx);
	assert_true(second != first);
	zsm_assert_int_eq(zsm_handle_get(first, ZSM_H_REQ, &obj), -EBADF);
	zsm_assert_int_eq(zsm_handle_get(second, ZSM_H_REQ, &obj), 0);
	zsm_handle_release(idx);
	zsm_assert_int_eq(zsm_handle_get(second, ZSM_H_REQ, &obj), -EBADF);
	zsm_assert_int_eq(zsm_handle_count(), 0);
}

static void test_handle_many_slots_across_chunks(void **state)
{
	enum { N = 10000 };
	uint64_t *h = calloc(N, sizeof(*h));
	void *obj;

	(void)state;
	assert_non_null(h);
	for (int i = 0; i < N; i++)
		zsm_assert_int_eq(zsm_handle_open(ZSM_H_MR, &h[i], &h[i]), 0);
	zsm_assert_int_eq(zsm_handle_count(), N);
	for (int i = 0; i < N; i++) {
		zsm_assert_int_eq(zsm_handle_get(h[i], ZSM_H_MR, &obj), 0);
		assert_ptr_equal(obj, &h[i]);
	}
	for (int i = 0; i < N; i++)
		zsm_assert_int_eq(zsm_handle_close(h[i], ZSM_H_MR, &obj), 0);
	zsm_assert_int_eq(zsm_handle_count(), 0);
	free(h);
}

static void test_handle_unload_kills_every_handle(void **state)
{
	uint64_t h;
	void *obj;

	(void)state;
	zsm_assert_int_eq(zsm_handle_open(ZSM_H_CTX, &objs[0], &h), 0);
	/* What unloading the plugin does: every handle is dead after. */
	zsm_handle_fini();
	zsm_assert_int_eq(zsm_handle_get(h, ZSM_H_CTX, &obj) < 0, 1);
	zsm_assert_int_eq(zsm_handle_close(h, ZSM_H_CTX, &obj) < 0, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_handle_open_get_close,
					  handle_teardown),
		cmocka_unit_test_teardown(test_handle_second_close_is_ebadf,
					  handle_teardown),
		cmocka_unit_test_teardown(
			test_handle_reused_slot_refuses_old_handle,
			handle_teardown),
		cmocka_unit_test_teardown(test_handle_wrong_type_is_einval,
					  handle_teardown),
		cmocka_unit_test_teardown(test_handle_forged_values_are_refused,
					  handle_teardown),
		cmocka_unit_test_teardown(
			test_handle_request_slot_arms_anew_each_use,
			handle_teardown),
		cmocka_unit_test_teardown(test_handle_many_slots_across_chunks,
					  handle_teardown),
		cmocka_unit_test_teardown(test_handle_unload_kills_every_handle,
					  handle_teardown),
	};

	return cmocka_run_group_tests_name("handle", tests, NULL, NULL);
}
