/* SPDX-License-Identifier: MIT */
/*
 * The libfabric transport: devices (one per libfabric domain), one RDM
 * endpoint per device shared by every comm of the process, comms, requests
 * and memory registrations.
 *
 * The wire format is in net/net_wire.h.
 */
#ifndef ZSM_NET_H
#define ZSM_NET_H

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
#include "net/net_fi_lib.h"
#include "net/net_hmem.h"
#include "net/net_rma_plan.h"
#include "net/net_txpool.h"
#include "net/net_wire.h"
#include "proxy/proxy.h"

#define ZSM_NET_MAX_DEVS 32

/* Encode/decode, unit tested.  Decode refuses foreign or damaged handles. */
void zsm_net_handle_encode(struct zsm_net_handle *h, uint32_t listen_id,
			   uint32_t nonce, const void *addr, size_t addr_len,
			   uint64_t host_hash);
int zsm_net_handle_check(const struct zsm_net_handle *h);

struct zsm_net_dev {
	struct fi_info *info; /* the chosen provider offer, dup'ed */
	char name[64];
	char *pci_path;
	uint64_t guid;
	int speed_mbps;
	int hmem;	       /* info is the provider's FI_HMEM offer */
	int read;	       /* info has RMA reads, which flush */
	/*
	 * The largest message the provider sends eagerly when it cannot
	 * take a truncated one of that size without dropping the
	 * connection every comm to that peer shares (the tcp core under
	 * rxm); 0 when truncation is safe.  Receives smaller than this get
	 * the endpoint's spill buffer as a second part, so that whatever
	 * arrives fits (net_ep.c).
	 */
	size_t trunc_unsafe;
	/* The largest message the provider keeps for a receive not yet
	 * posted, where zsm knows it (0: its inject size): a send no
	 * larger may go early (net_credit.h). */
	size_t eager;
	/*
	 * Early messages the receive comms of one peer may be allowed in
	 * all (UINT32_MAX: no limit): the provider stops reading a peer that has
	 * more unmatched messages than it keeps (libfabric's own tcp RDM
	 * endpoint), and every comm of that peer would wait behind them.
	 */
	uint32_t early_peer;
	struct zsm_net_hmem_plan gdr; /* GPU buffers over this device */
	/* One-sided operations: how signals are built, and the offer the
	 * RMA endpoints open (NULL: none). */
	struct zsm_net_rma_plan rma;
	struct fi_info *rma_info;
	struct zsm_net_ep *ep; /* where new comms go */
	/* ZSM_NET_DUPLEX: where listeners and the comms they accept go,
	 * so that bytes coming in and bytes going out are each moved by an
	 * endpoint of their own, with a thread of its own (net_pump.c);
	 * NULL otherwise (ep takes both). */
	struct zsm_net_ep *ep_rx;
	int duplex;
	int tx_pumps; /* duplex: pump threads of the sending endpoint */
	char duplex_why[96]; /* what ZSM_NET_DUPLEX decided, and why */
	/* Endpoints retired after a peer went silent (see zsm_net_ep_retire):
	 * they serve their comms and close when the last one does. */
	struct zsm_net_ep *retired;
};

/* The process's view of what libfabric offers (built once, immutable). */
struct zsm_net_topo {
	int ndevs;
	struct zsm_net_dev devs[ZSM_NET_MAX_DEVS];
	struct fi_info *all; /* every offer, for zsm-info */
};

int zsm_net_topo_discover(struct zsm_net_topo *topo);
void zsm_net_topo_free(struct zsm_net_topo *topo);
/* Why an offer was not taken ("" when it was). */
const char *zsm_net_topo_why(const struct zsm_net_topo *topo,
			     const struct fi_info *fi, char *buf, size_t len);
void zsm_net_dev_props(const struct zsm_net_dev *dev, int index,
		       struct zsm_props *props);
/* Decide dev->gdr: does the device take GPU buffers (net_hmem.h)?  cuda:
 * a driver with a device; min_cc: the lowest compute capability;
 * cuda_dmabuf: every GPU exports dma-bufs. */
void zsm_net_dev_plan_gdr(struct zsm_net_dev *dev, int cuda, int min_cc,
			  int cuda_dmabuf);
/* Decide dev->rma from what the provider grants (net_rma_dev.c). */
void zsm_net_dev_plan_rma(struct zsm_net_dev *dev);

