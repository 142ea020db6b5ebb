/* SPDX-License-Identifier: MIT */
/*
 * What the core and the transports share: the comm base object, the
 * request and registration types the core owns, the ops table each
 * transport implements, and the few core services a transport may call.
 * A transport includes this and core/limits.h, nothing else of the core.
 *
 *   entry (entry points)  --ops-->  transport (net, ce)
 *                                     |
 *   core  <-- zsm_comm_fail, zsm_req_* +   (declared here)
 *
 * A transport's own request extends struct zsm_req (its first member),
 * and its own registration struct zsm_mr, so the core allocates and
 * hands out requests it never looks inside (container_of).
 */
#ifndef ZSM_CORE_TRANSPORT_H
#define ZSM_CORE_TRANSPORT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/limits.h"
#include "proxy/proxy.h"

#define zsm_container_of(ptr, type, member)                                   \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

enum zsm_comm_type {
	ZSM_COMM_SEND = 1,
	ZSM_COMM_RECV = 2,
	ZSM_COMM_LISTEN = 3,
};

enum zsm_comm_state {
	ZSM_COMM_CONNECTING, /* send: no answer yet; recv: not confirmed */
	ZSM_COMM_CONNECTED,
	ZSM_COMM_FAILED,
};

enum zsm_req_type {
	ZSM_REQ_SEND = 1,
	ZSM_REQ_RECV = 2,
	ZSM_REQ_CLOSE = 3,
	ZSM_REQ_FLUSH = 4, /* a read of our own memory: iflush */
	ZSM_REQ_PUT = 5,   /* one-sided, maybe with a signal after it */
	ZSM_REQ_GET = 6,
	ZSM_REQ_KINDS = 7, /* the bound of zsm_comm_ops.post's index */
};

/* A one-sided request's other end, at the comm's peer. */
struct zsm_req_rma {
	uint64_t addr, key; /* the remote bytes (data[0], len[0] here) */
	uint64_t dst_id;    /* and their window's id */
	uint64_t dst_flags; /* and its ZSM_WIN_* */
	uint64_t sig_id;    /* the window of the signal, 0: none */
	uint64_t sig_off;
	uint64_t sig_add;
	/* The signal word as the NIC names it (its window's address plus
	 * sig_off, and key), and its window's ZSM_WIN_*. */
	uint64_t sig_addr, sig_key;
	uint64_t sig_flags;
};

/* Request states published to test(); negative values are -errno. */
#define ZSM_REQ_PENDING 1
#define ZSM_REQ_DONE 0

struct zsm_comm;
struct zsm_comm_ops;

/*
 * A registration.  NCCL's deregMr drops its reference; each request using
 * it holds one until the request is freed, so a registration dropped
 * while a transfer still uses it lives until that transfer ends.
 */
struct zsm_mr {
	atomic_int refs;
	uint64_t handle; /* NCCL's, 0 once deregistered */
	int type;	 /* ZSM_MEM_HOST or ZSM_MEM_CUDA */
	const struct zsm_comm_ops *ops; /* the transport that made it */
	/* The bytes registered, which every buffer given with it must lie
	 * in (set by the core). */
	uintptr_t start;
	size_t size;
};

struct zsm_req {
	struct zsm_desc desc; /* first: the queue carries requests */
	struct zsm_comm *comm;
	atomic_int state;
	/* Engine: reported while its transport still holds it (a send left
	 * with a dead peer's provider): test() must not recycle it. */
	atomic_int orphan;
	uint32_t handle_index; /* its slot (common/handle.h), for life */
	uint8_t type;
	uint8_t n;
	uint8_t remaining; /* engine only: buffers not finished */
	int error;	   /* engine only: first failure */
	int sizes[ZSM_MAX_RECVS];
	void *data[ZSM_MAX_RECVS];
	size_t len[ZSM_MAX_RECVS];
	int tag[ZSM_MAX_RECVS];
	/* Each buffer's registration, held until the request is freed. */
	struct zsm_mr *mh[ZSM_MAX_RECVS];
	struct zsm_req_rma rma; /* PUT and GET */
	/* Its number in its comm's pool, and the free list's link: the
	 * next free request's number + 1, 0 for none (core/req.c). */
	uint32_t pool_number;
	_Atomic uint32_t next_free;
};

/* Requests a comm's pool holds at most, in slabs of ZSM_REQ_SLAB. */
#define ZSM_REQ_SLAB 32
#define ZSM_REQ_SLABS                                                         \
	(ZSM_MAX_REQUEST_SETS * ZSM_MAX_REQUESTS / ZSM_REQ_SLAB)
struct zsm_req_slab;

/*
 * A comm's requests (core/req.c): slabs that live as long as the comm,
 * and a free list NCCL's threads pop and push without a lock; only
 * growing by a slab takes grow_lock.
 */
