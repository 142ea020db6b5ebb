/* SPDX-License-Identifier: MIT */
/*
 * The version-neutral client: owns the dlopen handle, the chosen
 * ncclNetPlugin_vN table and the per-version argument conversions.
 */
#include "zsm_client.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ZSM_CLIENT_MAX_N 64

/*
 * A request the plugin handed out and nobody has seen finish yet (tracking
 * on).  sizes[] starts as ZSM_CLIENT_SIZE_UNSET in every entry, and every
 * test of the request writes into it, so that a caller's later test can be
 * given exactly the entries the plugin wrote, however many calls it took.
 */
struct zsm_client_req {
	void *req;
	void *comm;
	int flush;    /* tested with NULL sizes, as NCCL tests flushes */
	int finished; /* done, or test returned an error */
	int done;
	int result;
	int sizes[ZSM_CLIENT_MAX_N];
};

/* Comms one progress pass tells apart; past that, every request counts. */
#define ZSM_CLIENT_PROGRESS_COMMS 256

/* Never a size: sizes are >= 0. */
#define ZSM_CLIENT_SIZE_UNSET (-0x3A5A5A5A)

struct zsm_client {
	void *dl;
	int abi;
	union {
		const void *any;
		const ncclNet_v8_t *v8;
		const ncclNet_v9_t *v9;
		const ncclNet_v10_t *v10;
		const ncclNet_v11_t *v11;
		const ncclNet_v12_t *v12;
	} t;
	void *ctx;
	/* init and connect may keep the pointer, so it lives as long as we. */
	ncclNetCommConfig_t config;
	/* zsm_client_track: the outstanding requests, in posting order. */
	int track;
	int yield; /* zsm_client_yield */
	struct zsm_client_req *reqs;
	size_t nreqs, cap;
};

/*
 * A slot whose type is the same in every version, read through the table
 * of the version we hold (no cross-version aliasing).
 */
#define ZSM_SLOT(c, f)                                                         \
	((c)->abi == 8    ? (c)->t.v8->f                                       \
	 : (c)->abi == 9  ? (c)->t.v9->f                                       \
	 : (c)->abi == 10 ? (c)->t.v10->f                                      \
	 : (c)->abi == 11 ? (c)->t.v11->f                                      \
	                  : (c)->t.v12->f)

uint64_t zsm_client_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int zsm_client_log_threshold(void)
{
	static int level = -1;
	const char *env;

	if (level >= 0)
		return level;
	env = getenv("ZSM_CLIENT_LOG");
	level = NCCL_LOG_WARN;
	if (env && !strcmp(env, "info"))
		level = NCCL_LOG_INFO;
	else if (env && !strcmp(env, "trace"))
		level = NCCL_LOG_TRACE;
	return level;
}

/* The plugin's WARN lines so far, for checks that count them. */
static atomic_uint zsm_client_warn_lines;

unsigned zsm_client_warns(void)
{
	/* relaxed: a count; the caller orders it by its own calls. */
	return atomic_load_explicit(&zsm_client_warn_lines,
				    memory_order_relaxed);
}

void zsm_client_logger(int level, unsigned long flags, const char *file,
		       int line, const char *fmt, ...)
{
	static const char *names[] = { "NONE", "VERSION", "WARN",
				       "INFO", "ABORT",	  "TRACE" };
	char msg[1024];
	va_list ap;

	(void)flags;
	if (level == NCCL_LOG_NONE)
		return;
	if (level == NCCL_LOG_WARN)
		/* relaxed: as in zsm_client_warns. */
		atomic_fetch_add_explicit(&zsm_client_warn_lines, 1,
					  memory_order_relaxed);
	if (level != NCCL_LOG_ABORT && level > zsm_client_log_threshold())
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "[plugin %s] %s:%d %s\n",
		level >= 0 && level <= NCCL_LOG_TRACE ? names[level] : "?",
		file ? file : "?", line, msg);
}

