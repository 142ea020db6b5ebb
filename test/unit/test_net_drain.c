/* SPDX-License-Identifier: MIT */
/*
 * The stray scan's sweep set (net_drain.c) on a fake endpoint: around a
 * stray's tag, the widest set of tags that holds no message zsm keeps (no
 * control message, no data for a live receive comm), since a sweep
 * discards whatever is oldest in it, in any order.  A set one bit too
 * wide would discard data a live comm is owed; one too narrow sweeps
 * less than it could.  And the question each round asks again, since a
 * receive comm may be made inside a set while it is swept.
 */
#include <stdlib.h>
#include <string.h>

#include "net/net.h"
#include "zsm_test.h"

#define NLIVE 64
/* Data tags' set: bits 63 down to the control bit, all zero. */
#define DATA_TOP (64 - __builtin_ctzll(ZSM_TAG_CTRL))

struct fake {
	struct zsm_net_ep ep;
	struct zsm_net_comm comms[NLIVE + 2];
	int n;
};

static struct zsm_net_comm *fake_comm(struct fake *f, int type, uint32_t id)
{
	struct zsm_net_comm *c = &f->comms[f->n++];

	c->type = (uint8_t)type;
	c->local_id = id & ZSM_TAG_ID_MAX;
	c->ep = &f->ep;
	c->ep_next = f->ep.comms;
	f->ep.comms = c;
	return c;
}

/* Whether t lies under the prefix of tag's top len bits. */
static int under(uint64_t tag, int len, uint64_t t)
{
	return len == 0 || ((t ^ tag) >> (64 - len)) == 0;
}

/* Whether the prefix holds a message zsm keeps: a control message, or
 * data for one of the fake's live receive comms. */
static int holds_kept(const struct fake *f, uint64_t tag, int len)
{
	if (under(tag, len, ZSM_TAG_CTRL | (tag & (ZSM_TAG_CTRL - 1))))
		return 1;
	for (const struct zsm_net_comm *c = f->ep.comms; c; c = c->ep_next)
		if (c->type == ZSM_COMM_RECV && !c->closing &&
		    under(tag, len, zsm_tag_data(c->local_id, (int)(tag &
		    ZSM_TAG_USER_MAX))))
			return 1;
	return 0;
}

static int is_live(const struct fake *f, uint32_t id)
{
	for (const struct zsm_net_comm *c = f->ep.comms; c; c = c->ep_next)
		if (c->type == ZSM_COMM_RECV && !c->closing &&
		    c->local_id == id)
			return 1;
	return 0;
}

/* The set holds strays only, and one bit wider it would not. */
static void check_set(const struct fake *f, uint64_t tag)
{
	int len = zsm_net_drain_stray_len(&f->ep, tag);

	if (len < 1 || len > ZSM_DRAIN_LEAF)
		fail_msg("tag %#llx: length %d", (unsigned long long)tag, len);
	if (holds_kept(f, tag, len))
		fail_msg("tag %#llx: the set of its top %d bits holds a kept "
			 "message", (unsigned long long)tag, len);
	if (!holds_kept(f, tag, len - 1))
		fail_msg("tag %#llx: the set of its top %d bits holds strays "
			 "only, and %d was given", (unsigned long long)tag,
			 len - 1, len);
}

static uint32_t rnd32(void)
{
	return (uint32_t)random() << 16 ^ (uint32_t)random();
}

static void test_net_drain_sweep_set_holds_strays_only(void **state)
{
	struct fake *f = calloc(1, sizeof(*f));
	int checked = 0;

	(void)state;
	assert_non_null(f);
	srandom(7);
	/* Live ids in clusters, so that strays share long prefixes. */
	for (int i = 0; i < NLIVE; i++)
		fake_comm(f, ZSM_COMM_RECV, i < 8 ? 0x400000u + (uint32_t)i
						 : rnd32());
	while (checked < 20000) {
		uint32_t id = checked % 3 ? rnd32() & ZSM_TAG_ID_MAX
					  : 0x400000u + (rnd32() & 63);

		if (is_live(f, id))
			continue;
		check_set(f, zsm_tag_data(id, (int)(rnd32() &
						    ZSM_TAG_USER_MAX)));
		checked++;
	}
	free(f);
}

