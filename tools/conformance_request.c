/* SPDX-License-Identifier: MIT */
/*
 * zsm-conformance's checks of requests: zero_byte, null_retry (a NULL
 * request is "later"), recv_overwrites_request, test_sizes_n, iflush_host,
 * inflight (NCCL's minimum in flight before any test) and pingpong_wait.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "conformance.h"
#include "pattern.h"

/* ---------------------------------------------------------------------- */
/* 0-byte messages */

int check_zero_byte(int rank, void *arg)
{
	struct lb_ctx x;
	struct lb_buf b;
	void *req[4];
	int sizes[64], i;

	(void)arg;
	LB_TRY(lb_setup(&x, rank));
	LB_TRY(lb_buf_alloc(&b, 4 * 64));
	LB_TRY(lb_buf_reg(&x, &b, rank ? x.recv : x.send));
	if (rank == 0) {
		zsm_pattern_fill(b.p, 16, 21);
		LB_OOB(oob_barrier());
		LB_TRY(lb_post_send(&x, x.send, b.p, 0, 1, b.mh, &req[0]));
		LB_TRY(lb_post_send(&x, x.send, b.p, 0, 1, b.mh, &req[1]));
		LB_TRY(lb_post_send(&x, x.send, b.p, 16, 1, b.mh, &req[2]));
		for (i = 0; i < 3; i++) {
			sizes[0] = LB_SENTINEL;
			LB_TRY(lb_wait(&x, req[i], sizes, "send"));
			LB_EXPECT(sizes[0] == (i == 2 ? 16 : 0),
				  "send %d: test reported size %d", i,
				  sizes[0]);
		}
		/* Two 0-byte sends into one grouped receive (two single
		 * ones where maxRecvs is 1). */
		LB_TRY(lb_post_send(&x, x.send, b.p, 0, 6, b.mh, &req[0]));
		LB_TRY(lb_post_send(&x, x.send, b.p, 0, 5, b.mh, &req[1]));
		LB_TRY(lb_wait(&x, req[0], sizes, "send"));
		LB_TRY(lb_wait(&x, req[1], sizes, "send"));
	} else {
		size_t s0 = 0, s64 = 64, s2[2] = { 0, 32 };
		void *d0 = b.p, *d1 = b.p + 64, *d2 = b.p + 128;
		void *d3[2] = { b.p + 192, b.p + 224 }, *m2[2] = { b.mh, b.mh };

		LB_TRY(lb_post_recv(&x, x.recv, 1, &d0, &s0, (int[]){ 1 },
				    &b.mh, &req[0]));
		LB_TRY(lb_post_recv(&x, x.recv, 1, &d1, &s64, (int[]){ 1 },
				    &b.mh, &req[1]));
		LB_TRY(lb_post_recv(&x, x.recv, 1, &d2, &s64, (int[]){ 1 },
				    &b.mh, &req[2]));
		LB_OOB(oob_barrier());
		for (i = 0; i < 3; i++) {
			sizes[0] = LB_SENTINEL;
			LB_TRY(lb_wait(&x, req[i], sizes, "receive"));
			LB_EXPECT(sizes[0] == (i == 2 ? 16 : 0),
				  "receive %d: size %d, expected %d", i,
				  sizes[0], i == 2 ? 16 : 0);
		}
		LB_EXPECT(lb_verify_byte(b.p, 128, LB_GUARD) < 0,
			  "a 0-byte receive wrote into its buffer");
		LB_EXPECT(zsm_pattern_check(b.p + 128, 16, 21) < 0,
			  "the 16-byte message after two 0-byte ones is wrong");
		if (x.max_recvs >= 2) {
			LB_TRY(lb_post_recv(&x, x.recv, 2, d3, s2,
					    (int[]){ 5, 6 }, m2, &req[3]));
			sizes[0] = sizes[1] = LB_SENTINEL;
			LB_TRY(lb_wait(&x, req[3], sizes,
				       "grouped 0-byte receive"));
			LB_EXPECT(sizes[0] == 0 && sizes[1] == 0,
				  "grouped 0-byte receive: sizes %d, %d",
				  sizes[0], sizes[1]);
		} else {
			/* In posting order: tag 6's send came first. */
			for (i = 0; i < 2; i++) {
				LB_TRY(lb_post_recv(&x, x.recv, 1, &d3[i],
						    &s2[i], (int[]){ 6 - i },
						    &m2[i], &req[3]));
				sizes[0] = LB_SENTINEL;
				LB_TRY(lb_wait(&x, req[3], sizes,
					       "0-byte receive"));
				LB_EXPECT(sizes[0] == 0,
					  "0-byte receive %d of 2: size %d",
					  i + 1, sizes[0]);
			}
		}
		LB_EXPECT(lb_verify_byte(b.p + 192, 64, LB_GUARD) < 0,
			  "grouped 0-byte receive wrote into its buffers");
		LB_TRY(lb_buf_guards(&b, "zero_byte"));
	}
	LB_OOB(oob_barrier());
	LB_TRY(lb_buf_free(&x, &b));
	return lb_teardown(&x);
}