const char *zsm_client_result_str(int result)
{
	switch (result) {
	case ncclSuccess: return "ncclSuccess";
	case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
	case ncclSystemError: return "ncclSystemError";
	case ncclInternalError: return "ncclInternalError";
	case ncclInvalidArgument: return "ncclInvalidArgument";
	case ncclInvalidUsage: return "ncclInvalidUsage";
	case ncclRemoteError: return "ncclRemoteError";
	case ncclInProgress: return "ncclInProgress";
	case ZSM_CLIENT_TIMEOUT: return "timeout";
	default: return "unknown ncclResult_t";
	}
}

int zsm_client_open(const char *path, int abi, struct zsm_client **out)
{
	struct zsm_client *c;
	char sym[32];
	int v;

	*out = NULL;
	if (abi != 0 &&
	    (abi < ZSM_CLIENT_ABI_MIN || abi > ZSM_CLIENT_ABI_MAX)) {
		fprintf(stderr, "zsm_client: abi %d not in 8..12\n", abi);
		return ncclInvalidArgument;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return ncclSystemError;
	c->config.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF;
	c->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!c->dl) {
		fprintf(stderr, "zsm_client: dlopen %s: %s\n", path, dlerror());
		free(c);
		return ncclSystemError;
	}
	/*
	 * If the plugin brought libfabric in, keep libfabric resident after
	 * the plugin is closed: its providers allocate in their constructors
	 * on every load and never free, which would hide a plugin leak among
	 * theirs under valgrind and LeakSanitizer.  The plugin itself is
	 * still unloaded.  (zsm opens libfabric at init, not here, and never
	 * closes it; this is for plugins that link it.)
	 */
	(void)dlopen("libfabric.so.1", RTLD_NOW | RTLD_NOLOAD);
	for (v = abi ? abi : ZSM_CLIENT_ABI_MAX;
	     v >= (abi ? abi : ZSM_CLIENT_ABI_MIN); v--) {
		snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", v);
		c->t.any = dlsym(c->dl, sym);
		if (c->t.any) {
			c->abi = v;
			break;
		}
	}
	if (!c->t.any) {
		if (abi)
			fprintf(stderr,
				"zsm_client: %s has no ncclNetPlugin_v%d\n",
				path, abi);
		else
			fprintf(stderr,
				"zsm_client: %s has no ncclNetPlugin_v8..v12\n",
				path);
		dlclose(c->dl);
		free(c);
		return ncclInvalidArgument;
	}
	*out = c;
	return ncclSuccess;
}

void zsm_client_close(struct zsm_client *c)
{
	if (!c)
		return;
	free(c->reqs);
	/* Kept loaded on request, so valgrind can name leaked frames. */
	if (!getenv("ZSM_CLIENT_KEEP_LOADED"))
		dlclose(c->dl);
	free(c);
}

int zsm_client_abi(const struct zsm_client *c)
{
	return c->abi;
}

const char *zsm_client_name(const struct zsm_client *c)
{
	const char *name = ZSM_SLOT(c, name);

	return name ? name : "(null)";
}

void *zsm_client_ctx(const struct zsm_client *c)
{
	return c->ctx;
}

int zsm_client_init(struct zsm_client *c, uint64_t comm_id)
{
	ncclDebugLogger_t logger = zsm_client_logger;

	switch (c->abi) {
	case 8: return c->t.v8->init(logger);
	case 9: return c->t.v9->init(logger);
	case 10: return c->t.v10->init(logger, NULL);
	case 11:
		return c->t.v11->init(&c->ctx, comm_id, &c->config, logger,
				      NULL);
	default:
		return c->t.v12->init(&c->ctx, comm_id, &c->config, logger,
				      NULL);
	}
}

