/* SPDX-License-Identifier: MIT */
/*
 * zsm-bench --raw: the same point-to-point traffic straight on libfabric's
 * tagged interface, with the provider and domain the plugin would pick, so
 * that the plugin's numbers have a ceiling to be compared with.  One
 * endpoint per process carries both directions.
 *
 * Calls return 0 or a negative libfabric error code (see fi_strerror).
 */
#ifndef ZSM_BENCH_RAW_H
#define ZSM_BENCH_RAW_H

#include <stddef.h>

/* Enough for the addresses of every provider zsm ranks. */
#define BENCH_RAW_ADDR_MAX 256

struct bench_raw;

/*
 * Pick an offer: ZSM_PROVIDER (full name, or a core name meaning
 * <core>;ofi_rxm), else FI_PROVIDER, else the plugin's order of
 * preference; ZSM_DOMAIN, a comma list, limits the domains.  Opens the
 * endpoint.  On failure *why says what went wrong.
 */
int bench_raw_open(struct bench_raw **out, const char **why);
void bench_raw_close(struct bench_raw *r);
const char *bench_raw_provider(const struct bench_raw *r);
const char *bench_raw_domain(const struct bench_raw *r);
size_t bench_raw_max_msg(const struct bench_raw *r);

/* This endpoint's address (*len in: room, out: used); the peer's in. */
int bench_raw_name(struct bench_raw *r, void *addr, size_t *len);
int bench_raw_set_peer(struct bench_raw *r, const void *addr);

/* Register a buffer when the provider wants local descriptors. */
int bench_raw_reg(struct bench_raw *r, void *buf, size_t len);

/* Post one transfer; *req is NULL when the provider said "later". */
int bench_raw_isend(struct bench_raw *r, void *buf, size_t len, void **req);
int bench_raw_irecv(struct bench_raw *r, void *buf, size_t len, void **req);
/*
 * Poll the completion queue once; when req is done, *done is 1, *len the
 * bytes it carried, and req is released.  A failed transfer is an error.
 */
int bench_raw_test(struct bench_raw *r, void *req, int *done, size_t *len);

const char *bench_raw_strerror(int err);

#endif