/* Kind of a libfabric operation, from its context. */
enum zsm_net_op_kind {
	ZSM_OP_SEND,
	ZSM_OP_RECV,
	ZSM_OP_FLUSH,
	ZSM_OP_CTRL_RECV, /* one of the endpoint's control receives */
	ZSM_OP_CTRL_SEND, /* a comm's control message */
	ZSM_OP_NACK,	  /* the endpoint's refusal of a CONN_REQ */
	ZSM_OP_DRAIN,	  /* a look at, or discard of, a stray message */
};

struct zsm_net_comm;
struct zsm_net_req;
struct zsm_net_peer;
struct zsm_net_close_wait;

struct zsm_net_op {
	struct fi_context2 fi_ctx; /* first: FI_CONTEXT2 mode */
	struct zsm_net_req *req;
	void *owner; /* comm or listen for control ops */
	uint8_t kind;
	uint8_t index;
	uint8_t posted;
};

struct zsm_net_mr;

/*
 * Control receives an endpoint keeps posted.  Anyone who can reach the
 * endpoint can send control-tagged messages, and what arrives while every
 * control receive is taken waits in the provider's unexpected queue, each
 * in a buffer of its eager size (rxm: 16.5 KiB, from a pool that grows
 * 1024 at a time, zeroed, and never shrinks).  With 16 posted, 8000 junk
 * messages a second outran them between two passes: the pool grew, the
 * growth ate the engine's CPU, the queue grew faster, and a connection
 * request waited behind 13-15 s of junk.  As many as a flood brings
 * between two passes of a loaded engine land in zsm's own buffers
 * instead; each is a control message's size (the spill buffer takes
 * anything longer), so 256 cost 48 KiB, not 4 MiB.  Many more would
 * add to the posted receives the provider may walk to match a message.
 */
#define ZSM_NET_CTRL_RX 256

/* Control messages the endpoint refused a comm for, answers in flight. */
#define ZSM_NET_NACKS 8
/* How long an RMA_REFUSED whose send failed is sent again (net_ctrl.c). */
#define ZSM_NET_REFUSED_RETRY_NS (5ULL * 1000000000ULL)

struct zsm_net_nack {
	struct zsm_net_op op;
	struct zsm_ctrl_msg msg;
	fi_addr_t to;
	void *slot; /* msg's copy in the send pool (needs_mr), or NULL */
};

/* Why control messages are dropped, each counted and said once. */
enum zsm_net_drop {
	ZSM_DROP_SHORT,	      /* shorter than a control message */
	ZSM_DROP_FOREIGN,     /* not zsm's magic */
	ZSM_DROP_VERSION,     /* another wire version */
	ZSM_DROP_MALFORMED,   /* bad type, ids or lengths */
	ZSM_DROP_UNKNOWN,     /* for no live comm, or a closed one */
	ZSM_DROP_KEY,	      /* the wrong key for its comm */
	ZSM_DROP_STATE,	      /* not expected in the comm's state */
	ZSM_DROP_ADDRESS,     /* a peer address unlike ours */
	ZSM_DROP_TRUNCATED,   /* larger than any control message */
	ZSM_DROP_REPLAY,      /* a CONN_REQ already being answered */
	ZSM_DROP_DATA,	      /* a data message no live comm takes */
	ZSM_DROP_NKINDS,
};

struct zsm_net_ctrl_rx;

/* A set of tags the stray scan looks in: those whose top len bits are
 * tag's.  held: tag is that of a message zsm keeps, found there. */
struct zsm_net_drain_prefix {
	uint64_t tag;
	int len;
	int held;
};

/* Down to one comm id: the bits below it are the caller's tag. */
#define ZSM_DRAIN_LEAF (64 - ZSM_TAG_BITS_USER)

/* Operations a sweep of the stray scan has out at most: receives kept
 * posted on rxm, discards elsewhere (net_drain.c).  A look
 * (FI_PEEK) on rxm of libfabric 1.17 first lets its connections bring in
 * all they hold, each message in a pool buffer of 16.5 KiB: a discard per
 * look lost to a flood by a thousand to one.  A receive posted takes an
 * unexpected stray without that, and one still posted takes the next
 * stray as it lands, before it costs a buffer; a read of the queue brings
 * in at most what the receives posted then take. */
#define ZSM_DRAIN_SWEEP_MAX 1024

/* The stray scan (net_drain.c): the prefixes still to look in, the one
 * being looked in, and what is left of this pass's looks. */
