/* SPDX-License-Identifier: MIT */
/*
 * NCCL 2.30's RMA table (ncclRmaPlugin_v14, or _v13 with --v13) through
 * dlopen, as NCCL's RMA proxy drives it: N forked ranks on one host, each
 * its own host to zsm (ZSM_HOSTID per rank) so that their links take the
 * network.  A shared page stands in for NCCL's bootstrap (handles and
 * barriers).  Each rank:
 *   - calls init twice and connects with a context that is not the
 *     listener's (NCCL passes its net plugin's);
 *   - finds netDeviceType GIN_PROXY in getProperties;
 *   - registers a data and a signal window symmetrically, in the same
 *     order as every rank, and makes a context with two contexts;
 *   - puts a pattern of its own into its slot of every peer's data
 *     window, on context 1, with an INC signal into its slot of the
 *     peer's signal window, and an ADD of 40 after a signal alone;
 *   - waits for every peer's signals (1 + 40), then checks every peer's
 *     bytes, gets its own bytes back from the next rank and checks them,
 *     and finds queryLastError false;
 *   - refuses 1000 contexts as a bad argument, a put to itself, past
 *     the window, a bad signal op, and a NULL request (with a WARN).
 * --hosts K makes rank r host r % K instead, so ranks of one host talk
 * over ce.  --late first has the last rank come to a registration 6 s
 * after the others, which give up after ZSM_CONNECT_TIMEOUT_MS (4 s,
 * set here): it must fail on every rank, the late one too (it would get
 * windows their owners gave up), and leave nothing on any link that the
 * run after it, which must pass, could wait behind.  With ZSM_RMA=0
 * the table's init fails, and nothing else is needed: --off checks
 * that.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pattern.h"
#include "preload.h"
#include "rma_client.h"

#define MAXR 8
#define SLOT (64 * 1024 + 13)

struct shared {
	atomic_int arrived[4]; /* barriers */
	char handles[MAXR][NCCL_NET_HANDLE_MAXSIZE];
};

static struct shared *sh;
static int nranks, rank;
/* --hosts K: rank r is host r % K to zsm (default: each its own); ranks
 * of one host talk over ce. */
static int nhosts;
/* --late: how long the last rank comes late to a registration (s). */
#define LATE_S 6
static int late;

static void nap(void)
{
	struct timespec ts = {0, 50000};

	nanosleep(&ts, NULL);
}

static void barrier(int k)
{
	/* seq_cst: each rank's writes before it are seen after it. */
	atomic_fetch_add(&sh->arrived[k], 1);
	while (atomic_load(&sh->arrived[k]) < nranks)
		nap();
}

#define FAIL(...)                                                             \
	do {                                                                  \
		printf("FAIL: rank %d: ", rank);                              \
		printf(__VA_ARGS__);                                          \
		printf("\n");                                                 \
		fflush(stdout);                                               \
		return 1;                                                     \
	} while (0)

static ncclResult_t create(const struct rma_client *t, void *coll, int n,
			   void **ctx)
{
	ncclNetDeviceHandle_t *dh = (void *)1;
	ncclResult_t r = rma_client_create(t, coll, n, ctx, &dh);

	/* v13: a proxy-type plugin hands NCCL no device handle. */
	return r == ncclSuccess && t->v13 && dh ? ncclInternalError : r;
}

static ncclResult_t reg(const struct rma_client *t, void *coll, void *data,
			size_t size, uint64_t flags, void **mh)
{
	return rma_client_reg(t, coll, data, size, NCCL_PTR_HOST, flags, mh);
}

static int wait_req(const struct rma_client *t, void *coll, void *req)
{
	int done = 0;
	ncclResult_t r;

	while ((r = t->test(coll, req, &done)) == ncclSuccess && !done)
		nap();
	return r;
}

/*
 * A put with a NULL request: ncclInvalidArgument and a WARN saying why
 * (the RMA layer refused NULL pointers without a word).  0 when so.
 */
static int null_request_said(const struct rma_client *t, void *rctx,
			     void *src, void *dst)
{
	FILE *cap = tmpfile();
	char log[4096] = {0};
	int saved = dup(STDERR_FILENO), said;
	ncclResult_t r;

	if (!cap || saved < 0)
		return -1;
	fflush(stderr);
	dup2(fileno(cap), STDERR_FILENO);
	r = t->iput(rctx, 0, 0, src, 8, 0, dst,
		    (uint32_t)((rank + 1) % nranks), NULL);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(cap);
	said = fread(log, 1, sizeof(log) - 1, cap) > 0 &&
	       strstr(log, "iput: request is NULL") != NULL;
	fclose(cap);
	printf("rank %d: iput with a NULL request: %d, %s\n", rank, (int)r,
	       said ? "said" : "not said");
	return r == ncclInvalidArgument && said ? 0 : -1;
}

/* --late: a registration the last rank comes to late fails on every
 * rank, with no handle. */
