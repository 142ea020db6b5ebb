/* SPDX-License-Identifier: MIT */
/*
 * Flow control of a comm's data messages over the network.  A message
 * that arrives before its receive is posted waits in the provider, which
 * holds a buffer for it (rxm: 16.5 KiB from a pool that grows and never
 * shrinks), so a sender running ahead of a slow receiver costs the
 * receiver memory without bound.  Here a sender may post a message only
 * once the receiver has posted its receive, except for an allowance of
 * small (eager) early messages (ZSM_EARLY_MSGS): the receiver tells the
 * sender how far it may go, in CONN_ACK and then in GRANT messages, so
 * that no more than that allowance of a comm's messages ever waits
 * unmatched.  A large message (rendezvous) always waits for its receive:
 * the provider cannot complete its send before then, and sends that
 * cannot complete must not fill the provider's queue while the receives
 * that would let them go wait behind it.
 *
 * Counts are absolute, from the comm's start (64 bits never wrap): a
 * GRANT carries the new limit itself (receives posted plus the
 * allowance), not an increment, so the sender takes the larger of what it
 * has and what came.  The receiver grants once the messages that arrived
 * reach half of the receives it had posted ahead at its last grant, so a
 * comm whose receives are posted well ahead hears a GRANT now and then,
 * not once per receive.  Only a receive that a large message may take
 * needs its GRANT at once (its sender waits for it); while every receive
 * the sender has not been told of is small, the allowance carries the
 * sender and the GRANT waits until the arrivals have used all but one of
 * it (each GRANT costs both ranks a control message).  A
 * large message into a small receive (an error the receiver reports) or
 * a peer whose eager size differs from ours would wait for a GRANT that
 * never comes: the endpoint's timed work grants what a quiet comm owes
 * (zsm_net_credit_want_late_grant).
 *
 * A send is reported done only once its receive is known to be posted
 * (its number within limit - early): an early one the provider finished
 * before that is held until a GRANT covers it.  Without this, an early
 * message to a receiver that closed before posting its receive was
 * reported done and dropped there (issue 32).  So a message that
 * arrives beyond what the sender was told (arrived > granted - early)
 * is granted at once: its sender holds that send.  And a receive posted
 * with no other outstanding (a ping-pong's) is granted as it is posted,
 * so that the GRANT is on its way before the message that needs it,
 * not after it (the same GRANT per message).  test_net_credit shows that no
 * schedule of sizes, posts and delays deadlocks.  Pure bookkeeping,
 * engine only; net_ep.c, net_req.c, net_comm.c and net_ctrl.c call it.
 */
#ifndef ZSM_NET_CREDIT_H
#define ZSM_NET_CREDIT_H

#include <stdint.h>

struct zsm_net_credit {
	/* Send comms: messages posted, how many may be, and the allowance
	 * of early ones in that (the CONN_ACK's first limit). */
	uint64_t sent;
	uint64_t limit;
	/* Receive comms: receives posted, those a message completed, the
	 * limit last given to the sender, and how far the arrivals may
	 * trail the receives posted then before the next GRANT. */
	uint64_t posted;
	uint64_t arrived;
	uint64_t granted;
	uint64_t slack;
	/* posted when the last receive a large message may take was posted,
	 * and arrived at the last timed look. */
	uint64_t large_posted;
	uint64_t tick_arrived;
	/* Both: the allowance.  Receive comms: the last post left this
	 * one receive alone outstanding (a ping-pong's). */
	uint32_t early;
	uint32_t lone;
	/* Both: the peer closed its comm (its CLOSE came); receive comms:
	 * the data messages its sender sent in all, which the CLOSE says. */
	uint32_t closed;
	uint64_t final;
	/* Receive comms: the messages that had arrived when this side
	 * closed, which its CLOSE tells the sender (receives cancelled by
	 * the close count as arrivals after it, but took nothing). */
	uint64_t taken;
};

/* A receive comm's start: its sender may send early messages. */
void zsm_net_credit_recv_init(struct zsm_net_credit *cr, uint32_t early);
/* A send comm's start, from the CONN_ACK's limit (the allowance). */
void zsm_net_credit_send_init(struct zsm_net_credit *cr, uint64_t limit);
/* 1 when a send comm may post one more message; large: one that the
 * provider sends by rendezvous, which needs its receive posted. */
int zsm_net_credit_may_send(const struct zsm_net_credit *cr, int large);
void zsm_net_credit_on_send(struct zsm_net_credit *cr);
/* A GRANT came; 1 when it let the sender go further. */
int zsm_net_credit_on_grant(struct zsm_net_credit *cr, uint64_t limit);
/* A receive comm posted n receives (large: one of them may take a message
 * the provider sends by rendezvous), or one completed with a message. */
void zsm_net_credit_on_post(struct zsm_net_credit *cr, unsigned n,
			    int large);
void zsm_net_credit_on_arrival(struct zsm_net_credit *cr);
/* 1 when the sender should be told a new limit now. */
int zsm_net_credit_want_grant(const struct zsm_net_credit *cr);
/* The endpoint's timed look: 1 when receives the sender was not told of
 * are posted and nothing arrived since the previous look. */
int zsm_net_credit_want_late_grant(struct zsm_net_credit *cr);
/* 1 while send number seq (from 1) went under the allowance and the
 * receiver has not said that its receive is posted. */
int zsm_net_credit_unasked(const struct zsm_net_credit *cr, uint64_t seq);
/* A send comm whose receiver closed having taken `taken` messages:
 * sends up to there arrived, and are done; 1 when one beyond was sent,
 * which nothing took. */
int zsm_net_credit_on_close(struct zsm_net_credit *cr, uint64_t taken);
/* 1 when the sender closed and n more receives would pass the messages
 * it sent: nothing would ever match them. */
int zsm_net_credit_unmatched(const struct zsm_net_credit *cr, unsigned n);
/* The limit to send in a GRANT (taken as given). */
uint64_t zsm_net_credit_grant(struct zsm_net_credit *cr);

#endif
