/* SPDX-License-Identifier: MIT */
/*
 * What the files of zsm-conformance's ncclNet checks share: the run's
 * options and limits, one rank's plugin and connection (struct lb_ctx), a
 * buffer between guard bytes (struct lb_buf), the LB_* macros that make a
 * wrong result the check's FAIL reason, and the harness helpers of
 * conformance_harness.c.  Each conformance_*.c below holds one family of
 * checks; zsm-conformance.c has their catalog, the command line and main.
 */
#ifndef ZSM_TOOLS_CONFORMANCE_H
#define ZSM_TOOLS_CONFORMANCE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "oob.h"
#include "zsm_client.h"

/* Time limits grow by lb_scale (slow runs: valgrind, sanitizers). */
#define LB_CONNECT_MS (15000 * lb_scale)
#define LB_WAIT_MS (8000 * lb_scale)
#define LB_POST_MS (8000 * lb_scale)
#define LB_PAGE 4096
#define LB_TAIL 256
#define LB_GUARD 0xEE
#define LB_SENTINEL 0x5A5A5A5A
/*
 * NCCL_NET_MAX_REQUESTS (nccl-plugin-abi.md 2.1): a receive comm must
 * take 32 requests in flight, a send comm 32 x maxRecvs.
 */
#define LB_NCCL_REQUESTS 32
/*
 * The largest maxRecvs the kit takes: NCCL hands test() a 64-entry sizes
 * array for a receive (2.5 test), so n can be no larger.
 */
#define LB_RECVS_MAX 64

struct lb_opts {
	const char *plugin;
	int abi;
	int dev;
	int gpu[2]; /* CUDA device of each rank for gpu_buffers */
	/*
	 * --zsm-rules: where NCCL leaves a choice, require the one zsm
	 * makes on every transport (docs/conformance.md, "zsm's rules"):
	 * the outcome, and one WARN line of the plugin per failure.
	 */
	int zsm_rules;
};

/* The run's options, from the command line (zsm-conformance.c's main). */
extern struct lb_opts lb_opts;
/* Every time limit's multiplier (ZSM_TEST_TIME_SCALE; valgrind: 10). */
extern int lb_scale;
/* The check running, for WARN lines; set before each check forks. */
extern const char *lb_check_name;
/* WARN lines of the whole run, in a page the forks share. */
extern atomic_int *lb_warnings;

/* One rank's plugin and the comms of its connection. */
struct lb_ctx {
	struct zsm_client *c;
	int rank;
	int dev;
	/* The device's maxRecvs, in [1, LB_RECVS_MAX] (lb_open checks). */
	int max_recvs;
	void *listen;
	void *send;
	void *recv;
};

/* A buffer with a page of guard bytes before it and LB_TAIL after. */
struct lb_buf {
	unsigned char *base;
	unsigned char *p;
	void *vp; /* = p, for the void *data[] arguments */
	size_t size;
	void *mh;
	void *mh_comm;
};

#define LB_CALL(x, expr)                                                       \
	do {                                                                   \
		int r_ = (expr);                                               \
		if (r_ != ncclSuccess)                                         \
			return oob_fail("line %d: %s returned %s (%d)",        \
					__LINE__, #expr,                       \
					zsm_client_result_str(r_), r_);        \
	} while (0)

#define LB_EXPECT(cond, ...)                                                   \
	do {                                                                   \
		if (!(cond))                                                   \
			return oob_fail(__VA_ARGS__);                          \
	} while (0)

