/* SPDX-License-Identifier: MIT */
/* Owns a comm's data flow control (net_credit.h says why and how). */
#include "net/net_credit.h"

void zsm_net_credit_recv_init(struct zsm_net_credit *cr, uint32_t early)
{
	*cr = (struct zsm_net_credit){.early = early, .granted = early};
}

void zsm_net_credit_send_init(struct zsm_net_credit *cr, uint64_t limit)
{
	*cr = (struct zsm_net_credit){.limit = limit};
}

int zsm_net_credit_may_send(const struct zsm_net_credit *cr)
{
	return cr->sent < cr->limit;
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

void zsm_net_credit_on_post(struct zsm_net_credit *cr, unsigned n)
{
	cr->posted += n;
}

void zsm_net_credit_on_arrival(struct zsm_net_credit *cr)
{
	cr->arrived++;
}

int zsm_net_credit_want_grant(const struct zsm_net_credit *cr)
{
	/*
	 * Something new to give, and the sender may be running short: what
	 * it may still send beyond the messages that arrived is at most
	 * half the allowance.  Granting on every post would double the
	 * messages of a busy comm; waiting until the sender is out would
	 * stop it for a round trip each time.  A sender that is out has
	 * sent granted messages, all of which arrive: either the receives
	 * posted cover half the allowance past the old limit, and the
	 * arrivals then cross the line, or they do not, and the receiver
	 * takes early messages until it posts more.
	 */
	return cr->posted + cr->early > cr->granted &&
	       cr->arrived + cr->early / 2 >= cr->granted;
}

uint64_t zsm_net_credit_grant(struct zsm_net_credit *cr)
{
	cr->granted = cr->posted + cr->early;
	return cr->granted;
}
