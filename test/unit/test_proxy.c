/* SPDX-License-Identifier: MIT */
/*
 * Who runs progress passes from test() (ZSM_PROXY_ASSIST): always where
 * the process has 4 CPUs or fewer, never when told, and with more CPUs
 * only for a caller that polls the same request again (it is waiting),
 * not for one going round many (NCCL's proxy thread).  And the engine's
 * queue: a refused owner holds back only itself, and stopping cancels
 * what is left.
 */
#include <errno.h>
#include <string.h>

#include "common/param.h"
#include "proxy/proxy.h"
#include "zsm_test.h"

/* ZSM_PROXY_ASSIST's choice indices: auto, "0", "1". */
#define AUTO 0
#define OFF 1
#define ON 2

/* Three requests, known by their addresses only. */
static int reqs[3];

static void test_proxy_assist_mode_follows_cpus_and_setting(void **state)
{
	(void)state;
	zsm_assert_int_eq(zsm_proxy_assist_mode(AUTO, 1),
			  ZSM_PROXY_ASSIST_ALWAYS);
	zsm_assert_int_eq(zsm_proxy_assist_mode(AUTO, 4),
			  ZSM_PROXY_ASSIST_ALWAYS);
	zsm_assert_int_eq(zsm_proxy_assist_mode(AUTO, 5),
			  ZSM_PROXY_ASSIST_WAITER);
	zsm_assert_int_eq(zsm_proxy_assist_mode(AUTO, 256),
			  ZSM_PROXY_ASSIST_WAITER);
	/* An explicit setting wins whatever the CPUs. */
	zsm_assert_int_eq(zsm_proxy_assist_mode(OFF, 2),
			  ZSM_PROXY_ASSIST_NEVER);
	zsm_assert_int_eq(zsm_proxy_assist_mode(OFF, 64),
			  ZSM_PROXY_ASSIST_NEVER);
	zsm_assert_int_eq(zsm_proxy_assist_mode(ON, 64),
			  ZSM_PROXY_ASSIST_ALWAYS);
}

static void test_proxy_assist_waiter_only_on_a_repeat(void **state)
{
	const void *polled = NULL;

	(void)state;
	/* Going round three requests: never. */
	for (int round = 0; round < 3; round++) {
		assert_false(zsm_proxy_assist_wants(ZSM_PROXY_ASSIST_WAITER,
						    &polled, &reqs[0]));
		assert_false(zsm_proxy_assist_wants(ZSM_PROXY_ASSIST_WAITER,
						    &polled, &reqs[1]));
		assert_false(zsm_proxy_assist_wants(ZSM_PROXY_ASSIST_WAITER,
						    &polled, &reqs[2]));
	}
	/* Waiting on one: from the second poll on. */
	assert_true(zsm_proxy_assist_wants(ZSM_PROXY_ASSIST_WAITER, &polled,
					   &reqs[2]));
	assert_true(zsm_proxy_assist_wants(ZSM_PROXY_ASSIST_WAITER, &polled,
					   &reqs[2]));
	/* Moving on starts over. */
	assert_false(zsm_proxy_assist_wants(ZSM_PROXY_ASSIST_WAITER, &polled,
					    &reqs[0]));
	assert_true(zsm_proxy_assist_wants(ZSM_PROXY_ASSIST_WAITER, &polled,
					   &reqs[0]));
}

static void test_proxy_assist_fixed_modes_ignore_the_caller(void **state)
{
	const void *polled = NULL;

	(void)state;
	assert_true(zsm_proxy_assist_wants(ZSM_PROXY_ASSIST_ALWAYS, &polled,
					   &reqs[0]));
	assert_true(zsm_proxy_assist_wants(ZSM_PROXY_ASSIST_ALWAYS, &polled,
					   &reqs[1]));
	assert_false(zsm_proxy_assist_wants(ZSM_PROXY_ASSIST_NEVER, &polled,
					    &reqs[1]));
	/* Each still records what it saw. */
	assert_ptr_equal(polled, &reqs[1]);
}

/*
 * Owners (comms) of a fake transport that refuses whatever the owner is
 * told to refuse, recording what it took, in order.
 */
#define OWNERS 200
#define PER_OWNER 3

