/* SPDX-License-Identifier: MIT */
/* What plugin/rma's files share. */
#ifndef ZSM_RMA_INT_H
#define ZSM_RMA_INT_H

#include <stdint.h>

#include "entry/entry.h"
#include "group/group.h"
#include "rma/rma.h"

struct zsm_rma_ctx {
	struct zsm_group *coll;
	uint64_t coll_handle; /* to find it again, if still there */
	int ncontexts;
	uint64_t handle;
};

#endif