/* ---------------------------------------------------------------------- */
/* NULL request = retry: twice NCCL's minimum in flight, never an error */

#define NR_SLOT 512

static size_t nr_size(int i)
{
	return 64 + (size_t)(i * 7) % (NR_SLOT - 64);
}

/*
 * Requests past the minimum a plugin must take (32 x maxRecvs sends, 32
 * receives: 2.1) may come back NULL, "try again later" (2.5 isend, irecv;
 * 6.7).  Each side posts twice the sender's minimum in single messages,
 * and while a post returns NULL it tests its oldest request, as NCCL's
 * progress would; no call may return an error.
 */
int check_null_retry(int rank, void *arg)
{
	int *done = NULL, *sizes = NULL, nulls = 0, total, i, r, d;
	int oldest = 0, ret = OOB_FAIL;
	void **req = NULL;
	struct lb_ctx x;
	struct lb_buf b;
	uint64_t t0;

	(void)arg;
	LB_TRY(lb_setup(&x, rank));
	total = 2 * LB_NCCL_REQUESTS * x.max_recvs;
	req = calloc((size_t)total, sizeof(*req));
	done = calloc((size_t)total, sizeof(*done));
	sizes = calloc((size_t)total, sizeof(*sizes));
	if (!req || !done || !sizes) {
		oob_fail("out of memory for %d requests", total);
		goto out;
	}
	if (lb_buf_alloc(&b, (size_t)total * NR_SLOT))
		goto out;
	if (lb_buf_reg(&x, &b, rank ? x.recv : x.send))
		goto out;
	if (rank == 0)
		for (i = 0; i < total; i++)
			zsm_pattern_fill(b.p + i * NR_SLOT, nr_size(i),
					 500 + (unsigned)i);
	if (oob_barrier())
		goto out;
	for (i = 0; i < total; i++) {
		void *data = b.p + i * NR_SLOT;
		size_t size = NR_SLOT;

		t0 = zsm_client_now_ns();
		for (;;) {
			req[i] = NULL;
			if (rank == 0)
				r = zsm_client_isend(x.c, x.send, data,
						     nr_size(i), 4, b.mh,
						     &req[i]);
			else
				r = zsm_client_irecv(x.c, x.recv, 1, &data,
						     &size, (int[]){ 4 }, &b.mh,
						     &req[i]);
			if (r) {
				oob_fail("%s %d returned %s: with its queue "
					 "full it must return success and a "
					 "NULL request (2.5 isend, irecv)",
					 rank ? "irecv" : "isend", i,
					 zsm_client_result_str(r));
				goto out;
			}
			if (req[i])
				break;
			nulls++;
			if (lb_ms_since(t0) > LB_POST_MS) {
				oob_fail("%s %d: NULL for %d ms while the "
					 "oldest requests were tested",
					 rank ? "irecv" : "isend", i,
					 LB_POST_MS);
				goto out;
			}
			/* Make progress the way NCCL does: test the oldest. */
			while (oldest < i && done[oldest])
				oldest++;
			if (oldest < i) {
				r = zsm_client_test(x.c, req[oldest], &d,
						    &sizes[oldest]);
				if (r) {
					oob_fail("test of request %d returned "
						 "%s",
						 oldest,
						 zsm_client_result_str(r));
					goto out;
				}
				done[oldest] = d;
			}
		}
	}
	for (i = 0; i < total; i++) {
		if (!done[i] && lb_wait(&x, req[i], &sizes[i], "request"))
			goto out;
		if (sizes[i] != (int)nr_size(i)) {
			oob_fail("request %d: size %d, expected %zu", i,
				 sizes[i], nr_size(i));
			goto out;
		}
		if (rank == 1 && zsm_pattern_check(b.p + i * NR_SLOT,
						   nr_size(i),
						   500 + (unsigned)i) >= 0) {
			oob_fail("receive %d: data wrong", i);
			goto out;
		}
	}
	printf("# abi %d rank %d: %d %s, NULL returned %d times\n",
	       lb_opts.abi, rank, total, rank ? "irecvs" : "isends", nulls);
	if (oob_barrier())
		goto out;
	ret = lb_buf_free(&x, &b);
out:
	free(req);
	free(done);
	free(sizes);
	return ret == OOB_PASS ? lb_teardown(&x) : ret;
}