static int late_reg(const struct rma_client *t, void *coll, void *buf)
{
	void *mh = (void *)1;
	ncclResult_t r;

	if (rank == nranks - 1)
		sleep(LATE_S);
	r = reg(t, coll, buf, SLOT, 0, &mh);
	if (r == ncclSuccess || mh)
		FAIL("a registration %s succeeded (result %d)",
		     rank == nranks - 1 ? "we came late to"
					: "a rank came late to",
		     (int)r);
	printf("rank %d: the late registration failed (result %d)\n", rank,
	       (int)r);
	return 0;
}

static int run(const struct rma_client *t)
{
	unsigned char *data = calloc((size_t)nranks, SLOT);
	uint64_t *sig = calloc(MAXR, sizeof(uint64_t));
	unsigned char *mine = malloc(SLOT), *back = calloc(1, SLOT);
	void *ctx1, *ctx2, *listen, *coll, *rctx, *mh_data, *mh_sig, *mh_src;
	void *handles[MAXR], *req;
	ncclNetProperties_v12_t props;
	bool failed = true;
	char id[32];

	snprintf(id, sizeof(id), "rma-table-host-%d", rank % nhosts);
	setenv("ZSM_HOSTID", id, 1);
	if (!data || !sig || !mine || !back)
		FAIL("out of memory");
	/* NCCL calls init once per context kind: twice per comm. */
	if (t->init(&ctx1, 1, NULL) != ncclSuccess ||
	    t->init(&ctx2, 1, NULL) != ncclSuccess)
		FAIL("init");
	if (t->props(0, &props) != ncclSuccess ||
	    props.netDeviceType != NCCL_NET_DEVICE_GIN_PROXY)
		FAIL("getProperties: netDeviceType %d, want GIN_PROXY",
		     props.netDeviceType);
	if (t->listen(ctx1, 0, sh->handles[rank], &listen) != ncclSuccess)
		FAIL("listen");
	barrier(0);
	for (int r = 0; r < nranks; r++)
		handles[r] = sh->handles[r];
	/* Not the listener's context: NCCL passes its net plugin's. */
	if (t->connect(ctx2, handles, nranks, rank, listen, &coll) !=
	    ncclSuccess)
		FAIL("connect");
	if (late && late_reg(t, coll, back))
		return 1;
	if (reg(t, coll, data, (size_t)nranks * SLOT, 0, &mh_data) ||
	    reg(t, coll, sig, MAXR * sizeof(uint64_t),
		NCCL_NET_MR_FLAG_FORCE_SO | NCCL_NET_MR_FLAG_SIGNAL_NEVER_RESET,
		&mh_sig) ||
	    reg(t, coll, mine, SLOT, 0, &mh_src))
		FAIL("regMrSym");
	if (create(t, coll, 2, &rctx) != ncclSuccess)
		FAIL("createContext");
	/* More contexts than a comm's links take: the caller's argument to
	 * fix, not the system's error (it was ncclSystemError). */
	{
		void *more = (void *)1;
		ncclResult_t r = create(t, coll, 1000, &more);

		if (r != ncclInvalidArgument || more)
			FAIL("createContext(1000) returned %d (context %p), "
			     "want ncclInvalidArgument (%d)",
			     (int)r, more, (int)ncclInvalidArgument);
	}

	/* Refusals, each with no request. */
	req = NULL;
	if (t->iput(rctx, 0, 0, mh_src, 8, 0, mh_data, (uint32_t)rank, &req) ==
		    ncclSuccess ||
	    req)
		FAIL("a put to itself was taken");
	if (t->iput(rctx, 0, 0, mh_src, SLOT, (size_t)nranks * SLOT - 8,
		    mh_data, (uint32_t)((rank + 1) % nranks),
		    &req) == ncclSuccess)
		FAIL("a put past the window's end was taken");
	if (rma_client_put_signal(t, rctx, 0, 0, NULL, 0, 0, NULL,
				  (uint32_t)((rank + 1) % nranks), 0, mh_sig,
				  1, 7, &req) == ncclSuccess)
		FAIL("signal op 7 was taken");
	if (nranks > 1 && null_request_said(t, rctx, mh_src, mh_data))
		FAIL("a put with a NULL request was not refused as "
		     "ncclInvalidArgument with a WARN");

	zsm_pattern_fill(mine, SLOT, (uint32_t)(100 + rank));
	for (int r = 0; r < nranks; r++) {
		if (r == rank)
			continue;
		req = NULL;
		if (rma_client_put_signal(t, rctx, 1, 0, mh_src, SLOT,
					  (uint64_t)rank * SLOT, mh_data,
					  (uint32_t)r, (uint64_t)rank * 8,
					  mh_sig, 0, NCCL_NET_SIGNAL_OP_INC,
					  &req) != ncclSuccess ||
		    !req)
			FAIL("iputSignal to rank %d", r);
		if (wait_req(t, coll, req))
			FAIL("iputSignal to rank %d completed with an error",
			     r);
		if (rma_client_put_signal(t, rctx, 0, 0, NULL, 0, 0, NULL,
					  (uint32_t)r, (uint64_t)rank * 8,
					  mh_sig, 40, NCCL_NET_SIGNAL_OP_ADD,
					  &req) != ncclSuccess ||
		    !req || wait_req(t, coll, req))
			FAIL("a signal alone to rank %d", r);
	}
	for (int r = 0; r < nranks; r++) {
		if (r == rank)
			continue;
		/* acquire: pairs with the plugin's release add. */
		while (__atomic_load_n(&sig[r], __ATOMIC_ACQUIRE) < 41)
			nap();
		if (sig[r] != 41)
			FAIL("rank %d's signal is %llu, want 41", r,
			     (unsigned long long)sig[r]);
		if (zsm_pattern_check(data + (size_t)r * SLOT, SLOT,
				      (uint32_t)(100 + r)) >= 0)
			FAIL("rank %d's bytes differ once its signal came", r);
	}
	barrier(1);
	/* Our bytes back from the next rank's copy. */
	if (nranks > 1) {
		int next = (rank + 1) % nranks;

		req = NULL;
		memset(mine, 0, SLOT);
		if (t->iget(rctx, 0, (uint64_t)rank * SLOT, mh_data, SLOT, 0,
			    mh_src, (uint32_t)next, &req) != ncclSuccess ||
		    !req)
			FAIL("iget");
		if (wait_req(t, coll, req) ||
		    zsm_pattern_check(mine, SLOT, (uint32_t)(100 + rank)) >= 0)
			FAIL("iget from rank %d read other bytes", next);
	}
	if (t->last_error(rctx, &failed) != ncclSuccess || failed)
		FAIL("queryLastError says a link failed");
	barrier(2);
	if (t->dereg(coll, mh_data) || t->dereg(coll, mh_sig) ||
	    t->dereg(coll, mh_src) || t->destroy(rctx) ||
	    t->close_coll(coll) || t->close_listen(listen))
		FAIL("teardown");
	/* A second deregistration of the same handle is refused. */
	if (t->dereg(coll, mh_data) == ncclSuccess)
		FAIL("a handle deregistered twice");
	barrier(3);
	t->finalize(ctx1);
	t->finalize(ctx2);
	free(data);
	free(sig);
	free(mine);
	free(back);
	printf("rank %d: %s: PASS\n", rank, t->name);
	return 0;
}

