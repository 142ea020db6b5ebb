/* SPDX-License-Identifier: MIT */
/*
 * NCCL 2.30's RMA semantics (plugin/abi/rma_v14.c, rma_v13.c are the
 * shims) on a group (group/group.h: every rank joined to every other,
 * windows registered symmetrically): contexts, and puts, signals and
 * gets on the send comm to the target rank (entry/entry.h, zsm_iput and
 * zsm_iget).  For NCCL alone: zsm's own API stands on the group and the
 * entry points directly.  It knows neither NCCL's types nor a transport.
 * Every function returns 0 or -errno, and says what went wrong once,
 * where it found it.
 */
#ifndef ZSM_RMA_H
#define ZSM_RMA_H

#include <stddef.h>
#include <stdint.h>

/* signal ops, as NCCL numbers them (plugin/abi asserts it). */
#define ZSM_RMA_SIGNAL_INC 1
#define ZSM_RMA_SIGNAL_ADD 2
/* Registration flags NCCL passes (honoured: every signal word is
 * applied once, in order, and never reset by zsm). */
#define ZSM_RMA_MR_FORCE_SO (1ULL << 0)
#define ZSM_RMA_MR_NEVER_RESET (1ULL << 1)

/* regMrSym: the group's symmetric registration (group/group.h), with
 * NCCL's flags, which zsm honours as it is. */
int zsm_rma_reg_sym(void *coll, void *data, size_t size, int type,
		    uint64_t flags, void **sym);
int zsm_rma_ctx_create(void *coll, int ncontexts, void **ctx);
int zsm_rma_ctx_destroy(void *ctx);

struct zsm_rma_signal {
	void *sym;	/* NULL: none */
	uint64_t off;
	uint64_t value; /* ADD's; INC adds 1 */
	uint32_t op;	/* ZSM_RMA_SIGNAL_INC or _ADD */
};
/* A put of size bytes at src_off of src_sym to dst_off of rank's copy of
 * dst_sym, with a strong signal after it when sig is not NULL (size 0:
 * the signal alone, the syms may be NULL).  Always a request, or an
 * error. */
int zsm_rma_iput(void *ctx, int context, uint64_t src_off, void *src_sym,
		 size_t size, uint64_t dst_off, void *dst_sym, uint32_t rank,
		 const struct zsm_rma_signal *sig, void **request);
int zsm_rma_iget(void *ctx, int context, uint64_t remote_off,
		 void *remote_sym, size_t size, uint64_t local_off,
		 void *local_sym, uint32_t rank, void **request);
/* Gets into host memory are visible when they complete: NULL, done. */
int zsm_rma_iflush(void *ctx, int context, void *sym, uint32_t rank,
		   void **request);
int zsm_rma_test(void *coll, void *request, int *done);
/* Whether a peer link of ctx's comm failed: 0 with *failed 0 or 1. */
int zsm_rma_last_error(void *ctx, int *failed);

#endif
