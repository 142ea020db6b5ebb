/* SPDX-License-Identifier: MIT */
/*
 * errors: every argument zsm.h and docs/api.md call wrong is refused with
 * the documented negative errno, on a communicator that stays usable:
 * after them all it reports no error, and an AllGather and a put with
 * signal between every pair still move the right bytes, and a window or
 * communicator used after it is gone is refused.  Every rank makes
 * the same calls, so the collective ones (window registration,
 * collectives) fail alike everywhere.
 */
#include "api_ranks.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Not a stream any host-memory communicator may take. */
#define BAD_STREAM ((zsm_stream_t)(uintptr_t)0x1000)
#define WS 8192

#define EXPECT(call, want)                                                    \
	do {                                                                  \
		int ret_ = (call);                                            \
		if (ret_ != (want))                                           \
			API_FAIL("%s returned %d (%s), want %d (%s)", #call,  \
				 ret_, zsm_strerror(ret_), (want),            \
				 zsm_strerror(want));                         \
		checks++;                                                     \
	} while (0)

/* A handle that is gone: docs/api.md promises an error, not which. */
#define EXPECT_ERR(call)                                                      \
	do {                                                                  \
		int ret_ = (call);                                            \
		if (ret_ >= 0)                                                \
			API_FAIL("%s returned %d, want an error", #call,      \
				 ret_);                                       \
		checks++;                                                     \
	} while (0)

static int checks;

int api_errors_pre_init(const zsm_unique_id_t *id)
{
	int n = api_opt.nranks, v = 0;
	zsm_comm_t c = NULL;
	zsm_unique_id_t zero;

	EXPECT(zsm_get_version(NULL), -EINVAL);
	EXPECT(zsm_get_version(&v), 0);
	if (v / 100 != ZSM_API_VERSION / 100)
		API_FAIL("zsm_get_version says %d, the header %d", v,
			 ZSM_API_VERSION);
	EXPECT(zsm_get_unique_id(NULL), -EINVAL);
	for (int e = 0; e < 2; e++) {
		static const int errs[] = {0,	      -EINVAL,	 -ETIMEDOUT,
					   -ECONNRESET, -EPROTO, -99999,
					   1,	      INT_MIN};

		for (size_t k = 0; k < sizeof(errs) / sizeof(errs[0]); k++) {
			const char *s = zsm_strerror(errs[k]);

			if (!s || !*s)
				API_FAIL("zsm_strerror(%d) gave no text",
					 errs[k]);
		}
	}
	if (strcmp(zsm_strerror(0), "Success") != 0)
		API_FAIL("zsm_strerror(0) is \"%s\", zsm.h says \"Success\"",
			 zsm_strerror(0));
	/* Rank 0's id holds its listening socket: only the others try
	 * init's refusals, which must not touch the id. */
	if (api_rank == 0)
		return 0;
	EXPECT(zsm_comm_init_rank(NULL, n, *id, api_rank), -EINVAL);
	EXPECT(zsm_comm_init_rank(&c, n, *id, n), -EINVAL);
	EXPECT(zsm_comm_init_rank(&c, n, *id, -1), -EINVAL);
	EXPECT(zsm_comm_init_rank(&c, 0, *id, 0), -EINVAL);
	EXPECT(zsm_comm_init_rank(&c, -2, *id, 0), -EINVAL);
	/* Not an id zsm_get_unique_id made. */
	memset(&zero, 0, sizeof(zero));
	EXPECT(zsm_comm_init_rank(&c, n, zero, api_rank), -EINVAL);
	if (c)
		API_FAIL("a refused init left a communicator behind");
	return 0;
}

