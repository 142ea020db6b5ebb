/* SPDX-License-Identifier: MIT */
/*
 * zsm-bench --rma: one-sided puts through a plugin's ncclRmaPlugin_v14,
 * called as NCCL's RMA proxy calls it (init, a collective connect of the
 * pair from both listen handles, symmetric windows, a context, iput and
 * iputSignal, test on the collective comm, rmaProgress while it waits),
 * or with --raw through bench_raw_rma.c.  Each rank registers three
 * windows in the same order: the source (sbuf), the one the peer puts
 * into (rbuf), and a page whose first word the peer's signals add to.
 * A rank sees a signal by loading that word, as a GPU would poll it.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "abi/nccl_rma.h"
#include "bench.h"
#include "bench_raw.h"
#include "oob.h"
#include "pattern.h"
#include "zsm_client.h"

enum { RMA_SRC, RMA_DST, RMA_SIG, RMA_NWIN };

/* The signal window: a page, of which word 0 is used. */
#define RMA_SIG_BYTES 4096
/* Signal receives --raw keeps posted. */
#define RMA_RAW_SIG_RECVS 16

struct bench_rma {
	/* The plugin's table (NULL with --raw) and what it gave. */
	void *dl;
	const ncclRma_v14_t *t;
	void *ctx;
	void *listen;
	void *coll;
	void *rctx;
	void *mh[RMA_NWIN];
	/* --raw: this rank's windows as the peer needs them, and the
	 * peer's. */
	struct bench_raw_win mine[RMA_NWIN];
	struct bench_raw_win peer[RMA_NWIN];
	uint64_t *sig;
	/* The value word 0 had after the last signal this rank waited for. */
	uint64_t sig_seen;
};

static const char *const rma_win_name[RMA_NWIN] = {"source", "target",
						   "signal"};

/* A call of the table that must succeed. */
static void rma_check(int r, const char *what)
{
	if (r != ncclSuccess)
		bench_die("%s failed: %s (%d)", what, zsm_client_result_str(r),
			  r);
}

static void rma_open_table(struct bench *b, struct zsm_client_props *props)
{
	struct bench_rma *m = b->rma;
	ncclNetProperties_v12_t p;
	const char *on = getenv("ZSM_RMA");
	int ndev = 0, r;

	m->dl = dlopen(b->o.plugin, RTLD_NOW | RTLD_LOCAL);
	if (!m->dl)
		bench_die("cannot open plugin %s: %s", b->o.plugin, dlerror());
	m->t = dlsym(m->dl, "ncclRmaPlugin_v14");
	if (!m->t)
		bench_die("%s has no ncclRmaPlugin_v14: --rma needs a plugin "
			  "with NCCL 2.30's RMA table",
			  b->o.plugin);
	b->name = m->t->name ? m->t->name : "(null)";
	r = m->t->init(&m->ctx, 0x62656e6368ull, zsm_client_logger);
	if (r != ncclSuccess)
		bench_die("ncclRmaPlugin_v14.init failed: %s (%d)%s",
			  zsm_client_result_str(r), r,
			  on && !strcmp(on, "1")
				  ? ""
				  : " (zsm serves its RMA table only with "
				    "ZSM_RMA=1)");
	rma_check(m->t->devices(&ndev), "ncclRmaPlugin_v14.devices");
	if (b->o.dev >= ndev)
		bench_die("--device %d, but the RMA table has %d device(s)",
			  b->o.dev, ndev);
	memset(&p, 0, sizeof(p));
	rma_check(m->t->getProperties(b->o.dev, &p),
		  "ncclRmaPlugin_v14.getProperties");
	props->name = p.name;
	props->ptr_support = p.ptrSupport;
	props->max_p2p_bytes = p.maxP2pBytes;
	b->max_p2p = p.maxP2pBytes;
}

void bench_rma_open(struct bench *b, struct zsm_client_props *props)
{
	b->rma = calloc(1, sizeof(*b->rma));
	if (!b->rma)
		bench_die("out of memory");
	/* --raw: bench_open_raw opened its RMA endpoint. */
	if (!b->raw)
		rma_open_table(b, props);
}

/* Both ranks' listen handles, in rank order, to each; then the collective
 * connect. */