struct owner {
	struct zsm_proxy_fifo fifo;
	int shares_room; /* takes from room_left, parks when none */
	int need;	 /* of room_left per descriptor: 0 is 1 */
	int refuse;
	int refuse_from; /* > 0: refuse descriptors from this one on */
	int taken[PER_OWNER + 1]; /* + 1: a test's extra descriptor */
	int ntaken;
	int cancelled[PER_OWNER];
	int ncancelled;
};

struct item {
	struct zsm_desc desc; /* first */
	struct owner *owner;
	int seq;
};

static struct owner owners[OWNERS];
static struct item items[OWNERS][PER_OWNER];
/* A queue the owners that share it post into, as a provider's. */
static struct zsm_proxy_room room;
static int room_left;
static int posts; /* calls of fake_post */

static int fake_post(struct zsm_desc *desc)
{
	struct item *it = (struct item *)desc;

	posts++;
	if (it->owner->shares_room) {
		int need = it->owner->need ? it->owner->need : 1;

		if (room_left < need) {
			zsm_proxy_park(desc, &room, !room_left);
			return -EAGAIN;
		}
		room_left -= need;
	}
	if (it->owner->refuse ||
	    (it->owner->refuse_from && it->seq >= it->owner->refuse_from))
		return -EAGAIN;
	it->owner->taken[it->owner->ntaken++] = it->seq;
	return 0;
}

static void fake_cancel(struct zsm_desc *desc)
{
	struct item *it = (struct item *)desc;

	it->owner->cancelled[it->owner->ncancelled++] = it->seq;
}

/* The fake transport's instance: how many passes polled it. */
static int fake_polls;

static int fake_progress(void *self)
{
	(*(int *)self)++;
	return 0;
}

static int fake_busy(void *self)
{
	(void)self;
	return 0;
}

static const struct zsm_transport_ops fake_ops = {
	.name = "fake",
	.progress = fake_progress,
	.busy = fake_busy,
};

static const char *inline_env(const char *name)
{
	return strcmp(name, "ZSM_PROXY") == 0 ? "inline" : NULL;
}

static int proxy_setup(void **state)
{
	(void)state;
	memset(owners, 0, sizeof(owners));
	memset(&room, 0, sizeof(room));
	room_left = 0;
	posts = 0;
	if (zsm_param_load(inline_env) || zsm_proxy_start())
		return -1;
	zsm_proxy_add_transport(&fake_ops, &fake_polls);
	return 0;
}

static int proxy_teardown(void **state)
{
	(void)state;
	for (int o = 0; o < OWNERS; o++)
		owners[o].refuse = 0;
	zsm_proxy_stop();
	return 0;
}

static void submit_all(void)
{
	/* Interleaved, as many comms' requests arrive. */
	for (int k = 0; k < PER_OWNER; k++) {
		for (int o = 0; o < OWNERS; o++) {
			struct item *it = &items[o][k];

			it->desc.post = fake_post;
			it->desc.cancel = fake_cancel;
			it->desc.fifo = &owners[o].fifo;
			it->owner = &owners[o];
			it->seq = k;
			zsm_assert_int_eq(zsm_proxy_submit(&it->desc), 0);
		}
	}
}

static void
test_proxy_refused_owners_hold_back_only_themselves(void **state)
{
	(void)state;
	/* Far more refused owners than any fixed table of them. */
	for (int o = 0; o < OWNERS - 1; o++)
		owners[o].refuse = 1;
	submit_all();
	zsm_proxy_pass();
	/* The one owner the transport takes is not held back by others. */
	zsm_assert_int_eq(owners[OWNERS - 1].ntaken, PER_OWNER);
	for (int o = 0; o < OWNERS - 1; o++)
		zsm_assert_int_eq(owners[o].ntaken, 0);
	/* An owner taken again gets everything, in its order. */
	owners[7].refuse = 0;
	owners[150].refuse = 0;
	zsm_proxy_pass();
	for (int k = 0; k < PER_OWNER; k++) {
		zsm_assert_int_eq(owners[7].taken[k], k);
		zsm_assert_int_eq(owners[150].taken[k], k);
	}
	zsm_assert_int_eq(owners[8].ntaken, 0);
}

