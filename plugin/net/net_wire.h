/* SPDX-License-Identifier: MIT */
/*
 * net's wire format (ZSM_HANDLE_VERSION; docs/design.md, "Wire protocol",
 * gives the same numbers, and test/abi/wire-doc checks them).  Every
 * message is a tagged message on the shared endpoint.  A 48-bit tag (cxi
 * offers 48, others 64) reads, from the top:
 *   1 bit   control flag
 *   23 bits comm id at the receiving endpoint (random, see idmap.h)
 *   24 bits NCCL tag (data) or message type (control)
 * Data receives are posted for the peer's address (FI_DIRECTED_RECV) and
 * a receive comm's id makes its tags unique on the endpoint; libfabric
 * matches each tag's messages in posting order, which is NCCL's matching
 * rule, and NCCL's tag picks the buffer inside a grouped receive.  Where
 * the provider carries remote CQ data, each data message carries its
 * receive comm's 31-bit data key (and a checksum with ZSM_CHECKSUM):
 * a message without it is dropped.
 *
 * Control messages arrive on receives the endpoint posts for any comm id
 * (net_ctrl.c), each as large as the provider's largest eager message so
 * that nothing a peer sends can truncate one.  Every control message names
 * the comm it is for and carries that comm's 64-bit key (a CONN_REQ: the
 * listener's nonce from the handle); anything else is dropped and counted.
 *
 *   listener                                   connector
 *   listen(): id L, nonce N
 *     handle {magic, version, L, N, pid, host, address} --(NCCL)-->
 *                                              connect(): comm S, key Ks
 *           <------ CONN_REQ {N, S, Ks, pid, host, address, offer, paths}
 *   comm R (key Kr, data key Dr), the core's answer to the offer
 *     CONN_ACK {Ks, R, Kr, Dr, pid, host, answer, credit, paths n} -->
 *                                              the core takes what the
 *                                              answer offers, or not;
 *                                              connect() returns S
 *           <------ CONN_DONE {Kr, what was taken}
 *   accept() returns R
 *   for each path p in 1..n-1 (net_path.h), R's link Rp:
 *     PATH {Ks, p, Rp, Krp, Drp, address p} -->  S's link Sp on path p
 *           <------ PATH {Krp, p, Sp, Ksp, address p}  (on path p)
 *
 * The offer, answer and word of what was taken are opaque to net: the
 * transport choice fills and reads them through the core's hooks
 * (another transport for the data of a same-host comm; entry/select.c).
 *
 * A CONN_REQ that names no listener, or the wrong nonce, is answered at
 * once with a refusing CONN_ACK.  PING and PONG probe a silent peer
 * (net_peer.c).  CONN_ACK and GRANT tell a sender how many data
 * messages it may have sent in all (net_credit.h).  SIGNAL, shorter than
 * the rest, applies a put's signal (net_rma.c); SIGNALED tells its sender
 * how many of the SIGNALs that asked for it were applied.  GET, of
 * SIGNAL's layout, asks the owner of a window to make bytes ready for a
 * read, and GET_READY answers (net_rma_get.c).  RMA_REFUSED tells a
 * window's owner that its provider refused one of our writes or reads
 * (net_rma.c).  CLOSE tells a comm's
 * peer that NCCL closed it (net_comm.c): it goes behind every message
 * the comm sent, and a send comm's counts its data messages, so that
 * the receiver knows which of its receives nothing will match; a
 * receive comm's counts the messages that had arrived, so that the
 * sender knows which of its sends were taken.
 */
#ifndef ZSM_NET_WIRE_H
#define ZSM_NET_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "core/limits.h"
#include "core/transport.h"

#define ZSM_NET_ADDR_MAX 64

#define ZSM_TAG_BITS_USER 24
#define ZSM_TAG_BITS_ID 23
#define ZSM_TAG_CTRL (1ULL << 47)
#define ZSM_TAG_USER_MAX ((1U << ZSM_TAG_BITS_USER) - 1)
#define ZSM_TAG_ID_MAX ((1U << ZSM_TAG_BITS_ID) - 1)
_Static_assert(ZSM_TAG_USER_MAX >= ZSM_TAG_MAX,
	       "every tag the core takes fits the wire's");
