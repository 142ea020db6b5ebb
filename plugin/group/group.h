/* SPDX-License-Identifier: MIT */
/*
 * A group: every rank of a job joined to every other both ways by the
 * entry points' comms (a send comm to each peer, a receive comm from
 * each), and windows every rank registers in the same order, whose
 * descriptors the group exchanges over those comms.  NCCL 2.30's RMA
 * tables (plugin/rma) and zsm's own API (plugin/api) both stand on it;
 * it knows neither NCCL's semantics nor a transport.  Every function
 * returns 0 or -errno, and says what went wrong once, where it found it.
 */
#ifndef ZSM_GROUP_GROUP_H
#define ZSM_GROUP_GROUP_H

#include <stddef.h>
#include <stdint.h>

#include "entry/entry.h"

/* Transports a group's links may use (see struct zsm_group_sym). */
#define ZSM_GROUP_KINDS 2
/* Bytes of one rank's part of an exchange, and of what it carries past
 * its header (group_xchg.c). */
#define ZSM_GROUP_XCHG_BYTES 128
#define ZSM_GROUP_XCHG_BODY (ZSM_GROUP_XCHG_BYTES - 24)
/* Agreed exchanges a peer may trail us by (group_xchg.c), and the rounds
 * of each. */
#define ZSM_GROUP_XCHG_RING 4
#define ZSM_GROUP_XCHG_ROUNDS 2

struct zsm_group_listener {
	void *lc; /* the entry points' listen comm */
	int dev;
};

/* A group's agreed exchanges (group_xchg.c). */
struct zsm_group_xchg {
	uint64_t next;	    /* the next exchange's number */
	/* [ring]: the exchange (+ 1) whose requests hold the slot. */
	uint64_t slot_seq[ZSM_GROUP_XCHG_RING];
	unsigned char *buf; /* in the scratch: [ring][round][rank] parts */
	void **req;	    /* [ring][round][send, recv][rank]: in flight */
	uint8_t *armed;	    /* [ring][round][rank]: its receive was posted */
};

struct zsm_group {
	int nranks, rank;
	int dev;
	void **send;	 /* [rank]: the send comm to it (NULL: us) */
	void **recv;	 /* [rank]: the receive comm from it */
	void **send_mh;	 /* [rank]: scratch's registration on send[rank] */
	void **recv_mh;
	uint8_t *kind;	 /* [rank]: its link's transport, in tname */
	/* Each rank's transports, in the order of the kinds (the first
	 * is the handshake's, which every peer has). */
	const char *tname[ZSM_GROUP_KINDS];
	/* One rank's part, then every rank's (exchanges). */
	unsigned char *scratch;
	uint32_t seq; /* exchanges so far: each one's tag */
	struct zsm_group_xchg xchg;
	/* Request sets the RMA layer's contexts reserved on the links. */
	int contexts;
	/* A request on its links failed (the RMA layer's test said so):
	 * zsm_group_failed says so too, whether or not a link failed as a
	 * whole. */
	int failed;
	uint64_t handle;
};

/*
 * A window is registered once per transport the group's links use (a
 * transport's registration serves all its links: net's endpoint is the
 * device's, the same-host one's the process), and each rank's
 * descriptors for every transport travel in one exchange.  Transports
 * are told apart by name only: this layer knows none of them.
 */
struct zsm_group_sym {
	struct zsm_group *coll;
	char *base;
	size_t size;
	void *mh[ZSM_GROUP_KINDS];   /* the local window's registrations */
	void *comm[ZSM_GROUP_KINDS]; /* the comms they were made on */
	/* [rank * ZSM_GROUP_KINDS + kind]: that rank's descriptors */
	struct zsm_rma_window *win;
	uint64_t handle;
};

/* Whether one-sided operations are on (ZSM_RMA): -ENOTSUP, said, when
 * not. */
int zsm_group_enabled(void);
int zsm_group_listen(void *ctx, int dev, void *handle, void **listen);
int zsm_group_close_listen(void *listen);
/*
 * Collective: every rank calls it with every rank's listen handle, in
 * rank order, and its own listener; returns once each peer is joined
 * both ways, or fails after ZSM_CONNECT_TIMEOUT_MS.
 */
int zsm_group_connect(void *ctx, void **handles, int nranks, int rank,
		      void *listen, void **coll);
int zsm_group_close(void *coll);
/* Collective, in the same order on every rank. */
int zsm_group_reg_sym(void *coll, void *data, size_t size, int type,
		      void **sym);
/* Joins reg_sym's exchange saying status (< 0) instead of a window: it
 * fails on every rank.  Returns status. */
int zsm_group_reg_sym_refuse(void *coll, int status);
int zsm_group_dereg_sym(void *coll, void *sym);
/* The size of rank's copy of sym (as it registered it), for checks made
 * before a put is queued: 0, or -EINVAL said. */
int zsm_group_sym_size(void *sym, int rank, uint64_t *size);
/* coll's send comm to rank, and rank's descriptor of sym with our
 * registration of it for that link: valid until coll is closed and sym
 * deregistered. */
int zsm_group_link(void *coll, int rank, void **send_comm);
int zsm_group_sym_link(void *sym, int rank, const struct zsm_rma_window **win,
		       void **mh);
/* Whether a link of coll, or a request on one, failed: 0 with *failed 0
 * or 1. */
int zsm_group_failed(void *coll, int *failed);

/* For the RMA layer, on objects it looked up. */
/* The object behind handle h of type, or an error said once here. */
int zsm_group_lookup(const char *call, const void *h, int type, void **obj);
/* A pointer argument NCCL passed NULL (or a count out of range): said,
 * -EINVAL. */
int zsm_group_bad_arg(const char *call, const char *what);
/* Close handle h of type for call, its object in *obj: 0, or an error
 * said once here. */
int zsm_group_release(const char *call, const void *h, int type, void **obj);
/* A short sleep between retries. */
void zsm_group_nap(void);
/* The kind of c's link to rank (its send comm's transport). */
int zsm_group_link_kind(const struct zsm_group *c, int rank);
/* rank's descriptor of s for the link to it, and our registration of s
 * for that link. */
static inline const struct zsm_rma_window *
zsm_group_sym_win(const struct zsm_group_sym *s, int rank)
{
	return &s->win[rank * ZSM_GROUP_KINDS +
		       zsm_group_link_kind(s->coll, rank)];
}
static inline void *zsm_group_sym_mh(const struct zsm_group_sym *s, int rank)
{
	return s->mh[zsm_group_link_kind(s->coll, rank)];
}

#endif