struct zsm_req_pool {
	/* The free list's top: (tag << 32) | (number + 1), 0 when empty;
	 * the tag changes on every pop and push, against ABA. */
	_Atomic uint64_t top;
	/* Slabs in use (slab[0 .. nslabs)), written under grow_lock. */
	atomic_int nslabs;
	atomic_int max_reqs; /* the bound (zsm_comm_reserve) */
	pthread_mutex_t grow_lock;
	struct zsm_req_slab *slab[ZSM_REQ_SLABS];
};

/* One transport's comm-level operations, chosen once per comm. */
struct zsm_comm_ops {
	const char *name; /* "net", "ce": said in every message */
	/* Size of the transport's request, which starts with zsm_req, and
	 * how many bytes after the zsm_req are zeroed for each use (the
	 * rest the transport sets before it reads). */
	size_t req_size;
	size_t req_clear;
	/*
	 * Engine: post a request, one function per kind, indexed by its
	 * type (SEND, RECV, FLUSH, PUT, GET; CLOSE is the core's): 0 when
	 * the transport took it (finished or in flight), -EAGAIN to keep
	 * it and retry later.  NULL: the transport makes no such requests.
	 */
	int (*post[ZSM_REQ_KINDS])(struct zsm_req *req);
	/*
	 * Engine: NCCL closed c.  The transport stops using it, ends its
	 * requests, calls zsm_comm_quiet once it writes none of their
	 * buffers, and zsm_comm_release once nothing refers to c.
	 */
	void (*close)(struct zsm_comm *c);
	/* Engine: c failed (zsm_comm_fail): end its requests with err. */
	void (*fail)(struct zsm_comm *c, int err);
	/*
	 * regMr on c: [data, data + size) of type (ZSM_MEM_HOST or
	 * ZSM_MEM_CUDA; dmabuf_fd >= 0 with its offset for a dma-buf).
	 * 0 and *out holding one reference, or -errno (logged).
	 */
	int (*reg_mr)(struct zsm_comm *c, void *data, size_t size, int type,
		      int dmabuf_fd, uint64_t offset, struct zsm_mr **out);
	/* The last reference to mr is gone; the engine lock is held. */
	void (*mr_free)(struct zsm_mr *mr);
	/* deregMr of mr on c, before its reference goes (may be NULL): the
	 * peer may hold what it opened for it. */
	void (*mr_forget)(struct zsm_comm *c, struct zsm_mr *mr);
	/*
	 * iflush of n buffers: 0 with *flush 0 when nothing needs reading
	 * back; 0 with *flush 1 and req filled as a ZSM_REQ_FLUSH to post;
	 * -errno (logged).  With req NULL only whether one may be needed
	 * (before the core looks the registrations up).
	 */
	int (*flush)(struct zsm_comm *c, int n, void **data, const int *sizes,
		     struct zsm_mr **mrs, struct zsm_req *req, int *flush);
	/* Whether c needs a registration for every buffer. */
	int (*needs_mr)(const struct zsm_comm *c);
	/*
	 * The comm no longer uses link tp of this transport (it moved to
	 * another, or closes): no call comes back for it from here on, and
	 * the transport frees it once nothing refers to it.  Engine.
	 */
	void (*drop_link)(void *tp);
	/*
	 * regMr of a window c's peer puts into and gets from: like reg_mr,
	 * with *win filled for the peer.  NULL, or -EOPNOTSUPP (said), where
	 * the transport has no one-sided operations.
	 */
	int (*reg_window)(struct zsm_comm *c, void *data, size_t size,
			  int type, struct zsm_mr **out,
			  struct zsm_rma_window *win);
	/* Whether c's puts may carry signals, and c may get (a get sends
	 * the owner a message too): 0, or -EOPNOTSUPP (said). */
	int (*can_signal)(struct zsm_comm *c);
	/* Said after the peer when a comm connects on it (NULL: nothing). */
	const char *connected_note;
};

/* What the core knows of the process at the other end of a comm. */
struct zsm_peer {
	uint64_t host_hash;
	uint32_t pid;
	int same_host;
	uint32_t comm_id; /* its comm, for messages */
};

struct zsm_close_wait;