/* Tags with bits above the control bit are no zsm message's: the set is
 * every tag with the stray's top bit, whatever the live comms. */
static void test_net_drain_sweep_set_of_high_bits(void **state)
{
	struct fake f;

	(void)state;
	memset(&f, 0, sizeof(f));
	fake_comm(&f, ZSM_COMM_RECV, 5);
	zsm_assert_int_eq(zsm_net_drain_stray_len(&f.ep, 1ULL << 63), 1);
	zsm_assert_int_eq(zsm_net_drain_stray_len(&f.ep, 1ULL << 48 | 5), 16);
	for (int bit = 48; bit < 64; bit++)
		check_set(&f, 1ULL << bit | (rnd32() & 0xffff));
}

/* Send comms and closing receive comms take no data: their ids do not
 * narrow the set; with no live receive comm it is all data tags. */
static void test_net_drain_sweep_set_ignores_dead_comms(void **state)
{
	struct fake f;
	uint64_t stray = zsm_tag_data(0x2aaaaa, 9);

	(void)state;
	memset(&f, 0, sizeof(f));
	fake_comm(&f, ZSM_COMM_SEND, 0x2aaaab);
	fake_comm(&f, ZSM_COMM_RECV, 0x2aaaa8)->closing = 1;
	zsm_assert_int_eq(zsm_net_drain_stray_len(&f.ep, stray),
			  DATA_TOP);
	check_set(&f, stray);
	/* A live one sharing 21 bits: the set is one bit past them. */
	fake_comm(&f, ZSM_COMM_RECV, 0x2aaaa8);
	zsm_assert_int_eq(zsm_net_drain_stray_len(&f.ep, stray),
			  DATA_TOP + 22);
	check_set(&f, stray);
}

/* The question a sweep asks before each round agrees with the oracle on
 * sets of every length, and turns as a receive comm is made in the set
 * being swept (its early data must not be discarded). */
static void test_net_drain_sweep_stops_for_a_new_comm(void **state)
{
	struct fake *f = calloc(1, sizeof(*f));
	struct zsm_net_drain_prefix q;
	uint64_t stray = zsm_tag_data(0x123456, 3);

	(void)state;
	assert_non_null(f);
	srandom(11);
	q.len = zsm_net_drain_stray_len(&f->ep, stray);
	q.tag = stray & ~(~0ULL >> q.len);
	zsm_assert_int_eq(q.len, DATA_TOP);
	assert_true(zsm_net_drain_strays_only(&f->ep, q));
	fake_comm(f, ZSM_COMM_RECV, 0x7abcde)->closing = 1;
	assert_true(zsm_net_drain_strays_only(&f->ep, q));
	fake_comm(f, ZSM_COMM_RECV, 0x7abcde);
	assert_false(zsm_net_drain_strays_only(&f->ep, q));
	for (int i = 0; i < NLIVE - 2; i++)
		fake_comm(f, ZSM_COMM_RECV, rnd32());
	for (int i = 0; i < 20000; i++) {
		uint64_t t = i % 5 ? zsm_tag_data(rnd32() & ZSM_TAG_ID_MAX, 0)
				   : (uint64_t)rnd32() << 32 | rnd32();
		struct zsm_net_drain_prefix p = {0, (int)(rnd32() % 41), 0};

		p.tag = p.len ? t & ~(~0ULL >> p.len) : 0;
		if (zsm_net_drain_strays_only(&f->ep, p) ==
		    holds_kept(f, p.tag, p.len))
			fail_msg("set %#llx/%d: strays only says %d",
				 (unsigned long long)p.tag, p.len,
				 zsm_net_drain_strays_only(&f->ep, p));
	}
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_net_drain_sweep_set_holds_strays_only),
		cmocka_unit_test(test_net_drain_sweep_set_of_high_bits),
		cmocka_unit_test(test_net_drain_sweep_set_ignores_dead_comms),
		cmocka_unit_test(test_net_drain_sweep_stops_for_a_new_comm),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
