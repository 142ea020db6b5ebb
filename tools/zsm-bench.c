/* SPDX-License-Identifier: MIT */
/*
 * zsm-bench: point-to-point bandwidth and latency of any NCCL net plugin,
 * two processes driven only through the plugin's exported ncclNet table
 * (test/lib/zsm_client).  Rank 0 sends, rank 1 receives.  The pair is a
 * fork on one host, or two ranks that meet at --rendezvous (started by
 * hand or by mpirun/srun, on one host or two).  --gpu moves data between
 * CUDA buffers (common/cuda_drv), --raw runs the same patterns on
 * libfabric alone (bench_raw.c), --rma times one-sided puts through the
 * plugin's ncclRmaPlugin_v14 or, with --raw, fi_write (bench_rma.c), and
 * --plot draws the CSV files of earlier runs (bench_plot.c).  This file
 * has the main loop, set-up and teardown, and launching; the transfers of
 * stream and ping-pong are bench_p2p.c's.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "bench_plot.h"
#include "bench_raw.h"
#include "common/cuda_drv.h"
#include "oob.h"
#include "zsm_client.h"

static struct bench *bench_g;

void bench_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "zsm-bench: rank %d: ", bench_g ? bench_g->rank : -1);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(NULL);
	/* Rank 1 ends inside oob_finish; rank 0 first takes rank 1 down. */
	if (bench_g && bench_g->rank >= 0)
		oob_finish(OOB_FAIL);
	exit(1);
}

/* The tests that keep a window in flight, timed at the receiver. */
static int bench_streams(int test)
{
	return test == BENCH_STREAM || test == BENCH_PUT;
}

static long bench_iters(const struct bench *b, int test, size_t size)
{
	int streams = bench_streams(test);
	unsigned long long budget = streams ? 1ull << 30 : 128ull << 20;
	unsigned long long most = streams ? 20000u : 2000u;
	unsigned long long n;

	if (b->o.iters)
		return b->o.iters;
	n = budget / (size ? size : 1);
	if (n < 20)
		n = 20;
	return (long)(n > most ? most : n);
}

static int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static const char *bench_test_name(int test)
{
	switch (test) {
	case BENCH_STREAM: return "stream";
	case BENCH_PINGPONG: return "pingpong";
	case BENCH_PUT: return "put";
	default: return "putsignal";
	}
}

/* One run of count transfers of test: its seconds (see bench_run_size). */
static double bench_run_once(struct bench *b, int test, size_t size,
			     long count)
{
	switch (test) {
	case BENCH_STREAM: return bench_stream_run(b, size, count);
	case BENCH_PINGPONG: return bench_pingpong_run(b, size, count);
	case BENCH_PUT: return bench_rma_put_run(b, size, count);
	default: return bench_rma_putsignal_run(b, size, count);
	}
}

static void bench_run_size(struct bench *b, int test, size_t size)
{
	double t[BENCH_MAX_REPS], med, gbps, usec;
	long iters = bench_iters(b, test, size);
	long warmup = b->o.warmup >= 0 ? b->o.warmup
				       : (iters / 10 > 2 ? iters / 10 : 2);
	const char *tname = bench_test_name(test);
	char sz[32];
	int rep;

	oob_set_timeout(b->o.step_timeout_s);
	if (b->o.verify && b->o.rma)
		bench_rma_verify(b, test, size);
	else if (b->o.verify)
		bench_verify(b, test, size);
	if (warmup)
		bench_run_once(b, test, size, warmup);
	for (rep = 0; rep < b->o.reps; rep++)
		t[rep] = bench_run_once(b, test, size, iters);
	/* Streams are timed where the data lands: at the receiver. */
	if (bench_streams(test)) {
		if (b->rank == 1)
			BENCH_OOB(
				oob_send(t, sizeof(t[0]) * (size_t)b->o.reps));
		else
			BENCH_OOB(
				oob_recv(t, sizeof(t[0]) * (size_t)b->o.reps));
	}
	if (b->rank != 0)
		return;
	qsort(t, (size_t)b->o.reps, sizeof(t[0]), bench_cmp_double);
	med = b->o.reps % 2 ? t[b->o.reps / 2]
			    : (t[b->o.reps / 2 - 1] + t[b->o.reps / 2]) / 2;
	if (med <= 0)
		med = 1e-9;
	if (bench_streams(test)) {
		gbps = (double)size * (double)iters / med / 1e9;
		usec = med / (double)iters * 1e6;
	} else {
		gbps = 2.0 * (double)size * (double)iters / med / 1e9;
		usec = med / (double)iters / 2.0 * 1e6;
	}
	printf("%-9s  %8s  %10.4f  %10.2f\n", tname,
	       bench_size_str(size, sz, sizeof(sz)), gbps, usec);
	fflush(stdout);
	if (b->csv) {
		fprintf(b->csv, "%s,%s,%zu,%.6f,%.3f,%s\n", b->name, tname,
			size, gbps, usec, b->mem);
		fflush(b->csv);
	}
}