int zsm_client_finalize(struct zsm_client *c)
{
	int ret = ncclSuccess;

	/* Requests die with the comms finalize takes down. */
	c->nreqs = 0;
	if (c->abi == 11 && c->t.v11->finalize)
		ret = c->t.v11->finalize(c->ctx);
	else if (c->abi == 12 && c->t.v12->finalize)
		ret = c->t.v12->finalize(c->ctx);
	c->ctx = NULL;
	return ret;
}

int zsm_client_devices(struct zsm_client *c, int *ndev)
{
	return ZSM_SLOT(c, devices)(ndev);
}

int zsm_client_make_vdevice(struct zsm_client *c, int n, const int *devs,
			    int *d, int *has)
{
	ncclNetVDeviceProps_v12_t p12 = {0};
	ncclNetVDeviceProps_v9_t p9 = {0};

	*has = c->abi >= 9 && (c->abi == 12 ? c->t.v12->makeVDevice != NULL
				: c->abi == 11 ? c->t.v11->makeVDevice != NULL
				: c->abi == 10 ? c->t.v10->makeVDevice != NULL
					       : c->t.v9->makeVDevice != NULL);
	if (!*has || n < 0 ||
	    n > (c->abi == 12 ? NCCL_NET_MAX_DEVS_PER_NIC_V12
			      : NCCL_NET_MAX_DEVS_PER_NIC_V11))
		return ncclInvalidUsage;
	if (c->abi == 12) {
		p12.ndevs = n;
		memcpy(p12.devs, devs, (size_t)n * sizeof(*devs));
		return c->t.v12->makeVDevice(d, &p12);
	}
	p9.ndevs = n;
	memcpy(p9.devs, devs, (size_t)n * sizeof(*devs));
	return c->abi == 11   ? c->t.v11->makeVDevice(d, &p9)
	       : c->abi == 10 ? c->t.v10->makeVDevice(d, &p9)
			      : c->t.v9->makeVDevice(d, &p9);
}

/* One field of a properties struct, for the "was it written" scan. */
struct zsm_client_field {
	const char *name;
	size_t off;
	size_t size;
};

#define ZSM_F(T, f)                                                            \
	{                                                                      \
#f, offsetof(T, f), sizeof(((T *)0)->f)                        \
	}
#define ZSM_FIELDS_COMMON(T)                                                   \
	ZSM_F(T, name), ZSM_F(T, pciPath), ZSM_F(T, guid),                     \
		ZSM_F(T, ptrSupport), ZSM_F(T, regIsGlobal), ZSM_F(T, speed),  \
		ZSM_F(T, port), ZSM_F(T, latency), ZSM_F(T, maxComms),         \
		ZSM_F(T, maxRecvs), ZSM_F(T, netDeviceType),                   \
		ZSM_F(T, netDeviceVersion)
#define ZSM_FIELDS_V9(T)                                                       \
	ZSM_FIELDS_COMMON(T), ZSM_F(T, forceFlush), ZSM_F(T, maxP2pBytes),     \
		ZSM_F(T, maxCollBytes)

static const struct zsm_client_field zsm_fields_v8[] = {
	ZSM_FIELDS_COMMON(ncclNetProperties_v8_t),
};
static const struct zsm_client_field zsm_fields_v9[] = {
	ZSM_FIELDS_V9(ncclNetProperties_v9_t),
};
static const struct zsm_client_field zsm_fields_v11[] = {
	ZSM_FIELDS_V9(ncclNetProperties_v11_t),
	ZSM_F(ncclNetProperties_v11_t, maxMultiRequestSize),
};
static const struct zsm_client_field zsm_fields_v12[] = {
	ZSM_FIELDS_V9(ncclNetProperties_v12_t),
	ZSM_F(ncclNetProperties_v12_t, maxMultiRequestSize),
	ZSM_F(ncclNetProperties_v12_t, railId),
	ZSM_F(ncclNetProperties_v12_t, planeId),
};
#undef ZSM_F

static int zsm_client_poisoned(const unsigned char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != ZSM_CLIENT_POISON)
			return 0;
	return 1;
}

