/* SPDX-License-Identifier: MIT */
/* The registration cache, over a fake provider that counts registrations. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/mr_cache.h"
#include "zsm_test.h"

struct fake {
	int regs;
	int deregs;
	int live;
	int fail_next;
};

static int fake_reg(void *arg, uintptr_t start, size_t len, int type,
		    void **prov)
{
	struct fake *f = arg;

	(void)start;
	(void)len;
	(void)type;
	if (f->fail_next) {
		f->fail_next = 0;
		return -EIO;
	}
	f->regs++;
	f->live++;
	*prov = (void *)(uintptr_t)f->regs;
	return 0;
}

static void fake_dereg(void *arg, void *prov)
{
	struct fake *f = arg;

	assert_non_null(prov);
	f->deregs++;
	f->live--;
}

static const struct zsm_mr_cache_ops fake_ops = {fake_reg, fake_dereg};

static char *page_buf(size_t pages)
{
	long pg = sysconf(_SC_PAGESIZE);
	void *p = NULL;

	assert_int_equal(posix_memalign(&p, (size_t)pg, pages * (size_t)pg), 0);
	return p;
}

static void test_mr_cache_same_buffer_registers_once(void **state)
{
	struct fake f = {0};
	struct zsm_mr_cache c;
	struct zsm_mr_entry *a, *b;
	char *buf = page_buf(4);

	(void)state;
	zsm_mr_cache_init(&c, &fake_ops, &f, 1);
	zsm_assert_int_eq(zsm_mr_cache_get(&c, buf, 4096, 1, &a), 0);
	zsm_assert_int_eq(zsm_mr_cache_get(&c, buf, 4096, 1, &b), 0);
	assert_ptr_equal(a, b);
	zsm_assert_int_eq(f.regs, 1);
	/* A sub-range of a live registration is a hit too. */
	zsm_assert_int_eq(zsm_mr_cache_get(&c, buf + 100, 200, 1, &b), 0);
	assert_ptr_equal(a, b);
	zsm_assert_int_eq(f.regs, 1);
	zsm_assert_int_eq(c.hits, 2);
	zsm_mr_cache_put(&c, a);
	zsm_mr_cache_put(&c, a);
	zsm_assert_int_eq(f.deregs, 0);
	zsm_mr_cache_put(&c, a);
	zsm_assert_int_eq(f.deregs, 1);
	zsm_assert_int_eq(f.live, 0);
	zsm_mr_cache_fini(&c);
	free(buf);
}

static void test_mr_cache_larger_range_registers_anew(void **state)
{
	struct fake f = {0};
	struct zsm_mr_cache c;
	struct zsm_mr_entry *a, *b;
	long pg = sysconf(_SC_PAGESIZE);
	char *buf = page_buf(4);

	(void)state;
	zsm_mr_cache_init(&c, &fake_ops, &f, 1);
	zsm_assert_int_eq(zsm_mr_cache_get(&c, buf, (size_t)pg, 1, &a), 0);
	zsm_assert_int_eq(zsm_mr_cache_get(&c, buf, 3 * (size_t)pg, 1, &b), 0);
	assert_ptr_not_equal(a, b);
	zsm_assert_int_eq(f.regs, 2);
	/* Different memory types never share. */
	zsm_mr_cache_put(&c, b);
	zsm_assert_int_eq(zsm_mr_cache_get(&c, buf, 16, 2, &b), 0);
	assert_ptr_not_equal(a, b);
	zsm_mr_cache_put(&c, a);
	zsm_mr_cache_put(&c, b);
	zsm_assert_int_eq(f.live, 0);
	zsm_mr_cache_fini(&c);
	free(buf);
}

static void test_mr_cache_released_entry_is_not_reused(void **state)
{
	struct fake f = {0};
	struct zsm_mr_cache c;
	struct zsm_mr_entry *a;
	char *buf = page_buf(1);

	(void)state;
	zsm_mr_cache_init(&c, &fake_ops, &f, 1);
	zsm_assert_int_eq(zsm_mr_cache_get(&c, buf, 64, 1, &a), 0);
	zsm_mr_cache_put(&c, a);
	/* Memory may have been freed and mapped again: register afresh. */
	zsm_assert_int_eq(zsm_mr_cache_get(&c, buf, 64, 1, &a), 0);
	zsm_assert_int_eq(f.regs, 2);
	zsm_mr_cache_put(&c, a);
	zsm_mr_cache_fini(&c);
	free(buf);
}

static void test_mr_cache_disabled_registers_every_time(void **state)
{
	struct fake f = {0};
	struct zsm_mr_cache c;
	struct zsm_mr_entry *a, *b;
	char *buf = page_buf(1);

	(void)state;
	zsm_mr_cache_init(&c, &fake_ops, &f, 0);
	zsm_assert_int_eq(zsm_mr_cache_get(&c, buf, 64, 1, &a), 0);
	zsm_assert_int_eq(zsm_mr_cache_get(&c, buf, 64, 1, &b), 0);
	assert_ptr_not_equal(a, b);
	zsm_assert_int_eq(f.regs, 2);
	zsm_mr_cache_put(&c, a);
	zsm_mr_cache_put(&c, b);
	zsm_assert_int_eq(f.live, 0);
	zsm_mr_cache_fini(&c);
	free(buf);
}

static void test_mr_cache_provider_failure_is_returned(void **state)
{
	struct fake f = {.fail_next = 1};
	struct zsm_mr_cache c;
	struct zsm_mr_entry *a = NULL;
	char *buf = page_buf(1);

	(void)state;
	zsm_mr_cache_init(&c, &fake_ops, &f, 1);
	zsm_assert_int_eq(zsm_mr_cache_get(&c, buf, 64, 1, &a), -EIO);
	assert_null(c.entries);
	zsm_mr_cache_fini(&c);
	free(buf);
}

static void test_mr_cache_fini_releases_held_entries(void **state)
{
	struct fake f = {0};
	struct zsm_mr_cache c;
	struct zsm_mr_entry *a;
	char *buf = page_buf(2);

	(void)state;
	zsm_mr_cache_init(&c, &fake_ops, &f, 1);
	zsm_assert_int_eq(zsm_mr_cache_get(&c, buf, 64, 1, &a), 0);
	zsm_assert_int_eq(zsm_mr_cache_get(&c, buf, 8192, 1, &a), 0);
	zsm_mr_cache_fini(&c);
	zsm_assert_int_eq(f.live, 0);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mr_cache_same_buffer_registers_once),
		cmocka_unit_test(test_mr_cache_larger_range_registers_anew),
		cmocka_unit_test(test_mr_cache_released_entry_is_not_reused),
		cmocka_unit_test(test_mr_cache_disabled_registers_every_time),
		cmocka_unit_test(test_mr_cache_provider_failure_is_returned),
		cmocka_unit_test(test_mr_cache_fini_releases_held_entries),
	};
	return cmocka_run_group_tests_name("mr_cache", tests, NULL, NULL);
}
