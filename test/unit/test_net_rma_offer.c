/* SPDX-License-Identifier: MIT */
/*
 * From what fi_getinfo answers to the three asks of a device (recorded per
 * provider in data/rma_offers/, rma_offers.h) to the signal mechanism it
 * takes: the offer kept from each answer (zsm_net_rma_offer_pick), what
 * they grant (zsm_net_rma_in_fill) and the choice (zsm_net_rma_decide),
 * as net_rma_dev.c chains them, with the writedata probe and the atomic
 * add's fi_query_atomic stubbed by what the recording says they give.
 * Each choice is checked with every mechanism built (ZSM_RMA_UNBUILT,
 * this build) and with atomic unbuilt, as before it was.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/net_rma_plan.h"
#include "rma_offers.h"
#include "zsm_test.h"

/* The pass-over of a mechanism this build would lack, on atomic. */
#define ATOMIC_UNBUILT (1u << ZSM_RMA_MECH_ATOMIC)

static void load(const char *file, struct offers_rec *rec)
{
	char path[512], err[256];
	int ret;

	snprintf(path, sizeof(path), "%s/%s", ZSM_TEST_OFFERS_DIR, file);
	ret = offers_load(path, rec, err, sizeof(err));
	if (ret)
		fail_msg("%s", err);
}

/* The place of o in its answer, and that it is there. */
static int offer_index(const struct offers_answer *a, const struct fi_info *o)
{
	int i = 0;

	for (const struct fi_info *p = a->list; p; p = p->next, i++)
		if (p == o)
			return i;
	fail_msg("the offer taken is not in the answer");
	return -1;
}

struct choice {
	struct zsm_net_rma_plan plan;
	const struct fi_info *pick[OFFERS_ASKS];
	const struct fi_info *info; /* the offer the endpoints would open */
	int probed;
};

/* atomic: the answer the atomic list is, for its offers' fi_query_atomic
 * (NULL: a list of the test's own, FI_SUM taken as not done). */
static void choose_from(const char *prov, struct fi_info *const list[],
			const struct offers_answer *atomic, int writedata,
			unsigned unbuilt, struct choice *c)
{
	static const struct {
		uint64_t caps, order;
	} ask[OFFERS_ASKS] = {
		[OFFERS_ATOMIC] = {ZSM_NET_RMA_ATOMIC_CAPS,
				   ZSM_NET_RMA_ATOMIC_ORDER},
		[OFFERS_SAW] = {ZSM_NET_RMA_CAPS, ZSM_NET_RMA_SAW_ORDER},
		[OFFERS_PLAIN] = {ZSM_NET_RMA_CAPS, 0},
	};
	struct zsm_net_rma_in in = {.prov = prov,
				    .writedata = -1,
				    .want = ZSM_RMA_SIGNAL_AUTO,
				    .unbuilt = unbuilt};

	memset(c, 0, sizeof(*c));
	for (int i = 0; i < OFFERS_ASKS; i++)
		c->pick[i] = zsm_net_rma_offer_pick(list[i], ask[i].caps,
						    ask[i].order);
	zsm_net_rma_in_fill(&in, c->pick[OFFERS_ATOMIC], c->pick[OFFERS_SAW],
			    c->pick[OFFERS_PLAIN]);
	/* fi_query_atomic on the picked offer's domain, stubbed. */
	in.atomic_sum = atomic && c->pick[OFFERS_ATOMIC] &&
			atomic->sum_u64[offer_index(
				atomic, c->pick[OFFERS_ATOMIC])] == 1;
	zsm_net_rma_decide(&in, &c->plan);
	if (c->plan.needs_probe && c->pick[OFFERS_PLAIN]) {
		/* The loopback fi_writedata, stubbed. */
		in.writedata = writedata;
		c->probed = 1;
		zsm_net_rma_decide(&in, &c->plan);
	}
	switch (c->plan.mech) {
	case ZSM_RMA_MECH_ATOMIC:
		c->info = c->pick[OFFERS_ATOMIC];
		break;
	case ZSM_RMA_MECH_SAW:
		c->info = c->pick[OFFERS_SAW];
		break;
	case ZSM_RMA_MECH_WRITEDATA:
	case ZSM_RMA_MECH_FENCE:
		c->info = c->pick[OFFERS_PLAIN];
		break;
	default:
		break;
	}
}

