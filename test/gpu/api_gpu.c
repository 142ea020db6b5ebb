/* SPDX-License-Identifier: MIT */
/*
 * api_gpu: zsm's own API (include/zsm/zsm.h) on a GPU, two ranks forked
 * by this process, both on one GPU.  With --hosts 2 (default) the ranks
 * are two hosts to zsm (a ZSM_HOSTID each: the network path); with
 * --hosts 1 one host (the same-host path).  Host code only: cc against
 * cudart; buffers are filled and read with cudaMemcpy.
 *
 *   coll      AllGather and AlltoAll, in place and out of place, on
 *             cudaMalloc windows at 1 B .. 64 MiB per rank, every byte and
 *             guard checked, 3 rounds each; the 64 MiB AllGather timed.
 *   putsignal zsm_put_signal of 1 B .. 1 MiB from rank to rank, both ways
 *             at once, waited with zsm_wait_signal, checked; ctx 0..3.
 *   pingpong  8-byte put-signal round trips (10^4), timed one by one from
 *             the host as test/gpu/nccl_rma.c times ncclPutSignal's.
 *
 * With CUPTI there (libcupti, found at run time), the CUDA API calls the
 * whole process makes during the timed AllGathers and the ping-pong are
 * counted, every thread of zsm's included: the check wants 0 kernel and
 * graph launches.
 *
 * Prints "CHECK <what>: PASS|FAIL ..." and "PINGPONG median <us> us",
 * "ALLGATHER 64MiB median <ms> ms <GB/s> GB/s"; exit 0 all passed, 1 a
 * failure, 77 no GPU.  Every wait has a deadline; a rank that hangs is
 * killed by the parent after --deadline seconds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime.h>
#if __has_include(<cupti.h>)
#include <cupti.h>
#define HAVE_CUPTI 1
#endif
#include <dlfcn.h>

#include <zsm/zsm.h>

#define GUARD 256
#define MAXB (64UL << 20)

static int me, nranks = 2, hosts = 2;
static long iters = 10000;
static int deadline_s = 600;
static int legacy; /* -l: CUDA's legacy default stream (NULL), as torch's */
static zsm_comm_t comm;
static cudaStream_t stream;
static char *dsend, *drecv, *hbuf;
static zsm_window_t wsend, wrecv;
static int failed;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void check(int ok, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void check(int ok, const char *what, const char *fmt, ...)
{
	char d[512] = "";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d, sizeof(d), fmt, ap);
	va_end(ap);
	printf("CHECK r%d %s: %s %s\n", me, what, ok ? "PASS" : "FAIL", d);
	fflush(stdout);
	if (!ok)
		failed = 1;
}

/* The stream done, or an error: zsm's async error, CUDA's, the time. */
static int sync_stream(const char *what)
{
	double end = now_s() + 120;
	unsigned long spins = 0;

	for (;;) {
		cudaError_t e = cudaStreamQuery(stream);
		int a = 0;

		if (e == cudaSuccess)
			return 0;
		if (e != cudaErrorNotReady) {
			check(0, what, "cuda: %s", cudaGetErrorString(e));
			return -1;
		}
		if ((++spins & 1023) == 0) {
			if (!zsm_comm_get_async_error(comm, &a) && a) {
				check(0, what, "zsm async error %d (%s)", a,
				      zsm_strerror(a));
				return -1;
			}
			if (now_s() > end) {
				check(0, what, "the stream was not done "
					       "after 120 s");
				return -1;
			}
		}
	}
}

static unsigned char pat(int rank, size_t i, int round)
{
	return (unsigned char)(rank * 37 + (i % 251) * 3 + (i >> 12) + round);
}

static int zcall(int ret, const char *what)
{
	if (ret)
		check(0, what, "returned %d (%s)", ret, zsm_strerror(ret));
	return ret;
}