int main(int argc, char **argv)
{
	struct rma_client t = {0};
	char why[256];
	pid_t pids[MAXR] = {0};
	int v13 = 0, off = 0, status = 0;
	const char *so = NULL;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--v13") == 0)
			v13 = 1;
		else if (strcmp(argv[i], "--off") == 0)
			off = 1;
		else if (strcmp(argv[i], "--late") == 0)
			late = 1;
		else if (strcmp(argv[i], "--ranks") == 0 && i + 1 < argc)
			nranks = atoi(argv[++i]);
		else if (strcmp(argv[i], "--hosts") == 0 && i + 1 < argc)
			nhosts = atoi(argv[++i]);
		else
			so = argv[i];
	}
	if (!nhosts)
		nhosts = nranks;
	if (!so || (!off && (nranks < 2 || nranks > MAXR || nhosts < 1))) {
		fprintf(stderr,
			"usage: %s PLUGIN --ranks 2..%d [--hosts K] [--v13] "
			"[--late] | "
			"PLUGIN --off\n",
			argv[0], MAXR);
		return 2;
	}
	/* Before the ranks fork (test/lib/preload.c). */
	if (preload_from_env())
		return 1;
	if (rma_client_open(&t, so, v13 ? 13 : 14, why, sizeof(why))) {
		printf("FAIL: %s\n", why);
		return 1;
	}
	if (off) {
		void *ctx = (void *)1;

		setenv("ZSM_RMA", "0", 1);
		if (t.init(&ctx, 1, NULL) == ncclSuccess) {
			printf("FAIL: init succeeded with ZSM_RMA=0\n");
			return 1;
		}
		printf("with ZSM_RMA=0, init is refused: PASS\n");
		return 0;
	}
	setenv("ZSM_RMA", "1", 1);
	if (late)
		setenv("ZSM_CONNECT_TIMEOUT_MS", "4000", 1);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	memset(sh, 0, sizeof(*sh));
	for (int r = 0; r < nranks; r++) {
		pid_t pid = fork();

		pids[r] = pid;
		if (pid == 0) {
			rank = r;
			alarm(90);
			status = run(&t);
			fflush(stdout);
			_exit(status);
		}
	}
	for (int r = 0; r < nranks; r++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
			/* The others would wait for it at a barrier. */
			if (!status)
				for (int k = 0; k < nranks; k++)
					kill(pids[k], SIGKILL);
			status = 1;
		}
	}
	printf("%d ranks: %s\n", nranks, status ? "FAIL" : "PASS");
	return status;
}