static void bench_connect(struct bench *b)
{
	char h01[NCCL_NET_HANDLE_MAXSIZE], h10[NCCL_NET_HANDLE_MAXSIZE];
	int both = !!(b->o.tests & BENCH_PINGPONG);
	void *dummy = NULL;
	const char *what;
	int r;

	memset(h01, 0, sizeof(h01));
	memset(h10, 0, sizeof(h10));
	/* 0 -> 1 always; 1 -> 0 for ping-pong.  Receivers listen. */
	if (b->rank == 1) {
		BENCH_CALL(zsm_client_listen(b->c, b->o.dev, h01, &b->listen));
		BENCH_OOB(oob_send(h01, sizeof(h01)));
		if (both)
			BENCH_OOB(oob_recv(h10, sizeof(h10)));
	} else {
		if (both) {
			BENCH_CALL(zsm_client_listen(b->c, b->o.dev, h10,
						     &b->listen));
			BENCH_OOB(oob_send(h10, sizeof(h10)));
		}
		BENCH_OOB(oob_recv(h01, sizeof(h01)));
	}
	if (b->rank == 0)
		r = zsm_client_connect_accept(
			b->c, b->o.dev, h01, b->listen, &b->send,
			both ? &b->recv : &dummy, BENCH_CONNECT_MS, &what);
	else
		r = zsm_client_connect_accept(
			b->c, b->o.dev, both ? h10 : NULL, b->listen,
			both ? &b->send : &dummy, &b->recv, BENCH_CONNECT_MS,
			&what);
	if (r)
		bench_die("%s failed: %s (%d)", what, zsm_client_result_str(r),
			  r);
	if (b->listen) {
		BENCH_CALL(zsm_client_close_listen(b->c, b->listen));
		b->listen = NULL;
	}
	BENCH_OOB(oob_barrier());
}

/* --raw: one endpoint per rank; the addresses cross the socketpair. */
static void bench_raw_connect(struct bench *b)
{
	unsigned char mine[BENCH_RAW_ADDR_MAX], peer[BENCH_RAW_ADDR_MAX];
	size_t len = sizeof(mine);
	int r;

	memset(mine, 0, sizeof(mine));
	r = bench_raw_name(b->raw, mine, &len);
	if (r)
		bench_die("fi_getname failed: %s (%d)", bench_raw_strerror(r),
			  r);
	if (b->rank == 0) {
		BENCH_OOB(oob_send(mine, sizeof(mine)));
		BENCH_OOB(oob_recv(peer, sizeof(peer)));
	} else {
		BENCH_OOB(oob_recv(peer, sizeof(peer)));
		BENCH_OOB(oob_send(mine, sizeof(mine)));
	}
	r = bench_raw_set_peer(b->raw, peer);
	if (r)
		bench_die("fi_av_insert failed: %s (%d)", bench_raw_strerror(r),
			  r);
	BENCH_OOB(oob_barrier());
}

void *bench_alloc(size_t size)
{
	void *p;

	size = (size + 4095) / 4096 * 4096;
	p = aligned_alloc(4096, size ? size : 4096);
	if (!p)
		bench_die("out of memory for %zu bytes", size);
	memset(p, 0, size);
	return p;
}