#define LB_OOB(expr)                                                           \
	do {                                                                   \
		if ((expr))                                                    \
			return oob_fail("line %d: out-of-band %s failed",      \
					__LINE__, #expr);                      \
	} while (0)

/* Propagate a non-zero status from a helper. */
#define LB_TRY(expr)                                                           \
	do {                                                                   \
		int s_ = (expr);                                               \
		if (s_ != OOB_PASS)                                            \
			return s_;                                             \
	} while (0)

/* conformance_harness.c: the helpers every check uses. */

/* Sleep ms, EINTR or not. */
void lb_sleep_ms(unsigned ms);
/* Milliseconds since t0, a zsm_client_now_ns() time. */
double lb_ms_since(uint64_t t0);
/* oob's idle hook: test this rank's requests; how many are outstanding. */
int lb_idle(void *arg);
/* Sleep ms, driving this rank's outstanding requests meanwhile. */
void lb_idle_ms(unsigned ms);
/* A WARN line: slow, but within NCCL's rules; counted, never a failure. */
void lb_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The offset of the first of len bytes at p that is not byte, or -1. */
long lb_verify_byte(const unsigned char *p, size_t len, unsigned char byte);
/* A buffer of size bytes with guard bytes around it, or the FAIL. */
int lb_buf_alloc(struct lb_buf *b, size_t size);
/* The guard bytes around b untouched, or a FAIL naming what wrote them. */
int lb_buf_guards(const struct lb_buf *b, const char *what);
/* Register b's bytes (host memory) on comm. */
int lb_buf_reg(struct lb_ctx *x, struct lb_buf *b, void *comm);
/* Deregister b if registered, and free it. */
int lb_buf_free(struct lb_ctx *x, struct lb_buf *b);
/* Load the plugin, tracking its requests, as this rank's active one. */
int lb_client_open(struct lb_ctx *x);
/* Unload what lb_client_open loaded. */
void lb_client_close(struct lb_ctx *x);
/* Load and init the plugin and check the device; no properties yet. */
int lb_load(struct lb_ctx *x, int rank);
/* lb_load, and the device's maxRecvs into x (checked in range). */
int lb_open(struct lb_ctx *x, int rank);
/* Rank listener listens and accepts, the other rank connects. */
int lb_connect_to(struct lb_ctx *x, int listener, void **send,
		  void **recv);
/* One 0 -> 1 connection: rank 1 accepts, rank 0 connects. */
int lb_connect_pair(struct lb_ctx *x, void **send, void **recv);
/* lb_open, a 0 -> 1 connection in x, then a barrier. */
int lb_setup(struct lb_ctx *x, int rank);
/* Close x's comms, finalize and unload the plugin. */
int lb_teardown(struct lb_ctx *x);
/* isend or irecv, retrying a NULL request as NCCL's proxy would. */
int lb_post_send(struct lb_ctx *x, void *comm, void *data, size_t size,
		 int tag, void *mh, void **req);
int lb_post_recv(struct lb_ctx *x, void *comm, int n, void **data,
		 const size_t *sizes, const int *tags, void **mhs,
		 void **req);
/* Test req until done (LB_WAIT_MS at most); sizes as test wrote them. */
int lb_wait(struct lb_ctx *x, void *req, int *sizes, const char *what);

/* conformance_failure.c: the plugin still carries a message, over a
 * connection to itself (after a peer died, or an init cycle). */
int pd_still_works(struct lb_ctx *x);

/*
 * The checks (oob_check_fn), in the catalog's order, by the file that
 * holds them; lb_checks in zsm-conformance.c says what each one checks.
 */
/* conformance_connect.c: properties and connection set-up. */
int check_properties(int rank, void *arg);
int check_connect_retry(int rank, void *arg);
int check_bad_handle(int rank, void *arg);
int check_connect_closed_listener(int rank, void *arg);
/* conformance_vdevice.c: NCCL's fusion of devices (makeVDevice). */
int check_vdevice(int rank, void *arg);
/* conformance_match.c: ordering, tag matching, sizes posted and sent. */
int check_order(int rank, void *arg);
int check_tag_select(int rank, void *arg);
int check_grouped_n(int rank, void *arg);
int check_recv_larger(int rank, void *arg);
int check_send_too_large(int rank, void *arg);
int check_trunc_isolated(int rank, void *arg);
/* conformance_request.c: requests: posting, testing, in flight. */
int check_zero_byte(int rank, void *arg);
int check_null_retry(int rank, void *arg);
int check_recv_overwrites_request(int rank, void *arg);
int check_test_sizes_n(int rank, void *arg);
int check_iflush_host(int rank, void *arg);
int check_inflight(int rank, void *arg);
int check_pingpong_wait(int rank, void *arg);
/* conformance_memory.c: registrations and GPU buffers. */
int check_mr_cache(int rank, void *arg);
int check_regmr_concurrent(int rank, void *arg);
int check_gpu_buffers(int rank, void *arg);
/* conformance_failure.c: closes and dead peers. */
int check_close_inflight(int rank, void *arg);
int check_peer_dies_recv(int rank, void *arg);
int check_peer_dies_send(int rank, void *arg);
int check_peer_closes(int rank, void *arg);
/* conformance_scale.c: large messages, many comms, init cycles. */
int check_data_sizes(int rank, void *arg);
int check_many_comms(int rank, void *arg);
int check_init_cycles(int rank, void *arg);

#endif