static void zsm_client_note(char *buf, size_t len, const char *what)
{
	size_t used = strlen(buf);

	snprintf(buf + used, len - used, "%s%s", used ? "," : "", what);
}

static void zsm_client_scan(struct zsm_client_props *p,
			    const struct zsm_client_field *fields,
			    size_t nfields, size_t vprops_off, int max_devs)
{
	char what[48];
	int ndevs, i;
	size_t k;

	p->unwritten[0] = '\0';
	for (k = 0; k < nfields; k++)
		if (zsm_client_poisoned(p->raw + fields[k].off, fields[k].size))
			zsm_client_note(p->unwritten, sizeof(p->unwritten),
					fields[k].name);
	if (!vprops_off)
		return;
	if (zsm_client_poisoned(p->raw + vprops_off, sizeof(int))) {
		zsm_client_note(p->unwritten, sizeof(p->unwritten),
				"vProps.ndevs");
		return;
	}
	memcpy(&ndevs, p->raw + vprops_off, sizeof(int));
	if (ndevs < 0 || ndevs > max_devs)
		return; /* the value check reports it */
	for (i = 0; i < ndevs; i++) {
		if (!zsm_client_poisoned(p->raw + vprops_off + 4 +
						 4 * (size_t)i,
					 sizeof(int)))
			continue;
		snprintf(what, sizeof(what), "vProps.devs[%d]", i);
		zsm_client_note(p->unwritten, sizeof(p->unwritten), what);
	}
}

/* Copy the fields v8 to v12 share, from any version's struct. */
#define ZSM_COPY_COMMON(dst, src)                                              \
	do {                                                                   \
		(dst)->name = (src)->name;                                     \
		(dst)->pci_path = (src)->pciPath;                              \
		(dst)->guid = (src)->guid;                                     \
		(dst)->ptr_support = (src)->ptrSupport;                        \
		(dst)->reg_is_global = (src)->regIsGlobal;                     \
		(dst)->speed = (src)->speed;                                   \
		(dst)->port = (src)->port;                                     \
		(dst)->latency = (src)->latency;                               \
		(dst)->max_comms = (src)->maxComms;                            \
		(dst)->max_recvs = (src)->maxRecvs;                            \
		(dst)->net_device_type = (src)->netDeviceType;                 \
		(dst)->net_device_version = (src)->netDeviceVersion;           \
	} while (0)

#define ZSM_COPY_V9(dst, src, maxdevs)                                         \
	do {                                                                   \
		int i_;                                                        \
		ZSM_COPY_COMMON(dst, src);                                     \
		(dst)->force_flush = (src)->forceFlush;                        \
		(dst)->vprops_ndevs = (src)->vProps.ndevs;                     \
		for (i_ = 0; i_ < (maxdevs); i_++)                             \
			(dst)->vprops_devs[i_] = (src)->vProps.devs[i_];       \
		(dst)->max_p2p_bytes = (src)->maxP2pBytes;                     \
		(dst)->max_coll_bytes = (src)->maxCollBytes;                   \
	} while (0)

int zsm_client_get_properties(struct zsm_client *c, int dev,
			      struct zsm_client_props *p)
{
	int ret;

	memset(p, 0, sizeof(*p));
	memset(p->raw, ZSM_CLIENT_POISON, sizeof(p->raw));
	/* What NCCL's compat layers assume for fields a version lacks. */
	p->vprops_ndevs = 1;
	p->vprops_devs[0] = dev;
	p->max_p2p_bytes = 1ull << 30;
	p->max_coll_bytes = 512ull << 20;
	p->max_multi_request_size = 1;
	p->rail_id = NCCL_NET_ID_UNDEF;
	p->plane_id = NCCL_NET_ID_UNDEF;

