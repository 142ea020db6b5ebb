/* SPDX-License-Identifier: MIT */
/* The version-neutral RMA client (rma_client.h). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rma_client.h"

#define RMA_CLIENT_FILL(t, T)                                                  \
	do {                                                                   \
		(t)->name = (T)->name;                                         \
		(t)->init = (T)->init;                                         \
		(t)->devices = (T)->devices;                                   \
		(t)->props = (T)->getProperties;                               \
		(t)->listen = (T)->listen;                                     \
		(t)->connect = (T)->connect;                                   \
		(t)->dereg = (T)->deregMrSym;                                  \
		(t)->destroy = (T)->destroyContext;                            \
		(t)->close_coll = (T)->closeColl;                              \
		(t)->close_listen = (T)->closeListen;                          \
		(t)->iput = (T)->iput;                                         \
		(t)->iget = (T)->iget;                                         \
		(t)->iflush = (T)->iflush;                                     \
		(t)->test = (T)->test;                                         \
		(t)->last_error = (T)->queryLastError;                         \
		(t)->finalize = (T)->finalize;                                 \
	} while (0)

void rma_client_close(struct rma_client *t)
{
	/* As the net client: valgrind names a leak's frames only while the
	 * library is still mapped. */
	if (t->dl && !getenv("ZSM_CLIENT_KEEP_LOADED"))
		dlclose(t->dl);
	t->dl = NULL;
}

int rma_client_open(struct rma_client *t, const char *path, int abi,
		    char *why, size_t len)
{
	static const char *const v13_syms[] = { "ncclRmaPlugin_v13",
						 "ncclGinPlugin_v13" };

	memset(t, 0, sizeof(*t));
	t->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!t->dl) {
		snprintf(why, len, "dlopen: %s", dlerror());
		t->dl = NULL;
		return -1;
	}
	if (abi != 13) {
		t->v14 = dlsym(t->dl, "ncclRmaPlugin_v14");
		if (t->v14) {
			t->abi = 14;
			t->sym = "ncclRmaPlugin_v14";
			RMA_CLIENT_FILL(t, t->v14);
			t->progress = t->v14->rmaProgress;
		}
	}
	for (size_t i = 0; !t->abi && abi != 14 && i < 2; i++) {
		t->v13 = dlsym(t->dl, v13_syms[i]);
		if (t->v13) {
			t->abi = 13;
			t->sym = v13_syms[i];
			RMA_CLIENT_FILL(t, t->v13);
			t->progress = t->v13->ginProgress;
		}
	}
	if (!t->abi) {
		snprintf(why, len, "%s exports no %s", path,
			 abi == 14	  ? "ncclRmaPlugin_v14"
			 : abi == 13 ? "ncclRmaPlugin_v13 or "
					    "ncclGinPlugin_v13"
					  : "ncclRmaPlugin_v14, ncclRmaPlugin_v13 "
					    "or ncclGinPlugin_v13");
		rma_client_close(t);
		return -1;
	}
	const int have[] = {
		t->init != NULL,
		t->devices != NULL,
		t->props != NULL,
		t->listen != NULL,
		t->connect != NULL,
		t->v14 ? t->v14->createContext != NULL
		       : t->v13->createContext != NULL,
		t->v14 ? t->v14->regMrSym != NULL : t->v13->regMrSym != NULL,
		t->v14 ? t->v14->iputSignal != NULL
		       : t->v13->iputSignal != NULL,
		t->dereg != NULL,
		t->destroy != NULL,
		t->close_coll != NULL,
		t->close_listen != NULL,
		t->iput != NULL,
		t->test != NULL,
		t->finalize != NULL,
	};
	static const char *const names[] = {
		"init", "devices", "getProperties", "listen", "connect",
		"createContext", "regMrSym", "iputSignal", "deregMrSym",
		"destroyContext", "closeColl", "closeListen", "iput", "test",
		"finalize",
	};
	for (size_t i = 0; i < sizeof(have) / sizeof(have[0]); i++) {
		if (!have[i]) {
			snprintf(why, len, "%s.%s is NULL: NCCL calls it "
					   "unconditionally (3.2)",
				 t->sym, names[i]);
			rma_client_close(t);
			return -1;
		}
	}
	return 0;
}

ncclResult_t rma_client_create(const struct rma_client *t, void *coll,
			       int ncontexts, void **ctx,
			       ncclNetDeviceHandle_t **dev)
{
	if (t->v14) {
		ncclRmaConfig_v14_t cfg = { .nContexts = ncontexts,
					    .trafficClass = -1,
					    .rankStride = 1 };

		return t->v14->createContext(coll, &cfg, ctx);
	}
	ncclGinConfig_v13_t cfg = { .nContexts = ncontexts,
				    .trafficClass = -1 };
	ncclNetDeviceHandle_t *mine = NULL;

	return t->v13->createContext(coll, &cfg, ctx, dev ? dev : &mine);
}

ncclResult_t rma_client_reg(const struct rma_client *t, void *coll,
			    void *data, size_t size, int type, uint64_t flags,
			    void **mh)
{
	void *gin = NULL;

	if (t->v14)
		return t->v14->regMrSym(coll, data, size, type, flags, mh);
	return t->v13->regMrSym(coll, data, size, type, flags, mh, &gin);
}

ncclResult_t rma_client_put_signal(const struct rma_client *t, void *ctx,
				   int context, uint64_t src_off, void *src_mh,
				   size_t size, uint64_t dst_off, void *dst_mh,
				   uint32_t rank, uint64_t sig_off,
				   void *sig_mh, uint64_t value, uint32_t op,
				   void **request)
{
	if (t->v14)
		return t->v14->iputSignal(ctx, context, src_off, src_mh, size,
					  dst_off, dst_mh, rank, sig_off,
					  sig_mh, value, op, true, request);
	return t->v13->iputSignal(ctx, context, src_off, src_mh, size,
				  dst_off, dst_mh, rank, sig_off, sig_mh,
				  value, op, request);
}