static void choose(const struct offers_rec *rec, unsigned unbuilt,
		   struct choice *c)
{
	struct fi_info *list[OFFERS_ASKS];

	for (int i = 0; i < OFFERS_ASKS; i++)
		list[i] = rec->ask[i].list;
	choose_from(rec->prov, list, &rec->ask[OFFERS_ATOMIC], rec->writedata,
		    unbuilt, c);
}

static void assert_why(const struct choice *c, const char *s)
{
	if (!strstr(c->plan.why, s))
		fail_msg("reason '%s' lacks '%s'", c->plan.why, s);
}


/* What a recording must give, with all built and with atomic unbuilt. */
struct expect {
	const char *file;
	enum zsm_net_rma_mech mech, mech_unbuilt;
	int probed, probed_unbuilt;
	const char *why, *why_unbuilt;
};

static void check(const struct expect *e)
{
	struct offers_rec rec;
	struct choice c;

	load(e->file, &rec);
	choose(&rec, ZSM_RMA_UNBUILT, &c);
	zsm_assert_int_eq(c.plan.mech, e->mech);
	zsm_assert_int_eq(c.plan.needs_probe, 0);
	zsm_assert_int_eq(c.plan.refused, 0);
	zsm_assert_int_eq(c.probed, e->probed);
	assert_why(&c, e->why);
	assert_non_null(c.info);
	if (c.plan.mech == ZSM_RMA_MECH_ATOMIC) {
		const struct offers_answer *a = &rec.ask[OFFERS_ATOMIC];

		/* The atomic mechanism signals by FI_SUM on FI_UINT64: the
		 * offer taken must do it. */
		zsm_assert_int_eq(a->sum_u64[offer_index(a, c.info)], 1);
	}
	choose(&rec, ATOMIC_UNBUILT, &c);
	zsm_assert_int_eq(c.plan.mech, e->mech_unbuilt);
	zsm_assert_int_eq(c.plan.needs_probe, 0);
	zsm_assert_int_eq(c.plan.refused, 0);
	zsm_assert_int_eq(c.probed, e->probed_unbuilt);
	assert_why(&c, e->why_unbuilt);
	assert_non_null(c.info);
	offers_free(&rec);
}

static void test_net_rma_offer_cxi_takes_atomic(void **state)
{
	const struct expect e = {
		.file = "cxi.txt",
		.mech = ZSM_RMA_MECH_ATOMIC,
		.why = "signals by atomic: cxi grants it (",
		/* Without atomic: no SAW, and the writedata probe fails
		 * (a stub before 2.5), so the fence is what is left. */
		.mech_unbuilt = ZSM_RMA_MECH_FENCE,
		.probed_unbuilt = 1,
		.why_unbuilt = "signals by fence: cxi grants it (each signal "
			       "waits for the earlier writes to be delivered: "
			       "a round trip per signal); it grants atomic "
			       "too, which this build of zsm lacks",
	};
	struct offers_rec rec;
	struct choice c;

	(void)state;
	check(&e);
	/* The first offer that fits: provider keys, before client keys. */
	load("cxi.txt", &rec);
	choose(&rec, 0, &c);
	assert_ptr_equal(c.info, rec.ask[OFFERS_ATOMIC].list);
	zsm_assert_int_eq(c.info->domain_attr->mr_mode,
			  FI_MR_PROV_KEY | FI_MR_ALLOCATED | FI_MR_ENDPOINT);
	offers_free(&rec);
}

