/* SPDX-License-Identifier: MIT */
/*
 * One-sided operations among the ranks of a job, as NCCL 2.30's RMA
 * tables want them (plugin/abi/rma_v14.c, rma_v13.c are the shims): a
 * collective comm joins every rank to every other by the core's comms
 * (a send comm to each peer, a receive comm from each), symmetric
 * registrations exchange every rank's window descriptor over them, and
 * puts, signals and gets go on the send comm to the target rank
 * (entry/entry.h, zsm_iput and zsm_iget).  Above the entry points,
 * below the ABI edge: it knows neither NCCL's types nor a transport.  Every function
 * returns 0 or -errno, and says what went wrong once, where it found it.
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

/* Whether the RMA tables serve (ZSM_RMA): -ENOTSUP, said, when not. */
int zsm_rma_enabled(void);
int zsm_rma_listen(void *ctx, int dev, void *handle, void **listen);
int zsm_rma_close_listen(void *listen);
/*
 * Collective: every rank calls it with every rank's listen handle, in
 * rank order, and its own listen comm; returns once each peer is joined
 * both ways, or fails after ZSM_CONNECT_TIMEOUT_MS.
 */
int zsm_rma_connect(void *ctx, void **handles, int nranks, int rank,
		    void *listen, void **coll);
int zsm_rma_close_coll(void *coll);
/* Collective, in the same order on every rank. */
int zsm_rma_reg_sym(void *coll, void *data, size_t size, int type,
		    uint64_t flags, void **sym);
/* Joins regMrSym's exchange saying status (< 0) instead of a window: it
 * fails on every rank.  Returns status. */
int zsm_rma_reg_sym_refuse(void *coll, int status);
int zsm_rma_dereg_sym(void *coll, void *sym);
/* The size of rank's copy of sym (as it registered it), for checks made
 * before a put is queued: 0, or -EINVAL said. */
int zsm_rma_sym_size(void *sym, int rank, uint64_t *size);
/*
 * For zsm's own API, which moves data through the entry points' handle-
 * free calls and borrows only this layer's set-up (the join and the
 * symmetric registrations): coll's send comm to rank, and rank's
 * descriptor of sym with our registration of sym for that link.  They
 * stay valid until coll is closed and sym deregistered.
 */
int zsm_rma_coll_link(void *coll, int rank, void **send_comm);
struct zsm_rma_window;
int zsm_rma_sym_link(void *sym, int rank, const struct zsm_rma_window **win,
		     void **mh);
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
