/* SPDX-License-Identifier: MIT */
/*
 * What a receive comm's engine does with SIGNALs (net_rma.c) on a comm
 * and window built in memory, no provider: under writedata a signal
 * waits until as many of its sender's writes landed as it says, later
 * signals wait behind it in order, and the same signals apply at once
 * under saw; a staged window's notice names bytes inside it or fails
 * the comm.
 */
#include <errno.h>
#include <string.h>

#include "common/handle.h"
#include "net/net.h"
#include "net/net_api.h"
#include "zsm_test.h"

struct fixture {
	struct zsm_net_ep ep;
	struct zsm_net_comm c;
	struct zsm_net_mr mr;
	uint64_t words[4];
	uint32_t id;
};

static struct fixture fx;

static int setup(void **state)
{
	(void)state;
	memset(&fx, 0, sizeof(fx));
	zsm_idmap_init(&fx.ep.ids, ZSM_TAG_ID_MAX);
	fx.ep.rma = ZSM_RMA_MECH_WRITEDATA;
	fx.c.type = ZSM_COMM_RECV;
	fx.c.ep = &fx.ep;
	zsm_assert_int_eq(zsm_idmap_add(&fx.ep.ids, &fx.c, &fx.id), 0);
	fx.c.local_id = fx.id;
	/* A window: its provider registration is never touched here. */
	fx.mr.base.ops = &zsm_net_comm_ops;
	fx.mr.window = (struct fid_mr *)&fx;
	fx.mr.ep = &fx.ep;
	fx.mr.start = (char *)fx.words;
	fx.mr.size = sizeof(fx.words);
	zsm_assert_int_eq(zsm_handle_open(ZSM_H_MR, &fx.mr.base,
					  &fx.mr.base.handle),
			  0);
	return 0;
}

static int teardown(void **state)
{
	void *obj;

	(void)state;
	zsm_net_rma_comm_fini(&fx.c);
	zsm_handle_close(fx.mr.base.handle, ZSM_H_MR, &obj);
	zsm_idmap_fini(&fx.ep.ids);
	return 0;
}

static void sig(uint64_t writes, uint64_t off, uint64_t add)
{
	struct zsm_sig_msg m = {.win = fx.mr.base.handle, .off = off,
				.add = add, .writes = writes};

	zsm_net_rma_on_signal(&fx.c, &m);
}

static void landed(int n)
{
	while (n--)
		zsm_net_rma_on_write(&fx.ep, fx.id);
}

static void test_net_rma_signal_waits_for_its_writes(void **state)
{
	(void)state;
	landed(1);
	sig(3, 0, 5); /* its put's write, and one before, still to land */
	zsm_assert_int_eq(fx.words[0], 0);
	landed(1);
	zsm_assert_int_eq(fx.words[0], 0);
	landed(1);
	zsm_assert_int_eq(fx.words[0], 5);
	/* Everything it waits for is there: at once. */
	sig(3, 8, 1);
	zsm_assert_int_eq(fx.words[1], 1);
	/* A write for another id moves nothing. */
	sig(4, 0, 2);
	zsm_net_rma_on_write(&fx.ep, fx.id + 1);
	zsm_net_rma_on_write(&fx.ep, (uint64_t)ZSM_TAG_ID_MAX + 5);
	zsm_assert_int_eq(fx.words[0], 5);
	landed(1);
	zsm_assert_int_eq(fx.words[0], 7);
}

/* A signal behind a held one waits too, even when its own writes are
 * in: signals apply in the order they came. */
static void test_net_rma_signal_keeps_order(void **state)
{
	(void)state;
	sig(2, 0, 1);
	sig(0, 0, 10); /* nothing to wait for, but behind the first */
	zsm_assert_int_eq(fx.words[0], 0);
	landed(1);
	zsm_assert_int_eq(fx.words[0], 0);
	landed(1);
	zsm_assert_int_eq(fx.words[0], 11);
	assert_null(fx.c.rma.sig_head);
}

/* Under saw the provider orders the writes: no waiting. */
static void test_net_rma_signal_saw_applies_at_once(void **state)
{
	(void)state;
	fx.ep.rma = ZSM_RMA_MECH_SAW;
	sig(9, 16, 4);
	zsm_assert_int_eq(fx.words[2], 4);
	assert_null(fx.c.rma.sig_head);
}

/* A held signal whose word turns out bad fails the comm when applied,
 * and a notice for bytes outside every staged window fails it too. */
static void test_net_rma_signal_bad_ones_fail_the_comm(void **state)
{
	struct zsm_sig_msg m = {.put_win = 0, .put_addr = 0, .put_len = 8,
				.writes = 0};

	(void)state;
	sig(1, 4, 1); /* misaligned */
	zsm_assert_int_eq(fx.c.failed, 0);
	landed(1);
	zsm_assert_int_eq(fx.c.failed, 1);
	for (int i = 0; i < 4; i++)
		zsm_assert_int_eq(fx.words[i], 0);

	fx.c.failed = 0;
	m.put_win = fx.mr.base.handle; /* a window, but not staged */
	zsm_net_rma_on_signal(&fx.c, &m);
	zsm_assert_int_eq(fx.c.failed, 1);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_net_rma_signal_waits_for_its_writes),
		T(test_net_rma_signal_keeps_order),
		T(test_net_rma_signal_saw_applies_at_once),
		T(test_net_rma_signal_bad_ones_fail_the_comm),
	};
#undef T
	return cmocka_run_group_tests_name("net_rma_signal", tests, NULL,
					   NULL);
}
