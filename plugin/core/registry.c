/* SPDX-License-Identifier: MIT */
/*
 * Owns the core's transport registry: which transports the plugin runs,
 * and the choice, made once per comm during the handshake, of the one
 * that moves its data.  The handshake always runs over net; its messages
 * carry one opaque offer, framed here as {transport, length, bytes}, so
 * net knows no other transport and ce knows nothing of net.  This is the
 * one file outside plugin/ce that names ce.
 */
#include <errno.h>
#include <string.h>

#include "ce/ce.h"
#include "common/cuda.h"
#include "common/log.h"
#include "common/param.h"
#include "core/comm.h"
#include "core/registry.h"
#include "net/net_api.h"

/* The transports an offer can name. */
enum { ZSM_OFFER_CE = 1 };

/* Frame payload of transport t into out; 0, or -ENOSPC. */
static int zsm_registry_frame(struct zsm_offer *out, uint8_t t,
			      const void *payload, size_t len)
{
	if (len + 2 > sizeof(out->bytes))
		return -ENOSPC;
	out->bytes[0] = t;
	out->bytes[1] = (uint8_t)len;
	memcpy(out->bytes + 2, payload, len);
	out->len = (uint32_t)(len + 2);
	return 0;
}

/* The payload of transport t in o (NULL when o names none or another). */
static const uint8_t *zsm_registry_unframe(const struct zsm_offer *o,
					   uint8_t t, size_t *len)
{
	if (o->len < 2 || o->len > sizeof(o->bytes) || o->bytes[0] != t ||
	    (size_t)o->bytes[1] + 2 > o->len)
		return NULL;
	*len = o->bytes[1];
	return o->bytes + 2;
}

/* Same-host comms take GPU buffers through ce (ZSM_CE_GPU). */
static int zsm_registry_ce_gpu(void)
{
	return zsm_cuda_ready() && zsm_param_int(ZSM_P_CE_GPU);
}

int zsm_registry_start(void)
{
	zsm_proxy_add_transport(&zsm_net_progress_ops);
	if (zsm_ce_enabled())
		zsm_proxy_add_transport(&zsm_ce_progress_ops);
	zsm_ce_init_checks(zsm_registry_ce_gpu() || zsm_net_gdr_any());
	return 0;
}

void zsm_registry_props(int dev, struct zsm_props *props)
{
	(void)dev;
	/*
	 * Without FI_HMEM, same-host comms still take device memory (ce)
	 * but comms to other hosts cannot, and NCCL would hand GPU buffers
	 * to both wherever its topology allows GPUDirect: opt-in.
	 */
	if (zsm_registry_ce_gpu())
		props->ptr_support |= ZSM_MEM_CUDA;
}

void zsm_registry_stop(void)
{
	/* The comms' GPU mappings are closing on ce's own thread, which
	 * must be gone before NCCL unloads us. */
	zsm_ce_fini(5000);
}

void zsm_comm_offer(struct zsm_comm *c, struct zsm_offer *out)
{
	uint8_t p[ZSM_OFFER_BYTES];
	size_t len;

	memset(out, 0, sizeof(*out));
	if (!c->peer.same_host || !zsm_ce_enabled())
		return;
	len = zsm_ce_offer(p, sizeof(p) - 2);
	if (len)
		zsm_registry_frame(out, ZSM_OFFER_CE, p, len);
}

/* Say once per process why a same-host peer stays on net. */
static void zsm_registry_no_ce(uint32_t pid, const char *why)
{
	static int told;

	if (!told++)
		ZSM_INFO("ce: pid %u is on this host, but %s: its comms (and "
			 "any like it) use the network",
			 pid, why);
}

int zsm_comm_incoming(struct zsm_comm *lc, const struct zsm_comm_ops *ops,
		      void *tp, uint32_t id, const struct zsm_peer *peer,
		      const struct zsm_offer *offer, struct zsm_comm **out,
		      struct zsm_offer *answer)
{
	struct zsm_comm *rc = zsm_comm_new(ZSM_COMM_RECV);
	const uint8_t *p;
	uint8_t a[ZSM_OFFER_BYTES];
	char why[256];
	size_t len, alen;