/* A control receive's ignore mask: any comm id, any type. */
#define ZSM_TAG_CTRL_IGNORE (ZSM_TAG_CTRL - 1)

enum zsm_ctrl_type {
	ZSM_CTRL_CONN_REQ = 1,
	ZSM_CTRL_CONN_ACK = 2,
	ZSM_CTRL_CONN_DONE = 3,
	ZSM_CTRL_PING = 4,
	ZSM_CTRL_PONG = 5,
	ZSM_CTRL_GRANT = 6, /* receiver to sender: how far it may send */
	ZSM_CTRL_SIGNAL = 7, /* a put's signal, after its writes */
	ZSM_CTRL_GET = 8,    /* initiator to owner: bytes it will read */
	ZSM_CTRL_GET_READY = 9, /* owner to initiator: gets answered */
	ZSM_CTRL_SIGNALED = 10, /* receiver to sender: SIGNALs applied */
	/* sender to receiver: the receiver's provider refused a write or
	 * read of ours (net_rma.c) */
	ZSM_CTRL_RMA_REFUSED = 11,
	ZSM_CTRL_CLOSE = 12,    /* either side: this comm closed */
	/* a comm's path: a receive comm's, from it to its connector; then
	 * the connector's, on that path, to the path's receive comm */
	ZSM_CTRL_PATH = 13,
	ZSM_CTRL_NTYPES,
};

#define ZSM_HANDLE_MAGIC 0x314d535aU /* "ZSM1" */
/*
 * Version of the wire: the handle and the control messages together, so a
 * connector refuses a handle from another version before any message of a
 * layout it does not know is sent.  4: keys in every message, CONN_DONE,
 * the ce window made by the listener.  5: flow control (the credit of
 * CONN_ACK, GRANT).  6: the other transports' fields become one opaque
 * offer of ZSM_OFFER_BYTES.  7: SIGNAL.  8: a SIGNAL names the put
 * before it when its window is staged.  9: GET and GET_READY (a get
 * reads only once the owner answered).  10: a SIGNAL may ask to be
 * acknowledged (its flags), SIGNALED.  11: RMA_REFUSED; a SIGNAL the
 * receiver refuses is answered by a SIGNALED with its error whether or
 * not it asked.  12: CLOSE (a closed comm tells its peer; a send comm's
 * says how many messages it sent, a receive comm's how many arrived).
 * 13: a CONN_ACK's credit may be 0 (a receive comm with no early
 * messages allowed: its peer's comms hold the provider's share, net_dev.c).
 * 14: paths (a CONN_REQ says how many the connector has, a CONN_ACK how
 * many the comm uses; PATH names each other path's comms and addresses).
 * magic and version keep their offsets in every version, so either side
 * can name the other's.
 */
#define ZSM_HANDLE_VERSION 14

/* The 128-byte connection handle NCCL ships from listener to connector. */
struct zsm_net_handle {
	uint32_t magic;
	uint16_t version;
	uint16_t addr_len;
	uint32_t listen_id;
	uint32_t nonce;
	uint32_t pid;
	/* Connector-side state, kept here because NCCL retries connect()
	 * with the same buffer: 0 = not started, else our pending comm id,
	 * and when that connect started. */
	uint32_t conn_id;
	uint64_t host_hash;
	uint8_t addr[ZSM_NET_ADDR_MAX];
	uint64_t conn_start_ns;
	uint8_t reserved[24];
};
_Static_assert(sizeof(struct zsm_net_handle) == ZSM_HANDLE_BYTES,
	       "handle must fill exactly NCCL's 128 bytes");