static int misuse_queries(zsm_comm_t comm)
{
	int v;

	EXPECT(zsm_comm_count(NULL, &v), -EINVAL);
	EXPECT(zsm_comm_count(comm, NULL), -EINVAL);
	EXPECT(zsm_comm_user_rank(NULL, &v), -EINVAL);
	EXPECT(zsm_comm_user_rank(comm, NULL), -EINVAL);
	EXPECT(zsm_comm_get_async_error(NULL, &v), -EINVAL);
	EXPECT(zsm_comm_get_async_error(comm, NULL), -EINVAL);
	EXPECT(zsm_comm_destroy(NULL), -EINVAL);
	return 0;
}

static int misuse_windows(zsm_comm_t comm, unsigned char *buf)
{
	zsm_window_t w = NULL;

	EXPECT(zsm_comm_window_register(NULL, buf, 64, &w, 0), -EINVAL);
	EXPECT(zsm_comm_window_register(comm, NULL, 64, &w, 0), -EINVAL);
	EXPECT(zsm_comm_window_register(comm, buf, 64, NULL, 0), -EINVAL);
	EXPECT(zsm_comm_window_register(comm, buf, 64, &w, 1), -EINVAL);
	EXPECT(zsm_comm_window_deregister(comm, NULL), -EINVAL);
	EXPECT(zsm_comm_window_deregister(NULL, w), -EINVAL);
	return 0;
}

/* A window used after its deregistration is refused, not followed. */
static int stale_window(zsm_comm_t comm, unsigned char *local)
{
	unsigned char *buf = api_alloc(64);
	int p = (api_rank + 1) % api_opt.nranks;
	zsm_window_t w;

	if (!buf)
		API_FAIL("out of memory");
	if (api_win_pair(comm, buf, 64, &w, NULL, 0, NULL) ||
	    api_win_unpair(comm, w, NULL))
		return 1;
	EXPECT_ERR(zsm_put_signal(local, 8, zsm_uint8, p, w, 0, 0, 0, 0, comm,
				  NULL));
	EXPECT_ERR(zsm_comm_window_deregister(comm, w));
	free(buf);
	return 0;
}

/* One zsm_put_signal's arguments. */
struct put_args {
	const char *what;
	const void *src;
	size_t count;
	zsm_datatype_t dt;
	int peer;
	zsm_window_t win;
	size_t off;
	int sig_idx, ctx;
	unsigned int flags;
	zsm_comm_t comm;
	zsm_stream_t stream;
};

static int misuse_puts(zsm_comm_t comm, unsigned char *local,
		       unsigned char *outside, zsm_window_t win)
{
	int n = api_opt.nranks, p = (api_rank + 1) % n;
	const struct put_args ok = {"", local, 8, zsm_uint8, p, win, 0, 0, 0,
				    0, comm, NULL};
	struct put_args bad[22];
	int nb = 0;

	/* Each a good put with one thing wrong. */
#define BAD(field, value)                                                     \
	do {                                                                  \
		bad[nb] = ok;                                                 \
		bad[nb].what = #field " " #value;                             \
		bad[nb++].field = (value);                                    \
	} while (0)
	BAD(comm, NULL);
	BAD(peer, n);
	BAD(peer, -1);
	BAD(peer, api_rank); /* itself: no peer */
	BAD(ctx, ZSM_MAX_CTX);
	BAD(ctx, -1);
	BAD(sig_idx, 1);
	BAD(flags, 1);
	BAD(dt, (zsm_datatype_t)12);
	BAD(dt, (zsm_datatype_t)-1);
	BAD(win, NULL);
	/* The source outside every window, or running past its own end. */
	BAD(src, outside);
	BAD(src, local + WS - 4);
	/* Past the end of the peer's window; an offset that wraps. */
	BAD(off, WS - 4);
	BAD(off, SIZE_MAX - 2);
	BAD(stream, BAD_STREAM);
	bad[nb] = ok;
	bad[nb].what = "2 float64 8 bytes before the end";
	bad[nb].count = 2;
	bad[nb].dt = zsm_float64;
	bad[nb++].off = WS - 8;
#undef BAD
	for (int k = 0; k < nb; k++) {
		const struct put_args *a = &bad[k];
		int ret = zsm_put_signal(a->src, a->count, a->dt, a->peer,
					 a->win, a->off, a->sig_idx, a->ctx,
					 a->flags, a->comm, a->stream);

		if (ret != -EINVAL)
			API_FAIL("zsm_put_signal with %s returned %d (%s), "
				 "want -EINVAL",
				 a->what, ret, zsm_strerror(ret));
		checks++;
	}

	EXPECT(zsm_signal(p, 0, 0, 0, NULL, NULL), -EINVAL);
	EXPECT(zsm_signal(n, 0, 0, 0, comm, NULL), -EINVAL);
	EXPECT(zsm_signal(-1, 0, 0, 0, comm, NULL), -EINVAL);
	EXPECT(zsm_signal(p, 0, ZSM_MAX_CTX, 0, comm, NULL), -EINVAL);
	EXPECT(zsm_signal(p, 1, 0, 0, comm, NULL), -EINVAL);
	EXPECT(zsm_signal(p, 0, 0, 1, comm, NULL), -EINVAL);
	EXPECT(zsm_signal(p, 0, 0, 0, comm, BAD_STREAM), -EINVAL);
	return 0;
}

