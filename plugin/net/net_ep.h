/* SPDX-License-Identifier: MIT */
/* net's endpoint: its parts, its life (net_ep_open.c) and traffic (net_ep.c). */
#ifndef ZSM_NET_EP_H
#define ZSM_NET_EP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include "common/cuda_win.h"
#include "common/idmap.h"
#include "core/transport.h"
#include "net/net_credit.h"
#include "net/net_ctrl.h"
#include "net/net_dev.h"
#include "net/net_drain.h"
#include "net/net_fi_lib.h"
#include "net/net_hmem.h"
#include "net/net_rma_plan.h"
#include "net/net_txpool.h"
#include "net/net_wire.h"
#include "proxy/proxy.h"

/* The provider's objects of an endpoint, and what its offer grants. */
struct zsm_net_ep_fi {
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	uint8_t addr[ZSM_NET_ADDR_MAX];
	size_t addr_len;
	uint32_t addr_format; /* of ours, which peers' must match */
	uint64_t mr_mode;
	int needs_mr; /* FI_MR_LOCAL: every buffer needs a descriptor */
	int directed; /* receives posted for one source */
	int cq_data;  /* 4+ bytes of remote CQ data: keys */
	int crc;      /* 8 bytes: room for ZSM_CHECKSUM */
	/* The completion queue's fd (FI_WAIT_FD), or -1. */
	int wait_fd;
};

/* What an endpoint keeps in the provider's queues (zsm_net_ep_budgets). */
struct zsm_net_ep_queues {
	/* Data operations zsm posts at most (the provider's queues less a
	 * reserve for control messages; receives share half of theirs, see
	 * zsm_net_ep_rx_room), and how many are posted. */
	size_t tx_budget, rx_budget;
	size_t tx_inflight, rx_inflight;
	/* Where the comms' requests those or the provider's queues refused
	 * wait, until a completion frees some (zsm_proxy_room). */
	struct zsm_proxy_room tx_room, rx_room;
	/* Sends up to this size are eager: they complete without the
	 * receiver, so they may go before its receive (net_credit.h). */
	size_t eager_max;
};

/* An endpoint's engine passes: their clocks, and the fd's word. */
struct zsm_net_ep_passes {
	uint64_t begin_ns;     /* when the current engine pass began */
	uint64_t next_tick_ns; /* the next round of timed checks */
	uint64_t active_ns;    /* the last pass that found something */
	int kicked; /* the proxy's sleep saw the fd readable */
};

/* Flushes (dev->read): reads of our own memory land in buf, sent to
 * ourselves at self. */
struct zsm_net_ep_flush {
	fi_addr_t self;
	void *buf;
	struct fid_mr *mr;
	void *desc;
};

/* regMrDmaBuf's fd and the address of its byte 0, for the cache's
 * registration callback; -1 and NULL otherwise (engine lock). */
struct zsm_net_ep_dmabuf {
	int fd;
	void *base;
	int refused; /* the provider refused one: no more tries */
};

struct zsm_net_ep {
	struct zsm_net_dev *dev;
	int retired;
	struct zsm_net_ep *retired_next;
	struct zsm_net_ep_fi fi;
	struct zsm_net_ep_queues queue;
	struct zsm_net_ep_passes pass;
	/* Engine lock, all below. */
	struct zsm_net_ep_ctrl ctrl;
	struct zsm_idmap ids;	    /* comm id -> comm */
	struct zsm_net_comm *comms; /* every comm, for teardown */
	struct zsm_net_mr *mrs;	    /* every registration, for teardown */
	struct zsm_net_ep_drops dropped;
	struct zsm_net_peer *peers; /* net_peer.c */
	/* Where the part of a message that does not fit a small receive
	 * goes (shared: what lands there is an error anyway); and its
	 * registration where the provider wants one. */
	void *spill;
	void *spill_mr, *spill_desc;
	struct zsm_net_drain drain; /* the stray scan (net_drain.c) */
	struct zsm_mr_cache *mr_cache;
	struct zsm_net_ep_dmabuf dmabuf;
	struct zsm_net_ep_flush flush;
	/* One-sided operations: how signals are ordered (NONE: the endpoint
	 * has no RMA), and the windows registered on it (engine lock): a
	 * provider that places peers' writes in software (tcp) does so only
	 * while the endpoint is polled, so one with windows counts as busy. */
	enum zsm_net_rma_mech rma;
	int windows;
	/* Duplex: the endpoint's domain is FI_THREAD_SAFE and its pump
	 * thread drives the provider beside the engine (net_pump.c);
	 * pump_busy tells that thread whether zsm has sends in it. */
	struct zsm_net_pump *pump;
	atomic_int pump_busy;
	int rx_role; /* dev->ep_rx's, or retired from there */
	int path;    /* which of the device's paths it is (0: dev->ep) */
};

int zsm_net_ep_get(struct zsm_net_dev *dev, struct zsm_net_ep **out);
/* The endpoint listeners and accepted comms go to: dev->ep_rx under
 * ZSM_NET_DUPLEX (opened on first use), else the same as ep_get. */
