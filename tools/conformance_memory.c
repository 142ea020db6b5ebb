/* SPDX-License-Identifier: MIT */
/*
 * zsm-conformance's checks of memory: mr_cache (repeated and overlapping
 * registrations), regmr_concurrent (regMr on another thread during
 * traffic) and gpu_buffers (NCCL_PTR_CUDA buffers, GPU to GPU).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cuda_drv.h"
#include "conformance.h"
#include "pattern.h"

/* ---------------------------------------------------------------------- */
/* registration cache: duplicates, overlaps, any deregistration order */

static int mr_transfer(struct lb_ctx *x, unsigned char *p, size_t len, void *mh,
		       uint32_t seed, const char *step)
{
	int sizes[64];
	void *req;
	long bad;

	if (x->rank == 0) {
		zsm_pattern_fill(p, len, seed);
		LB_OOB(oob_barrier());
		LB_TRY(lb_post_send(x, x->send, p, len, 0, mh, &req));
		LB_TRY(lb_wait(x, req, sizes, step));
	} else {
		void *vp = p;

		memset(p, 0, len);
		LB_TRY(lb_post_recv(x, x->recv, 1, &vp, &len, (int[]){ 0 }, &mh,
				    &req));
		LB_OOB(oob_barrier());
		LB_TRY(lb_wait(x, req, sizes, step));
		LB_EXPECT(sizes[0] == (int)len, "%s: size %d, expected %zu",
			  step, sizes[0], len);
		bad = zsm_pattern_check(p, len, seed);
		LB_EXPECT(bad < 0, "%s: byte %ld of %zu wrong", step, bad, len);
	}
	LB_OOB(oob_barrier());
	return OOB_PASS;
}

int check_mr_cache(int rank, void *arg)
{
	const size_t mib = 1u << 20;
	void *mh_a, *mh_b, *mh_c, *mh_d, *mh_e, *comm;
	struct lb_ctx x;
	struct lb_buf b;
	unsigned char *p;

	(void)arg;
	LB_TRY(lb_setup(&x, rank));
	LB_TRY(lb_buf_alloc(&b, 2 * mib));
	p = b.p;
	comm = rank ? x.recv : x.send;
	LB_CALL(&x, zsm_client_reg_mr(x.c, comm, p, mib, NCCL_PTR_HOST, &mh_a));
	LB_CALL(&x, zsm_client_reg_mr(x.c, comm, p, mib, NCCL_PTR_HOST, &mh_b));
	LB_CALL(&x, zsm_client_reg_mr(x.c, comm, p + 4096, 64 * 1024,
				      NCCL_PTR_HOST, &mh_c));
	LB_CALL(&x, zsm_client_reg_mr(x.c, comm, p + mib / 2, mib,
				      NCCL_PTR_HOST, &mh_d));
	LB_EXPECT(mh_a && mh_b && mh_c && mh_d, "regMr gave a NULL mhandle");

	/* The first of two identical registrations goes first. */
	LB_CALL(&x, zsm_client_dereg_mr(x.c, comm, mh_a));
	LB_TRY(mr_transfer(&x, p, mib, mh_b, 1, "twin registration"));
	LB_TRY(mr_transfer(&x, p + 4096, 64 * 1024, mh_c, 2,
			   "registration inside another"));
	/* Inner one deregistered while the outer ones live. */
	LB_CALL(&x, zsm_client_dereg_mr(x.c, comm, mh_c));
	LB_TRY(mr_transfer(&x, p + mib / 2, mib, mh_d, 3,
			   "partly overlapping registration"));
	LB_TRY(mr_transfer(&x, p, mib, mh_b, 4,
			   "twin after the inner one went"));
	LB_CALL(&x, zsm_client_dereg_mr(x.c, comm, mh_b));
	LB_TRY(mr_transfer(&x, p + mib / 2 + 1000, mib - 1000, mh_d, 5,
			   "overlap after the twin went"));
	/* A registration spanning everything, while mh_d lives. */
	LB_CALL(&x,
		zsm_client_reg_mr(x.c, comm, p, 2 * mib, NCCL_PTR_HOST, &mh_e));
	LB_TRY(mr_transfer(&x, p, 2 * mib, mh_e, 6, "covering registration"));
	LB_CALL(&x, zsm_client_dereg_mr(x.c, comm, mh_d));
	LB_TRY(mr_transfer(&x, p + 7, 2 * mib - 7, mh_e, 7,
			   "covering registration alone"));
	LB_CALL(&x, zsm_client_dereg_mr(x.c, comm, mh_e));
	/* Same range again after everything went. */
	LB_CALL(&x, zsm_client_reg_mr(x.c, comm, p, mib, NCCL_PTR_HOST, &mh_a));
	LB_TRY(mr_transfer(&x, p, mib, mh_a, 8, "registration after all went"));
	LB_CALL(&x, zsm_client_dereg_mr(x.c, comm, mh_a));
	LB_TRY(lb_buf_guards(&b, "mr_cache"));
	LB_TRY(lb_buf_free(&x, &b));
	return lb_teardown(&x);
}

