/* SPDX-License-Identifier: MIT */
/*
 * Flow control (net_credit.c) on a model of one comm: a sender of small
 * and large messages, a receiver that posts grouped receives a random
 * distance ahead, and two wires with random delays (data in order,
 * GRANTs in any order).  Under every schedule all messages arrive, no
 * more than the allowance of them ever waits unmatched (and never a large
 * one), and a receiver that posts nothing stops the sender after the
 * allowance.  The endpoint's timed look (late GRANTs) comes only when
 * nothing else can move: it is never needed while the receiver knows
 * which receives a large message may take, and it gets a large message
 * into a receive the receiver took for small going.
 */
#include <stdlib.h>
#include <string.h>

#include "net/net_credit.h"
#include "zsm_test.h"

#define WIRE 4096

struct model {
	struct zsm_net_credit snd, rcv;
	uint64_t total;	     /* messages the sender has to send */
	uint64_t data_wire;  /* sent, not yet at the receiver (in order) */
	uint64_t early;	     /* at the receiver, no receive posted yet */
	uint64_t early_max;  /* the most ever waiting */
	uint64_t large_early; /* large ones that ever waited */
	unsigned large_pct;  /* how many messages are large */
	uint64_t grants[WIRE]; /* GRANTs on their way, any order */
	int ngrants;
	int grant_wanted, grant_busy; /* the comm's one control send */
	uint64_t grants_sent;
	unsigned ahead; /* receives the receiver keeps posted past arrivals */
	int blind;	/* the receiver takes every receive for small */
	uint64_t late_grants; /* GRANTs the timed look asked for */
	unsigned seed;
};

static unsigned rnd(struct model *m, unsigned n)
{
	return (unsigned)(rand_r(&m->seed) % n);
}

/* Whether message seq is large: a fixed function of it, as both sides
 * of a real comm would have it from the application. */
static int msg_large(const struct model *m, uint64_t seq)
{
	return (unsigned)((seq * 2654435761u) >> 7) % 100 < m->large_pct;
}

static void check_grant(struct model *m)
{
	if (zsm_net_credit_want_grant(&m->rcv))
		m->grant_wanted = 1;
}

/* Posted receives take what waits: each is an arrival at once. */
static void take_early(struct model *m)
{
	while (m->early && m->rcv.posted > m->rcv.arrived) {
		m->early--;
		zsm_net_credit_on_arrival(&m->rcv);
	}
	check_grant(m);
}

/* One step of whatever can happen now; 0 when nothing can (stuck). */
static int step(struct model *m)
{
	int moved = 0;

	for (int tries = 0; tries < 8 && !moved; tries++) {
		switch (rnd(m, 5)) {
		case 0: /* the sender posts one */
			if (m->snd.sent < m->total &&
			    zsm_net_credit_may_send(&m->snd,
						    msg_large(m, m->snd.sent))) {
				zsm_net_credit_on_send(&m->snd);
				m->data_wire++;
				moved = 1;
			}
			break;
		case 1: /* the oldest data message lands */
			if (m->data_wire) {
				uint64_t seq = m->snd.sent - m->data_wire;

				m->data_wire--;
				if (m->rcv.posted > m->rcv.arrived + m->early) {
					zsm_net_credit_on_arrival(&m->rcv);
					check_grant(m);
				} else {
					m->early++;
					m->large_early += msg_large(m, seq);
					if (m->early > m->early_max)
						m->early_max = m->early;
				}
				moved = 1;
			}
			break;
		case 2: /* the receiver posts a group, up to its distance */
			if (m->rcv.posted < m->total &&
			    m->rcv.posted < m->rcv.arrived + m->ahead) {
				unsigned n = 1 + rnd(m, 8);

				if (n > m->total - m->rcv.posted)
					n = (unsigned)(m->total -
						       m->rcv.posted);
				int large = 0;

				for (unsigned k = 0; k < n && !m->blind; k++)
					large |= msg_large(m,
							   m->rcv.posted + k);
				zsm_net_credit_on_post(&m->rcv, n, large);
				check_grant(m);
				take_early(m);
				moved = 1;
			}
			break;
		case 3: /* the control send goes, or completes */
			if (m->grant_wanted && !m->grant_busy &&
			    m->ngrants < WIRE) {
				m->grants[m->ngrants++] =
					zsm_net_credit_grant(&m->rcv);
				m->grants_sent++;
				m->grant_wanted = 0;
				m->grant_busy = 1;
				moved = 1;
			} else if (m->grant_busy) {
				m->grant_busy = 0;
				moved = 1;
			}
			break;
		default: /* some GRANT lands */
			if (m->ngrants) {
				int i = (int)rnd(m, (unsigned)m->ngrants);

				zsm_net_credit_on_grant(&m->snd, m->grants[i]);
				m->grants[i] = m->grants[--m->ngrants];
				moved = 1;
			}
			break;
		}
	}
	if (moved)
		return 1;
	/* Nothing chosen moved: is there anything at all that could? */
	if ((m->snd.sent < m->total &&
	     zsm_net_credit_may_send(&m->snd, msg_large(m, m->snd.sent))) ||
	    m->data_wire || m->ngrants || m->grant_busy ||
	    (m->grant_wanted && !m->grant_busy) ||
	    (m->rcv.posted < m->total &&
	     m->rcv.posted < m->rcv.arrived + m->ahead))
		return 1;
	/* Stuck but for the endpoint's timed looks: the first notes the
	 * arrivals so far, the next finds the comm quiet. */
	for (int look = 0; look < 2; look++)
		if (zsm_net_credit_want_late_grant(&m->rcv)) {
			m->grant_wanted = 1;
			m->late_grants++;
			return 1;
		}
	return 0;
}