/* --gpu: both buffers on this rank's device, and a host copy for checks. */
static void bench_setup_gpu_buffers(struct bench *b, size_t max)
{
	char why[BENCH_WHY_MAX];

	if (zsm_cuda_drv_alloc(&b->cu, b->sbuf_size, &b->sdev, why,
			       sizeof(why)) ||
	    zsm_cuda_drv_alloc(&b->cu, b->rbuf_size, &b->rdev, why,
			       sizeof(why)) ||
	    zsm_cuda_drv_memset(&b->cu, b->sdev, 0, b->sbuf_size, why,
				sizeof(why)) ||
	    zsm_cuda_drv_memset(&b->cu, b->rdev, 0, b->rbuf_size, why,
				sizeof(why)))
		bench_die("%s", why);
	b->sbuf = (unsigned char *)(uintptr_t)b->sdev;
	b->rbuf = (unsigned char *)(uintptr_t)b->rdev;
	b->stage = bench_alloc(max ? max : 1);
}

static void bench_setup_buffers(struct bench *b)
{
	int type = b->o.gpu ? NCCL_PTR_CUDA : NCCL_PTR_HOST;
	size_t max = 0;
	int i;

	for (i = 0; i < b->o.nsizes; i++)
		if (b->o.sizes[i] > max)
			max = b->o.sizes[i];
	b->sbuf_size = max ? max : 1;
	b->rbuf_size = b->sbuf_size;
	if (b->sbuf_size * BENCH_WINDOW <= BENCH_RECV_REGION_MAX)
		b->rbuf_size = b->sbuf_size * BENCH_WINDOW;
	/* Distinct send slots too, so verification can keep a window. */
	b->sbuf_size = b->rbuf_size;
	if (b->o.gpu) {
		bench_setup_gpu_buffers(b, max);
	} else {
		b->sbuf = bench_alloc(b->sbuf_size);
		b->rbuf = bench_alloc(b->rbuf_size);
	}
	if (b->o.rma) {
		bench_rma_windows(b);
		return;
	}
	if (b->raw) {
		int r = bench_raw_reg(b->raw, b->sbuf, b->sbuf_size);

		if (!r)
			r = bench_raw_reg(b->raw, b->rbuf, b->rbuf_size);
		if (r)
			bench_die("fi_mr_reg failed: %s (%d)",
				  bench_raw_strerror(r), r);
		return;
	}
	if (b->send)
		BENCH_CALL(zsm_client_reg_mr(b->c, b->send, b->sbuf,
					     b->sbuf_size, type, &b->smh));
	if (b->recv)
		BENCH_CALL(zsm_client_reg_mr(b->c, b->recv, b->rbuf,
					     b->rbuf_size, type, &b->rmh));
}

static void bench_free_buffers(struct bench *b)
{
	char why[BENCH_WHY_MAX];

	if (!b->o.gpu) {
		free(b->sbuf);
		free(b->rbuf);
	} else {
		if (b->sdev &&
		    zsm_cuda_drv_free(&b->cu, b->sdev, why, sizeof(why)))
			fprintf(stderr, "zsm-bench: rank %d: %s\n", b->rank,
				why);
		if (b->rdev &&
		    zsm_cuda_drv_free(&b->cu, b->rdev, why, sizeof(why)))
			fprintf(stderr, "zsm-bench: rank %d: %s\n", b->rank,
				why);
		free(b->stage);
		zsm_cuda_drv_close(&b->cu);
	}
	b->sbuf = b->rbuf = b->stage = NULL;
	b->sdev = b->rdev = 0;
}

/* Registrations go before the memory they cover. */
static void bench_teardown(struct bench *b)
{
	if (b->o.rma) {
		bench_rma_close(b);
		bench_free_buffers(b);
		return;
	}
	if (b->raw) {
		bench_raw_close(b->raw);
		bench_free_buffers(b);
		return;
	}
	if (b->smh)
		BENCH_CALL(zsm_client_dereg_mr(b->c, b->send, b->smh));
	if (b->rmh)
		BENCH_CALL(zsm_client_dereg_mr(b->c, b->recv, b->rmh));
	if (b->send)
		BENCH_CALL(zsm_client_close_send(b->c, b->send));
	if (b->recv)
		BENCH_CALL(zsm_client_close_recv(b->c, b->recv));
	BENCH_CALL(zsm_client_finalize(b->c));
	zsm_client_close(b->c);
	bench_free_buffers(b);
}