	switch (c->abi) {
	case 8: {
		ncclNetProperties_v8_t *r = (void *)p->raw;

		p->raw_size = sizeof(*r);
		ret = c->t.v8->getProperties(dev, r);
		ZSM_COPY_COMMON(p, r);
		zsm_client_scan(
			p, zsm_fields_v8,
			sizeof(zsm_fields_v8) / sizeof(zsm_fields_v8[0]), 0, 0);
		break;
	}
	case 9:
	case 10: {
		ncclNetProperties_v9_t *r = (void *)p->raw;

		p->raw_size = sizeof(*r);
		ret = c->abi == 9 ? c->t.v9->getProperties(dev, r)
				  : c->t.v10->getProperties(dev, r);
		ZSM_COPY_V9(p, r, NCCL_NET_MAX_DEVS_PER_NIC_V11);
		zsm_client_scan(p, zsm_fields_v9,
				sizeof(zsm_fields_v9) /
					sizeof(zsm_fields_v9[0]),
				offsetof(ncclNetProperties_v9_t, vProps),
				NCCL_NET_MAX_DEVS_PER_NIC_V11);
		break;
	}
	case 11: {
		ncclNetProperties_v11_t *r = (void *)p->raw;

		p->raw_size = sizeof(*r);
		ret = c->t.v11->getProperties(dev, r);
		ZSM_COPY_V9(p, r, NCCL_NET_MAX_DEVS_PER_NIC_V11);
		p->max_multi_request_size = r->maxMultiRequestSize;
		zsm_client_scan(p, zsm_fields_v11,
				sizeof(zsm_fields_v11) /
					sizeof(zsm_fields_v11[0]),
				offsetof(ncclNetProperties_v11_t, vProps),
				NCCL_NET_MAX_DEVS_PER_NIC_V11);
		break;
	}
	default: {
		ncclNetProperties_v12_t *r = (void *)p->raw;

		p->raw_size = sizeof(*r);
		ret = c->t.v12->getProperties(dev, r);
		ZSM_COPY_V9(p, r, NCCL_NET_MAX_DEVS_PER_NIC_V12);
		p->max_multi_request_size = r->maxMultiRequestSize;
		p->rail_id = r->railId;
		p->plane_id = r->planeId;
		zsm_client_scan(p, zsm_fields_v12,
				sizeof(zsm_fields_v12) /
					sizeof(zsm_fields_v12[0]),
				offsetof(ncclNetProperties_v12_t, vProps),
				NCCL_NET_MAX_DEVS_PER_NIC_V12);
		break;
	}
	}
	return ret;
}

int zsm_client_listen(struct zsm_client *c, int dev, void *handle,
		      void **listen_comm)
{
	switch (c->abi) {
	case 8: return c->t.v8->listen(dev, handle, listen_comm);
	case 9: return c->t.v9->listen(dev, handle, listen_comm);
	case 10: return c->t.v10->listen(dev, handle, listen_comm);
	case 11: return c->t.v11->listen(c->ctx, dev, handle, listen_comm);
	default: return c->t.v12->listen(c->ctx, dev, handle, listen_comm);
	}
}

int zsm_client_connect(struct zsm_client *c, int dev, void *handle,
		       void **send_comm)
{
	ncclNetDeviceHandle_t *dev_comm = NULL;

	*send_comm = NULL;
	switch (c->abi) {
	case 8: return c->t.v8->connect(dev, handle, send_comm, &dev_comm);
	case 9: return c->t.v9->connect(dev, handle, send_comm, &dev_comm);
	case 10:
		return c->t.v10->connect(dev, &c->config, handle, send_comm,
					 &dev_comm);
	case 11:
		return c->t.v11->connect(c->ctx, dev, handle, send_comm,
					 &dev_comm);
	default:
		return c->t.v12->connect(c->ctx, dev, handle, send_comm,
					 &dev_comm);
	}
}

