/* SPDX-License-Identifier: MIT */
/*
 * Owns RMA contexts and their data operations.  A context is an ordering
 * domain; every context of a collective comm shares its links, so each
 * is ordered at least as strictly as asked.  A put or get goes on the
 * send comm to its target rank; its signal is the core's strong signal
 * (entry/entry.h), so once the target sees it, this put and every earlier
 * put and signal on that link are visible.
 */
#include <errno.h>
#include <stdlib.h>

#include "common/clock.h"
#include "common/handle.h"
#include "common/log.h"
#include "rma/rma_int.h"

/* How long a put waits for a request slot before it is an error: NCCL
 * keeps at most 32 x maxRecvs in flight per peer and context, which one
 * link holds, so a wait here only ever covers the proxy's queue. */
#define ZSM_RMA_SLOT_WAIT_NS (5ULL * 1000000000ULL)

int zsm_rma_ctx_create(void *coll, int ncontexts, void **out)
{
	struct zsm_group *c;
	struct zsm_rma_ctx *x;
	int ret;

	if (!out)
		return zsm_group_bad_arg("createContext", "ctx is NULL");
	*out = NULL;
	ret = zsm_group_lookup("createContext", coll, ZSM_H_RMA_COLL,
			     (void **)&c);
	if (ret)
		return ret;
	if (ncontexts < 1) {
		ZSM_WARN("rma: createContext with %d contexts", ncontexts);
		return -EINVAL;
	}
	/* NCCL keeps up to 32 x maxRecvs requests in flight per peer and
	 * context, and frees them only by test(): every context gets its
	 * own set of requests on each link. */
	/* A count past what is left is the caller's to fix, as one below
	 * 1 is. */
	if (ncontexts > ZSM_MAX_REQUEST_SETS - c->contexts) {
		ZSM_WARN("rma: createContext: %d contexts on top of %d: at "
			 "most %d share a collective comm's links",
			 ncontexts, c->contexts, ZSM_MAX_REQUEST_SETS);
		return -EINVAL;
	}
	for (int p = 0; p < c->nranks; p++) {
		if (!c->send[p])
			continue;
		ret = zsm_comm_reserve(c->send[p], c->contexts + ncontexts);
		if (ret)
			return ret;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->coll = c;
	x->coll_handle = c->handle;
	x->ncontexts = ncontexts;
	if (zsm_handle_open(ZSM_H_RMA_CTX, x, &x->handle)) {
		free(x);
		return -ENOMEM;
	}
	/* Counted once it exists: a failed create leaves room for a
	 * later one. */
	c->contexts += ncontexts;
	*out = (void *)(uintptr_t)x->handle;
	return 0;
}

int zsm_rma_ctx_destroy(void *ctx)
{
	struct zsm_rma_ctx *x;
	struct zsm_group *c;
	int ret = zsm_group_release("destroyContext", ctx, ZSM_H_RMA_CTX,
				  (void **)&x);

	if (ret)
		return ret;
	/* Its collective comm may be closed already. */
	if (!zsm_handle_get(x->coll_handle, ZSM_H_RMA_COLL, (void **)&c))
		c->contexts -= x->ncontexts;
	free(x);
	return 0;
}

/* ctx's collective comm, for an operation on context and rank. */
static int zsm_rma_target(const char *call, void *ctx, int context,
			  uint32_t rank, struct zsm_group **out)
{
	struct zsm_rma_ctx *x;
	int ret = zsm_group_lookup(call, ctx, ZSM_H_RMA_CTX, (void **)&x);

	if (ret)
		return ret;
	if (context < 0 || context >= x->ncontexts ||
	    rank >= (uint32_t)x->coll->nranks ||
	    rank == (uint32_t)x->coll->rank) {
		ZSM_WARN("rma: %s: context %d of %d, rank %u of %d (this is "
			 "rank %d)",
			 call, context, x->ncontexts, rank,
			 x->coll->nranks, x->coll->rank);
		return -EINVAL;
	}
	*out = x->coll;
	return 0;
}

/* A sym handle of coll, or NULL for NULL. */
static int zsm_rma_sym_of(const char *call, struct zsm_group *c, void *h,
			  struct zsm_group_sym **out)
{
	int ret;

	*out = NULL;
	if (!h)
		return 0;
	ret = zsm_group_lookup(call, h, ZSM_H_RMA_SYM, (void **)out);
	if (!ret && (*out)->coll != c) {
		ZSM_WARN("rma: %s: the registration belongs to another "
			 "collective comm",
			 call);
		ret = -EINVAL;
	}
	return ret;
}

/* A request NCCL may count on: the core hands back none only while its
 * queue is full, which the proxy drains.  1: call again. */
static int zsm_rma_retry(int ret, void **request, uint64_t *deadline)
{
	if (ret || *request)
		return 0;
	if (!*deadline)
		*deadline = zsm_now_ns() + ZSM_RMA_SLOT_WAIT_NS;
	if (zsm_now_ns() > *deadline)
		return 0;
	zsm_group_nap();
	return 1;
}

/* What a call that retried returns: ret, or -EAGAIN (said) when it never
 * got a request. */
static int zsm_rma_retried(const char *call, int ret, void *request,
			   uint32_t rank)
{
	if (ret || request)
		return ret;
	ZSM_WARN("rma: %s: no request free on the link to rank %u for %llu "
		 "ms",
		 call, rank, ZSM_RMA_SLOT_WAIT_NS / 1000000ULL);
	return -EAGAIN;
}

int zsm_rma_iput(void *ctx, int context, uint64_t src_off, void *src_sym,
		 size_t size, uint64_t dst_off, void *dst_sym, uint32_t rank,
		 const struct zsm_rma_signal *sig, void **request)
{
	struct zsm_group *c;
	struct zsm_group_sym *src, *dst, *sg = NULL;
	uint64_t deadline = 0;
	int ret;

	if (!request)
		return zsm_group_bad_arg("iput", "request is NULL");
	*request = NULL;
	ret = zsm_rma_target("iput", ctx, context, rank, &c);
	if (!ret)
		ret = zsm_rma_sym_of("iput", c, src_sym, &src);
	if (!ret)
		ret = zsm_rma_sym_of("iput", c, dst_sym, &dst);
	if (!ret && sig)
		ret = zsm_rma_sym_of("iputSignal", c, sig->sym, &sg);
	if (ret)
		return ret;
	if (size && (!src || !dst || src_off > src->size ||
		     size > src->size - src_off)) {
		ZSM_WARN("rma: iput of %zu bytes at %llu of a %zu-byte "
			 "source%s",
			 size, (unsigned long long)src_off,
			 src ? src->size : 0,
			 src && dst ? "" : " (no registration given)");
		return -EINVAL;
	}
	if (sig && (!sg || (sig->op != ZSM_RMA_SIGNAL_INC &&
			    sig->op != ZSM_RMA_SIGNAL_ADD))) {
		ZSM_WARN("rma: iputSignal: signal op %u on %s", sig->op,
			 sg ? "a registration" : "no registration");
		return -EINVAL;
	}
	do {
		ret = zsm_iput(c->send[rank], size ? src->base + src_off : NULL,
			       size, size ? zsm_group_sym_mh(src, (int)rank) : NULL,
			       size ? zsm_group_sym_win(dst, (int)rank) : NULL,
			       dst_off,
			       sig ? zsm_group_sym_win(sg, (int)rank) : NULL,
			       sig ? sig->off : 0,
			       !sig ? 0
			       : sig->op == ZSM_RMA_SIGNAL_INC ? 1
							       : sig->value,
			       request);
	} while (zsm_rma_retry(ret, request, &deadline));
	return zsm_rma_retried("iput", ret, *request, rank);
}

int zsm_rma_iget(void *ctx, int context, uint64_t remote_off,
		 void *remote_sym, size_t size, uint64_t local_off,
		 void *local_sym, uint32_t rank, void **request)
{
	struct zsm_group *c;
	struct zsm_group_sym *rem, *loc;
	uint64_t deadline = 0;
	int ret;

	if (!request)
		return zsm_group_bad_arg("iget", "request is NULL");
	*request = NULL;
	ret = zsm_rma_target("iget", ctx, context, rank, &c);
	if (!ret)
		ret = zsm_rma_sym_of("iget", c, remote_sym, &rem);
	if (!ret)
		ret = zsm_rma_sym_of("iget", c, local_sym, &loc);
	if (ret)
		return ret;
	if (!rem || !loc || local_off > loc->size ||
	    size > loc->size - local_off) {
		ZSM_WARN("rma: iget of %zu bytes at %llu of a %zu-byte "
			 "destination%s",
			 size, (unsigned long long)local_off,
			 loc ? loc->size : 0,
			 rem && loc ? "" : " (no registration given)");
		return -EINVAL;
	}
	do {
		ret = zsm_iget(c->send[rank], loc->base + local_off, size,
			       zsm_group_sym_mh(loc, (int)rank),
			       zsm_group_sym_win(rem, (int)rank), remote_off,
			       request);
	} while (zsm_rma_retry(ret, request, &deadline));
	return zsm_rma_retried("iget", ret, *request, rank);
}

int zsm_rma_iflush(void *ctx, int context, void *sym, uint32_t rank,
		   void **request)
{
	struct zsm_group *c;
	int ret;

	(void)sym;
	if (!request)
		return zsm_group_bad_arg("iflush", "request is NULL");
	*request = NULL;
	ret = zsm_rma_target("iflush", ctx, context, rank, &c);
	/* A get's bytes are in place when it completes, in GPU windows too
	 * (copied up first): nothing is left to flush. */
	return ret;
}

int zsm_rma_test(void *coll, void *request, int *done)
{
	struct zsm_group *c;
	int ret = zsm_test(request, done, NULL);

	/* A put the provider failed (its peer reset the link) may leave
	 * the link looking alive until the peer check says otherwise:
	 * remember it for queryLastError. */
	if (ret < 0 && ret != -EINVAL &&
	    !zsm_handle_get((uint64_t)(uintptr_t)coll, ZSM_H_RMA_COLL,
			    (void **)&c))
		c->failed = 1;
	return ret;
}

int zsm_rma_last_error(void *ctx, int *failed)
{
	struct zsm_rma_ctx *x;
	int ret = zsm_group_lookup("queryLastError", ctx, ZSM_H_RMA_CTX,
				   (void **)&x);

	if (!failed)
		return zsm_group_bad_arg("queryLastError", "failed is NULL");
	*failed = 0;
	if (ret)
		return ret;
	return zsm_group_failed((void *)(uintptr_t)x->coll->handle, failed);
}

int zsm_rma_reg_sym(void *coll, void *data, size_t size, int type,
		    uint64_t flags, void **sym)
{
	/* Every signal word is applied once, in order, and never reset by
	 * zsm: FORCE_SO and NEVER_RESET ask nothing more of it. */
	(void)flags;
	return zsm_group_reg_sym(coll, data, size, type, sym);
}