/* ---------------------------------------------------------------------- */
/* irecv always overwrites *request */

int check_recv_overwrites_request(int rank, void *arg)
{
	struct lb_ctx x;
	struct lb_buf b;
	void *req;
	int sizes[64], k, r, n;
	uint64_t t0;

	(void)arg;
	LB_TRY(lb_setup(&x, rank));
	LB_TRY(lb_buf_alloc(&b, 2 * 256));
	LB_TRY(lb_buf_reg(&x, &b, rank ? x.recv : x.send));
	/* n = 1 and 2, each twice; 1 alone where maxRecvs is 1. */
	for (k = 0; k < 4; k++) {
		n = k % 2 && x.max_recvs >= 2 ? 2 : 1;
		if (rank == 0) {
			int i;

			LB_OOB(oob_barrier());
			for (i = 0; i < n; i++) {
				zsm_pattern_fill(b.p + i * 256, 128,
					(unsigned)(k * 10 + i));
				LB_TRY(lb_post_send(&x, x.send, b.p + i * 256,
						    128, i, b.mh, &req));
				LB_TRY(lb_wait(&x, req, sizes, "send"));
			}
			continue;
		}
		{
			void *data[2] = { b.p, b.p + 256 },
			     *mhs[2] = { b.mh, b.mh };
			size_t ss[2] = { 256, 256 };
			int tags[2] = { 0, 1 };

			void *hint = (void *)NCCL_NET_OPTIONAL_RECV_COMPLETION;

			t0 = zsm_client_now_ns();
			for (;;) {
				/* What NCCL stores there for LL receives. */
				req = hint;
				r = zsm_client_irecv(x.c, x.recv, n, data, ss,
						     tags, mhs, &req);
				LB_EXPECT(!r, "irecv returned %s",
					  zsm_client_result_str(r));
				LB_EXPECT(req != hint,
					  "irecv (n=%d) left *request == 0x1",
					  n);
				if (req)
					break;
				LB_EXPECT(lb_ms_since(t0) < LB_POST_MS,
					  "irecv kept returning NULL");
			}
			LB_OOB(oob_barrier());
			LB_TRY(lb_wait(&x, req, sizes, "receive"));
			for (r = 0; r < n; r++)
				LB_EXPECT(sizes[r] == 128 &&
						  zsm_pattern_check(b.p + r * 256, 128,
							    (unsigned)(k * 10 +
								       r)) < 0,
					  "round %d sub %d: size %d or data "
					  "wrong",
					  k, r, sizes[r]);
		}
	}
	LB_OOB(oob_barrier());
	LB_TRY(lb_buf_free(&x, &b));
	return lb_teardown(&x);
}

/* ---------------------------------------------------------------------- */
/* test writes only the first n sizes */

