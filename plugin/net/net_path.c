/* SPDX-License-Identifier: MIT */
/*
 * Owns a comm's paths: how many a device's comms use, the links on the
 * other paths and their handshake (net_path.h), what each carried, and
 * the choice of path per data message: a count per tag, kept in a small
 * open-addressed table that doubles when half full (tags are never
 * removed: a comm uses a handful for its whole life).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/param.h"
#include "net/net.h"
#include "net/net_path.h"

#define ZSM_NET_PATH_SEQ_MIN 8

void zsm_net_path_seq_fini(struct zsm_net_path_seq *s)
{
	free(s->slots);
	s->slots = NULL;
	s->cap = 0;
	s->n = 0;
}

static uint32_t zsm_net_path_hash(int tag)
{
	/* Fibonacci hashing: NCCL's tags are small and consecutive. */
	return (uint32_t)(((uint64_t)(uint32_t)tag * 0x9e3779b97f4a7c15ULL) >>
			  32);
}

static struct zsm_net_path_slot *
zsm_net_path_slot(struct zsm_net_path_slot *slots, uint32_t cap, int tag)
{
	uint32_t i = zsm_net_path_hash(tag) & (cap - 1);

	while (slots[i].used && slots[i].tag != tag)
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

static int zsm_net_path_grow(struct zsm_net_path_seq *s)
{
	uint32_t cap = s->cap ? s->cap * 2 : ZSM_NET_PATH_SEQ_MIN;
	struct zsm_net_path_slot *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->cap; i++)
		if (s->slots[i].used)
			*zsm_net_path_slot(slots, cap, s->slots[i].tag) =
				s->slots[i];
	free(s->slots);
	s->slots = slots;
	s->cap = cap;
	return 0;
}

int zsm_net_path_next(struct zsm_net_path_seq *s, int tag, int npaths,
		      int *path)
{
	struct zsm_net_path_slot *slot;

	*path = 0;
	if (npaths <= 1)
		return 0;
	if (s->cap) {
		slot = zsm_net_path_slot(s->slots, s->cap, tag);
		if (slot->used) {
			*path = (int)(slot->count++ % (uint64_t)npaths);
			return 0;
		}
	}
	if ((s->n + 1) * 2 > s->cap && zsm_net_path_grow(s))
		return -ENOMEM;
	slot = zsm_net_path_slot(s->slots, s->cap, tag);
	slot->used = 1;
	slot->tag = tag;
	slot->count = 1;
	s->n++;
	return 0;
}

/* auto: a path per this many CPUs, on providers whose bytes they move. */
#define ZSM_NET_PATHS_CPUS_EACH 4
#define ZSM_NET_PATHS_AUTO_MAX 4
/* Pump threads for the paths only where the process may run on more
 * CPUs than this: on fewer, spinning pumps took turns with the engine and
 * the application, and 2 paths streamed 1 MiB at a sixth of one path's
 * speed on 2 cores (docs/results.md), where without them each pass of
 * the engine drives every path, as fast as one path. */
#define ZSM_NET_PATHS_PUMP_MIN_CPUS 5

/* A device over several NICs: as many paths on each (rail p mod n), so
 * that every NIC carries an even share. */
static void zsm_net_path_per_rail(const struct zsm_net_dev *dev, int *want,
				  char *why, size_t len)
{
	int n = dev->rails.n, per;
	size_t at = strlen(why);

	if (n < 2)
		return;
	per = (*want + n - 1) / n;
	if (per * n > ZSM_NET_PATHS_MAX)
		per = ZSM_NET_PATHS_MAX / n;
	*want = per * n;
	if (at < len)
		snprintf(why + at, len - at, "; so %d: %d on each of %d NICs",
			 *want, per, n);
}

