/* SPDX-License-Identifier: MIT */
/* Shared by zsm-harden's cases: one pair of ranks over a plugin's table. */
#ifndef ZSM_HARDEN_H
#define ZSM_HARDEN_H

#include <stddef.h>
#include <stdint.h>

#include "oob.h"
#include "zsm_client.h"

struct h_opts {
	const char *plugin;
	int scale; /* time limits are multiplied by it (valgrind: 10) */
};
extern struct h_opts h_opts;

#define H_MS(ms) ((int)(ms) * h_opts.scale)
#define H_NS(ms) ((uint64_t)(ms) * 1000000ULL * (uint64_t)h_opts.scale)

#define H_EXPECT(cond, ...)                                                   \
	do {                                                                  \
		if (!(cond))                                                  \
			return oob_fail(__VA_ARGS__);                         \
	} while (0)
#define H_CALL(expr)                                                          \
	do {                                                                  \
		int r_ = (expr);                                              \
		if (r_ != ncclSuccess)                                        \
			return oob_fail("line %d: %s returned %s", __LINE__,  \
					#expr, zsm_client_result_str(r_));    \
	} while (0)
#define H_OOB(expr)                                                           \
	do {                                                                  \
		if ((expr))                                                   \
			return oob_fail("line %d: out-of-band %s failed",     \
					__LINE__, #expr);                     \
	} while (0)
#define H_TRY(expr)                                                           \
	do {                                                                  \
		int s_ = (expr);                                              \
		if (s_ != OOB_PASS)                                           \
			return s_;                                            \
	} while (0)

/* One rank: its plugin and the pair's first connection (0 -> 1). */
struct h_ctx {
	struct zsm_client *c;
	int rank;
	void *send;
	void *recv;
};

int h_open(struct h_ctx *x, int rank);
/* Rank listener listens and accepts, the other connects. */
int h_connect(struct h_ctx *x, int listener, void **send, void **recv);
int h_setup(struct h_ctx *x, int rank);
struct h_victim;
/* Rank 1 listens and sends rank 0 the handle (into handle,
 * NCCL_NET_HANDLE_MAXSIZE), which rank 0 reads into v for an attacker to
 * aim at. */
int h_listen_victim(struct h_ctx *x, char *handle, void **listen,
		    struct h_victim *v);
int h_teardown(struct h_ctx *x);
int h_post_send(struct h_ctx *x, void *comm, void *data, size_t size, int tag,
		void *mh, void **req);
int h_post_recv(struct h_ctx *x, void *comm, void *data, size_t size, int tag,
		void *mh, void **req);
int h_wait(struct h_ctx *x, void *req, int *size, const char *what);
/* One message 0 -> 1 of size bytes, checked byte by byte on rank 1. */
int h_exchange(struct h_ctx *x, size_t size, unsigned char seed);
/* This process's resident memory, KiB (-1 when unknown). */
long h_rss_kib(void);
/* stderr into a fresh unlinked file from here on: its fd (-1: error),
 * and the old stderr in *saved for dup2 back. */
int h_log_capture(int *saved);
/* Lines containing text in what was written to fd so far (-1: error). */
int h_log_lines(int fd, const char *text);

struct h_case {
	const char *name;
	oob_check_fn fn;
	unsigned timeout_s;
	const char *issue; /* the numbered finding(s) of issue 12 */
	const char *what;
};

int h_case_misuse(int rank, void *arg);
int h_case_fork(int rank, void *arg);
int h_case_connect_abandon(int rank, void *arg);
int h_case_refused_fast(int rank, void *arg);
int h_case_bad_address(int rank, void *arg);
int h_case_inject(int rank, void *arg);
int h_case_preload(int rank, void *arg);
int h_case_probe_oversize(int rank, void *arg);
int h_case_forged_ack(int rank, void *arg);
int h_case_fd_steal(int rank, void *arg);
int h_case_replay(int rank, void *arg);
int h_case_strays(int rank, void *arg);
int h_case_strays_behind(int rank, void *arg);
int h_case_strays_connect(int rank, void *arg);
int h_case_early(int rank, void *arg);
int h_case_early_peer(int rank, void *arg);
int h_case_close_held(int rank, void *arg);
int h_case_ctrl_junk(int rank, void *arg);
int h_case_ctrl_flood(int rank, void *arg);
int h_case_fd_limit(int rank, void *arg);
int h_case_finalize_queued(int rank, void *arg);
int h_case_deliver_held(int rank, void *arg);

#endif
