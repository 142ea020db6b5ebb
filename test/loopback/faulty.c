/* SPDX-License-Identifier: MIT */
/*
 * A fault-injecting ncclNet v12 plugin that wraps a real one: it loads the
 * .so named by ZSM_FAULTY_REAL and breaks one behaviour chosen by
 * ZSM_FAULT, so the loopback suite can show that each check fails when
 * the behaviour it checks breaks.  With ZSM_FAULT unset it only forwards.
 *
 * Built with -DZSM_FAULTY_ONLY_V8 it exports ncclNetPlugin_v8 alone, the
 * real plugin's v8 table passed through unchanged (ZSM_FAULT ignored): the
 * kit must find and use the only table a plugin has.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "abi/nccl_net.h"

#define FAULTY_REQ_MAGIC 0x66726571u
#define FAULTY_MR_MAGIC 0x66616d72u
/* Above the 64 pairs of many_comms plus the connections of a check. */
#define FAULTY_MAX_COMMS 256
#define FAULTY_COMMS_CAP 32
#define FAULTY_CORRUPT_MIN (1 << 20)
#define FAULTY_STALL_MS 12000
#define FAULTY_INFLIGHT_CAP 64
/* NCCL_NET_MAX_REQUESTS: what NCCL needs in flight per comm (x maxRecvs
 * for sends). */
#define FAULTY_NCCL_REQUESTS 32
/* FAULT_LISTENER_STALL: how long the listening process stops. */
#define FAULTY_LISTENER_STALL_S 3
/* FAULT_CONNECT_SLOW: one call's sleep, past the kit's blocking limit. */
#define FAULTY_SLOW_US 3000000

enum faulty_fault {
	FAULT_NONE,
	FAULT_PROPS_UNWRITTEN,	/* properties: a field left unwritten */
	FAULT_PROPS_TYPE,	/* properties: netDeviceType != HOST */
	FAULT_CONNECT_SLOW,	/* connect_retry: every call sleeps 3 s */
	FAULT_SWALLOW_CONNECT,	/* bad_handle: errors become "later" */
	FAULT_REORDER,		/* order: pairs of sends swapped */
	FAULT_TAG_IGNORE,	/* tag_select: tags ignored, arrival order */
	FAULT_SIZE_POSTED,	/* recv_larger: posted size reported */
	FAULT_SIZES_OVERWRITE,	/* test_sizes_n: sizes[n..63] written */
	FAULT_SWALLOW_RECV_ERR, /* send_too_large: receive error hidden */
	FAULT_OVERFLOW,		/* grouped_n: a byte past the buffer */
	FAULT_ZERO_FAIL,	/* zero_byte: 0-byte sends refused */
	FAULT_NULL_ERROR,	/* null_retry: queue full is an error */
	FAULT_REQ_KEEP,		/* recv_overwrites_request: 0x1 left */
	FAULT_IFLUSH_REQ,	/* iflush_host: a request returned */
	FAULT_INFLIGHT_CAP,	/* inflight: NULL beyond 64 per comm */
	FAULT_MR_NAIVE_CACHE,	/* mr_cache: twins share one handle */
	FAULT_CLOSE_CRASH,	/* close_inflight: crash on busy close */
	FAULT_CORRUPT_LARGE,	/* data_sizes: a byte of >= 1 MiB flipped */
	FAULT_COMMS_CAP,	/* many_comms: connect fails beyond 32 */
	FAULT_REGMR_BUSY,	/* regmr_concurrent: regMr fails mid-traffic */
	FAULT_FD_LEAK,		/* init_cycles: init leaks an fd */
	FAULT_CONNECT_STALL,	/* connect_retry: done only after 12 s */
	FAULT_LOSE_RECV,	/* zsm-load: one receive never completes */
	FAULT_STALL,		/* zsm-load: nothing completes any more */
	FAULT_CONNECT_CRASH,	/* bad_handle: a refused connect crashes */
	FAULT_ERROR_SPREAD,	/* trunc_isolated: errors fail other comms */
	/*
	 * Legal plugins that differ from zsm where NCCL allows it; the kit
	 * must pass on them.
	 */
	FAULT_MAXRECVS1,	/* maxRecvs 1; irecv with n > 1 an error */
	FAULT_MIN_REQUESTS,	/* NULL beyond NCCL's minimum in flight */
	/* The listening process stops for 3 s at its first accept, as a
	 * loaded machine may stop it: connects take that long. */
	FAULT_LISTENER_STALL,
	FAULT_COUNT
};

