/* SPDX-License-Identifier: MIT */
/*
 * The RMA tables' layouts (plugin/abi/nccl_rma.h) are pinned by static
 * asserts that fail this file's build; at run time, the v13 and v14
 * tables agree slot for slot where the reference says they do, and the
 * constants NCCL fixes have its values.
 */
#include <stdio.h>

#include "abi/nccl_rma.h"

#define SAME(f)                                                               \
	do {                                                                  \
		if (offsetof(ncclRma_v13_t, f) != offsetof(ncclRma_v14_t, f)) { \
			printf("slot %s differs\n", #f);                      \
			bad = 1;                                              \
		}                                                             \
	} while (0)

int main(void)
{
	int bad = 0;

	SAME(init);
	SAME(connect);
	SAME(regMrSym);
	SAME(iputSignal);
	SAME(test);
	SAME(finalize);
	if (NCCL_NET_DEVICE_GIN_PROXY != 2 || NCCL_NET_SIGNAL_OP_INC != 1 ||
	    NCCL_NET_SIGNAL_OP_ADD != 2 || NCCL_NET_MR_FLAG_FORCE_SO != 1 ||
	    NCCL_NET_MR_FLAG_SIGNAL_NEVER_RESET != 2) {
		printf("a constant is not NCCL's\n");
		bad = 1;
	}
	printf("rma tables: %zu bytes each, 21 slots%s\n",
	       sizeof(ncclRma_v14_t), bad ? ": FAIL" : "");
	return bad;
}
