/* SPDX-License-Identifier: MIT */
/*
 * nccl_rma: NCCL 2.30's host RMA and its zero-SM collectives between two
 * ranks on one GPU that NCCL takes for two hosts (NCCL_HOSTID per rank),
 * so every byte between them goes through NCCL's RMA and net plugins (zsm,
 * or NCCL's own).  Host code only: built with cc against NCCL 2.30.7's
 * nccl.h and libcudart; GPU memory is filled and read with cudaMemcpyAsync
 * and cudaMemsetAsync.
 *
 *   rma   windows from ncclMemAlloc + ncclCommWindowRegister
 *         (NCCL_WIN_COLL_SYMMETRIC); ncclPutSignal of 1 B .. 256 MiB (odd
 *         sizes and offsets too) in both directions at once, each followed
 *         by ncclWaitSignal, the bytes checked on the host with guard bytes
 *         around them; ncclSignal alone; four puts under one wait (opCnt 4);
 *         then put-signal round trips (ping-pong, 10^4 by default), timed
 *         one by one, every byte of them checked at the end.
 *   coll  a communicator with CTAPolicy NCCL_CTA_POLICY_ZERO (the config
 *         field; NCCL_CTA_POLICY=ZERO is the environment's name for it),
 *         AllGather and AlltoAll between registered windows at a few sizes,
 *         exact, timed.
 *
 * Each part runs in a fresh pair of processes forked by this one (so a
 * part that hangs or crashes leaves the next one clean), under a deadline
 * after which the pair is killed and the step each rank was in is named.
 * Every stream wait has its own deadline too.  The ranks talk to each other
 * over a socketpair (the unique id, barriers, each check's verdict).
 *
 * Each check prints one line, from rank 0, with both ranks' details:
 *     CHECK <part> <what>: PASS|FAIL|SKIP  r0: ... | r1: ...
 * and each part one verdict line from this process:
 *     PART <part>: PASS|FAIL|SKIP (...)
 * When NCCL refuses a call (ncclInvalidArgument or ncclInvalidUsage) before
 * any data moved, the check and the rest of its part are SKIP, with NCCL's
 * result and ncclGetLastError; --require makes that a FAIL.  A wrong byte,
 * a timeout or any other error is a FAIL.  Exit status: 0 every part passed,
 * 77 none failed but one was skipped, 1 otherwise, 2 bad usage.
 *
 * With CUPTI there (libcupti, found at run time), the CUDA API calls made
 * while NCCL works are counted: kernel launches, copies, stream memory
 * operations.  Zero kernel launches is what "zero SM" must look like.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <nccl.h>

#if defined(__has_include)
#if __has_include(<cupti.h>)
#include <cupti.h>
#define HAVE_CUPTI 1
#endif
#endif

#if NCCL_VERSION_CODE < 23000
#error "nccl_rma needs nccl.h of NCCL 2.30 or later (host RMA, CTAPolicy)"
#endif

#define MIB (1024 * 1024ul)
#define GUARD 64	      /* bytes checked untouched on each side */
#define SENT 0xa5	      /* what the guard bytes and unwritten bytes hold */
#define ALIGN (2 * MIB)	      /* window sizes: ncclMemAlloc's granularity */
#define DETAIL 400

enum { ST_PASS, ST_SKIP, ST_FAIL };
static const char *st_name[] = {"PASS", "SKIP", "FAIL"};

/* ---------------------------------------------------------------- options */

static struct {
	int part_rma, part_coll;
	int device;
	double timeout_s; /* one part, both ranks */
	double wait_s;	  /* one stream wait */
	size_t max_bytes;
	long iters;
	size_t pp_bytes;
	double pp_budget_s;
	size_t coll_max;
	int coll_iters;
	const char *nccl_hostid[2];
	const char *zsm_hostid[2];
	int require;
	int cta_policy;
	int cupti;
} opt = {
	.part_rma = 1,
	.part_coll = 1,
	.timeout_s = 240,
	.wait_s = 60,
	.max_bytes = 256 * MIB,
	.iters = 10000,
	.pp_bytes = 8,
	.pp_budget_s = 60,
	.coll_max = 64 * MIB,
	.coll_iters = 10,
	.nccl_hostid = {"nccl-rma-host0", "nccl-rma-host1"},
	.cta_policy = NCCL_CTA_POLICY_ZERO,
	.cupti = 1,
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: nccl_rma [options]\n"
		"  --part rma|coll|all     which parts (all)\n"
		"  --device N              the GPU both ranks use (0)\n"
		"  --timeout S             deadline of one part (240)\n"
		"  --wait S                deadline of one stream wait (60)\n"
		"  --max-bytes N           largest put (268435456)\n"
		"  --iters N               ping-pong round trips (10000)\n"
		"  --pp-bytes N            bytes of one ping (8)\n"
		"  --pp-budget S           fewer round trips when 10^4 would "
		"take longer (60)\n"
		"  --coll-max N            largest per-rank collective size "
		"(67108864)\n"
		"  --coll-iters N          timed iterations per size (10)\n"
		"  --nccl-hostids A,B      NCCL_HOSTID of rank 0 and 1\n"
		"  --zsm-hostids A,B       ZSM_HOSTID of rank 0 and 1 (default: "
		"as inherited)\n"
		"  --cta-policy zero|default|efficiency   for part coll (zero)\n"
		"  --require               a refusal by NCCL is a FAIL, not a "
		"SKIP\n"
		"  --no-cupti              do not count CUDA API calls\n"
		"  --quick                 max-bytes 16 MiB, iters 1000, "
		"coll-max 4 MiB\n");
}

static int split2(char *s, const char *out[2])
{
	char *comma = strchr(s, ',');

	if (!comma || comma == s || !comma[1])
		return -EINVAL;
	*comma = 0;
	out[0] = s;
	out[1] = comma + 1;
	return 0;
}