static const char *const faulty_names[FAULT_COUNT] = {
	"none",
	"props_unwritten",
	"props_type",
	"connect_slow",
	"swallow_connect",
	"reorder",
	"tag_ignore",
	"size_posted",
	"sizes_overwrite",
	"swallow_recv_err",
	"overflow",
	"zero_fail",
	"null_error",
	"req_keep",
	"iflush_req",
	"inflight_cap",
	"mr_naive_cache",
	"close_crash",
	"corrupt_large",
	"comms_cap",
	"regmr_busy",
	"fd_leak",
	"connect_stall",
	"lose_recv",
	"stall",
	"connect_crash",
	"error_spread",
	"maxrecvs1",
	"min_requests",
	"listener_stall",
};

static const ncclNet_v12_t *faulty_real;
static void *faulty_dl;
static enum faulty_fault faulty_fault;
/* Send comms open now, for FAULT_COMMS_CAP. */
static int faulty_live_sends;
/* FAULT_LOSE_RECV, FAULT_STALL: receives completed so far.  A stall
 * comes later than the loss: early on, a comm that has not got going yet
 * is a whole window behind the rest and a stall then reads as a lost
 * message (zsm-load's rule); by 2000 receives every comm is under way. */
#define FAULTY_LOSE_AFTER 100
#define FAULTY_STALL_AFTER 2000
static int faulty_recvs_done;
/* FAULT_CONNECT_STALL: when the first connect call came. */
static struct timespec faulty_stall_t0;

/* A request as the caller sees it. */
struct faulty_req {
	uint32_t magic;
	void *real;
	void *comm;
	int recv;
	int n;
	size_t posted[8];
	void *data[8];
	/* FAULT_REORDER: a send held back until the next one is posted. */
	int held;
	/* FAULT_LOSE_RECV: finished, and swallowed: never reported done. */
	int lost;
	void *h_data;
	size_t h_size;
	int h_tag;
	void *h_mh;
};

struct faulty_mr {
	uint32_t magic;
	void *real;
	void *data;
	size_t size;
	int refs;
};

/* Per comm: requests in flight and the held send. */
struct faulty_comm {
	void *comm;
	int max_recvs; /* the real plugin's, for the device of the comm */
	int stalled; /* FAULT_LISTENER_STALL: this listen comm stopped once */
	int poisoned; /* FAULT_ERROR_SPREAD: another comm's request failed */
	int inflight;
	struct faulty_req *held;
	struct faulty_mr *mrs[16];
};

static struct faulty_comm faulty_comms[FAULTY_MAX_COMMS];
/* regmr_concurrent calls regMr on a second thread: guard the slots. */
static pthread_mutex_t faulty_lock = PTHREAD_MUTEX_INITIALIZER;

static struct faulty_comm *faulty_comm(void *comm)
{
	struct faulty_comm *fc = NULL;
	int i, free_slot = -1;

	pthread_mutex_lock(&faulty_lock);
	for (i = 0; i < FAULTY_MAX_COMMS && !fc; i++) {
		if (faulty_comms[i].comm == comm)
			fc = &faulty_comms[i];
		else if (!faulty_comms[i].comm && free_slot < 0)
			free_slot = i;
	}
	if (!fc && free_slot < 0)
		abort();
	if (!fc) {
		fc = &faulty_comms[free_slot];
		memset(fc, 0, sizeof(*fc));
		fc->comm = comm;
	}
	pthread_mutex_unlock(&faulty_lock);
	return fc;
}

/* Reloading the wrapper must not pile up loads of the real plugin. */
__attribute__((destructor)) static void faulty_unload(void)
{
	if (faulty_dl)
		dlclose(faulty_dl);
}

static void faulty_comm_forget(void *comm)
{
	struct faulty_comm *fc = faulty_comm(comm);

	memset(fc, 0, sizeof(*fc));
}