void zsm_net_dev_plan_paths(struct zsm_net_dev *dev)
{
	int64_t mode = zsm_param_int(ZSM_P_NET_PATHS); /* auto|1..8 */
	const char *prov = dev->info->fabric_attr->prov_name;
	int host = strncmp(prov, "tcp", 3) == 0;
	int cpus = zsm_proxy_cpus(), want;
	char *why = dev->paths_why;
	size_t len = sizeof(dev->paths_why);

	if (mode) {
		want = (int)mode;
		snprintf(why, len, "%d (%s)", want,
			 zsm_param_from_env(ZSM_P_NET_PATHS)
				 ? "ZSM_NET_PATHS"
				 : "the default; auto would pick from the CPUs");
	} else {
		want = host ? cpus / ZSM_NET_PATHS_CPUS_EACH : 1;
		if (want > ZSM_NET_PATHS_AUTO_MAX)
			want = ZSM_NET_PATHS_AUTO_MAX;
		if (want < 1)
			want = 1;
		if (host)
			snprintf(why, len, "%d: %s on %d CPUs (auto)", want,
				 prov, cpus);
		else
			snprintf(why, len, "1: %s moves bytes without the "
					   "host's CPUs (auto)",
				 prov);
	}
	/* A buffer's descriptor belongs to one domain, and a path is a
	 * domain of its own: what needs descriptors stays on one. */
	if (want > 1 &&
	    ((dev->info->domain_attr->mr_mode & FI_MR_LOCAL) ||
	     (dev->rma_info && (dev->rma_info->domain_attr->mr_mode &
				FI_MR_LOCAL)) ||
	     zsm_param_int(ZSM_P_MR_LOCAL) || dev->hmem)) {
		want = 1;
		snprintf(why, len, "1: %s wants registered buffers (or takes "
				   "GPU memory), which one path serves",
			 prov);
	}
	zsm_net_path_per_rail(dev, &want, why, len);
	dev->paths = want;
	dev->path_pumps = cpus >= ZSM_NET_PATHS_PUMP_MIN_CPUS;
	if (want > 1) {
		size_t at = strlen(why);

		if (at < len)
			snprintf(why + at, len - at, "; %s",
				 dev->path_pumps ? "a pump thread each"
						 : "driven by the engine alone "
						   "(4 CPUs or fewer)");
	}
	ZSM_INFO("net: %s: paths per comm: %s", dev->name, why);
}

void zsm_net_path_retire_links(struct zsm_net_comm *c)
{
	struct zsm_net_comm *top = zsm_net_path_top(c);

	for (int j = 0; j < top->paths.n; j++) {
		struct zsm_net_comm *l = top->paths.link[j];

		if (l && l->ep != c->ep)
			zsm_net_ep_retire(l->ep);
	}
}

/* The comm a link serves: itself, or a path's link's comm. */
struct zsm_net_comm *zsm_net_path_top(struct zsm_net_comm *c)
{
	return c->paths.parent ? c->paths.parent : c;
}

void zsm_net_path_accept(struct zsm_net_comm *rc, uint32_t asked)
{
	struct zsm_net_dev *dev = rc->ep->dev;
	int n = asked < (uint32_t)dev->paths ? (int)asked : dev->paths, j;

	rc->paths.n = 1;
	if (rc->ep->path != 0)
		return;
	for (j = 1; j < n; j++) {
		struct zsm_net_ep *ep;
		struct zsm_net_comm *l;

		if (zsm_net_ep_get_path(dev, j, 1, &ep))
			break;
		l = zsm_net_comm_new(ep, ZSM_COMM_RECV);
		if (!l)
			break;
		/* A sweep for strays that holds its tags stops now. */
		zsm_net_drain_comm_made(ep);
		l->hs = ZSM_COMM_CONNECTING;
		l->paths.parent = rc;
		l->paths.index = j;
		/* No early messages on a path: its sender learns its address
		 * and ours in one PATH each, and a GRANT needs both. */
		zsm_net_credit_recv_init(&l->credit, 0);
		rc->paths.link[j] = l;
	}
	/* Fewer where a path's endpoint did not open: the CONN_ACK says
	 * how many. */
	rc->paths.n = j;
}

void zsm_net_path_confirmed(struct zsm_net_comm *rc)
{
	if (rc->paths.n <= 1)
		return;
	/* The connector keeps the comm on net: name the paths (only now,
	 * so that one that took another transport hears of none). */
	if (zsm_net_comm_is_data(rc) && !rc->closing) {
		zsm_net_ctrl_want(rc, ZSM_CTRL_PATH);
		return;
	}
	/* Else the links go now: one left waiting would fail the comm its
	 * handshake served once its time ran out. */
	for (int j = 1; j < rc->paths.n; j++)
		if (rc->paths.link[j])
			zsm_net_comm_post_close(rc->paths.link[j]);
	rc->paths.n = 1;
}

int zsm_net_path_agreed(struct zsm_net_comm *sc, uint32_t n)
{
	if (n == 0 || n > (uint32_t)sc->ep->dev->paths)
		return -EPROTO;
	sc->paths.n = (int)n;
	return 0;
}

void zsm_net_path_build(const struct zsm_net_comm *comm,
			struct zsm_ctrl_msg *m)
{
	const struct zsm_net_comm *l = comm;

	if (comm->type == ZSM_COMM_RECV) {
		/* The comm names its next path's link, which the connector's
		 * link on that path will answer. */
		l = comm->paths.link[comm->paths.told + 1];
		m->src_id = l->local_id;
		m->data_key = l->data_key;
		m->credit = l->credit.granted;
	}
	m->reply_key = l->key;
	m->paths = (uint32_t)l->paths.index;
	m->addr_len = (uint32_t)l->ep->fi.addr_len;
	memcpy(m->addr, l->ep->fi.addr, l->ep->fi.addr_len);
}

