/* SPDX-License-Identifier: MIT */
/*
 * zsm-bench --raw: the same point-to-point traffic straight on libfabric's
 * tagged interface, with the provider and domain the plugin would pick, so
 * that the plugin's numbers have a ceiling to be compared with.  One
 * endpoint per process carries both directions.  With --rma it writes
 * into the peer's windows and signals as zsm does (bench_raw_rma.c).
 *
 * Calls return 0 or a negative libfabric error code (see fi_strerror).
 */
#ifndef ZSM_BENCH_RAW_H
#define ZSM_BENCH_RAW_H

#include <stddef.h>
#include <stdint.h>

/* Enough for the addresses of every provider zsm ranks. */
#define BENCH_RAW_ADDR_MAX 256

struct bench_raw;

/*
 * Pick an offer: ZSM_PROVIDER (full name, or a core name meaning
 * <core>;ofi_rxm), else FI_PROVIDER, else the plugin's order of
 * preference; ZSM_DOMAIN, a comma list, limits the domains.  Opens the
 * endpoint: with rma, on the offer zsm's RMA endpoint takes (with RMA and
 * the message order its signals need), which must be one zsm signals on
 * by saw.  On failure *why says what went wrong.
 */
int bench_raw_open(struct bench_raw **out, int rma, const char **why);
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

/*
 * --rma.  A window as its peer needs it: the provider's address of byte
 * 0, the remote key, the size, and its name for signals.
 */
struct bench_raw_win {
	uint64_t addr;
	uint64_t key;
	uint64_t size;
	uint64_t id;
};
/* How zsm signals on this offer ("saw"). */
const char *bench_raw_mech(const struct bench_raw *r);
/* Register buf for peers' writes and signals (and as a write's source). */
int bench_raw_win_reg(struct bench_raw *r, void *buf, size_t len,
		      struct bench_raw_win *win);
/*
 * Write len bytes from src (in a window) at dst_off of the peer's window
 * dst; with sig, then add 1 to the word at sig_off of the peer's window
 * sig by a message the provider delivers after the write.  One request
 * for both; *req NULL when the provider said "later".
 */
int bench_raw_put(struct bench_raw *r, void *src, size_t len,
		  const struct bench_raw_win *dst, uint64_t dst_off,
		  const struct bench_raw_win *sig, uint64_t sig_off,
		  void **req);
/* Keep n receives posted for the peer's signals, applied by progress. */
int bench_raw_sig_listen(struct bench_raw *r, int n);
/* Poll once: completions, and the signals that came. */
int bench_raw_progress(struct bench_raw *r);

const char *bench_raw_strerror(int err);

#endif