static void bench_open_plugin(struct bench *b, struct zsm_client_props *props)
{
	int ndev = 0, r;

	r = zsm_client_open(b->o.plugin, b->o.abi, &b->c);
	if (r)
		bench_die("cannot open plugin %s: %s", b->o.plugin,
			  zsm_client_result_str(r));
	b->name = zsm_client_name(b->c);
	BENCH_CALL(zsm_client_init(b->c, 0x62656e6368ull));
	BENCH_CALL(zsm_client_devices(b->c, &ndev));
	if (b->o.dev >= ndev)
		bench_die("--device %d, but the plugin has %d device(s)",
			  b->o.dev, ndev);
	BENCH_CALL(zsm_client_get_properties(b->c, b->o.dev, props));
	b->max_p2p = props->max_p2p_bytes;
	if (zsm_client_abi(b->c) == 8 && b->max_p2p > INT_MAX)
		b->max_p2p = INT_MAX;
}

static void bench_open_raw(struct bench *b)
{
	const char *why = NULL;
	int r = bench_raw_open(&b->raw, b->o.rma, &why);

	if (r)
		bench_die("--raw: %s: %s (%d)", why ? why : "open",
			  bench_raw_strerror(r), r);
	b->name = "raw";
	b->max_p2p = bench_raw_max_msg(b->raw);
	/* Receive sizes travel as int, as in ncclNet v8. */
	if (b->max_p2p > INT_MAX)
		b->max_p2p = INT_MAX;
}

/* What one rank found out about --gpu; it crosses the socket as is. */
struct bench_gpu_report {
	int32_t ordinal;
	char plugin_why[BENCH_WHY_MAX];
	char cuda_why[BENCH_WHY_MAX];
};

/* This rank's part: the plugin's ptrSupport and its own CUDA device. */
static void bench_gpu_probe(struct bench *b,
			    const struct zsm_client_props *props,
			    struct bench_gpu_report *rep)
{
	char why[BENCH_WHY_MAX - 64];
	int r;

	memset(rep, 0, sizeof(*rep));
	rep->ordinal = b->o.gpu_ord[b->rank];
	if (!(props->ptr_support & NCCL_PTR_CUDA))
		snprintf(rep->plugin_why, sizeof(rep->plugin_why),
			 "plugin '%s' does not take CUDA buffers (its "
			 "ptrSupport 0x%x lacks NCCL_PTR_CUDA)",
			 b->name, (unsigned)props->ptr_support);
	r = zsm_cuda_drv_open(&b->cu, why, sizeof(why));
	if (!r)
		r = zsm_cuda_drv_use_device(&b->cu, rep->ordinal, why,
					    sizeof(why));
	/* Missing driver or device: skip.  Anything else is a failure. */
	if (r == -ENOENT || r == -ENOSYS || r == -ENODEV)
		snprintf(rep->cuda_why, sizeof(rep->cuda_why),
			 "CUDA is not available: %s", why);
	else if (r)
		bench_die("CUDA device %d: %s", rep->ordinal, why);
}

/* Append "; <prefix><text>" (no "; " first) when text is not empty. */
static void bench_why_add(char *line, size_t len, const char *prefix,
			  const char *text)
{
	size_t used = strlen(line);

	if (text[0] && used < len)
		snprintf(line + used, len - used, "%s%s%s", used ? "; " : "",
			 prefix, text);
}

/*
 * --gpu: both ranks check, rank 0 prints the one line that says why the
 * pair cannot run (for both ranks) and tells rank 1, and both skip
 * together.  Returns OOB_PASS to go on or OOB_SKIP.
 */
