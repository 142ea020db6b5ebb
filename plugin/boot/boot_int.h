/* SPDX-License-Identifier: MIT */
/*
 * Inside the bootstrap: the id's layout, the wire messages and the socket
 * helpers.  Every integer on the wire and in the id is little-endian, so
 * ranks of either byte order agree.
 */
#ifndef ZSM_BOOT_BOOT_INT_H
#define ZSM_BOOT_BOOT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "boot/boot.h"

#define ZSM_BOOT_MAGIC 0x7a736d62u /* "zsmb" */
#define ZSM_BOOT_VERSION 1

/* An IPv4 or IPv6 address and port as it travels. */
struct zsm_boot_addr {
	uint16_t family; /* 4 or 6 */
	uint16_t port;	 /* host order in memory, little-endian on the wire */
	uint8_t ip[16];	 /* IPv4 in the first 4 bytes */
};

/* What the 128 opaque bytes of zsm_boot_id hold (decoded). */
struct zsm_boot_id_fields {
	uint32_t magic;
	uint32_t version;
	struct zsm_boot_addr addr;
	uint32_t pad; /* explicit, so that no byte of the id is undefined */
	uint64_t nonce;
};

/* Rank r's first words to rank 0. */
struct zsm_boot_hello {
	uint32_t magic;
	uint32_t version;
	uint64_t nonce;
	uint32_t rank;
	uint32_t nranks;
	struct zsm_boot_addr addr; /* where rank r listens */
	uint32_t pad; /* explicit, so that every byte sent is defined */
};

/* Rank 0's answer; with status 0 the table of nranks addresses follows. */
struct zsm_boot_reply {
	uint32_t magic;
	int32_t status; /* 0 or -errno */
	uint32_t nranks;
	uint32_t pad;
};

/*
 * Heads every message after init, so that a rank whose calls do not match
 * the others' (another operation, size or root) fails instead of reading
 * the wrong bytes.
 */
struct zsm_boot_msg {
	uint32_t magic;
	uint16_t op;
	uint16_t root;
	uint32_t seq;
	uint32_t pad;
	uint64_t bytes;
};

enum { ZSM_BOOT_OP_ALLGATHER = 1, ZSM_BOOT_OP_BCAST = 2 };

struct zsm_boot {
	int rank;
	int nranks;
	int timeout_ms;
	int err;	/* first failure, 0 while usable */
	uint32_t seq;	/* collective calls made, checked on each message */
	int listen_fd;	/* this rank's own listener, for later direct links */
	int *fds;	/* rank 0: one per rank (fds[0] unused); else fds[0] */
	struct zsm_boot_addr *addrs; /* every rank's listener */
};

/* Id encoding: 0, or -EINVAL with a WARN when it is not a zsm id. */
void zsm_boot_id_encode(const struct zsm_boot_id_fields *f,
			struct zsm_boot_id *id);
int zsm_boot_id_decode(const struct zsm_boot_id *id,
		       struct zsm_boot_id_fields *f);
/* The listener zsm_boot_id_new opened for this nonce, now the caller's;
 * -1 when there is none (an id from the environment). */
int zsm_boot_id_take_listener(uint64_t nonce);
/* 64 random bits from getrandom. */
int zsm_boot_id_nonce(uint64_t *nonce);

/* Wire byte order for the structs above, in place (both directions). */
void zsm_boot_addr_swap(struct zsm_boot_addr *a);
void zsm_boot_hello_swap(struct zsm_boot_hello *h);
void zsm_boot_reply_swap(struct zsm_boot_reply *r);
void zsm_boot_msg_swap(struct zsm_boot_msg *m);

/* "a.b.c.d:port" or "[v6]:port", for messages. */
void zsm_boot_addr_str(const struct zsm_boot_addr *a, char *buf, size_t len);

/* Deadlines are zsm_now_ns() values. */
uint64_t zsm_boot_deadline(int timeout_ms);

/* Record err (the first only) and close every link, which every other
 * rank then sees as a failure of its own call. */
void zsm_boot_fail(struct zsm_boot *b, int err);

/*
 * Sockets: CLOEXEC and non-blocking; every wait polls up to deadline.
 * listen: bind a (port 0 picks one), fill bound with what was bound.
 * connect: retry refused connections until deadline (-ETIMEDOUT).
 * send/recv: all of len or -ETIMEDOUT / -ECONNRESET (peer closed).
 */
int zsm_boot_sock_listen(const struct zsm_boot_addr *a, int *fd,
			 struct zsm_boot_addr *bound);
int zsm_boot_sock_connect(const struct zsm_boot_addr *a, uint64_t deadline,
			  int *fd);
int zsm_boot_sock_accept(int lfd, int *fd);
int zsm_boot_sock_local(int fd, struct zsm_boot_addr *a);
int zsm_boot_sock_send(int fd, const void *buf, size_t len,
		       uint64_t deadline);
int zsm_boot_sock_recv(int fd, void *buf, size_t len, uint64_t deadline);
/* Move what is ready now; *done advances.  0, or -EAGAIN-free errors. */
int zsm_boot_sock_recv_some(int fd, void *buf, size_t len, size_t *done);

#endif