struct zsm_net_drain {
	struct zsm_net_op op;
	/* One each: a provider may keep its own state in an operation's
	 * context while it is in flight (FI_CONTEXT2); the free ones. */
	struct zsm_net_op sweep_ops[ZSM_DRAIN_SWEEP_MAX];
	uint16_t sweep_free[ZSM_DRAIN_SWEEP_MAX];
	int nfree;
	int state;
	int budget;
	int found; /* strays discarded since the scan began */
	int soon;  /* the next scan starts next pass */
	uint64_t next_ns;
	uint64_t ended_ns; /* when the last scan ended */
	struct zsm_net_drain_prefix cur;
	/* A set that holds strays only, being swept: receives posted, how
	 * many it keeps posted, when one last took a stray, how many are
	 * being cancelled, and whether all are (the sweep ends with the
	 * last back). */
	struct zsm_net_drain_prefix sweep;
	int sweep_out;
	int sweep_want;
	uint64_t sweep_hit_ns;
	int sweep_cancelling;
	int sweep_stop;
	int top;
	struct zsm_net_drain_prefix stack[ZSM_DRAIN_LEAF + 2];
};

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

/* An endpoint's control plane (net_ctrl.c).  Engine lock. */
struct zsm_net_ep_ctrl {
	int tx; /* control sends in flight */
	struct zsm_net_comm *head, *tail; /* comms with control to send */
	struct zsm_net_ctrl_rx *rx;	  /* the control receives */
	void *mr;			  /* their registration, or NULL */
	int nrx;
	int rx_unposted; /* refused by the provider: post again */
	size_t len;	 /* each control receive's buffer */
	struct zsm_net_nack nacks[ZSM_NET_NACKS];
	/* Where zsm's own messages are sent from when the provider wants
	 * descriptors (needs_mr); unused otherwise. */
	struct zsm_net_txpool txpool;
};

/* Messages an endpoint dropped, by kind, and what was said of them. */
struct zsm_net_ep_drops {
	uint64_t n[ZSM_DROP_NKINDS];
	uint64_t said[ZSM_DROP_NKINDS];
	uint64_t said_ns;
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
};

int zsm_net_ep_get(struct zsm_net_dev *dev, struct zsm_net_ep **out);
/* The endpoint listeners and accepted comms go to: dev->ep_rx under
 * ZSM_NET_DUPLEX (opened on first use), else the same as ep_get. */
int zsm_net_ep_get_rx(struct zsm_net_dev *dev, struct zsm_net_ep **out);
/* The other current endpoint of ep's duplex device (opened if need be)
 * into *out, NULL when the device is not duplex: 0 or -errno. */
int zsm_net_ep_twin(struct zsm_net_ep *ep, struct zsm_net_ep **out);
/* After the engine changed what ep has in flight: tell its pump. */
void zsm_net_ep_pump_hint(struct zsm_net_ep *ep);

/* net_pump.c: whether dev is duplex (ZSM_NET_DUPLEX), before its first
 * endpoint opens; an endpoint's pump thread. */
void zsm_net_dev_plan_duplex(struct zsm_net_dev *dev);
int zsm_net_pump_start(struct zsm_net_ep *ep);
/* Stops and joins it: before anything of the endpoint is closed. */
void zsm_net_pump_stop(struct zsm_net_ep *ep);
/* The engine gave ep sends: wake its pump if it sleeps. */
void zsm_net_pump_wake(struct zsm_net_ep *ep);
/* Waits up to a second for the provider to give back what ep's comms
 * still have with it (zsm_net_ep_drain), then closes everything. */
void zsm_net_ep_close(struct zsm_net_ep *ep);
int zsm_net_ep_progress(struct zsm_net_ep *ep);
/* Whether ep has work in flight, or comms whose handshake or hand-over
 * is not done: then it is polled every pass (engine). */
int zsm_net_ep_busy(const struct zsm_net_ep *ep);
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