int check_test_sizes_n(int rank, void *arg)
{
	struct lb_ctx x;
	struct lb_buf b;
	void *req, *sreq[LB_RECVS_MAX];
	int sizes[64], ns[3], nns, k, i, n, done;
	uint64_t t0;

	(void)arg;
	LB_TRY(lb_setup(&x, rank));
	/* n = 1, 3 and maxRecvs, those that are in [1, maxRecvs]. */
	ns[0] = 1;
	nns = 1;
	if (x.max_recvs > 3)
		ns[nns++] = 3;
	if (x.max_recvs > 1)
		ns[nns++] = x.max_recvs;
	LB_TRY(lb_buf_alloc(&b, (size_t)x.max_recvs * 1024));
	LB_TRY(lb_buf_reg(&x, &b, rank ? x.recv : x.send));
	for (k = 0; k < nns; k++) {
		n = ns[k];
		if (rank == 0) {
			LB_OOB(oob_barrier());
			for (i = 0; i < n; i++)
				LB_TRY(lb_post_send(&x, x.send, b.p + i * 1024,
						    100 + (size_t)i, 50 + i,
						    b.mh, &sreq[i]));
			for (i = 0; i < n; i++) {
				int j;

				for (j = 0; j < 64; j++)
					sizes[j] = LB_SENTINEL;
				LB_TRY(lb_wait(&x, sreq[i], sizes, "send"));
				LB_EXPECT(
					sizes[0] == 100 + i,
					"send test: sizes[0] = %d, expected %d",
					sizes[0], 100 + i);
				for (j = 1; j < 64; j++)
					LB_EXPECT(sizes[j] == LB_SENTINEL,
						  "send test wrote sizes[%d]",
						  j);
			}
			continue;
		}
		{
			void *data[LB_RECVS_MAX], *mhs[LB_RECVS_MAX];
			size_t ss[LB_RECVS_MAX];
			int tags[LB_RECVS_MAX];

			for (i = 0; i < n; i++) {
				data[i] = b.p + i * 1024;
				mhs[i] = b.mh;
				ss[i] = 1024;
				tags[i] = 50 + i;
			}
			LB_TRY(lb_post_recv(&x, x.recv, n, data, ss, tags, mhs,
					    &req));
			LB_OOB(oob_barrier());
			for (i = 0; i < 64; i++)
				sizes[i] = LB_SENTINEL;
			t0 = zsm_client_now_ns();
			do {
				int r = zsm_client_test(x.c, req, &done, sizes);

				LB_EXPECT(!r, "test returned %s",
					  zsm_client_result_str(r));
				LB_EXPECT(lb_ms_since(t0) < LB_WAIT_MS,
					  "receive not done");
				if (!done)
					for (i = 0; i < 64; i++)
						LB_EXPECT(
							sizes[i] == LB_SENTINEL,
							"test wrote sizes[%d] "
							"before done",
							i);
			} while (!done);
			for (i = 0; i < n; i++)
				LB_EXPECT(sizes[i] == 100 + i,
					  "n=%d: sizes[%d] = %d, expected %d",
					  n, i, sizes[i], 100 + i);
			for (i = n; i < 64; i++)
				LB_EXPECT(sizes[i] == LB_SENTINEL,
					  "n=%d: test wrote sizes[%d] = %d "
					  "(must write only the first n)",
					  n, i, sizes[i]);
		}
	}
	LB_OOB(oob_barrier());
	LB_TRY(lb_buf_free(&x, &b));
	return lb_teardown(&x);
}

/* ---------------------------------------------------------------------- */
/* iflush on host memory: success and a NULL request */

