/* SPDX-License-Identifier: MIT */
/*
 * Owns the core's side of the handshake: the receive comm a connection
 * request makes, the CONNECTED state each side publishes, and the calls
 * into the transport choice above (struct zsm_comm_hooks), registered at
 * init, which fill and read the offers.  net runs the handshake and
 * calls these; the core knows no transport by name.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "common/log.h"
#include "core/comm.h"

/* Written at init, before the engine's thread starts (pthread_create
 * orders it before every read there), and never while comms live. */
static const struct zsm_comm_hooks *zsm_comm_hooks;

void zsm_comm_hooks_set(const struct zsm_comm_hooks *hooks)
{
	zsm_comm_hooks = hooks;
}

void zsm_comm_offer(struct zsm_comm *c, struct zsm_offer *out)
{
	memset(out, 0, sizeof(*out));
	if (zsm_comm_hooks)
		zsm_comm_hooks->offer(c, out);
}

int zsm_comm_incoming(struct zsm_comm *lc, const struct zsm_comm_ops *ops,
		      void *tp, uint32_t id, const struct zsm_peer *peer,
		      const struct zsm_offer *offer, struct zsm_comm **out,
		      struct zsm_offer *answer)
{
	struct zsm_comm *rc = zsm_comm_new(ZSM_COMM_RECV);

	memset(answer, 0, sizeof(*answer));
	if (!rc)
		return -ENOMEM;
	zsm_comm_bind(rc, ops, tp, id, lc->dev);
	rc->setup_ops = ops;
	rc->setup = tp;
	rc->peer = *peer;
	if (zsm_comm_hooks)
		zsm_comm_hooks->incoming(rc, offer, answer);
	*out = rc;
	return 0;
}

static void zsm_comm_say_connected(const struct zsm_comm *c)
{
	ZSM_INFO("%s: %s: %s comm %u connected to comm %u of pid %u, %s%s%s",
		 c->ops->name, c->dev, zsm_comm_kind(c), c->id,
		 c->peer.comm_id, c->peer.pid,
		 c->peer.same_host ? "same host" : "other host",
		 c->ops->connected_note ? ", " : "",
		 c->ops->connected_note ? c->ops->connected_note : "");
}

void zsm_comm_answered(struct zsm_comm *c, const struct zsm_peer *peer,
		       const struct zsm_offer *answer, struct zsm_offer *done)
{
	memset(done, 0, sizeof(*done));
	c->peer = *peer;
	if (zsm_comm_hooks)
		zsm_comm_hooks->answered(c, answer, done);
	zsm_comm_say_connected(c);
	/* release: pairs with the acquire in zsm_connect; the peer, the
	 * transport and its channel first. */
	atomic_store_explicit(&c->state, ZSM_COMM_CONNECTED,
			      memory_order_release);
}

void zsm_comm_confirmed(struct zsm_comm *c, const struct zsm_offer *done)
{
	if (zsm_comm_hooks)
		zsm_comm_hooks->confirmed(c, done);
	zsm_comm_say_connected(c);
	/* release: pairs with the acquire in zsm_accept. */
	atomic_store_explicit(&c->state, ZSM_COMM_CONNECTED,
			      memory_order_release);
}

void zsm_comm_handshake_gone(struct zsm_comm *c)
{
	if (zsm_comm_hooks)
		zsm_comm_hooks->gone(c);
}
