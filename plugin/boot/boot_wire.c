/* SPDX-License-Identifier: MIT */
/* Owns the wire byte order of the bootstrap's messages. */
#include <endian.h>

#include "boot/boot_int.h"

void zsm_boot_hello_swap(struct zsm_boot_hello *h)
{
	h->magic = htole32(h->magic);
	h->version = htole32(h->version);
	h->nonce = htole64(h->nonce);
	h->rank = htole32(h->rank);
	h->nranks = htole32(h->nranks);
	zsm_boot_addr_swap(&h->addr);
}

void zsm_boot_reply_swap(struct zsm_boot_reply *r)
{
	r->magic = htole32(r->magic);
	r->status = (int32_t)htole32((uint32_t)r->status);
	r->nranks = htole32(r->nranks);
}

void zsm_boot_msg_swap(struct zsm_boot_msg *m)
{
	m->magic = htole32(m->magic);
	m->op = htole16(m->op);
	m->root = htole16(m->root);
	m->seq = htole32(m->seq);
	m->bytes = htole64(m->bytes);
}

/* The wire is these structs' bytes: no padding the compiler may leave
 * undefined, and the same sizes on every host. */
_Static_assert(sizeof(struct zsm_boot_addr) == 20, "addr layout");
_Static_assert(sizeof(struct zsm_boot_hello) == 48, "hello layout");
_Static_assert(sizeof(struct zsm_boot_reply) == 16, "reply layout");
_Static_assert(sizeof(struct zsm_boot_msg) == 24, "msg layout");
_Static_assert(sizeof(struct zsm_boot_id_fields) == 40, "id layout");
