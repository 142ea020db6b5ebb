/* SPDX-License-Identifier: MIT */
/*
 * Owns the transport choice: which transports the plugin runs, and the
 * choice, made once per comm during the handshake, of the one that
 * moves its data.  The handshake always runs over net; its messages
 * carry one opaque offer, framed here as {transport, length, bytes} and
 * reached through the core's hooks (core/handshake.c), so net knows no
 * other transport and ce knows nothing of net.  This is the one file
 * that names both transports, and the one outside plugin/ce naming ce.
 */
#include <errno.h>
#include <string.h>

#include "ce/ce.h"
#include "common/cuda.h"
#include "common/log.h"
#include "common/param.h"
#include "core/comm.h"
#include "entry/select.h"
#include "net/net_api.h"

/* The transports an offer can name. */
enum { ZSM_OFFER_CE = 1 };

/* Frame payload of transport t into out; 0, or -ENOSPC. */
static int zsm_entry_select_frame(struct zsm_offer *out, uint8_t t,
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
static const uint8_t *zsm_entry_select_unframe(const struct zsm_offer *o,
					   uint8_t t, size_t *len)
{
	if (o->len < 2 || o->len > sizeof(o->bytes) || o->bytes[0] != t ||
	    (size_t)o->bytes[1] + 2 > o->len)
		return NULL;
	*len = o->bytes[1];
	return o->bytes + 2;
}

/* Same-host comms take GPU buffers through ce (ZSM_CE_GPU). */
static int zsm_entry_select_ce_gpu(void)
{
	return zsm_cuda_ready() && zsm_param_int(ZSM_P_CE_GPU);
}

static void zsm_entry_select_offer(struct zsm_comm *c,
				   struct zsm_offer *out)
{
	uint8_t p[ZSM_OFFER_BYTES];
	size_t len;

	if (!c->peer.same_host || !zsm_ce_enabled())
		return;
	len = zsm_ce_offer(p, sizeof(p) - 2);
	if (len)
		zsm_entry_select_frame(out, ZSM_OFFER_CE, p, len);
}

/* Say once per process why a same-host peer stays on net. */
static void zsm_entry_select_no_ce(uint32_t pid, const char *why)
{
	static int told;

	if (!told++)
		ZSM_INFO("ce: pid %u is on this host, but %s: its comms (and "
			 "any like it) use the network",
			 pid, why);
}

static void zsm_entry_select_incoming(struct zsm_comm *rc,
				      const struct zsm_offer *offer,
				      struct zsm_offer *answer)
{
	const struct zsm_peer *peer = &rc->peer;
	const uint8_t *p;
	uint8_t a[ZSM_OFFER_BYTES];
	char why[256];
	size_t len, alen;

	/* A connector on this host that can be read gets a window: it takes
	 * it from our pid, the one its handle names. */
	p = zsm_entry_select_unframe(offer, ZSM_OFFER_CE, &len);
	if (p && peer->same_host && zsm_ce_enabled()) {
		if (zsm_ce_answer(p, len, peer->pid, rc->id, &rc->offer_tp, a,
				  sizeof(a) - 2, &alen, why, sizeof(why)))
			zsm_entry_select_no_ce(peer->pid, why);
		else
			zsm_entry_select_frame(answer, ZSM_OFFER_CE, a, alen);
	}
}

/* c's data moves through ce's channel ch from now on. */
static void zsm_entry_select_take_ce(struct zsm_comm *c, void *ch)
{
	c->setup_ops = c->ops;
	c->setup = c->tp;
	c->ops = &zsm_ce_comm_ops;
	c->tp = ch;
	zsm_ce_start(ch, c);
}

static void zsm_entry_select_answered(struct zsm_comm *c,
				      const struct zsm_offer *answer,
				      struct zsm_offer *done)
{
	const uint8_t *p;
	char why[256];
	size_t len;
	void *ch;

	p = zsm_entry_select_unframe(answer, ZSM_OFFER_CE, &len);
	if (!p || !c->peer.same_host || !zsm_ce_enabled())
		return;
	if (zsm_ce_take(p, len, c->peer.pid, &ch, why, sizeof(why))) {
		zsm_entry_select_no_ce(c->peer.pid, why);
	} else {
		uint8_t on = 1;

		zsm_entry_select_take_ce(c, ch);
		zsm_entry_select_frame(done, ZSM_OFFER_CE, &on, 1);
	}
}

static void zsm_entry_select_confirmed(struct zsm_comm *c,
				       const struct zsm_offer *done)
{
	size_t len;
	const uint8_t *p = zsm_entry_select_unframe(done, ZSM_OFFER_CE, &len);

	if (c->offer_tp && p && len == 1 && p[0] == 1)
		zsm_entry_select_take_ce(c, c->offer_tp);
	else if (c->offer_tp)
		zsm_ce_drop(c->offer_tp);
	c->offer_tp = NULL;
}

static void zsm_entry_select_gone(struct zsm_comm *c)
{
	/* A window offered to a connector that never confirmed. */
	if (c->offer_tp)
		zsm_ce_drop(c->offer_tp);
	c->offer_tp = NULL;
}

static const struct zsm_comm_hooks zsm_entry_select_hooks = {
	.offer = zsm_entry_select_offer,
	.incoming = zsm_entry_select_incoming,
	.answered = zsm_entry_select_answered,
	.confirmed = zsm_entry_select_confirmed,
	.gone = zsm_entry_select_gone,
};

int zsm_entry_select_start(void)
{
	zsm_comm_hooks_set(&zsm_entry_select_hooks);
	zsm_proxy_add_transport(&zsm_net_progress_ops, zsm_net_progress_self());
	if (zsm_ce_enabled())
		zsm_proxy_add_transport(&zsm_ce_progress_ops,
					zsm_ce_progress_self());
	zsm_ce_init_checks(zsm_entry_select_ce_gpu() || zsm_net_gdr_any());
	return 0;
}

void zsm_entry_select_props(int dev, struct zsm_props *props)
{
	(void)dev;
	/*
	 * Without FI_HMEM, same-host comms still take device memory (ce)
	 * but comms to other hosts cannot, and NCCL would hand GPU buffers
	 * to both wherever its topology allows GPUDirect: opt-in.
	 */
	if (zsm_entry_select_ce_gpu())
		props->ptr_support |= ZSM_MEM_CUDA;
}

void zsm_entry_select_stop(void)
{
	/* The comms' GPU mappings are closing on ce's own thread, which
	 * must be gone before NCCL unloads us. */
	zsm_ce_fini(5000);
}