static void model_run(struct model *m, unsigned early, unsigned ahead,
		      unsigned large_pct, uint64_t total, unsigned seed)
{
	int blind = m->blind;

	memset(m, 0, sizeof(*m));
	m->blind = blind;
	m->large_pct = large_pct;
	m->total = total;
	m->ahead = ahead;
	m->seed = seed;
	zsm_net_credit_recv_init(&m->rcv, early);
	/* CONN_ACK carries what the receive comm starts with. */
	zsm_net_credit_send_init(&m->snd, m->rcv.granted);
	/* Until every message arrived and its sender heard that its
	 * receive was posted: none may stay held (net_credit.h). */
	while (m->rcv.arrived < total ||
	       zsm_net_credit_unasked(&m->snd, m->snd.sent)) {
		if (!step(m))
			fail_msg("stuck: early %u, ahead %u, seed %u: sent %llu "
				 "of %llu, limit %llu, posted %llu, arrived "
				 "%llu",
				 early, ahead, seed,
				 (unsigned long long)m->snd.sent,
				 (unsigned long long)total,
				 (unsigned long long)m->snd.limit,
				 (unsigned long long)m->rcv.posted,
				 (unsigned long long)m->rcv.arrived);
	}
}

static void test_net_credit_no_schedule_sticks(void **state)
{
	static const unsigned earlies[] = {0, 1, 2, 3, 16, 64};
	static const unsigned aheads[] = {1, 2, 7, 64, 1000};
	struct model m;

	(void)state;
	for (unsigned e = 0; e < sizeof(earlies) / sizeof(earlies[0]); e++)
		for (unsigned a = 0; a < sizeof(aheads) / sizeof(aheads[0]);
		     a++)
			for (unsigned seed = 1; seed <= 20; seed++) {
				m.blind = 0;
				model_run(&m, earlies[e], aheads[a],
					  (seed % 3) * 40, 3000, seed);
				zsm_assert_int_eq(m.rcv.arrived, 3000);
				zsm_assert_int_eq(m.snd.sent, 3000);
				if (m.early_max > earlies[e])
					fail_msg("%llu messages waited "
						 "unmatched, allowance %u",
						 (unsigned long long)
							 m.early_max,
						 earlies[e]);
				zsm_assert_int_eq(m.large_early, 0);
				/* Every GRANT came from a post or an
				 * arrival: none waited for a timed look. */
				zsm_assert_int_eq(m.late_grants, 0);
			}
}

