/* SPDX-License-Identifier: MIT */
/*
 * The libfabric transport: devices (one per libfabric domain), one RDM
 * endpoint per device shared by every comm of the process, comms, requests
 * and memory registrations.
 *
 * Wire protocol.  Every message is a tagged message on the shared endpoint.
 * A 48-bit tag (cxi offers 48, others 64) reads, from the top:
 *   1 bit  control flag
 *   23 bits comm id at the receiving endpoint
 *   24 bits NCCL tag (data) or message type (control)
 * A receive comm's id makes its tags unique on the endpoint, so receives
 * are posted from any source; libfabric matches each tag's messages in
 * posting order, which is NCCL's matching rule, and NCCL's tag picks the
 * buffer inside a grouped receive.
 *
 * Connection: listen() posts a control receive on a fresh listen id and
 * puts {magic, version, nonce, id, pid, host hash, address} in the handle.
 * connect() sends CONN_REQ {nonce, its own id, pid, host hash, address}
 * there; the listener's engine makes a receive comm with a fresh id and
 * answers CONN_ACK {id, pid, host hash}.  connect() completes when the ACK
 * arrives; accept() when the comm exists.  Each side learns from the
 * other's message whether its peer shares its host (common/host.h).
 */
#ifndef ZSM_NET_H
#define ZSM_NET_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include "ce/ce.h"
#include "core.h"
#include "net/net_fi_lib.h"
#include "net/net_hmem.h"
#include "proxy/proxy.h"

#define ZSM_NET_MAX_DEVS 32
#define ZSM_NET_ADDR_MAX 64

#define ZSM_TAG_BITS_USER 24
#define ZSM_TAG_BITS_ID 23
#define ZSM_TAG_CTRL (1ULL << 47)
#define ZSM_TAG_USER_MAX ((1U << ZSM_TAG_BITS_USER) - 1)
#define ZSM_TAG_ID_MAX ((1U << ZSM_TAG_BITS_ID) - 1)

enum zsm_ctrl_type {
	ZSM_CTRL_CONN_REQ = 1,
	ZSM_CTRL_CONN_ACK = 2,
	ZSM_CTRL_PING = 3,
};

#define ZSM_HANDLE_MAGIC 0x314d535aU /* "ZSM1" */
/*
 * Version of the wire: the handle and the control messages together, so a
 * connector refuses a handle from another version before any message of a
 * layout it does not know is sent.  2: control messages carry host_hash and
 * pid, and handles carry a real host_hash (1 sent 0).  magic and version
 * keep their offsets in every version, so either side can name the other's.
 */
#define ZSM_HANDLE_VERSION 3

/* The 128-byte connection handle NCCL ships from listener to connector. */
struct zsm_net_handle {
	uint32_t magic;
	uint16_t version;
	uint16_t addr_len;
	uint32_t listen_id;
	uint32_t nonce;
	uint32_t pid;
	/* Connector-side state, kept here because NCCL retries connect()
	 * with the same buffer: 0 = not started, else our pending comm id. */
	uint32_t conn_id;
	uint64_t host_hash;
	uint8_t addr[ZSM_NET_ADDR_MAX];
	uint8_t reserved[32];
};
_Static_assert(sizeof(struct zsm_net_handle) == NCCL_NET_HANDLE_MAXSIZE,
	       "handle must fill exactly NCCL's 128 bytes");
_Static_assert(offsetof(struct zsm_net_handle, version) == 4 &&
		       offsetof(struct zsm_net_handle, listen_id) == 8 &&
		       offsetof(struct zsm_net_handle, nonce) == 12 &&
		       offsetof(struct zsm_net_handle, pid) == 16 &&
		       offsetof(struct zsm_net_handle, conn_id) == 20 &&
		       offsetof(struct zsm_net_handle, host_hash) == 24 &&
		       offsetof(struct zsm_net_handle, addr) == 32,
	       "handle layout is wire format: change ZSM_HANDLE_VERSION");

/* Encode/decode, unit tested.  Decode refuses foreign or damaged handles. */
void zsm_net_handle_encode(struct zsm_net_handle *h, uint32_t listen_id,
			   uint32_t nonce, const void *addr, size_t addr_len,
			   uint64_t host_hash);
int zsm_net_handle_check(const struct zsm_net_handle *h);