/* ---------------------------------------------------------------------- */
/* regmr_concurrent: regMr/deregMr on a second thread during traffic */

#define RC_BUF ((size_t)1 << 20)
#define RC_MSGS 300
#define RC_MAX (64 * 1024)

struct rc_thread {
	struct zsm_client *c;
	void *comm;
	atomic_int stop;
	long iters;
	int result;
	const char *call;
};

/* Registers and deregisters slices of its own buffer until told to stop. */
static void *rc_loop(void *arg)
{
	struct rc_thread *t = arg;
	unsigned char *buf = malloc(RC_BUF);
	size_t off, len;
	void *mh;

	if (!buf) {
		t->result = ncclSystemError;
		t->call = "malloc";
		return NULL;
	}
	memset(buf, 0, RC_BUF);
	while (!atomic_load(&t->stop)) {
		/* Varying ranges, so a cache in the plugin is exercised. */
		off = (size_t)(t->iters % 61) * 4096 + (size_t)(t->iters % 7);
		len = RC_BUF - off - (size_t)(t->iters % 13) * 1000;
		mh = NULL;
		t->result = zsm_client_reg_mr(t->c, t->comm, buf + off, len,
					      NCCL_PTR_HOST, &mh);
		if (t->result || !mh) {
			t->call = "regMr";
			if (!t->result)
				t->result = ncclInternalError;
			break;
		}
		t->result = zsm_client_dereg_mr(t->c, t->comm, mh);
		if (t->result) {
			t->call = "deregMr";
			break;
		}
		t->iters++;
	}
	free(buf);
	return NULL;
}

int check_regmr_concurrent(int rank, void *arg)
{
	struct rc_thread t;
	struct lb_ctx x;
	struct lb_buf b;
	pthread_t th;
	int sizes[64], i, err;
	uint32_t seed;
	size_t size;
	void *req;

	(void)arg;
	LB_TRY(lb_setup(&x, rank));
	LB_TRY(lb_buf_alloc(&b, RC_MAX));
	LB_TRY(lb_buf_reg(&x, &b, rank ? x.recv : x.send));
	memset(&t, 0, sizeof(t));
	t.c = x.c;
	t.comm = rank ? x.recv : x.send;
	atomic_init(&t.stop, 0);
	err = pthread_create(&th, NULL, rc_loop, &t);
	LB_EXPECT(!err, "pthread_create: %s", strerror(err));
	for (i = 0; i < RC_MSGS; i++) {
		size = 1 + ((size_t)i * 7919) % RC_MAX;
		if (rank == 0) {
			zsm_pattern_fill(b.p, size, 700 + (uint32_t)i);
			LB_TRY(lb_post_send(&x, x.send, b.p, size, 1, b.mh,
					    &req));
			LB_TRY(lb_wait(&x, req, sizes, "send"));
		} else {
			LB_TRY(lb_post_recv(&x, x.recv, 1, &b.vp, &b.size,
					    (int[]){ 1 }, &b.mh, &req));
			LB_TRY(lb_wait(&x, req, sizes, "receive"));
			seed = 700 + (uint32_t)i;
			LB_EXPECT(sizes[0] == (int)size &&
					  zsm_pattern_check(b.p, size, seed) < 0,
				  "message %d while regMr ran on another "
				  "thread: size %d (sent %zu) or data wrong",
				  i, sizes[0], size);
		}
		/* Let the other thread run even on one core. */
		if (i % 16 == 0)
			sched_yield();
	}
	atomic_store(&t.stop, 1);
	pthread_join(th, NULL);
	LB_EXPECT(!t.result, "%s on the second thread returned %s after %ld "
			     "cycles",
		  t.call, zsm_client_result_str(t.result), t.iters);
	LB_EXPECT(t.iters > 0, "the second thread did no regMr/deregMr cycle");
	printf("# abi %d rank %d: %ld regMr/deregMr cycles during %d "
	       "messages\n",
	       lb_opts.abi, rank, t.iters, RC_MSGS);
	LB_OOB(oob_barrier());
	LB_TRY(lb_buf_free(&x, &b));
	return lb_teardown(&x);
}