/*
 * A receiver that takes every receive for small (the sender's eager size
 * is not ours, or a large message comes for a small receive, which the
 * receiver reports as its error): the large messages still go, by the
 * timed look's GRANTs, and none waits unmatched.
 */
static void test_net_credit_blind_receiver_gets_there(void **state)
{
	struct model m;
	uint64_t late = 0;

	(void)state;
	for (unsigned seed = 1; seed <= 20; seed++) {
		m.blind = 1;
		model_run(&m, 4, 1 + seed % 8, 40, 1000, seed);
		zsm_assert_int_eq(m.rcv.arrived, 1000);
		zsm_assert_int_eq(m.large_early, 0);
		late += m.late_grants;
	}
	/* The look was what let them go. */
	assert_true(late > 0);
}

/* Nothing posted: the sender goes as far as the allowance, no further. */
static void test_net_credit_sender_stops_at_allowance(void **state)
{
	struct zsm_net_credit snd, rcv;
	int sent = 0;

	(void)state;
	zsm_net_credit_recv_init(&rcv, 16);
	zsm_net_credit_send_init(&snd, rcv.granted);
	/* A large message may not go at all. */
	assert_false(zsm_net_credit_may_send(&snd, 1));
	while (zsm_net_credit_may_send(&snd, 0) && sent < 1000) {
		zsm_net_credit_on_send(&snd);
		sent++;
	}
	zsm_assert_int_eq(sent, 16);
	/* Arrivals alone give nothing new: no receive was posted. */
	for (int i = 0; i < 16; i++)
		zsm_net_credit_on_arrival(&rcv);
	assert_false(zsm_net_credit_want_grant(&rcv));
	/* One receive posted: one more message may go. */
	zsm_net_credit_on_post(&rcv, 1, 0);
	assert_true(zsm_net_credit_want_grant(&rcv));
	assert_true(zsm_net_credit_on_grant(&snd, zsm_net_credit_grant(&rcv)));
	assert_true(zsm_net_credit_may_send(&snd, 0));
	zsm_net_credit_on_send(&snd);
	assert_false(zsm_net_credit_may_send(&snd, 0));
}

/* A large first message goes once its receive is posted: no arrival is
 * needed for the GRANT that lets it. */
static void test_net_credit_large_waits_for_its_receive(void **state)
{
	struct zsm_net_credit snd, rcv;

	(void)state;
	zsm_net_credit_recv_init(&rcv, 4);
	zsm_net_credit_send_init(&snd, rcv.granted);
	assert_false(zsm_net_credit_may_send(&snd, 1));
	assert_false(zsm_net_credit_want_grant(&rcv));
	zsm_net_credit_on_post(&rcv, 1, 1);
	assert_true(zsm_net_credit_want_grant(&rcv));
	zsm_net_credit_on_grant(&snd, zsm_net_credit_grant(&rcv));
	assert_true(zsm_net_credit_may_send(&snd, 1));
	zsm_net_credit_on_send(&snd);
	assert_false(zsm_net_credit_may_send(&snd, 1));
	assert_true(zsm_net_credit_may_send(&snd, 0));
}

/*
 * A small receive's GRANT waits while the allowance carries the sender,
 * but not past the arrival of a message the sender was not told had its
 * receive: the sender holds that send until it hears (issue 32).
 */
static void test_net_credit_small_receive_grant_waits(void **state)
{
	struct zsm_net_credit rcv;

	(void)state;
	zsm_net_credit_recv_init(&rcv, 4);
	zsm_net_credit_on_post(&rcv, 2, 0);
	assert_false(zsm_net_credit_want_grant(&rcv));
	/* Quiet since the comm began: the first look already finds it. */
	assert_true(zsm_net_credit_want_late_grant(&rcv));
	zsm_net_credit_on_arrival(&rcv);
	/* Its sender holds that send: granted on the arrival. */
	assert_true(zsm_net_credit_want_grant(&rcv));
	zsm_assert_int_eq(zsm_net_credit_grant(&rcv), 2 + 4);
	/* More receives, nothing new arrived: the allowance carries. */
	zsm_net_credit_on_post(&rcv, 2, 0);
	assert_false(zsm_net_credit_want_grant(&rcv));
	zsm_net_credit_on_arrival(&rcv);
	assert_false(zsm_net_credit_want_grant(&rcv));
	zsm_net_credit_on_arrival(&rcv);
	assert_true(zsm_net_credit_want_grant(&rcv));
	zsm_assert_int_eq(zsm_net_credit_grant(&rcv), 4 + 4);
	/* Told of everything posted: nothing owed, quiet or not. */
	assert_false(zsm_net_credit_want_late_grant(&rcv));
	assert_false(zsm_net_credit_want_late_grant(&rcv));
}