_Static_assert(offsetof(struct zsm_net_handle, version) == 4 &&
		       offsetof(struct zsm_net_handle, listen_id) == 8 &&
		       offsetof(struct zsm_net_handle, nonce) == 12 &&
		       offsetof(struct zsm_net_handle, pid) == 16 &&
		       offsetof(struct zsm_net_handle, conn_id) == 20 &&
		       offsetof(struct zsm_net_handle, host_hash) == 24 &&
		       offsetof(struct zsm_net_handle, addr) == 32 &&
		       offsetof(struct zsm_net_handle, conn_start_ns) == 96,
	       "handle layout is wire format: change ZSM_HANDLE_VERSION");


/* Every control message, whatever its type (unused fields are 0). */
struct zsm_ctrl_msg {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t src_id;    /* the sending comm: where answers go */
	uint32_t dst_id;    /* the receiving comm (its tag says it too) */
	uint64_t key;	    /* the receiving comm's key (CONN_REQ: nonce) */
	int32_t status;	    /* CONN_ACK: 0, or -errno: refused;
			       GET_READY: 0, or -errno: a get failed;
			       SIGNALED: 0, or -errno: a SIGNAL failed
			       the receiver's comm; RMA_REFUSED: the
			       error the sender's provider gave */
	uint32_t pid;	    /* the sender's process id */
	uint64_t host_hash; /* the sender's zsm_host_hash() */
	uint64_t reply_key; /* REQ, ACK: what messages back must carry;
			       RMA_REFUSED: the key the write named */
	uint32_t data_key;  /* ACK: what data messages to R must carry */
	uint32_t offer_len; /* REQ, ACK, DONE: bytes of offer used */
	union {
		uint64_t credit;  /* ACK, GRANT: data messages the sender
				     may have sent in all; GET_READY: gets
				     the owner answered in all */
		uint64_t applied; /* SIGNALED: SIGNALs with ZSM_SIG_ACK
				     the receiver handled, in all; status
				     says whether it failed on one */
		uint64_t rma_addr; /* RMA_REFUSED: the address the write
				      or read named */
		uint64_t sent;    /* CLOSE: a send comm's data messages
				     posted, a receive comm's arrived */
	};
	uint32_t addr_len;  /* REQ: the connector's address; PATH: the
			       path's endpoint's */
	uint32_t paths;	    /* REQ: the connector's paths; ACK: the
			       comm's (1: none but itself); PATH: which
			       path it names */
	uint8_t addr[ZSM_NET_ADDR_MAX];
	/* REQ: the offer; ACK: the answer; DONE: what was taken. */
	uint8_t offer[ZSM_OFFER_BYTES];
};
_Static_assert(offsetof(struct zsm_ctrl_msg, version) == 4 &&
		       offsetof(struct zsm_ctrl_msg, type) == 6 &&
		       offsetof(struct zsm_ctrl_msg, src_id) == 8 &&
		       offsetof(struct zsm_ctrl_msg, dst_id) == 12 &&
		       offsetof(struct zsm_ctrl_msg, key) == 16 &&
		       offsetof(struct zsm_ctrl_msg, status) == 24 &&
		       offsetof(struct zsm_ctrl_msg, pid) == 28 &&
		       offsetof(struct zsm_ctrl_msg, host_hash) == 32 &&
		       offsetof(struct zsm_ctrl_msg, reply_key) == 40 &&
		       offsetof(struct zsm_ctrl_msg, data_key) == 48 &&
		       offsetof(struct zsm_ctrl_msg, offer_len) == 52 &&
		       offsetof(struct zsm_ctrl_msg, credit) == 56 &&
		       offsetof(struct zsm_ctrl_msg, addr_len) == 64 &&
		       offsetof(struct zsm_ctrl_msg, paths) == 68 &&
		       offsetof(struct zsm_ctrl_msg, addr) == 72 &&
		       offsetof(struct zsm_ctrl_msg, offer) == 136 &&
		       sizeof(struct zsm_ctrl_msg) == 168,
	       "control message layout is wire format: change "
	       "ZSM_HANDLE_VERSION");