void bench_rma_connect(struct bench *b)
{
	char h[2][NCCL_NET_HANDLE_MAXSIZE];
	struct bench_rma *m = b->rma;
	void *handles[2] = {h[0], h[1]};
	int me = b->rank, peer = 1 - b->rank;

	if (b->raw)
		return; /* bench_raw_connect did it */
	memset(h, 0, sizeof(h));
	rma_check(m->t->listen(m->ctx, b->o.dev, h[me], &m->listen),
		  "ncclRmaPlugin_v14.listen");
	if (me == 0) {
		BENCH_OOB(oob_send(h[me], sizeof(h[me])));
		BENCH_OOB(oob_recv(h[peer], sizeof(h[peer])));
	} else {
		BENCH_OOB(oob_recv(h[peer], sizeof(h[peer])));
		BENCH_OOB(oob_send(h[me], sizeof(h[me])));
	}
	rma_check(m->t->connect(m->ctx, handles, 2, me, m->listen, &m->coll),
		  "ncclRmaPlugin_v14.connect");
	rma_check(m->t->closeListen(m->listen),
		  "ncclRmaPlugin_v14.closeListen");
	m->listen = NULL;
	BENCH_OOB(oob_barrier());
}

static void rma_windows_raw(struct bench *b, void *const base[RMA_NWIN],
			    const size_t size[RMA_NWIN])
{
	struct bench_rma *m = b->rma;
	int r;

	for (int w = 0; w < RMA_NWIN; w++) {
		r = bench_raw_win_reg(b->raw, base[w], size[w], &m->mine[w]);
		if (r)
			bench_die("fi_mr_reg of the %zu-byte %s window failed: "
				  "%s (%d)",
				  size[w], rma_win_name[w],
				  bench_raw_strerror(r), r);
	}
	if (b->rank == 0) {
		BENCH_OOB(oob_send(m->mine, sizeof(m->mine)));
		BENCH_OOB(oob_recv(m->peer, sizeof(m->peer)));
	} else {
		BENCH_OOB(oob_recv(m->peer, sizeof(m->peer)));
		BENCH_OOB(oob_send(m->mine, sizeof(m->mine)));
	}
	r = bench_raw_sig_listen(b->raw, RMA_RAW_SIG_RECVS);
	if (r)
		bench_die("fi_trecv for signals failed: %s (%d)",
			  bench_raw_strerror(r), r);
}

void bench_rma_windows(struct bench *b)
{
	struct bench_rma *m = b->rma;
	int type = b->o.gpu ? NCCL_PTR_CUDA : NCCL_PTR_HOST;
	void *base[RMA_NWIN];
	size_t size[RMA_NWIN] = {b->sbuf_size, b->rbuf_size, RMA_SIG_BYTES};
	char what[160];

	m->sig = bench_alloc(RMA_SIG_BYTES);
	base[RMA_SRC] = b->sbuf;
	base[RMA_DST] = b->rbuf;
	base[RMA_SIG] = m->sig;
	if (b->raw) {
		rma_windows_raw(b, base, size);
	} else {
		/* Collective: the same order on both ranks.  Signal words
		 * stay in host memory, where this rank polls them. */
		for (int w = 0; w < RMA_NWIN; w++) {
			uint64_t flags =
				w == RMA_SIG
					? NCCL_NET_MR_FLAG_FORCE_SO |
						  NCCL_NET_MR_FLAG_SIGNAL_NEVER_RESET
					: 0;

			snprintf(what, sizeof(what),
				 "regMrSym of the %zu-byte %s window (%s)",
				 size[w], rma_win_name[w],
				 w != RMA_SIG && b->o.gpu ? "NCCL_PTR_CUDA"
							  : "NCCL_PTR_HOST");
			rma_check(m->t->regMrSym(m->coll, base[w], size[w],
						 w == RMA_SIG ? NCCL_PTR_HOST
							      : type,
						 flags, &m->mh[w]),
				  what);
		}
		ncclRmaConfig_v14_t cfg = {
			.nContexts = 1,
			.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF,
			.rankStride = 1,
		};
		rma_check(m->t->createContext(m->coll, &cfg, &m->rctx),
			  "ncclRmaPlugin_v14.createContext");
	}
	BENCH_OOB(oob_barrier());
}

void bench_rma_header(const struct bench *b,
		      const struct zsm_client_props *props, const char *launch)
{
	const char *nv = b->o.verify ? "" : ", no verify";

	if (b->raw)
		printf("# zsm-bench: raw libfabric RMA, provider '%s', domain "
		       "'%s', fi_write, signals by %s, memory %s, reps %d%s%s\n",
		       bench_raw_provider(b->raw), bench_raw_domain(b->raw),
		       bench_raw_mech(b->raw), b->mem, b->o.reps, nv, launch);
	else
		printf("# zsm-bench: plugin '%s' (%s), ncclRma v14, device %d "
		       "'%s', memory %s, reps %d%s%s\n",
		       b->name, b->o.plugin, b->o.dev,
		       props->name ? props->name : "?", b->mem, b->o.reps, nv,
		       launch);
}

