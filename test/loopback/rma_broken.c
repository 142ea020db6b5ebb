/* SPDX-License-Identifier: MIT */
/*
 * A deliberately broken RMA plugin for zsm-conformance --rma: it loads
 * the real plugin named by RMA_BROKEN_REAL and exports ncclRmaPlugin_v14
 * and _v13, which call the real plugin's tables of the same version,
 * with one fault chosen by RMA_BROKEN_FAULT:
 *
 *   signal-before-data  iputSignal with data sends its signal alone
 *                       first, waits for it (and, every 4th time,
 *                       100 us more), then puts the data
 *   null-request        every 16th iput or iputSignal does nothing and
 *                       returns ncclSuccess with a NULL request
 *   dropped-put         every 3rd put with data moves none yet
 *                       completes: iput returns a request of the
 *                       wrapper's that test finds done, iputSignal
 *                       sends its signal alone
 *   wrong-offset        every put with data lands 8 bytes past its
 *                       destination offset
 *   none (or unset)     no fault: every call passes through
 *
 * Each fault must make its check fail (test/loopback/meson.build).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "abi/nccl_rma.h"

#define RB_EXPORT __attribute__((visibility("default")))
#define RB_CTXS 64
/* signal-before-data: how long it waits for the lone signal. */
#define RB_SIGNAL_WAIT_NS (10ULL * 1000000000ULL)

enum rb_fault {
	RB_NONE,
	RB_SIGNAL_BEFORE_DATA,
	RB_NULL_REQUEST,
	RB_DROPPED_PUT,
	RB_WRONG_OFFSET,
};

static const char *const rb_names[] = { "none", "signal-before-data",
					"null-request", "dropped-put",
					"wrong-offset" };

static pthread_once_t rb_once = PTHREAD_ONCE_INIT;
static const ncclRma_v14_t *rb_v14;
static const ncclRma_v13_t *rb_v13;
static enum rb_fault rb_fault;
static int rb_loaded;
/* Puts so far, for the faults that strike every Nth; any thread. */
static atomic_uint rb_puts, rb_data_puts, rb_fake_next;
/* dropped-put: requests of the wrapper's own, done from the start. */
#define RB_FAKES 4096
static char rb_fake[RB_FAKES];
/* Each context's collComm, which test needs (signal-before-data). */
static pthread_mutex_t rb_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	void *ctx, *coll;
} rb_ctxs[RB_CTXS];

static void rb_load_once(void)
{
	const char *real = getenv("RMA_BROKEN_REAL");
	const char *fault = getenv("RMA_BROKEN_FAULT");
	void *dl;

	if (fault) {
		size_t i;

		for (i = 0; i < sizeof(rb_names) / sizeof(rb_names[0]); i++)
			if (!strcmp(fault, rb_names[i]))
				break;
		if (i == sizeof(rb_names) / sizeof(rb_names[0])) {
			fprintf(stderr, "rma-broken: unknown RMA_BROKEN_FAULT "
					"'%s'\n",
				fault);
			return;
		}
		rb_fault = (enum rb_fault)i;
	}
	dl = real ? dlopen(real, RTLD_NOW | RTLD_LOCAL) : NULL;
	if (!dl) {
		fprintf(stderr, "rma-broken: cannot load RMA_BROKEN_REAL=%s: "
				"%s\n",
			real ? real : "(unset)", real ? dlerror() : "");
		return;
	}
	rb_v14 = dlsym(dl, "ncclRmaPlugin_v14");
	rb_v13 = dlsym(dl, "ncclRmaPlugin_v13");
	rb_loaded = 1;
}

static int rb_ready(int v14)
{
	pthread_once(&rb_once, rb_load_once);
	return rb_loaded && (v14 ? rb_v14 != NULL : rb_v13 != NULL);
}

static void rb_ctx_note(void *ctx, void *coll)
{
	pthread_mutex_lock(&rb_lock);
	for (int i = 0; i < RB_CTXS; i++)
		if (!rb_ctxs[i].ctx) {
			rb_ctxs[i].ctx = ctx;
			rb_ctxs[i].coll = coll;
			break;
		}
	pthread_mutex_unlock(&rb_lock);
}

static void *rb_ctx_coll(void *ctx)
{
	void *coll = NULL;

	pthread_mutex_lock(&rb_lock);
	for (int i = 0; i < RB_CTXS; i++)
		if (rb_ctxs[i].ctx == ctx)
			coll = rb_ctxs[i].coll;
	pthread_mutex_unlock(&rb_lock);
	return coll;
}