/*
 * A ping-pong's receiver posts one receive at a time: it grants as it
 * posts, so that the GRANT travels ahead of the message its sender
 * would hold until told, and not again when the message arrives.
 */
static void test_net_credit_lone_receive_granted_on_post(void **state)
{
	struct zsm_net_credit rcv;

	(void)state;
	zsm_net_credit_recv_init(&rcv, 4);
	for (int i = 1; i <= 3; i++) {
		zsm_net_credit_on_post(&rcv, 1, 0);
		assert_true(zsm_net_credit_want_grant(&rcv));
		zsm_assert_int_eq(zsm_net_credit_grant(&rcv), i + 4);
		zsm_net_credit_on_arrival(&rcv);
		assert_false(zsm_net_credit_want_grant(&rcv));
	}
	/* A second one posted before the first's message came: not lone. */
	zsm_net_credit_on_post(&rcv, 1, 0);
	zsm_net_credit_grant(&rcv);
	zsm_net_credit_on_post(&rcv, 1, 0);
	assert_false(zsm_net_credit_want_grant(&rcv));
}

/*
 * A send under the allowance is not known to have a receive until a
 * GRANT covers it (then it may be reported done); one beyond what a
 * closed sender sent matches nothing.
 */
static void test_net_credit_early_send_unasked_until_granted(void **state)
{
	struct zsm_net_credit snd, rcv;

	(void)state;
	zsm_net_credit_recv_init(&rcv, 4);
	zsm_net_credit_send_init(&snd, rcv.granted);
	zsm_net_credit_on_send(&snd);
	zsm_net_credit_on_send(&snd);
	assert_true(zsm_net_credit_unasked(&snd, 1));
	/* The receiver posted one receive: the first send has it. */
	zsm_net_credit_on_post(&rcv, 1, 0);
	zsm_net_credit_on_arrival(&rcv);
	assert_true(zsm_net_credit_want_grant(&rcv));
	zsm_net_credit_on_grant(&snd, zsm_net_credit_grant(&rcv));
	assert_false(zsm_net_credit_unasked(&snd, 1));
	assert_true(zsm_net_credit_unasked(&snd, 2));
	/* The sender closed after 2: a third receive waits for nothing. */
	rcv.closed = 1;
	rcv.final = 2;
	assert_false(zsm_net_credit_unmatched(&rcv, 1));
	zsm_net_credit_on_post(&rcv, 1, 0);
	assert_true(zsm_net_credit_unmatched(&rcv, 1));
	assert_false(zsm_net_credit_unmatched(&rcv, 0));
}

/*
 * The receiver took two early messages and closed before the GRANT that
 * would confirm them went: its CLOSE's count confirms them instead, and
 * the sender's comm fails only for a message beyond what was taken.
 */
static void test_net_credit_close_confirms_what_was_taken(void **state)
{
	struct zsm_net_credit snd, rcv, lost;

	(void)state;
	zsm_net_credit_recv_init(&rcv, 4);
	zsm_net_credit_send_init(&snd, rcv.granted);
	zsm_net_credit_on_send(&snd);
	zsm_net_credit_on_send(&snd);
	lost = snd;
	zsm_net_credit_on_send(&lost);
	zsm_net_credit_on_post(&rcv, 2, 0);
	zsm_net_credit_on_arrival(&rcv);
	zsm_net_credit_on_arrival(&rcv);
	assert_true(zsm_net_credit_unasked(&snd, 1));
	assert_true(zsm_net_credit_unasked(&snd, 2));
	assert_false(zsm_net_credit_on_close(&snd, rcv.arrived));
	assert_true(snd.closed);
	assert_false(zsm_net_credit_unasked(&snd, 1));
	assert_false(zsm_net_credit_unasked(&snd, 2));
	/* A third was sent, which nothing took. */
	assert_true(zsm_net_credit_on_close(&lost, rcv.arrived));
	assert_true(zsm_net_credit_unasked(&lost, 3));
	/* A larger limit it had stays. */
	snd.limit = 100;
	zsm_net_credit_on_close(&snd, 1);
	assert_int_equal(snd.limit, 100);
}

