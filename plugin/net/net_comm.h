/* SPDX-License-Identifier: MIT */
/* net's links (comms): their parts, the handshake and their lives (net_comm.c). */
#ifndef ZSM_NET_COMM_H
#define ZSM_NET_COMM_H

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
#include "net/net_ep.h"
#include "net/net_fi_lib.h"
#include "net/net_hmem.h"
#include "net/net_path.h"
#include "net/net_req.h"
#include "net/net_rma_plan.h"
#include "net/net_txpool.h"
#include "net/net_wire.h"
#include "proxy/proxy.h"

/* Receive comms a listener holds: answered or ready, not yet accepted. */
#define ZSM_NET_ACCEPT_MAX 64

/*
 * net's link for a comm: the handshake's state, ids and keys, the peer's
 * address and liveness, flow control and the operations posted.  Its
 * owner is the core's comm; a link whose comm moved to another transport
 * (or never got one) has none, and only closes.  Engine only, but for
 * the owner's atomics.
 */
/* The process at the other end of a link, and how it is reached. */
struct zsm_net_comm_peer {
	uint32_t id;  /* tags the peer receives on */
	uint64_t key; /* what our control messages to it carry */
	fi_addr_t addr;
	struct zsm_net_peer *obj; /* liveness, net_peer.c */
	/* Its host and process, from the handle, CONN_REQ or CONN_ACK. */
	uint64_t host_hash;
	uint32_t pid;
	int same_host;
	/* Send comms: the handle's listener pid (trusted: NCCL's bootstrap
	 * brought the handle), for the answer and the liveness check. */
	uint32_t handle_pid;
	/* Declared dead (net_peer.c): what the provider still holds for it
	 * is reported failed at once, and the closer need not wait for it
	 * (a gone process sends nothing; a silent one's transfers end when
	 * its retired endpoint closes). */
	int gone;
};

/* What a link has posted to the provider. */
struct zsm_net_comm_posted {
	int ops;  /* every posted operation: freeing waits */
	int data; /* posted sends and receives */
	int recv; /* of which receives: the provider writes there */
	/* The largest receive posted since the comm last had none: how
	 * long the peer may stay silent while a message fills it
	 * (net_peer.c). */
	uint64_t recv_max;
	int deferred; /* requests the provider refused, not posted */
};

/* A link's one-sided state (net_rma.c, net_rma_get.c). */
struct zsm_net_comm_rma {
	int writes; /* puts' writes posted, not yet completed */
	/* writedata: writes this send comm posted, all told; writes that
	 * landed at this receive comm (remote CQ data names it), and the
	 * signals waiting for earlier writes to land, in arrival order. */
	uint64_t posted;
	uint64_t landed;
	struct zsm_net_sig_wait *sig_head, *sig_tail;
	/* SIGNALs this send comm sent, each asking to hear back, and how
	 * many of them the peer said it applied (a put is done only then;
	 * atomic's adds wait for all); those this receive comm handled,
	 * and the error it failed on one with (a SIGNALED says both). */
	uint64_t asked;
	uint64_t acked;
	uint64_t applied;
	int status;
	/* Send comms: the write or read of ours the peer's provider
	 * refused, which RMA_REFUSED tells the peer. */
	struct {
		uint64_t addr, key;
		int err;
		uint64_t ns; /* when it was found */
	} refused;
	/* GETs this send comm sent and how many its peer answered; GETs
	 * this receive comm answered, and the first failure among them,
	 * which every later answer carries. */
	uint64_t gets_sent, gets_ready;
	uint64_t gets_served;
	int get_err;
	/* Bytes of puts' writes and gets' reads posted and not completed:
	 * how long the peer may stay silent while one-sided bytes stream
	 * between us (net_peer.c). */
	uint64_t bytes;
};

/* A link's control messages (net_ctrl.c). */
struct zsm_net_comm_ctrl {
	/* To send (bits of 1 << type), the one in flight, and the comm's
	 * place on its endpoint's list (ep->ctrl.head). */
	unsigned want;
	struct zsm_net_comm *next;
	int queued;
	struct zsm_net_op send_op;
	struct zsm_ctrl_msg out;
	void *slot; /* out's copy in the send pool, or NULL */
	/* The offer (REQ), answer (ACK) or word (DONE) to send: the
	 * core's (core/transport.h). */
	struct zsm_offer offer;
};

/* Listen comms: the receive comms answered (CONNECTING) and ready
 * (CONNECTED), in arrival order, and how many; receive comms: the
 * listener while not accepted, and the next on its list. */
struct zsm_net_comm_accept {
	struct zsm_net_comm *head;
	int n;
	struct zsm_net_comm *listener;
	struct zsm_net_comm *next;
};

/* A comm's paths (net_path.c): the links of the others, each on an
 * endpoint of its own, or (a path's link) the comm it serves. */