static void rb_ctx_forget(void *ctx)
{
	pthread_mutex_lock(&rb_lock);
	for (int i = 0; i < RB_CTXS; i++)
		if (rb_ctxs[i].ctx == ctx)
			rb_ctxs[i].ctx = NULL;
	pthread_mutex_unlock(&rb_lock);
}

static uint64_t rb_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int rb_is_fake(const void *req)
{
	return (const char *)req >= rb_fake &&
	       (const char *)req < rb_fake + RB_FAKES;
}

/* How a put to the real table is bent: 1 when it must not reach it at
 * all (a NULL request instead), 2 when only its data must not (for an
 * iput, a fake request, done). */
static int rb_bend(size_t *size, uint64_t *dst_off)
{
	/* relaxed: counters; which put a fault strikes needs no order. */
	if (rb_fault == RB_NULL_REQUEST &&
	    atomic_fetch_add_explicit(&rb_puts, 1, memory_order_relaxed) % 16 ==
		    15)
		return 1;
	if (rb_fault == RB_DROPPED_PUT && *size &&
	    atomic_fetch_add_explicit(&rb_data_puts, 1, memory_order_relaxed) %
			    3 ==
		    2) {
		*size = 0;
		return 2;
	}
	if (rb_fault == RB_WRONG_OFFSET && *size)
		*dst_off += 8;
	return 0;
}