static int misuse_waits(zsm_comm_t comm)
{
	int n = api_opt.nranks, p = (api_rank + 1) % n;
	zsm_wait_signal_desc_t ok = {.op_cnt = 1, .peer = p};
	zsm_wait_signal_desc_t bad[] = {
		{.op_cnt = 1, .peer = n},
		{.op_cnt = 1, .peer = -1},
		{.op_cnt = 1, .peer = p, .ctx = ZSM_MAX_CTX},
		{.op_cnt = 1, .peer = p, .ctx = -1},
		{.op_cnt = 1, .peer = p, .sig_idx = 1},
		{.op_cnt = -1, .peer = p},
		{.op_cnt = 1, .peer = api_rank},
	};

	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		zsm_wait_signal_desc_t two[2] = {ok, bad[k]};

		/* A bad desc after a good one: nothing is waited for. */
		EXPECT(zsm_wait_signal(2, two, comm, NULL), -EINVAL);
	}
	EXPECT(zsm_wait_signal(1, &ok, NULL, NULL), -EINVAL);
	EXPECT(zsm_wait_signal(1, NULL, comm, NULL), -EINVAL);
	EXPECT(zsm_wait_signal(-1, &ok, comm, NULL), -EINVAL);
	EXPECT(zsm_wait_signal(1, &ok, comm, BAD_STREAM), -EINVAL);
	return 0;
}

static int misuse_colls(zsm_comm_t comm, unsigned char *win_buf,
			unsigned char *outside)
{
	int n = api_opt.nranks;
	unsigned char *recv = win_buf;

	for (int a2a = 0; a2a < 2; a2a++) {
		int (*coll)(const void *, void *, size_t, zsm_datatype_t,
			    zsm_comm_t, zsm_stream_t) =
			a2a ? zsm_all_to_all : zsm_all_gather;
		size_t sendlen = a2a ? (size_t)n * 8 : 8;

		EXPECT(coll(outside, recv, 8, zsm_uint8, NULL, NULL), -EINVAL);
		EXPECT(coll(win_buf + WS - sendlen, outside, 8, zsm_uint8,
			    comm, NULL),
		       -EINVAL);
		/* Count 0 still checks the comm, the type and the stream. */
		EXPECT(coll(recv, recv, 0, zsm_uint8, NULL, NULL), -EINVAL);
		EXPECT(coll(recv, recv, 0, (zsm_datatype_t)12, comm, NULL),
		       -EINVAL);
		EXPECT(coll(recv, recv, 0, zsm_uint8, comm, BAD_STREAM),
		       -EINVAL);
		/* recvbuff running past its window's end. */
		EXPECT(coll(outside, win_buf + WS - 8, 8, zsm_uint8, comm,
			    NULL),
		       -EINVAL);
		/* An out-of-place sendbuff outside every window. */
		EXPECT(coll(outside, recv, 8, zsm_uint8, comm, NULL), -EINVAL);
		EXPECT(coll(recv, recv + WS / 2, 8, (zsm_datatype_t)12, comm,
			    NULL),
		       -EINVAL);
		EXPECT(coll(recv, recv + WS / 2, 8, zsm_uint8, comm,
			    BAD_STREAM),
		       -EINVAL);
	}
	return 0;
}