/* Control message payload: CONN_REQ and CONN_ACK (PING has none). */
struct zsm_ctrl_msg {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t nonce;
	uint32_t id;        /* the sender's comm id */
	uint32_t addr_len;  /* CONN_REQ only */
	int32_t status;
	uint64_t host_hash; /* the sender's zsm_host_hash() */
	uint32_t pid;       /* the sender's process id */
	int32_t ce_fd;      /* CONN_REQ: the ce window's fd in the sender, or -1 */
	uint64_t ce_addr;   /* CONN_REQ: the window's address in the sender */
	uint32_t ce_flags;  /* CONN_ACK: ZSM_CTRL_CE_ON when ce is used */
	uint32_t reserved;  /* 0: keeps addr 8-aligned */
	uint8_t addr[ZSM_NET_ADDR_MAX]; /* CONN_REQ only, last */
};
#define ZSM_CTRL_CE_ON 1u
_Static_assert(offsetof(struct zsm_ctrl_msg, version) == 4 &&
		       offsetof(struct zsm_ctrl_msg, type) == 6 &&
		       offsetof(struct zsm_ctrl_msg, nonce) == 8 &&
		       offsetof(struct zsm_ctrl_msg, id) == 12 &&
		       offsetof(struct zsm_ctrl_msg, addr_len) == 16 &&
		       offsetof(struct zsm_ctrl_msg, status) == 20 &&
		       offsetof(struct zsm_ctrl_msg, host_hash) == 24 &&
		       offsetof(struct zsm_ctrl_msg, pid) == 32 &&
		       offsetof(struct zsm_ctrl_msg, ce_fd) == 36 &&
		       offsetof(struct zsm_ctrl_msg, ce_addr) == 40 &&
		       offsetof(struct zsm_ctrl_msg, ce_flags) == 48 &&
		       offsetof(struct zsm_ctrl_msg, addr) == 56 &&
		       sizeof(struct zsm_ctrl_msg) == 120,
	       "control message layout is wire format: change "
	       "ZSM_HANDLE_VERSION");
/* Bytes a control message must have before its address. */
#define ZSM_CTRL_HDR_LEN offsetof(struct zsm_ctrl_msg, addr)

static inline uint64_t zsm_tag_data(uint32_t id, int tag)
{
	return ((uint64_t)id << ZSM_TAG_BITS_USER) | (uint32_t)tag;
}

static inline uint64_t zsm_tag_ctrl(uint32_t id, enum zsm_ctrl_type t)
{
	return ZSM_TAG_CTRL | ((uint64_t)id << ZSM_TAG_BITS_USER) | t;
}

