/* SPDX-License-Identifier: MIT */
/*
 * zsm-conformance: load any NCCL net plugin the way NCCL does (dlopen
 * RTLD_NOW | RTLD_LOCAL, the highest ncclNetPlugin_vN or --abi N) and run a
 * catalog of named checks of its ncclNet table on this host.  Each check
 * runs in a fresh pair of forked processes, rank 0 sending and rank 1
 * receiving, under its own alarm, and prints PASS, FAIL or SKIP with one
 * line saying why; the run ends with "N passed, N failed, N skipped".
 * Exit 0 when all pass, 1 on any failure, 2 on bad usage, 77 when nothing
 * could run (no usable device).  docs/conformance.md lists the checks and
 * the NCCL rule behind each.  With --rma the run is conformance_rma.c's
 * instead: checks of the plugin's NCCL RMA table between N ranks.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/cuda_drv.h"
#include "conformance_rma.h"
#include "oob.h"
#include "pattern.h"
#include "preload.h"
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

static struct lb_opts lb_opts = { NULL, 0, 0, { 0, 0 }, 0 };
static int lb_scale = 1;
/* The check running, for WARN lines; set before each check forks. */
static const char *lb_check_name = "init";
/* WARN lines of the whole run, in a page the forks share. */
static atomic_int *lb_warnings;
/*
 * This rank's plugin, whose outstanding requests a wait drives (see
 * lb_idle); NULL while none is loaded.
 */
static struct zsm_client *lb_active;

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

static void lb_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static double lb_ms_since(uint64_t t0)
{
	return (double)(zsm_client_now_ns() - t0) / 1e6;
}

/*
 * What a rank does whenever it waits (for its peer, or idles): test its
 * outstanding requests, as NCCL's proxy thread keeps testing them
 * whatever else happens; a provider with manual progress moves data only
 * inside such calls.  Returns how many are still outstanding.
 */
static int lb_idle(void *arg)
{
	(void)arg;
	return lb_active ? zsm_client_progress(lb_active) : 0;
}

/* Sleep ms, driving this rank's outstanding requests meanwhile. */
static void lb_idle_ms(unsigned ms)
{
	uint64_t t0 = zsm_client_now_ns();

	while (lb_ms_since(t0) < ms)
		lb_sleep_ms(lb_idle(NULL) ? 1 : ms / 10 + 1);
}

/*
 * A warning: something NCCL tolerates but a user should know of (a slow
 * call).  Printed at once, counted for the summary, never a failure.
 */
static void lb_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void lb_warn(const char *fmt, ...)
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


static long lb_verify_byte(const unsigned char *p, size_t len,
			   unsigned char byte)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != byte)
			return (long)i;
	return -1;
}

static int lb_buf_alloc(struct lb_buf *b, size_t size)
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
static int lb_buf_guards(const struct lb_buf *b, const char *what)
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

static int lb_buf_reg(struct lb_ctx *x, struct lb_buf *b, void *comm)
{
	LB_CALL(x, zsm_client_reg_mr(x->c, comm, b->p, b->size, NCCL_PTR_HOST,
				     &b->mh));
	LB_EXPECT(b->mh, "regMr returned success and a NULL mhandle");
	b->mh_comm = comm;
	return OOB_PASS;
}

static int lb_buf_free(struct lb_ctx *x, struct lb_buf *b)
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
static int lb_client_open(struct lb_ctx *x)
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

static void lb_client_close(struct lb_ctx *x)
{
	if (lb_active == x->c)
		lb_active = NULL;
	zsm_client_close(x->c);
	x->c = NULL;
}