int bench_gpu_check(struct bench *b,
		    const struct zsm_client_props *props)
{
	struct bench_gpu_report mine, peer;
	int32_t verdict = OOB_PASS;

	bench_gpu_probe(b, props, &mine);
	if (b->rank == 1) {
		BENCH_OOB(oob_send(&mine, sizeof(mine)));
		BENCH_OOB(oob_recv(&verdict, sizeof(verdict)));
		return verdict;
	}
	BENCH_OOB(oob_recv(&peer, sizeof(peer)));
	peer.plugin_why[sizeof(peer.plugin_why) - 1] = '\0';
	peer.cuda_why[sizeof(peer.cuda_why) - 1] = '\0';
	snprintf(b->mem, sizeof(b->mem), "gpu%d->gpu%d", (int)mine.ordinal,
		 (int)peer.ordinal);
	if (mine.plugin_why[0] || mine.cuda_why[0] || peer.plugin_why[0] ||
	    peer.cuda_why[0]) {
		char line[4 * BENCH_WHY_MAX] = "";

		verdict = OOB_SKIP;
		/* One reason per cause; a rank is named when they differ. */
		bench_why_add(line, sizeof(line), "",
			      mine.plugin_why[0] ? mine.plugin_why
						 : peer.plugin_why);
		if (!strcmp(mine.cuda_why, peer.cuda_why)) {
			bench_why_add(line, sizeof(line), "", mine.cuda_why);
		} else {
			bench_why_add(line, sizeof(line), "rank 0: ",
				      mine.cuda_why);
			bench_why_add(line, sizeof(line), "rank 1: ",
				      peer.cuda_why);
		}
		fprintf(stderr, "zsm-bench: --gpu %s skipped: %s\n", b->mem,
			line);
		fflush(stderr);
	}
	BENCH_OOB(oob_send(&verdict, sizeof(verdict)));
	return verdict;
}

/*
 * --rendezvous: this process is one of the launch's ranks and meets its
 * partner over TCP instead of forking it.  Without it, a launcher that
 * started several copies gets one note: each runs its own forked pair.
 */
static void bench_launch(struct bench *b)
{
	struct oob_launch l = {
		.rank = b->o.launch_rank,
		.nranks = b->o.launch_nranks,
		.rendezvous = b->o.rendezvous,
		.source = NULL,
	};

	if (oob_launch_resolve(&l, "zsm-bench"))
		exit(1);
	if (!b->o.rendezvous)
		return;
	if (l.nranks != 2) {
		fprintf(stderr,
			"zsm-bench measures one pair: run it with 2 ranks (%s "
			"gave %d)\n",
			l.source, l.nranks);
		exit(1);
	}
	if (l.rank > 1) {
		fprintf(stderr, "zsm-bench: rank %d (from %s) is not 0 or 1\n",
			l.rank, l.source);
		exit(1);
	}
	if (oob_join(&l, b->o.step_timeout_s)) {
		fprintf(stderr,
			"zsm-bench: rank %d: could not meet the other rank at "
			"%s\n",
			l.rank, l.rendezvous);
		exit(1);
	}
	b->launch_source = l.source;
}

/*
 * --coll: zsm-bench-coll, beside this program, with the same arguments.
 * It is a program of its own because it calls zsm's API from the shared
 * library, where this one links zsm's internals (--raw's device
 * discovery): in one program the API would bind to those copies instead.
 */