static void test_net_rma_offer_efa_takes_writedata_after_its_probe(void **state)
{
	const struct expect e = {
		.file = "efa.txt",
		.mech = ZSM_RMA_MECH_WRITEDATA,
		.probed = 1,
		.why = "signals by writedata: efa grants it (writes carry "
		       "sequence numbers",
		.mech_unbuilt = ZSM_RMA_MECH_WRITEDATA,
		.probed_unbuilt = 1,
		.why_unbuilt = "signals by writedata: efa grants it (",
	};
	struct offers_rec rec;
	struct choice c;

	(void)state;
	check(&e);
	/* A probe that fails: the fence. */
	load("efa.txt", &rec);
	rec.writedata = 0;
	choose(&rec, ATOMIC_UNBUILT, &c);
	zsm_assert_int_eq(c.plan.mech, ZSM_RMA_MECH_FENCE);
	assert_why(&c, "signals by fence: efa grants it (");
	offers_free(&rec);
}

static void test_net_rma_offer_verbs_rxm_takes_saw(void **state)
{
	const struct expect e = {
		.file = "verbs_rxm.txt",
		.mech = ZSM_RMA_MECH_SAW,
		.why = "signals by saw: verbs;ofi_rxm grants it (the signal "
		       "message follows the writes",
		.mech_unbuilt = ZSM_RMA_MECH_SAW,
		.why_unbuilt = "signals by saw: verbs;ofi_rxm grants it (",
	};

	(void)state;
	check(&e);
}

static void test_net_rma_offer_tcp_rxm_takes_saw(void **state)
{
	/* What zsm-info says on this machine. */
	const struct expect e = {
		.file = "tcp_rxm.txt",
		.mech = ZSM_RMA_MECH_SAW,
		.why = "signals by saw: tcp;ofi_rxm grants it (the signal "
		       "message follows the writes, the target's engine "
		       "applies it)",
		.mech_unbuilt = ZSM_RMA_MECH_SAW,
		.why_unbuilt = "signals by saw: tcp;ofi_rxm grants it (",
	};

	(void)state;
	check(&e);
}

static void test_net_rma_offer_sockets_takes_atomic(void **state)
{
	const struct expect e = {
		.file = "sockets.txt",
		.mech = ZSM_RMA_MECH_ATOMIC,
		.why = "signals by atomic: sockets grants it (",
		.mech_unbuilt = ZSM_RMA_MECH_SAW,
		.why_unbuilt = "signals by saw: sockets grants it (the signal "
			       "message follows the writes, the target's "
			       "engine applies it); it grants atomic too, "
			       "which this build of zsm lacks",
	};

	(void)state;
	check(&e);
}

/* A one-offer list: a copy of o, whose fields the caller may change. */
static struct fi_info *copy(const struct fi_info *o)
{
	struct fi_info *c = fi_dupinfo(o);

	assert_non_null(c);
	return c;
}

static void test_net_rma_offer_waw_up_to_a_size_is_not_ordered(void **state)
{
	struct offers_rec rec;
	struct fi_info *list[OFFERS_ASKS] = {NULL};
	struct choice c;

	(void)state;
	load("tcp_rxm.txt", &rec);
	list[OFFERS_SAW] = copy(rec.ask[OFFERS_SAW].list);
	list[OFFERS_PLAIN] = copy(rec.ask[OFFERS_PLAIN].list);
	/* Writes ordered up to 64 KiB of messages up to SIZE_MAX: puts
	 * would have to be cut, so no saw. */
	list[OFFERS_SAW]->ep_attr->max_order_waw_size = 65536;
	assert_null(zsm_net_rma_offer_pick(list[OFFERS_SAW], ZSM_NET_RMA_CAPS,
					   ZSM_NET_RMA_SAW_ORDER));
	choose_from(rec.prov, list, NULL, 1, ATOMIC_UNBUILT, &c);
	zsm_assert_int_eq(c.plan.mech, ZSM_RMA_MECH_WRITEDATA);
	zsm_assert_int_eq(c.probed, 1);
	/* The order size does not matter where no order is asked. */
	assert_ptr_equal(c.pick[OFFERS_PLAIN], list[OFFERS_PLAIN]);
	/* Up to the largest message is any size. */
	list[OFFERS_SAW]->ep_attr->max_msg_size = 65536;
	assert_ptr_equal(zsm_net_rma_offer_pick(list[OFFERS_SAW],
						ZSM_NET_RMA_CAPS,
						ZSM_NET_RMA_SAW_ORDER),
			 list[OFFERS_SAW]);
	fi_freeinfo(list[OFFERS_SAW]);
	fi_freeinfo(list[OFFERS_PLAIN]);
	offers_free(&rec);
}

