/* SPDX-License-Identifier: MIT */
/*
 * zsm-conformance's harness for the ncclNet checks: the run's shared
 * state, loading and unloading the plugin in a rank, a connection between
 * the pair, guarded buffers, and posting and waiting as NCCL's proxy does
 * (a NULL request retried, the rank's other requests tested meanwhile).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conformance.h"

struct lb_opts lb_opts = { NULL, 0, 0, { 0, 0 }, 0 };
int lb_scale = 1;
/* The check running, for WARN lines; set before each check forks. */
const char *lb_check_name = "init";
/* WARN lines of the whole run, in a page the forks share. */
atomic_int *lb_warnings;
/*
 * This rank's plugin, whose outstanding requests a wait drives (see
 * lb_idle); NULL while none is loaded.
 */
static struct zsm_client *lb_active;

void lb_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

double lb_ms_since(uint64_t t0)
{
	return (double)(zsm_client_now_ns() - t0) / 1e6;
}

/*
 * What a rank does whenever it waits (for its peer, or idles): test its
 * outstanding requests, as NCCL's proxy thread keeps testing them
 * whatever else happens; a provider with manual progress moves data only
 * inside such calls.  Returns how many are still outstanding.
 */
int lb_idle(void *arg)
{
	(void)arg;
	return lb_active ? zsm_client_progress(lb_active) : 0;
}

/* Sleep ms, driving this rank's outstanding requests meanwhile. */
void lb_idle_ms(unsigned ms)
{
	uint64_t t0 = zsm_client_now_ns();

	while (lb_ms_since(t0) < ms)
		lb_sleep_ms(lb_idle(NULL) ? 1 : ms / 10 + 1);
}

/*
 * A warning: something NCCL tolerates but a user should know of (a slow
 * call).  Printed at once, counted for the summary, never a failure.
 */
void lb_warn(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("WARN %s: rank %d: %s\n", lb_check_name, oob_rank(), msg);
	fflush(stdout);
	/* relaxed: main reads the count after it reaped every fork. */
	if (lb_warnings)
		atomic_fetch_add_explicit(lb_warnings, 1,
					  memory_order_relaxed);
}

long lb_verify_byte(const unsigned char *p, size_t len,
		    unsigned char byte)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != byte)
			return (long)i;
	return -1;
}

int lb_buf_alloc(struct lb_buf *b, size_t size)
{
	size_t total = LB_PAGE + size + LB_TAIL;

	memset(b, 0, sizeof(*b));
	total = (total + LB_PAGE - 1) / LB_PAGE * LB_PAGE;
	b->base = aligned_alloc(LB_PAGE, total);
	LB_EXPECT(b->base, "out of memory for %zu bytes", total);
	memset(b->base, LB_GUARD, total);
	b->p = b->base + LB_PAGE;
	b->vp = b->p;
	b->size = size;
	return OOB_PASS;
}

/* The page before and the tail after the buffer still hold the guard. */
int lb_buf_guards(const struct lb_buf *b, const char *what)
{
	long bad = lb_verify_byte(b->base, LB_PAGE, LB_GUARD);

	LB_EXPECT(bad < 0, "%s: guard byte %ld before the buffer overwritten",
		  what, LB_PAGE - bad);
	bad = lb_verify_byte(b->p + b->size, LB_TAIL, LB_GUARD);
	LB_EXPECT(bad < 0,
		  "%s: byte %zu of the %zu-byte buffer (past its end) "
		  "overwritten",
		  what, b->size + (size_t)bad, b->size);
	return OOB_PASS;
}

int lb_buf_reg(struct lb_ctx *x, struct lb_buf *b, void *comm)
{
	LB_CALL(x, zsm_client_reg_mr(x->c, comm, b->p, b->size, NCCL_PTR_HOST,
				     &b->mh));
	LB_EXPECT(b->mh, "regMr returned success and a NULL mhandle");
	b->mh_comm = comm;
	return OOB_PASS;
}

int lb_buf_free(struct lb_ctx *x, struct lb_buf *b)
{
	int ret = OOB_PASS;

	if (b->mh) {
		int r = zsm_client_dereg_mr(x->c, b->mh_comm, b->mh);

		if (r)
			ret = oob_fail("deregMr returned %s",
				       zsm_client_result_str(r));
		b->mh = NULL;
	}
	free(b->base);
	b->base = NULL;
	return ret;
}

/*
 * Load the plugin with request tracking on (see lb_idle) and make it this
 * rank's active one.
 */
int lb_client_open(struct lb_ctx *x)
{
	int r = zsm_client_open(lb_opts.plugin, lb_opts.abi, &x->c);

	LB_EXPECT(!r, "open %s abi %d: %s", lb_opts.plugin, lb_opts.abi,
		  zsm_client_result_str(r));
	zsm_client_track(x->c, 1);
	/* A scaled run is a slow one (valgrind): see zsm_client_yield. */
	zsm_client_yield(x->c, lb_scale > 1);
	lb_active = x->c;
	return OOB_PASS;
}

void lb_client_close(struct lb_ctx *x)
{
	if (lb_active == x->c)
		lb_active = NULL;
	zsm_client_close(x->c);
	x->c = NULL;
}

/* Load and init the plugin; the properties are not looked at yet. */
int lb_load(struct lb_ctx *x, int rank)
{
	int ndev = -1, r;

	memset(x, 0, sizeof(*x));
	x->rank = rank;
	x->dev = lb_opts.dev;
	LB_TRY(lb_client_open(x));
	r = zsm_client_init(x->c, 0x7a736d00u + (unsigned)lb_opts.abi);
	LB_EXPECT(!r, "init returned %s", zsm_client_result_str(r));
	LB_CALL(x, zsm_client_devices(x->c, &ndev));
	LB_EXPECT(ndev > x->dev, "device %d requested, plugin has %d", x->dev,
		  ndev);
	return OOB_PASS;
}

