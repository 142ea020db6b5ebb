/* SPDX-License-Identifier: MIT */
/* What plugin/rma's files share. */
#ifndef ZSM_RMA_INT_H
#define ZSM_RMA_INT_H

#include <stdint.h>

#include "core/api.h"
#include "rma/rma.h"

/* Bytes of one rank's part of an exchange. */
#define ZSM_RMA_XCHG_BYTES 64

struct zsm_rma_listen {
	void *lc; /* the core's listen comm */
	int dev;
};

struct zsm_rma_coll {
	int nranks, rank;
	int dev;
	void **send;	 /* [rank]: the core's send comm to it (NULL: us) */
	void **recv;	 /* [rank]: the core's receive comm from it */
	void **send_mh;	 /* [rank]: scratch's registration on send[rank] */
	void **recv_mh;
	/* One rank's part, then every rank's (exchanges). */
	unsigned char *scratch;
	uint32_t seq; /* exchanges so far: each one's tag */
	uint64_t handle;
};

struct zsm_rma_sym {
	struct zsm_rma_coll *coll;
	char *base;
	size_t size;
	void *mh;		     /* the local window's registration */
	void *comm;		     /* the comm it was made on */
	struct zsm_rma_window *win; /* [rank]: its copy's descriptor */
	uint64_t handle;
};

struct zsm_rma_ctx {
	struct zsm_rma_coll *coll;
	int ncontexts;
	uint64_t handle;
};

/* The object behind handle h of type, or an error said once here. */
int zsm_rma_lookup(const char *call, const void *h, int type, void **obj);
/* Close handle h of type for call, its object in *obj: 0, or an error
 * said once here. */
int zsm_rma_release(const char *call, const void *h, int type, void **obj);
/* Wait for req with the coll's deadline: its result. */
int zsm_rma_wait(void *req, uint64_t deadline_ns);
/* Every rank's len bytes (len <= ZSM_RMA_XCHG_BYTES) into
 * all[rank * len]; collective, in the same order on every rank. */
int zsm_rma_alltoall(struct zsm_rma_coll *c, const void *mine, size_t len,
		     void *all);
uint64_t zsm_rma_deadline_ns(void);
/* A short sleep between retries. */
void zsm_rma_nap(void);

#endif