/*
 * A put of size bytes from src_off of this rank's source window to
 * dst_off of the peer's target window, with an INC of the peer's signal
 * word after it when sig: its request, or NULL for "later".
 */
static void *rma_post(struct bench *b, size_t size, uint64_t src_off,
		      uint64_t dst_off, int sig)
{
	struct bench_rma *m = b->rma;
	uint32_t peer = (uint32_t)(1 - b->rank);
	void *req = NULL;
	int r;

	if (b->raw) {
		r = bench_raw_put(b->raw, b->sbuf + src_off, size,
				  &m->peer[RMA_DST], dst_off,
				  sig ? &m->peer[RMA_SIG] : NULL, 0, &req);
		if (r)
			bench_die("fi_write of %zu bytes%s failed: %s (%d)",
				  size, sig ? " with its signal" : "",
				  bench_raw_strerror(r), r);
		return req;
	}
	if (sig)
		r = m->t->iputSignal(m->rctx, 0, src_off, m->mh[RMA_SRC], size,
				     dst_off, m->mh[RMA_DST], peer, 0,
				     m->mh[RMA_SIG], 0, NCCL_NET_SIGNAL_OP_INC,
				     true, &req);
	else
		r = m->t->iput(m->rctx, 0, src_off, m->mh[RMA_SRC], size,
			       dst_off, m->mh[RMA_DST], peer, &req);
	if (r != ncclSuccess)
		bench_die("%s of %zu bytes failed: %s (%d)",
			  sig ? "iputSignal" : "iput", size,
			  zsm_client_result_str(r), r);
	return req;
}

static uint64_t rma_ms(uint64_t since)
{
	return (zsm_client_now_ns() - since) / 1000000u;
}

/* rma_post until it gives a request, bounded. */
static void *rma_post_wait(struct bench *b, size_t size, uint64_t src_off,
			   uint64_t dst_off, int sig)
{
	uint64_t t0 = zsm_client_now_ns();
	void *req;

	while (!(req = rma_post(b, size, src_off, dst_off, sig)))
		if (rma_ms(t0) > BENCH_STALL_MS)
			bench_die("%s of %zu bytes gave no request for %d ms",
				  sig ? "iputSignal" : "iput", size,
				  BENCH_STALL_MS);
	return req;
}

/* One test of this rank's own put: 1 when it is done. */
static int rma_test(struct bench *b, void *req, const char *what,
		    size_t size)
{
	size_t len = 0;
	int done = 0, r;

	if (b->raw) {
		r = bench_raw_test(b->raw, req, &done, &len);
		if (r)
			bench_die("%s of %zu bytes failed: %s (%d)", what,
				  size, bench_raw_strerror(r), r);
		return done;
	}
	r = b->rma->t->test(b->rma->coll, req, &done);
	if (r != ncclSuccess)
		bench_die("%s of %zu bytes: test() failed: %s (%d)", what,
			  size, zsm_client_result_str(r), r);
	return done;
}

/* What NCCL's proxy does between tests; --raw's progress applies the
 * peer's signals. */
static void rma_progress(struct bench *b)
{
	int r;

	if (b->raw) {
		r = bench_raw_progress(b->raw);
		if (r)
			bench_die("progress failed, or a signal came for no "
				  "word of this rank's windows: %s (%d)",
				  bench_raw_strerror(r), r);
		return;
	}
	rma_check(b->rma->t->rmaProgress(b->rma->rctx),
		  "ncclRmaPlugin_v14.rmaProgress");
}

static void rma_finish(struct bench *b, void *req, const char *what,
		       size_t size)
{
	uint64_t t0 = zsm_client_now_ns();

	while (!rma_test(b, req, what, size)) {
		rma_progress(b);
		if (rma_ms(t0) > BENCH_STALL_MS)
			bench_die("%s of %zu bytes: not done after %d ms",
				  what, size, BENCH_STALL_MS);
	}
}

/*
 * Wait until the peer's next signal has been added to word 0; meanwhile
 * test *out, this rank's own put in flight (NULL once done), as NCCL's
 * proxy keeps testing what it posted.
 */