static void test_net_rma_offer_cq_data_too_small_leaves_fence(void **state)
{
	struct offers_rec rec;
	struct fi_info *list[OFFERS_ASKS] = {NULL};
	struct choice c;

	(void)state;
	load("efa.txt", &rec);
	list[OFFERS_PLAIN] = copy(rec.ask[OFFERS_PLAIN].list);
	/* Two bytes cannot carry a sequence number: no probe, the fence. */
	list[OFFERS_PLAIN]->domain_attr->cq_data_size = 2;
	choose_from(rec.prov, list, NULL, 1, ATOMIC_UNBUILT, &c);
	zsm_assert_int_eq(c.plan.mech, ZSM_RMA_MECH_FENCE);
	zsm_assert_int_eq(c.probed, 0);
	assert_why(&c, "signals by fence: efa grants it (");
	fi_freeinfo(list[OFFERS_PLAIN]);
	offers_free(&rec);
}

/* An answer with less than was asked is checked, not trusted. */
static void test_net_rma_offer_less_than_asked_is_not_taken(void **state)
{
	const uint64_t rxm_atomic_lost =
		FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_WAR | FI_ORDER_WAW |
		FI_ORDER_SAR | FI_ORDER_SAW;
	struct offers_rec rec;
	struct fi_info *o;

	(void)state;
	load("tcp_rxm.txt", &rec);
	/* What rxm answers to FI_ATOMIC asked without WAW: the atomics,
	 * without the order (fi_rxm(7)). */
	o = copy(rec.ask[OFFERS_PLAIN].list);
	o->caps |= FI_ATOMIC;
	o->tx_attr->msg_order &= ~rxm_atomic_lost;
	o->rx_attr->msg_order &= ~rxm_atomic_lost;
	o->ep_attr->max_order_waw_size = 0;
	assert_null(zsm_net_rma_offer_pick(o, ZSM_NET_RMA_ATOMIC_CAPS,
					   ZSM_NET_RMA_ATOMIC_ORDER));
	fi_freeinfo(o);
	/* The order granted for sending but not for receiving. */
	o = copy(rec.ask[OFFERS_SAW].list);
	o->rx_attr->msg_order &= ~FI_ORDER_SAW;
	assert_null(zsm_net_rma_offer_pick(o, ZSM_NET_RMA_CAPS,
					   ZSM_NET_RMA_SAW_ORDER));
	/* No remote writes: no RMA at all, and nothing one-sided. */
	o->rx_attr->msg_order |= FI_ORDER_SAW;
	o->caps &= ~FI_REMOTE_WRITE;
	assert_null(zsm_net_rma_offer_pick(o, ZSM_NET_RMA_CAPS, 0));
	fi_freeinfo(o);
	offers_free(&rec);
}