/* net's request: the core's, and what libfabric needs of it. */
struct zsm_net_req {
	struct zsm_req base; /* first */
	/* Zeroed for each use (zsm_comm_ops.req_clear); the rest is set by
	 * the first post. */
	uint8_t ready;	     /* ops and descriptors set (first post) */
	uint8_t deferred;    /* refused by the provider once */
	void *mr_desc[ZSM_MAX_RECVS];
	struct zsm_net_op ops[ZSM_MAX_RECVS];
	/* Flush: the remote side of the read (address and key). */
	uint64_t rma_addr;
	uint64_t rma_key;
	/* Send: the remote CQ data it carries (key, checksum). */
	uint64_t cq_data;
	/* Put with a signal: the message that follows its write; a get:
	 * its GET (net_rma_get.c). */
	struct zsm_sig_msg sig;
	/* sig's copy in the send pool while posted (needs_mr). */
	void *sig_slot;
	/* atomic: the value the NIC adds, and its copy in the send pool
	 * while posted (needs_mr). */
	uint64_t operand;
	void *add_slot;
	/* Get: its GET's number on the comm (the owner's answer counts
	 * them), and until when that answer may take.  Set when the GET
	 * goes.  A send: its number among the comm's data messages, set
	 * when it is posted (net_credit.h).  A put: its SIGNAL's number
	 * among those the comm asked to hear back about (rma.asked), 0
	 * without one; set when the SIGNAL goes. */
	uint64_t get_seq;
	uint64_t get_deadline_ns;
	/* A send the provider finished, not reported until its receive is
	 * known to be posted (net_credit.h), or a put until its SIGNAL is
	 * known applied: the next on its comm's list. */
	struct zsm_net_req *held_next;
};

static inline struct zsm_net_req *zsm_net_req_of(struct zsm_req *r)
{
	return zsm_container_of(r, struct zsm_net_req, base);
}

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
};

extern struct zsm_net_topo zsm_net_topo;

/* net_comm.c: the handshake and the links' lives. */
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

/* net_rma.c: one-sided operations.  The comm ops' reg_window and
 * can_signal; the operations a PUT or GET request posts, and posting op
 * i of them (engine); a SIGNAL message that passed every control check,
 * for its receive comm c (engine). */
int zsm_net_rma_reg_window_op(struct zsm_comm *c, void *data, size_t size,
			      int type, struct zsm_mr **out,
			      struct zsm_rma_window *win);
int zsm_net_rma_can_signal(struct zsm_comm *c);
int zsm_net_rma_nops(const struct zsm_req *b);
ssize_t zsm_net_rma_post_op(struct zsm_net_req *req, int i);
/* Op op of a put or get completed (engine, before its request may be
 * published). */
/* Op of a put or get ended, with err (0 or -errno). */
void zsm_net_rma_op_done(struct zsm_net_op *op, int err);
/* req's SIGNAL or GET (t), req->sig, sent as op: from a registered copy
 * where the provider wants descriptors, and none free is a refusal for
 * now, as the provider's own; a SIGNAL asks to be acknowledged (under
 * atomic with FI_FENCE).  The send's result. */
ssize_t zsm_net_rma_send_msg(struct zsm_net_req *req, struct zsm_net_op *op,
			     enum zsm_ctrl_type t);
void zsm_net_rma_on_signal(struct zsm_net_comm *c,
			   const struct zsm_sig_msg *m);
/* RMA_REFUSED: our provider refused a write or read of the peer's. */
void zsm_net_rma_on_refused(struct zsm_net_comm *c,
			    const struct zsm_ctrl_msg *m);
/* SIGNALED: the peer's receive comm says how many of send comm c's
 * SIGNALs it handled, and whether it failed. */
void zsm_net_rma_on_signaled(struct zsm_net_comm *c,
			     const struct zsm_ctrl_msg *m);
/* writedata: a put's write landed here, its remote CQ data data. */
void zsm_net_rma_on_write(struct zsm_net_ep *ep, uint64_t data);
/* The comm goes: the signals it still held back go with it. */
void zsm_net_rma_comm_fini(struct zsm_net_comm *c);
/* The window of ep that id names, or NULL (net_rma.c). */
struct zsm_net_mr *zsm_net_rma_window(struct zsm_net_ep *ep, uint64_t id);
/*
 * net_rma_get.c: gets.  Op i of a GET request (0: its GET message, 1:
 * the read, once the owner answered); a GET that passed every control
 * check and waited its turn behind the link's earlier signals, for
 * receive comm c; a GET_READY for send comm c; op completed without
 * error (the read of a get into a staged window is copied up): 0 or
 * -errno.  Engine.
 */
ssize_t zsm_net_rma_get_post(struct zsm_net_req *req, int i);
/* A SIGNAL's or GET's m from send comm comm, its other fields 0. */
void zsm_net_rma_msg_head(const struct zsm_net_comm *comm,
			  struct zsm_sig_msg *m, enum zsm_ctrl_type t);
void zsm_net_rma_get_serve(struct zsm_net_comm *c,
			   const struct zsm_sig_msg *m);