/* The communicator still works: an AllGather and a put to the next rank. */
static int still_usable(zsm_comm_t comm, unsigned char *win_buf,
			unsigned char *local, zsm_window_t win)
{
	int n = api_opt.nranks, me = api_rank, err = -1, ret;
	int next = (me + 1) % n, prev = (me + n - 1) % n;
	zsm_wait_signal_desc_t d = {.op_cnt = 1, .peer = prev};
	size_t blk = 61;

	ret = zsm_comm_get_async_error(comm, &err);
	if (ret || err)
		API_FAIL("after the refused calls, zsm_comm_get_async_error "
			 "returned %d, error %d (%s)",
			 ret, err, zsm_strerror(err));
	memset(win_buf, 0, (size_t)n * blk);
	api_fill(win_buf + (size_t)me * blk, blk, api_seed((uint32_t)me, 7, 0, 0),
		 0);
	api_phase("an AllGather after the refusals");
	ret = zsm_all_gather(win_buf + (size_t)me * blk, win_buf, blk,
			     zsm_uint8, comm, NULL);
	if (ret)
		API_FAIL("an AllGather after the refused calls: %s",
			 zsm_strerror(ret));
	for (int r = 0; r < n; r++)
		if (api_check(win_buf + (size_t)r * blk, blk,
			      api_seed((uint32_t)r, 7, 0, 0), 0) >= 0)
			API_FAIL("the AllGather after the refused calls "
				 "brought other bytes from rank %d",
				 r);
	api_fill(local, 100, api_seed((uint32_t)me, 8, 0, 0), 0);
	api_phase("a put after the refusals");
	ret = zsm_put_signal(local, 100, zsm_uint8, next, win, WS - 100, 0, 0,
			     0, comm, NULL);
	if (!ret)
		ret = zsm_wait_signal(1, &d, comm, NULL);
	if (ret)
		API_FAIL("a put with signal after the refused calls: %s",
			 zsm_strerror(ret));
	if (api_check(win_buf + WS - 100, 100,
		      api_seed((uint32_t)prev, 8, 0, 0), 0) >= 0)
		API_FAIL("the put after the refused calls brought other bytes");
	return 0;
}

int api_errors_after_destroy(zsm_comm_t comm)
{
	int v;

	EXPECT_ERR(zsm_comm_count(comm, &v));
	EXPECT_ERR(zsm_comm_destroy(comm));
	return 0;
}

int api_errors_run(zsm_comm_t comm)
{
	unsigned char *win_buf = api_alloc(WS), *local = api_alloc(WS);
	unsigned char *outside = api_alloc(WS * (size_t)API_MAXR);
	zsm_window_t win, lwin;

	if (!win_buf || !local || !outside)
		API_FAIL("out of memory");
	api_phase("registering windows");
	if (api_win_pair(comm, win_buf, WS, &win, local, WS, &lwin))
		return 1;
	api_phase("misuse");
	if (misuse_queries(comm) || misuse_windows(comm, outside) ||
	    stale_window(comm, local) ||
	    misuse_puts(comm, local, outside, win) || misuse_waits(comm) ||
	    misuse_colls(comm, win_buf, outside) ||
	    still_usable(comm, win_buf, local, win))
		return 1;
	api_phase("deregistering windows");
	if (api_win_unpair(comm, win, lwin))
		return 1;
	free(win_buf);
	free(local);
	free(outside);
	printf("rank %d: %d refusals and results as documented\n", api_rank,
	       checks);
	return 0;
}