/* lb_load, and take the device's maxRecvs, which the checks size by. */
int lb_open(struct lb_ctx *x, int rank)
{
	struct zsm_client_props p;

	LB_TRY(lb_load(x, rank));
	LB_CALL(x, zsm_client_get_properties(x->c, x->dev, &p));
	LB_EXPECT(p.max_recvs >= 1 && p.max_recvs <= LB_RECVS_MAX,
		  "dev %d: maxRecvs %d outside [1, %d]: irecv's n is in [1, "
		  "maxRecvs] and NCCL's sizes array has %d entries "
		  "(nccl-plugin-abi.md 2.5 irecv, test)",
		  x->dev, p.max_recvs, LB_RECVS_MAX, LB_RECVS_MAX);
	x->max_recvs = p.max_recvs;
	return OOB_PASS;
}

/* Rank `listener` listens and accepts; the other rank connects. */
int lb_connect_to(struct lb_ctx *x, int listener, void **send,
		  void **recv)
{
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	const char *what;
	void *listen = NULL;
	int r;

	if (x->rank == listener) {
		memset(handle, 0, sizeof(handle));
		LB_CALL(x, zsm_client_listen(x->c, x->dev, handle, &listen));
		LB_EXPECT(listen,
			  "listen returned success and NULL listenComm");
		LB_OOB(oob_send(handle, sizeof(handle)));
		r = zsm_client_connect_accept(x->c, x->dev, NULL, listen, NULL,
					      recv, LB_CONNECT_MS, &what);
		LB_EXPECT(!r, "%s returned %s", what, zsm_client_result_str(r));
		LB_CALL(x, zsm_client_close_listen(x->c, listen));
	} else {
		LB_OOB(oob_recv(handle, sizeof(handle)));
		r = zsm_client_connect_accept(x->c, x->dev, handle, NULL, send,
					      NULL, LB_CONNECT_MS, &what);
		LB_EXPECT(!r, "%s returned %s", what, zsm_client_result_str(r));
	}
	return OOB_PASS;
}

/* Rank 1 listens and accepts, rank 0 connects: one 0 -> 1 connection. */
int lb_connect_pair(struct lb_ctx *x, void **send, void **recv)
{
	return lb_connect_to(x, 1, send, recv);
}

int lb_setup(struct lb_ctx *x, int rank)
{
	LB_TRY(lb_open(x, rank));
	LB_TRY(lb_connect_pair(x, &x->send, &x->recv));
	LB_OOB(oob_barrier());
	return OOB_PASS;
}

int lb_teardown(struct lb_ctx *x)
{
	if (x->send)
		LB_CALL(x, zsm_client_close_send(x->c, x->send));
	if (x->recv)
		LB_CALL(x, zsm_client_close_recv(x->c, x->recv));
	if (x->listen)
		LB_CALL(x, zsm_client_close_listen(x->c, x->listen));
	x->send = x->recv = x->listen = NULL;
	LB_CALL(x, zsm_client_finalize(x->c));
	lb_client_close(x);
	return OOB_PASS;
}

/*
 * isend, retrying a NULL request ("try again later", 2.5 isend) while the
 * rank's outstanding requests are tested, as NCCL's proxy would.
 */
int lb_post_send(struct lb_ctx *x, void *comm, void *data, size_t size,
		 int tag, void *mh, void **req)
{
	uint64_t t0 = zsm_client_now_ns();
	int r;

	for (;;) {
		*req = NULL;
		r = zsm_client_isend(x->c, comm, data, size, tag, mh, req);
		LB_EXPECT(!r, "isend(size %zu, tag %d) returned %s", size, tag,
			  zsm_client_result_str(r));
		if (*req)
			return OOB_PASS;
		LB_EXPECT(lb_ms_since(t0) < LB_POST_MS,
			  "isend(size %zu) kept returning a NULL request for "
			  "%d ms while the %d requests in flight were tested",
			  size, LB_POST_MS, zsm_client_outstanding(x->c));
		zsm_client_progress(x->c);
	}
}

int lb_post_recv(struct lb_ctx *x, void *comm, int n, void **data,
		 const size_t *sizes, const int *tags, void **mhs,
		 void **req)
{
	uint64_t t0 = zsm_client_now_ns();
	int r;

	for (;;) {
		*req = NULL;
		r = zsm_client_irecv(x->c, comm, n, data, sizes, tags, mhs,
				     req);
		LB_EXPECT(!r, "irecv(n %d, size[0] %zu) returned %s", n,
			  sizes[0], zsm_client_result_str(r));
		if (*req)
			return OOB_PASS;
		LB_EXPECT(lb_ms_since(t0) < LB_POST_MS,
			  "irecv(n %d) kept returning a NULL request for %d ms "
			  "while the %d requests in flight were tested",
			  n, LB_POST_MS, zsm_client_outstanding(x->c));
		zsm_client_progress(x->c);
	}
}

int lb_wait(struct lb_ctx *x, void *req, int *sizes, const char *what)
{
	int r = zsm_client_wait(x->c, req, sizes, LB_WAIT_MS);

	LB_EXPECT(r != ZSM_CLIENT_TIMEOUT, "%s: not done after %d ms", what,
		  LB_WAIT_MS);
	LB_EXPECT(!r, "%s: test returned %s", what, zsm_client_result_str(r));
	return OOB_PASS;
}