static void test_proxy_refusal_mid_fifo_keeps_order(void **state)
{
	(void)state;
	/* Owner 3 takes its first descriptor, then refuses one pass. */
	owners[3].refuse_from = 1;
	submit_all();
	zsm_proxy_pass();
	zsm_assert_int_eq(owners[3].ntaken, 1);
	zsm_assert_int_eq(owners[4].ntaken, PER_OWNER);
	owners[3].refuse_from = 0;
	zsm_proxy_pass();
	/* Its later descriptors waited behind the refused one. */
	zsm_assert_int_eq(owners[3].ntaken, PER_OWNER);
	for (int k = 0; k < PER_OWNER; k++)
		zsm_assert_int_eq(owners[3].taken[k], k);
}

/*
 * Stopping the engine (finalize) starts nothing: what is held and what
 * is still queued goes to cancel, each owner's in its order, none to post
 * (whoever queued them may have freed their buffers).
 */
static void test_proxy_stop_cancels_instead_of_posting(void **state)
{
	struct owner *queued = &owners[OWNERS - 1];

	(void)state;
	for (int o = 0; o < 10; o++)
		owners[o].refuse = 1;
	submit_all();
	zsm_proxy_pass();
	zsm_assert_int_eq(queued->ntaken, PER_OWNER);
	/* The last owner's descriptors again, queued and never passed. */
	for (int k = 0; k < PER_OWNER; k++) {
		items[OWNERS - 1][k].desc.next = NULL;
		zsm_assert_int_eq(zsm_proxy_submit(&items[OWNERS - 1][k].desc),
				  0);
	}
	/* Whatever the transport would take now. */
	for (int o = 0; o < OWNERS; o++)
		owners[o].refuse = 0;
	zsm_proxy_stop();
	zsm_assert_int_eq(queued->ntaken, PER_OWNER);
	zsm_assert_int_eq(queued->ncancelled, PER_OWNER);
	for (int o = 0; o < 10; o++) {
		zsm_assert_int_eq(owners[o].ntaken, 0);
		zsm_assert_int_eq(owners[o].ncancelled, PER_OWNER);
		for (int k = 0; k < PER_OWNER; k++)
			zsm_assert_int_eq(owners[o].cancelled[k], k);
	}
	for (int o = 10; o < OWNERS - 1; o++)
		zsm_assert_int_eq(owners[o].ncancelled, 0);
}

/*
 * Owners refused for room they all share wait for it without being
 * posted again on every pass: a pass costs what it posts, not how many
 * comms wait.  Room that comes back goes to them in their order, and the
 * first one refused again stops the round.
 */
static void test_proxy_room_retries_only_once_freed(void **state)
{
	(void)state;
	for (int o = 0; o < OWNERS; o++)
		owners[o].shares_room = 1;
	submit_all();
	zsm_proxy_pass();
	/* Each owner's first descriptor was tried once. */
	zsm_assert_int_eq(posts, OWNERS);
	posts = 0;
	for (int pass = 0; pass < 3; pass++)
		zsm_proxy_pass();
	zsm_assert_int_eq(posts, 0);
	room_left = 5;
	zsm_proxy_room_freed(&room);
	zsm_proxy_pass();
	/* Five taken, in the owners' order, and one refusal. */
	zsm_assert_int_eq(posts, 6);
	zsm_assert_int_eq(owners[0].ntaken, PER_OWNER);
	zsm_assert_int_eq(owners[1].ntaken, 2);
	zsm_assert_int_eq(owners[2].ntaken, 0);
	/* The refused one kept its place at the front. */
	room_left = 1;
	zsm_proxy_room_freed(&room);
	zsm_proxy_pass();
	zsm_assert_int_eq(owners[1].ntaken, PER_OWNER);
	for (int k = 0; k < PER_OWNER; k++)
		zsm_assert_int_eq(owners[1].taken[k], k);
	zsm_assert_int_eq(owners[2].ntaken, 0);
	/* Stopping cancels what is still parked, in order. */
	zsm_proxy_stop();
	zsm_assert_int_eq(owners[2].ncancelled, PER_OWNER);
	zsm_assert_int_eq(owners[OWNERS - 1].ncancelled, PER_OWNER);
	for (int k = 0; k < PER_OWNER; k++)
		zsm_assert_int_eq(owners[2].cancelled[k], k);
}

/*
 * Room too small for the oldest parked owner still goes to a smaller one
 * behind it (a receive of 1 buffer behind one of 8); the oldest keeps its
 * place for the next room.
 */