struct zsm_net_comm_paths {
	int n;	   /* paths the comm uses: 1, none but itself */
	int index; /* a path's link: which path; 0 for the comm */
	struct zsm_net_comm *parent;
	struct zsm_net_comm *link[ZSM_NET_PATHS_MAX]; /* [0]: the comm */
	int told; /* receive comms: paths named to the connector so far */
	struct zsm_net_path_seq seq;
	/* Data messages and bytes this link carried. */
	uint64_t msgs, bytes;
};

struct zsm_net_comm {
	uint8_t type; /* enum zsm_comm_type */
	struct zsm_comm *owner;
	/* The handshake's own state (enum zsm_comm_state): the owner's
	 * turns CONNECTED when the core takes the comm. */
	int hs;
	int failed; /* the owner failed: its requests are ended */
	struct zsm_net_ep *ep;
	struct zsm_net_comm *ep_next; /* ep->comms, engine lock */
	uint32_t local_id;            /* tags we receive on */
	/* What control messages to us must carry, and (receive comms) what
	 * data messages to us carry. */
	uint64_t key;
	uint32_t data_key;
	uint32_t nonce; /* listen comms: the handle's; send comms: theirs */
	struct zsm_net_comm_peer remote;
	uint64_t started_ns;
	struct zsm_net_comm_posted posted;
	struct zsm_net_comm_rma rma;
	/* How far the peer may send to a receive comm, or this send comm
	 * to its peer (net_credit.h); net comms only. */
	struct zsm_net_credit credit;
	/* Send comms: the sends held until their receive is known to be
	 * posted (net_credit.h), and the puts until the peer said it
	 * applied their SIGNAL; any order. */
	struct zsm_net_req *held;
	int closing;
	uint64_t closed_ns; /* when closing began: its CLOSE's clock */
	struct zsm_net_comm_ctrl ctrl;
	struct zsm_net_comm_accept accept;
	struct zsm_net_comm_paths paths;
};


/* net_comm.c: the handshake and the links' lives. */
/* A new link of type on ep, with its id, keys and place on ep's list. */
struct zsm_net_comm *zsm_net_comm_new(struct zsm_net_ep *ep, int type);
/* The peer's process, and its address into ep's vector and liveness. */
void zsm_net_comm_set_peer(struct zsm_net_comm *comm, uint32_t pid,
			   uint64_t host_hash);
int zsm_net_comm_set_addr(struct zsm_net_comm *comm, const void *addr);
/* Whether the link carries a comm's data (not a handshake link only). */
int zsm_net_comm_is_data(const struct zsm_net_comm *c);
/* Engine: free the link once nothing refers to it any more, and tell a
 * waiting closer once the provider holds none of its buffers. */
void zsm_net_comm_maybe_free(struct zsm_net_comm *comm);
void zsm_net_comm_free(struct zsm_net_comm *comm);
/* Engine: the link's owner failed, or it has none: end its requests. */
void zsm_net_comm_fail_reqs(struct zsm_net_comm *comm, int err);
/*
 * Engine: report a failure of the link to its owner (the core's one
 * failure path, which comes back through zsm_net_comm_fail_reqs); a
 * link without an owner only ends its requests.
 */
void zsm_net_comm_fail(struct zsm_net_comm *comm, int err, const char *why);
/* Whether the link's owner failed (engine). */
int zsm_net_comm_failed(const struct zsm_net_comm *comm);
/* Whether the link waits for its peer beyond what is in the provider
 * (engine): requests parked, sends held for their GRANT (net_credit.h),
 * or, for a path's link, its comm's requests parked, which may wait for
 * that link's own first GRANT. */
int zsm_net_comm_waits(const struct zsm_net_comm *c);
int zsm_net_comm_post_close(struct zsm_net_comm *comm);
/* Engine: the peer's CLOSE, once net_ctrl.c checked it. */
void zsm_net_comm_on_close(struct zsm_net_comm *c,
			   const struct zsm_ctrl_msg *m);
/* Engine, before req goes to the provider: -ECONNRESET, the comm failed
 * (said here), when the peer closed and req would wait for ever; else 0. */
int zsm_net_comm_peer_closed(struct zsm_net_comm *comm, struct zsm_req *req);
/* Engine: comms whose handshake ran out of time, or was abandoned. */
void zsm_net_comm_expire(struct zsm_net_ep *ep, uint64_t now);
/* Engine: the handshake's messages, once net_ctrl.c checked them. */
void zsm_net_comm_on_req(struct zsm_net_comm *lc,
			 const struct zsm_ctrl_msg *m);
void zsm_net_comm_on_ack(struct zsm_net_comm *sc, const struct zsm_ctrl_msg *m);
void zsm_net_comm_on_done(struct zsm_net_comm *rc,
			  const struct zsm_ctrl_msg *m);
void zsm_net_comm_on_grant(struct zsm_net_comm *sc,
			   const struct zsm_ctrl_msg *m);
/* Engine: a receive comm posted or took a message; queue a GRANT when
 * its sender should hear how far it may go now (net_credit.h). */
void zsm_net_comm_grant_check(struct zsm_net_comm *rc);
/* Engine, timed: the GRANTs quiet receive comms owe (net_credit.h). */
void zsm_net_comm_grant_late(struct zsm_net_ep *ep);

#endif