/* One collective at size b, checked: kind 0 AllGather, 1 AlltoAll. */
static void coll_once(int kind, size_t b, int in_place, int round)
{
	size_t total = b * (size_t)nranks, i;
	char what[96];
	const void *src;
	int ret, bad = 0;

	snprintf(what, sizeof(what), "%s %s %zu B round %d",
		 kind ? "alltoall" : "allgather",
		 in_place ? "in-place" : "out-of-place", b, round);
	/* send pattern: for AlltoAll, block j byte i is pat(me, j*b+i) */
	for (i = 0; i < (kind ? total : b); i++)
		hbuf[i] = (char)pat(me, i, round);
	memset(hbuf + total, 0x5a, total + GUARD);
	cudaMemcpy(drecv, hbuf + total, total + GUARD, cudaMemcpyHostToDevice);
	if (in_place)
		cudaMemcpy(drecv + (kind ? 0 : (size_t)me * b), hbuf,
			   kind ? total : b, cudaMemcpyHostToDevice);
	else
		cudaMemcpy(dsend, hbuf, kind ? total : b,
			   cudaMemcpyHostToDevice);
	/* The fills ran on the legacy stream, which a non-blocking stream
	 * does not wait for: done before the collective's Ready says so. */
	cudaDeviceSynchronize();
	src = in_place ? (const void *)(drecv + (kind ? 0 : (size_t)me * b))
		       : dsend;
	ret = kind ? zsm_all_to_all(src, drecv, b, zsm_uint8, comm, stream)
		   : zsm_all_gather(src, drecv, b, zsm_uint8, comm, stream);
	if (zcall(ret, what) || sync_stream(what))
		return;
	cudaMemcpy(hbuf, drecv, total + GUARD, cudaMemcpyDeviceToHost);
	for (int p = 0; p < nranks && !bad; p++)
		for (i = 0; i < b; i++) {
			size_t at = kind ? (size_t)me * b + i : i;

			if ((unsigned char)hbuf[(size_t)p * b + i] !=
			    pat(p, at, round)) {
				check(0, what, "block %d byte %zu is %#x, not "
					       "%#x",
				      p, i,
				      (unsigned char)hbuf[(size_t)p * b + i],
				      pat(p, at, round));
				bad = 1;
				break;
			}
		}
	for (i = 0; i < GUARD && !bad; i++)
		if ((unsigned char)hbuf[total + i] != 0x5a) {
			check(0, what, "guard byte %zu overwritten", i);
			bad = 1;
		}
	if (!bad && round == 0)
		check(1, what, "%s", "exact");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* ------------------------------------------------------------------ CUPTI */

enum { C_KERNEL, C_GRAPH, C_COPY, C_MEMOP, C_N };
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
	else if (strstr(f, "Launch"))
		k = C_KERNEL; /* kernels, host functions, cooperative */
	else if (!strncmp(f, "cudaMemcpy", 10) || !strncmp(f, "cuMemcpy", 8))
		k = C_COPY;
	else if (strstr(f, "StreamBatchMemOp") || strstr(f, "StreamWaitValue") ||
		 strstr(f, "StreamWriteValue"))
		k = C_MEMOP;
	else
		return;
	/* Relaxed: counts from any thread, read after counting stops. */
	__atomic_fetch_add(&api_count[k], 1, __ATOMIC_RELAXED);
}

static void cupti_init(void)
{
	static const char *names[] = {
		"libcupti.so", "libcupti.so.13", "libcupti.so.12",
		"/usr/local/cuda/lib64/libcupti.so",
		"/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
	};
	void *h = NULL;

	for (size_t i = 0; !h && i < sizeof(names) / sizeof(names[0]); i++)
		h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(cupti_why, sizeof(cupti_why), "no libcupti");
		return;
	}
	p_subscribe = (__typeof__(p_subscribe))dlsym(h, "cuptiSubscribe");
	p_enable_domain =
		(__typeof__(p_enable_domain))dlsym(h, "cuptiEnableDomain");
	if (!p_subscribe || !p_enable_domain ||
	    p_subscribe(&cupti_sub, (CUpti_CallbackFunc)api_seen, NULL) !=
		    CUPTI_SUCCESS) {
		snprintf(cupti_why, sizeof(cupti_why),
			 "cuptiSubscribe unavailable or failed");
		return;
	}
	cupti_ok = 1;
}

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

/* The counts of a phase, and the zero-kernel check on them. */
static void cupti_report(const char *phase)
{
	unsigned long c[C_N];

	if (!cupti_ok) {
		printf("CUPTI r%d %s: not counted (%s)\n", me, phase,
		       cupti_why);
		return;
	}
	for (int k = 0; k < C_N; k++)
		c[k] = __atomic_exchange_n(&api_count[k], 0, __ATOMIC_RELAXED);
	printf("CUPTI r%d %s: %lu kernel launches, %lu graph launches, %lu "
	       "copies, %lu stream memops\n",
	       me, phase, c[C_KERNEL], c[C_GRAPH], c[C_COPY], c[C_MEMOP]);
	check(c[C_KERNEL] + c[C_GRAPH] == 0, phase, "%s",
	      "no kernel or graph launch in the process");
}

