/* SPDX-License-Identifier: MIT */
/* Owns a comm's data flow control (net_credit.h says why and how). */
#include "net/net_credit.h"

void zsm_net_credit_recv_init(struct zsm_net_credit *cr, uint32_t early)
{
	*cr = (struct zsm_net_credit){.early = early, .granted = early};
}

void zsm_net_credit_send_init(struct zsm_net_credit *cr, uint64_t limit)
{
	/* Nothing is posted before the comm exists: the first limit is the
	 * allowance alone. */
	*cr = (struct zsm_net_credit){.limit = limit,
				      .early = (uint32_t)limit};
}

int zsm_net_credit_may_send(const struct zsm_net_credit *cr, int large)
{
	/* limit - early: the receives posted when the limit was granted. */
	return large ? cr->sent + cr->early < cr->limit : cr->sent < cr->limit;
}

void zsm_net_credit_on_send(struct zsm_net_credit *cr)
{
	cr->sent++;
}

int zsm_net_credit_on_grant(struct zsm_net_credit *cr, uint64_t limit)
{
	/* GRANTs may overtake each other: only a larger limit counts. */
	if (limit <= cr->limit)
		return 0;
	cr->limit = limit;
	return 1;
}

void zsm_net_credit_on_post(struct zsm_net_credit *cr, unsigned n,
			    int large)
{
	cr->posted += n;
	cr->lone = cr->posted == cr->arrived + 1;
	if (large)
		cr->large_posted = cr->posted;
}

void zsm_net_credit_on_arrival(struct zsm_net_credit *cr)
{
	cr->arrived++;
	cr->lone = 0;
}

int zsm_net_credit_want_grant(const struct zsm_net_credit *cr)
{
	uint64_t given = cr->granted - cr->early; /* receives told of */
	/* Small receives only: the sender still has the allowance past
	 * given, so the arrivals may come within one of its end. */
	uint64_t wait = cr->large_posted > given || !cr->early ? 0
							    : cr->early - 1;

	/*
	 * Something new to give, and the arrivals have come within slack of
	 * the point where the sender may need it.  A sender that is stuck
	 * has sent every message up to one it may not send: a large one
	 * past the receives it knows of (its receive is large, so wait is
	 * 0 and the arrivals reach given), or one past the allowance (the
	 * arrivals reach given + early).  Either way the next post or
	 * arrival grants.  Granting on every post would double the
	 * messages of a busy comm.
	 */
	/* A message beyond what the sender was told of arrived: its send
	 * is held until the sender hears its receive is posted. */
	if (cr->posted > given && cr->arrived > given)
		return 1;
	/* The one receive posted, the sender not told of it: a ping-pong,
	 * whose message would be held at its sender until told.  Told as
	 * the receive is posted, the GRANT is on its way before the message
	 * is (a GRANT per message either way; a comm that posts ahead is
	 * not lone and keeps the batching). */
	if (cr->lone && cr->posted > given)
		return 1;
	return cr->posted > given && cr->arrived + cr->slack >= given + wait;
}

int zsm_net_credit_unasked(const struct zsm_net_credit *cr, uint64_t seq)
{
	return seq + cr->early > cr->limit;
}

int zsm_net_credit_on_close(struct zsm_net_credit *cr, uint64_t taken)
{
	cr->closed = 1;
	/* Taken means its receive was posted: as a GRANT says. */
	if (taken + cr->early > cr->limit)
		cr->limit = taken + cr->early;
	return cr->sent > taken;
}

int zsm_net_credit_unmatched(const struct zsm_net_credit *cr, unsigned n)
{
	return cr->closed && cr->posted + n > cr->final;
}

int zsm_net_credit_want_late_grant(struct zsm_net_credit *cr)
{
	int quiet = cr->arrived == cr->tick_arrived;

	cr->tick_arrived = cr->arrived;
	return quiet && cr->posted > cr->granted - cr->early;
}

uint64_t zsm_net_credit_grant(struct zsm_net_credit *cr)
{
	/* Half of what is posted ahead now may arrive before the next. */
	cr->slack = (cr->posted - cr->arrived) / 2;
	cr->granted = cr->posted + cr->early;
	return cr->granted;
}