static void rma_wait_signal(struct bench *b, void **out, const char *what,
			    size_t size)
{
	struct bench_rma *m = b->rma;
	uint64_t want = m->sig_seen + 1, t0 = zsm_client_now_ns(), v;

	for (;;) {
		/* acquire: pairs with the release add that applied the
		 * peer's signal (the plugin's, or bench_raw_rma.c's), so the
		 * bytes put before it are seen after this load. */
		v = __atomic_load_n(&m->sig[0], __ATOMIC_ACQUIRE);
		if (v >= want)
			break;
		if (out && *out && rma_test(b, *out, what, size))
			*out = NULL;
		rma_progress(b);
		if (rma_ms(t0) > BENCH_STALL_MS)
			bench_die("%s of %zu bytes: the signal word is %llu "
				  "after %d ms, waiting for %llu",
				  what, size, (unsigned long long)v,
				  BENCH_STALL_MS, (unsigned long long)want);
	}
	if (v != want)
		bench_die("%s of %zu bytes: the signal word is %llu, want "
			  "%llu (a signal applied twice?)",
			  what, size, (unsigned long long)v,
			  (unsigned long long)want);
	m->sig_seen = want;
}

static uint64_t rma_slot_off(struct bench *b, unsigned char *buf,
			     size_t buf_size, size_t size, long k)
{
	return (uint64_t)(bench_slot(buf, buf_size, size, k) - buf);
}

/*
 * The barrier before a timed put run, and this rank's start: read before
 * its token goes, so the peer cannot have begun putting before it.  A
 * target whose clock started after the barrier could, once descheduled,
 * find every put already landed and time nothing; this way a run costs
 * at most one extra hop of the out-of-band socket.
 */
static uint64_t rma_barrier_start(void)
{
	char token = 'p';
	uint64_t t0 = zsm_client_now_ns();

	BENCH_OOB(oob_send(&token, 1));
	BENCH_OOB(oob_recv(&token, 1));
	return t0;
}

/*
 * count puts 0 -> 1, up to BENCH_WINDOW in flight, the last with a
 * signal.  Rank 1's seconds are from the barrier to seeing the signal,
 * when every byte has landed; rank 0's (unused) to its last completion.
 * --bidir: both ranks put, and each rank's seconds run until its own
 * puts are done and it has seen the peer's signal.
 */
double bench_rma_put_run(struct bench *b, size_t size, long count)
{
	void *req[BENCH_WINDOW];
	long posted = 0, completed = 0;
	uint64_t t0, last;

	t0 = rma_barrier_start();
	if (b->rank == 1 && !b->o.bidir) {
		rma_wait_signal(b, NULL, "put", size);
		return (double)(zsm_client_now_ns() - t0) / 1e9;
	}
	last = t0;
	while (completed < count) {
		while (posted < count && posted - completed < BENCH_WINDOW) {
			void *q = rma_post(
				b, size, 0,
				rma_slot_off(b, b->rbuf, b->rbuf_size, size,
					     posted),
				posted == count - 1);

			if (!q)
				break;
			req[posted % BENCH_WINDOW] = q;
			posted++;
		}
		if (completed < posted &&
		    rma_test(b, req[completed % BENCH_WINDOW], "put", size)) {
			completed++;
			last = zsm_client_now_ns();
			continue;
		}
		if (rma_ms(last) > BENCH_STALL_MS)
			bench_die("put %ld of %zu bytes: %s after %d ms",
				  completed, size,
				  completed < posted ? "not done"
						     : "no request",
				  BENCH_STALL_MS);
	}
	if (b->o.bidir) {
		rma_wait_signal(b, NULL, "put", size);
		last = zsm_client_now_ns();
	}
	return (double)(last - t0) / 1e9;
}

/* This rank's next put and signal, once its previous one is done. */
static void rma_send(struct bench *b, void **out, size_t size)
{
	if (*out)
		rma_finish(b, *out, "putsignal", size);
	*out = rma_post_wait(b, size, 0, 0, 1);
}

/* Round trips of iputSignal; rank 0's seconds for all of them. */
double bench_rma_putsignal_run(struct bench *b, size_t size, long count)
{
	void *out = NULL;
	uint64_t t0;
	double t;

	BENCH_OOB(oob_barrier());
	t0 = zsm_client_now_ns();
	for (long i = 0; i < count; i++) {
		if (b->rank == 0) {
			rma_send(b, &out, size);
			rma_wait_signal(b, &out, "putsignal", size);
		} else {
			rma_wait_signal(b, &out, "putsignal", size);
			rma_send(b, &out, size);
		}
	}
	t = (double)(zsm_client_now_ns() - t0) / 1e9;
	if (out)
		rma_finish(b, out, "putsignal", size);
	return t;
}

