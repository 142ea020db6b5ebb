/* SPDX-License-Identifier: MIT */
/*
 * Case "misuse" (issue 12, findings 3 and 9): every double call, every use
 * after close and every NULL or impossible argument is a clear error, and
 * a request handle that was completed never reaches the request that
 * reuses its memory.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harden.h"

#define H_ERR(expr, what)                                                     \
	do {                                                                  \
		int r_ = (expr);                                              \
		if (r_ == ncclSuccess)                                        \
			return oob_fail("%s: %s succeeded", what, #expr);     \
	} while (0)

/* Rank 0: a completed request's handle must not complete a new one. */
static int h_stale_request(struct h_ctx *x)
{
	static unsigned char a[64], b[64];
	void *ra, *rb;
	int done = 0, r;

	H_TRY(h_post_send(x, x->send, a, sizeof(a), 1, NULL, &ra));
	H_TRY(h_wait(x, ra, NULL, "first send"));
	/* Its memory is likely reused now.  The receiver holds back the
	 * matching receive, so the new send cannot finish yet. */
	H_TRY(h_post_send(x, x->send, b, sizeof(b), 2, NULL, &rb));
	r = zsm_client_test(x->c, ra, &done, NULL);
	H_EXPECT(r != ncclSuccess,
		 "test() of a request completed earlier returned success "
		 "(done %d): it reached the request that reuses it",
		 done);
	H_EXPECT(!done, "test() of a stale request said done");
	r = zsm_client_test(x->c, ra, &done, NULL);
	H_EXPECT(r != ncclSuccess, "a second stale test() succeeded");
	H_OOB(oob_barrier()); /* now rank 1 posts the second receive */
	H_TRY(h_wait(x, rb, NULL, "the send after the stale test()"));
	return OOB_PASS;
}

static int h_stale_request_peer(struct h_ctx *x)
{
	static unsigned char a[64], b[64];
	void *ra, *rb;

	H_TRY(h_post_recv(x, x->recv, a, sizeof(a), 1, NULL, &ra));
	H_TRY(h_wait(x, ra, NULL, "first receive"));
	H_OOB(oob_barrier());
	H_TRY(h_post_recv(x, x->recv, b, sizeof(b), 2, NULL, &rb));
	H_TRY(h_wait(x, rb, NULL, "second receive"));
	return OOB_PASS;
}

/*
 * deregMr right after posting a transfer that uses the registration, as
 * NCCL does when it closes a connection with requests outstanding: the
 * transfer must still finish and deliver every byte (ASan shows the
 * request reading a freed registration where it does not).
 */
static int h_dereg_inflight(struct h_ctx *x)
{
	enum { N = 4, SIZE = 3 << 20 };
	unsigned char *buf = malloc((size_t)N * SIZE);
	void *comm = x->rank ? x->recv : x->send, *mh[N], *req[N];
	int got, st = OOB_PASS;

	H_EXPECT(buf, "out of memory");
	for (int i = 0; i < N; i++) {
		unsigned char *p = buf + (size_t)i * SIZE;

		memset(p, x->rank ? 0 : 0x40 + i, SIZE);
		H_CALL(zsm_client_reg_mr(x->c, comm, p, SIZE, NCCL_PTR_HOST,
					 &mh[i]));
		if (x->rank)
			H_TRY(h_post_recv(x, comm, p, SIZE, 10 + i, mh[i],
					  &req[i]));
		else
			H_TRY(h_post_send(x, comm, p, SIZE, 10 + i, mh[i],
					  &req[i]));
		H_CALL(zsm_client_dereg_mr(x->c, comm, mh[i]));
	}
	/* Churn the heap over whatever the deregistrations freed. */
	for (int k = 0; k < 64; k++)
		free(memset(malloc(256), 0xff, 256));
	for (int i = 0; i < N && st == OOB_PASS; i++) {
		st = h_wait(x, req[i], &got, "a transfer whose registration "
					      "was dropped");
		for (size_t k = 0; st == OOB_PASS && x->rank && k < SIZE;
		     k += 4093)
			if (buf[(size_t)i * SIZE + k] != 0x40 + i)
				st = oob_fail("message %d arrived wrong after "
					      "its deregMr",
					      i);
	}
	free(buf);
	return st;
}

