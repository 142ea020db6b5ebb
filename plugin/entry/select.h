/* SPDX-License-Identifier: MIT */
/* The transport choice (select.c; its handshake part reaches the core
 * as hooks, core/comm.h). */
#ifndef ZSM_ENTRY_SELECT_H
#define ZSM_ENTRY_SELECT_H

#include "core/transport.h"
#include "entry/entry.h"

/* Bring up what the transports need beyond net (after zsm_net_init):
 * the core's handshake hooks, their progress hooks, GPU support; and
 * take it down at teardown. */
int zsm_entry_select_start(void);
void zsm_entry_select_stop(void);
/* What the transports add to device dev's properties. */
void zsm_entry_select_props(int dev, struct zsm_props *props);

#endif
