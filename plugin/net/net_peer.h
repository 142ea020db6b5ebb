/* SPDX-License-Identifier: MIT */
/* Liveness per peer process of an endpoint (net_peer.c). */
#ifndef ZSM_NET_PEER_H
#define ZSM_NET_PEER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include "common/cuda_win.h"
#include "common/idmap.h"
#include "core/transport.h"
#include "net/net_credit.h"
#include "net/net_ep.h"
#include "net/net_fi_lib.h"
#include "net/net_hmem.h"
#include "net/net_rma_plan.h"
#include "net/net_txpool.h"
#include "net/net_wire.h"
#include "proxy/proxy.h"

/* net_peer.c: liveness, per peer process (address) of an endpoint. */
/* name: the peer's address as the provider gave it (knocked at on tcp),
 * or NULL. */
int zsm_net_peer_get(struct zsm_net_ep *ep, fi_addr_t addr, int same_host,
		     uint32_t pid, const void *name, struct zsm_net_peer **out);
void zsm_net_peer_put(struct zsm_net_peer *p);
/* The peer spoke (a message arrived) or took a send of ours. */
void zsm_net_peer_heard(struct zsm_net_peer *p, uint64_t now);
/* Of want early messages, those a new receive comm of the peer may be
 * allowed within the peer's cap (zsm_net_dev's early_peer), and their
 * return when it goes. */
uint32_t zsm_net_peer_early_take(struct zsm_net_peer *p, uint32_t want,
				 uint32_t cap);
void zsm_net_peer_early_give(struct zsm_net_peer *p, uint32_t n);
/* A PONG is owed to, or came from, the peer: net_ctrl.c tells. */
void zsm_net_peer_check(struct zsm_net_ep *ep, uint64_t now);

#endif