/* NULLs and impossible values straight into the table's slots. */
static int h_bad_arguments(struct h_ctx *x)
{
	const ncclNet_v12_t *t = zsm_client_table(x->c);
	void *ctx = zsm_client_ctx(x->c), *out = (void *)1, *mh = NULL;
	static unsigned char buf[4096];
	char handle[NCCL_NET_HANDLE_MAXSIZE] = {0};
	size_t size = 16;
	int tag = 1, done, r;

	H_EXPECT(zsm_client_abi(x->c) == 12, "needs the v12 table");
	H_ERR(t->devices(NULL), "devices(NULL)");
	H_ERR(t->getProperties(0, NULL), "getProperties(0, NULL)");
	H_ERR(t->listen(ctx, 0, NULL, &out), "listen with a NULL handle");
	H_ERR(t->listen(ctx, 0, handle, NULL), "listen with NULL listenComm");
	H_ERR(t->connect(ctx, 0, NULL, &out, NULL), "connect(NULL handle)");
	H_ERR(t->accept((void *)0x10, &out, NULL), "accept on 0x10");
	H_ERR(t->regMr(x->send, buf, sizeof(buf), NCCL_PTR_HOST, NULL),
	      "regMr with a NULL mhandle");
	H_ERR(t->isend(x->send, buf, 16, 1, NULL, NULL, NULL),
	      "isend with a NULL request");
	H_ERR(t->isend(x->send, NULL, 16, 1, NULL, NULL, &out),
	      "isend of 16 bytes from NULL");
	H_ERR(t->irecv(x->send, 1, NULL, &size, &tag, NULL, NULL, &out),
	      "irecv on a send comm");
	H_ERR(t->test(NULL, &done, NULL), "test(NULL)");
	H_ERR(t->test((void *)0x1, &done, NULL), "test(0x1)");
	H_ERR(t->test((void *)buf, &done, NULL), "test(a stack pointer)");
	H_ERR(t->closeSend((void *)buf), "closeSend(a stack pointer)");
	H_ERR(t->deregMr(x->send, (void *)buf), "deregMr(a stack pointer)");
	/* Memory that cannot be registered, and a type that is none. */
	H_ERR(t->regMr(x->send, buf, SIZE_MAX, NCCL_PTR_HOST, &mh),
	      "regMr of SIZE_MAX bytes");
	H_ERR(t->regMr(x->send, (void *)0x10, 4096, NCCL_PTR_HOST, &mh),
	      "regMr of address 0x10");
	r = t->regMr(x->send, buf, sizeof(buf), 99, &mh);
	H_EXPECT(r == ncclInvalidArgument,
		 "regMr of memory type 99 returned %s, not "
		 "ncclInvalidArgument (a bad argument is not the system's "
		 "error)",
		 zsm_client_result_str(r));
	return OOB_PASS;
}

#define H_ARG(expr, what)                                                     \
	do {                                                                  \
		int r_ = (expr);                                              \
		if (r_ != ncclInvalidArgument)                                \
			return oob_fail("%s returned %s, not "                \
					"ncclInvalidArgument",                \
					what, zsm_client_result_str(r_));     \
	} while (0)

/*
 * Sizes no buffer can have, and buffers past their registration, are bad
 * arguments in every table (issue 32, finding 11): v8's int sizes gave
 * ncclInternalError for -1, irecv took SIZE_MAX bytes on a 64-byte
 * registration, and iflush a size of -5.
 */