static ncclResult_t faulty_init(void **ctx, uint64_t comm_id,
				ncclNetCommConfig_t *config,
				ncclDebugLogger_t logger,
				ncclProfilerCallback_t prof)
{
	const char *real = getenv("ZSM_FAULTY_REAL");
	const char *fault = getenv("ZSM_FAULT");
	void *dl;
	int i;

	if (!real) {
		fprintf(stderr,
			"faulty: set ZSM_FAULTY_REAL to the real .so\n");
		return ncclInvalidUsage;
	}
	if (!faulty_real) {
		dl = dlopen(real, RTLD_NOW | RTLD_LOCAL);
		faulty_dl = dl;
		faulty_real = dl ? dlsym(dl, "ncclNetPlugin_v12") : NULL;
		if (!faulty_real) {
			fprintf(stderr, "faulty: no ncclNetPlugin_v12 in %s\n",
				real);
			return ncclInvalidUsage;
		}
	}
	faulty_fault = FAULT_NONE;
	for (i = 0; fault && i < FAULT_COUNT; i++)
		if (!strcmp(fault, faulty_names[i]))
			faulty_fault = (enum faulty_fault)i;
	if (fault && faulty_fault == FAULT_NONE && strcmp(fault, "none")) {
		fprintf(stderr, "faulty: unknown ZSM_FAULT %s\n", fault);
		return ncclInvalidUsage;
	}
	/* The bug: an fd opened by every init and never closed. */
	if (faulty_fault == FAULT_FD_LEAK && open("/dev/null", O_RDONLY) < 0)
		return ncclSystemError;
	return faulty_real->init(ctx, comm_id, config, logger, prof);
}

static ncclResult_t faulty_devices(int *ndev)
{
	return faulty_real->devices(ndev);
}

static ncclResult_t faulty_get_properties(int dev, ncclNetProperties_v12_t *p)
{
	ncclResult_t r = faulty_real->getProperties(dev, p);

	if (faulty_fault == FAULT_PROPS_UNWRITTEN)
		memset(&p->maxMultiRequestSize, 0xA5,
		       sizeof(p->maxMultiRequestSize));
	if (faulty_fault == FAULT_PROPS_TYPE)
		p->netDeviceType = 1;
	if (faulty_fault == FAULT_MAXRECVS1)
		p->maxRecvs = 1;
	return r;
}

/* The real plugin's maxRecvs on dev, 1 when it cannot say. */
static int faulty_real_max_recvs(int dev)
{
	ncclNetProperties_v12_t p;

	if (faulty_real->getProperties(dev, &p) || p.maxRecvs < 1)
		return 1;
	return p.maxRecvs;
}

static ncclResult_t faulty_listen(void *ctx, int dev, void *handle,
				  void **listen_comm)
{
	ncclResult_t r = faulty_real->listen(ctx, dev, handle, listen_comm);

	if (!r && *listen_comm)
		faulty_comm(*listen_comm)->max_recvs =
			faulty_real_max_recvs(dev);
	return r;
}

static ncclResult_t faulty_connect(void *ctx, int dev, void *handle,
				   void **send_comm,
				   ncclNetDeviceHandle_t **dev_comm)
{
	ncclResult_t r;

	if (faulty_fault == FAULT_CONNECT_SLOW)
		usleep(FAULTY_SLOW_US); /* blocks NCCL's service thread */
	if (faulty_fault == FAULT_CONNECT_STALL) {
		/* Every call quick, but "call again" for 12 s. */
		struct timespec now;

		clock_gettime(CLOCK_MONOTONIC, &now);
		if (!faulty_stall_t0.tv_sec)
			faulty_stall_t0 = now;
		if ((now.tv_sec - faulty_stall_t0.tv_sec) * 1000 <
		    FAULTY_STALL_MS) {
			*send_comm = NULL;
			return ncclSuccess;
		}
	}
	if (faulty_fault == FAULT_COMMS_CAP &&
	    faulty_live_sends >= FAULTY_COMMS_CAP) {
		fprintf(stderr, "faulty: more than %d send comms\n",
			FAULTY_COMMS_CAP);
		return ncclSystemError;
	}
	r = faulty_real->connect(ctx, dev, handle, send_comm, dev_comm);
	if (r && faulty_fault == FAULT_CONNECT_CRASH)
		raise(SIGSEGV); /* the bug: a bad handle read as a good one */
	if (r && faulty_fault == FAULT_SWALLOW_CONNECT) {
		*send_comm = NULL;
		return ncclSuccess;
	}
	if (!r && *send_comm) {
		faulty_live_sends++;
		faulty_comm(*send_comm)->max_recvs = faulty_real_max_recvs(dev);
	}
	return r;
}