static void coll_part(void)
{
	static const size_t sizes[] = {1, 4097, 1UL << 20, 16UL << 20, MAXB};
	double t[20];

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (int kind = 0; kind < 2; kind++)
			for (int ip = 0; ip < 2; ip++)
				for (int r = 0; r < 3; r++)
					coll_once(kind, sizes[s], ip, r);
	/* 64 MiB AllGather, out of place, timed call by call */
	cupti_count(1);
	for (int i = 0; i < 20; i++) {
		double t0 = now_s();

		if (zcall(zsm_all_gather(dsend, drecv, MAXB, zsm_uint8, comm,
					 stream),
			  "allgather timing") ||
		    sync_stream("allgather timing"))
			return;
		t[i] = now_s() - t0;
	}
	cupti_count(0);
	cupti_report("20 AllGathers of 64 MiB");
	qsort(t, 20, sizeof(t[0]), cmp_double);
	if (me == 0)
		printf("ALLGATHER 64MiB median %.3f ms %.2f GB/s (bytes "
		       "received per rank / time)\n",
		       t[10] * 1e3,
		       (double)MAXB * (nranks - 1) / t[10] / 1e9);
}

static void putsignal_part(void)
{
	static const size_t sizes[] = {1, 8, 4097, 1UL << 20};
	int peer = 1 - me;

	cudaMemset(drecv, 0x5a, MAXB);
	cudaDeviceSynchronize();
	{
		zsm_wait_signal_desc_t d0 = {1, peer, 0, 0};

		/* both cleared before either puts */
		if (zcall(zsm_signal(peer, 0, 0, 0, comm, stream), "barrier") ||
		    zcall(zsm_wait_signal(1, &d0, comm, stream), "barrier") ||
		    sync_stream("barrier"))
			return;
	}
	for (int ctx = 0; ctx < ZSM_MAX_CTX; ctx++)
		for (size_t s = 0; s < 4; s++) {
			size_t b = sizes[s], i;
			char what[64];
			zsm_wait_signal_desc_t d = {1, peer, 0, ctx};

			snprintf(what, sizeof(what), "putsignal %zu B ctx %d",
				 b, ctx);
			for (i = 0; i < b; i++)
				hbuf[i] = (char)pat(me, i, ctx);
			cudaMemcpy(dsend, hbuf, b, cudaMemcpyHostToDevice);
			cudaDeviceSynchronize();
			if (zcall(zsm_put_signal(dsend, b, zsm_uint8, peer,
						 wrecv, 0, 0, ctx, 0, comm,
						 stream),
				  what) ||
			    zcall(zsm_wait_signal(1, &d, comm, stream), what) ||
			    sync_stream(what))
				return;
			cudaMemcpy(hbuf, drecv, b + GUARD,
				   cudaMemcpyDeviceToHost);
			for (i = 0; i < b; i++)
				if ((unsigned char)hbuf[i] != pat(peer, i, ctx))
					break;
			if (i == b)
				for (; i < b + GUARD; i++)
					if ((unsigned char)hbuf[i] != 0x5a)
						break;
			check(i == b + GUARD, what, "first bad byte %zu", i);
			/* cleared for the next round before the barrier
			 * that lets the peer put again */
			cudaMemset(drecv, 0x5a, MAXB);
			cudaDeviceSynchronize();
			zsm_signal(peer, 0, ctx, 0, comm, stream);
			zsm_wait_signal(1, &d, comm, stream);
			if (sync_stream(what))
				return;
		}
}

static void pingpong_part(void)
{
	int peer = 1 - me;
	zsm_wait_signal_desc_t d = {1, peer, 0, 0};
	double *rt = calloc((size_t)iters, sizeof(double));
	long i;

	cudaMemcpy(dsend, "pingpong", 8, cudaMemcpyHostToDevice);
	cupti_count(1);
	for (i = 0; rt && i < iters; i++) {
		double t0 = now_s();
		int ret;

		if (me == 0) {
			ret = zsm_put_signal(dsend, 8, zsm_uint8, peer, wrecv,
					     (size_t)(i % 1024) * 8, 0, 0, 0,
					     comm, stream);
			if (!ret)
				ret = zsm_wait_signal(1, &d, comm, stream);
		} else {
			ret = zsm_wait_signal(1, &d, comm, stream);
			if (!ret)
				ret = zsm_put_signal(
					dsend, 8, zsm_uint8, peer, wrecv,
					(size_t)(i % 1024) * 8, 0, 0, 0, comm,
					stream);
		}
		if (zcall(ret, "pingpong") || sync_stream("pingpong"))
			break;
		rt[i] = now_s() - t0;
	}
	cupti_count(0);
	cupti_report("the ping-pong");
	if (rt && i == iters) {
		qsort(rt, (size_t)iters, sizeof(double), cmp_double);
		if (me == 0)
			printf("PINGPONG 8B median %.1f us (p10 %.1f, p90 "
			       "%.1f) over %ld round trips\n",
			       rt[iters / 2] * 1e6, rt[iters / 10] * 1e6,
			       rt[iters * 9 / 10] * 1e6, iters);
		cudaMemcpy(hbuf, drecv, 8, cudaMemcpyDeviceToHost);
		check(!memcmp(hbuf, "pingpong", 8), "pingpong bytes", "%s", "exact");
	}
	free(rt);
}

