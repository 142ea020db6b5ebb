/* SPDX-License-Identifier: MIT */
/*
 * A hostile process's view of a zsm endpoint: its own tcp;ofi_rxm
 * endpoint on loopback, the victim's address from a handle NCCL's
 * bootstrap would carry, and tagged messages of its choosing.  It knows
 * zsm's tag layout and the wire versions' control messages (3, before
 * issue 12; 4; 5, which adds a credit; 6, whose other transports'
 * fields are one opaque offer; and 7, whose control messages are 6's
 * with a SIGNAL type added), so each case can attack whichever plugin it
 * runs against.
 */
#ifndef ZSM_HARDEN_ATTACKER_H
#define ZSM_HARDEN_ATTACKER_H

#include <stddef.h>
#include <stdint.h>

struct h_attacker;

/* The victim's handle: version, listen id, nonce, pid and address. */
struct h_victim {
	unsigned version;
	uint32_t listen_id;
	uint32_t nonce;
	uint32_t pid;
	uint64_t host_hash;
	unsigned char addr[64];
	size_t addr_len;
};

void h_victim_from_handle(struct h_victim *v, const void *handle);

/* The provider the attacker speaks: the one zsm picks on lo. */
const char *h_attacker_prov(void);
/* 0, or -1 with the reason on stderr. */
int h_attacker_open(struct h_attacker **out, const struct h_victim *v);
void h_attacker_close(struct h_attacker *a);
/* Our own endpoint address (for messages that name it). */
const void *h_attacker_addr(const struct h_attacker *a, size_t *len);

/* A data message for comm id, NCCL tag, with remote CQ data if cqd. */
int h_attacker_data(struct h_attacker *a, uint32_t id, int tag,
		    const void *buf, size_t len, int with_cqd, uint64_t cqd);
/* A control message of type for comm id, raw bytes. */
int h_attacker_ctrl(struct h_attacker *a, uint32_t id, unsigned type,
		    const void *buf, size_t len);
/* Take what the provider has for us (answers to our messages) and drop
 * it: an attacker that never reads fills its own queues. */
void h_attacker_poll(struct h_attacker *a);

/*
 * A connection request to the victim's listener as its wire version
 * writes one, from our endpoint (comm id src, pid, host hash), naming a
 * ce window fd and address in process pid (version 3), or asking for ce
 * (versions 4 to 7; ce_addr is then the word to read).  Returns its length, or 0 for an unknown version.
 */
size_t h_attacker_conn_req(const struct h_attacker *a, const struct h_victim *v,
			   void *buf, uint32_t src, uint32_t pid, int ce_fd,
			   uint64_t ce_addr, uint64_t key);
/* Where the address sits in a connection request of version. */
size_t h_attacker_req_addr_offset(unsigned version);
/* Room junk_ctrl's messages take. */
#define H_JUNK_BYTES 256
/* The i-th of five kinds of junk control message for the victim's
 * listener, written into m (H_JUNK_BYTES): foreign bytes, short, of
 * another version, with the wrong nonce, for a comm that does not exist.
 * Returns its length, and in *id the comm id its tag names. */
size_t h_attacker_junk_ctrl(const struct h_attacker *a,
			    const struct h_victim *v, unsigned char *m,
			    unsigned long i, uint32_t *id);
/* A connection answer to connector comm dst claiming receive comm id. */
size_t h_attacker_conn_ack(const struct h_victim *v, void *buf, uint32_t dst,
			   uint32_t id, uint64_t key);

#endif