	memset(answer, 0, sizeof(*answer));
	if (!rc)
		return -ENOMEM;
	zsm_comm_bind(rc, ops, tp, id, lc->dev);
	rc->setup_ops = ops;
	rc->setup = tp;
	rc->peer = *peer;
	/* A connector on this host that can be read gets a window: it takes
	 * it from our pid, the one its handle names. */
	p = zsm_registry_unframe(offer, ZSM_OFFER_CE, &len);
	if (p && peer->same_host && zsm_ce_enabled()) {
		if (zsm_ce_answer(p, len, peer->pid, id, &rc->offer_tp, a,
				  sizeof(a) - 2, &alen, why, sizeof(why)))
			zsm_registry_no_ce(peer->pid, why);
		else
			zsm_registry_frame(answer, ZSM_OFFER_CE, a, alen);
	}
	*out = rc;
	return 0;
}

static void zsm_registry_say_connected(const struct zsm_comm *c)
{
	ZSM_INFO("%s: %s: %s comm %u connected to comm %u of pid %u, %s%s",
		 c->ops->name, c->dev, zsm_comm_kind(c), c->id,
		 c->peer.comm_id, c->peer.pid,
		 c->peer.same_host ? "same host" : "other host",
		 c->ops == &zsm_ce_comm_ops ? ", data by cross-memory attach"
					    : "");
}

/* c's data moves through ce's channel ch from now on. */
static void zsm_registry_take_ce(struct zsm_comm *c, void *ch)
{
	c->setup_ops = c->ops;
	c->setup = c->tp;
	c->ops = &zsm_ce_comm_ops;
	c->tp = ch;
	zsm_ce_start(ch, c);
}

void zsm_comm_answered(struct zsm_comm *c, const struct zsm_peer *peer,
		       const struct zsm_offer *answer, struct zsm_offer *done)
{
	const uint8_t *p;
	char why[256];
	size_t len;
	void *ch;

	memset(done, 0, sizeof(*done));
	c->peer = *peer;
	p = zsm_registry_unframe(answer, ZSM_OFFER_CE, &len);
	if (p && peer->same_host && zsm_ce_enabled()) {
		if (zsm_ce_take(p, len, peer->pid, &ch, why, sizeof(why))) {
			zsm_registry_no_ce(peer->pid, why);
		} else {
			uint8_t on = 1;

			zsm_registry_take_ce(c, ch);
			zsm_registry_frame(done, ZSM_OFFER_CE, &on, 1);
		}
	}
	zsm_registry_say_connected(c);
	/* release: pairs with the acquire in zsm_connect; the peer, the
	 * transport and its channel first. */
	atomic_store_explicit(&c->state, ZSM_COMM_CONNECTED,
			      memory_order_release);
}

void zsm_comm_confirmed(struct zsm_comm *c, const struct zsm_offer *done)
{
	size_t len;
	const uint8_t *p = zsm_registry_unframe(done, ZSM_OFFER_CE, &len);

	if (c->offer_tp && p && len == 1 && p[0] == 1)
		zsm_registry_take_ce(c, c->offer_tp);
	else if (c->offer_tp)
		zsm_ce_drop(c->offer_tp);
	c->offer_tp = NULL;
	zsm_registry_say_connected(c);
	/* release: pairs with the acquire in zsm_accept. */
	atomic_store_explicit(&c->state, ZSM_COMM_CONNECTED,
			      memory_order_release);
}

void zsm_registry_comm_gone(struct zsm_comm *c)
{
	/* A window offered to a connector that never confirmed. */
	if (c->offer_tp)
		zsm_ce_drop(c->offer_tp);
	c->offer_tp = NULL;
}
