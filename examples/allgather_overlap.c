/* SPDX-License-Identifier: MIT */
/*
 * allgather_overlap: an AllGather that runs beside a matmul.
 *
 * Every rank owns a block of SIZE bytes (a shard of weights, say) and
 * needs every rank's.  zsm_all_gather goes on a stream of its own while
 * cuBLAS multiplies matrices on another: zsm moves the bytes on copy
 * engines and its own threads, so the matmul keeps every SM.  The program
 * times the AllGather alone, the matmuls alone, and both at once, checks
 * every byte it gathered, and says whether the two overlapped.
 *
 * One process per rank, joined by zsm_comm_init_env: RANK, WORLD_SIZE and
 * ZSM_BOOT_ADDR (HOST:PORT where rank 0 listens), or torchrun's, Open
 * MPI's, Slurm's or PMI's variables.  examples/README.md has the commands.
 *
 *     allgather_overlap [--gpu G] [--size BYTES] [--matmuls K] [--host]
 *
 * --host: no GPU at all.  The comm is in host-memory mode (no CUDA context
 * is current when it is made), the AllGather is complete when it returns,
 * and the "matmul" is a plain C loop on another thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <zsm/zsm.h>

/* The matrices: N x N floats, on the GPU; a smaller one on the CPU. */
#define N_GPU 8192
#define N_CPU 384

struct ex {
	int rank, nranks, gpu, host;
	size_t size; /* bytes each rank contributes */
	int matmuls;
	zsm_comm_t comm;
	zsm_window_t win, ctl_win;
	unsigned char *recv; /* nranks * size: where every block lands */
	unsigned char ctl[8 * 64]; /* host window for barriers */
	cudaStream_t s_comm, s_math;
	cublasHandle_t blas;
	float *a, *b, *c;
};

static void die(const struct ex *e, const char *what, const char *why)
{
	fprintf(stderr, "allgather_overlap: rank %d: %s: %s\n",
		e ? e->rank : -1, what, why);
	exit(1);
}