void zsm_net_rma_get_ready(struct zsm_net_comm *c,
			   const struct zsm_ctrl_msg *m);
int zsm_net_rma_get_landed(struct zsm_net_op *op);
/* net_mr.c: a window's registration with remote access; GPU memory
 * (type ZSM_MEM_CUDA) is staged through a pinned host mirror. */
int zsm_net_mr_reg_window(struct zsm_net_ep *ep, void *data, size_t size,
			  int type, struct zsm_net_mr **out);

/* net_ctrl.c: the control plane. */
int zsm_net_ctrl_init(struct zsm_net_ep *ep);
void zsm_net_ctrl_fini(struct zsm_net_ep *ep);
/* Queue control message type t of comm (sent by the next pass). */
void zsm_net_ctrl_want(struct zsm_net_comm *comm, enum zsm_ctrl_type t);
/* Engine pass: post what is queued and receives to post again. */
void zsm_net_ctrl_progress(struct zsm_net_ep *ep);
/* A control operation completed (receive, send or refusal). */
void zsm_net_ctrl_complete(struct zsm_net_op *op, int err, size_t len,
			   uint64_t tag);
/* Refuse a CONN_REQ at once: a CONN_ACK with status err. */
void zsm_net_ctrl_nack(struct zsm_net_ep *ep, const struct zsm_ctrl_msg *m,
		       fi_addr_t to, int err);
/* Count a dropped message of kind; said at WARN the first time, and as
 * a count now and then (net_ctrl.c). */
void zsm_net_ctrl_drop(struct zsm_net_ep *ep, enum zsm_net_drop kind,
		       const char *detail);
void zsm_net_ctrl_drop_summary(struct zsm_net_ep *ep, uint64_t now, int all);

/* net_peer.c: liveness, per peer process (address) of an endpoint. */
/* name: the peer's address as the provider gave it (knocked at on tcp),
 * or NULL. */
int zsm_net_peer_get(struct zsm_net_ep *ep, fi_addr_t addr, int same_host,
		     uint32_t pid, const void *name, struct zsm_net_peer **out);
void zsm_net_peer_put(struct zsm_net_peer *p);
/* The peer spoke (a message arrived) or took a send of ours. */
void zsm_net_peer_heard(struct zsm_net_peer *p, uint64_t now);
/* Of want early messages, those a new receive comm of the peer may be
 * allowed within the peer's cap (zsm_net_dev's early_peer), and their
 * return when it goes. */
uint32_t zsm_net_peer_early_take(struct zsm_net_peer *p, uint32_t want,
				 uint32_t cap);
void zsm_net_peer_early_give(struct zsm_net_peer *p, uint32_t n);
/* A PONG is owed to, or came from, the peer: net_ctrl.c tells. */
void zsm_net_peer_check(struct zsm_net_ep *ep, uint64_t now);


/* net_drain.c: strays: messages for no live comm, discarded. */
/* The length of the shortest prefix of a stray's tag under which no
 * message is kept: the set one sweep discards from. */
int zsm_net_drain_stray_len(const struct zsm_net_ep *ep, uint64_t tag);
/* Whether no message under the set is kept, with the comms there are now:
 * a sweep asks before each round. */
int zsm_net_drain_strays_only(const struct zsm_net_ep *ep,
			      struct zsm_net_drain_prefix q);
void zsm_net_drain_tick(struct zsm_net_ep *ep, uint64_t now);
void zsm_net_drain_complete(struct zsm_net_ep *ep, struct zsm_net_op *op,
			    int err, uint64_t tag);
/* The provider's fd woke the engine and no operation completed: what
 * came may be strays, and the scan starts soon (ZSM_DRAIN_HINT_NS). */
void zsm_net_drain_hint(struct zsm_net_ep *ep);
/* A receive comm was made: a sweep whose set holds its tags stops. */
void zsm_net_drain_comm_made(struct zsm_net_ep *ep);
/* A look or a discard is in flight, or the scan goes on next pass. */
int zsm_net_drain_busy(const struct zsm_net_ep *ep);
/* A look of the scan is with the provider. */
int zsm_net_drain_looking(const struct zsm_net_ep *ep);

/* An operation completed: err, the length the provider reports, and the
 * message's remote CQ data (receives). */
void zsm_net_req_op_done(struct zsm_net_op *op, int err, size_t len,
			 uint64_t data);