static int h_bad_sizes(struct h_ctx *x)
{
	static unsigned char buf[128];
	void *so = dlopen(h_opts.plugin, RTLD_NOW | RTLD_NOLOAD);
	const ncclNet_v8_t *v8 = so ? dlsym(so, "ncclNetPlugin_v8") : NULL;
	void *comm = x->rank ? x->recv : x->send, *mh = NULL, *req = NULL;
	void *data = buf;
	size_t huge = SIZE_MAX, big = sizeof(buf);
	int tag = 1, minus1 = -1, minus5 = -5;

	H_EXPECT(v8, "the plugin exports no ncclNetPlugin_v8");
	H_CALL(zsm_client_reg_mr(x->c, comm, buf, 64, NCCL_PTR_HOST, &mh));
	if (x->rank == 0) {
		H_ARG(v8->isend(comm, buf, -1, 1, NULL, &req),
		      "v8 isend of -1 bytes");
		H_ARG(zsm_client_isend(x->c, comm, buf, sizeof(buf), 1, mh,
				       &req),
		      "isend of 128 bytes on a 64-byte registration");
	} else {
		H_ARG(v8->irecv(comm, 1, &data, &minus1, &tag, &mh, &req),
		      "v8 irecv of -1 bytes");
		H_ARG(zsm_client_irecv(x->c, comm, 1, &data, &huge, &tag, &mh,
				       &req),
		      "irecv of SIZE_MAX bytes on a 64-byte registration");
		H_ARG(zsm_client_irecv(x->c, comm, 1, &data, &big, &tag, &mh,
				       &req),
		      "irecv of 128 bytes on a 64-byte registration");
		H_ARG(zsm_client_iflush(x->c, comm, 1, &data, &minus5, &mh,
					&req),
		      "iflush of -5 bytes");
	}
	H_EXPECT(!req, "a refused call handed out a request");
	H_CALL(zsm_client_dereg_mr(x->c, comm, mh));
	dlclose(so);
	return OOB_PASS;
}

/* Closing twice, deregistering twice, using what was closed. */
static int h_double_calls(struct h_ctx *x)
{
	static unsigned char buf[4096];
	char handle[NCCL_NET_HANDLE_MAXSIZE] = {0};
	void *mh = NULL, *lc = NULL, *req = NULL, *comm;
	int done;

	H_CALL(zsm_client_reg_mr(x->c, x->rank ? x->recv : x->send, buf,
				 sizeof(buf), NCCL_PTR_HOST, &mh));
	H_CALL(zsm_client_dereg_mr(x->c, x->rank ? x->recv : x->send, mh));
	H_ERR(zsm_client_dereg_mr(x->c, x->rank ? x->recv : x->send, mh),
	      "a second deregMr");
	H_CALL(zsm_client_listen(x->c, 0, handle, &lc));
	H_CALL(zsm_client_close_listen(x->c, lc));
	H_ERR(zsm_client_close_listen(x->c, lc), "a second closeListen");
	H_ERR(zsm_client_accept(x->c, lc, &comm), "accept on a closed "
						   "listen comm");
	if (x->rank == 0) {
		comm = x->send;
		x->send = NULL;
		H_CALL(zsm_client_close_send(x->c, comm));
		H_ERR(zsm_client_close_send(x->c, comm), "a second closeSend");
		H_ERR(zsm_client_isend(x->c, comm, buf, 16, 1, NULL, &req),
		      "isend on a closed send comm");
		/* A closed comm is the caller's misuse whatever the call
		 * (regMr said ncclInvalidArgument, isend ncclInvalidUsage). */
		H_EXPECT(zsm_client_reg_mr(x->c, comm, buf, sizeof(buf),
					   NCCL_PTR_HOST, &mh) ==
				 ncclInvalidUsage,
			 "regMr on a closed send comm is not "
			 "ncclInvalidUsage");
	} else {
		comm = x->recv;
		x->recv = NULL;
		H_CALL(zsm_client_close_recv(x->c, comm));
		H_ERR(zsm_client_close_recv(x->c, comm), "a second closeRecv");
		H_ERR(zsm_client_test(x->c, comm, &done, NULL),
		      "test() of a closed comm's handle");
	}
	return OOB_PASS;
}

int h_case_misuse(int rank, void *arg)
{
	const ncclNet_v12_t *t;
	struct h_ctx x;
	struct zsm_client *c;
	void *ctx;

	(void)arg;
	H_TRY(h_setup(&x, rank));
	H_TRY(h_exchange(&x, 1000, 3));
	H_TRY(rank == 0 ? h_stale_request(&x) : h_stale_request_peer(&x));
	H_OOB(oob_barrier());
	H_TRY(h_dereg_inflight(&x));
	H_OOB(oob_barrier());
	H_TRY(h_bad_arguments(&x));
	H_OOB(oob_barrier());
	H_TRY(h_bad_sizes(&x));
	H_OOB(oob_barrier());
	H_TRY(h_double_calls(&x));
	H_OOB(oob_barrier());
	c = x.c;
	ctx = zsm_client_ctx(c);
	t = zsm_client_table(c);
	H_CALL(t->finalize(ctx));
	H_ERR(t->finalize(ctx), "a second finalize");
	zsm_client_close(c);
	return OOB_PASS;
}