int zsm_net_ep_get_rx(struct zsm_net_dev *dev, struct zsm_net_ep **out);
/* Path p (> 0) of dev for role rx_role, opened on first use. */
int zsm_net_ep_get_path(struct zsm_net_dev *dev, int p, int rx_role,
			struct zsm_net_ep **out);
/* Whether dev's endpoints have pump threads (duplex, or paths where the
 * process may run on more than 4 CPUs: dev->path_pumps). */
int zsm_net_dev_pumped(const struct zsm_net_dev *dev);
/*
 * Teardown: drive every endpoint of the process until none has zsm's
 * work in the provider (data, control sends), 1 s at most, before any
 * closes.  A message one endpoint still sends to another of this process
 * may open a connection, and tcp;ofi_rxm leaves the socket it accepted
 * for it open when its listener's endpoint closes first (init_cycles with
 * paths and duplex: a socket in CLOSE-WAIT per few cycles).  Retired
 * endpoints are not driven (zsm_net_ep_close).
 */
void zsm_net_topo_settle(struct zsm_net_topo *topo);
/* Every current endpoint of dev in turn: start with *i = 0; NULL at the
 * end.  Path 0's (the device's own), then each further path's, the
 * sending endpoint before the receiving one. */
struct zsm_net_ep *zsm_net_dev_next_ep(struct zsm_net_dev *dev, int *i);
/* The other current endpoint of ep's duplex device (opened if need be)
 * into *out, NULL when the device is not duplex: 0 or -errno. */
int zsm_net_ep_twin(struct zsm_net_ep *ep, struct zsm_net_ep **out);
/* After the engine changed what ep has in flight: tell its pump. */
void zsm_net_ep_pump_hint(struct zsm_net_ep *ep);

/* net_path.c: how many paths dev's comms spread over (ZSM_NET_PATHS),
 * before its first endpoint opens. */
void zsm_net_dev_plan_paths(struct zsm_net_dev *dev);
/* net_pump.c: whether dev is duplex (ZSM_NET_DUPLEX), before its first
 * endpoint opens; an endpoint's pump thread. */
void zsm_net_dev_plan_duplex(struct zsm_net_dev *dev);
int zsm_net_pump_start(struct zsm_net_ep *ep);
/* Stops and joins it: before anything of the endpoint is closed. */
void zsm_net_pump_stop(struct zsm_net_ep *ep);
/* The engine gave ep sends: wake its pump if it sleeps. */
void zsm_net_pump_wake(struct zsm_net_ep *ep);
/* Teardown, after zsm_net_topo_settle: closed, or left open and
 * unpolled where the provider still holds some of its operations and
 * moves bytes only when driven (net_ep_open.c). */
void zsm_net_ep_close(struct zsm_net_ep *ep);
int zsm_net_ep_progress(struct zsm_net_ep *ep);
/* Whether ep has work in flight, or comms whose handshake or hand-over
 * is not done: then it is polled every pass (engine). */
int zsm_net_ep_busy(const struct zsm_net_ep *ep);
/* Full by zsm's own count of sends in flight: req is parked until a
 * completion frees some, -EAGAIN; else 0.  Call it before each post of
 * a sending operation. */
int zsm_net_ep_tx_full(struct zsm_net_req *req, struct zsm_net_ep *ep);
/* Posts operation i of req to the provider: 0, -EAGAIN or -errno. */
typedef ssize_t (*zsm_net_op_fn)(struct zsm_net_req *req, int i);
/* Post operation i of a receive again (a message without the comm's
 * key took it): 0, -EAGAIN (the provider refused: retry) or -EIO. */
int zsm_net_ep_post_recv_op(struct zsm_net_req *req, int i);
/*
 * A peer's address, checked against our own endpoint's (length and,
 * for socket addresses, family and port) before libfabric ever sees it:
 * one bad insert can break the address vector for every later one.
 * 0, or -EINVAL with why filled.
 */
int zsm_net_ep_addr_check(const struct zsm_net_ep *ep, const void *addr,
			  size_t len, char *why, size_t why_len);
int zsm_net_ep_av_insert(struct zsm_net_ep *ep, const void *addr,
			 fi_addr_t *out);
/* The endpoint's timed work: expiries, liveness, strays, drop counts. */
void zsm_net_ep_tick(struct zsm_net_ep *ep, uint64_t now);
/*
 * A peer of ep went silent while the provider held transfers for it: the
 * provider keeps that connection, and if the network comes back it would
 * move those transfers into buffers NCCL has freed.  New comms get a
 * fresh endpoint; this one closes (which ends every transfer it holds)
 * as soon as all its comms are closing.
 */
void zsm_net_ep_retire(struct zsm_net_ep *ep);
/* Engine: close dev's retired endpoints all of whose comms are closing. */
void zsm_net_ep_reap(struct zsm_net_dev *dev);
/* The connecting comm of device dev with id, on its (sending) endpoint
 * or a retired one. */
struct zsm_net_comm *zsm_net_dev_find_comm(struct zsm_net_dev *dev,
					   uint32_t id);

#endif