/* ---------------------------------------------------------------------- */
/* GPU buffers (NCCL_PTR_CUDA) */

#define GB_TAIL 4096

static const size_t gb_sizes[] = { 1, 4097, (1u << 20) + 3, 64u << 20 };
#define GB_NSIZES (sizeof(gb_sizes) / sizeof(gb_sizes[0]))

/*
 * Whether this rank can run the check: the plugin advertises CUDA on the
 * device and this rank's GPU is there.  0, or OOB_SKIP with why filled.
 */
static int gb_ready(struct lb_ctx *x, struct zsm_cuda_drv *cu, int rank,
		    char *why, size_t len)
{
	struct zsm_client_props p;
	int r;

	r = zsm_client_get_properties(x->c, x->dev, &p);
	if (r) {
		snprintf(why, len, "getProperties returned %s",
			 zsm_client_result_str(r));
		return OOB_FAIL;
	}
	if (!(p.ptr_support & NCCL_PTR_CUDA)) {
		snprintf(why, len, "device %d does not advertise NCCL_PTR_CUDA "
				   "(ptrSupport 0x%x)",
			 x->dev, (unsigned)p.ptr_support);
		return OOB_SKIP;
	}
	if (zsm_cuda_drv_open(cu, why, len))
		return OOB_SKIP;
	if (zsm_cuda_drv_use_device(cu, lb_opts.gpu[rank], why, len))
		return OOB_SKIP;
	return OOB_PASS;
}

/*
 * One message of each size from rank 0's GPU to rank 1's.  The receiver's
 * buffer is poisoned past the message; after test() it calls iflush as
 * NCCL does before a kernel reads GPU data, then checks every byte and
 * that nothing past the message was written.
 */