static int rank_main(zsm_unique_id_t id, const char *parts)
{
	char hid[32];
	int ret;

	snprintf(hid, sizeof(hid), "zsm-api-gpu-%d", hosts == 1 ? 0 : me);
	setenv("ZSM_HOSTID", hid, 1);
	if (cudaSetDevice(0) != cudaSuccess || cudaFree(0) != cudaSuccess) {
		printf("rank %d: no GPU\n", me);
		return 77;
	}
	if (!legacy)
		cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
	cupti_init();
	ret = zsm_comm_init_rank(&comm, nranks, id, me);
	if (zcall(ret, "init"))
		return 1;
	hbuf = malloc(2 * MAXB * (size_t)nranks + 2 * GUARD);
	if (!hbuf ||
	    cudaMalloc((void **)&dsend, MAXB * (size_t)nranks) != cudaSuccess ||
	    cudaMalloc((void **)&drecv, MAXB * (size_t)nranks + GUARD) !=
		    cudaSuccess)
		return 1;
	if (zcall(zsm_comm_window_register(comm, dsend, MAXB * (size_t)nranks,
					   &wsend, 0),
		  "register send") ||
	    zcall(zsm_comm_window_register(comm, drecv,
					   MAXB * (size_t)nranks + GUARD,
					   &wrecv, 0),
		  "register recv"))
		return 1;
	if (strstr(parts, "putsignal"))
		putsignal_part();
	if (!failed && strstr(parts, "pingpong"))
		pingpong_part();
	if (!failed && strstr(parts, "coll"))
		coll_part();
	zsm_comm_window_deregister(comm, wsend);
	zsm_comm_window_deregister(comm, wrecv);
	zcall(zsm_comm_destroy(comm), "destroy");
	return failed;
}

int main(int argc, char **argv)
{
	const char *parts = "putsignal,pingpong,coll";
	zsm_unique_id_t id;
	pid_t pid[2];
	int opt, rc = 0, st;
	double end;

	while ((opt = getopt(argc, argv, "p:h:n:d:l")) != -1) {
		switch (opt) {
		case 'l': legacy = 1; break;
		case 'p': parts = optarg; break;
		case 'h': hosts = atoi(optarg); break;
		case 'n': iters = atol(optarg); break;
		case 'd': deadline_s = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-p PARTS] [-h HOSTS] "
					"[-n PINGPONGS] [-d DEADLINE_S]\n",
				argv[0]);
			return 2;
		}
	}
	if (zsm_get_unique_id(&id)) {
		fprintf(stderr, "zsm_get_unique_id failed\n");
		return 1;
	}
	for (me = 0; me < 2; me++) {
		pid[me] = fork();
		if (pid[me] == 0) {
			int code = rank_main(id, parts);

			fflush(stdout);
			_exit(code);
		}
	}
	end = now_s() + deadline_s;
	for (int left = 2; left;) {
		pid_t w = waitpid(-1, &st, WNOHANG);

		if (w > 0) {
			int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128;

			left--;
			if (code == 77 && rc == 0)
				rc = 77;
			else if (code && code != 77)
				rc = 1;
			continue;
		}
		if (now_s() > end) {
			printf("CHECK deadline: FAIL the ranks ran past %d s; "
			       "killed\n",
			       deadline_s);
			kill(pid[0], SIGKILL);
			kill(pid[1], SIGKILL);
			rc = 1;
			deadline_s = 1 << 30;
		}
		usleep(100000);
	}
	printf("RESULT %s\n", rc == 0 ? "PASS" : rc == 77 ? "SKIP" : "FAIL");
	return rc;
}