void zsm_net_path_told(struct zsm_net_comm *comm)
{
	if (comm->type != ZSM_COMM_RECV)
		return;
	if (++comm->paths.told < comm->paths.n - 1)
		zsm_net_ctrl_want(comm, ZSM_CTRL_PATH);
}

/* A path's link may carry data now: what waits for it goes. */
static void zsm_net_path_ready(struct zsm_net_comm *l)
{
	struct zsm_net_comm *top = zsm_net_path_top(l);

	l->hs = ZSM_COMM_CONNECTED;
	zsm_net_peer_heard(l->remote.obj, l->ep->pass.begin_ns);
	if (top->owner)
		zsm_proxy_fifo_kick(&top->owner->fifo);
}

void zsm_net_path_on_named(struct zsm_net_comm *sc,
			   const struct zsm_ctrl_msg *m)
{
	struct zsm_net_ep *ep;
	struct zsm_net_comm *l;
	char why[160];
	uint32_t j = m->paths;

	if (sc->hs != ZSM_COMM_CONNECTED || sc->paths.parent || j == 0 ||
	    j >= (uint32_t)sc->paths.n || sc->paths.link[j] ||
	    m->data_key & ~ZSM_CQ_KEY_MASK) {
		zsm_net_ctrl_drop(sc->ep, ZSM_DROP_STATE, "a path out of turn");
		return;
	}
	if (zsm_net_ep_get_path(sc->ep->dev, (int)j, 0, &ep)) {
		zsm_net_comm_fail(sc, -EIO, "a path's endpoint did not open");
		return;
	}
	if (zsm_net_ep_addr_check(ep, m->addr, m->addr_len, why,
				  sizeof(why))) {
		zsm_net_comm_fail(sc, -EPROTO, why);
		return;
	}
	l = zsm_net_comm_new(ep, ZSM_COMM_SEND);
	if (!l) {
		zsm_net_comm_fail(sc, -ENOMEM, "out of memory for a path");
		return;
	}
	l->paths.parent = sc;
	l->paths.index = (int)j;
	l->remote.id = m->src_id;
	l->remote.key = m->reply_key;
	l->data_key = m->data_key;
	sc->paths.link[j] = l;
	zsm_net_credit_send_init(&l->credit, m->credit);
	zsm_net_comm_set_peer(l, m->pid, m->host_hash);
	if (zsm_net_comm_set_addr(l, m->addr)) {
		zsm_net_comm_fail(sc, -EIO, "a path's peer is unreachable");
		return;
	}
	zsm_net_ctrl_want(l, ZSM_CTRL_PATH);
	zsm_net_path_ready(l);
}

void zsm_net_path_on_joined(struct zsm_net_comm *l,
			    const struct zsm_ctrl_msg *m)
{
	char why[160];

	if (!l->paths.parent || m->paths != (uint32_t)l->paths.index ||
	    l->remote.id) {
		zsm_net_ctrl_drop(l->ep, ZSM_DROP_STATE, "a path out of turn");
		return;
	}
	if (zsm_net_ep_addr_check(l->ep, m->addr, m->addr_len, why,
				  sizeof(why))) {
		zsm_net_comm_fail(l, -EPROTO, why);
		return;
	}
	l->remote.id = m->src_id;
	l->remote.key = m->reply_key;
	zsm_net_comm_set_peer(l, m->pid, m->host_hash);
	if (zsm_net_comm_set_addr(l, m->addr)) {
		zsm_net_comm_fail(l, -EIO, "a path's peer is unreachable");
		return;
	}
	zsm_net_path_ready(l);
	zsm_net_comm_grant_check(l);
}

void zsm_net_path_report(const struct zsm_net_comm *comm)
{
	char line[ZSM_NET_PATHS_MAX * 40] = "";
	size_t at = 0;

	if (comm->paths.n <= 1 || comm->paths.parent)
		return;
	for (int j = 0; j < comm->paths.n && at < sizeof(line); j++) {
		const struct zsm_net_comm *l = comm->paths.link[j];
		int w = snprintf(line + at, sizeof(line) - at, "%s%llu/%llu",
				 j ? " " : "",
				 l ? (unsigned long long)l->paths.msgs : 0ULL,
				 l ? (unsigned long long)l->paths.bytes : 0ULL);

		if (w < 0)
			break;
		at += (size_t)w;
	}
	ZSM_INFO("net: %s: %s comm %u closes: messages/bytes per path: %s",
		 comm->ep->dev->name,
		 comm->type == ZSM_COMM_SEND ? "send" : "receive",
		 comm->local_id, line);
}
