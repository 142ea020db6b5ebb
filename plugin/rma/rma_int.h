/* SPDX-License-Identifier: MIT */
/* What plugin/rma's files share. */
#ifndef ZSM_RMA_INT_H
#define ZSM_RMA_INT_H

#include <stdint.h>

#include "entry/entry.h"
#include "rma/rma.h"

/* Transports a collective comm's links may use (see struct zsm_rma_sym). */
#define ZSM_RMA_KINDS 2
/* Bytes of one rank's part of an exchange, and of what it carries past
 * its header (rma_xchg.c). */
#define ZSM_RMA_XCHG_BYTES 128
#define ZSM_RMA_XCHG_BODY (ZSM_RMA_XCHG_BYTES - 24)
/* Agreed exchanges a peer may trail us by (rma_xchg.c), and the rounds
 * of each. */
#define ZSM_RMA_XCHG_RING 4
#define ZSM_RMA_XCHG_ROUNDS 2

struct zsm_rma_listen {
	void *lc; /* the core's listen comm */
	int dev;
};

/* A collective comm's agreed exchanges (rma_xchg.c). */
struct zsm_rma_xchg {
	uint64_t next;	    /* the next exchange's number */
	/* [ring]: the exchange (+ 1) whose requests hold the slot. */
	uint64_t slot_seq[ZSM_RMA_XCHG_RING];
	unsigned char *buf; /* in the scratch: [ring][round][rank] parts */
	void **req;	    /* [ring][round][send, recv][rank]: in flight */
	uint8_t *armed;	    /* [ring][round][rank]: its receive was posted */
};

struct zsm_rma_coll {
	int nranks, rank;
	int dev;
	void **send;	 /* [rank]: the core's send comm to it (NULL: us) */
	void **recv;	 /* [rank]: the core's receive comm from it */
	void **send_mh;	 /* [rank]: scratch's registration on send[rank] */
	void **recv_mh;
	uint8_t *kind;	 /* [rank]: its link's transport, in tname */
	/* Each rank's transports, in the order of the kinds (the first
	 * is the handshake's, which every peer has). */
	const char *tname[ZSM_RMA_KINDS];
	/* One rank's part, then every rank's (exchanges). */
	unsigned char *scratch;
	uint32_t seq; /* exchanges so far: each one's tag */
	struct zsm_rma_xchg xchg;
	int contexts; /* made by createContext, live */
	/* A request of this comm failed (test said so): queryLastError
	 * says so too, whether or not its link failed as a whole. */
	int failed;
	uint64_t handle;
};

/*
 * A window is registered once per transport the collective comm's links
 * use (a transport's registration serves all its links: net's endpoint
 * is the device's, the same-host one's the process), and each rank's
 * descriptors for every transport travel in one exchange.  Transports
 * are told apart by name only: this layer knows none of them.
 */

struct zsm_rma_sym {
	struct zsm_rma_coll *coll;
	char *base;
	size_t size;
	void *mh[ZSM_RMA_KINDS];   /* the local window's registrations */
	void *comm[ZSM_RMA_KINDS]; /* the comms they were made on */
	/* [rank * ZSM_RMA_KINDS + kind]: that rank's descriptors */
	struct zsm_rma_window *win;
	uint64_t handle;
};

/* The kind of c's link to rank (its send comm's transport). */
int zsm_rma_link_kind(const struct zsm_rma_coll *c, int rank);
/* rank's descriptor of s for the link to it, and our registration of s
 * for that link. */
static inline const struct zsm_rma_window *
zsm_rma_sym_win(const struct zsm_rma_sym *s, int rank)
{
	return &s->win[rank * ZSM_RMA_KINDS +
		       zsm_rma_link_kind(s->coll, rank)];
}
static inline void *zsm_rma_sym_mh(const struct zsm_rma_sym *s, int rank)
{
	return s->mh[zsm_rma_link_kind(s->coll, rank)];
}

struct zsm_rma_ctx {
	struct zsm_rma_coll *coll;
	uint64_t coll_handle; /* to find it again, if still there */
	int ncontexts;
	uint64_t handle;
};

/* The object behind handle h of type, or an error said once here. */
int zsm_rma_lookup(const char *call, const void *h, int type, void **obj);
/* A pointer argument NCCL passed NULL (or a count out of range): said,
 * -EINVAL. */
int zsm_rma_bad_arg(const char *call, const char *what);
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
/* The scratch bytes the agreed exchanges of nranks take. */
size_t zsm_rma_xchg_bytes(int nranks);
/* Start c's agreed exchanges in buf (registered scratch), once every link
 * is up: the first one's receives are posted. */
int zsm_rma_xchg_init(struct zsm_rma_coll *c, unsigned char *buf);
/* After c's comms are closed. */
void zsm_rma_xchg_fini(struct zsm_rma_coll *c);
/* Every rank's len bytes (len <= ZSM_RMA_XCHG_BODY) into all[rank * len],
 * collective, with our status (0 or -errno): 0 on every rank, or an error
 * on every rank, whichever gives up (rma_xchg.c). */
int zsm_rma_agree(struct zsm_rma_coll *c, const void *mine, size_t len,
		  int status, void *all);
/* A short sleep between retries. */
void zsm_rma_nap(void);

#endif
