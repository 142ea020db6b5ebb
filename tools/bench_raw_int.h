/* SPDX-License-Identifier: MIT */
/*
 * What bench_raw.c (tagged messages) and bench_raw_rma.c (--rma: writes
 * and signals) share: the endpoint, its requests and registrations.
 */
#ifndef ZSM_BENCH_RAW_INT_H
#define ZSM_BENCH_RAW_INT_H

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include "bench_raw.h"
#include "net/net_wire.h"

#define RAW_NREQ 64
#define RAW_NMR 8

struct raw_req;

/* One libfabric operation of a request; first, so that a completion's
 * op_context is the op. */
struct raw_op {
	struct fi_context2 ctx;
	struct raw_req *req;
};

struct raw_req {
	/* A put with a signal is two operations: the write, then the
	 * message; everything else is one. */
	struct raw_op op[2];
	struct raw_req *next_free;
	int left; /* operations not completed yet */
	int done;
	int err;
	size_t len;
	/* A receive posted for a peer's signal, applied when it comes
	 * (bench_raw_rma.c), and the message it carries or receives. */
	int sig_rx;
	struct zsm_sig_msg sig;
};

struct raw_mr {
	struct fid_mr *mr;
	char *base;
	size_t len;
	void *desc;
};

struct bench_raw {
	struct fi_info *fi; /* the plugin's device 0, or its RMA offer */
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	fi_addr_t peer;
	int need_desc;
	/* --rma: how zsm signals on this device (net_rma_plan.h), and the
	 * receives kept posted for the peer's signals. */
	const char *mech;
	int sig_want;
	int sig_posted;
	struct raw_mr mrs[RAW_NMR];
	int nmr;
	struct raw_req reqs[RAW_NREQ];
	struct raw_req *free_reqs;
};

/* A free request with its operations tied to it, or NULL. */
struct raw_req *raw_get(struct bench_raw *r);
void raw_put(struct bench_raw *r, struct raw_req *q);
/* Register [buf, len) with access; remote keys when access asks. */
int raw_mr_reg(struct bench_raw *r, void *buf, size_t len, uint64_t access,
	       struct raw_mr **out);
void *raw_desc(struct bench_raw *r, const void *buf);
/* Reap what has completed; progress happens here too. */
int raw_poll(struct bench_raw *r);
/* bench_raw_rma.c: a peer's signal arrived in q: apply it, post q again. */
int raw_rma_on_signal(struct bench_raw *r, struct raw_req *q);

#endif