/* A send's remote CQ data: its comm's data key, and a checksum. */
uint64_t zsm_net_req_cq_data(const struct zsm_net_req *req);
void zsm_net_req_undefer(struct zsm_net_req *req);
/* Report the sends comm held whose receives the peer has now said are
 * posted; with err (the comm failed), every one, failed with err. */
void zsm_net_req_report_held(struct zsm_net_comm *comm, int err);
/* The comm ops' posts, one per kind (net_ep.c): sends, receives,
 * flushes, and puts and gets alike. */
int zsm_net_ep_post_send(struct zsm_req *req);
int zsm_net_ep_post_recv(struct zsm_req *req);
int zsm_net_ep_post_flush(struct zsm_req *req);
int zsm_net_ep_post_rma(struct zsm_req *req);
/* The comm ops' flush (net_req.c). */
int zsm_net_flush_op(struct zsm_comm *c, int n, void **data, const int *sizes,
		     struct zsm_mr **mrs, struct zsm_req *req, int *flush);

/* A provider registration (through the endpoint's cache). */
struct zsm_net_mr {
	struct zsm_mr base; /* first */
	struct zsm_net_mr *ep_next, **ep_prev; /* ep->mrs, engine lock */
	struct zsm_net_ep *ep;
	struct zsm_mr_entry *entry;
	void *desc;
	/* A window (zsm_reg_window): its own provider registration, with
	 * remote access, instead of a cache entry; and its bytes. */
	struct fid_mr *window;
	char *start;
	size_t size;
	/* A GPU window on a device that writes host memory only: start is
	 * the GPU memory, and the registration covers its pinned host copy
	 * (mirror.host). */
	struct zsm_cuda_win_mirror mirror;
	/* A window of a duplex device is registered in both endpoints'
	 * domains: peers write it through the receiving one, puts read it
	 * through the sending one.  The registration on the other endpoint
	 * than ep, or NULL. */
	struct fid_mr *twin;
	void *twin_desc;
	struct zsm_net_ep *twin_ep;
};

static inline struct zsm_net_mr *zsm_net_mr_of(struct zsm_mr *m)
{
	return zsm_container_of(m, struct zsm_net_mr, base);
}

/* mr's descriptor for operations on ep. */
static inline void *zsm_net_mr_desc(const struct zsm_net_mr *mr,
				    const struct zsm_net_ep *ep)
{
	return mr->twin && mr->twin_ep == ep ? mr->twin_desc : mr->desc;
}

int zsm_net_mr_reg(struct zsm_net_ep *ep, void *data, size_t size, int type,
		   struct zsm_net_mr **out);
/* The comm ops' reg_mr and mr_free (net_mr.c). */
int zsm_net_mr_reg_op(struct zsm_comm *c, void *data, size_t size, int type,
		      int dmabuf_fd, uint64_t offset, struct zsm_mr **out);
void zsm_net_mr_free_op(struct zsm_mr *mr);
/* Teardown, engine lock held: free every registration left on ep. */
void zsm_net_mr_close_all(struct zsm_net_ep *ep);
/* Teardown of ep: the registrations other endpoints' windows keep in
 * ep's domain go first (engine lock). */
void zsm_net_mr_drop_twins(struct zsm_net_ep *ep);
/* regMrDmaBuf: GPU memory whose dma-buf NCCL exported (fd, closed by
 * NCCL after the call; data is at offset in it). */
int zsm_net_mr_reg_dmabuf(struct zsm_net_ep *ep, void *data, size_t size,
			  int fd, uint64_t offset, struct zsm_net_mr **out);
int zsm_net_mr_init(struct zsm_net_ep *ep);
void zsm_net_mr_fini(struct zsm_net_ep *ep);
/* The page flush reads land in, registered; and its release. */
int zsm_net_mr_flush_init(struct zsm_net_ep *ep);
void zsm_net_mr_flush_fini(struct zsm_net_ep *ep);
/* What a read of data, inside mr, names remotely; -ENOENT when mr has no
 * provider registration. */
int zsm_net_mr_flush_target(const struct zsm_net_mr *mr, const void *data,
			    uint64_t *addr, uint64_t *key);
/* A registration of len bytes at buf for the endpoint's own use (control
 * receives, the spill buffer, send slots) with access (FI_SEND, ...):
 * *mr and *desc, or -errno. */
int zsm_net_mr_reg_internal(struct zsm_net_ep *ep, void *buf, size_t len,
			    uint64_t access, void **mr, void **desc);
void zsm_net_mr_dereg_internal(void *mr);

#endif