struct zsm_comm {
	uint8_t type; /* enum zsm_comm_type */
	/* NCCL's handle for it, 0 before it is given out and once closed:
	 * written by the caller's thread, read by the engine's when it frees
	 * a comm NCCL never closed (teardown), to close the handle too. */
	_Atomic uint64_t handle;
	/* Set once its handle is given out, never cleared: from then on
	 * only its close, in its queue's order, frees it, and expiry spares
	 * it (a closed one's handle is 0 again before that close is run). */
	atomic_int published;
	atomic_int state; /* enum zsm_comm_state */
	atomic_int error; /* -errno once FAILED */
	/* Set by the engine before state turns CONNECTED. */
	const struct zsm_comm_ops *ops;
	void *tp;	    /* the transport's own object */
	/* The link the handshake ran on (net's), while it is not tp; and
	 * the object of a transport offered in the handshake, not yet
	 * taken (the transport choice's, entry/select.c). */
	const struct zsm_comm_ops *setup_ops;
	void *setup;
	void *offer_tp;
	uint32_t id;	    /* ours, for messages (the transport's id) */
	const char *dev;    /* the device's name, for messages */
	struct zsm_peer peer;
	/* NCCL called close: transports cancel what waits for the peer
	 * instead of letting it hold the close back.  Written by the
	 * closer, read by the engine. */
	atomic_int close_asked;
	/* Engine only. */
	struct zsm_proxy_fifo fifo; /* its refused descriptors, in order */
	int closing;
	struct zsm_req close_req;
	struct zsm_close_wait *close_wait;
	struct zsm_req_pool pool; /* its requests */
	struct zsm_comm *next, *prev; /* every comm, for teardown */
};

/* c's data moves through transport ops, on its object tp (whose id and
 * device name messages give); set before c turns CONNECTED. */
void zsm_comm_bind(struct zsm_comm *c, const struct zsm_comm_ops *ops,
		   void *tp, uint32_t id, const char *dev);
/*
 * Engine: c failed with err.  The first failure only: the core records
 * it, says why at WARN naming the transport, the peer and the comm
 * (why NULL: the caller said it already, for many comms at once), and
 * asks the transport to end c's requests.
 */
void zsm_comm_fail(struct zsm_comm *c, int err, const char *why);
/*
 * How often a transport looks whether a comm's peer lives: a quarter of
 * ZSM_PEER_CHECK_MS (the one setting for every transport), at least
 * 10 ms and at most 250 ms.
 */
uint64_t zsm_comm_check_ns(void);
/* acquire-load of c's error (0 while it works). */
int zsm_comm_error(const struct zsm_comm *c);
/* Engine: the transport writes none of c's buffers any more: a waiting
 * close may return (NCCL frees them next). */
void zsm_comm_quiet(struct zsm_comm *c);
/* Engine: the transport is done with c, which is freed. */
void zsm_comm_release(struct zsm_comm *c);
/*
 * Engine: link tp of c's setup transport is gone (freed) while c still
 * owned it.  The comm goes with it: freed when tp carried its data,
 * closed on its other transport when tp was only its handshake's (a
 * listener closing with connections nobody accepted).
 */
void zsm_comm_link_gone(struct zsm_comm *c, void *tp);

/* Engine: publish req's result (req->error, or done); test() may free
 * and reuse req from here on. */
void zsm_req_publish(struct zsm_req *req);
/* Engine: report req failed with err while its transport still holds
 * it; it stays out of the pool until the comm goes. */
void zsm_req_orphan(struct zsm_req *req, int err);
/* Engine: every request of c's pool in turn (live or free). */
struct zsm_req *zsm_req_next(struct zsm_comm *c, struct zsm_req *prev);
/* "send", "receive", "flush", "put", "get"..., for messages. */
const char *zsm_req_what(const struct zsm_req *req);

/*
 * The handshake.  It always runs over net, whose messages carry one
 * opaque offer for the other transports (ZSM_OFFER_BYTES): the
 * transport choice above fills and reads it through the core
 * (core/handshake.c), so net knows no other transport.
 */
#define ZSM_OFFER_BYTES 32
struct zsm_offer {
	uint32_t len;
	uint8_t bytes[ZSM_OFFER_BYTES];
};

/* Connector, building its request: what else c could use. */
void zsm_comm_offer(struct zsm_comm *c, struct zsm_offer *out);
/*
 * Listener lc, a connection request from peer with its offer: a new
 * receive comm (not yet confirmed) for setup link tp of transport ops,
 * and the answer to send back.  0, or -errno (the request is refused).
 */
int zsm_comm_incoming(struct zsm_comm *lc, const struct zsm_comm_ops *ops,
		      void *tp, uint32_t id, const struct zsm_peer *peer,
		      const struct zsm_offer *offer, struct zsm_comm **out,
		      struct zsm_offer *answer);
/*
 * Connector c, the listener's answer: c's transport is chosen (the
 * setup link's unless the answer offers another that works here), its
 * state turns CONNECTED, and *done tells the listener which.
 */
void zsm_comm_answered(struct zsm_comm *c, const struct zsm_peer *peer,
		       const struct zsm_offer *answer, struct zsm_offer *done);
/* Listener's receive comm c, the connector's word: c is CONNECTED. */
void zsm_comm_confirmed(struct zsm_comm *c, const struct zsm_offer *done);

/* Take a reference to mr (the caller holds one). */
void zsm_mr_hold(struct zsm_mr *mr);
/* Drop one; the last frees it through its transport (put takes the
 * engine lock, put_locked runs under it). */
void zsm_mr_put(struct zsm_mr *mr);
void zsm_mr_put_locked(struct zsm_mr *mr);

#endif