/* A GRANT the receiver wants, delivered at once: 1 when there was one. */
static unsigned grant_now(struct zsm_net_credit *snd,
			  struct zsm_net_credit *rcv)
{
	if (!zsm_net_credit_want_grant(rcv))
		return 0;
	zsm_net_credit_on_grant(snd, zsm_net_credit_grant(rcv));
	return 1;
}

/*
 * A ping-pong of small messages (one receive posted at a time, the next
 * message after it): its sender never waits for a GRANT to send, and
 * every send is confirmed by the GRANT its arrival sends (one per
 * message: the price of not reporting done a send that may be dropped).
 */
static void test_net_credit_pingpong_sends_confirmed(void **state)
{
	struct zsm_net_credit snd, rcv;
	unsigned grants = 0;

	(void)state;
	zsm_net_credit_recv_init(&rcv, 4);
	zsm_net_credit_send_init(&snd, rcv.granted);
	for (int i = 0; i < 3000; i++) {
		zsm_net_credit_on_post(&rcv, 1, 0);
		grants += grant_now(&snd, &rcv);
		assert_true(zsm_net_credit_may_send(&snd, 0));
		zsm_net_credit_on_send(&snd);
		zsm_net_credit_on_arrival(&rcv);
		grants += grant_now(&snd, &rcv);
		assert_false(zsm_net_credit_unasked(&snd, snd.sent));
	}
	if (grants > 3000)
		fail_msg("%u GRANTs for 3000 messages", grants);
}

/* A late GRANT with an older, smaller limit takes nothing back. */
static void test_net_credit_old_grant_ignored(void **state)
{
	struct zsm_net_credit snd;

	(void)state;
	zsm_net_credit_send_init(&snd, 16);
	assert_true(zsm_net_credit_on_grant(&snd, 40));
	assert_false(zsm_net_credit_on_grant(&snd, 24));
	zsm_assert_int_eq(snd.limit, 40);
}

/*
 * A receiver posted far ahead grants about once per half allowance of
 * arrivals, not once per receive: a GRANT per message would double the
 * messages of a busy comm.
 */
static void test_net_credit_grants_are_batched(void **state)
{
	struct model m;

	(void)state;
	for (unsigned seed = 1; seed <= 10; seed++) {
		m.blind = 0;
		model_run(&m, 16, 1000, 0, 4000, seed);
		if (m.grants_sent > 4000 / 8 + 2)
			fail_msg("%llu GRANTs for 4000 messages",
				 (unsigned long long)m.grants_sent);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_net_credit_no_schedule_sticks),
		cmocka_unit_test(test_net_credit_sender_stops_at_allowance),
		cmocka_unit_test(test_net_credit_old_grant_ignored),
		cmocka_unit_test(test_net_credit_large_waits_for_its_receive),
		cmocka_unit_test(test_net_credit_grants_are_batched),
		cmocka_unit_test(test_net_credit_blind_receiver_gets_there),
		cmocka_unit_test(test_net_credit_small_receive_grant_waits),
		cmocka_unit_test(test_net_credit_pingpong_sends_confirmed),
		cmocka_unit_test(
			test_net_credit_early_send_unasked_until_granted),
		cmocka_unit_test(test_net_credit_close_confirms_what_was_taken),
		cmocka_unit_test(test_net_credit_lone_receive_granted_on_post),
	};

	return cmocka_run_group_tests_name("net_credit", tests, NULL, NULL);
}