/*
 * A put's signal (ZSM_RMA_SIGNAL saw): sent on the send comm's link right
 * after the put's write, which the provider delivers first (FI_ORDER_SAW),
 * to the peer's receive comm, whose engine adds `add` to the 64-bit word
 * at `off` of window `win` (its registration's handle; 0: no signal).
 * A put into a staged window (a GPU window whose remote writes land in a
 * host copy) always sends one, naming its bytes (`put_win`, the address
 * the write used, `put_len`): the engine copies them up to the GPU
 * before it applies the signal.  Under writedata the signal waits for
 * the writes before it to land.  Every SIGNAL asks for a SIGNALED
 * (ZSM_SIG_ACK): its put is done only once the receiver applied it, and
 * under atomic (whose signals into host words the NIC adds) the sender
 * holds its later adds until then.  A receiver answers one SIGNALED for
 * all it applied in a pass; one without the flag (a sender before this
 * rule) gets none.  Small enough to be injected; its first 24 bytes are a control
 * message's.
 *
 * A GET (type ZSM_CTRL_GET) has the same layout and travels the same
 * way, so it comes after every earlier put and notice of the link: its
 * put_win, put_addr and put_len name the bytes the sender will read
 * (the window, the address its read names, the length), win, off and
 * add are 0, writes as for a signal.  The owner checks them against
 * its window, copies a staged window's bytes down into the mirror, and
 * answers with a GET_READY whose credit counts the GETs it answered on
 * that link (status: 0, or the -errno that failed one).
 */
struct zsm_sig_msg {
	uint32_t magic;
	uint16_t version;
	uint16_t type; /* ZSM_CTRL_SIGNAL */
	uint32_t src_id;
	uint32_t dst_id;
	uint64_t key;
	uint64_t win;
	uint64_t off;
	uint64_t add;
	uint64_t put_win;
	uint64_t put_addr;
	uint64_t put_len;
	/* writedata: the writes the sender had posted on the link when it
	 * sent this (each names the receive comm in its remote CQ data):
	 * the engine applies the signal once that many have landed. */
	uint64_t writes;
	uint64_t flags; /* ZSM_SIG_* */
};
/* The sender waits to hear that this was applied (a SIGNALED). */
#define ZSM_SIG_ACK 1ULL
_Static_assert(offsetof(struct zsm_sig_msg, type) ==
			       offsetof(struct zsm_ctrl_msg, type) &&
		       offsetof(struct zsm_sig_msg, src_id) ==
			       offsetof(struct zsm_ctrl_msg, src_id) &&
		       offsetof(struct zsm_sig_msg, dst_id) ==
			       offsetof(struct zsm_ctrl_msg, dst_id) &&
		       offsetof(struct zsm_sig_msg, key) ==
			       offsetof(struct zsm_ctrl_msg, key) &&
		       offsetof(struct zsm_sig_msg, win) == 24 &&
		       sizeof(struct zsm_sig_msg) == 88,
	       "signal message layout is wire format: change "
	       "ZSM_HANDLE_VERSION");

/* Remote CQ data of a data message: the receive comm's 31-bit key, a
 * flag saying whether the top 32 bits hold the payload's CRC32C. */
#define ZSM_CQ_KEY_MASK 0x7fffffffULL
#define ZSM_CQ_HAS_CRC (1ULL << 31)

static inline uint64_t zsm_tag_data(uint32_t id, int tag)
{
	return ((uint64_t)id << ZSM_TAG_BITS_USER) | (uint32_t)tag;
}

static inline uint64_t zsm_tag_ctrl(uint32_t id, enum zsm_ctrl_type t)
{
	return ZSM_TAG_CTRL | ((uint64_t)id << ZSM_TAG_BITS_USER) | t;
}

static inline uint32_t zsm_tag_id(uint64_t tag)
{
	return (uint32_t)(tag >> ZSM_TAG_BITS_USER) & ZSM_TAG_ID_MAX;
}

#endif