int zsm_client_accept(struct zsm_client *c, void *listen_comm, void **recv_comm)
{
	ncclNetDeviceHandle_t *dev_comm = NULL;

	*recv_comm = NULL;
	return ZSM_SLOT(c, accept)(listen_comm, recv_comm, &dev_comm);
}

int zsm_client_connect_accept(struct zsm_client *c, int dev, void *handle,
			      void *listen_comm, void **send_comm,
			      void **recv_comm, int timeout_ms,
			      const char **what)
{
	uint64_t deadline =
		zsm_client_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	int want_send = handle != NULL, want_recv = listen_comm != NULL;
	int ret;

	*what = "";
	if (want_send)
		*send_comm = NULL;
	if (want_recv)
		*recv_comm = NULL;
	for (;;) {
		if (want_send && !*send_comm) {
			ret = zsm_client_connect(c, dev, handle, send_comm);
			if (ret) {
				*what = "connect";
				return ret;
			}
		}
		if (want_recv && !*recv_comm) {
			ret = zsm_client_accept(c, listen_comm, recv_comm);
			if (ret) {
				*what = "accept";
				return ret;
			}
		}
		if ((!want_send || *send_comm) && (!want_recv || *recv_comm))
			return ncclSuccess;
		/* NCCL's progress thread runs on while its service thread
		 * connects. */
		if (c->track)
			zsm_client_progress(c);
		if (zsm_client_now_ns() > deadline) {
			*what = want_send && !*send_comm ? "connect" : "accept";
			return ZSM_CLIENT_TIMEOUT;
		}
		if (c->yield)
			sched_yield();
	}
}

int zsm_client_reg_mr(struct zsm_client *c, void *comm, void *data, size_t size,
		      int type, void **mhandle)
{
	return ZSM_SLOT(c, regMr)(comm, data, size, type, mhandle);
}

int zsm_client_dereg_mr(struct zsm_client *c, void *comm, void *mhandle)
{
	return ZSM_SLOT(c, deregMr)(comm, mhandle);
}

/* ---------------------------------------------------------------------- */
/* request tracking: progress the way NCCL's proxy thread makes it */

void zsm_client_yield(struct zsm_client *c, int on)
{
	c->yield = on;
}

void zsm_client_track(struct zsm_client *c, int on)
{
	c->track = on;
	if (!on)
		c->nreqs = 0;
}

/* Remember a request the plugin just returned; 0 or -1 (no memory). */
static int zsm_client_remember(struct zsm_client *c, void *comm, void *req,
			       int flush)
{
	struct zsm_client_req *q;
	int i;

	if (c->nreqs == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;

		q = realloc(c->reqs, cap * sizeof(*q));
		if (!q)
			return -1;
		c->reqs = q;
		c->cap = cap;
	}
	q = &c->reqs[c->nreqs++];
	memset(q, 0, sizeof(*q));
	q->req = req;
	q->comm = comm;
	q->flush = flush;
	for (i = 0; i < ZSM_CLIENT_MAX_N; i++)
		q->sizes[i] = ZSM_CLIENT_SIZE_UNSET;
	return 0;
}

/*
 * After a successful post: track what came back, unless it is NULL or
 * still the value the caller stored there (the 0x1 hint irecv must
 * overwrite; the caller checks that).  A request the client cannot
 * track would never be tested by progress: better refused than lost.
 */
static int zsm_client_posted(struct zsm_client *c, int ret, void *comm,
			     void *before, void **request, int flush)
{
	if (ret || !c->track || !*request || *request == before)
		return ret;
	if (zsm_client_remember(c, comm, *request, flush)) {
		fprintf(stderr, "zsm_client: out of memory tracking a "
				"request\n");
		return ncclSystemError;
	}
	return ret;
}

/*
 * The oldest record of req.  A plugin may hand out a pointer again once
 * progress saw it finish, before the caller asked: callers finish their
 * requests in posting order, so the oldest is the one they mean.
 */