static int parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || v == 0)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_args(int argc, char **argv)
{
	enum { O_PART = 256, O_DEV, O_TIMEOUT, O_WAIT, O_MAX, O_ITERS, O_PPB,
	       O_PPBUDGET, O_CMAX, O_CITERS, O_NH, O_ZH, O_CTA, O_REQ,
	       O_NOCUPTI, O_QUICK, O_HELP };
	static const struct option lo[] = {
		{"part", 1, 0, O_PART},	       {"device", 1, 0, O_DEV},
		{"timeout", 1, 0, O_TIMEOUT},  {"wait", 1, 0, O_WAIT},
		{"max-bytes", 1, 0, O_MAX},    {"iters", 1, 0, O_ITERS},
		{"pp-bytes", 1, 0, O_PPB},     {"pp-budget", 1, 0, O_PPBUDGET},
		{"coll-max", 1, 0, O_CMAX},    {"coll-iters", 1, 0, O_CITERS},
		{"nccl-hostids", 1, 0, O_NH},  {"zsm-hostids", 1, 0, O_ZH},
		{"cta-policy", 1, 0, O_CTA},   {"require", 0, 0, O_REQ},
		{"no-cupti", 0, 0, O_NOCUPTI}, {"quick", 0, 0, O_QUICK},
		{"help", 0, 0, O_HELP},	       {0, 0, 0, 0},
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case O_PART:
			opt.part_rma = !strcmp(optarg, "rma") ||
				       !strcmp(optarg, "all");
			opt.part_coll = !strcmp(optarg, "coll") ||
					!strcmp(optarg, "all");
			if (!opt.part_rma && !opt.part_coll)
				goto bad;
			break;
		case O_DEV:
			opt.device = atoi(optarg);
			break;
		case O_TIMEOUT:
			opt.timeout_s = atof(optarg);
			if (opt.timeout_s <= 0)
				goto bad;
			break;
		case O_WAIT:
			opt.wait_s = atof(optarg);
			if (opt.wait_s <= 0)
				goto bad;
			break;
		case O_MAX:
			if (parse_size(optarg, &opt.max_bytes))
				goto bad;
			break;
		case O_ITERS:
			opt.iters = atol(optarg);
			if (opt.iters < 1)
				goto bad;
			break;
		case O_PPB:
			if (parse_size(optarg, &opt.pp_bytes))
				goto bad;
			break;
		case O_PPBUDGET:
			opt.pp_budget_s = atof(optarg);
			if (opt.pp_budget_s <= 0)
				goto bad;
			break;
		case O_CMAX:
			if (parse_size(optarg, &opt.coll_max))
				goto bad;
			break;
		case O_CITERS:
			opt.coll_iters = atoi(optarg);
			if (opt.coll_iters < 1)
				goto bad;
			break;
		case O_NH:
			if (split2(optarg, opt.nccl_hostid))
				goto bad;
			break;
		case O_ZH:
			if (split2(optarg, opt.zsm_hostid))
				goto bad;
			break;
		case O_CTA:
			if (!strcmp(optarg, "zero"))
				opt.cta_policy = NCCL_CTA_POLICY_ZERO;
			else if (!strcmp(optarg, "default"))
				opt.cta_policy = NCCL_CTA_POLICY_DEFAULT;
			else if (!strcmp(optarg, "efficiency"))
				opt.cta_policy = NCCL_CTA_POLICY_EFFICIENCY;
			else
				goto bad;
			break;
		case O_REQ:
			opt.require = 1;
			break;
		case O_NOCUPTI:
			opt.cupti = 0;
			break;
		case O_QUICK:
			opt.max_bytes = 16 * MIB;
			opt.iters = 1000;
			opt.coll_max = 4 * MIB;
			break;
		case O_HELP:
		case 'h':
			usage(stdout);
			exit(0);
		default:
			goto bad;
		}
	}
	if (optind != argc)
		goto bad;
	return 0;
bad:
	usage(stderr);
	return -EINVAL;
}

/* ---------------------------------------------------------------- helpers */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* q in [0,1] of n sorted values */
static double quantile(const double *v, size_t n, double q)
{
	size_t i = (size_t)(q * (double)(n - 1) + 0.5);

	return v[i < n ? i : n - 1];
}

static const char *human(size_t b, char *buf, size_t n)
{
	if (b >= MIB && b % MIB == 0)
		snprintf(buf, n, "%zu MiB", b / MIB);
	else if (b >= 1024 && b % 1024 == 0)
		snprintf(buf, n, "%zu KiB", b / 1024);
	else
		snprintf(buf, n, "%zu B", b);
	return buf;
}

/* One byte of rank's pattern at offset i: no short period, so a shifted or
 * misplaced copy shows. */
static inline uint8_t pat(int rank, size_t i)
{
	uint64_t x = ((uint64_t)i + 1) * 0x9e3779b97f4a7c15ull;

	x ^= (uint64_t)(rank + 1) * 0xbf58476d1ce4e5b9ull;
	return (uint8_t)(x >> 56 ^ x >> 27);
}

/* ---------------------------------------------- per-rank state and errors */

static int me = -1;	     /* rank in the pair; -1 in the parent */
static int oob = -1;	     /* socket to the peer */
static char *steps;	     /* shared page: each rank's current step */
#define STEP_LEN 256

/* What this rank is doing, for the parent to name if it has to kill it.
 * The parent reads it only after waitpid, so no ordering is needed. */
static void step(const char *fmt, ...)
{
	va_list ap;

	if (!steps || me < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(steps + me * STEP_LEN, STEP_LEN, fmt, ap);
	va_end(ap);
}

static void logr(const char *fmt, ...)
{
	va_list ap;
	char line[1024];

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "[r%d] %s\n", me, line);
}

/* Is rc NCCL saying "not here" rather than "broken"? */
static int refused(ncclResult_t rc)
{
	return rc == ncclInvalidArgument || rc == ncclInvalidUsage;
}

static void nccl_detail(char *d, size_t n, const char *what, ncclResult_t rc,
			ncclComm_t comm)
{
	const char *last = ncclGetLastError(comm);

	snprintf(d, n, "%s returned %s (%d); ncclGetLastError: %s", what,
		 ncclGetErrorString(rc), (int)rc,
		 last && *last ? last : "(empty)");
}

static void cuda_detail(char *d, size_t n, const char *what, cudaError_t e)
{
	snprintf(d, n, "%s: %s (%s, %d)", what, cudaGetErrorString(e),
		 cudaGetErrorName(e), (int)e);
}

/* ------------------------------------------------------- the peer channel */