static int bench_exec_coll(char **argv)
{
	char self[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n <= 0) {
		fprintf(stderr, "zsm-bench: --coll: cannot find this program "
				"(/proc/self/exe) to find zsm-bench-coll\n");
		return 1;
	}
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	snprintf(path, sizeof(path), "%s/zsm-bench-coll", slash ? self : ".");
	fflush(NULL);
	execv(path, argv);
	fprintf(stderr, "zsm-bench: --coll runs %s, which failed: %s\n", path,
		strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	static const int order[] = { BENCH_STREAM, BENCH_PINGPONG, BENCH_PUT,
				     BENCH_PUTSIGNAL };
	struct zsm_client_props props;
	struct bench b;
	int t, i, r;

	/* --plot draws earlier runs; it starts no peer and no transport. */
	if (argc > 1 && !strcmp(argv[1], "--plot"))
		return bench_plot(argc - 2, argv + 2);
	memset(&b, 0, sizeof(b));
	memset(&props, 0, sizeof(props));
	b.rank = -1;
	snprintf(b.mem, sizeof(b.mem), "host");
	bench_g = &b;
	bench_parse(&b.o, argc, argv);
	/* --coll is zsm-bench-coll, which starts its own ranks. */
	if (b.o.coll)
		return bench_exec_coll(argv);
	/* Nothing here may touch CUDA: oob_start forks. */
	bench_launch(&b);
	r = oob_start(b.o.step_timeout_s);
	if (r < 0)
		bench_die("cannot start the pair");
	b.rank = r;
	if (b.o.raw)
		bench_open_raw(&b);
	if (b.o.rma)
		bench_rma_open(&b, &props);
	else if (!b.o.raw)
		bench_open_plugin(&b, &props);
	if (b.o.gpu && bench_gpu_check(&b, &props) == OOB_SKIP) {
		bench_teardown(&b);
		r = oob_finish(OOB_SKIP);
		return r == OOB_FAIL ? 1 : OOB_SKIP;
	}
	/*
	 * Rank 0 alone writes the CSV, and only once the run can start: a
	 * skip leaves no empty file, and rank 1 on a shared file system
	 * does not truncate rank 0's.
	 */
	if (b.rank == 0 && b.o.csv) {
		b.csv = fopen(b.o.csv, "w");
		if (!b.csv)
			bench_die("cannot write %s: %s", b.o.csv,
				  strerror(errno));
	}

	/* Sizes the transport cannot carry are left out before allocating. */
	for (i = 0, t = 0; i < b.o.nsizes; i++) {
		if (b.o.sizes[i] <= b.max_p2p)
			b.o.sizes[t++] = b.o.sizes[i];
		else if (b.rank == 0)
			printf("# skipping %zu bytes: above %s %zu\n",
			       b.o.sizes[i],
			       b.raw ? "max_msg_size" : "maxP2pBytes",
			       b.max_p2p);
	}
	b.o.nsizes = t;
	if (!b.o.nsizes)
		bench_die("no size within %zu bytes", b.max_p2p);

	if (b.raw)
		bench_raw_connect(&b);
	if (b.o.rma)
		bench_rma_connect(&b);
	else if (!b.raw)
		bench_connect(&b);
	bench_setup_buffers(&b);
	if (b.rank == 0) {
		char launch[256] = "";

		if (b.launch_source)
			snprintf(launch, sizeof(launch),
				 ", pair met at %s (ranks from %s)",
				 b.o.rendezvous, b.launch_source);
		if (b.o.rma)
			bench_rma_header(&b, &props, launch);
		else if (b.raw)
			printf("# zsm-bench: raw libfabric, provider '%s', "
			       "domain '%s', memory %s, reps %d%s%s\n",
			       bench_raw_provider(b.raw),
			       bench_raw_domain(b.raw), b.mem, b.o.reps,
			       b.o.verify ? "" : ", no verify", launch);
		else
			printf("# zsm-bench: plugin '%s' (%s), ncclNet v%d, "
			       "device %d '%s', memory %s, reps %d%s%s\n",
			       b.name, b.o.plugin, zsm_client_abi(b.c),
			       b.o.dev, props.name ? props.name : "?", b.mem,
			       b.o.reps, b.o.verify ? "" : ", no verify",
			       launch);
		printf("%-9s  %8s  %10s  %10s\n", "test", "size", "GB/s",
		       "usec");
		fflush(stdout);
		if (b.csv) {
			fprintf(b.csv, "plugin,test,size,gbps,usec,mem\n");
			fflush(b.csv);
		}
	}
	for (t = 0; t < 4; t++) {
		if (!(b.o.tests & order[t]))
			continue;
		for (i = 0; i < b.o.nsizes; i++)
			bench_run_size(&b, order[t], b.o.sizes[i]);
	}
	BENCH_OOB(oob_barrier());
	if (b.flush_reqs + b.flush_null)
		printf("# rank %d iflush: %ld gave a request, %ld gave none\n",
		       b.rank, b.flush_reqs, b.flush_null);
	bench_teardown(&b);
	if (b.csv)
		fclose(b.csv);
	r = oob_finish(OOB_PASS);
	return r == OOB_PASS ? 0 : r == OOB_SKIP ? OOB_SKIP : 1;
}
