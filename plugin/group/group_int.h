/* SPDX-License-Identifier: MIT */
/* What plugin/group's files share. */
#ifndef ZSM_GROUP_GROUP_INT_H
#define ZSM_GROUP_GROUP_INT_H

#include <stdint.h>

#include "group/group.h"

/* Wait for req with the group's deadline: its result. */
int zsm_group_wait(void *req, uint64_t deadline_ns);
/* Every rank's len bytes (len <= ZSM_GROUP_XCHG_BYTES) into
 * all[rank * len]; collective, in the same order on every rank. */
int zsm_group_alltoall(struct zsm_group *c, const void *mine, size_t len,
		       void *all);
uint64_t zsm_group_deadline_ns(void);
/* The scratch bytes the agreed exchanges of nranks take. */
size_t zsm_group_xchg_bytes(int nranks);
/* Start c's agreed exchanges in buf (registered scratch), once every link
 * is up: the first one's receives are posted. */
int zsm_group_xchg_init(struct zsm_group *c, unsigned char *buf);
/* After c's comms are closed. */
void zsm_group_xchg_fini(struct zsm_group *c);
/* Every rank's len bytes (len <= ZSM_GROUP_XCHG_BODY) into
 * all[rank * len], collective, with our status (0 or -errno): 0 on every
 * rank, or an error on every rank, whichever gives up (group_xchg.c). */
int zsm_group_agree(struct zsm_group *c, const void *mine, size_t len,
		    int status, void *all);

#endif