static void test_net_rma_offer_first_that_fits_is_taken(void **state)
{
	struct offers_rec efa, tcp;
	struct fi_info *list;

	(void)state;
	load("efa.txt", &efa);
	load("tcp_rxm.txt", &tcp);
	/* efa's offer, then tcp's: the saw ask skips the first. */
	list = copy(efa.ask[OFFERS_PLAIN].list);
	list->next = copy(tcp.ask[OFFERS_SAW].list);
	assert_ptr_equal(zsm_net_rma_offer_pick(list, ZSM_NET_RMA_CAPS,
						ZSM_NET_RMA_SAW_ORDER),
			 list->next);
	assert_ptr_equal(zsm_net_rma_offer_pick(list, ZSM_NET_RMA_CAPS, 0),
			 list);
	assert_null(zsm_net_rma_offer_pick(NULL, ZSM_NET_RMA_CAPS, 0));
	fi_freeinfo(list);
	offers_free(&efa);
	offers_free(&tcp);
}

static void test_net_rma_offer_fill_reads_the_picks(void **state)
{
	struct offers_rec tcp;
	struct zsm_net_rma_in in = {.prov = "p",
				    .writedata = 1,
				    .want = ZSM_RMA_MECH_FENCE,
				    .unbuilt = ATOMIC_UNBUILT};
	const struct fi_info *saw;

	(void)state;
	load("tcp_rxm.txt", &tcp);
	saw = tcp.ask[OFFERS_SAW].list;
	zsm_net_rma_in_fill(&in, NULL, NULL, NULL);
	zsm_assert_int_eq(in.rma, 0);
	zsm_assert_int_eq(in.cq_data_size, 0);
	/* Sequence numbers ride on the plain offer's writes only. */
	zsm_net_rma_in_fill(&in, NULL, saw, NULL);
	zsm_assert_int_eq(in.rma, 1);
	zsm_assert_int_eq(in.saw_ordered, 1);
	zsm_assert_int_eq(in.atomic_ordered, 0);
	zsm_assert_int_eq(in.cq_data_size, 0);
	zsm_net_rma_in_fill(&in, saw, NULL, tcp.ask[OFFERS_PLAIN].list);
	zsm_assert_int_eq(in.atomic_ordered, 1);
	/* rxm grants no FI_FENCE. */
	zsm_assert_int_eq(in.atomic_fence, 0);
	zsm_assert_int_eq(in.saw_ordered, 0);
	zsm_assert_int_eq(in.cq_data_size, 8);
	/* What is not the offers' is left alone. */
	assert_string_equal(in.prov, "p");
	zsm_assert_int_eq(in.writedata, 1);
	zsm_assert_int_eq(in.want, ZSM_RMA_MECH_FENCE);
	zsm_assert_int_eq(in.unbuilt, ATOMIC_UNBUILT);
	offers_free(&tcp);
}

/*
 * atomic needs, besides the ordered offer, its fi_query_atomic FI_SUM on
 * FI_UINT64 and FI_FENCE for the messages of staged windows: cxi's offer
 * without either is not atomic, and the next mechanism is taken; forced,
 * it is refused naming what is missing.
 */