static void test_proxy_room_smaller_fits_past_a_refusal(void **state)
{
	(void)state;
	for (int o = 0; o < 3; o++)
		owners[o].shares_room = 1;
	owners[0].need = 2;
	submit_all();
	zsm_proxy_pass();
	room_left = 1;
	zsm_proxy_room_freed(&room);
	zsm_proxy_pass();
	zsm_assert_int_eq(owners[0].ntaken, 0);
	zsm_assert_int_eq(owners[1].ntaken, 1);
	zsm_assert_int_eq(owners[2].ntaken, 0);
	room_left = 2;
	zsm_proxy_room_freed(&room);
	zsm_proxy_pass();
	zsm_assert_int_eq(owners[0].ntaken, 1);
	zsm_assert_int_eq(owners[1].ntaken, 1);
}

/*
 * A parked owner whose own state changed (kicked: its transport lets it
 * go whatever the room; or a new descriptor of its own, as a close) is
 * tried on the next pass; flushing a room puts all of them back.
 */
static void test_proxy_room_kick_flush_and_new_work_retry(void **state)
{
	struct item extra = {0};

	(void)state;
	for (int o = 0; o < 3; o++)
		owners[o].shares_room = 1;
	submit_all();
	zsm_proxy_pass();
	posts = 0;
	owners[1].shares_room = 0;
	zsm_proxy_fifo_kick(&owners[1].fifo);
	zsm_proxy_pass();
	zsm_assert_int_eq(owners[1].ntaken, PER_OWNER);
	zsm_assert_int_eq(posts, PER_OWNER);
	/* A new descriptor that changes what parked owner 2 waits for (a
	 * close): tried, parked again. */
	extra.desc.wakes = 1;
	extra.desc.post = fake_post;
	extra.desc.fifo = &owners[2].fifo;
	extra.owner = &owners[2];
	extra.seq = PER_OWNER;
	posts = 0;
	zsm_assert_int_eq(zsm_proxy_submit(&extra.desc), 0);
	zsm_proxy_pass(); /* pops it behind the others */
	zsm_proxy_pass();
	zsm_assert_int_eq(posts, 1);
	owners[0].shares_room = 0;
	owners[2].shares_room = 0;
	zsm_proxy_room_flush(&room);
	zsm_proxy_pass();
	zsm_assert_int_eq(owners[0].ntaken, PER_OWNER);
	/* Owner 2's own, then the extra behind them. */
	zsm_assert_int_eq(owners[2].ntaken, PER_OWNER + 1);
	zsm_assert_int_eq(owners[2].taken[PER_OWNER], PER_OWNER);
	zsm_proxy_pass();
	zsm_assert_int_eq(posts, 1 + 2 * PER_OWNER + 1);
}

/* A pass polls each transport with the instance it was added with. */
static void test_proxy_hooks_take_their_instance(void **state)
{
	int before = fake_polls;

	(void)state;
	zsm_proxy_pass();
	zsm_proxy_pass();
	zsm_assert_int_eq(fake_polls, before + 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
			test_proxy_assist_mode_follows_cpus_and_setting),
		cmocka_unit_test(test_proxy_assist_waiter_only_on_a_repeat),
		cmocka_unit_test(
			test_proxy_assist_fixed_modes_ignore_the_caller),
		cmocka_unit_test_setup_teardown(
			test_proxy_refused_owners_hold_back_only_themselves,
			proxy_setup, proxy_teardown),
		cmocka_unit_test_setup_teardown(
			test_proxy_refusal_mid_fifo_keeps_order, proxy_setup,
			proxy_teardown),
		cmocka_unit_test_setup_teardown(
			test_proxy_stop_cancels_instead_of_posting, proxy_setup,
			proxy_teardown),
		cmocka_unit_test_setup_teardown(
			test_proxy_room_retries_only_once_freed, proxy_setup,
			proxy_teardown),
		cmocka_unit_test_setup_teardown(
			test_proxy_room_smaller_fits_past_a_refusal,
			proxy_setup, proxy_teardown),
		cmocka_unit_test_setup_teardown(
			test_proxy_room_kick_flush_and_new_work_retry,
			proxy_setup, proxy_teardown),
		cmocka_unit_test_setup_teardown(
			test_proxy_hooks_take_their_instance, proxy_setup,
			proxy_teardown),
	};

	return cmocka_run_group_tests_name("proxy", tests, NULL, NULL);
}