struct zsm_net_dev {
	struct fi_info *info; /* the chosen provider offer, dup'ed */
	char name[64];
	char *pci_path;
	uint64_t guid;
	int speed_mbps;
	int hmem;	       /* info is the provider's FI_HMEM offer */
	int read;	       /* info has RMA reads, which flush */
	struct zsm_net_hmem_plan gdr; /* GPU buffers over this device */
	struct zsm_net_ep *ep; /* opened on first listen/connect */
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

/* Kind of a libfabric operation, from its context. */
enum zsm_net_op_kind {
	ZSM_OP_SEND,
	ZSM_OP_RECV,
	ZSM_OP_CTRL_RECV,
	ZSM_OP_CTRL_SEND,
	ZSM_OP_FLUSH,
};

struct zsm_net_comm;
struct zsm_ce_chan;
struct zsm_net_req;

struct zsm_net_op {
	struct fi_context2 fi_ctx; /* first: FI_CONTEXT2 mode */
	struct zsm_net_req *req;
	void *owner; /* comm or listen for control ops */
	uint8_t kind;
	uint8_t index;
	uint8_t posted;
};

struct zsm_net_mr;

struct zsm_net_ep {
	struct zsm_net_dev *dev;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	uint8_t addr[ZSM_NET_ADDR_MAX];
	size_t addr_len;
	uint32_t next_id;
	uint64_t pass_ns;            /* when the current engine pass began */
	int nctrl_pending;           /* comms with a control send to retry */
	uint64_t next_peer_check_ns;
	int needs_mr; /* FI_MR_LOCAL: every buffer needs a descriptor */
	uint64_t mr_mode;
	struct zsm_net_comm *comms; /* every comm, for teardown */
	struct zsm_net_mr *mrs;	    /* every registration, for teardown */
	struct zsm_mr_cache *mr_cache;
	/* regMrDmaBuf's fd and the address of its byte 0, for the cache's
	 * registration callback; -1 and NULL otherwise (engine lock). */
	int dmabuf_fd;
	void *dmabuf_base;
	int dmabuf_refused; /* the provider refused one: no more tries */
	/* Flushes (dev->read): reads of our own memory land in flush_buf,
	 * sent to ourselves at self. */
	fi_addr_t self;
	void *flush_buf;
	struct fid_mr *flush_mr;
	void *flush_desc;
};

int zsm_net_ep_get(struct zsm_net_dev *dev, struct zsm_net_ep **out);
void zsm_net_ep_close(struct zsm_net_ep *ep);
uint32_t zsm_net_ep_new_id(struct zsm_net_ep *ep);
int zsm_net_ep_progress(struct zsm_net_ep *ep);
int zsm_net_ep_av_insert(struct zsm_net_ep *ep, const void *addr,
			 fi_addr_t *out);

enum zsm_req_type {
	ZSM_REQ_SEND = 1,
	ZSM_REQ_RECV = 2,
	ZSM_REQ_CLOSE = 3,
	ZSM_REQ_FLUSH = 4, /* a read of our own memory: iflush */
};

/* Request states published to test(); negative values are -errno. */
#define ZSM_REQ_PENDING 1
#define ZSM_REQ_DONE 0

struct zsm_net_req {
	struct zsm_desc desc; /* first: the queue carries requests */
	struct zsm_net_comm *comm;
	atomic_int state;
	uint32_t handle_index; /* its slot (common/handle.h), for life */
	uint8_t type;
	uint8_t n;
	uint8_t remaining; /* engine only */
	uint8_t deferred;  /* engine only: refused by the provider once */
	/* Engine: its send is left with a dead peer's provider, which may
	 * never complete it; test() must not recycle it. */
	atomic_int orphan;
	int error;         /* engine only: first failure */
	int sizes[ZSM_MAX_RECVS];
	void *data[ZSM_MAX_RECVS];
	size_t len[ZSM_MAX_RECVS];
	int tag[ZSM_MAX_RECVS];
	void *mr_desc[ZSM_MAX_RECVS];
	struct zsm_net_op ops[ZSM_MAX_RECVS];
	/* Each buffer's registration, held until the request is freed. */
	struct zsm_net_mr *mh[ZSM_MAX_RECVS];
	/* Flush: the remote side of the read (address and key). */
	uint64_t rma_addr;
	uint64_t rma_key;
	struct zsm_net_req *next_free;
	/* ce comms, engine only: the channel's list, and a send's number. */
	struct zsm_net_req *ce_next;
	uint64_t ce_seq;
};

enum zsm_comm_state {
	ZSM_COMM_CONNECTING,
	ZSM_COMM_CONNECTED,
	ZSM_COMM_FAILED,
};

enum zsm_comm_type {
	ZSM_COMM_SEND = 1,
	ZSM_COMM_RECV = 2,
	ZSM_COMM_LISTEN = 3,
};

#define ZSM_REQ_SLAB 32

struct zsm_net_req_slab {
	struct zsm_net_req_slab *next;
	struct zsm_net_req reqs[ZSM_REQ_SLAB];
};

struct zsm_net_comm {
	uint8_t type;
	/* NCCL's handle for it, 0 before it is given out and once closed. */
	uint64_t handle;
	struct zsm_net_ep *ep;
	struct zsm_net_comm *ep_next; /* ep->comms, engine lock */
	uint32_t local_id;            /* tags we receive on */
	uint32_t peer_id;             /* tags the peer receives on */
	uint32_t nonce;
	fi_addr_t peer;
	/* The peer's host and process, from its CONN_REQ or CONN_ACK; set by
	 * the engine before state turns CONNECTED, read-only after. */
	uint64_t peer_host_hash;
	uint32_t peer_pid;
	int same_host;
	/* The same-host channel (plugin/ce) data requests use, or NULL for
	 * net; set by the engine before state turns CONNECTED. */
	struct zsm_ce_chan *ce;
	atomic_int state;
	atomic_int error; /* -errno once FAILED */
	uint64_t started_ns;
	/* Engine only. */
	struct zsm_proxy_fifo fifo; /* its refused descriptors, in order */
	int ops_posted;      /* every posted operation: freeing waits */
	int data_ops;        /* posted sends and receives */
	int deferred;        /* requests the provider refused, not posted */
	int closing;
	uint8_t ctrl_pending; /* control message still to send */
	uint64_t last_event_ns;
	uint64_t probe_refused_ns; /* first refused liveness probe, or 0 */
	struct zsm_net_req close_req;
	struct zsm_net_op ctrl_op;
	struct zsm_net_op ctrl_send_op;
	struct zsm_ctrl_msg ctrl_in;
	struct zsm_ctrl_msg ctrl_out;
	/* Listen comms: receive comms made but not yet accepted. */
	struct zsm_net_comm *accept_head;
	struct zsm_net_comm *accept_next;
	/* Request pool: NCCL threads, under pool_lock. */
	pthread_mutex_t pool_lock;
	struct zsm_net_req *free_reqs;
	struct zsm_net_req_slab *slabs;
	int nreqs;
};

extern const struct zsm_transport_ops zsm_net_ops;
extern struct zsm_net_topo zsm_net_topo;

int zsm_net_comm_listen(int dev, struct zsm_net_handle *h,
			struct zsm_net_comm **out);
int zsm_net_comm_connect(int dev, struct zsm_net_handle *h,
			 struct zsm_net_comm **out);
int zsm_net_comm_accept(struct zsm_net_comm *lc, struct zsm_net_comm **out);
int zsm_net_comm_close(struct zsm_net_comm *comm);
/* Engine side: free the comm once nothing refers to it any more. */
void zsm_net_comm_maybe_free(struct zsm_net_comm *comm);
void zsm_net_comm_free(struct zsm_net_comm *comm);
void zsm_net_comm_fail(struct zsm_net_comm *comm, int err);
/* Engine side of control messages and comm teardown. */
void zsm_net_ctrl_complete(struct zsm_net_op *op, int err, size_t len);
int zsm_net_comm_post_close(struct zsm_net_comm *comm);
void zsm_net_comm_check_peers(struct zsm_net_ep *ep, uint64_t now);
void zsm_net_comm_retry_ctrl(struct zsm_net_ep *ep);

struct zsm_net_req *zsm_net_req_alloc(struct zsm_net_comm *comm);
void zsm_net_req_free(struct zsm_net_req *req);
void zsm_net_req_pool_fini(struct zsm_net_comm *comm);
void zsm_net_req_op_done(struct zsm_net_op *op, int err, size_t len);
void zsm_net_req_undefer(struct zsm_net_req *req);
/* "send", "receive" or "flush", for messages. */
const char *zsm_net_req_what(const struct zsm_net_req *req);
void zsm_net_req_orphan(struct zsm_net_req *req, int err);

/*
 * Memory registration.  NCCL's deregMr drops its reference; each request
 * using the registration holds one until it is freed, so a registration
 * dropped while a transfer still uses it lives until that transfer ends.
 */
struct zsm_net_mr {
	atomic_int refs;
	uint64_t handle; /* NCCL's, 0 once deregistered */
	struct zsm_net_mr *ep_next, **ep_prev; /* ep->mrs, engine lock */
	struct zsm_net_ep *ep;
	struct zsm_mr_entry *entry;
	void *desc;
	int type;
	int gpu; /* device memory on a ce comm: gpu_mr, no provider entry */
	struct zsm_ce_gpu_mr gpu_mr;
};
int zsm_net_mr_reg(struct zsm_net_ep *ep, void *data, size_t size, int type,
		   struct zsm_net_mr **out);
/* A ce registration of GPU memory (no provider entry), taking g. */
int zsm_net_mr_adopt_gpu(struct zsm_net_ep *ep, const struct zsm_ce_gpu_mr *g,
			 struct zsm_net_mr **out);
void zsm_net_mr_hold(struct zsm_net_mr *mr);
/* Drop a reference; the last frees it (put takes the engine lock). */
void zsm_net_mr_put(struct zsm_net_mr *mr);
void zsm_net_mr_put_locked(struct zsm_net_mr *mr);
/* Teardown, engine lock held: free every registration left on ep. */
void zsm_net_mr_close_all(struct zsm_net_ep *ep);
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

#endif