static void test_net_rma_offer_atomic_needs_sum_and_fence(void **state)
{
	struct offers_rec rec;
	struct fi_info *list[OFFERS_ASKS] = {NULL};
	struct offers_answer atomic = {0};
	struct zsm_net_rma_in in = {.prov = "cxi", .writedata = 0};
	struct zsm_net_rma_plan plan;
	struct choice c;

	(void)state;
	load("cxi.txt", &rec);
	list[OFFERS_ATOMIC] = copy(rec.ask[OFFERS_ATOMIC].list);
	list[OFFERS_PLAIN] = copy(rec.ask[OFFERS_PLAIN].list);
	atomic.list = list[OFFERS_ATOMIC];
	atomic.n = 1;
	atomic.sum_u64[0] = 1;
	choose_from(rec.prov, list, &atomic, 0, ZSM_RMA_UNBUILT, &c);
	zsm_assert_int_eq(c.plan.mech, ZSM_RMA_MECH_ATOMIC);
	/* The domain does no 64-bit add: the fence (writedata a stub). */
	atomic.sum_u64[0] = 0;
	choose_from(rec.prov, list, &atomic, 0, ZSM_RMA_UNBUILT, &c);
	zsm_assert_int_eq(c.plan.mech, ZSM_RMA_MECH_FENCE);
	zsm_net_rma_in_fill(&in, c.pick[OFFERS_ATOMIC], NULL,
			    c.pick[OFFERS_PLAIN]);
	in.want = ZSM_RMA_MECH_ATOMIC;
	zsm_net_rma_decide(&in, &plan);
	zsm_assert_int_eq(plan.refused, 1);
	if (!strstr(plan.why, "FI_SUM on FI_UINT64"))
		fail_msg("reason '%s'", plan.why);
	/* The add, but no FI_FENCE. */
	atomic.sum_u64[0] = 1;
	list[OFFERS_ATOMIC]->caps &= ~FI_FENCE;
	choose_from(rec.prov, list, &atomic, 0, ZSM_RMA_UNBUILT, &c);
	zsm_assert_int_eq(c.plan.mech, ZSM_RMA_MECH_FENCE);
	zsm_net_rma_in_fill(&in, c.pick[OFFERS_ATOMIC], NULL,
			    c.pick[OFFERS_PLAIN]);
	in.atomic_sum = 1;
	zsm_net_rma_decide(&in, &plan);
	zsm_assert_int_eq(plan.refused, 1);
	if (!strstr(plan.why, "no FI_FENCE"))
		fail_msg("reason '%s'", plan.why);
	fi_freeinfo(list[OFFERS_ATOMIC]);
	fi_freeinfo(list[OFFERS_PLAIN]);
	offers_free(&rec);
}

/* A recording missing a field is refused, naming it: nothing defaults. */
static void test_net_rma_offer_record_lacking_a_field_is_refused(void **state)
{
	static const char text[] = "provider x\nwritedata 1\nquery atomic\n"
				   "query saw\nquery plain\noffer\n"
				   "  caps FI_RMA\n  tx_msg_order 0\n"
				   "  rx_msg_order 0\n  max_order_waw_size 0\n"
				   "  max_msg_size SIZE_MAX\n  mr_mode 0\n"
				   "  atomic_sum_u64 -\nend\n";
	char path[] = "/tmp/zsm-offers-XXXXXX", err[256];
	struct offers_rec rec;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_true(write(fd, text, sizeof(text) - 1) ==
		    (ssize_t)(sizeof(text) - 1));
	close(fd);
	zsm_assert_int_eq(offers_load(path, &rec, err, sizeof(err)), -EINVAL);
	unlink(path);
	if (!strstr(err, ":14: offer lacks cq_data_size"))
		fail_msg("error '%s'", err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_net_rma_offer_cxi_takes_atomic),
		cmocka_unit_test(
			test_net_rma_offer_efa_takes_writedata_after_its_probe),
		cmocka_unit_test(test_net_rma_offer_verbs_rxm_takes_saw),
		cmocka_unit_test(test_net_rma_offer_tcp_rxm_takes_saw),
		cmocka_unit_test(test_net_rma_offer_sockets_takes_atomic),
		cmocka_unit_test(
			test_net_rma_offer_waw_up_to_a_size_is_not_ordered),
		cmocka_unit_test(
			test_net_rma_offer_cq_data_too_small_leaves_fence),
		cmocka_unit_test(
			test_net_rma_offer_less_than_asked_is_not_taken),
		cmocka_unit_test(test_net_rma_offer_first_that_fits_is_taken),
		cmocka_unit_test(test_net_rma_offer_fill_reads_the_picks),
		cmocka_unit_test(test_net_rma_offer_atomic_needs_sum_and_fence),
		cmocka_unit_test(
			test_net_rma_offer_record_lacking_a_field_is_refused),
	};

	return cmocka_run_group_tests_name("net_rma_offer", tests, NULL, NULL);
}
