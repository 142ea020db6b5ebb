/* SPDX-License-Identifier: MIT */
/*
 * zsm-conformance's checks of a device's properties and of connection
 * set-up: properties, connect_retry (no call blocks, a NULL comm means
 * call again), bad_handle and connect_closed_listener (a connect that
 * cannot succeed fails, in a child process so that a crash is a verdict).
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "conformance.h"
#include "pattern.h"

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

int check_properties(int rank, void *arg)
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

int check_connect_retry(int rank, void *arg)
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

int check_bad_handle(int rank, void *arg)
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

int check_connect_closed_listener(int rank, void *arg)
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