/*
 * FAULT_LISTENER_STALL: stop this whole process (its plugin threads too)
 * for a while, as a loaded machine can; a helper process wakes it.
 */
static void faulty_stall_process(void)
{
	pid_t self = getpid(), helper = fork();

	if (helper < 0)
		return;
	if (helper == 0) {
		struct timespec ts = { FAULTY_LISTENER_STALL_S, 0 };

		while (nanosleep(&ts, &ts))
			;
		kill(self, SIGCONT);
		_exit(0);
	}
	kill(self, SIGSTOP);
	waitpid(helper, NULL, 0);
}

static ncclResult_t faulty_accept(void *listen_comm, void **recv_comm,
				  ncclNetDeviceHandle_t **dev_comm)
{
	struct faulty_comm *lc = faulty_comm(listen_comm);
	ncclResult_t r;

	if (faulty_fault == FAULT_LISTENER_STALL && !lc->stalled) {
		lc->stalled = 1;
		faulty_stall_process();
	}
	r = faulty_real->accept(listen_comm, recv_comm, dev_comm);
	if (!r && *recv_comm)
		faulty_comm(*recv_comm)->max_recvs = lc->max_recvs;
	return r;
}

static ncclResult_t faulty_reg_mr(void *comm, void *data, size_t size, int type,
				  void **mhandle)
{
	struct faulty_comm *fc = faulty_comm(comm);
	struct faulty_mr *m;
	ncclResult_t r;
	int i;

	/* The bug: registration refused while requests are in flight. */
	if (faulty_fault == FAULT_REGMR_BUSY && fc->inflight)
		return ncclInternalError;
	if (faulty_fault == FAULT_MR_NAIVE_CACHE) {
		/* The bug: a twin gets the same handle, without a count. */
		for (i = 0; i < 16; i++) {
			m = fc->mrs[i];
			if (m && m->data == data && m->size == size) {
				*mhandle = m;
				return ncclSuccess;
			}
		}
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return ncclSystemError;
	r = faulty_real->regMr(comm, data, size, type, &m->real);
	if (r) {
		free(m);
		return r;
	}
	m->magic = FAULTY_MR_MAGIC;
	m->data = data;
	m->size = size;
	for (i = 0; i < 16; i++)
		if (!fc->mrs[i]) {
			fc->mrs[i] = m;
			break;
		}
	*mhandle = m;
	return ncclSuccess;
}

static ncclResult_t faulty_reg_mr_dmabuf(void *comm, void *data, size_t size,
					 int type, uint64_t offset, int fd,
					 void **mhandle)
{
	return ncclInternalError;
}

static ncclResult_t faulty_dereg_mr(void *comm, void *mhandle)
{
	struct faulty_comm *fc = faulty_comm(comm);
	struct faulty_mr *m = mhandle;
	ncclResult_t r;
	int i;

	if (!m || m->magic != FAULTY_MR_MAGIC)
		return ncclInternalError;
	for (i = 0; i < 16; i++)
		if (fc->mrs[i] == m)
			fc->mrs[i] = NULL;
	r = faulty_real->deregMr(comm, m->real);
	m->magic = 0; /* a later use is caught as stale */
	return r;
}

/* The real handle of one of ours; NULL (and complain) when stale. */
static int faulty_mr_real(void *mh, void **real)
{
	struct faulty_mr *m = mh;

	if (!m) {
		*real = NULL;
		return 0;
	}
	if (m->magic != FAULTY_MR_MAGIC) {
		fprintf(stderr, "faulty: use of a deregistered mhandle\n");
		return -1;
	}
	*real = m->real;
	return 0;
}

static ncclResult_t faulty_post_send(void *comm, void *data, size_t size,
				     int tag, void *mh, void **real)
{
	void *rmh;

	if (faulty_mr_real(mh, &rmh))
		return ncclInternalError;
	if (faulty_fault == FAULT_TAG_IGNORE)
		tag = 0;
	return faulty_real->isend(comm, data, size, tag, rmh, NULL, real);
}

static ncclResult_t faulty_isend(void *comm, void *data, size_t size, int tag,
				 void *mh, void *phandle, void **request)
{
	struct faulty_comm *fc = faulty_comm(comm);
	struct faulty_req *q;
	ncclResult_t r;

	*request = NULL;
	if (faulty_fault == FAULT_ZERO_FAIL && size == 0)
		return ncclInvalidUsage;
	if (faulty_fault == FAULT_INFLIGHT_CAP &&
	    fc->inflight >= FAULTY_INFLIGHT_CAP)
		return ncclSuccess;
	/* Legal: NCCL needs 32 x maxRecvs sends in flight, and retries. */
	if (faulty_fault == FAULT_MIN_REQUESTS &&
	    fc->inflight >= FAULTY_NCCL_REQUESTS * fc->max_recvs)
		return ncclSuccess;
	q = calloc(1, sizeof(*q));
	if (!q)
		return ncclSystemError;
	q->magic = FAULTY_REQ_MAGIC;
	q->comm = comm;
	q->n = 1;
	if (faulty_fault == FAULT_REORDER && !fc->held) {
		q->held = 1;
		q->h_data = data;
		q->h_size = size;
		q->h_tag = tag;
		q->h_mh = mh;
		fc->held = q;
		fc->inflight++;
		*request = q;
		return ncclSuccess;
	}
	r = faulty_post_send(comm, data, size, tag, mh, &q->real);
	if (r == ncclSuccess && !q->real && faulty_fault == FAULT_NULL_ERROR)
		r = ncclInternalError;
	if (r || !q->real) {
		free(q);
		return r;
	}
	if (fc->held) {
		struct faulty_req *h = fc->held;

		/* The held, earlier send goes second. */
		fc->held = NULL;
		h->held = 0;
		r = faulty_post_send(comm, h->h_data, h->h_size, h->h_tag,
				     h->h_mh, &h->real);
		if (r)
			return r;
		if (!h->real)
			h->held = 2; /* post it from test */
	}
	fc->inflight++;
	*request = q;
	return ncclSuccess;
}

static ncclResult_t faulty_irecv(void *comm, int n, void **data, size_t *sizes,
				 int *tags, void **mhs, void **phandles,
				 void **request)
{
	struct faulty_comm *fc = faulty_comm(comm);
	void *rmhs[8];
	int itags[8], i;
	struct faulty_req *q;
	ncclResult_t r;

	if (faulty_fault == FAULT_REQ_KEEP &&
	    *request == (void *)NCCL_NET_OPTIONAL_RECV_COMPLETION)
		return ncclSuccess; /* the bug: "busy", *request untouched */
	*request = NULL;
	if (n < 1 || n > 8)
		return ncclInternalError;
	/* Legal with maxRecvs 1: n is in [1, maxRecvs]. */
	if (faulty_fault == FAULT_MAXRECVS1 && n > 1) {
		fprintf(stderr, "faulty: irecv with n %d, maxRecvs is 1\n", n);
		return ncclInternalError;
	}
	if (faulty_fault == FAULT_INFLIGHT_CAP &&
	    fc->inflight >= FAULTY_INFLIGHT_CAP)
		return ncclSuccess;
	/* Legal: NCCL needs 32 receives in flight, and retries. */
	if (faulty_fault == FAULT_MIN_REQUESTS &&
	    fc->inflight >= FAULTY_NCCL_REQUESTS)
		return ncclSuccess;
	for (i = 0; i < n; i++) {
		if (faulty_mr_real(mhs[i], &rmhs[i]))
			return ncclInternalError;
		itags[i] = faulty_fault == FAULT_TAG_IGNORE ? 0 : tags[i];
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		return ncclSystemError;
	q->magic = FAULTY_REQ_MAGIC;
	q->comm = comm;
	q->recv = 1;
	q->n = n;
	for (i = 0; i < n; i++) {
		q->posted[i] = sizes[i];
		q->data[i] = data[i];
	}
	r = faulty_real->irecv(comm, n, data, sizes, itags, rmhs, phandles,
			       &q->real);
	if (r == ncclSuccess && !q->real && faulty_fault == FAULT_NULL_ERROR)
		r = ncclInternalError;
	if (r || !q->real) {
		free(q);
		return r;
	}
	fc->inflight++;
	*request = q;
	return ncclSuccess;
}

static ncclResult_t faulty_iflush(void *comm, int n, void **data, int *sizes,
				  void **mhs, void **request)
{
	static int dummy;
	void *rmhs[8];
	ncclResult_t r;
	int i;

	for (i = 0; i < n && i < 8; i++)
		if (faulty_mr_real(mhs[i], &rmhs[i]))
			return ncclInternalError;
	r = faulty_real->iflush(comm, n, data, sizes, rmhs, request);
	if (faulty_fault == FAULT_IFLUSH_REQ && r == ncclSuccess && !*request)
		*request = &dummy;
	return r;
}

/* FAULT_ERROR_SPREAD: the next request to finish on every other comm
 * fails. */
static void faulty_poison_others(void *comm)
{
	int i;

	pthread_mutex_lock(&faulty_lock);
	for (i = 0; i < FAULTY_MAX_COMMS; i++)
		if (faulty_comms[i].comm && faulty_comms[i].comm != comm)
			faulty_comms[i].poisoned = 1;
	pthread_mutex_unlock(&faulty_lock);
}

static ncclResult_t faulty_test(void *request, int *done, int *sizes)
{
	struct faulty_req *q = request;
	int tmp[64], i;
	ncclResult_t r;

	*done = 0;
	if (!q || q->magic != FAULTY_REQ_MAGIC) {
		fprintf(stderr, "faulty: test of an unknown request %p\n",
			request);
		return ncclInternalError;
	}
	/* The bug: a receive that finished is reported as pending. */
	if (q->lost ||
	    (faulty_fault == FAULT_STALL &&
	     faulty_recvs_done >= FAULTY_STALL_AFTER))
		return ncclSuccess;
	if (q->held == 1) {
		/* Never paired: post it now, in order. */
		struct faulty_comm *fc = faulty_comm(q->comm);

		if (fc->held == q)
			fc->held = NULL;
		q->held = 2;
	}
	if (q->held == 2) {
		r = faulty_post_send(q->comm, q->h_data, q->h_size, q->h_tag,
				     q->h_mh, &q->real);
		if (r)
			return r;
		if (!q->real)
			return ncclSuccess;
		q->held = 0;
	}
	/* The caller's array may hold only n entries (NCCL's holds 64). */
	memset(tmp, 0, sizeof(tmp));
	r = faulty_real->test(q->real, done, sizes ? tmp : NULL);
	if (r && q->recv && faulty_fault == FAULT_SWALLOW_RECV_ERR) {
		*done = 1;
		r = ncclSuccess;
		for (i = 0; i < q->n; i++)
			tmp[i] = (int)q->posted[i];
	}
	if (!r && !*done)
		return r;
	if (r && faulty_fault == FAULT_ERROR_SPREAD)
		faulty_poison_others(q->comm);
	if (!r && faulty_fault == FAULT_ERROR_SPREAD &&
	    faulty_comm(q->comm)->poisoned) {
		/* The bug: one comm's error takes the next of each other's. */
		faulty_comm(q->comm)->poisoned = 0;
		r = ncclSystemError;
	}
	if (r) {
		/* Finished with an error: nobody tests it again. */
		faulty_comm(q->comm)->inflight--;
		q->magic = 0;
		free(q);
		return r;
	}
	if (q->recv && ++faulty_recvs_done == FAULTY_LOSE_AFTER &&
	    faulty_fault == FAULT_LOSE_RECV) {
		*done = 0;
		q->lost = 1;
		return ncclSuccess;
	}
	if (q->recv && faulty_fault == FAULT_SIZE_POSTED)
		for (i = 0; i < q->n; i++)
			tmp[i] = (int)q->posted[i];
	if (q->recv && faulty_fault == FAULT_CORRUPT_LARGE)
		for (i = 0; i < q->n; i++)
			if (tmp[i] >= FAULTY_CORRUPT_MIN)
				((unsigned char *)q->data[i])[tmp[i] / 2] ^= 1;
	if (q->recv && faulty_fault == FAULT_OVERFLOW)
		for (i = 0; i < q->n; i++)
			((unsigned char *)q->data[i])[q->posted[i]] ^= 0xFF;
	if (sizes && faulty_fault == FAULT_SIZES_OVERWRITE)
		memcpy(sizes, tmp, sizeof(tmp)); /* the bug: all 64 */
	else if (sizes)
		memcpy(sizes, tmp, sizeof(int) * (size_t)q->n);
	faulty_comm(q->comm)->inflight--;
	q->magic = 0;
	free(q);
	return ncclSuccess;
}

static ncclResult_t faulty_close_any(void *comm,
				     ncclResult_t (*close_fn)(void *))
{
	struct faulty_comm *fc = faulty_comm(comm);

	if (faulty_fault == FAULT_CLOSE_CRASH && fc->inflight)
		raise(SIGSEGV);
	faulty_comm_forget(comm);
	return close_fn(comm);
}

static ncclResult_t faulty_close_send(void *comm)
{
	faulty_live_sends--;
	return faulty_close_any(comm, faulty_real->closeSend);
}

static ncclResult_t faulty_close_recv(void *comm)
{
	return faulty_close_any(comm, faulty_real->closeRecv);
}

static ncclResult_t faulty_close_listen(void *comm)
{
	faulty_comm_forget(comm);
	return faulty_real->closeListen(comm);
}

static ncclResult_t faulty_finalize(void *ctx)
{
	return faulty_real->finalize(ctx);
}

#ifdef ZSM_FAULTY_ONLY_V8
/* Kept for the build but not exported: the variant has v8 alone. */
#define FAULTY_V12_EXPORT static __attribute__((unused))
#else
#define FAULTY_V12_EXPORT __attribute__((visibility("default")))
#endif

FAULTY_V12_EXPORT const ncclNet_v12_t ncclNetPlugin_v12 = {
	.name = "faulty",
	.init = faulty_init,
	.devices = faulty_devices,
	.getProperties = faulty_get_properties,
	.listen = faulty_listen,
	.connect = faulty_connect,
	.accept = faulty_accept,
	.regMr = faulty_reg_mr,
	.regMrDmaBuf = faulty_reg_mr_dmabuf,
	.deregMr = faulty_dereg_mr,
	.isend = faulty_isend,
	.irecv = faulty_irecv,
	.iflush = faulty_iflush,
	.test = faulty_test,
	.closeSend = faulty_close_send,
	.closeRecv = faulty_close_recv,
	.closeListen = faulty_close_listen,
	.getDeviceMr = NULL,
	.irecvConsumed = NULL,
	.makeVDevice = NULL,
	.finalize = faulty_finalize,
	.setNetAttr = NULL,
};

#ifdef ZSM_FAULTY_ONLY_V8
static ncclResult_t faulty_v8_no_real(ncclDebugLogger_t logger)
{
	(void)logger;
	fprintf(stderr, "faulty: ZSM_FAULTY_REAL names no .so with "
			"ncclNetPlugin_v8\n");
	return ncclInvalidUsage;
}

/* Filled when the library loads, before NCCL looks the symbol up. */
__attribute__((visibility("default"))) ncclNet_v8_t ncclNetPlugin_v8 = {
	.name = "faulty-v8",
	.init = faulty_v8_no_real,
};

__attribute__((constructor)) static void faulty_v8_load(void)
{
	const char *real = getenv("ZSM_FAULTY_REAL");
	const ncclNet_v8_t *t;

	faulty_dl = real ? dlopen(real, RTLD_NOW | RTLD_LOCAL) : NULL;
	t = faulty_dl ? dlsym(faulty_dl, "ncclNetPlugin_v8") : NULL;
	if (!t)
		return;
	ncclNetPlugin_v8 = *t;
	ncclNetPlugin_v8.name = "faulty-v8";
}
#endif