int check_iflush_host(int rank, void *arg)
{
	struct lb_ctx x;
	struct lb_buf b;
	void *req;
	int sizes[64], r;
	size_t size = 4096;

	(void)arg;
	LB_TRY(lb_setup(&x, rank));
	LB_TRY(lb_buf_alloc(&b, size));
	LB_TRY(lb_buf_reg(&x, &b, rank ? x.recv : x.send));
	if (rank == 0) {
		zsm_pattern_fill(b.p, size, 31);
		LB_TRY(lb_post_send(&x, x.send, b.p, size, 0, b.mh, &req));
		LB_TRY(lb_wait(&x, req, sizes, "send"));
	} else {
		LB_TRY(lb_post_recv(&x, x.recv, 1, &b.vp, &size, (int[]){ 0 },
				    &b.mh, &req));
		LB_TRY(lb_wait(&x, req, sizes, "receive"));
		req = (void *)0x1;
		r = zsm_client_iflush(x.c, x.recv, 1, &b.vp, sizes, &b.mh,
				      &req);
		LB_EXPECT(r == ncclSuccess, "iflush on host memory returned %s",
			  zsm_client_result_str(r));
		LB_EXPECT(req == NULL,
			  "iflush on host memory gave request %p, expected "
			  "NULL",
			  req);
		LB_EXPECT(zsm_pattern_check(b.p, size, 31) < 0, "data wrong");
	}
	LB_OOB(oob_barrier());
	LB_TRY(lb_buf_free(&x, &b));
	return lb_teardown(&x);
}

/* ---------------------------------------------------------------------- */
/* NCCL's minimum in flight: 32 receives, 32 x maxRecvs sends, untested */

#define IF_SLOT 2048
/*
 * A NULL within the minimum may be a queue that the plugin's own thread
 * drains; that long of it without a test is a real limit.
 */
#define IF_NULL_MS (2000 * lb_scale)

static size_t if_size(int i)
{
	return 1 + (size_t)(i * 13) % IF_SLOT;
}

/* Post request i of the minimum (a send, or a receive group), no test. */
static int if_post_no_test(struct lb_ctx *x, struct lb_buf *b, int i,
			   void **req)
{
	void *data[LB_RECVS_MAX], *mhs[LB_RECVS_MAX];
	size_t sizes[LB_RECVS_MAX];
	int tags[LB_RECVS_MAX], n = x->max_recvs, k, r;
	uint64_t t0 = zsm_client_now_ns();

	for (k = 0; k < n; k++) {
		data[k] = b->p + (size_t)(i * n + k) * IF_SLOT;
		mhs[k] = b->mh;
		sizes[k] = IF_SLOT;
		tags[k] = 9 + k;
	}
	for (;;) {
		*req = NULL;
		if (x->rank == 0)
			r = zsm_client_isend(x->c, x->send, b->p + i * IF_SLOT,
					     if_size(i), 9 + i % n, b->mh,
					     req);
		else
			r = zsm_client_irecv(x->c, x->recv, n, data, sizes,
					     tags, mhs, req);
		LB_EXPECT(!r, "%s %d returned %s", x->rank ? "irecv" : "isend",
			  i, zsm_client_result_str(r));
		if (*req)
			return OOB_PASS;
		LB_EXPECT(lb_ms_since(t0) < IF_NULL_MS,
			  "%s %d returned NULL for %d ms with %d requests in "
			  "flight and none tested: NCCL needs %s (2.1 "
			  "NCCL_NET_MAX_REQUESTS, maxRecvs %d)",
			  x->rank ? "irecv" : "isend", i, IF_NULL_MS, i,
			  x->rank ? "32 receives" : "32 x maxRecvs sends", n);
	}
}

