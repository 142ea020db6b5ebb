/* SPDX-License-Identifier: MIT */
/* The core's transport registry (registry.c; the handshake's part of it
 * is in core/transport.h, where net calls it). */
#ifndef ZSM_CORE_REGISTRY_H
#define ZSM_CORE_REGISTRY_H

#include "core/api.h"
#include "core/transport.h"

/* Bring up what the transports need beyond net (after zsm_net_init):
 * their progress hooks, GPU support; and take it down at teardown. */
int zsm_registry_start(void);
void zsm_registry_stop(void);
/* What the transports add to device dev's properties. */
void zsm_registry_props(int dev, struct zsm_props *props);
/* c is being freed: what was offered to it and never taken goes. */
void zsm_registry_comm_gone(struct zsm_comm *c);

#endif
