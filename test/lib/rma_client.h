/* SPDX-License-Identifier: MIT */
/*
 * A version-neutral client over any plugin's NCCL 2.30 RMA table
 * (ncclRmaPlugin_v14, or v13's layout), as test/lib/zsm_client.h is for
 * ncclNet: the slots both versions share as one set of pointers, and
 * calls for the few whose arguments differ.
 */
#ifndef ZSM_TEST_RMA_CLIENT_H
#define ZSM_TEST_RMA_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "abi/nccl_rma.h"

struct rma_client {
	int abi;	 /* 14 or 13 */
	const char *sym; /* the symbol the table came from */
	const ncclRma_v14_t *v14;
	const ncclRma_v13_t *v13;
	void *dl;
	const char *name;
	ncclResult_t (*init)(void **, uint64_t, ncclDebugLogger_t);
	ncclResult_t (*devices)(int *);
	ncclResult_t (*props)(int, ncclNetProperties_v12_t *);
	ncclResult_t (*listen)(void *, int, void *, void **);
	ncclResult_t (*connect)(void *, void **, int, int, void *, void **);
	ncclResult_t (*dereg)(void *, void *);
	ncclResult_t (*destroy)(void *);
	ncclResult_t (*close_coll)(void *);
	ncclResult_t (*close_listen)(void *);
	ncclResult_t (*iput)(void *, int, uint64_t, void *, size_t, uint64_t,
			     void *, uint32_t, void **);
	ncclResult_t (*iget)(void *, int, uint64_t, void *, size_t, uint64_t,
			     void *, uint32_t, void **);
	ncclResult_t (*iflush)(void *, int, void *, uint32_t, void **);
	ncclResult_t (*test)(void *, void *, int *);
	ncclResult_t (*progress)(void *);
	ncclResult_t (*last_error)(void *, bool *);
	ncclResult_t (*finalize)(void *);
};

/*
 * dlopen(path, RTLD_NOW | RTLD_LOCAL), as NCCL does, and find the table:
 * abi 0 takes NCCL's order (ncclRmaPlugin_v14, then _v13, then
 * ncclGinPlugin_v13, which has v13's layout), 13 or 14 that version
 * only.  Every slot NCCL calls unconditionally must be there.  0, or -1
 * with why filled (the library is closed again).
 */
int rma_client_open(struct rma_client *t, const char *path, int abi,
		    char *why, size_t len);
/* dlclose, skipped with ZSM_CLIENT_KEEP_LOADED (see zsm_client.h). */
void rma_client_close(struct rma_client *t);

/* createContext: v14's config, or v13's with *dev written (dev may be
 * NULL). */
ncclResult_t rma_client_create(const struct rma_client *t, void *coll,
			       int ncontexts, void **ctx,
			       ncclNetDeviceHandle_t **dev);
/* regMrSym; v13's GIN handle is dropped. */
ncclResult_t rma_client_reg(const struct rma_client *t, void *coll,
			    void *data, size_t size, int type, uint64_t flags,
			    void **mh);
/* iputSignal, always a strong signal (v13's are). */
ncclResult_t rma_client_put_signal(const struct rma_client *t, void *ctx,
				   int context, uint64_t src_off, void *src_mh,
				   size_t size, uint64_t dst_off, void *dst_mh,
				   uint32_t rank, uint64_t sig_off,
				   void *sig_mh, uint64_t value, uint32_t op,
				   void **request);

#endif