static int gb_transfer(struct lb_ctx *x, struct zsm_cuda_drv *cu, size_t size,
		       int seed, zsm_cu_deviceptr dp, unsigned char *host)
{
	char why[256];
	void *mh = NULL, *req, *data = (void *)(uintptr_t)dp;
	void *comm = x->rank ? x->recv : x->send;
	int sizes[64], tag = seed, r;
	long bad;

	if (x->rank == 0) {
		zsm_pattern_fill(host, size, (unsigned)seed);
		LB_EXPECT(!zsm_cuda_drv_copy_htod(cu, dp, host, size, why,
						  sizeof(why)),
			  "%s", why);
	} else {
		LB_EXPECT(!zsm_cuda_drv_memset(cu, dp, LB_GUARD, size + GB_TAIL,
					       why, sizeof(why)),
			  "%s", why);
	}
	LB_CALL(x, zsm_client_reg_mr(x->c, comm, data, size + GB_TAIL,
				     NCCL_PTR_CUDA, &mh));
	LB_EXPECT(mh, "regMr(NCCL_PTR_CUDA) gave success and a NULL mhandle");
	if (x->rank == 0) {
		LB_TRY(lb_post_send(x, x->send, data, size, tag, mh, &req));
		LB_TRY(lb_wait(x, req, sizes, "GPU send"));
	} else {
		LB_TRY(lb_post_recv(x, x->recv, 1, &data, &size, &tag, &mh,
				    &req));
		LB_TRY(lb_wait(x, req, sizes, "GPU receive"));
		LB_EXPECT((size_t)sizes[0] == size,
			  "GPU receive of %zu bytes reported %d", size,
			  sizes[0]);
		req = (void *)0x1;
		r = zsm_client_iflush(x->c, x->recv, 1, &data, sizes, &mh,
				      &req);
		LB_EXPECT(r == ncclSuccess, "iflush returned %s",
			  zsm_client_result_str(r));
		if (req)
			LB_TRY(lb_wait(x, req, NULL, "iflush"));
		LB_EXPECT(!zsm_cuda_drv_copy_dtoh(cu, host, dp, size + GB_TAIL,
						  why, sizeof(why)),
			  "%s", why);
		bad = zsm_pattern_check(host, size, (unsigned)seed);
		LB_EXPECT(bad < 0, "%zu bytes GPU to GPU: byte %ld differs",
			  size, bad);
		bad = lb_verify_byte(host + size, GB_TAIL, LB_GUARD);
		LB_EXPECT(bad < 0,
			  "%zu bytes GPU to GPU: byte %zu past the message "
			  "was written",
			  size, size + (size_t)bad);
	}
	LB_OOB(oob_barrier());
	LB_CALL(x, zsm_client_dereg_mr(x->c, comm, mh));
	return OOB_PASS;
}

int check_gpu_buffers(int rank, void *arg)
{
	struct zsm_cuda_drv cu;
	struct lb_ctx x;
	zsm_cu_deviceptr dp = 0;
	unsigned char *host = NULL;
	char why[256] = "", peer_why[256];
	size_t i, max = gb_sizes[GB_NSIZES - 1] + GB_TAIL;
	int ready, peer, ret = OOB_PASS;

	(void)arg;
	memset(&cu, 0, sizeof(cu));
	LB_TRY(lb_open(&x, rank));
	/* Both ranks must be able to run it, or neither starts. */
	ready = gb_ready(&x, &cu, rank, why, sizeof(why));
	LB_OOB(oob_send(&ready, sizeof(ready)));
	LB_OOB(oob_send(why, sizeof(why)));
	LB_OOB(oob_recv(&peer, sizeof(peer)));
	LB_OOB(oob_recv(peer_why, sizeof(peer_why)));
	if (ready != OOB_PASS || peer != OOB_PASS) {
		zsm_cuda_drv_close(&cu);
		lb_teardown(&x);
		if (ready == OOB_FAIL)
			return oob_fail("%s", why);
		if (ready == OOB_SKIP)
			return oob_skip("%s", why);
		/* The partner's reason is the one printed. */
		return peer == OOB_FAIL ? OOB_PASS : OOB_SKIP;
	}
	LB_TRY(lb_connect_pair(&x, &x.send, &x.recv));
	host = malloc(max);
	LB_EXPECT(host, "out of memory for %zu bytes", max);
	if (zsm_cuda_drv_alloc(&cu, max, &dp, why, sizeof(why))) {
		free(host);
		return oob_fail("%s", why);
	}
	for (i = 0; i < GB_NSIZES && ret == OOB_PASS; i++)
		ret = gb_transfer(&x, &cu, gb_sizes[i], 50 + (int)i, dp,
				  host);
	zsm_cuda_drv_free(&cu, dp, why, sizeof(why));
	free(host);
	if (ret != OOB_PASS)
		return ret;
	if (rank == 1)
		printf("# abi %d: GPU %d to GPU %d: %zu sizes up to %zu bytes "
		       "byte-exact, nothing written past them\n",
		       lb_opts.abi, lb_opts.gpu[0], lb_opts.gpu[1], GB_NSIZES,
		       gb_sizes[GB_NSIZES - 1]);
	ret = lb_teardown(&x);
	zsm_cuda_drv_close(&cu);
	return ret;
}