/* Load and init the plugin; the properties are not looked at yet. */
static int lb_load(struct lb_ctx *x, int rank)
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
static int lb_open(struct lb_ctx *x, int rank)
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
static int lb_connect_to(struct lb_ctx *x, int listener, void **send,
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
static int lb_connect_pair(struct lb_ctx *x, void **send, void **recv)
{
	return lb_connect_to(x, 1, send, recv);
}

static int lb_setup(struct lb_ctx *x, int rank)
{
	LB_TRY(lb_open(x, rank));
	LB_TRY(lb_connect_pair(x, &x->send, &x->recv));
	LB_OOB(oob_barrier());
	return OOB_PASS;
}

static int lb_teardown(struct lb_ctx *x)
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
static int lb_post_send(struct lb_ctx *x, void *comm, void *data, size_t size,
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

static int lb_post_recv(struct lb_ctx *x, void *comm, int n, void **data,
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

static int lb_wait(struct lb_ctx *x, void *req, int *sizes, const char *what)
{
	int r = zsm_client_wait(x->c, req, sizes, LB_WAIT_MS);

	LB_EXPECT(r != ZSM_CLIENT_TIMEOUT, "%s: not done after %d ms", what,
		  LB_WAIT_MS);
	LB_EXPECT(!r, "%s: test returned %s", what, zsm_client_result_str(r));
	return OOB_PASS;
}

/* ---------------------------------------------------------------------- */
/* properties */

/*
 * Every problem the properties check finds: each one printed on its own
 * "#" line as found, the first few joined into the FAIL reason.
 */
struct pr_notes {
	char why[600];
	int count;
};

static void pr_bad(struct pr_notes *n, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void pr_bad(struct pr_notes *n, const char *fmt, ...)
{
	size_t used = strlen(n->why);
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("# properties: %s\n", msg);
	if (used + strlen(msg) + 3 < sizeof(n->why))
		snprintf(n->why + used, sizeof(n->why) - used, "%s%s",
			 used ? "; " : "", msg);
	n->count++;
}

/* Whether getProperties left the field called name unwritten. */
static int pr_unwritten(const struct zsm_client_props *p, const char *name)
{
	size_t len = strlen(name);
	const char *s = p->unwritten;

	while ((s = strstr(s, name))) {
		if ((s == p->unwritten || s[-1] == ',') &&
		    (s[len] == ',' || !s[len]))
			return 1;
		s += len;
	}
	return 0;
}

/* A string field, or NULL where it was never written (its bytes are 0xA5). */
#define PR_STR(p, field, name) (pr_unwritten(p, name) ? NULL : (p)->field)

/* The first field whose value differs between two calls, or NULL. */
static const char *pr_differs(const struct zsm_client_props *a,
			      const struct zsm_client_props *b)
{
	const char *an = PR_STR(a, name, "name"), *bn = PR_STR(b, name, "name");
	const char *ap = PR_STR(a, pci_path, "pciPath");
	const char *bp = PR_STR(b, pci_path, "pciPath");

	if (!an != !bn || (an && strcmp(an, bn)))
		return "name";
	if (!ap != !bp || (ap && strcmp(ap, bp)))
		return "pciPath";
	/* Past the two pointers, every byte: pointers may differ, values
	 * may not. */
	if (memcmp(a->raw + 16, b->raw + 16, a->raw_size - 16))
		return "a field after pciPath";
	return NULL;
}

/*
 * One device's properties against NCCL's rules (nccl-plugin-abi.md 2.3
 * and 6.2, 6.4): every field written, values NCCL accepts.
 */
static void pr_device(struct pr_notes *n, int d,
		      const struct zsm_client_props *p)
{
	const unsigned known = NCCL_PTR_HOST | NCCL_PTR_CUDA | NCCL_PTR_DMABUF;
	int abi = lb_opts.abi;

	if (p->unwritten[0])
		pr_bad(n, "dev %d: getProperties left %s unwritten (still "
			  "0xA5 bytes): NCCL reads the struct uninitialised, "
			  "so every field must be written (2.3, 6.2)",
		       d, p->unwritten);
	if (!pr_unwritten(p, "ptrSupport") &&
	    (!(p->ptr_support & NCCL_PTR_HOST) || (p->ptr_support & ~known)))
		pr_bad(n, "dev %d: ptrSupport 0x%x: must include NCCL_PTR_HOST "
			  "and only HOST, CUDA, DMABUF (0x1, 0x2, 0x4) (2.1, "
			  "2.3)",
		       d, (unsigned)p->ptr_support);
	if (!pr_unwritten(p, "netDeviceType") &&
	    p->net_device_type != NCCL_NET_DEVICE_HOST)
		pr_bad(n, "dev %d: netDeviceType %d: a net plugin must report "
			  "HOST (0) or NCCL drops it silently (6.4)",
		       d, p->net_device_type);
	if (!pr_unwritten(p, "netDeviceVersion") &&
	    p->net_device_version != NCCL_NET_DEVICE_INVALID_VERSION)
		pr_bad(n, "dev %d: netDeviceVersion %d: 0 "
			  "(NCCL_NET_DEVICE_INVALID_VERSION) for HOST (2.3)",
		       d, p->net_device_version);
	if (!pr_unwritten(p, "maxRecvs") &&
	    (p->max_recvs < 1 || p->max_recvs > LB_RECVS_MAX))
		pr_bad(n, "dev %d: maxRecvs %d outside [1, %d]: irecv's n is "
			  "in [1, maxRecvs] and test's sizes array has %d "
			  "entries (2.3, 2.5 irecv, test)",
		       d, p->max_recvs, LB_RECVS_MAX, LB_RECVS_MAX);
	if (!pr_unwritten(p, "speed") && p->speed <= 0)
		pr_bad(n, "dev %d: speed %d Mbps: must be positive (2.3)", d,
		       p->speed);
	if (!pr_unwritten(p, "port") && p->port < 0)
		pr_bad(n, "dev %d: port %d: negative (2.3)", d, p->port);
	if (!pr_unwritten(p, "latency") &&
	    (p->latency != p->latency || p->latency < 0))
		pr_bad(n, "dev %d: latency %g us: must be a number >= 0, 0 for "
			  "NCCL's defaults (2.3)",
		       d, (double)p->latency);
	if (!pr_unwritten(p, "maxComms") && p->max_comms <= 0)
		pr_bad(n, "dev %d: maxComms %d: must be positive (2.3)", d,
		       p->max_comms);
	if (abi < 9)
		return; /* NCCL's v8 layer fills the rest itself (2.3) */
	if (!pr_unwritten(p, "maxP2pBytes") &&
	    (p->max_p2p_bytes == 0 ||
	     p->max_p2p_bytes > NCCL_MAX_NET_SIZE_BYTES))
		pr_bad(n, "dev %d: maxP2pBytes %zu outside (0, 1 TiB]: NCCL's "
			  "proxy setup fails (2.1, 6.2)",
		       d, p->max_p2p_bytes);
	if (!pr_unwritten(p, "maxCollBytes") &&
	    (p->max_coll_bytes == 0 ||
	     p->max_coll_bytes > NCCL_MAX_NET_SIZE_BYTES))
		pr_bad(n, "dev %d: maxCollBytes %zu outside (0, 1 TiB]: NCCL's "
			  "proxy setup fails (2.1, 6.2)",
		       d, p->max_coll_bytes);
	if (!pr_unwritten(p, "vProps.ndevs") &&
	    (p->vprops_ndevs != 1 || p->vprops_devs[0] != d))
		pr_bad(n, "dev %d: vProps {%d, {%d, ...}}: a physical device "
			  "is {1, {%d}} (2.3 vProps)",
		       d, p->vprops_ndevs, p->vprops_devs[0], d);
	if (abi >= 12 && (p->rail_id < -1 || p->plane_id < -1))
		pr_bad(n, "dev %d: railId %d, planeId %d: an id, or -1 for "
			  "undefined (2.3)",
		       d, p->rail_id, p->plane_id);
}

static int check_properties(int rank, void *arg)
{
	struct zsm_client_props p, again;
	char names[64][128];
	struct pr_notes n;
	struct lb_ctx x;
	const char *name, *diff;
	int ndev = 0, d, e, r;

	(void)arg;
	if (rank == 1)
		return OOB_PASS;
	memset(&n, 0, sizeof(n));
	LB_TRY(lb_load(&x, rank));
	LB_CALL(&x, zsm_client_devices(x.c, &ndev));
	LB_EXPECT(ndev > 0 && ndev <= 64, "devices() gave %d", ndev);
	for (d = 0; d < ndev; d++) {
		names[d][0] = '\0';
		r = zsm_client_get_properties(x.c, d, &p);
		if (r) {
			pr_bad(&n, "dev %d: getProperties returned %s", d,
			       zsm_client_result_str(r));
			continue;
		}
		pr_device(&n, d, &p);
		name = PR_STR(&p, name, "name");
		if (!name || !name[0]) {
			if (name)
				pr_bad(&n, "dev %d: empty name: NCCL logs it "
					   "and keys its topology by it (2.3)",
				       d);
		} else {
			snprintf(names[d], sizeof(names[d]), "%s", name);
			for (e = 0; e < d; e++)
				if (!strcmp(names[e], names[d]))
					break;
			if (e < d)
				pr_bad(&n, "devs %d and %d are both named "
					   "'%s': NCCL matches its topology "
					   "by name, so names must be unique "
					   "per device (2.3 name, 6.2)",
				       e, d, names[d]);
		}
		/* Pure: a second call writes the same values (2.5). */
		r = zsm_client_get_properties(x.c, d, &again);
		diff = r ? "the result" : pr_differs(&p, &again);
		if (diff)
			pr_bad(&n, "dev %d: two getProperties calls differ "
				   "in %s: NCCL calls it many times and "
				   "expects it pure (2.5 devices)",
			       d, diff);
	}
	if (n.count)
		return oob_fail("%d bad propert%s of %d device%s (each on a # "
				"line): %s",
				n.count, n.count == 1 ? "y" : "ies", ndev,
				ndev == 1 ? "" : "s", n.why);
	printf("# abi %d: %d device%s, maxRecvs %d on dev %d\n", lb_opts.abi,
	       ndev, ndev == 1 ? "" : "s", p.max_recvs, ndev - 1);
	return lb_teardown(&x);
}

/* ---------------------------------------------------------------------- */
/* connect: repeated with the same handle, each call quick */

/*
 * connect, accept and listen must not block (2.5): NCCL's service thread
 * makes them, and a call that holds it holds every other connection's
 * set-up.  A call over CR_WARN_MS is worth a warning; one over CR_BLOCK_MS
 * blocks, which fails.
 */
#define CR_WARN_MS (100.0 * lb_scale)
#define CR_BLOCK_MS (2000.0 * lb_scale)
/* A connection, all calls together, within 10 s (300 ms of it waiting). */
#define CR_DONE_MS (10000.0 * lb_scale)

/* The slowest call of one kind in one connection. */
struct cr_worst {
	double ms;
	int call;
};

static void cr_note(struct cr_worst *w, double ms, int call)
{
	if (ms > w->ms) {
		w->ms = ms;
		w->call = call;
	}
}

/*
 * One 0 -> 1 connection, timing every listen/connect/accept call.  Rank 1
 * waits 300 ms before accepting so that rank 0 calls connect repeatedly.
 */
static int cr_connect(struct lb_ctx *x, int round, struct cr_worst *w,
		      int *ncalls)
{
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	void **comm = x->rank ? &x->recv : &x->send;
	void *listen = NULL;
	uint64_t t0, start;
	int calls = 0, r;

	if (x->rank == 1) {
		memset(handle, 0, sizeof(handle));
		t0 = zsm_client_now_ns();
		LB_CALL(x, zsm_client_listen(x->c, x->dev, handle, &listen));
		cr_note(w, lb_ms_since(t0), -1);
		LB_EXPECT(w->ms < CR_BLOCK_MS,
			  "connection %d: listen blocked for %.0f ms (limit "
			  "%.0f ms): listen must not block (2.5 listen)",
			  round, w->ms, CR_BLOCK_MS);
		LB_OOB(oob_send(handle, sizeof(handle)));
		lb_idle_ms(300);
	} else {
		LB_OOB(oob_recv(handle, sizeof(handle)));
	}
	start = zsm_client_now_ns();
	while (!*comm) {
		double ms;

		t0 = zsm_client_now_ns();
		if (x->rank == 1)
			r = zsm_client_accept(x->c, listen, comm);
		else
			r = zsm_client_connect(x->c, x->dev, handle, comm);
		ms = lb_ms_since(t0);
		cr_note(w, ms, calls);
		LB_EXPECT(!r, "connection %d: %s call %d returned %s", round,
			  x->rank ? "accept" : "connect", calls,
			  zsm_client_result_str(r));
		LB_EXPECT(ms < CR_BLOCK_MS,
			  "connection %d: %s call %d blocked for %.0f ms "
			  "(limit %.0f ms): connect and accept must not "
			  "block; NCCL calls again while the result is NULL "
			  "(2.5 connect, accept)",
			  round, x->rank ? "accept" : "connect", calls, ms,
			  CR_BLOCK_MS);
		LB_EXPECT(lb_ms_since(start) < CR_DONE_MS,
			  "connection %d: %s not done after %d calls in "
			  "%.0f ms (limit %.0f ms): a connection whose peer "
			  "answers must complete (2.5 connect)",
			  round, x->rank ? "accept" : "connect", calls,
			  lb_ms_since(start), CR_DONE_MS);
		calls++;
		/*
		 * Under valgrind (a scaled run) one thread runs at a time: a
		 * loop of calls that say "not yet" keeps the plugin's own
		 * thread, which would finish the connection, off the CPU for
		 * millions of calls (17 million accepts, 2 minutes, in one
		 * run).  A yield lets it run, as NCCL's proxy does other work
		 * between its calls.
		 */
		if (!*comm && lb_scale > 1)
			sched_yield();
	}
	if (listen)
		LB_CALL(x, zsm_client_close_listen(x->c, listen));
	*ncalls = calls;
	return OOB_PASS;
}

static int check_connect_retry(int rank, void *arg)
{
	struct cr_worst w[2] = { { 0, 0 }, { 0, 0 } };
	const char *what = rank ? "accept" : "connect";
	int calls[2], sizes[64], round;
	struct lb_ctx x;
	struct lb_buf b;
	void *req;

	(void)arg;
	LB_TRY(lb_open(&x, rank));
	for (round = 0; round < 2; round++) {
		LB_TRY(cr_connect(&x, round + 1, &w[round], &calls[round]));
		LB_TRY(lb_buf_alloc(&b, 64));
		LB_TRY(lb_buf_reg(&x, &b, rank ? x.recv : x.send));
		if (rank == 1) {
			void *d = b.p;

			LB_TRY(lb_post_recv(&x, x.recv, 1, &d, &b.size,
					    (int[]){ 1 }, &b.mh, &req));
			LB_TRY(lb_wait(&x, req, sizes,
				       "receive after connect"));
			LB_EXPECT(sizes[0] == 64 && zsm_pattern_check(b.p, 64, 99) < 0,
				  "message after connect: size %d or data "
				  "wrong",
				  sizes[0]);
		} else {
			zsm_pattern_fill(b.p, 64, 99);
			LB_TRY(lb_post_send(&x, x.send, b.p, 64, 1, b.mh,
					    &req));
			LB_TRY(lb_wait(&x, req, sizes, "send after connect"));
		}
		LB_OOB(oob_barrier());
		LB_TRY(lb_buf_free(&x, &b));
		if (x.send)
			LB_CALL(&x, zsm_client_close_send(x.c, x.send));
		if (x.recv)
			LB_CALL(&x, zsm_client_close_recv(x.c, x.recv));
		x.send = x.recv = NULL;
	}
	printf("# abi %d rank %d: %s done after %d and %d calls; slowest "
	       "%.2f ms (call %d) and %.2f ms (call %d)\n",
	       lb_opts.abi, rank, what, calls[0], calls[1], w[0].ms, w[0].call,
	       w[1].ms, w[1].call);
	for (round = 0; round < 2; round++) {
		char call[48];

		if (w[round].ms < CR_WARN_MS)
			continue;
		if (w[round].call < 0)
			snprintf(call, sizeof(call), "listen");
		else
			snprintf(call, sizeof(call), "%s call %d", what,
				 w[round].call);
		lb_warn("connection %d: %s took %.1f ms (a warning over %.0f "
			"ms, a failure over %.0f ms: NCCL's service thread "
			"waits for it, 2.5 connect)",
			round + 1, call, w[round].ms, CR_WARN_MS, CR_BLOCK_MS);
	}
	return lb_teardown(&x);
}

/* ---------------------------------------------------------------------- */
/* a forged handle, or one whose listener closed, makes connect fail */

/*
 * A connect that cannot succeed must end in an error (2.5 connect: an
 * error fails the connection); one that pends for ever hangs NCCL's
 * set-up.  The plugin may need its own timeout to tell (a handle can name
 * an address where nobody answers), so the bound is generous; taking
 * longer than BH_SLOW_MS is worth a warning.
 */
#define BH_PEND_MS (60000 * lb_scale)
#define BH_SLOW_MS (5000 * lb_scale)
/* The child's alarm: each connect's bound, load and init, teardown. */
#define BH_CHILD_S(n) ((unsigned)((n) * (BH_PEND_MS / 1000) + 15 * lb_scale))

struct bh_case {
	const char *kind;
	unsigned char handle[NCCL_NET_HANDLE_MAXSIZE];
};

/*
 * The forged connects of a check, made by one child process; at, in a
 * page the child shares, says which one it is making.
 */
struct bh_run {
	struct bh_case *cases;
	int ncases;
	volatile int *at;
};

/* One connect that must fail: an error, in time, no sendComm. */
static int bh_connect_one(struct lb_ctx *x, struct bh_case *bc)
{
	uint64_t start = zsm_client_now_ns();
	void *send = NULL;
	double ms;
	int r, calls = 0;

	for (;;) {
		r = zsm_client_connect(x->c, x->dev, bc->handle, &send);
		calls++;
		ms = lb_ms_since(start);
		if (r)
			break;
		if (send) {
			zsm_client_close_send(x->c, send);
			return oob_fail("connect with a %s handle returned a "
					"sendComm after %d calls",
					bc->kind, calls);
		}
		LB_EXPECT(ms < BH_PEND_MS,
			  "connect with a %s handle still in progress after "
			  "%.0f s (%d calls, limit %d s): it must fail, not "
			  "pend for ever (2.5 connect)",
			  bc->kind, ms / 1000, calls, BH_PEND_MS / 1000);
		lb_sleep_ms(1);
	}
	printf("# abi %d: connect with a %s handle: %s after %d calls, "
	       "%.0f ms\n",
	       lb_opts.abi, bc->kind, zsm_client_result_str(r), calls, ms);
	if (ms > BH_SLOW_MS)
		lb_warn("connect with a %s handle took %.1f s to fail (a "
			"warning over %d s, a failure over %d s)",
			bc->kind, ms / 1000, BH_SLOW_MS / 1000,
			BH_PEND_MS / 1000);
	return OOB_PASS;
}

/*
 * Take back the signals of a crash from whatever library took them when
 * it loaded: libfabric's psm providers (Debian's libfabric brings them)
 * print a backtrace and exit(1) on SIGSEGV, which would hide the crash
 * the parent is to report.
 */
static void bh_default_fatal_signals(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = SIG_DFL;
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

/* In the child process: load the plugin and make every connect. */
static int bh_child(void *arg)
{
	struct bh_run *run = arg;
	struct lb_ctx x;
	int i;

	LB_TRY(lb_open(&x, 0));
	bh_default_fatal_signals();
	for (i = 0; i < run->ncases; i++) {
		*run->at = i;
		LB_TRY(bh_connect_one(&x, &run->cases[i]));
	}
	return lb_teardown(&x);
}

/*
 * Rank 0 makes the connects in a child of its own, which it forks before
 * it loads the plugin itself (a fork copies no plugin threads), so that
 * a crash is a verdict naming the handle rather than the end of the
 * check.
 */
static int bh_connect_children(struct bh_case *cases, int ncases)
{
	struct bh_run run = { cases, ncases, NULL };
	const char *kind;
	char why[512];
	int r;

	run.at = mmap(NULL, sizeof(*run.at), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	LB_EXPECT(run.at != MAP_FAILED, "mmap: %s", strerror(errno));
	*run.at = -1;
	oob_doing("waiting for a child's connects with bad handles");
	r = oob_isolated(bh_child, &run, BH_CHILD_S(ncases), why,
			 sizeof(why));
	oob_doing(NULL);
	kind = *run.at >= 0 ? cases[*run.at].kind : "no";
	munmap((void *)run.at, sizeof(*run.at));
	if (r == OOB_PASS || r == OOB_SKIP)
		return r == OOB_SKIP ? oob_skip("%s", why) : OOB_PASS;
	if (!strncmp(why, "crashed", 7))
		return oob_fail("connect with a %s handle %s", kind, why);
	if (!strncmp(why, "still running", 13))
		return oob_fail("connect with a %s handle: the child process "
				"was %s (a call that never returned?)",
				kind, why);
	return oob_fail("%s", why);
}

/* The plugin still carries a message on a fresh connection. */
static int bh_still_works(struct lb_ctx *x, const char *after)
{
	struct lb_buf b;
	int sizes[64];
	void *req;

	LB_TRY(lb_connect_pair(x, &x->send, &x->recv));
	LB_TRY(lb_buf_alloc(&b, 100));
	LB_TRY(lb_buf_reg(x, &b, x->rank ? x->recv : x->send));
	if (x->rank == 0) {
		zsm_pattern_fill(b.p, 100, 5);
		LB_TRY(lb_post_send(x, x->send, b.p, 100, 0, b.mh, &req));
	} else {
		LB_TRY(lb_post_recv(x, x->recv, 1, &b.vp, &b.size, (int[]){ 0 },
				    &b.mh, &req));
	}
	LB_TRY(lb_wait(x, req, sizes, after));
	if (x->rank == 1)
		LB_EXPECT(sizes[0] == 100 && zsm_pattern_check(b.p, 100, 5) < 0,
			  "%s: wrong data", after);
	LB_OOB(oob_barrier());
	LB_TRY(lb_buf_free(x, &b));
	return lb_teardown(x);
}

static int check_bad_handle(int rank, void *arg)
{
	struct bh_case cases[3] = { { "random", { 0 } },
				    { "zeroed", { 0 } },
				    { "corrupted", { 0 } } };
	unsigned char real[NCCL_NET_HANDLE_MAXSIZE];
	unsigned seed = 12345;
	struct lb_ctx x;
	void *listen = NULL;
	size_t i;

	(void)arg;
	if (rank == 1) {
		/* A real handle, whose listener lives while rank 0 tries. */
		LB_TRY(lb_open(&x, rank));
		memset(real, 0, sizeof(real));
		LB_CALL(&x, zsm_client_listen(x.c, x.dev, real, &listen));
		LB_OOB(oob_send(real, sizeof(real)));
		LB_OOB(oob_barrier());
		LB_CALL(&x, zsm_client_close_listen(x.c, listen));
		return bh_still_works(&x, "transfer after bad handles");
	}
	LB_OOB(oob_recv(real, sizeof(real)));
	for (i = 0; i < sizeof(real); i++)
		cases[0].handle[i] = (unsigned char)rand_r(&seed);
	/* A real handle with garbage after its first 8 bytes. */
	memcpy(cases[2].handle, real, sizeof(real));
	for (i = 8; i < sizeof(real); i++)
		cases[2].handle[i] = (unsigned char)rand_r(&seed);
	LB_TRY(bh_connect_children(cases, 3));
	LB_TRY(lb_open(&x, rank));
	LB_OOB(oob_barrier());
	return bh_still_works(&x, "transfer after bad handles");
}

static int check_connect_closed_listener(int rank, void *arg)
{
	struct bh_case closed = { "closed listener's", { 0 } };
	struct lb_ctx x;
	void *listen = NULL;

	(void)arg;
	if (rank == 1) {
		/* The process lives on; only its listen comm is gone. */
		LB_TRY(lb_open(&x, rank));
		LB_CALL(&x, zsm_client_listen(x.c, x.dev, closed.handle,
					      &listen));
		LB_CALL(&x, zsm_client_close_listen(x.c, listen));
		LB_OOB(oob_send(closed.handle, sizeof(closed.handle)));
		LB_OOB(oob_barrier());
		return bh_still_works(&x, "transfer after the closed "
					  "listener");
	}
	LB_OOB(oob_recv(closed.handle, sizeof(closed.handle)));
	LB_TRY(bh_connect_children(&closed, 1));
	LB_TRY(lb_open(&x, rank));
	LB_OOB(oob_barrier());
	return bh_still_works(&x, "transfer after the closed listener");
}

/* ---------------------------------------------------------------------- */
/* sends with one tag match receives in posting order */

#define ORDER_N 16
#define ORDER_SLOT 8192

static size_t order_size(int i)
{
	return 1000 + 397 * (size_t)i;
}

static int order_round(struct lb_ctx *x, struct lb_buf *b, int sender_first,
		       uint32_t seed0)
{
	void *req[ORDER_N];
	int i, sizes[1];

	if (x->rank == 0) {
		for (i = 0; i < ORDER_N; i++)
			zsm_pattern_fill(b->p + i * ORDER_SLOT, order_size(i),
				seed0 + (uint32_t)i);
		if (!sender_first)
			LB_OOB(oob_barrier());
		for (i = 0; i < ORDER_N; i++)
			LB_TRY(lb_post_send(x, x->send, b->p + i * ORDER_SLOT,
					    order_size(i), 7, b->mh, &req[i]));
		if (sender_first)
			LB_OOB(oob_barrier());
		for (i = 0; i < ORDER_N; i++)
			LB_TRY(lb_wait(x, req[i], sizes, "send"));
		return OOB_PASS;
	}
	memset(b->p, 0, b->size);
	if (sender_first)
		LB_OOB(oob_barrier());
	for (i = 0; i < ORDER_N; i++) {
		void *data = b->p + i * ORDER_SLOT;
		size_t size = ORDER_SLOT;

		LB_TRY(lb_post_recv(x, x->recv, 1, &data, &size, (int[]){ 7 },
				    &b->mh, &req[i]));
	}
	if (!sender_first)
		LB_OOB(oob_barrier());
	for (i = 0; i < ORDER_N; i++) {
		long bad;

		LB_TRY(lb_wait(x, req[i], sizes, "receive"));
		LB_EXPECT(sizes[0] == (int)order_size(i),
			  "%s: receive %d got %d bytes, send %d had %zu",
			  sender_first ? "sends first" : "receives first", i,
			  sizes[0], i, order_size(i));
		bad = zsm_pattern_check(b->p + i * ORDER_SLOT, order_size(i),
				seed0 + (uint32_t)i);
		LB_EXPECT(bad < 0, "%s: receive %d: byte %ld is not send %d's",
			  sender_first ? "sends first" : "receives first", i,
			  bad, i);
		bad = lb_verify_byte(b->p + i * ORDER_SLOT + order_size(i),
				     ORDER_SLOT - order_size(i), 0);
		LB_EXPECT(bad < 0,
			  "receive %d: byte %zu past the message written", i,
			  order_size(i) + (size_t)bad);
	}
	return lb_buf_guards(b, "order");
}

static int check_order(int rank, void *arg)
{
	struct lb_ctx x;
	struct lb_buf b;

	(void)arg;
	LB_TRY(lb_setup(&x, rank));
	LB_TRY(lb_buf_alloc(&b, ORDER_N * ORDER_SLOT));
	LB_TRY(lb_buf_reg(&x, &b, rank ? x.recv : x.send));
	LB_TRY(order_round(&x, &b, 0, 100));
	LB_TRY(order_round(&x, &b, 1, 200));
	LB_OOB(oob_barrier());
	LB_TRY(lb_buf_free(&x, &b));
	return lb_teardown(&x);
}

/* ---------------------------------------------------------------------- */
/* grouped irecv: tags pick the buffer; every n, partial sizes */

#define GROUP_SLOT (1u << 20)

struct group_case {
	int n;
	int tags[LB_RECVS_MAX];
	size_t posted[LB_RECVS_MAX];
	size_t sent[LB_RECVS_MAX];
	int send_order[LB_RECVS_MAX]; /* indices into tags[] */
};

static int group_round(struct lb_ctx *x, struct lb_buf *b,
		       const struct group_case *gc, uint32_t seed0)
{
	void *data[LB_RECVS_MAX], *mhs[LB_RECVS_MAX], *req, *sreq[LB_RECVS_MAX];
	int sizes[64], i, k;
	long bad;

	for (i = 0; i < gc->n; i++) {
		data[i] = b->p + (size_t)i * (GROUP_SLOT + LB_TAIL);
		mhs[i] = b->mh;
	}
	if (x->rank == 0) {
		for (i = 0; i < gc->n; i++)
			zsm_pattern_fill(data[i], gc->sent[i],
				seed0 + (uint32_t)gc->tags[i]);
		LB_OOB(oob_barrier());
		for (k = 0; k < gc->n; k++) {
			i = gc->send_order[k];
			LB_TRY(lb_post_send(x, x->send, data[i], gc->sent[i],
					    gc->tags[i], b->mh, &sreq[k]));
		}
		for (k = 0; k < gc->n; k++)
			LB_TRY(lb_wait(x, sreq[k], sizes, "send"));
		return OOB_PASS;
	}
	memset(b->p, LB_GUARD, b->size);
	LB_TRY(lb_post_recv(x, x->recv, gc->n, data, gc->posted, gc->tags, mhs,
			    &req));
	LB_OOB(oob_barrier());
	for (i = 0; i < 64; i++)
		sizes[i] = LB_SENTINEL;
	LB_TRY(lb_wait(x, req, sizes, "grouped receive"));
	for (i = 0; i < gc->n; i++) {
		LB_EXPECT(sizes[i] == (int)gc->sent[i],
			  "n=%d: sub-receive %d (tag %d, posted %zu) reported "
			  "%d bytes, sender sent %zu",
			  gc->n, i, gc->tags[i], gc->posted[i], sizes[i],
			  gc->sent[i]);
		bad = zsm_pattern_check(data[i], gc->sent[i],
				seed0 + (uint32_t)gc->tags[i]);
		LB_EXPECT(bad < 0,
			  "n=%d: sub-receive %d (tag %d): byte %ld of %zu is "
			  "not the data sent with tag %d",
			  gc->n, i, gc->tags[i], bad, gc->sent[i], gc->tags[i]);
		bad = lb_verify_byte((unsigned char *)data[i] + gc->posted[i],
				     GROUP_SLOT + LB_TAIL - gc->posted[i],
				     LB_GUARD);
		LB_EXPECT(bad < 0,
			  "n=%d: sub-receive %d: byte %zu past the %zu posted "
			  "bytes written",
			  gc->n, i, gc->posted[i] + (size_t)bad, gc->posted[i]);
	}
	return lb_buf_guards(b, "group");
}

static int lb_group_setup(struct lb_ctx *x, struct lb_buf *b, int rank)
{
	LB_TRY(lb_setup(x, rank));
	LB_TRY(lb_buf_alloc(b, (size_t)x->max_recvs * (GROUP_SLOT + LB_TAIL)));
	LB_TRY(lb_buf_reg(x, b, rank ? x->recv : x->send));
	return OOB_PASS;
}

static int lb_group_teardown(struct lb_ctx *x, struct lb_buf *b)
{
	LB_OOB(oob_barrier());
	LB_TRY(lb_buf_free(x, b));
	return lb_teardown(x);
}

static int check_tag_select(int rank, void *arg)
{
	static const int order4[] = { 3, 1, 0, 2 };
	struct group_case gc;
	struct lb_ctx x;
	struct lb_buf b;
	int i, n;

	(void)arg;
	LB_TRY(lb_open(&x, rank));
	n = x.max_recvs;
	if (n < 2) {
		LB_TRY(lb_teardown(&x));
		return oob_skip("maxRecvs is 1: every receive holds one "
				"buffer, so there is no tag to select by "
				"(2.5 irecv: n is in [1, maxRecvs])");
	}
	LB_TRY(lb_connect_pair(&x, &x.send, &x.recv));
	LB_OOB(oob_barrier());
	LB_TRY(lb_buf_alloc(&b, (size_t)n * (GROUP_SLOT + LB_TAIL)));
	LB_TRY(lb_buf_reg(&x, &b, rank ? x.recv : x.send));
	/* Up to 4, sent in a shuffled order. */
	memset(&gc, 0, sizeof(gc));
	gc.n = n < 4 ? n : 4;
	for (i = 0; i < gc.n; i++) {
		gc.tags[i] = 10 + i;
		gc.posted[i] = 4096;
		gc.sent[i] = 1000 + 10 * (size_t)i;
		gc.send_order[i] = gc.n == 4 ? order4[i] : gc.n - 1 - i;
	}
	LB_TRY(group_round(&x, &b, &gc, 300));
	/* All maxRecvs, sent in reverse, tags not in numeric order. */
	gc.n = n;
	for (i = 0; i < n; i++) {
		gc.tags[i] = (i * 5) % n + 40;
		gc.posted[i] = 8192;
		gc.sent[i] = 500 + 111 * (size_t)i;
		gc.send_order[i] = n - 1 - i;
	}
	/* (i * 5) % n repeats a tag when 5 divides n: then in order. */
	if (n % 5 == 0)
		for (i = 0; i < n; i++)
			gc.tags[i] = 40 + n - 1 - i;
	LB_TRY(group_round(&x, &b, &gc, 400));
	return lb_group_teardown(&x, &b);
}

static int check_grouped_n(int rank, void *arg)
{
	/* Mixed sizes, from 1 byte to 1 MiB. */
	static const size_t posted[8] = {
		1, 4096, 65536, 100, 1u << 20, 7, 300000, 8192,
	};
	struct group_case gc;
	struct lb_ctx x;
	struct lb_buf b;
	int n, i;

	(void)arg;
	LB_TRY(lb_group_setup(&x, &b, rank));
	/* Every n NCCL may use: [1, maxRecvs] (2.5 irecv). */
	for (n = 1; n <= x.max_recvs; n++) {
		memset(&gc, 0, sizeof(gc));
		gc.n = n;
		for (i = 0; i < n; i++) {
			gc.tags[i] = 200 + i;
			gc.posted[i] = posted[(i + n) % 8];
			/* Full, half, a third: partial receives mixed in. */
			gc.sent[i] = gc.posted[i] / (size_t)(1 + (i + n) % 3);
			gc.send_order[i] = n % 2 ? i : n - 1 - i;
		}
		LB_TRY(group_round(&x, &b, &gc, 1000 * (uint32_t)n));
	}
	if (rank == 0 && x.max_recvs == 1)
		printf("# abi %d: maxRecvs 1: single receives only\n",
		       lb_opts.abi);
	return lb_group_teardown(&x, &b);
}

/* ---------------------------------------------------------------------- */
/* a receive buffer larger than the message reports the real size */

static int check_recv_larger(int rank, void *arg)
{
	size_t posted = 1u << 20, sent = 1000;
	int sizes[64], i;
	struct lb_ctx x;
	struct lb_buf b;
	void *req;

	(void)arg;
	LB_TRY(lb_setup(&x, rank));
	LB_TRY(lb_buf_alloc(&b, posted));
	LB_TRY(lb_buf_reg(&x, &b, rank ? x.recv : x.send));
	for (i = 0; i < 64; i++)
		sizes[i] = LB_SENTINEL;
	if (rank == 0) {
		zsm_pattern_fill(b.p, sent, 77);
		LB_OOB(oob_barrier());
		LB_TRY(lb_post_send(&x, x.send, b.p, sent, 3, b.mh, &req));
		LB_TRY(lb_wait(&x, req, sizes, "send"));
		LB_EXPECT(sizes[0] == (int)sent,
			  "send test reported size %d, sent %zu", sizes[0],
			  sent);
		/* A second message right after: nothing out of step. */
		zsm_pattern_fill(b.p, 3, 78);
		LB_TRY(lb_post_send(&x, x.send, b.p, 3, 3, b.mh, &req));
		LB_TRY(lb_wait(&x, req, sizes, "second send"));
	} else {
		LB_TRY(lb_post_recv(&x, x.recv, 1, &b.vp, &posted, (int[]){ 3 },
				    &b.mh, &req));
		LB_OOB(oob_barrier());
		LB_TRY(lb_wait(&x, req, sizes, "receive"));
		LB_EXPECT(sizes[0] == (int)sent,
			  "%zu-byte message into %zu-byte buffer: size %d",
			  sent, posted, sizes[0]);
		LB_EXPECT(zsm_pattern_check(b.p, sent, 77) < 0, "data wrong");
		LB_EXPECT(lb_verify_byte(b.p + sent, posted - sent, LB_GUARD) <
				  0,
			  "bytes past the %zu-byte message written", sent);
		LB_TRY(lb_buf_guards(&b, "recv_larger"));
		LB_TRY(lb_post_recv(&x, x.recv, 1, &b.vp, &posted, (int[]){ 3 },
				    &b.mh, &req));
		LB_TRY(lb_wait(&x, req, sizes, "second receive"));
		LB_EXPECT(sizes[0] == 3 && zsm_pattern_check(b.p, 3, 78) < 0,
			  "second message: size %d (expected 3) or data wrong",
			  sizes[0]);
	}
	LB_OOB(oob_barrier());
	LB_TRY(lb_buf_free(&x, &b));
	return lb_teardown(&x);
}

/* ---------------------------------------------------------------------- */
/* a send larger than the posted receive is an error, nothing overflows */

static int check_send_too_large(int rank, void *arg)
{
	size_t posted = 4096, sent = 8192;
	unsigned warns;
	int sizes[64], r;
	struct lb_ctx x;
	struct lb_buf b;
	void *req;

	(void)arg;
	LB_TRY(lb_setup(&x, rank));
	LB_TRY(lb_buf_alloc(&b, rank ? posted : sent));
	LB_TRY(lb_buf_reg(&x, &b, rank ? x.recv : x.send));
	if (rank == 0) {
		zsm_pattern_fill(b.p, sent, 9);
		LB_OOB(oob_barrier());
		warns = zsm_client_warns();
		LB_TRY(lb_post_send(&x, x.send, b.p, sent, 1, b.mh, &req));
		r = zsm_client_wait(x.c, req, sizes, LB_WAIT_MS);
		LB_EXPECT(r != ZSM_CLIENT_TIMEOUT,
			  "sender's request for the oversized send never "
			  "finished (%d ms)",
			  LB_WAIT_MS);
		printf("# abi %d rank 0: oversized send finished with %s\n",
		       lb_opts.abi, zsm_client_result_str(r));
		/* zsm: the send was handed over; the receive is wrong. */
		LB_EXPECT(!lb_opts.zsm_rules || r == ncclSuccess,
			  "zsm's rule: the oversized send succeeds (it was "
			  "handed over), got %s",
			  zsm_client_result_str(r));
		LB_EXPECT(!lb_opts.zsm_rules || zsm_client_warns() == warns,
			  "zsm's rule: the sender says nothing (%u WARN lines)",
			  zsm_client_warns() - warns);
	} else {
		/* Counted from before the post: the out-of-band waits drive
		 * outstanding requests (lb_idle), so the receive may fail,
		 * and say so, inside the barrier. */
		warns = zsm_client_warns();
		LB_TRY(lb_post_recv(&x, x.recv, 1, &b.vp, &posted, (int[]){ 1 },
				    &b.mh, &req));
		LB_OOB(oob_barrier());
		sizes[0] = LB_SENTINEL;
		r = zsm_client_wait(x.c, req, sizes, LB_WAIT_MS);
		LB_EXPECT(r != ZSM_CLIENT_TIMEOUT,
			  "receive of an oversized message never finished "
			  "(%d ms)",
			  LB_WAIT_MS);
		/* Give a late overflow the chance to land before we look. */
		lb_idle_ms(100);
		LB_TRY(lb_buf_guards(&b, "oversized send"));
		LB_EXPECT(r != ncclSuccess,
			  "receive of %zu bytes into %zu-byte buffer succeeded "
			  "(reported size %d)",
			  sent, posted, sizes[0]);
		printf("# abi %d rank 1: oversized receive failed with %s\n",
		       lb_opts.abi, zsm_client_result_str(r));
		LB_EXPECT(!lb_opts.zsm_rules ||
				  (r == ncclInvalidUsage && sizes[0] == 0),
			  "zsm's rule: the receive fails with "
			  "ncclInvalidUsage and size 0, got %s and size %d",
			  zsm_client_result_str(r), sizes[0]);
		LB_EXPECT(!lb_opts.zsm_rules ||
				  zsm_client_warns() - warns == 1,
			  "zsm's rule: one WARN line for the failure, got %u",
			  zsm_client_warns() - warns);
	}
	LB_OOB(oob_barrier());
	LB_TRY(lb_buf_free(&x, &b));
	return lb_teardown(&x);
}

/* ---------------------------------------------------------------------- */
/* trunc_isolated: an oversized send fails its receive and nothing else */

/* Oversized sends into smaller receives: sent, posted. */
static const size_t ti_cases[][2] = {
	{ 2, 1 },	  { 64, 32 },	    { 1024, 512 },
	{ 4096, 2048 }, { 16384, 8192 }, { 65536, 1 },
};
#define TI_NCASES (sizeof(ti_cases) / sizeof(ti_cases[0]))
#define TI_BIG 65536
/* The messages that check the other comms: eager-sized and larger. */
#define TI_B_SIZE 20000
#define TI_A_SIZE 700

struct ti_state {
	void *a_send, *a_recv;	/* pair A, 0 -> 1: the oversized sends */
	void *b_send, *b_recv;	/* pair B, 0 -> 1 */
	void *c_send, *c_recv;	/* pair B, 1 -> 0 */
	struct lb_buf a, b, c;
};

/* Finish one of pair B's messages: no error, byte-exact. */
static int ti_finish(struct lb_ctx *x, void *req, struct lb_buf *buf,
		     int from, size_t size, uint32_t seed, const char *what)
{
	int sizes[64], r = zsm_client_wait(x->c, req, sizes, LB_WAIT_MS);

	LB_EXPECT(r != ZSM_CLIENT_TIMEOUT,
		  "%s: the %s of %zu bytes not done after %d ms: an error "
		  "is the receive's that overflowed, and this comm is "
		  "another connection (2.5 isend, connect)",
		  what, x->rank == from ? "send" : "receive", size,
		  LB_WAIT_MS);
	LB_EXPECT(!r,
		  "%s: the %s of %zu bytes failed with %s: an error is the "
		  "receive's that overflowed, and this comm is another "
		  "connection (2.5 isend, connect)",
		  what, x->rank == from ? "send" : "receive", size,
		  zsm_client_result_str(r));
	if (x->rank != from) {
		long bad = zsm_pattern_check(buf->p, size, seed);

		LB_EXPECT(sizes[0] == (int)size && bad < 0,
			  "%s: received %d bytes (sent %zu), byte %ld wrong: "
			  "a message lost or crossed after another receive's "
			  "overflow",
			  what, sizes[0], size, bad);
	}
	return OOB_PASS;
}

/* Post one message's half: the receive, or the send (after filling). */
static int ti_post(struct lb_ctx *x, void *send, void *recv,
		   struct lb_buf *buf, int from, size_t size, uint32_t seed,
		   void **req)
{
	if (x->rank != from) {
		memset(buf->p, 0, size);
		return lb_post_recv(x, recv, 1, &buf->vp, &buf->size,
				    (int[]){ 2 }, &buf->mh, req);
	}
	zsm_pattern_fill(buf->p, size, seed);
	return lb_post_send(x, send, buf->p, size, 2, buf->mh, req);
}

/* One message on comm send (rank from) to recv, alone. */
static int ti_message(struct lb_ctx *x, void *send, void *recv,
		      struct lb_buf *buf, int from, size_t size, uint32_t seed,
		      const char *what)
{
	void *req = NULL;

	if (x->rank != from)
		LB_TRY(ti_post(x, send, recv, buf, from, size, seed, &req));
	LB_OOB(oob_barrier());
	if (x->rank == from)
		LB_TRY(ti_post(x, send, recv, buf, from, size, seed, &req));
	return ti_finish(x, req, buf, from, size, seed, what);
}

/*
 * One oversized send on pair A with pair B's messages in flight both
 * ways at the same time: A's receive fails and nothing overflows; B's
 * messages arrive intact.
 */
static int ti_oversized(struct lb_ctx *x, struct ti_state *t, size_t sent,
			size_t posted, uint32_t seed)
{
	void *req = NULL, *breq = NULL, *creq = NULL;
	char what[96];
	int sizes[64], r;
	long bad;

	/* Every receive first: A's, and B's both ways. */
	if (x->rank == 1) {
		memset(t->a.base, LB_GUARD, LB_PAGE + TI_BIG + LB_TAIL);
		LB_TRY(lb_post_recv(x, t->a_recv, 1, &t->a.vp, &posted,
				    (int[]){ 1 }, &t->a.mh, &req));
		LB_TRY(ti_post(x, t->b_send, t->b_recv, &t->b, 0, TI_B_SIZE,
			       seed + 1, &breq));
	} else {
		LB_TRY(ti_post(x, t->c_send, t->c_recv, &t->c, 1, TI_B_SIZE,
			       seed + 2, &creq));
	}
	LB_OOB(oob_barrier());
	/* Then the oversized send, and B's right behind it. */
	if (x->rank == 0) {
		zsm_pattern_fill(t->a.p, sent, seed);
		LB_TRY(lb_post_send(x, t->a_send, t->a.p, sent, 1, t->a.mh,
				    &req));
		LB_TRY(ti_post(x, t->b_send, t->b_recv, &t->b, 0, TI_B_SIZE,
			       seed + 1, &breq));
	} else {
		LB_TRY(ti_post(x, t->c_send, t->c_recv, &t->c, 1, TI_B_SIZE,
			       seed + 2, &creq));
	}
	sizes[0] = LB_SENTINEL;
	r = zsm_client_wait(x->c, req, sizes, LB_WAIT_MS);
	if (x->rank == 0) {
		/* Success or an error: the kit asks only that it ends. */
		LB_EXPECT(r != ZSM_CLIENT_TIMEOUT,
			  "%zu B into %zu B: the sender's request never "
			  "finished (%d ms)",
			  sent, posted, LB_WAIT_MS);
		if (sent == ti_cases[0][0] || sent == TI_BIG)
			printf("# abi %d rank 0: %zu B into %zu B: the send "
			       "finished with %s\n",
			       lb_opts.abi, sent, posted,
			       zsm_client_result_str(r));
	} else {
		LB_EXPECT(r != ZSM_CLIENT_TIMEOUT,
			  "%zu B into %zu B: the receive never finished (%d "
			  "ms)",
			  sent, posted, LB_WAIT_MS);
		/* A late overflow lands before we look. */
		lb_idle_ms(20);
		bad = lb_verify_byte(t->a.p + posted,
				     TI_BIG + LB_TAIL - posted, LB_GUARD);
		LB_EXPECT(bad < 0 &&
				  lb_verify_byte(t->a.base, LB_PAGE, LB_GUARD) <
					  0,
			  "%zu B into %zu B: byte %ld of the receive buffer "
			  "written (past the posted size, or before the "
			  "buffer)",
			  sent, posted, bad < 0 ? -1L : (long)posted + bad);
		LB_EXPECT(r != ncclSuccess,
			  "%zu B sent into a %zu B receive: the receive "
			  "succeeded (reported %d bytes); a send larger than "
			  "the posted receive is an error (2.5 isend)",
			  sent, posted, sizes[0]);
		if (sent == ti_cases[0][0] || sent == TI_BIG)
			printf("# abi %d rank 1: %zu B into %zu B: the receive "
			       "failed with %s\n",
			       lb_opts.abi, sent, posted,
			       zsm_client_result_str(r));
	}
	snprintf(what, sizeof(what),
		 "%zu B into %zu B on pair A, pair B 0 -> 1 at the same time",
		 sent, posted);
	LB_TRY(ti_finish(x, breq, &t->b, 0, TI_B_SIZE, seed + 1, what));
	snprintf(what, sizeof(what),
		 "%zu B into %zu B on pair A, pair B 1 -> 0 at the same time",
		 sent, posted);
	LB_TRY(ti_finish(x, creq, &t->c, 1, TI_B_SIZE, seed + 2, what));
	LB_OOB(oob_barrier());
	return OOB_PASS;
}

static int check_trunc_isolated(int rank, void *arg)
{
	char what[96];
	struct ti_state t;
	struct lb_ctx x;
	size_t k;

	(void)arg;
	memset(&t, 0, sizeof(t));
	LB_TRY(lb_open(&x, rank));
	LB_TRY(lb_connect_pair(&x, &t.a_send, &t.a_recv));
	LB_TRY(lb_connect_pair(&x, &t.b_send, &t.b_recv));
	LB_TRY(lb_connect_to(&x, 0, &t.c_send, &t.c_recv));
	LB_TRY(lb_buf_alloc(&t.a, TI_BIG));
	LB_TRY(lb_buf_alloc(&t.b, TI_B_SIZE));
	LB_TRY(lb_buf_alloc(&t.c, TI_B_SIZE));
	LB_TRY(lb_buf_reg(&x, &t.a, rank ? t.a_recv : t.a_send));
	LB_TRY(lb_buf_reg(&x, &t.b, rank ? t.b_recv : t.b_send));
	LB_TRY(lb_buf_reg(&x, &t.c, rank ? t.c_send : t.c_recv));
	for (k = 0; k < TI_NCASES; k++) {
		size_t sent = ti_cases[k][0], posted = ti_cases[k][1];
		uint32_t seed = 900 + 10 * (uint32_t)k;

		LB_TRY(ti_oversized(&x, &t, sent, posted, seed));
		snprintf(what, sizeof(what),
			 "after %zu B into %zu B on pair A, pair B 0 -> 1",
			 sent, posted);
		LB_TRY(ti_message(&x, t.b_send, t.b_recv, &t.b, 0, TI_B_SIZE,
				  seed + 4, what));
		snprintf(what, sizeof(what),
			 "after %zu B into %zu B on pair A, pair B 1 -> 0",
			 sent, posted);
		LB_TRY(ti_message(&x, t.c_send, t.c_recv, &t.c, 1, TI_B_SIZE,
				  seed + 5, what));
		snprintf(what, sizeof(what),
			 "after %zu B into %zu B, pair A's next message", sent,
			 posted);
		LB_TRY(ti_message(&x, t.a_send, t.a_recv, &t.a, 0, TI_A_SIZE,
				  seed + 3, what));
	}
	if (rank == 1)
		printf("# abi %d: %zu oversized sends on pair A, each "
		       "receive failed; pair B both ways and pair A's "
		       "correctly sized messages byte-exact after each\n",
		       lb_opts.abi, TI_NCASES);
	LB_OOB(oob_barrier());
	LB_TRY(lb_buf_free(&x, &t.a));
	LB_TRY(lb_buf_free(&x, &t.b));
	LB_TRY(lb_buf_free(&x, &t.c));
	if (rank == 0) {
		LB_CALL(&x, zsm_client_close_send(x.c, t.a_send));
		LB_CALL(&x, zsm_client_close_send(x.c, t.b_send));
		LB_CALL(&x, zsm_client_close_recv(x.c, t.c_recv));
	} else {
		LB_CALL(&x, zsm_client_close_recv(x.c, t.a_recv));
		LB_CALL(&x, zsm_client_close_recv(x.c, t.b_recv));
		LB_CALL(&x, zsm_client_close_send(x.c, t.c_send));
	}
	return lb_teardown(&x);
}

/* ---------------------------------------------------------------------- */
/* 0-byte messages */

static int check_zero_byte(int rank, void *arg)
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
static int check_null_retry(int rank, void *arg)
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

static int check_recv_overwrites_request(int rank, void *arg)
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

static int check_test_sizes_n(int rank, void *arg)
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

static int check_iflush_host(int rank, void *arg)
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

static int check_inflight(int rank, void *arg)
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

static int check_mr_cache(int rank, void *arg)
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
/* closing comms with requests in flight */

static int check_close_inflight(int rank, void *arg)
{
	void *send_a = NULL, *recv_a = NULL, *send_b = NULL, *recv_b = NULL;
	void *req[8];
	struct lb_ctx x;
	struct lb_buf ba, bb;
	int i;

	(void)arg;
	LB_TRY(lb_open(&x, rank));
	/* A: receives that never match.  B: sends nobody receives. */
	LB_TRY(lb_connect_pair(&x, &send_a, &recv_a));
	LB_TRY(lb_connect_pair(&x, &send_b, &recv_b));
	LB_TRY(lb_buf_alloc(&ba, (size_t)x.max_recvs * 4096));
	LB_TRY(lb_buf_alloc(&bb, 4u << 20));
	if (rank == 1) {
		void *data[LB_RECVS_MAX], *mhs[LB_RECVS_MAX];
		size_t ss[LB_RECVS_MAX];
		int tags[LB_RECVS_MAX];

		LB_TRY(lb_buf_reg(&x, &ba, recv_a));
		for (i = 0; i < x.max_recvs; i++) {
			data[i] = ba.p + i * 4096;
			mhs[i] = ba.mh;
			ss[i] = 4096;
			tags[i] = i;
		}
		for (i = 0; i < 4; i++)
			LB_TRY(lb_post_recv(&x, recv_a, 1, data, ss, tags, mhs,
					    &req[i]));
		/* A grouped one too, of maxRecvs (single where it is 1). */
		LB_TRY(lb_post_recv(&x, recv_a, x.max_recvs, data, ss, tags,
				    mhs, &req[4]));
	} else {
		LB_TRY(lb_buf_reg(&x, &bb, send_b));
		zsm_pattern_fill(bb.p, bb.size, 3);
		/* Eager-sized and large (rendezvous-sized) sends. */
		LB_TRY(lb_post_send(&x, send_b, bb.p, 64, 0, bb.mh, &req[0]));
		LB_TRY(lb_post_send(&x, send_b, bb.p, bb.size, 0, bb.mh,
				    &req[1]));
		LB_TRY(lb_post_send(&x, send_b, bb.p, 1u << 20, 0, bb.mh,
				    &req[2]));
	}
	LB_OOB(oob_barrier());
	lb_idle_ms(50);
	/* NCCL's order: deregister, then close. */
	LB_TRY(lb_buf_free(&x, rank ? &ba : &bb));
	if (rank == 1) {
		LB_CALL(&x, zsm_client_close_recv(x.c, recv_a));
		LB_CALL(&x, zsm_client_close_recv(x.c, recv_b));
	} else {
		LB_CALL(&x, zsm_client_close_send(x.c, send_b));
		LB_CALL(&x, zsm_client_close_send(x.c, send_a));
	}
	LB_TRY(lb_buf_free(&x, rank ? &bb : &ba));
	LB_OOB(oob_barrier());

	/* A fresh connection still works. */
	LB_TRY(lb_connect_pair(&x, &x.send, &x.recv));
	{
		struct lb_buf b;
		int sizes[64];
		void *r;

		LB_TRY(lb_buf_alloc(&b, 1000));
		LB_TRY(lb_buf_reg(&x, &b, rank ? x.recv : x.send));
		if (rank == 0) {
			zsm_pattern_fill(b.p, 1000, 8);
			LB_TRY(lb_post_send(&x, x.send, b.p, 1000, 0, b.mh,
					    &r));
		} else {
			LB_TRY(lb_post_recv(&x, x.recv, 1, &b.vp, &b.size,
					    (int[]){ 0 }, &b.mh, &r));
		}
		LB_TRY(lb_wait(&x, r, sizes, "transfer after the closes"));
		if (rank == 1)
			LB_EXPECT(sizes[0] == 1000 &&
					  zsm_pattern_check(b.p, 1000, 8) < 0,
				  "transfer after the closes: wrong data");
		LB_OOB(oob_barrier());
		LB_TRY(lb_buf_free(&x, &b));
	}
	return lb_teardown(&x);
}

/* ---------------------------------------------------------------------- */
/* a peer that dies makes the survivor's requests fail, not hang */

/*
 * How soon the survivor must see an error: NCCL only learns of a dead peer
 * from the plugin (2.5, error codes), and the peer here is killed on this
 * host, whose kernel closes its connections at once, so any transport can
 * know within seconds; 15 s is generous.  The dying side is always rank 1:
 * rank 0's exit status is the check's result, and rank 1 dies with it.
 */
#define PD_DETECT_MS (15000 * lb_scale)
/*
 * The survivor's alarm from the peer's death on: a test() or isend that
 * never returns times out naming the step (oob_doing) soon after
 * PD_DETECT_MS, and the closing steps after get a fresh allowance.
 */
#define PD_ALARM_S ((unsigned)(PD_DETECT_MS / 1000 + 5))
#define PD_AFTER_S ((unsigned)(30 * lb_scale))
#define PD_SLOT 4096
#define PD_SINGLE 4
#define PD_SEND_SIZE (1u << 20)
#define PD_SEND_DEPTH 8

/*
 * Once the dead peer's comm is closed, the plugin still carries traffic:
 * with the peer gone, this rank connects to itself and sends a message.
 */
static int pd_still_works(struct lb_ctx *x)
{
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	void *listen = NULL, *send = NULL, *recv = NULL, *sreq, *rreq;
	size_t size = 1000;
	const char *what;
	struct lb_buf b;
	int sizes[64], r;

	oob_doing("connecting to itself after the peer died");
	memset(handle, 0, sizeof(handle));
	LB_CALL(x, zsm_client_listen(x->c, x->dev, handle, &listen));
	LB_EXPECT(listen, "listen after the peer died returned success and "
			  "NULL listenComm");
	r = zsm_client_connect_accept(x->c, x->dev, handle, listen, &send,
				      &recv, LB_CONNECT_MS, &what);
	LB_EXPECT(!r, "%s to itself after the peer died returned %s", what,
		  zsm_client_result_str(r));
	LB_CALL(x, zsm_client_close_listen(x->c, listen));
	LB_TRY(lb_buf_alloc(&b, 2 * size));
	LB_TRY(lb_buf_reg(x, &b, recv));
	zsm_pattern_fill(b.p + size, size, 47);
	LB_TRY(lb_post_recv(x, recv, 1, &b.vp, &size, (int[]){ 0 }, &b.mh,
			    &rreq));
	LB_TRY(lb_post_send(x, send, b.p + size, size, 0, b.mh, &sreq));
	LB_TRY(lb_wait(x, sreq, sizes, "send to self after the peer died"));
	LB_TRY(lb_wait(x, rreq, sizes, "receive from self after the peer "
				       "died"));
	LB_EXPECT(sizes[0] == (int)size && zsm_pattern_check(b.p, size, 47) < 0,
		  "message to self after the peer died: size %d or data wrong",
		  sizes[0]);
	LB_TRY(lb_buf_free(x, &b));
	LB_CALL(x, zsm_client_close_send(x->c, send));
	LB_CALL(x, zsm_client_close_recv(x->c, recv));
	oob_doing("finalizing after the peer died");
	return OOB_PASS;
}

static int check_peer_dies_recv(int rank, void *arg)
{
	void *req[PD_SINGLE + 1], *data[LB_RECVS_MAX], *mhs[LB_RECVS_MAX];
	int tags[LB_RECVS_MAX], sizes[64], pending, done, r, i;
	double first_ms = -1, last_ms = 0;
	size_t ss[LB_RECVS_MAX], size = PD_SLOT;
	int first = ncclSuccess, other = ncclSuccess;
	unsigned warns;
	struct lb_ctx x;
	struct lb_buf b;
	uint64_t t0;

	(void)arg;
	LB_TRY(lb_open(&x, rank));
	/* Reversed (1 -> 0): the sender is the rank that can die. */
	LB_TRY(lb_connect_to(&x, 0, &x.send, &x.recv));
	LB_TRY(lb_buf_alloc(&b, (size_t)(PD_SINGLE + x.max_recvs) * PD_SLOT));
	LB_TRY(lb_buf_reg(&x, &b, rank ? x.send : x.recv));
	if (rank == 1) {
		/* The connection carried data before its sender vanished. */
		zsm_pattern_fill(b.p, PD_SLOT, 41);
		LB_TRY(lb_post_send(&x, x.send, b.p, PD_SLOT, 0, b.mh,
				    &req[0]));
		LB_TRY(lb_wait(&x, req[0], sizes, "send before dying"));
		LB_OOB(oob_barrier());
		oob_die();
	}
	LB_TRY(lb_post_recv(&x, x.recv, 1, &b.vp, &size, (int[]){ 0 }, &b.mh,
			    &req[0]));
	LB_TRY(lb_wait(&x, req[0], sizes, "receive before the peer died"));
	LB_EXPECT(sizes[0] == PD_SLOT &&
			  zsm_pattern_check(b.p, PD_SLOT, 41) < 0,
		  "message before the peer died: size %d or data wrong",
		  sizes[0]);
	/* Receives nothing will match: single ones, then a grouped one. */
	for (i = 0; i < x.max_recvs; i++) {
		data[i] = b.p + (size_t)(PD_SINGLE + i) * PD_SLOT;
		mhs[i] = b.mh;
		ss[i] = PD_SLOT;
		tags[i] = 10 + i;
	}
	for (i = 0; i < PD_SINGLE; i++) {
		void *d = b.p + (size_t)i * PD_SLOT;

		LB_TRY(lb_post_recv(&x, x.recv, 1, &d, &size,
				    (int[]){ 1 + i }, &b.mh, &req[i]));
	}
	LB_TRY(lb_post_recv(&x, x.recv, x.max_recvs, data, ss, tags, mhs,
			    &req[PD_SINGLE]));
	/* From before the barrier, whose waits drive our requests. */
	warns = zsm_client_warns();
	/* Rank 1 dies once this returns; no out-of-band traffic after. */
	LB_OOB(oob_barrier());
	t0 = zsm_client_now_ns();
	oob_set_timeout(PD_ALARM_S);
	oob_doing("testing receives whose sender died");
	/* NCCL tests each request until done or an error; so do we. */
	for (pending = PD_SINGLE + 1; pending;) {
		for (i = 0; i <= PD_SINGLE; i++) {
			if (!req[i])
				continue;
			r = zsm_client_test(x.c, req[i], &done, sizes);
			LB_EXPECT(r || !done,
				  "receive %d succeeded though its sender "
				  "died without sending (size %d)",
				  i, sizes[0]);
			if (!r)
				continue;
			last_ms = lb_ms_since(t0);
			if (first_ms < 0) {
				first_ms = last_ms;
				first = r;
			}
			if (r != ncclRemoteError)
				other = r;
			req[i] = NULL;
			pending--;
		}
		if (pending && lb_ms_since(t0) >= PD_DETECT_MS && first_ms < 0)
			return oob_fail("no error ever came: %d s after the "
					"sender was killed, all %d receives "
					"still pend (test: success, not done, "
					"every time).  NCCL learns of a dead "
					"peer only from the plugin: a job "
					"would hang (2.5 error codes)",
					PD_DETECT_MS / 1000, PD_SINGLE + 1);
		LB_EXPECT(!pending || lb_ms_since(t0) < PD_DETECT_MS,
			  "sender dead for %d ms: %d of %d receives still "
			  "pending without an error (the first failed with "
			  "%s after %.0f ms)",
			  PD_DETECT_MS, pending, PD_SINGLE + 1,
			  zsm_client_result_str(first), first_ms);
	}
	printf("# abi %d rank 0: receives from the dead sender failed with "
	       "%s after %.0f ms, the last after %.0f ms\n",
	       lb_opts.abi, zsm_client_result_str(first), first_ms, last_ms);
	/* zsm: one failure, the peer's: said once, every request told. */
	LB_EXPECT(!lb_opts.zsm_rules || other == ncclSuccess,
		  "zsm's rule: every receive from a dead peer fails with "
		  "ncclRemoteError, one got %s",
		  zsm_client_result_str(other));
	LB_EXPECT(!lb_opts.zsm_rules || zsm_client_warns() - warns == 1,
		  "zsm's rule: one WARN line for the dead peer, got %u",
		  zsm_client_warns() - warns);
	oob_set_timeout(PD_AFTER_S);
	oob_doing("closing the receive comm whose sender died");
	/* NCCL's order after an error: deregister, then close. */
	LB_TRY(lb_buf_free(&x, &b));
	LB_CALL(&x, zsm_client_close_recv(x.c, x.recv));
	x.recv = NULL;
	LB_TRY(pd_still_works(&x));
	return lb_teardown(&x);
}

static int check_peer_dies_send(int rank, void *arg)
{
	void *req[PD_SEND_DEPTH] = { 0 };
	int sizes[64], ok = 0, posted = 0, done, r = ncclSuccess, i;
	const char *from = NULL;
	struct lb_ctx x;
	struct lb_buf b;
	unsigned warns;
	uint64_t t0;
	double ms;

	(void)arg;
	LB_TRY(lb_setup(&x, rank));
	LB_TRY(lb_buf_alloc(&b, PD_SEND_SIZE));
	LB_TRY(lb_buf_reg(&x, &b, rank ? x.recv : x.send));
	/* One rendezvous-sized message first: the path works. */
	if (rank == 1) {
		LB_TRY(lb_post_recv(&x, x.recv, 1, &b.vp, &b.size,
				    (int[]){ 0 }, &b.mh, &req[0]));
		LB_TRY(lb_wait(&x, req[0], sizes, "receive before dying"));
		LB_EXPECT(sizes[0] == (int)PD_SEND_SIZE &&
				  zsm_pattern_check(b.p, PD_SEND_SIZE, 43) < 0,
			  "message before dying: size %d or data wrong",
			  sizes[0]);
		LB_OOB(oob_barrier());
		oob_die();
	}
	zsm_pattern_fill(b.p, PD_SEND_SIZE, 43);
	LB_TRY(lb_post_send(&x, x.send, b.p, PD_SEND_SIZE, 0, b.mh, &req[0]));
	LB_TRY(lb_wait(&x, req[0], sizes, "send before the peer died"));
	/* Half the sends are in flight, unmatched, when the receiver dies. */
	for (i = 0; i < PD_SEND_DEPTH / 2; i++, posted++)
		LB_TRY(lb_post_send(&x, x.send, b.p, PD_SEND_SIZE, 1, b.mh,
				    &req[i]));
	/* From before the barrier, whose waits drive our requests. */
	warns = zsm_client_warns();
	/* Rank 1 dies once this returns; no out-of-band traffic after. */
	LB_OOB(oob_barrier());
	t0 = zsm_client_now_ns();
	oob_set_timeout(PD_ALARM_S);
	oob_doing("sending to a receiver that died");
	/*
	 * The rest go out once the provider has seen the connection drop,
	 * to a peer that is gone; then PD_SEND_DEPTH stay in flight, as a
	 * pipelining NCCL would keep them.
	 */
	lb_idle_ms(300);
	while (!from) {
		for (i = 0; i < PD_SEND_DEPTH && !from; i++) {
			if (!req[i]) {
				r = zsm_client_isend(x.c, x.send, b.p,
						     PD_SEND_SIZE, 1, b.mh,
						     &req[i]);
				if (r)
					from = "isend";
				else if (req[i])
					posted++;
				continue;
			}
			r = zsm_client_test(x.c, req[i], &done, sizes);
			if (r) {
				from = "test";
				req[i] = NULL;
			} else if (done) {
				ok++;
				req[i] = NULL;
			}
		}
		LB_EXPECT(from || lb_ms_since(t0) < PD_DETECT_MS,
			  "no error ever came: %d s after the receiver was "
			  "killed, %d sends posted to it, %d reported success, "
			  "the rest still pend.  NCCL learns of a dead peer "
			  "only from the plugin: a job would hang (2.5 error "
			  "codes)",
			  PD_DETECT_MS / 1000, posted, ok);
	}
	ms = lb_ms_since(t0);
	printf("# abi %d rank 0: sending to the dead receiver: %s returned "
	       "%s after %.0f ms (%d sends posted, %d succeeded)\n",
	       lb_opts.abi, from, zsm_client_result_str(r), ms, posted, ok);
	LB_EXPECT(!lb_opts.zsm_rules || r == ncclRemoteError,
		  "zsm's rule: sending to a dead peer fails with "
		  "ncclRemoteError, got %s",
		  zsm_client_result_str(r));
	LB_EXPECT(!lb_opts.zsm_rules || zsm_client_warns() - warns == 1,
		  "zsm's rule: one WARN line for the dead peer, got %u",
		  zsm_client_warns() - warns);
	oob_set_timeout(PD_AFTER_S);
	oob_doing("closing the send comm whose receiver died");
	/* NCCL stops testing at the first error: close with sends left. */
	LB_TRY(lb_buf_free(&x, &b));
	LB_CALL(&x, zsm_client_close_send(x.c, x.send));
	x.send = NULL;
	LB_TRY(pd_still_works(&x));
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

static int check_pingpong_wait(int rank, void *arg)
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

/* ---------------------------------------------------------------------- */
/* peer_closes: a comm whose live peer closed fails its requests */

/*
 * zsm's rule (docs/design.md, "Same rules on every transport"): a comm
 * whose peer closed its end fails, whatever the message's size, whether
 * the request was in flight at the close or posted after it: a closed
 * receiver takes nothing, and a send reported done would be a lie.  The
 * peer process stays alive, so no liveness check can say it.  zsm says
 * so within a round trip of the close; the limit is generous.
 */
#define PC_FAIL_MS (5000 * lb_scale)
#define PC_LARGE ((size_t)4 << 20)
#define PC_SMALL ((size_t)64)
/* The sender's comms: in flight at the close (large, small), posted
 * after it (small, large). */
#define PC_COMMS 4

static const size_t pc_sizes[PC_COMMS] = { PC_LARGE, PC_SMALL, PC_SMALL,
					   PC_LARGE };

/*
 * Test req until it ends (an error from isend counts: r and no req):
 * it must end in ncclRemoteError within PC_FAIL_MS of t0.
 */
static int pc_expect_fail(struct lb_ctx *x, void *req, int r, uint64_t t0,
			  const char *what)
{
	int done = 0, sizes[LB_RECVS_MAX];

	while (!r && !done) {
		r = zsm_client_test(x->c, req, &done, sizes);
		LB_EXPECT(r || !done,
			  "%s: reported done though its peer had closed the "
			  "comm (nothing took it)",
			  what);
		LB_EXPECT(r || lb_ms_since(t0) < PC_FAIL_MS,
			  "%s: still pending %d ms after its peer closed the "
			  "comm: nothing will ever end it",
			  what, PC_FAIL_MS);
	}
	LB_EXPECT(r == ncclRemoteError,
		  "zsm's rule: %s to a closed peer fails with "
		  "ncclRemoteError, got %s",
		  what, zsm_client_result_str(r));
	printf("# abi %d rank %d: %s failed with %s after %.0f ms\n",
	       lb_opts.abi, x->rank, what, zsm_client_result_str(r),
	       lb_ms_since(t0));
	return OOB_PASS;
}

/* Rank 0: sends on comms whose receiver (rank 1) closes them, and
 * closes back, on which rank 1 waits for a message. */
static int pc_sender(struct lb_ctx *x, void **comms, struct lb_buf *b,
		     struct lb_buf *bb, void *back)
{
	static const char *const what[PC_COMMS] = {
		"a 4 MiB send in flight at the close",
		"a 64 B send in flight at the close",
		"a 64 B send posted after the close",
		"a 4 MiB send posted after the close",
	};
	void *req[PC_COMMS] = { 0 };
	int r[PC_COMMS] = { 0 };
	uint64_t t0;

	for (int i = 0; i < 2; i++)
		LB_TRY(lb_post_send(x, comms[i], b[i].p, pc_sizes[i], 0,
				    b[i].mh, &req[i]));
	LB_OOB(oob_barrier()); /* posted */
	LB_TRY(lb_buf_free(x, bb));
	LB_CALL(x, zsm_client_close_send(x->c, back));
	LB_OOB(oob_barrier()); /* both closed */
	t0 = zsm_client_now_ns();
	for (int i = 2; i < PC_COMMS; i++) {
		r[i] = zsm_client_isend(x->c, comms[i], b[i].p, pc_sizes[i],
					0, b[i].mh, &req[i]);
		LB_EXPECT(r[i] || req[i],
			  "%s: isend returned no request", what[i]);
	}
	for (int i = 0; i < PC_COMMS; i++)
		LB_TRY(pc_expect_fail(x, req[i], r[i], t0, what[i]));
	return OOB_PASS;
}

static int check_peer_closes(int rank, void *arg)
{
	void *comms[PC_COMMS] = { 0 }, *back = NULL, *rreq = NULL;
	struct lb_buf b[PC_COMMS], bb;
	struct lb_ctx x;
	uint64_t t0;
	int i;

	(void)arg;
	if (!lb_opts.zsm_rules)
		return oob_skip("what a peer's close does is zsm's rule "
				"(--zsm-rules); NCCL leaves it open");
	LB_TRY(lb_open(&x, rank));
	for (i = 0; i < PC_COMMS; i++) {
		LB_TRY(lb_connect_pair(&x, rank ? NULL : &comms[i],
				       rank ? &comms[i] : NULL));
		LB_TRY(lb_buf_alloc(&b[i], pc_sizes[i]));
		LB_TRY(lb_buf_reg(&x, &b[i], comms[i]));
	}
	/* And one where rank 1 waits to receive and rank 0 closes. */
	LB_TRY(lb_connect_pair(&x, rank ? NULL : &back, rank ? &back : NULL));
	LB_TRY(lb_buf_alloc(&bb, PC_SMALL));
	LB_TRY(lb_buf_reg(&x, &bb, back));
	if (rank == 0) {
		LB_TRY(pc_sender(&x, comms, b, &bb, back));
	} else {
		LB_TRY(lb_post_recv(&x, back, 1, &bb.vp, &bb.size,
				    (int[]){ 0 }, &bb.mh, &rreq));
		LB_OOB(oob_barrier()); /* posted */
		for (i = 0; i < PC_COMMS; i++) {
			LB_TRY(lb_buf_free(&x, &b[i]));
			LB_CALL(&x, zsm_client_close_recv(x.c, comms[i]));
		}
		LB_OOB(oob_barrier()); /* closed */
		t0 = zsm_client_now_ns();
		LB_TRY(pc_expect_fail(&x, rreq, 0, t0,
				      "a receive whose sender closed"));
	}
	LB_OOB(oob_barrier());
	oob_doing("closing the comms whose peer closed");
	if (rank == 0) {
		for (i = 0; i < PC_COMMS; i++) {
			LB_TRY(lb_buf_free(&x, &b[i]));
			LB_CALL(&x, zsm_client_close_send(x.c, comms[i]));
		}
	} else {
		LB_TRY(lb_buf_free(&x, &bb));
		LB_CALL(&x, zsm_client_close_recv(x.c, back));
	}
	return lb_teardown(&x);
}

/* ---------------------------------------------------------------------- */
/* data_sizes: byte-exact data from 1 byte to 1 GiB */

#define DS_GIB ((size_t)1 << 30)

static const size_t ds_sizes[] = {
	1, 4095, ((size_t)1 << 20) + 3, (size_t)64 << 20, DS_GIB,
};

#define DS_NSIZES (sizeof(ds_sizes) / sizeof(ds_sizes[0]))

static int check_data_sizes(int rank, void *arg)
{
	struct zsm_client_props p;
	int sizes[64], ran = 0, r, ms;
	struct lb_ctx x;
	struct lb_buf b;
	uint64_t t0;
	size_t k, size;
	void *req;

	(void)arg;
	LB_TRY(lb_setup(&x, rank));
	LB_CALL(&x, zsm_client_get_properties(x.c, x.dev, &p));
	for (k = 0; k < DS_NSIZES; k++) {
		size = ds_sizes[k];
		if (size > p.max_p2p_bytes) {
			if (rank == 0)
				printf("# abi %d: size %zu skipped: above "
				       "maxP2pBytes %zu\n",
				       lb_opts.abi, size, p.max_p2p_bytes);
			continue;
		}
		/* Big messages need more than the usual wait: 1 s/16 MiB. */
		ms = LB_WAIT_MS + (int)(size >> 24) * 1000 * lb_scale;
		LB_TRY(lb_buf_alloc(&b, size));
		LB_TRY(lb_buf_reg(&x, &b, rank ? x.recv : x.send));
		LB_OOB(oob_barrier());
		t0 = zsm_client_now_ns();
		if (rank == 0) {
			zsm_pattern_fill(b.p, size, 60 + (uint32_t)k);
			LB_TRY(lb_post_send(&x, x.send, b.p, size, 3, b.mh,
					    &req));
		} else {
			LB_TRY(lb_post_recv(&x, x.recv, 1, &b.vp, &b.size,
					    (int[]){ 3 }, &b.mh, &req));
		}
		r = zsm_client_wait(x.c, req, sizes, ms);
		LB_EXPECT(r != ZSM_CLIENT_TIMEOUT,
			  "size %zu: not done after %d ms", size, ms);
		LB_EXPECT(!r, "size %zu: test returned %s", size,
			  zsm_client_result_str(r));
		LB_EXPECT(sizes[0] >= 0 && (size_t)sizes[0] == size,
			  "size %zu: test reported %d bytes", size, sizes[0]);
		if (rank == 1) {
			long bad;

			bad = zsm_pattern_check(b.p, size, 60 + (uint32_t)k);
			LB_EXPECT(bad < 0,
				  "size %zu: byte %ld differs from what was "
				  "sent",
				  size, bad);
			LB_TRY(lb_buf_guards(&b, "data_sizes"));
			printf("# abi %d: %zu bytes byte-exact in %.0f ms\n",
			       lb_opts.abi, size, lb_ms_since(t0));
		}
		LB_TRY(lb_buf_free(&x, &b));
		ran++;
	}
	LB_EXPECT(ran, "no size at or below maxP2pBytes %zu",
		  p.max_p2p_bytes);
	return lb_teardown(&x);
}

/* ---------------------------------------------------------------------- */
/* many_comms: 64 connections at once, traffic interleaved on all */

#define MC_PAIRS 64
#define MC_SLOT 8192

struct mc_state {
	char handles[MC_PAIRS][NCCL_NET_HANDLE_MAXSIZE];
	void *listen[MC_PAIRS];
	void *comm[MC_PAIRS];
	void *req[MC_PAIRS];
	struct lb_buf b[MC_PAIRS];
};

/* Every listen, then connect or accept on all 64, round robin. */
static int mc_connect(struct lb_ctx *x, struct mc_state *s)
{
	uint64_t t0;
	int left = MC_PAIRS, i, r;

	if (x->rank == 1) {
		for (i = 0; i < MC_PAIRS; i++) {
			LB_CALL(x, zsm_client_listen(x->c, x->dev,
						     s->handles[i],
						     &s->listen[i]));
			LB_EXPECT(s->listen[i], "listen %d returned NULL", i);
		}
		LB_OOB(oob_send(s->handles, sizeof(s->handles)));
	} else {
		LB_OOB(oob_recv(s->handles, sizeof(s->handles)));
	}
	t0 = zsm_client_now_ns();
	while (left) {
		for (i = 0; i < MC_PAIRS; i++) {
			if (s->comm[i])
				continue;
			if (x->rank == 1)
				r = zsm_client_accept(x->c, s->listen[i],
						      &s->comm[i]);
			else
				r = zsm_client_connect(x->c, x->dev,
						       s->handles[i],
						       &s->comm[i]);
			LB_EXPECT(!r, "%s %d returned %s",
				  x->rank ? "accept" : "connect", i,
				  zsm_client_result_str(r));
			left -= !!s->comm[i];
		}
		LB_EXPECT(lb_ms_since(t0) < LB_CONNECT_MS,
			  "%d of %d connections not done after %d ms", left,
			  MC_PAIRS, LB_CONNECT_MS);
	}
	for (i = 0; x->rank == 1 && i < MC_PAIRS; i++)
		LB_CALL(x, zsm_client_close_listen(x->c, s->listen[i]));
	return OOB_PASS;
}

/* One message on every comm, all posted before any is tested. */
static int mc_round(struct lb_ctx *x, struct mc_state *s, int round)
{
	size_t size, slot = MC_SLOT;
	int left = MC_PAIRS, sizes[64], done, i, r;
	uint32_t seed;
	uint64_t t0;

	for (i = 0; i < MC_PAIRS; i++) {
		/* Sizes differ per comm, so a crossed wire shows. */
		size = 100 + (size_t)i * 97 + (size_t)round;
		seed = 500 + (uint32_t)(round * MC_PAIRS + i);
		if (x->rank == 0) {
			zsm_pattern_fill(s->b[i].p, size, seed);
			LB_TRY(lb_post_send(x, s->comm[i], s->b[i].p, size, 5,
					    s->b[i].mh, &s->req[i]));
		} else {
			LB_TRY(lb_post_recv(x, s->comm[i], 1, &s->b[i].vp,
					    &slot, (int[]){ 5 }, &s->b[i].mh,
					    &s->req[i]));
		}
	}
	t0 = zsm_client_now_ns();
	while (left) {
		for (i = 0; i < MC_PAIRS; i++) {
			if (!s->req[i])
				continue;
			r = zsm_client_test(x->c, s->req[i], &done, sizes);
			LB_EXPECT(!r, "round %d comm %d: test returned %s",
				  round, i, zsm_client_result_str(r));
			if (!done)
				continue;
			s->req[i] = NULL;
			left--;
			if (x->rank == 0)
				continue;
			size = 100 + (size_t)i * 97 + (size_t)round;
			seed = 500 + (uint32_t)(round * MC_PAIRS + i);
			LB_EXPECT(sizes[0] == (int)size &&
					  zsm_pattern_check(s->b[i].p, size,
							    seed) < 0,
				  "round %d comm %d: size %d (sent %zu) or "
				  "data wrong: messages crossed comms?",
				  round, i, sizes[0], size);
		}
		LB_EXPECT(lb_ms_since(t0) < LB_WAIT_MS,
			  "round %d: %d of %d requests not done after %d ms",
			  round, left, MC_PAIRS, LB_WAIT_MS);
	}
	return OOB_PASS;
}

static int check_many_comms(int rank, void *arg)
{
	struct zsm_client_props p;
	struct mc_state *s;
	struct lb_ctx x;
	int i, round;

	(void)arg;
	LB_TRY(lb_open(&x, rank));
	LB_CALL(&x, zsm_client_get_properties(x.c, x.dev, &p));
	if (p.max_comms < MC_PAIRS)
		return oob_skip("maxComms %d is below the %d pairs checked",
				p.max_comms, MC_PAIRS);
	s = calloc(1, sizeof(*s));
	LB_EXPECT(s, "out of memory");
	LB_TRY(mc_connect(&x, s));
	for (i = 0; i < MC_PAIRS; i++) {
		LB_TRY(lb_buf_alloc(&s->b[i], MC_SLOT));
		LB_TRY(lb_buf_reg(&x, &s->b[i], s->comm[i]));
	}
	LB_OOB(oob_barrier());
	for (round = 0; round < 3; round++)
		LB_TRY(mc_round(&x, s, round));
	LB_OOB(oob_barrier());
	for (i = 0; i < MC_PAIRS; i++) {
		LB_TRY(lb_buf_free(&x, &s->b[i]));
		if (rank == 0)
			LB_CALL(&x, zsm_client_close_send(x.c, s->comm[i]));
		else
			LB_CALL(&x, zsm_client_close_recv(x.c, s->comm[i]));
	}
	free(s);
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

static int check_regmr_concurrent(int rank, void *arg)
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
/* init_cycles: init/finalize and dlopen/dlclose leave nothing behind */

#define IC_CYCLES 20

/* Entries of a /proc/self directory: open fds or threads. */
static int ic_count(const char *dir)
{
	struct dirent *e;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* One init, a connection to itself with a message, finalize. */
static int ic_cycle(struct lb_ctx *x, int cycle, const char *kind)
{
	int r = zsm_client_init(x->c, 0x7a736d10u + (unsigned)cycle);

	LB_EXPECT(!r, "%s cycle %d: init returned %s", kind, cycle,
		  zsm_client_result_str(r));
	LB_TRY(pd_still_works(x));
	r = zsm_client_finalize(x->c);
	LB_EXPECT(!r, "%s cycle %d: finalize returned %s", kind, cycle,
		  zsm_client_result_str(r));
	return OOB_PASS;
}

/*
 * The counts may lag a finalize by a thread's exit; wait up to 2 s for
 * them to come back to the baseline before calling it growth.
 */
static int ic_steady(int fds0, int tasks0, const char *kind)
{
	uint64_t t0 = zsm_client_now_ns();
	int fds, tasks;

	for (;;) {
		fds = ic_count("/proc/self/fd");
		tasks = ic_count("/proc/self/task");
		if ((fds <= fds0 && tasks <= tasks0) ||
		    lb_ms_since(t0) > 2000.0 * lb_scale)
			break;
		lb_sleep_ms(20);
	}
	LB_EXPECT(fds <= fds0, "%d %s cycles: open fds grew from %d to %d",
		  IC_CYCLES, kind, fds0, fds);
	LB_EXPECT(tasks <= tasks0, "%d %s cycles: threads grew from %d to %d",
		  IC_CYCLES, kind, tasks0, tasks);
	printf("# abi %d: %d %s cycles: %d fds, %d threads, as after the "
	       "first\n",
	       lb_opts.abi, IC_CYCLES, kind, fds, tasks);
	return OOB_PASS;
}

static int check_init_cycles(int rank, void *arg)
{
	int fds0 = 0, tasks0 = 0, i;
	struct lb_ctx x;

	(void)arg;
	if (rank == 1)
		return OOB_PASS;
	if (lb_opts.abi < 11)
		return oob_skip("v%d has no finalize, so init cannot be "
				"undone and cycles would leak by design",
				lb_opts.abi);
	memset(&x, 0, sizeof(x));
	x.dev = lb_opts.dev;
	/* One load: init/finalize again and again. */
	LB_TRY(lb_client_open(&x));
	for (i = 0; i < IC_CYCLES; i++) {
		LB_TRY(ic_cycle(&x, i, "init/finalize"));
		/* The first cycle may set up what stays for the process. */
		if (i == 0) {
			fds0 = ic_count("/proc/self/fd");
			tasks0 = ic_count("/proc/self/task");
		}
	}
	LB_TRY(ic_steady(fds0, tasks0, "init/finalize"));
	lb_client_close(&x);
	/* Then a fresh dlopen each cycle, as a process reloading NCCL. */
	for (i = 0; i < IC_CYCLES; i++) {
		LB_TRY(lb_client_open(&x));
		LB_TRY(ic_cycle(&x, i, "dlopen/dlclose"));
		lb_client_close(&x);
		if (i == 0) {
			fds0 = ic_count("/proc/self/fd");
			tasks0 = ic_count("/proc/self/task");
		}
	}
	LB_TRY(ic_steady(fds0, tasks0, "dlopen/dlclose"));
	return OOB_PASS;
}

/* ---------------------------------------------------------------------- */

/*
 * What the init check learnt, written by its rank 0 into a shared page:
 * the checks run in forked processes, and the parent loads no plugin
 * itself so that every check starts from a process that never saw one.
 */
struct lb_found {
	int abi;
	int ndev;
	atomic_int warnings; /* WARN lines printed, see lb_warn */
};

static int check_init(int rank, void *arg)
{
	struct lb_found *found = arg;
	struct lb_ctx x;
	int ndev = 0, r;

	/* Forked, rank 1 shares rank 0's plugin; across hosts it has its
	 * own, which must load there too. */
	if (rank == 1 && !oob_joined())
		return OOB_PASS;
	r = zsm_client_open(lb_opts.plugin, lb_opts.abi, &x.c);
	if (lb_opts.abi)
		LB_EXPECT(!r, "cannot open %s with abi %d (no "
			      "ncclNetPlugin_v%d?)",
			  lb_opts.plugin, lb_opts.abi, lb_opts.abi);
	else
		LB_EXPECT(!r, "cannot open %s: no ncclNetPlugin_v8..v12 "
			      "(see stderr)",
			  lb_opts.plugin);
	found->abi = zsm_client_abi(x.c);
	r = zsm_client_init(x.c, 1);
	if (r) {
		zsm_client_close(x.c);
		return oob_skip("init returned %s: no usable device (is the "
				"tcp provider there? ZSM_PROVIDER=%s "
				"ZSM_DOMAIN=%s)",
				zsm_client_result_str(r),
				getenv("ZSM_PROVIDER") ? getenv("ZSM_PROVIDER")
						       : "(unset)",
				getenv("ZSM_DOMAIN") ? getenv("ZSM_DOMAIN")
						     : "(unset)");
	}
	r = zsm_client_devices(x.c, &ndev);
	LB_EXPECT(!r, "devices returned %s", zsm_client_result_str(r));
	if (ndev <= 0) {
		zsm_client_finalize(x.c);
		zsm_client_close(x.c);
		return oob_skip("plugin reports %d devices", ndev);
	}
	LB_EXPECT(lb_opts.dev < ndev, "device %d requested, plugin has %d",
		  lb_opts.dev, ndev);
	found->ndev = ndev;
	if (rank == 0)
		printf("# abi %d: plugin '%s', %d device(s)\n",
		       zsm_client_abi(x.c), zsm_client_name(x.c), ndev);
	LB_CALL(&x, zsm_client_finalize(x.c));
	zsm_client_close(x.c);
	return OOB_PASS;
}

/*
 * The catalog.  timeout_s bounds one check (both ranks) unless --timeout
 * gives one for all; what is the pass line's few words, and the --list
 * line.  docs/conformance.md describes each check and its NCCL rule.
 */
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

static int check_gpu_buffers(int rank, void *arg)
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

struct lb_check {
	const char *name;
	oob_check_fn fn;
	unsigned timeout_s;
	const char *what;
	/* NCCL's rule it holds the plugin to, for the FAIL line. */
	const char *rule;
};

static const struct lb_check lb_checks[] = {
	{ "properties", check_properties, 20,
	  "every device's properties written, sane, unique and stable",
	  "every field written, names unique, values NCCL accepts (2.3, 6.2, "
	  "6.4)" },
	{ "connect_retry", check_connect_retry, 30,
	  "connect/accept retried with one handle, no call blocks",
	  "listen, connect and accept do not block; NULL means call again "
	  "with the same handle (2.5 listen, connect, accept)" },
	{ "bad_handle", check_bad_handle, 240,
	  "random, zeroed, corrupted handles fail connect, no crash",
	  "a bad handle makes connect fail with an error, not crash or hang "
	  "(2.5 listen, connect)" },
	{ "connect_closed_listener", check_connect_closed_listener, 100,
	  "connect to a closed listener fails, does not pend",
	  "a connect that cannot succeed ends in an error (2.5 connect)" },
	{ "order", check_order, 30,
	  "one-tag sends match receives in posting order",
	  "sends and receives on one connection match in posting order (2.5 "
	  "isend)" },
	{ "tag_select", check_tag_select, 30,
	  "tags pick the buffer of a grouped receive",
	  "within the first grouped receive the tag picks the buffer (2.5 "
	  "isend, irecv)" },
	{ "grouped_n", check_grouped_n, 30,
	  "grouped receives n = 1..maxRecvs, mixed and partial sizes",
	  "irecv's n is in [1, maxRecvs]; test reports each size received "
	  "(2.5 irecv, test)" },
	{ "recv_larger", check_recv_larger, 30,
	  "a larger receive buffer reports the size sent",
	  "a posted size may exceed the sent one; test reports the size "
	  "received (2.5 irecv, test)" },
	{ "send_too_large", check_send_too_large, 30,
	  "a send over the posted size fails, nothing overflows",
	  "a send larger than the posted receive is an error (2.5 isend)" },
	{ "trunc_isolated", check_trunc_isolated, 60,
	  "an oversized send fails its receive and no other comm",
	  "an oversized send is its receive's error; every comm is its own "
	  "connection (2.5 isend, connect)" },
	{ "zero_byte", check_zero_byte, 30,
	  "0-byte messages, single and grouped, write nothing",
	  "a message may be 0 bytes (2.5 isend)" },
	{ "null_retry", check_null_retry, 30,
	  "NULL requests retried; twice NCCL's minimum complete",
	  "a NULL request means try again later, never an error (2.5 isend, "
	  "irecv; 6.7)" },
	{ "recv_overwrites_request", check_recv_overwrites_request, 30,
	  "irecv overwrites the 0x1 hint in *request",
	  "irecv overwrites the 0x1 NCCL stores in *request (2.5 irecv, 6.1)" },
	{ "test_sizes_n", check_test_sizes_n, 30,
	  "test writes exactly n sizes, only when done",
	  "test writes sizes[0..n-1] only, and only when done (2.5 test)" },
	{ "iflush_host", check_iflush_host, 30,
	  "iflush on host memory: success and a NULL request",
	  "a NULL iflush request means nothing to wait for (2.5 iflush)" },
	{ "inflight", check_inflight, 30,
	  "32 x maxRecvs sends, 32 receives in flight before any test",
	  "32 receives and 32 x maxRecvs sends in flight per comm (2.1, 6.7)" },
	{ "mr_cache", check_mr_cache, 30,
	  "twin, nested, overlapping registrations in any order",
	  "NCCL registers repeated and overlapping ranges, on either comm "
	  "(2.5 regMr)" },
	{ "close_inflight", check_close_inflight, 30,
	  "comms close with requests in flight; the plugin lives on",
	  "comms close with requests outstanding, after deregistration (2.5 "
	  "closeSend)" },
	{ "peer_dies_recv", check_peer_dies_recv, 45,
	  "receives from a dead sender fail within the limit",
	  "a dead peer is an error of isend, irecv or test (2.5, error "
	  "codes)" },
	{ "peer_dies_send", check_peer_dies_send, 45,
	  "sends to a dead receiver fail within the limit",
	  "a dead peer is an error of isend, irecv or test (2.5, error "
	  "codes)" },
	{ "pingpong_wait", check_pingpong_wait, 45,
	  "small round trips that wait for each send finish promptly",
	  "NCCL waits for a send before it reuses its slot (2.5 test)" },
	{ "peer_closes", check_peer_closes, 45,
	  "a comm whose live peer closed fails its requests",
	  "zsm's rule: a peer's close fails the comm's sends and receives "
	  "with ncclRemoteError, whatever their size" },
	{ "data_sizes", check_data_sizes, 90,
	  "1 B to 1 GiB arrive byte-exact",
	  "NCCL sends up to maxP2pBytes in one message (6.2)" },
	{ "many_comms", check_many_comms, 60,
	  "64 connections at once, traffic interleaved on all",
	  "one connection per peer and channel, progressed together (2.5 "
	  "connect, test)" },
	{ "regmr_concurrent", check_regmr_concurrent, 30,
	  "regMr/deregMr on another thread during traffic",
	  "regMr runs on another thread than isend and test on the same comm "
	  "(6.14)" },
	{ "init_cycles", check_init_cycles, 60,
	  "init/finalize and dlopen cycles leak no fds or threads",
	  "what init starts, finalize stops; NCCL unloads and reloads "
	  "plugins (6.13)" },
	{ "gpu_buffers", check_gpu_buffers, 60,
	  "NCCL_PTR_CUDA buffers GPU to GPU, byte-exact, iflush",
	  "NCCL_PTR_CUDA buffers come from NCCL's proxy; iflush before the "
	  "GPU reads (2.5 regMr, iflush)" },
};

#define LB_NCHECKS (sizeof(lb_checks) / sizeof(lb_checks[0]))

/* Exit status of a command line the tool cannot run. */
#define LB_USAGE 2

static void lb_usage(FILE *out)
{
	fprintf(out,
		"usage: zsm-conformance [--abi 8..12] [--device N] "
		"[--timeout SECONDS]\n"
		"                       [--only NAME[,NAME...]] [--list] "
		"PLUGIN.so\n"
		"                       [--gpu G0[,G1]] [--zsm-rules]\n"
		"       zsm-conformance --rendezvous HOST:PORT [--rank R "
		"--nranks N]\n"
		"                       [--join-timeout SECONDS] [options] "
		"PLUGIN.so\n"
		"       zsm-conformance --rma [--ranks 2..8] [--hosts K] "
		"[--hostid-env NAME]\n"
		"                       [--rma-abi 13|14] [--max-size "
		"BYTES[K|M|G]] [--signals N]\n"
		"                       [--init-fail-env VAR=VALUE] [--gpu G0[,G1]] "
		"[options] PLUGIN.so\n"
		"Loads PLUGIN.so as NCCL does and runs two-process checks of "
		"its ncclNet\n"
		"table (--plugin PLUGIN.so works too).  By default both "
		"processes run\n"
		"on this host.  With --rendezvous, this process is rank R of "
		"N started\n"
		"on any hosts (R and N from --rank/--nranks, or from mpirun, "
		"srun or PMI);\n"
		"rank 0 listens at HOST:PORT, ranks 2k and 2k+1 run the "
		"checks as a pair.\n"
		"--rma checks its NCCL RMA table (ncclRmaPlugin_v14/v13) "
		"between N forked\n"
		"ranks instead.  "
		"--list prints the checks.  Exit status: 0 all passed, 1 a "
		"check failed,\n"
		"2 bad usage, 77 nothing could run (no usable device).  See "
		"docs/conformance.md.\n");
}

/*
 * ZSM_TEST_TIME_SCALE multiplies every time limit; under valgrind
 * (its preload is in LD_PRELOAD) it defaults to 10.
 */
static int lb_time_scale(void)
{
	const char *env = getenv("ZSM_TEST_TIME_SCALE");
	const char *preload = getenv("LD_PRELOAD");
	int v;

	if (env) {
		v = atoi(env);
		return v >= 1 && v <= 1000 ? v : 1;
	}
	return preload && strstr(preload, "vgpreload") ? 10 : 1;
}

/* Whether name is one of the comma-separated names in only. */
int lb_selected(const char *only, const char *name)
{
	size_t len = strlen(name);
	const char *p = only;

	if (!only)
		return 1;
	while ((p = strstr(p, name))) {
		if ((p == only || p[-1] == ',') && (p[len] == ',' || !p[len]))
			return 1;
		p += len;
	}
	return 0;
}

/* Whether the len bytes at name name a check of the catalog. */
static int lb_known(const char *name, size_t len)
{
	for (size_t k = 0; k < LB_NCHECKS; k++)
		if (strlen(lb_checks[k].name) == len &&
		    !strncmp(lb_checks[k].name, name, len))
			return 1;
	return 0;
}

/*
 * Every name in only must be known (lb_known, or the RMA catalog's
 * rc_known): a typo would otherwise run nothing and pass.  Returns 0 or
 * prints the first unknown name.
 */
int lb_only_valid(const char *only, int (*known)(const char *, size_t))
{
	const char *p = only, *end;
	size_t len;

	while (*p) {
		end = strchr(p, ',');
		len = end ? (size_t)(end - p) : strlen(p);
		if (!known(p, len)) {
			fprintf(stderr, "zsm-conformance: no check named "
					"'%.*s' (see --list)\n",
				(int)len, p);
			return -1;
		}
		p += len + (end ? 1 : 0);
	}
	return 0;
}

/* A whole number in [lo, hi], or -1. */
static long lb_parse_num(const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	return v;
}

/* A size in bytes with an optional K, M or G (binary), 1 B to 64 GiB; 0
 * when malformed. */
static size_t lb_parse_size(const char *s)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-')
		return 0;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (*end || v == 0 || v > (64ULL << 30) >> shift)
		return 0;
	return (size_t)(v << shift);
}

/*
 * The options of --rma's checks (conformance_rma.h): 2 for --rma, 1
 * when argv[*i] was another (its value consumed), 0 when it is none, -1
 * (said) when its value is bad.
 */
static int lb_rma_option(int argc, char **argv, int *i, struct rc_opts *o)
{
	const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
	long n;

	if (!strcmp(a, "--rma"))
		return 2;
	if (!v)
		return 0;
	if (!strcmp(a, "--rma-abi")) {
		n = lb_parse_num(v, 13, 14);
		o->abi = (int)n;
	} else if (!strcmp(a, "--ranks")) {
		n = lb_parse_num(v, 2, RC_MAX_RANKS);
		o->nranks = (int)n;
	} else if (!strcmp(a, "--hosts")) {
		n = lb_parse_num(v, 1, RC_MAX_RANKS);
		o->hosts = (int)n;
	} else if (!strcmp(a, "--hostid-env")) {
		n = v[0] && !strchr(v, '=') ? 1 : -1;
		o->hostid_env = strcmp(v, "none") ? v : NULL;
	} else if (!strcmp(a, "--max-size")) {
		o->max_size = lb_parse_size(v);
		n = o->max_size ? 1 : -1;
	} else if (!strcmp(a, "--signals")) {
		n = lb_parse_num(v, 1, 1000000000L);
		o->signals = n;
	} else if (!strcmp(a, "--init-fail-env")) {
		n = strchr(v, '=') && v[0] != '=' ? 1 : -1;
		o->init_fail_env = v;
	} else {
		return 0;
	}
	if (n < 0) {
		fprintf(stderr, "zsm-conformance: bad %s '%s': --rma-abi 13 or "
				"14, --ranks 2..%d, --hosts 1..ranks, "
				"--hostid-env NAME or none, --max-size "
				"BYTES[K|M|G], --signals 1..10^9, "
				"--init-fail-env VAR=VALUE\n",
			a, v, RC_MAX_RANKS);
		return -1;
	}
	(*i)++;
	return 1;
}

/* Whether this process prints the run's lines: one per pair. */
static int lb_leader(void)
{
	return !oob_joined() || oob_global_rank() % 2 == 0;
}

/*
 * The last line.  Across hosts rank 0 prints the whole run's counts and
 * the other pairs' even ranks their own; each process's exit status is
 * its pair's (rank 0's: the run's).
 */
static int lb_summary(int passed, int failed, int skipped)
{
	int counts[3] = { passed, failed, skipped };

	if (oob_joined() && oob_totals(counts))
		counts[1]++;
	if (lb_leader()) {
		if (oob_joined() && oob_global_rank() == 0 &&
		    oob_global_size() > 2)
			printf("# %d ranks, %d pairs\n", oob_global_size(),
			       oob_global_size() / 2);
		printf("%d passed, %d failed, %d skipped\n", counts[0],
		       counts[1], counts[2]);
	}
	fflush(stdout);
	if (oob_global_rank() != 0 || !oob_joined()) {
		counts[0] = passed;
		counts[1] = failed;
		counts[2] = skipped;
	}
	return counts[1] ? OOB_FAIL : OOB_PASS;
}

/* --rma: the RMA checks take the run (conformance_rma.c). */
static int lb_rma_main(struct rc_opts *rma, int list, const char *only,
		       long timeout_s, int gpu_given,
		       const struct oob_launch *launch)
{
	if (list) {
		rc_list();
		return 0;
	}
	if (lb_opts.abi || lb_opts.zsm_rules || launch->rendezvous ||
	    launch->rank >= 0 || launch->nranks >= 0) {
		fprintf(stderr, "zsm-conformance: --abi, --zsm-rules and the "
				"options across hosts do not go with --rma\n");
		return LB_USAGE;
	}
	if (!lb_opts.plugin) {
		lb_usage(stderr);
		return LB_USAGE;
	}
	if (only && lb_only_valid(only, rc_known))
		return LB_USAGE;
	if (rma->hosts > rma->nranks) {
		fprintf(stderr, "zsm-conformance: --hosts %d with %d ranks: at "
				"most one host a rank\n",
			rma->hosts, rma->nranks);
		return LB_USAGE;
	}
	rma->plugin = lb_opts.plugin;
	rma->dev = lb_opts.dev;
	rma->only = only;
	rma->timeout_s = timeout_s;
	rma->gpu = gpu_given;
	rma->gpu_ord[0] = lb_opts.gpu[0];
	rma->gpu_ord[1] = lb_opts.gpu[1];
	rma->scale = lb_time_scale();
	return rc_main(rma);
}

int main(int argc, char **argv)
{
	struct oob_launch launch = { .rank = -1, .nranks = -1 };
	struct rc_opts rma = { .nranks = 2, .hostid_env = "ZSM_HOSTID" };
	const char *rma_opt = NULL;
	int rma_on = 0, gpu_given = 0;
	long join_s = 300;
	const char *only = NULL;
	int passed = 0, failed = 0, skipped = 0, list = 0, i, r;
	struct lb_found *found;
	long timeout_s = 0, v;
	unsigned limit;
	size_t k;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		int has_val = i + 1 < argc;

		if (!strcmp(a, "--plugin") && has_val) {
			lb_opts.plugin = argv[++i];
		} else if (!strcmp(a, "--abi") && has_val) {
			v = lb_parse_num(argv[++i], ZSM_CLIENT_ABI_MIN,
					 ZSM_CLIENT_ABI_MAX);
			if (v < 0) {
				fprintf(stderr, "zsm-conformance: --abi must "
						"be 8..12\n");
				return LB_USAGE;
			}
			lb_opts.abi = (int)v;
		} else if (!strcmp(a, "--device") && has_val) {
			v = lb_parse_num(argv[++i], 0, 63);
			if (v < 0) {
				fprintf(stderr, "zsm-conformance: --device "
						"must be 0..63\n");
				return LB_USAGE;
			}
			lb_opts.dev = (int)v;
		} else if (!strcmp(a, "--timeout") && has_val) {
			timeout_s = lb_parse_num(argv[++i], 1, 86400);
			if (timeout_s < 0) {
				fprintf(stderr, "zsm-conformance: --timeout "
						"must be 1..86400 seconds\n");
				return LB_USAGE;
			}
		} else if (!strcmp(a, "--only") && has_val) {
			only = argv[++i];
		} else if (!strcmp(a, "--rank") && has_val) {
			v = lb_parse_num(argv[++i], 0, 1 << 20);
			if (v < 0) {
				fprintf(stderr, "zsm-conformance: --rank must "
						"be a whole number\n");
				return LB_USAGE;
			}
			launch.rank = (int)v;
			launch.source = "--rank";
		} else if (!strcmp(a, "--nranks") && has_val) {
			v = lb_parse_num(argv[++i], 2, 1 << 20);
			if (v < 0 || v % 2) {
				fprintf(stderr, "zsm-conformance: --nranks "
						"must be even and at least 2 "
						"(ranks run in pairs)\n");
				return LB_USAGE;
			}
			launch.nranks = (int)v;
		} else if (!strcmp(a, "--gpu") && has_val) {
			if (oob_pair_values(argv[++i], 63, lb_opts.gpu)) {
				fprintf(stderr, "zsm-conformance: --gpu takes "
						"G0[,G1], CUDA device numbers "
						"0..63\n");
				return LB_USAGE;
			}
			gpu_given = 1;
		} else if (!strcmp(a, "--rendezvous") && has_val) {
			launch.rendezvous = argv[++i];
		} else if (!strcmp(a, "--join-timeout") && has_val) {
			join_s = lb_parse_num(argv[++i], 1, 86400);
			if (join_s < 0) {
				fprintf(stderr, "zsm-conformance: "
						"--join-timeout must be "
						"1..86400 seconds\n");
				return LB_USAGE;
			}
		} else if (!strcmp(a, "--zsm-rules")) {
			lb_opts.zsm_rules = 1;
		} else if (!strcmp(a, "--list")) {
			list = 1;
		} else if ((r = lb_rma_option(argc, argv, &i, &rma)) != 0) {
			if (r < 0)
				return LB_USAGE;
			if (r == 2)
				rma_on = 1;
			else
				rma_opt = a;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			lb_usage(stdout);
			return 0;
		} else if (a[0] != '-' && !lb_opts.plugin) {
			lb_opts.plugin = a;
		} else {
			lb_usage(stderr);
			return LB_USAGE;
		}
	}
	/* Before the first rank forks (docs/conformance.md). */
	if (preload_from_env())
		return OOB_FAIL;
	if (rma_on)
		return lb_rma_main(&rma, list, only, timeout_s, gpu_given,
				   &launch);
	if (rma_opt) {
		fprintf(stderr, "zsm-conformance: %s only goes with --rma\n",
			rma_opt);
		return LB_USAGE;
	}
	if (list) {
		for (k = 0; k < LB_NCHECKS; k++)
			printf("%-24s %s\n", lb_checks[k].name,
			       lb_checks[k].what);
		return 0;
	}
	if (!lb_opts.plugin) {
		lb_usage(stderr);
		return LB_USAGE;
	}
	if (only && lb_only_valid(only, lb_known))
		return LB_USAGE;
	if (oob_launch_resolve(&launch, "zsm-conformance"))
		return LB_USAGE;
	if (launch.rendezvous && oob_join(&launch, (unsigned)join_s)) {
		fprintf(stderr, "zsm-conformance: rank %d could not join the "
				"run at %s\n",
			launch.rank, launch.rendezvous);
		return OOB_FAIL;
	}
	lb_scale = lb_time_scale();
	if (access(lb_opts.plugin, R_OK)) {
		printf("FAIL init: %s: %s\n", lb_opts.plugin, strerror(errno));
		printf("0 passed, 1 failed, 0 skipped\n");
		return OOB_FAIL;
	}
	found = mmap(NULL, sizeof(*found), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (found == MAP_FAILED) {
		perror("zsm-conformance: mmap");
		return OOB_FAIL;
	}
	memset(found, 0, sizeof(*found));
	lb_warnings = &found->warnings;
	atomic_init(lb_warnings, 0);
	/* Every wait of a rank drives its outstanding requests. */
	oob_set_idle(lb_idle, NULL);
	limit = (unsigned)(timeout_s ? timeout_s : 30) * (unsigned)lb_scale;
	r = oob_check("init", "plugin loads, init succeeds, devices > 0",
		      NULL, check_init, found, limit);
	if (r == OOB_PASS && !found->abi)
		r = OOB_FAIL;
	/* Nothing could run: every selected check is a skip. */
	if (r == OOB_SKIP) {
		for (k = 0; k < LB_NCHECKS; k++)
			skipped += lb_selected(only, lb_checks[k].name);
		lb_summary(0, 0, skipped);
		return OOB_SKIP;
	}
	if (r != OOB_PASS)
		return lb_summary(0, 1, 0);
	/* Every check uses the table init found: the highest by default. */
	lb_opts.abi = found->abi;
	for (k = 0; k < LB_NCHECKS; k++) {
		if (!lb_selected(only, lb_checks[k].name))
			continue;
		limit = (unsigned)(timeout_s ? timeout_s
					     : (long)lb_checks[k].timeout_s) *
			(unsigned)lb_scale;
		lb_check_name = lb_checks[k].name;
		r = oob_check(lb_checks[k].name, lb_checks[k].what,
			      lb_checks[k].rule, lb_checks[k].fn, NULL, limit);
		if (r == OOB_PASS)
			passed++;
		else if (r == OOB_SKIP)
			skipped++;
		else
			failed++;
	}
	if (lb_leader())
		printf("# plugin %s, abi %d, device %d\n", lb_opts.plugin,
		       lb_opts.abi, lb_opts.dev);
	/* relaxed: every fork that counted has been reaped. */
	k = (size_t)atomic_load_explicit(lb_warnings, memory_order_relaxed);
	if (k)
		printf("# %zu warning%s (WARN lines above): slow, but within "
		       "NCCL's rules\n",
		       k, k == 1 ? "" : "s");
	return lb_summary(passed, failed, skipped);
}