/* Every byte of a put at p, whose signal this rank has seen. */
static void rma_verify_bytes(struct bench *b, const char *what, long k,
			     unsigned char *p, size_t size, uint32_t seed)
{
	const unsigned char *h = bench_host_view(b, p, size);
	long bad = zsm_pattern_check(h, size, seed);

	if (bad >= 0)
		bench_die("verify: %s %ld of %zu bytes: byte %ld is 0x%02x, "
			  "expected 0x%02x, after its signal was seen (it "
			  "came before the bytes, or they were corrupted)",
			  what, k, size, bad, h[bad],
			  zsm_pattern_byte(seed, (size_t)bad));
}

/* Untimed: a window of puts, each of its own pattern into its own slot,
 * the last signalled; rank 1 checks every slot once it sees the signal. */
static void rma_verify_put(struct bench *b, size_t size)
{
	long nv = bench_verify_slots(b, size), k;
	void *q[BENCH_WINDOW];

	for (k = 0; k < nv; k++) {
		if (b->rank == 0)
			bench_fill(b,
				   bench_slot(b->sbuf, b->sbuf_size, size, k),
				   size, bench_seed(size, k));
		else
			bench_poison(b,
				     bench_slot(b->rbuf, b->rbuf_size, size, k),
				     size);
	}
	BENCH_OOB(oob_barrier());
	if (b->rank == 0) {
		for (k = 0; k < nv; k++)
			q[k] = rma_post_wait(
				b, size,
				rma_slot_off(b, b->sbuf, b->sbuf_size, size, k),
				rma_slot_off(b, b->rbuf, b->rbuf_size, size, k),
				k == nv - 1);
		for (k = 0; k < nv; k++)
			rma_finish(b, q[k], "verify put", size);
	} else {
		rma_wait_signal(b, NULL, "verify put", size);
		for (k = 0; k < nv; k++)
			rma_verify_bytes(
				b, "put", k,
				bench_slot(b->rbuf, b->rbuf_size, size, k),
				size, bench_seed(size, k));
	}
	BENCH_OOB(oob_barrier());
}

/* Untimed: a few round trips, each direction its own pattern. */
static void rma_verify_putsignal(struct bench *b, size_t size)
{
	for (long k = 0; k < BENCH_VERIFY_MSGS; k++) {
		uint32_t there = bench_seed(size, k);
		uint32_t back = bench_seed(size, k + 1000);
		void *q;

		bench_poison(b, b->rbuf, size);
		if (b->rank == 0)
			bench_fill(b, b->sbuf, size, there);
		BENCH_OOB(oob_barrier());
		if (b->rank == 1) {
			rma_wait_signal(b, NULL, "verify putsignal", size);
			rma_verify_bytes(b, "putsignal", k, b->rbuf, size,
					 there);
			bench_fill(b, b->sbuf, size, back);
		}
		q = rma_post_wait(b, size, 0, 0, 1);
		rma_finish(b, q, "verify putsignal", size);
		if (b->rank == 0) {
			rma_wait_signal(b, NULL, "verify putsignal", size);
			rma_verify_bytes(b, "putsignal", k, b->rbuf, size,
					 back);
		}
	}
}

void bench_rma_verify(struct bench *b, int test, size_t size)
{
	if (test == BENCH_PUT)
		rma_verify_put(b, size);
	else
		rma_verify_putsignal(b, size);
}

/* Registrations before the comm, the comm before the table, the raw
 * endpoint's registrations before the signal page. */
void bench_rma_close(struct bench *b)
{
	struct bench_rma *m = b->rma;

	if (!m)
		return;
	if (m->t) {
		for (int w = RMA_NWIN - 1; w >= 0; w--)
			if (m->mh[w])
				rma_check(m->t->deregMrSym(m->coll, m->mh[w]),
					  "ncclRmaPlugin_v14.deregMrSym");
		if (m->rctx)
			rma_check(m->t->destroyContext(m->rctx),
				  "ncclRmaPlugin_v14.destroyContext");
		if (m->coll)
			rma_check(m->t->closeColl(m->coll),
				  "ncclRmaPlugin_v14.closeColl");
		if (m->listen)
			rma_check(m->t->closeListen(m->listen),
				  "ncclRmaPlugin_v14.closeListen");
		if (m->ctx)
			rma_check(m->t->finalize(m->ctx),
				  "ncclRmaPlugin_v14.finalize");
	}
	if (m->dl && !getenv("ZSM_CLIENT_KEEP_LOADED"))
		dlclose(m->dl);
	if (b->raw) {
		bench_raw_close(b->raw);
		b->raw = NULL;
	}
	free(m->sig);
	free(m);
	b->rma = NULL;
}