int check_inflight(int rank, void *arg)
{
	int sizes[64], nsend, nrecv, n, i, k;
	struct lb_ctx x;
	struct lb_buf b;
	void **req;

	(void)arg;
	LB_TRY(lb_setup(&x, rank));
	n = x.max_recvs;
	nsend = LB_NCCL_REQUESTS * n;
	nrecv = LB_NCCL_REQUESTS;
	req = calloc((size_t)nsend, sizeof(*req));
	LB_EXPECT(req, "out of memory");
	LB_TRY(lb_buf_alloc(&b, (size_t)nsend * IF_SLOT));
	LB_TRY(lb_buf_reg(&x, &b, rank ? x.recv : x.send));
	if (rank == 0)
		for (i = 0; i < nsend; i++)
			zsm_pattern_fill(b.p + i * IF_SLOT, if_size(i),
					 700 + (unsigned)i);
	/*
	 * Receives first (32 groups of maxRecvs), then the sends (one per
	 * buffer, in posting order, tags picking within each group), all
	 * posted before either side tests one.
	 */
	if (rank == 0)
		LB_OOB(oob_barrier());
	for (i = 0; i < (rank ? nrecv : nsend); i++)
		LB_TRY(if_post_no_test(&x, &b, i, &req[i]));
	if (rank == 1)
		LB_OOB(oob_barrier());
	for (i = 0; i < (rank ? nrecv : nsend); i++) {
		LB_TRY(lb_wait(&x, req[i], sizes, "request"));
		for (k = 0; k < (rank ? n : 1); k++) {
			int m = rank ? i * n + k : i;

			LB_EXPECT(sizes[k] == (int)if_size(m),
				  "%s %d: size %d, expected %zu",
				  rank ? "receive of message" : "send", m,
				  sizes[k], if_size(m));
			if (rank == 1)
				LB_EXPECT(zsm_pattern_check(
						  b.p + (size_t)m * IF_SLOT,
						  if_size(m),
						  700 + (unsigned)m) < 0,
					  "message %d: data wrong", m);
		}
	}
	printf("# abi %d rank %d: %d %s in flight before any test\n",
	       lb_opts.abi, rank, rank ? nrecv : nsend,
	       rank ? "receives" : "sends");
	free(req);
	LB_OOB(oob_barrier());
	LB_TRY(lb_buf_free(&x, &b));
	return lb_teardown(&x);
}

/* ---------------------------------------------------------------------- */
/* pingpong_wait: small round trips that wait for each send */

/*
 * NCCL's proxy waits for a send to finish before it reuses the slot, and
 * echoes arrive only after the peer's send finished.  A round trip is
 * microseconds; a plugin that finishes a send only on its timed work
 * (zsm once did, for a send held for its GRANT: 250 ms each) takes
 * minutes.  The limit is generous for a loaded machine.
 */
#define PW_ROUNDS 200
#define PW_LIMIT_MS (20000 * lb_scale)

int check_pingpong_wait(int rank, void *arg)
{
	struct lb_ctx x;
	struct lb_buf sb, rb;
	size_t size = 8;
	int sizes[LB_RECVS_MAX];
	void *sq, *rq;
	uint64_t t0;

	(void)arg;
	LB_TRY(lb_setup(&x, rank));
	/* Rank 1 echoes back over a comm of its own. */
	LB_TRY(lb_connect_to(&x, 0, rank ? &x.send : NULL,
			     rank ? NULL : &x.recv));
	LB_TRY(lb_buf_alloc(&sb, size));
	LB_TRY(lb_buf_alloc(&rb, size));
	LB_TRY(lb_buf_reg(&x, &sb, x.send));
	LB_TRY(lb_buf_reg(&x, &rb, x.recv));
	LB_OOB(oob_barrier());
	t0 = zsm_client_now_ns();
	for (int i = 0; i < PW_ROUNDS; i++) {
		LB_TRY(lb_post_recv(&x, x.recv, 1, &rb.vp, &size,
				    (int[]){ 0 }, &rb.mh, &rq));
		if (rank == 1)
			LB_TRY(lb_wait(&x, rq, sizes, "echo's receive"));
		LB_TRY(lb_post_send(&x, x.send, sb.p, size, 0, sb.mh, &sq));
		LB_TRY(lb_wait(&x, sq, sizes, "round trip's send"));
		if (rank == 0)
			LB_TRY(lb_wait(&x, rq, sizes, "round trip's receive"));
	}
	LB_EXPECT(lb_ms_since(t0) < PW_LIMIT_MS,
		  "%d round trips of %zu B, each send waited for, took %.0f "
		  "ms (limit %d): sends finish only on timed work?",
		  PW_ROUNDS, size, lb_ms_since(t0), PW_LIMIT_MS);
	printf("# abi %d rank %d: %d round trips of 8 B in %.0f ms\n",
	       lb_opts.abi, rank, PW_ROUNDS, lb_ms_since(t0));
	LB_OOB(oob_barrier());
	LB_TRY(lb_buf_free(&x, &sb));
	LB_TRY(lb_buf_free(&x, &rb));
	return lb_teardown(&x);
}