#define ZSM(e, call)                                                           \
	do {                                                                   \
		int r_ = (call);                                               \
		if (r_)                                                        \
			die(e, #call, zsm_strerror(r_));                       \
	} while (0)
#define CUDA(e, call)                                                          \
	do {                                                                   \
		cudaError_t r_ = (call);                                       \
		if (r_ != cudaSuccess)                                         \
			die(e, #call, cudaGetErrorString(r_));                 \
	} while (0)
#define BLAS(e, call)                                                          \
	do {                                                                   \
		if ((call) != CUBLAS_STATUS_SUCCESS)                           \
			die(e, #call, "cuBLAS failed");                        \
	} while (0)

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* The byte every position of rank j's block holds. */
static unsigned char block_byte(int j)
{
	return (unsigned char)(j * 37 + 11);
}

/* Every rank is here: an 8-byte AllGather on a small host window (host
 * memory makes a window in GPU mode too). */
static void barrier(struct ex *e)
{
	ZSM(e, zsm_all_gather(e->ctl + 8 * e->rank, e->ctl, 8, zsm_uint8,
			      e->comm, e->host ? NULL : e->s_comm));
	if (!e->host)
		CUDA(e, cudaStreamSynchronize(e->s_comm));
}

/* ---------------------------------------------------------------- work */

/* --host: C = A * B on the CPU, matmuls times, on a thread of its own. */
static void *cpu_matmuls(void *arg)
{
	struct ex *e = arg;

	for (int k = 0; k < e->matmuls; k++)
		for (int i = 0; i < N_CPU; i++)
			for (int j = 0; j < N_CPU; j++) {
				float s = 0;

				for (int l = 0; l < N_CPU; l++)
					s += e->a[i * N_CPU + l] *
					     e->b[l * N_CPU + j];
				e->c[i * N_CPU + j] = s;
			}
	return NULL;
}

/* Queue the matmuls on the math stream (GPU) or start their thread. */
static void start_matmuls(struct ex *e, pthread_t *t)
{
	const float one = 1.0f, zero = 0.0f;

	if (e->host) {
		if (pthread_create(t, NULL, cpu_matmuls, e))
			die(e, "pthread_create", strerror(errno));
		return;
	}
	for (int k = 0; k < e->matmuls; k++)
		BLAS(e, cublasSgemm(e->blas, CUBLAS_OP_N, CUBLAS_OP_N, N_GPU,
				    N_GPU, N_GPU, &one, e->a, N_GPU, e->b,
				    N_GPU, &zero, e->c, N_GPU));
}

static void end_matmuls(struct ex *e, pthread_t t)
{
	if (e->host)
		pthread_join(t, NULL);
	else
		CUDA(e, cudaStreamSynchronize(e->s_math));
}

/* In place: this rank's block is already at rank * size of recv. */
static void start_all_gather(struct ex *e)
{
	ZSM(e, zsm_all_gather(e->recv + (size_t)e->rank * e->size, e->recv,
			      e->size, zsm_uint8, e->comm,
			      e->host ? NULL : e->s_comm));
}

static void end_all_gather(struct ex *e)
{
	int err = 0;

	if (!e->host)
		CUDA(e, cudaStreamSynchronize(e->s_comm));
	/* A comm that failed releases its streams: ask before trusting. */
	ZSM(e, zsm_comm_get_async_error(e->comm, &err));
	if (err)
		die(e, "the AllGather", zsm_strerror(err));
}

/* ------------------------------------------------------- data and check */

static void fill(struct ex *e)
{
	size_t all = (size_t)e->nranks * e->size;

	/* Others' blocks 0, ours its byte: what arrives shows. */
	if (e->host) {
		memset(e->recv, 0, all);
		memset(e->recv + (size_t)e->rank * e->size,
		       block_byte(e->rank), e->size);
		return;
	}
	CUDA(e, cudaMemset(e->recv, 0, all));
	CUDA(e, cudaMemset(e->recv + (size_t)e->rank * e->size,
			   block_byte(e->rank), e->size));
	CUDA(e, cudaDeviceSynchronize());
}

static void check(struct ex *e)
{
	size_t all = (size_t)e->nranks * e->size;
	unsigned char *h = e->recv;

	if (!e->host) {
		h = malloc(all);
		if (!h)
			die(e, "malloc", "out of memory");
		CUDA(e, cudaMemcpy(h, e->recv, all, cudaMemcpyDeviceToHost));
	}
	for (int j = 0; j < e->nranks; j++)
		for (size_t i = 0; i < e->size; i++)
			if (h[(size_t)j * e->size + i] != block_byte(j)) {
				char why[128];

				snprintf(why, sizeof(why),
					 "byte %zu of rank %d's block is %u, "
					 "not %u",
					 i, j, h[(size_t)j * e->size + i],
					 block_byte(j));
				die(e, "check", why);
			}
	if (!e->host)
		free(h);
}

/* ---------------------------------------------------------------- setup */

static void setup(struct ex *e)
{
	size_t all;

	if (!e->host) {
		/* A current context before the comm: GPU mode. */
		CUDA(e, cudaSetDevice(e->gpu));
		CUDA(e, cudaFree(0));
	}
	ZSM(e, zsm_comm_init_env(&e->comm));
	ZSM(e, zsm_comm_user_rank(e->comm, &e->rank));
	ZSM(e, zsm_comm_count(e->comm, &e->nranks));
	if (e->nranks > 64)
		die(e, "setup", "this example takes at most 64 ranks");
	all = (size_t)e->nranks * e->size;
	if (e->host) {
		size_t m = (size_t)N_CPU * N_CPU * sizeof(float);

		e->recv = malloc(all);
		e->a = malloc(m);
		e->b = malloc(m);
		e->c = malloc(m);
		if (!e->recv || !e->a || !e->b || !e->c)
			die(e, "malloc", "out of memory");
		for (size_t i = 0; i < (size_t)N_CPU * N_CPU; i++)
			e->a[i] = e->b[i] = (float)(i % 7) / 7.0f;
	} else {
		size_t m = (size_t)N_GPU * N_GPU * sizeof(float);

		CUDA(e, cudaMalloc((void **)&e->recv, all));
		CUDA(e, cudaMalloc((void **)&e->a, m));
		CUDA(e, cudaMalloc((void **)&e->b, m));
		CUDA(e, cudaMalloc((void **)&e->c, m));
		CUDA(e, cudaMemset(e->a, 0, m));
		CUDA(e, cudaMemset(e->b, 0, m));
		CUDA(e, cudaStreamCreateWithFlags(&e->s_comm,
						  cudaStreamNonBlocking));
		CUDA(e, cudaStreamCreateWithFlags(&e->s_math,
						  cudaStreamNonBlocking));
		BLAS(e, cublasCreate(&e->blas));
		BLAS(e, cublasSetStream(e->blas, e->s_math));
	}
	/* Collective, in the same order on every rank. */
	ZSM(e, zsm_comm_window_register(e->comm, e->ctl,
					8 * (size_t)e->nranks, &e->ctl_win, 0));
	ZSM(e, zsm_comm_window_register(e->comm, e->recv, all, &e->win, 0));
}

static void teardown(struct ex *e)
{
	ZSM(e, zsm_comm_window_deregister(e->comm, e->win));
	ZSM(e, zsm_comm_window_deregister(e->comm, e->ctl_win));
	ZSM(e, zsm_comm_destroy(e->comm));
	if (e->host) {
		free(e->recv);
		free(e->a);
		free(e->b);
		free(e->c);
		return;
	}
	cublasDestroy(e->blas);
	cudaStreamDestroy(e->s_comm);
	cudaStreamDestroy(e->s_math);
	cudaFree(e->recv);
	cudaFree(e->a);
	cudaFree(e->b);
	cudaFree(e->c);
}

static void usage(void)
{
	fprintf(stderr, "usage: allgather_overlap [--gpu G] [--size BYTES] "
			"[--matmuls K] [--host]\n"
			"(rank, size and rendezvous from RANK, WORLD_SIZE, "
			"ZSM_BOOT_ADDR or a launcher)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct ex e = {.gpu = 0, .size = 64u << 20, .matmuls = -1};
	double t_ag, t_mm, t0, t_ag_both, t_both;
	pthread_t thr = 0;

	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--host"))
			e.host = 1;
		else if (!strcmp(argv[i], "--gpu") && v)
			e.gpu = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--size") && v)
			e.size = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--matmuls") && v)
			e.matmuls = atoi(argv[++i]);
		else
			usage();
	}
	if (!e.size)
		usage();
	if (e.matmuls < 0)
		e.matmuls = e.host ? 4 : 20;
	setup(&e);

	/* 1. The AllGather alone, checked. */
	fill(&e);
	barrier(&e);
	t0 = now_ms();
	start_all_gather(&e);
	end_all_gather(&e);
	t_ag = now_ms() - t0;
	check(&e);

	/* 2. The matmuls alone. */
	barrier(&e);
	t0 = now_ms();
	start_matmuls(&e, &thr);
	end_matmuls(&e, thr);
	t_mm = now_ms() - t0;

	/* 3. Both: the matmuls first, the AllGather on its own stream. */
	fill(&e);
	barrier(&e);
	t0 = now_ms();
	start_matmuls(&e, &thr);
	start_all_gather(&e);
	end_all_gather(&e);
	t_ag_both = now_ms() - t0;
	end_matmuls(&e, thr);
	t_both = now_ms() - t0;
	check(&e);

	/* Overlapped, the AllGather takes about its time alone, and both
	 * together about the matmuls' time alone. */
	printf("rank %d of %d (%s), every byte checked: AllGather of %zu "
	       "bytes per rank %.2f ms alone, %.2f ms beside the matmuls "
	       "(x%.2f); %d matmuls %.2f ms alone, %.2f ms with the "
	       "AllGather (x%.2f)\n",
	       e.rank, e.nranks, e.host ? "host memory" : "GPU", e.size, t_ag,
	       t_ag_both, t_ag_both / t_ag, e.matmuls, t_mm, t_both,
	       t_both / t_mm);
	teardown(&e);
	return 0;
}