static struct zsm_client_req *zsm_client_find(struct zsm_client *c,
					      void *req)
{
	size_t i;

	for (i = 0; i < c->nreqs; i++)
		if (c->reqs[i].req == req)
			return &c->reqs[i];
	return NULL;
}

static void zsm_client_drop(struct zsm_client *c, struct zsm_client_req *q)
{
	size_t i = (size_t)(q - c->reqs);

	memmove(q, q + 1, (c->nreqs - i - 1) * sizeof(*q));
	c->nreqs--;
}

/* One test of a tracked request that has not finished. */
static void zsm_client_poll(struct zsm_client *c, struct zsm_client_req *q)
{
	int done = 0;

	q->result = ZSM_SLOT(c, test)(q->req, &done, q->flush ? NULL
							       : q->sizes);
	q->done = done;
	q->finished = q->result || done;
}

/*
 * As NCCL's proxy: each pass tests, on every comm, the oldest request
 * not seen finished (any test call lets a manual-progress provider move
 * everything; NCCL tests its connections' requests in posting order).
 */
int zsm_client_progress(struct zsm_client *c)
{
	void *seen[ZSM_CLIENT_PROGRESS_COMMS];
	size_t i, nseen = 0, k;
	int left = 0;

	for (i = 0; i < c->nreqs; i++) {
		struct zsm_client_req *q = &c->reqs[i];

		if (q->finished)
			continue;
		left++;
		for (k = 0; k < nseen && seen[k] != q->comm; k++)
			;
		if (k < nseen)
			continue;
		if (nseen < ZSM_CLIENT_PROGRESS_COMMS)
			seen[nseen++] = q->comm;
		zsm_client_poll(c, q);
		left -= q->finished;
	}
	return left;
}

int zsm_client_outstanding(const struct zsm_client *c)
{
	size_t i;
	int n = 0;

	for (i = 0; i < c->nreqs; i++)
		n += !c->reqs[i].finished;
	return n;
}

/* Forget the requests of a comm being closed: NCCL never tests them. */
static void zsm_client_forget_comm(struct zsm_client *c, void *comm)
{
	size_t i = 0;

	while (i < c->nreqs) {
		if (c->reqs[i].comm == comm)
			zsm_client_drop(c, &c->reqs[i]);
		else
			i++;
	}
}

static int zsm_client_isend_raw(struct zsm_client *c, void *send_comm,
				void *data, size_t size, int tag,
				void *mhandle, void **request)
{
	switch (c->abi) {
	case 8:
		if (size > INT_MAX)
			return ncclInvalidArgument;
		return c->t.v8->isend(send_comm, data, (int)size, tag, mhandle,
				      request);
	case 9:
		return c->t.v9->isend(send_comm, data, size, tag, mhandle,
				      request);
	case 10:
		return c->t.v10->isend(send_comm, data, size, tag, mhandle,
				       NULL, request);
	case 11:
		return c->t.v11->isend(send_comm, data, size, tag, mhandle,
				       NULL, request);
	default:
		return c->t.v12->isend(send_comm, data, size, tag, mhandle,
				       NULL, request);
	}
}

int zsm_client_isend(struct zsm_client *c, void *send_comm, void *data,
		     size_t size, int tag, void *mhandle, void **request)
{
	void *before = *request;
	int ret = zsm_client_isend_raw(c, send_comm, data, size, tag, mhandle,
				       request);

	return zsm_client_posted(c, ret, send_comm, before, request, 0);
}