static int oob_write(const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		/* MSG_NOSIGNAL: a peer that died is an error to report,
		 * not a SIGPIPE that kills this rank too. */
		ssize_t w = send(oob, c, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -EPIPE;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Reads n bytes from the peer within secs; says what it waited for. */
static int oob_read(void *p, size_t n, double secs, const char *what,
		    char *err, size_t en)
{
	char *c = p;
	double end = now_s() + secs;

	while (n) {
		struct pollfd pf = {.fd = oob, .events = POLLIN};
		double left = end - now_s();
		int r;
		ssize_t got;

		if (left <= 0) {
			snprintf(err, en, "no word from the peer within %.0f s "
				 "while waiting for %s", secs, what);
			return -ETIMEDOUT;
		}
		r = poll(&pf, 1, (int)(left * 1000) + 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(err, en, "poll on the peer channel: %s",
				 strerror(errno));
			return -errno;
		}
		if (r == 0)
			continue;
		got = read(oob, c, n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			snprintf(err, en, "the peer went away while this rank "
				 "waited for %s", what);
			return -EPIPE;
		}
		c += got;
		n -= (size_t)got;
	}
	return 0;
}

struct verdict {
	int status;
	int fatal; /* this part cannot go on (a stream is stuck, peer lost) */
	char detail[DETAIL];
};

/* Every word between the ranks is one of these, tagged with what it is
 * for, so ranks that fell out of step say so instead of misreading. */
struct msg {
	char tag[64];
	long val;
	ncclUniqueId id;
	struct verdict v;
};

/* Sends *mine and reads the peer's into *peer; both ranks call it at the
 * same point with the same kind ('v' verdict, 'b' barrier, 'e' enqueued,
 * 'x' anything else) and tag. */
static int swap(char kind, const char *tag, struct msg *mine,
		struct msg *peer, char *err, size_t en)
{
	snprintf(mine->tag, sizeof(mine->tag), "%c:%s", kind, tag);
	if (oob_write(mine, sizeof(*mine))) {
		snprintf(err, en, "the peer went away before %s", tag);
		return -EPIPE;
	}
	/* The peer may be in a stream wait or a check of 256 MiB first. */
	if (oob_read(peer, sizeof(*peer), opt.wait_s + 30, tag, err, en))
		return -EPIPE;
	peer->tag[sizeof(peer->tag) - 1] = 0;
	if (strcmp(mine->tag, peer->tag)) {
		snprintf(err, en, "out of step: this rank is at \"%s\", the "
			 "peer at \"%s\"", mine->tag, peer->tag);
		return -EPROTO;
	}
	return 0;
}

static int worst = ST_PASS; /* of this rank's checks in this part */
static int fatal_seen;

/* Both ranks' verdicts on one check: rank 0 prints the line.  Returns the
 * combined status; sets fatal_seen when either rank cannot go on. */
static int settle(const char *part, const char *what, struct verdict *mine)
{
	struct msg a, b;
	struct verdict peer;
	char err[DETAIL - 16];
	int st;

	memset(&a, 0, sizeof(a));
	a.v = *mine;
	if (swap('v', what, &a, &b, err, sizeof(err))) {
		memset(&peer, 0, sizeof(peer));
		peer.status = ST_FAIL;
		peer.fatal = 1;
		snprintf(peer.detail, sizeof(peer.detail), "(peer: %s)", err);
	} else {
		peer = b.v;
		peer.detail[sizeof(peer.detail) - 1] = 0;
	}
	st = mine->status > peer.status ? mine->status : peer.status;
	if (me == 0) {
		struct verdict *v0 = mine, *v1 = &peer;

		printf("CHECK %s %s: %s  r0: %s | r1: %s\n", part, what,
		       st_name[st], v0->detail[0] ? v0->detail : "ok",
		       v1->detail[0] ? v1->detail : "ok");
		fflush(stdout);
	}
	if (st > worst)
		worst = st;
	if (mine->fatal || peer.fatal)
		fatal_seen = 1;
	return st;
}

static void v_set(struct verdict *v, int st, const char *fmt, ...)
{
	va_list ap;

	v->status = st;
	va_start(ap, fmt);
	vsnprintf(v->detail, sizeof(v->detail), fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------------ CUPTI */

enum { C_KERNEL, C_GRAPH, C_COPY, C_SET, C_MEMOP, C_N };
static unsigned long api_count[C_N];
static int cupti_ok;
static char cupti_why[160] = "not built with cupti.h";

#ifdef HAVE_CUPTI
static CUptiResult (*p_subscribe)(CUpti_SubscriberHandle *,
				  CUpti_CallbackFunc, void *);
static CUptiResult (*p_enable_domain)(uint32_t, CUpti_SubscriberHandle,
				      CUpti_CallbackDomain);
static CUpti_SubscriberHandle cupti_sub;

static void CUPTIAPI api_seen(void *ud, CUpti_CallbackDomain dom,
			      CUpti_CallbackId id, const void *data)
{
	const CUpti_CallbackData *cb = data;
	const char *f;
	int k;

	(void)ud;
	(void)dom;
	(void)id;
	if (!cb || cb->callbackSite != CUPTI_API_ENTER || !cb->functionName)
		return;
	f = cb->functionName;
	if (strstr(f, "GraphLaunch"))
		k = C_GRAPH;
	else if (strstr(f, "Launch") && strstr(f, "Kernel"))
		k = C_KERNEL;
	else if (!strncmp(f, "cudaMemcpy", 10) || !strncmp(f, "cuMemcpy", 8))
		k = C_COPY;
	else if (!strncmp(f, "cudaMemset", 10) || !strncmp(f, "cuMemset", 8))
		k = C_SET;
	else if (strstr(f, "StreamBatchMemOp") || strstr(f, "StreamWaitValue") ||
		 strstr(f, "StreamWriteValue"))
		k = C_MEMOP;
	else
		return;
	/* Relaxed: a count, read by this thread after the domains are
	 * turned off; an add still under way on another of NCCL's threads
	 * at that moment may be missed, which a diagnostic can afford. */
	__atomic_fetch_add(&api_count[k], 1, __ATOMIC_RELAXED);
}

static void cupti_init(void)
{
	static const char *names[] = {
		"libcupti.so", "libcupti.so.13", "libcupti.so.12",
		"/usr/local/cuda/lib64/libcupti.so",
		"/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
		"/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
		"/usr/local/cuda/lib/libcupti.so",
	};
	const char *env = getenv("NCCL_RMA_CUPTI");
	void *h = NULL;
	CUptiResult r;
	size_t i;

	if (!opt.cupti) {
		snprintf(cupti_why, sizeof(cupti_why), "--no-cupti");
		return;
	}
	if (env)
		h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
	for (i = 0; !h && i < sizeof(names) / sizeof(names[0]); i++)
		h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(cupti_why, sizeof(cupti_why), "no libcupti (%s)",
			 dlerror());
		return;
	}
	p_subscribe = (__typeof__(p_subscribe))dlsym(h, "cuptiSubscribe");
	p_enable_domain =
		(__typeof__(p_enable_domain))dlsym(h, "cuptiEnableDomain");
	if (!p_subscribe || !p_enable_domain) {
		snprintf(cupti_why, sizeof(cupti_why),
			 "libcupti lacks cuptiSubscribe/cuptiEnableDomain");
		return;
	}
	r = p_subscribe(&cupti_sub, (CUpti_CallbackFunc)api_seen, NULL);
	if (r != CUPTI_SUCCESS) {
		snprintf(cupti_why, sizeof(cupti_why),
			 "cuptiSubscribe failed (%d)", (int)r);
		return;
	}
	cupti_ok = 1;
}

/* Counts the calls made between cupti_count(1) and cupti_count(0), summed
 * since the last cupti_reset(). */
static void cupti_count(int on)
{
	if (!cupti_ok)
		return;
	p_enable_domain(on, cupti_sub, CUPTI_CB_DOMAIN_RUNTIME_API);
	p_enable_domain(on, cupti_sub, CUPTI_CB_DOMAIN_DRIVER_API);
}
#else
static void cupti_init(void)
{
}

static void cupti_count(int on)
{
	(void)on;
}
#endif

static void cupti_reset(void)
{
	int k;

	/* Relaxed, like the adds in api_seen: counting is off here, and an
	 * add still under way on another thread may land after the reset,
	 * which a diagnostic can afford. */
	for (k = 0; k < C_N; k++)
		__atomic_store_n(&api_count[k], 0, __ATOMIC_RELAXED);
}

static const char *api_summary(char *buf, size_t n)
{
	unsigned long c[C_N];
	int k;

	if (!cupti_ok) {
		snprintf(buf, n, "API calls not counted: %s", cupti_why);
		return buf;
	}
	/* Relaxed: see api_seen; counting is off by now. */
	for (k = 0; k < C_N; k++)
		c[k] = __atomic_load_n(&api_count[k], __ATOMIC_RELAXED);
	snprintf(buf, n, "CUDA API calls: %lu kernel launches, %lu graph "
		 "launches, %lu copies, %lu memsets, %lu stream memops",
		 c[C_KERNEL], c[C_GRAPH], c[C_COPY], c[C_SET], c[C_MEMOP]);
	return buf;
}

static unsigned long kernels_seen(void)
{
	return __atomic_load_n(&api_count[C_KERNEL], __ATOMIC_RELAXED) +
	       __atomic_load_n(&api_count[C_GRAPH], __ATOMIC_RELAXED);
}

/* ------------------------------------------------------ GPU-side helpers */

static ncclComm_t comm;
static cudaStream_t stream;

/* Waits for the stream within secs, watching NCCL's async error too. */
static int stream_wait(const char *what, char *err, size_t en)
{
	double end = now_s() + opt.wait_s;
	unsigned long spins = 0;

	for (;;) {
		cudaError_t e = cudaStreamQuery(stream);
		ncclResult_t a;

		if (e == cudaSuccess)
			return 0;
		if (e != cudaErrorNotReady) {
			cuda_detail(err, en, what, e);
			return -EIO;
		}
		if ((++spins & 1023) == 0) {
			if (ncclCommGetAsyncError(comm, &a) == ncclSuccess &&
			    a != ncclSuccess && a != ncclInProgress) {
				nccl_detail(err, en, "ncclCommGetAsyncError",
					    a, comm);
				return -EIO;
			}
			if (now_s() > end) {
				snprintf(err, en, "%s: the stream was not done "
					 "after %.0f s", what, opt.wait_s);
				return -ETIMEDOUT;
			}
		}
		sched_yield();
	}
}

/* Fills [off, off+n) of dev with rank's pattern (at those offsets) through
 * the host buffer hb (n bytes at least).  On our stream, waited for: a
 * plain cudaMemcpy from pageable memory may return before the bytes land,
 * and does not order with a non-blocking stream. */
static int fill_pattern(char *dev, size_t off, size_t n, uint8_t *hb,
			char *err, size_t en)
{
	cudaError_t e;
	size_t i;

	for (i = 0; i < n; i++)
		hb[i] = pat(me, off + i);
	e = cudaMemcpyAsync(dev + off, hb, n, cudaMemcpyHostToDevice, stream);
	if (e != cudaSuccess) {
		cuda_detail(err, en, "cudaMemcpyAsync (pattern to GPU)", e);
		return -EIO;
	}
	return stream_wait("cudaMemcpyAsync (pattern to GPU)", err, en);
}

/* Sets [lo, hi) of dev to SENT on the stream and waits for it. */
static int sentinel(char *dev, size_t lo, size_t hi, char *err, size_t en)
{
	cudaError_t e = cudaMemsetAsync(dev + lo, SENT, hi - lo, stream);

	if (e != cudaSuccess) {
		cuda_detail(err, en, "cudaMemsetAsync (sentinel)", e);
		return -EIO;
	}
	return stream_wait("cudaMemsetAsync (sentinel)", err, en);
}

/* What a region should hold: byte j of [lo, hi) is exp(j). */
struct expect {
	size_t lo, hi;	   /* the region checked, guards included */
	size_t dlo, dhi;   /* the bytes written; SENT outside them */
	int src_rank;	   /* whose pattern */
	size_t src_off;	   /* pattern offset of byte dlo */
	/* AlltoAll and AllGather: the written bytes come in two pieces */
	size_t split;	   /* 0, or bytes per piece */
	size_t piece_src[2];
	int piece_rank[2];
};

static uint8_t expected(const struct expect *x, size_t i)
{
	size_t j;
	int p;

	if (i < x->dlo || i >= x->dhi)
		return SENT;
	j = i - x->dlo;
	if (!x->split)
		return pat(x->src_rank, x->src_off + j);
	p = (int)(j / x->split);
	return pat(x->piece_rank[p], x->piece_src[p] + j % x->split);
}

/* Copies [lo, hi) of dev back and compares; says where it differs. */
static int check_region(const char *dev, const struct expect *x, uint8_t *hb,
			char *err, size_t en)
{
	size_t n = x->hi - x->lo, i, bad = 0, first = 0;
	cudaError_t e = cudaMemcpyAsync(hb, dev + x->lo, n,
					cudaMemcpyDeviceToHost, stream);

	if (e != cudaSuccess) {
		cuda_detail(err, en, "cudaMemcpyAsync (check to host)", e);
		return -EIO;
	}
	if (stream_wait("cudaMemcpyAsync (check to host)", err, en))
		return -EIO;
	for (i = 0; i < n; i++) {
		if (hb[i] != expected(x, x->lo + i)) {
			if (!bad)
				first = i;
			bad++;
		}
	}
	if (!bad)
		return 0;
	i = x->lo + first;
	snprintf(err, en, "%zu of %zu bytes wrong; first at window offset %zu "
		 "(%s), 0x%02x instead of 0x%02x", bad, n, i,
		 i < x->dlo || i >= x->dhi ? "a guard byte" : "written range",
		 hb[first], expected(x, i));
	return -EBADMSG;
}

/* -------------------------------------------------------- communicator */

static int comm_up(ncclConfig_t *cfg, struct verdict *v)
{
	ncclUniqueId id;
	ncclResult_t rc;
	cudaError_t e;
	char err[DETAIL];
	struct msg a, b;
	int ver = 0;

	step("cudaSetDevice(%d)", opt.device);
	e = cudaSetDevice(opt.device);
	if (e != cudaSuccess) {
		cuda_detail(v->detail, DETAIL, "cudaSetDevice", e);
		v->status = ST_FAIL;
		return -EIO;
	}
	e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
	if (e != cudaSuccess) {
		cuda_detail(v->detail, DETAIL, "cudaStreamCreate", e);
		v->status = ST_FAIL;
		return -EIO;
	}
	ncclGetVersion(&ver);
	if (ver < 23000) {
		v_set(v, ST_FAIL, "NCCL %d runs here; this program was built "
		      "against 2.30 headers (preload NCCL 2.30.7)", ver);
		return -ENOTSUP;
	}
	memset(&a, 0, sizeof(a));
	if (me == 0) {
		step("ncclGetUniqueId");
		rc = ncclGetUniqueId(&a.id);
		a.val = rc;
		if (rc != ncclSuccess) {
			nccl_detail(v->detail, DETAIL, "ncclGetUniqueId", rc,
				    NULL);
			v->status = ST_FAIL;
		}
	}
	step("passing the unique id");
	if (swap('x', "the unique id", &a, &b, err, sizeof(err))) {
		v_set(v, ST_FAIL, "%s", err);
		return -EIO;
	}
	if (me == 0 && a.val != ncclSuccess)
		return -EIO;
	if (me == 1 && b.val != ncclSuccess) {
		v_set(v, ST_FAIL, "rank 0 has no unique id");
		return -EIO;
	}
	id = me == 0 ? a.id : b.id;
	step("ncclCommInitRankConfig (NCCL_HOSTID %s)", getenv("NCCL_HOSTID"));
	rc = ncclCommInitRankConfig(&comm, 2, id, me, cfg);
	if (rc != ncclSuccess) {
		nccl_detail(v->detail, DETAIL, "ncclCommInitRankConfig", rc,
			    NULL);
		v->status = ST_FAIL;
		comm = NULL;
		return -EIO;
	}
	v_set(v, ST_PASS, "NCCL %d, NCCL_HOSTID %s, ZSM_HOSTID %s", ver,
	      getenv("NCCL_HOSTID"),
	      getenv("ZSM_HOSTID") ? getenv("ZSM_HOSTID") : "(unset)");
	return 0;
}

/* Registers size bytes from ncclMemAlloc as a symmetric window. */
struct win {
	char *ptr;
	size_t size;
	ncclWindow_t w;
};

static int win_up(struct win *w, size_t size, const char *name,
		  struct verdict *v)
{
	ncclResult_t rc;
	char what[96];

	w->size = (size + ALIGN - 1) / ALIGN * ALIGN;
	step("ncclMemAlloc(%zu) for %s", w->size, name);
	rc = ncclMemAlloc((void **)&w->ptr, w->size);
	if (rc != ncclSuccess) {
		snprintf(what, sizeof(what), "ncclMemAlloc(%zu) for %s",
			 w->size, name);
		nccl_detail(v->detail, DETAIL, what, rc, comm);
		v->status = ST_FAIL;
		w->ptr = NULL;
		return -ENOMEM;
	}
	step("ncclCommWindowRegister(%s, %zu bytes)", name, w->size);
	rc = ncclCommWindowRegister(comm, w->ptr, w->size, &w->w,
				    NCCL_WIN_COLL_SYMMETRIC);
	if (rc != ncclSuccess) {
		snprintf(what, sizeof(what), "ncclCommWindowRegister(%s, %zu "
			 "bytes, NCCL_WIN_COLL_SYMMETRIC)", name, w->size);
		nccl_detail(v->detail, DETAIL, what, rc, comm);
		v->status = refused(rc) && !opt.require ? ST_SKIP : ST_FAIL;
		w->w = NULL;
		return -ENOTSUP;
	}
	return 0;
}

static void win_down(struct win *w)
{
	if (w->w) {
		step("ncclCommWindowDeregister");
		ncclCommWindowDeregister(comm, w->w);
	}
	if (w->ptr) {
		step("ncclMemFree");
		ncclMemFree(w->ptr);
	}
	w->w = NULL;
	w->ptr = NULL;
}

static void comm_down(void)
{
	if (comm) {
		step("ncclCommDestroy");
		ncclCommDestroy(comm);
	}
	comm = NULL;
}

/* ------------------------------------------------------------- part rma */

static struct win rs, rr; /* put sources, put targets */
static uint8_t *hbuf;

static ncclResult_t put(size_t soff, size_t n, size_t doff)
{
	return ncclPutSignal(rs.ptr + soff, n, ncclInt8, 1 - me, rr.w, doff,
			     0, 0, 0, comm, stream);
}

static ncclResult_t wait_signals(int count)
{
	ncclWaitSignalDesc_t d = {.opCnt = count, .peer = 1 - me,
				  .sigIdx = 0, .ctx = 0};

	return ncclWaitSignal(1, &d, comm, stream);
}

/* After this rank enqueued `sent` of `want` puts or signals to the peer
 * (rc: the call that stopped it, if any), both ranks say how many went in,
 * and each waits for as many signals as its peer sent: no rank waits for a
 * signal that cannot come, and none is left over to end a later wait early.
 * Then waits for the stream.  Returns 0 when both sent all and every wait
 * ended; otherwise fills v (fatal when the stream or the peer is lost). */
static int exchange(ncclResult_t rc, int sent, int want, const char *what,
		    struct verdict *v, const int *nothing_moved)
{
	struct msg a, b;
	char err[DETAIL];
	long theirs;

	if (rc != ncclSuccess) {
		nccl_detail(v->detail, DETAIL, what, rc, comm);
		v->status = refused(rc) && *nothing_moved && !opt.require
				    ? ST_SKIP : ST_FAIL;
	}
	memset(&a, 0, sizeof(a));
	a.val = sent;
	if (swap('e', what, &a, &b, err, sizeof(err))) {
		v_set(v, ST_FAIL, "%s", err);
		v->fatal = 1;
		return -EPIPE;
	}
	theirs = b.val;
	if (theirs > 0) {
		ncclResult_t w = wait_signals((int)theirs);

		if (w != ncclSuccess) {
			nccl_detail(v->detail, DETAIL, "ncclWaitSignal", w,
				    comm);
			v->status = ST_FAIL;
			/* the peer's signals stay unconsumed */
			v->fatal = 1;
			return -EIO;
		}
	}
	step("stream wait after %s", what);
	if (stream_wait(what, err, sizeof(err))) {
		v_set(v, ST_FAIL, "%s", err);
		v->fatal = 1;
		return -ETIMEDOUT;
	}
	if (sent == want && theirs == want)
		return 0;
	if (rc == ncclSuccess)
		v_set(v, ST_PASS, "sent %d of %d; the peer sent %ld", sent,
		      want, theirs);
	return -ECANCELED;
}

static int barrier(const char *what, struct verdict *v)
{
	struct msg a, b;
	char err[DETAIL - 32];

	memset(&a, 0, sizeof(a));
	if (swap('b', what, &a, &b, err, sizeof(err))) {
		v_set(v, ST_FAIL, "barrier: %s", err);
		v->fatal = 1;
		return -EPIPE;
	}
	return 0;
}

/* One put of n bytes from our source window at soff into the peer's target
 * window at doff, and the peer's the same way into ours; then checks ours.
 * Returns the combined status. */
static int put_check(size_t soff, size_t n, size_t doff, int *nothing_moved)
{
	struct verdict v = {0};
	struct expect x = {0};
	char what[160], hs[32], err[DETAIL];
	ncclResult_t rc;
	double t0, t1;

	snprintf(what, sizeof(what), "put %s (%zu B), src +%zu -> dst +%zu",
		 human(n, hs, sizeof(hs)), n, soff, doff);
	x.dlo = doff;
	x.dhi = doff + n;
	x.lo = doff > GUARD ? doff - GUARD : 0;
	x.hi = x.dhi + GUARD < rr.size ? x.dhi + GUARD : rr.size;
	x.src_rank = 1 - me;
	x.src_off = soff;

	step("rma: sentinel before %s", what);
	if (sentinel(rr.ptr, x.lo, x.hi, err, sizeof(err))) {
		v_set(&v, ST_FAIL, "%s", err);
		v.fatal = 1;
		goto out;
	}
	if (barrier(what, &v))
		goto out;
	step("rma: ncclPutSignal, %s", what);
	cupti_count(1);
	t0 = now_s();
	rc = put(soff, n, doff);
	if (exchange(rc, rc == ncclSuccess, 1, "ncclPutSignal", &v,
		     nothing_moved))
		goto out;
	t1 = now_s();
	cupti_count(0);
	*nothing_moved = 0;
	step("rma: check, %s", what);
	if (check_region(rr.ptr, &x, hbuf, err, sizeof(err))) {
		v_set(&v, ST_FAIL, "%s", err);
		goto out;
	}
	/* t1 - t0 holds one word to the peer and back besides the put */
	v_set(&v, ST_PASS, "%.3f ms from put to the wait's end, %.2f GB/s",
	      (t1 - t0) * 1e3, n / (t1 - t0) / 1e9);
out:
	cupti_count(0);
	return settle("rma", what, &v);
}

static int signal_check(int *nothing_moved)
{
	const char *what = "ncclSignal + ncclWaitSignal";
	struct verdict v = {0};
	ncclResult_t rc;

	if (barrier(what, &v))
		return settle("rma", what, &v);
	step("rma: ncclSignal");
	rc = ncclSignal(1 - me, 0, 0, 0, comm, stream);
	if (!exchange(rc, rc == ncclSuccess, 1, "ncclSignal", &v,
		      nothing_moved)) {
		*nothing_moved = 0;
		v_set(&v, ST_PASS, "");
	}
	return settle("rma", what, &v);
}

/* Four puts into distinct places, then one wait for all four signals. */
static int multi_check(int *nothing_moved)
{
	static const size_t len[4] = {1, 4097, 65536, MIB + 3};
	const char *what = "4 puts, one ncclWaitSignal(opCnt 4)";
	struct verdict v = {0};
	char err[DETAIL];
	size_t doff[4], soff[4], at = 0, i;
	ncclResult_t rc = ncclSuccess;
	int sent = 0;

	for (i = 0; i < 4; i++) {
		doff[i] = at + 16;
		soff[i] = (i * 7919) % 8192 + 3 * MIB;
		at = doff[i] + len[i] + GUARD;
	}
	if (at + GUARD > rr.size || 3 * MIB + 8192 + len[3] > rs.size) {
		v_set(&v, ST_SKIP, "windows too small (--max-bytes)");
		return settle("rma", what, &v);
	}
	step("rma: sentinel before %s", what);
	if (sentinel(rr.ptr, 0, at + GUARD, err, sizeof(err))) {
		v_set(&v, ST_FAIL, "%s", err);
		v.fatal = 1;
		return settle("rma", what, &v);
	}
	if (barrier(what, &v))
		return settle("rma", what, &v);
	step("rma: %s", what);
	for (i = 0; i < 4 && rc == ncclSuccess; i++) {
		rc = put(soff[i], len[i], doff[i]);
		sent += rc == ncclSuccess;
	}
	if (exchange(rc, sent, 4, "ncclPutSignal (4 of them)", &v,
		     nothing_moved))
		return settle("rma", what, &v);
	*nothing_moved = 0;
	v_set(&v, ST_PASS, "");
	for (i = 0; i < 4; i++) {
		struct expect x = {.lo = doff[i] - 16, .hi = doff[i] + len[i] +
				   GUARD, .dlo = doff[i], .dhi = doff[i] +
				   len[i], .src_rank = 1 - me,
				   .src_off = soff[i]};

		if (check_region(rr.ptr, &x, hbuf, err, sizeof(err))) {
			v_set(&v, ST_FAIL, "put %zu: %s", i, err);
			break;
		}
	}
	return settle("rma", what, &v);
}

/* How many round trips both ranks run: all of them unless rank 0's first
 * ones say that would outlast --pp-budget.  0 when the ranks cannot agree. */
static long pp_agree(double *rt, size_t warm, long n, struct verdict *v)
{
	struct msg a, b;
	char err[DETAIL - 32];
	double med;
	long want = n;

	qsort(rt, warm, sizeof(*rt), cmp_double);
	med = quantile(rt, warm, 0.5);
	if (med * (double)n > opt.pp_budget_s)
		want = (long)(opt.pp_budget_s / med);
	if (want < (long)warm)
		want = (long)warm;
	memset(&a, 0, sizeof(a));
	a.val = want;
	if (swap('x', "the round-trip count", &a, &b, err, sizeof(err))) {
		v_set(v, ST_FAIL, "agreeing on the count: %s", err);
		v->fatal = 1;
		return 0;
	}
	want = me == 0 ? want : b.val;
	if (want < n && me == 0)
		logr("ping-pong: %ld round trips instead of %ld (median %.1f "
		     "us, budget %.0f s)", want, n, med * 1e6,
		     opt.pp_budget_s);
	return want;
}

/* Every slot of the ping-pong, checked: pp_bytes of the peer's pattern at
 * the start of each stride, SENT in the rest and after. */
static int pp_check(size_t stride, long n, char *err, size_t en)
{
	struct expect x = {.src_rank = 1 - me};
	long s;

	if (stride == opt.pp_bytes) {
		x.hi = stride * (size_t)n + GUARD;
		x.dhi = stride * (size_t)n;
		return check_region(rr.ptr, &x, hbuf, err, en);
	}
	for (s = 0; s <= n; s++) {
		x.lo = x.dlo = x.src_off = (size_t)s * stride;
		x.dhi = s < n ? x.dlo + opt.pp_bytes : x.dlo;
		x.hi = x.lo + (s < n ? stride : GUARD);
		if (check_region(rr.ptr, &x, hbuf, err, en))
			return -EBADMSG;
	}
	return 0;
}

/* Rank 0 puts slot i and waits for the echo; rank 1 waits, then puts its
 * slot i back.  Rank 0 times every round trip from the host (rank 1 times
 * its wait + echo); both check every slot at the end. */
static int pingpong(void)
{
	const char *what = "ping-pong";
	size_t stride = (opt.pp_bytes + 7) / 8 * 8, warm = 100, skip, m;
	long n = opt.iters, i;
	struct verdict v = {0};
	double *rt = NULL;
	char err[DETAIL - 32], hs[32];
	ncclResult_t rc;

	if (stride * (size_t)n + GUARD > rr.size ||
	    stride * (size_t)n > rs.size) {
		n = (long)((rr.size - GUARD) / stride);
		logr("ping-pong: %ld round trips fit the windows", n);
	}
	rt = calloc((size_t)n, sizeof(*rt));
	if (!rt) {
		v_set(&v, ST_FAIL, "out of memory");
		goto out;
	}
	step("rma: sentinel before ping-pong");
	if (sentinel(rr.ptr, 0, stride * (size_t)n + GUARD, err, sizeof(err))) {
		v_set(&v, ST_FAIL, "%s", err);
		v.fatal = 1;
		goto out;
	}
	if (barrier(what, &v))
		goto out;
	for (i = 0; i < n; i++) {
		size_t at = (size_t)i * stride;
		double t0 = now_s();

		step("rma: ping-pong round trip %ld of %ld", i + 1, n);
		if (me == 0) {
			rc = put(at, opt.pp_bytes, at);
			if (rc == ncclSuccess)
				rc = wait_signals(1);
		} else {
			rc = wait_signals(1);
			if (rc == ncclSuccess)
				rc = put(at, opt.pp_bytes, at);
		}
		if (rc != ncclSuccess) {
			nccl_detail(v.detail, DETAIL, "round trip: "
				    "ncclPutSignal or ncclWaitSignal", rc,
				    comm);
			v.status = ST_FAIL;
			/* the peer's stream waits for our signal */
			v.fatal = 1;
			goto out;
		}
		if (stream_wait("a ping-pong round trip", err, sizeof(err))) {
			v_set(&v, ST_FAIL, "round trip %ld: %s", i + 1, err);
			v.fatal = 1;
			goto out;
		}
		rt[i] = now_s() - t0;
		if (i + 1 == (long)warm && n > (long)warm) {
			n = pp_agree(rt, warm, n, &v);
			if (!n)
				goto out;
		}
	}
	step("rma: ping-pong check");
	if (pp_check(stride, n, err, sizeof(err))) {
		v_set(&v, ST_FAIL, "after %ld round trips: %s", n, err);
		goto out;
	}
	skip = n > (long)warm ? warm : 0;
	m = (size_t)n - skip;
	qsort(rt + skip, m, sizeof(*rt), cmp_double);
	v_set(&v, ST_PASS, "%ld %s of %s: median %.1f us, p10 %.1f, p90 %.1f, "
	      "max %.1f (first %zu left out)", n,
	      me == 0 ? "round trips" : "waits + echoes",
	      human(opt.pp_bytes, hs, sizeof(hs)),
	      quantile(rt + skip, m, 0.5) * 1e6,
	      quantile(rt + skip, m, 0.1) * 1e6,
	      quantile(rt + skip, m, 0.9) * 1e6, rt[skip + m - 1] * 1e6, skip);
out:
	free(rt);
	return settle("rma", what, &v);
}

static int part_rma(void)
{
	/* {size, source offset, target offset}: powers of 4 at offset 0,
	 * odd sizes at odd offsets. */
	static const size_t cases[][3] = {
		{1, 0, 0},
		{3, 5, 1},
		{4, 0, 0},
		{16, 0, 0},
		{61, 17, 333},
		{64, 0, 0},
		{256, 0, 0},
		{1000, 4095, 7},
		{1024, 0, 0},
		{4096, 0, 0},
		{4099, 1, 4097},
		{16384, 0, 0},
		{65536, 0, 0},
		{65537, 12345, 54321},
		{262144, 0, 0},
		{MIB, 0, 0},
		{MIB + 7, 3, 4096 * 3 + 1},
		{4 * MIB, 0, 0},
		{16 * MIB - 1, 1, 0},
		{16 * MIB, 0, 0},
		{64 * MIB, 0, 0},
		{100 * MIB + 11, 999, 1},
		{256 * MIB, 0, 0},
	};
	struct verdict v = {0};
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	char err[DETAIL], sum[256];
	size_t wsize = opt.max_bytes + ALIGN, i;
	int nothing_moved = 1, st;

	if (opt.max_bytes < 4 * MIB)
		wsize = 4 * MIB + ALIGN;
	comm_up(&cfg, &v);
	if (settle("rma", "communicator", &v) != ST_PASS || fatal_seen)
		goto down;

	memset(&v, 0, sizeof(v));
	hbuf = malloc(wsize + ALIGN);
	if (!hbuf) {
		v_set(&v, ST_FAIL, "out of host memory");
	} else if (!win_up(&rs, wsize, "put sources", &v) &&
		   !win_up(&rr, wsize, "put targets", &v)) {
		step("rma: filling the source window");
		if (fill_pattern(rs.ptr, 0, rs.size, hbuf, err, sizeof(err)))
			v_set(&v, ST_FAIL, "%s", err);
		else
			v_set(&v, ST_PASS, "2 windows of %zu bytes, handles "
			      "%p %p", rs.size, (void *)rs.w, (void *)rr.w);
	}
	if (settle("rma", "windows (ncclMemAlloc + ncclCommWindowRegister)",
		   &v) != ST_PASS || fatal_seen)
		goto down;

	cupti_reset();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = cases[i][0], so = cases[i][1], d = cases[i][2];

		if (n > opt.max_bytes || so + n > rs.size ||
		    d + n + GUARD > rr.size)
			continue;
		st = put_check(so, n, d, &nothing_moved);
		if (fatal_seen || (st == ST_SKIP && nothing_moved))
			break;
	}
	if (me == 0 && !fatal_seen)
		printf("INFO rma: from ncclPutSignal to the end of "
		       "ncclWaitSignal, in all the puts above, rank 0 made %s\n",
		       api_summary(sum, sizeof(sum)));
	if (fatal_seen || nothing_moved)
		goto down;
	signal_check(&nothing_moved);
	if (fatal_seen)
		goto down;
	multi_check(&nothing_moved);
	if (fatal_seen)
		goto down;
	pingpong();
down:
	if (fatal_seen) {
		/* A stream may wait for ever: leave without tearing down, so
		 * that the parent need not kill us; the driver cleans up. */
		logr("rma: stopping here; not tearing down");
		return -1;
	}
	win_down(&rr);
	win_down(&rs);
	comm_down();
	free(hbuf);
	return 0;
}

/* ------------------------------------------------------------ part coll */

enum { AG, A2A };

static int coll_check(int which, struct win *s, struct win *r, size_t c,
		      int registered)
{
	const char *name = which == AG ? "AllGather" : "AlltoAll";
	struct verdict v = {0};
	struct expect x = {0};
	char what[160], hs[32], err[DETAIL], sum[256];
	double *t = NULL, med;
	ncclResult_t rc;
	int it, k;

	snprintf(what, sizeof(what), "%s %s (%zu B) per rank%s", name,
		 human(c, hs, sizeof(hs)), c,
		 registered ? "" : ", unregistered buffers");
	x.lo = 0;
	x.hi = 2 * c + GUARD;
	x.dlo = 0;
	x.dhi = 2 * c;
	x.split = c;
	for (k = 0; k < 2; k++) {
		x.piece_rank[k] = k;
		/* AllGather: rank k's first c bytes; AlltoAll: rank k's
		 * piece for us */
		x.piece_src[k] = which == AG ? 0 : (size_t)me * c;
	}
	t = calloc((size_t)opt.coll_iters, sizeof(*t));
	if (!t) {
		v_set(&v, ST_FAIL, "out of memory");
		goto out;
	}
	step("coll: sentinel before %s", what);
	if (sentinel(r->ptr, x.lo, x.hi, err, sizeof(err))) {
		v_set(&v, ST_FAIL, "%s", err);
		v.fatal = 1;
		goto out;
	}
	for (it = -1; it < opt.coll_iters; it++) {
		double t0;

		if (it <= 0 && barrier(what, &v))
			goto out;
		if (it == -1) {
			cupti_reset();
			cupti_count(1);
		}
		step("coll: %s, iteration %d", what, it + 1);
		t0 = now_s();
		rc = which == AG ? ncclAllGather(s->ptr, r->ptr, c, ncclInt8,
						 comm, stream)
				 : ncclAlltoAll(s->ptr, r->ptr, c, ncclInt8,
						comm, stream);
		if (rc != ncclSuccess) {
			cupti_count(0);
			nccl_detail(v.detail, DETAIL, name, rc, comm);
			v.status = ST_FAIL;
			/* the peer's half may wait for ours */
			v.fatal = 1;
			goto out;
		}
		if (stream_wait(name, err, sizeof(err))) {
			cupti_count(0);
			v_set(&v, ST_FAIL, "%s", err);
			v.fatal = 1;
			goto out;
		}
		if (it >= 0)
			t[it] = now_s() - t0;
		if (it == -1) {
			cupti_count(0);
			api_summary(sum, sizeof(sum));
			step("coll: check, %s", what);
			if (check_region(r->ptr, &x, hbuf, err, sizeof(err))) {
				v_set(&v, ST_FAIL, "first call: %s", err);
				goto out;
			}
		}
	}
	step("coll: check after timing, %s", what);
	if (check_region(r->ptr, &x, hbuf, err, sizeof(err))) {
		v_set(&v, ST_FAIL, "after %d calls: %s", opt.coll_iters + 1,
		      err);
		goto out;
	}
	qsort(t, (size_t)opt.coll_iters, sizeof(*t), cmp_double);
	med = quantile(t, (size_t)opt.coll_iters, 0.5);
	v_set(&v, ST_PASS, "median %.1f us of %d (algbw %.3f GB/s); first "
	      "call: %s%s", med * 1e6, opt.coll_iters, 2.0 * c / med / 1e9,
	      sum, cupti_ok && kernels_seen() ? " (kernels: not zero-SM)" : "");
out:
	free(t);
	return settle("coll", what, &v);
}

static int part_coll(void)
{
	static const size_t sizes[] = {1, 4096, 12345, MIB, 16 * MIB,
				       64 * MIB};
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	struct verdict v = {0};
	struct win s = {0}, r = {0};
	size_t i, max = opt.coll_max;
	int registered, which;

	cfg.CTAPolicy = opt.cta_policy;
	comm_up(&cfg, &v);
	if (v.status == ST_PASS) {
		size_t l = strlen(v.detail);

		snprintf(v.detail + l, DETAIL - l, ", CTAPolicy %d%s",
			 opt.cta_policy,
			 opt.cta_policy == NCCL_CTA_POLICY_ZERO ? " (ZERO)" :
			 "");
	}
	if (settle("coll", "communicator", &v) != ST_PASS || fatal_seen)
		goto down;

	memset(&v, 0, sizeof(v));
	hbuf = malloc(2 * max + GUARD + ALIGN);
	if (!hbuf) {
		v_set(&v, ST_FAIL, "out of host memory");
	} else if (!win_up(&s, 2 * max, "send", &v) &&
		   !win_up(&r, 2 * max + GUARD, "recv", &v)) {
		v_set(&v, ST_PASS, "send %zu bytes, recv %zu bytes, handles "
		      "%p %p", s.size, r.size, (void *)s.w, (void *)r.w);
	}
	registered = v.status == ST_PASS;
	if (settle("coll", "windows (ncclMemAlloc + ncclCommWindowRegister)",
		   &v) == ST_FAIL || fatal_seen)
		goto down;
	if (!registered) {
		/* NCCL refused a window: show what it does with the same
		 * memory as plain buffers (a window it took stays). */
		struct verdict a = {0};
		ncclResult_t rc = ncclSuccess;

		if (!s.ptr) {
			s.size = 2 * max;
			rc = ncclMemAlloc((void **)&s.ptr, s.size);
		}
		if (rc == ncclSuccess && !r.ptr) {
			r.size = (2 * max + GUARD + ALIGN - 1) / ALIGN * ALIGN;
			rc = ncclMemAlloc((void **)&r.ptr, r.size);
		}
		if (rc != ncclSuccess) {
			nccl_detail(a.detail, DETAIL, "ncclMemAlloc", rc, comm);
			a.status = ST_FAIL;
		} else {
			v_set(&a, ST_PASS, "send %s, recv %s",
			      s.w ? "registered" : "plain",
			      r.w ? "registered" : "plain");
		}
		if (settle("coll", "buffers without both windows", &a) !=
		    ST_PASS)
			goto down;
	}
	memset(&v, 0, sizeof(v));
	step("coll: filling the send buffer");
	if (fill_pattern(s.ptr, 0, 2 * max, hbuf, v.detail, DETAIL))
		v.status = ST_FAIL;
	else
		v_set(&v, ST_PASS, "%zu bytes", 2 * max);
	if (settle("coll", "send pattern", &v) != ST_PASS || fatal_seen)
		goto down;
	for (which = AG; which <= A2A && !fatal_seen; which++) {
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			if (sizes[i] > max)
				continue;
			coll_check(which, &s, &r, sizes[i], registered);
			if (fatal_seen)
				break;
		}
	}
down:
	if (fatal_seen) {
		logr("coll: stopping here; not tearing down");
		return -1;
	}
	win_down(&r);
	win_down(&s);
	comm_down();
	free(hbuf);
	return 0;
}

/* ------------------------------------------------------- ranks and parent */

static int rank_main(int part, int rank, int fd)
{
	me = rank;
	oob = fd;
	setvbuf(stdout, NULL, _IOLBF, 0);
	setenv("NCCL_HOSTID", opt.nccl_hostid[rank], 1);
	if (opt.zsm_hostid[0])
		setenv("ZSM_HOSTID", opt.zsm_hostid[rank], 1);
	cupti_init();
	if (part == 0)
		part_rma();
	else
		part_coll();
	step("exiting");
	fflush(stdout);
	fflush(stderr);
	if (fatal_seen)
		return 3;
	return worst == ST_PASS ? 0 : worst == ST_SKIP ? 77 : 1;
}

static const char *exit_word(int status, char *buf, size_t n)
{
	if (WIFEXITED(status))
		snprintf(buf, n, "exit %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, n, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(buf, n, "status 0x%x", status);
	return buf;
}

/* Runs one part in a fresh pair of ranks; returns its status. */
static int run_part(int part)
{
	const char *name = part == 0 ? "rma" : "coll";
	pid_t pid[2];
	int sv[2], status[2] = {0}, done[2] = {0}, killed[2] = {0}, r, st;
	double start = now_s(), end = start + opt.timeout_s, grace = 0;
	char w[2][64];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
		printf("PART %s: FAIL (socketpair: %s)\n", name,
		       strerror(errno));
		return ST_FAIL;
	}
	memset(steps, 0, 2 * STEP_LEN);
	fflush(stdout);
	fflush(stderr);
	for (r = 0; r < 2; r++) {
		pid[r] = fork();
		if (pid[r] < 0) {
			printf("PART %s: FAIL (fork: %s)\n", name,
			       strerror(errno));
			if (r == 1) {
				kill(pid[0], SIGKILL);
				waitpid(pid[0], NULL, 0);
			}
			close(sv[0]);
			close(sv[1]);
			return ST_FAIL;
		}
		if (pid[r] == 0) {
			close(sv[1 - r]);
			_exit(rank_main(part, r, sv[r]));
		}
	}
	close(sv[0]);
	close(sv[1]);
	while (!done[0] || !done[1]) {
		struct timespec nap = {0, 20 * 1000 * 1000};
		double t = now_s();

		for (r = 0; r < 2; r++) {
			if (done[r] || waitpid(pid[r], &status[r], WNOHANG) !=
					       pid[r])
				continue;
			done[r] = 1;
			/* A rank that ended badly leaves its peer waiting
			 * for it at worst until its own deadlines; give it
			 * that long. */
			if (!(WIFEXITED(status[r]) &&
			      (WEXITSTATUS(status[r]) == 0 ||
			       WEXITSTATUS(status[r]) == 77)) && !grace)
				grace = t + opt.wait_s + 45;
		}
		if (t > end || (grace && t > grace)) {
			for (r = 0; r < 2; r++) {
				if (done[r])
					continue;
				kill(pid[r], SIGKILL);
				waitpid(pid[r], &status[r], 0);
				done[r] = killed[r] = 1;
			}
			break;
		}
		nanosleep(&nap, NULL);
	}
	st = ST_PASS;
	for (r = 0; r < 2; r++) {
		int ok = WIFEXITED(status[r]) && !killed[r];
		int code = ok ? WEXITSTATUS(status[r]) : -1;

		if (killed[r]) {
			printf("INFO %s: rank %d killed after %.0f s (%s); it "
			       "was at: %s\n", name, r, now_s() - start,
			       grace && grace < end ? "its peer had ended "
			       "badly" : "the part's deadline, --timeout",
			       steps[r * STEP_LEN] ? steps + r * STEP_LEN :
			       "(nothing yet)");
		} else if (!ok) {
			printf("INFO %s: rank %d %s; it was at: %s\n", name, r,
			       exit_word(status[r], w[r], sizeof(w[r])),
			       steps + r * STEP_LEN);
		}
		if (code == 0)
			continue;
		if (code == 77) {
			if (st < ST_SKIP)
				st = ST_SKIP;
		} else {
			st = ST_FAIL;
		}
	}
	printf("PART %s: %s (rank 0 %s, rank 1 %s, %.1f s)\n", name,
	       st_name[st],
	       killed[0] ? "killed" : exit_word(status[0], w[0], sizeof(w[0])),
	       killed[1] ? "killed" : exit_word(status[1], w[1], sizeof(w[1])),
	       now_s() - start);
	fflush(stdout);
	return st;
}

int main(int argc, char **argv)
{
	int st = ST_PASS, r;

	if (parse_args(argc, argv))
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Steps of both ranks, read by this process after they end. */
	steps = mmap(NULL, 2 * STEP_LEN, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (steps == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	printf("INFO nccl_rma: built against NCCL %d.%d.%d; NCCL_HOSTID %s / "
	       "%s; ZSM_HOSTID %s%s%s; device %d\n", NCCL_MAJOR, NCCL_MINOR,
	       NCCL_PATCH, opt.nccl_hostid[0], opt.nccl_hostid[1],
	       opt.zsm_hostid[0] ? opt.zsm_hostid[0] : "as inherited",
	       opt.zsm_hostid[0] ? " / " : "",
	       opt.zsm_hostid[0] ? opt.zsm_hostid[1] : "", opt.device);
	if (opt.part_rma) {
		r = run_part(0);
		st = r > st ? r : st;
	}
	if (opt.part_coll) {
		r = run_part(1);
		st = r > st ? r : st;
	}
	printf("RESULT: %s\n", st_name[st]);
	return st == ST_PASS ? 0 : st == ST_SKIP ? 77 : 1;
}