/* The slots both versions share, forwarded to the real table V. */
#define RB_COMMON(V)                                                           \
	static ncclResult_t rb##V##_init(void **ctx, uint64_t id,              \
					 ncclDebugLogger_t log)                \
	{                                                                      \
		if (!rb_ready(V == 14))                                        \
			return ncclSystemError;                                \
		return rb_v##V->init(ctx, id, log);                            \
	}                                                                      \
	static ncclResult_t rb##V##_devices(int *n)                            \
	{                                                                      \
		return rb_ready(V == 14) ? rb_v##V->devices(n)                 \
					 : ncclSystemError;                    \
	}                                                                      \
	static ncclResult_t rb##V##_props(int dev, ncclNetProperties_v12_t *p) \
	{                                                                      \
		return rb_ready(V == 14) ? rb_v##V->getProperties(dev, p)      \
					 : ncclSystemError;                    \
	}                                                                      \
	static ncclResult_t rb##V##_listen(void *ctx, int dev, void *h,        \
					   void **l)                           \
	{                                                                      \
		return rb_v##V->listen(ctx, dev, h, l);                        \
	}                                                                      \
	static ncclResult_t rb##V##_connect(void *ctx, void **h, int n, int r, \
					    void *l, void **c)                 \
	{                                                                      \
		return rb_v##V->connect(ctx, h, n, r, l, c);                   \
	}                                                                      \
	static ncclResult_t rb##V##_dereg(void *c, void *mh)                   \
	{                                                                      \
		return rb_v##V->deregMrSym(c, mh);                             \
	}                                                                      \
	static ncclResult_t rb##V##_destroy(void *ctx)                         \
	{                                                                      \
		rb_ctx_forget(ctx);                                            \
		return rb_v##V->destroyContext(ctx);                           \
	}                                                                      \
	static ncclResult_t rb##V##_close_coll(void *c)                        \
	{                                                                      \
		return rb_v##V->closeColl(c);                                  \
	}                                                                      \
	static ncclResult_t rb##V##_close_listen(void *l)                      \
	{                                                                      \
		return rb_v##V->closeListen(l);                                \
	}                                                                      \
	static ncclResult_t rb##V##_iput(void *ctx, int context, uint64_t so,  \
					 void *smh, size_t size, uint64_t doff, \
					 void *dmh, uint32_t rank, void **req) \
	{                                                                      \
		int b_ = rb_bend(&size, &doff);                                \
                                                                               \
		*req = NULL;                                                   \
		if (b_ == 2)                                                   \
			/* relaxed: a counter; which slot is all it gives. */  \
			*req = rb_fake + atomic_fetch_add_explicit(            \
						 &rb_fake_next, 1,             \
						 memory_order_relaxed) %       \
						 RB_FAKES;                     \
		if (b_)                                                        \
			return ncclSuccess;                                    \
		return rb_v##V->iput(ctx, context, so, smh, size, doff, dmh,   \
				     rank, req);                               \
	}                                                                      \
	static ncclResult_t rb##V##_iget(void *ctx, int context, uint64_t ro,  \
					 void *rmh, size_t size, uint64_t lo,  \
					 void *lmh, uint32_t rank, void **req) \
	{                                                                      \
		if (!rb_v##V->iget)                                            \
			return ncclInvalidUsage;                               \
		return rb_v##V->iget(ctx, context, ro, rmh, size, lo, lmh,     \
				     rank, req);                               \
	}                                                                      \
	static ncclResult_t rb##V##_iflush(void *ctx, int context, void *mh,   \
					   uint32_t rank, void **req)          \
	{                                                                      \
		*req = NULL;                                                   \
		return rb_v##V->iflush ? rb_v##V->iflush(ctx, context, mh,     \
							 rank, req)            \
				       : ncclSuccess;                          \
	}                                                                      \
	static ncclResult_t rb##V##_test(void *c, void *req, int *done)        \
	{                                                                      \
		if (rb_is_fake(req)) {                                         \
			*done = 1;                                             \
			return ncclSuccess;                                    \
		}                                                              \
		return rb_v##V->test(c, req, done);                            \
	}                                                                      \
	static ncclResult_t rb##V##_last_error(void *ctx, bool *e)             \
	{                                                                      \
		if (!rb_v##V->queryLastError)                                  \
			return ncclInvalidUsage;                               \
		return rb_v##V->queryLastError(ctx, e);                        \
	}                                                                      \
	static ncclResult_t rb##V##_finalize(void *ctx)                        \
	{                                                                      \
		return rb_ready(V == 14) ? rb_v##V->finalize(ctx)              \
					 : ncclSuccess;                        \
	}

RB_COMMON(14)
RB_COMMON(13)

/* signal-before-data: the gap between a signal and its data, widened
 * now and then so that a reader polling the signal finds it surely. */
static void rb_gap(void)
{
	/* relaxed: a counter. */
	if (atomic_fetch_add_explicit(&rb_puts, 1, memory_order_relaxed) % 4 ==
	    0) {
		struct timespec ts = { 0, 100000 };

		nanosleep(&ts, NULL);
	}
}

/* Wait for a lone signal's request: 0, or its error. */
static ncclResult_t rb_wait(ncclResult_t (*test)(void *, void *, int *),
			    void *ctx, void *req)
{
	uint64_t deadline = rb_now_ns() + RB_SIGNAL_WAIT_NS;
	void *coll = rb_ctx_coll(ctx);
	int done = 0;
	ncclResult_t r;

	while ((r = test(coll, req, &done)) == ncclSuccess && !done) {
		struct timespec ts = { 0, 20000 };

		if (rb_now_ns() > deadline) {
			fprintf(stderr, "rma-broken: a lone signal not done "
					"in 10 s\n");
			return ncclInternalError;
		}
		nanosleep(&ts, NULL);
	}
	return r;
}

static ncclResult_t rb14_create(void *coll, ncclRmaConfig_v14_t *cfg,
				void **ctx)
{
	ncclResult_t r = rb_v14->createContext(coll, cfg, ctx);

	if (r == ncclSuccess)
		rb_ctx_note(*ctx, coll);
	return r;
}

static ncclResult_t rb14_reg(void *coll, void *data, size_t size, int type,
			     uint64_t flags, void **mh)
{
	return rb_v14->regMrSym(coll, data, size, type, flags, mh);
}

static ncclResult_t rb14_reg_dmabuf(void *coll, void *data, size_t size,
				    int type, uint64_t off, int fd,
				    uint64_t flags, void **mh)
{
	if (!rb_v14->regMrSymDmaBuf)
		return ncclInvalidUsage;
	return rb_v14->regMrSymDmaBuf(coll, data, size, type, off, fd, flags,
				      mh);
}

static ncclResult_t rb14_put_signal(void *ctx, int context, uint64_t so,
				    void *smh, size_t size, uint64_t doff,
				    void *dmh, uint32_t rank, uint64_t sigoff,
				    void *sigmh, uint64_t value, uint32_t op,
				    bool strong, void **req)
{
	ncclResult_t r;
	void *lone = NULL;

	*req = NULL;
	if (rb_fault == RB_SIGNAL_BEFORE_DATA && size) {
		r = rb_v14->iputSignal(ctx, context, 0, NULL, 0, 0, NULL, rank,
				       sigoff, sigmh, value, op, strong,
				       &lone);
		if (r == ncclSuccess && lone)
			r = rb_wait(rb_v14->test, ctx, lone);
		if (r != ncclSuccess)
			return r;
		rb_gap();
		return rb_v14->iput(ctx, context, so, smh, size, doff, dmh,
				    rank, req);
	}
	if (rb_bend(&size, &doff) == 1)
		return ncclSuccess;
	return rb_v14->iputSignal(ctx, context, so, size ? smh : NULL, size,
				  doff, size ? dmh : NULL, rank, sigoff, sigmh,
				  value, op, strong, req);
}

static ncclResult_t rb14_progress(void *ctx)
{
	return rb_v14->rmaProgress ? rb_v14->rmaProgress(ctx) : ncclSuccess;
}

static ncclResult_t rb13_create(void *coll, ncclGinConfig_v13_t *cfg,
				void **ctx, ncclNetDeviceHandle_t **dev)
{
	ncclResult_t r = rb_v13->createContext(coll, cfg, ctx, dev);

	if (r == ncclSuccess)
		rb_ctx_note(*ctx, coll);
	return r;
}

static ncclResult_t rb13_reg(void *coll, void *data, size_t size, int type,
			     uint64_t flags, void **mh, void **gin)
{
	return rb_v13->regMrSym(coll, data, size, type, flags, mh, gin);
}

static ncclResult_t rb13_reg_dmabuf(void *coll, void *data, size_t size,
				    int type, uint64_t off, int fd,
				    uint64_t flags, void **mh, void **gin)
{
	if (!rb_v13->regMrSymDmaBuf)
		return ncclInvalidUsage;
	return rb_v13->regMrSymDmaBuf(coll, data, size, type, off, fd, flags,
				      mh, gin);
}

static ncclResult_t rb13_put_signal(void *ctx, int context, uint64_t so,
				    void *smh, size_t size, uint64_t doff,
				    void *dmh, uint32_t rank, uint64_t sigoff,
				    void *sigmh, uint64_t value, uint32_t op,
				    void **req)
{
	ncclResult_t r;
	void *lone = NULL;

	*req = NULL;
	if (rb_fault == RB_SIGNAL_BEFORE_DATA && size) {
		r = rb_v13->iputSignal(ctx, context, 0, NULL, 0, 0, NULL, rank,
				       sigoff, sigmh, value, op, &lone);
		if (r == ncclSuccess && lone)
			r = rb_wait(rb_v13->test, ctx, lone);
		if (r != ncclSuccess)
			return r;
		rb_gap();
		return rb_v13->iput(ctx, context, so, smh, size, doff, dmh,
				    rank, req);
	}
	if (rb_bend(&size, &doff) == 1)
		return ncclSuccess;
	return rb_v13->iputSignal(ctx, context, so, size ? smh : NULL, size,
				  doff, size ? dmh : NULL, rank, sigoff, sigmh,
				  value, op, req);
}

static ncclResult_t rb13_progress(void *ctx)
{
	return rb_v13->ginProgress ? rb_v13->ginProgress(ctx) : ncclSuccess;
}

#define RB_SLOTS(V)                                                            \
	.name = "rma-broken", .init = rb##V##_init,                            \
	.devices = rb##V##_devices, .getProperties = rb##V##_props,            \
	.listen = rb##V##_listen, .connect = rb##V##_connect,                  \
	.createContext = rb##V##_create, .regMrSym = rb##V##_reg,              \
	.regMrSymDmaBuf = rb##V##_reg_dmabuf, .deregMrSym = rb##V##_dereg,     \
	.destroyContext = rb##V##_destroy, .closeColl = rb##V##_close_coll,    \
	.closeListen = rb##V##_close_listen, .iput = rb##V##_iput,             \
	.iputSignal = rb##V##_put_signal, .iget = rb##V##_iget,                \
	.iflush = rb##V##_iflush, .test = rb##V##_test,                        \
	.queryLastError = rb##V##_last_error, .finalize = rb##V##_finalize

RB_EXPORT const ncclRma_v14_t ncclRmaPlugin_v14 = {
	RB_SLOTS(14),
	.rmaProgress = rb14_progress,
};

RB_EXPORT const ncclRma_v13_t ncclRmaPlugin_v13 = {
	RB_SLOTS(13),
	.ginProgress = rb13_progress,
};