static int zsm_client_irecv_raw(struct zsm_client *c, void *recv_comm, int n,
				void **data, const size_t *sizes,
				const int *tags, void **mhandles,
				void **request)
{
	void *phandles[ZSM_CLIENT_MAX_N] = { 0 };
	size_t zsizes[ZSM_CLIENT_MAX_N];
	int isizes[ZSM_CLIENT_MAX_N];
	int itags[ZSM_CLIENT_MAX_N];
	int i;

	if (n < 0 || n > ZSM_CLIENT_MAX_N)
		return ncclInvalidArgument;
	/* Copies: the ABI takes non-const arrays. */
	for (i = 0; i < n; i++) {
		if (c->abi == 8 && sizes[i] > INT_MAX)
			return ncclInvalidArgument;
		isizes[i] = (int)sizes[i];
		zsizes[i] = sizes[i];
		itags[i] = tags[i];
	}
	switch (c->abi) {
	case 8:
		return c->t.v8->irecv(recv_comm, n, data, isizes, itags,
				      mhandles, request);
	case 9:
		return c->t.v9->irecv(recv_comm, n, data, zsizes, itags,
				      mhandles, request);
	case 10:
		return c->t.v10->irecv(recv_comm, n, data, zsizes, itags,
				       mhandles, phandles, request);
	case 11:
		return c->t.v11->irecv(recv_comm, n, data, zsizes, itags,
				       mhandles, phandles, request);
	default:
		return c->t.v12->irecv(recv_comm, n, data, zsizes, itags,
				       mhandles, phandles, request);
	}
}

int zsm_client_irecv(struct zsm_client *c, void *recv_comm, int n, void **data,
		     const size_t *sizes, const int *tags, void **mhandles,
		     void **request)
{
	void *before = *request;
	int ret = zsm_client_irecv_raw(c, recv_comm, n, data, sizes, tags,
				       mhandles, request);

	return zsm_client_posted(c, ret, recv_comm, before, request, 0);
}

int zsm_client_iflush(struct zsm_client *c, void *recv_comm, int n, void **data,
		      int *sizes, void **mhandles, void **request)
{
	void *before = *request;
	int ret = ZSM_SLOT(c, iflush)(recv_comm, n, data, sizes, mhandles,
				      request);

	return zsm_client_posted(c, ret, recv_comm, before, request, 1);
}

int zsm_client_test(struct zsm_client *c, void *request, int *done, int *sizes)
{
	struct zsm_client_req *q = c->track ? zsm_client_find(c, request)
					    : NULL;
	int i, ret;

	if (!q)
		return ZSM_SLOT(c, test)(request, done, sizes);
	if (!q->finished)
		zsm_client_poll(c, q);
	/* What the plugin wrote, in whichever call it wrote it. */
	for (i = 0; sizes && !q->flush && i < ZSM_CLIENT_MAX_N; i++)
		if (q->sizes[i] != ZSM_CLIENT_SIZE_UNSET)
			sizes[i] = q->sizes[i];
	*done = q->done;
	ret = q->result;
	if (q->finished)
		zsm_client_drop(c, q);
	return ret;
}

int zsm_client_wait(struct zsm_client *c, void *request, int *sizes,
		    int timeout_ms)
{
	uint64_t deadline =
		zsm_client_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	int done = 0, ret;

	for (;;) {
		ret = zsm_client_test(c, request, &done, sizes);
		if (ret || done)
			return ret;
		if (zsm_client_now_ns() > deadline)
			return ZSM_CLIENT_TIMEOUT;
		/* The rest of what is outstanding, as NCCL's proxy would. */
		if (c->track)
			zsm_client_progress(c);
		if (c->yield)
			sched_yield();
	}
}

int zsm_client_close_send(struct zsm_client *c, void *send_comm)
{
	zsm_client_forget_comm(c, send_comm);
	return ZSM_SLOT(c, closeSend)(send_comm);
}

int zsm_client_close_recv(struct zsm_client *c, void *recv_comm)
{
	zsm_client_forget_comm(c, recv_comm);
	return ZSM_SLOT(c, closeRecv)(recv_comm);
}

int zsm_client_close_listen(struct zsm_client *c, void *listen_comm)
{
	return ZSM_SLOT(c, closeListen)(listen_comm);
}

const void *zsm_client_table(const struct zsm_client *c)
{
	return c->t.any;
}
