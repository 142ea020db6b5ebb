/* SPDX-License-Identifier: MIT */
/*
 * A test double for zsm-bench --gpu: an ncclNet v12 plugin that wraps a
 * real one (the .so named by ZSM_BOUNCE_REAL) and takes CUDA buffers by
 * staging them through host copies with cuMemcpy.  With it, the bench's
 * GPU path (device buffers, NCCL_PTR_CUDA registrations, iflush, checks
 * read back from the GPU) runs end to end on a GPU machine before any
 * real plugin moves GPU memory.  Its numbers mean nothing.
 *
 * Received data reach GPU memory only in iflush, as they may with
 * GPUDirect RDMA, so a caller that reads a GPU receive without flushing
 * it first reads stale bytes and its checks fail.  ZSM_BOUNCE_FLUSH=skip
 * makes iflush drop the data, to show that the caller's checks notice.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi/nccl_net.h"
#include "common/cuda_drv.h"

#define BOUNCE_MR_MAGIC 0x62746d72u
#define BOUNCE_REQ_MAGIC 0x62747271u
#define BOUNCE_MAX_RECVS 8

static const ncclNet_v12_t *bounce_real;
static void *bounce_dl;
static struct zsm_cuda_drv bounce_cu;
static int bounce_cu_ok;
static int bounce_flush_skip;

/* A registration; CUDA ones own a host copy of the whole region. */
struct bounce_mr {
	uint32_t magic;
	void *real;
	int cuda;
	uintptr_t base;
	size_t size;
	unsigned char *host;
};

/* Every request the caller sees; a flush has no real one. */
struct bounce_req {
	uint32_t magic;
	void *real;
	int flush;
};

/* Reloading the wrapper must not pile up loads of the real plugin. */
__attribute__((destructor)) static void bounce_unload(void)
{
	if (bounce_dl)
		dlclose(bounce_dl);
}

static struct bounce_mr *bounce_mr_of(void *mhandle)
{
	struct bounce_mr *m = mhandle;

	if (!m || m->magic != BOUNCE_MR_MAGIC) {
		fprintf(stderr, "cuda-bounce: not one of our mhandles\n");
		abort();
	}
	return m;
}

/* Where a CUDA buffer's bytes live on the host side. */
static unsigned char *bounce_host_of(struct bounce_mr *m, void *data,
				     size_t size)
{
	uintptr_t p = (uintptr_t)data, off = p - m->base;

	if (p < m->base || off > m->size || size > m->size - off) {
		fprintf(stderr, "cuda-bounce: %zu bytes at %p are outside "
				"their registration\n",
			size, data);
		abort();
	}
	return m->host + off;
}

static ncclResult_t bounce_init(void **ctx, uint64_t comm_id,
				ncclNetCommConfig_t *config,
				ncclDebugLogger_t logger,
				ncclProfilerCallback_t prof)
{
	const char *real = getenv("ZSM_BOUNCE_REAL");
	char why[256];

	if (!real) {
		fprintf(stderr,
			"cuda-bounce: set ZSM_BOUNCE_REAL to the real .so\n");
		return ncclInvalidUsage;
	}
	if (!bounce_real) {
		bounce_dl = dlopen(real, RTLD_NOW | RTLD_LOCAL);
		if (bounce_dl)
			bounce_real = dlsym(bounce_dl, "ncclNetPlugin_v12");
		if (!bounce_real) {
			fprintf(stderr,
				"cuda-bounce: no ncclNetPlugin_v12 in %s\n",
				real);
			return ncclInvalidUsage;
		}
	}
	/*
	 * Without CUDA the wrapper only forwards and does not claim
	 * NCCL_PTR_CUDA; the caller says why it cannot use GPU buffers.
	 */
	if (!bounce_cu_ok)
		bounce_cu_ok = !zsm_cuda_drv_open(&bounce_cu, why, sizeof(why));
	bounce_flush_skip = getenv("ZSM_BOUNCE_FLUSH") &&
			    !strcmp(getenv("ZSM_BOUNCE_FLUSH"), "skip");
	return bounce_real->init(ctx, comm_id, config, logger, prof);
}

static ncclResult_t bounce_devices(int *ndev)
{
	return bounce_real->devices(ndev);
}

static ncclResult_t bounce_get_properties(int dev, ncclNetProperties_v12_t *p)
{
	ncclResult_t r = bounce_real->getProperties(dev, p);

	if (r == ncclSuccess && bounce_cu_ok)
		p->ptrSupport |= NCCL_PTR_CUDA;
	return r;
}

static ncclResult_t bounce_listen(void *ctx, int dev, void *handle,
				  void **listen_comm)
{
	return bounce_real->listen(ctx, dev, handle, listen_comm);
}

static ncclResult_t bounce_connect(void *ctx, int dev, void *handle,
				   void **send_comm,
				   ncclNetDeviceHandle_t **dev_comm)
{
	return bounce_real->connect(ctx, dev, handle, send_comm, dev_comm);
}

static ncclResult_t bounce_accept(void *listen_comm, void **recv_comm,
				  ncclNetDeviceHandle_t **dev_comm)
{
	return bounce_real->accept(listen_comm, recv_comm, dev_comm);
}

static ncclResult_t bounce_reg_mr(void *comm, void *data, size_t size,
				  int type, void **mhandle)
{
	struct bounce_mr *m = calloc(1, sizeof(*m));
	ncclResult_t r;

	if (!m)
		return ncclSystemError;
	m->magic = BOUNCE_MR_MAGIC;
	if (type == NCCL_PTR_CUDA) {
		if (!bounce_cu_ok) {
			free(m);
			return ncclUnhandledCudaError;
		}
		m->cuda = 1;
		m->base = (uintptr_t)data;
		m->size = size;
		m->host = aligned_alloc(4096, (size + 4095) / 4096 * 4096);
		if (!m->host) {
			free(m);
			return ncclSystemError;
		}
		data = m->host;
		type = NCCL_PTR_HOST;
	}
	r = bounce_real->regMr(comm, data, size, type, &m->real);
	if (r != ncclSuccess) {
		free(m->host);
		free(m);
		return r;
	}
	*mhandle = m;
	return ncclSuccess;
}

static ncclResult_t bounce_reg_mr_dmabuf(void *comm, void *data, size_t size,
					 int type, uint64_t offset, int fd,
					 void **mhandle)
{
	return ncclInvalidUsage;
}

static ncclResult_t bounce_dereg_mr(void *comm, void *mhandle)
{
	struct bounce_mr *m = bounce_mr_of(mhandle);
	ncclResult_t r = bounce_real->deregMr(comm, m->real);

	m->magic = 0;
	free(m->host);
	free(m);
	return r;
}

static struct bounce_req *bounce_req_new(void *real, int flush)
{
	struct bounce_req *q = malloc(sizeof(*q));

	if (q) {
		q->magic = BOUNCE_REQ_MAGIC;
		q->real = real;
		q->flush = flush;
	}
	return q;
}

static ncclResult_t bounce_isend(void *send_comm, void *data, size_t size,
				 int tag, void *mhandle, void *phandle,
				 void **request)
{
	struct bounce_mr *m = bounce_mr_of(mhandle);
	struct bounce_req *q;
	char why[256];
	void *real = NULL;
	ncclResult_t r;

	if (m->cuda) {
		unsigned char *h = bounce_host_of(m, data, size);
		zsm_cu_deviceptr src = (zsm_cu_deviceptr)(uintptr_t)data;

		if (size && zsm_cuda_drv_copy_dtoh(&bounce_cu, h, src, size,
						   why, sizeof(why))) {
			fprintf(stderr, "cuda-bounce: isend: %s\n", why);
			return ncclUnhandledCudaError;
		}
		data = h;
	}
	r = bounce_real->isend(send_comm, data, size, tag, m->real, phandle,
			       &real);
	if (r != ncclSuccess || !real) {
		*request = NULL;
		return r;
	}
	q = bounce_req_new(real, 0);
	if (!q)
		return ncclSystemError;
	*request = q;
	return ncclSuccess;
}

static ncclResult_t bounce_irecv(void *recv_comm, int n, void **data,
				 size_t *sizes, int *tags, void **mhandles,
				 void **phandles, void **request)
{
	void *hdata[BOUNCE_MAX_RECVS], *rmh[BOUNCE_MAX_RECVS];
	struct bounce_req *q;
	void *real = *request;
	ncclResult_t r;
	int i;

	if (n < 1 || n > BOUNCE_MAX_RECVS)
		return ncclInvalidArgument;
	for (i = 0; i < n; i++) {
		struct bounce_mr *m = bounce_mr_of(mhandles[i]);

		hdata[i] = m->cuda ? bounce_host_of(m, data[i], sizes[i])
				   : data[i];
		rmh[i] = m->real;
	}
	r = bounce_real->irecv(recv_comm, n, hdata, sizes, tags, rmh,
			       phandles, &real);
	if (r != ncclSuccess || !real) {
		*request = NULL;
		return r;
	}
	q = bounce_req_new(real, 0);
	if (!q)
		return ncclSystemError;
	*request = q;
	return ncclSuccess;
}

/* The received bytes reach the GPU here, and only here. */
static ncclResult_t bounce_iflush(void *recv_comm, int n, void **data,
				  int *sizes, void **mhandles, void **request)
{
	char why[256];
	int i;

	for (i = 0; i < n; i++) {
		struct bounce_mr *m = bounce_mr_of(mhandles[i]);
		size_t len = sizes[i] > 0 ? (size_t)sizes[i] : 0;
		zsm_cu_deviceptr dst = (zsm_cu_deviceptr)(uintptr_t)data[i];

		if (!m->cuda || !len || bounce_flush_skip)
			continue;
		if (zsm_cuda_drv_copy_htod(&bounce_cu, dst,
					   bounce_host_of(m, data[i], len), len,
					   why, sizeof(why))) {
			fprintf(stderr, "cuda-bounce: iflush: %s\n", why);
			return ncclUnhandledCudaError;
		}
	}
	/* A request, so that callers' waits on flushes run too. */
	*request = bounce_req_new(NULL, 1);
	return *request ? ncclSuccess : ncclSystemError;
}

static ncclResult_t bounce_test(void *request, int *done, int *sizes)
{
	struct bounce_req *q = request;
	ncclResult_t r;

	if (!q || q->magic != BOUNCE_REQ_MAGIC) {
		fprintf(stderr, "cuda-bounce: test of a foreign request\n");
		abort();
	}
	if (q->flush) {
		*done = 1;
	} else {
		r = bounce_real->test(q->real, done, sizes);
		if (r != ncclSuccess || !*done)
			return r;
	}
	q->magic = 0;
	free(q);
	return ncclSuccess;
}

static ncclResult_t bounce_close_send(void *send_comm)
{
	return bounce_real->closeSend(send_comm);
}

static ncclResult_t bounce_close_recv(void *recv_comm)
{
	return bounce_real->closeRecv(recv_comm);
}

static ncclResult_t bounce_close_listen(void *listen_comm)
{
	return bounce_real->closeListen(listen_comm);
}

static ncclResult_t bounce_finalize(void *ctx)
{
	return bounce_real->finalize(ctx);
}

__attribute__((visibility("default")))
const ncclNet_v12_t ncclNetPlugin_v12 = {
	.name = "zsm-cuda-bounce",
	.init = bounce_init,
	.devices = bounce_devices,
	.getProperties = bounce_get_properties,
	.listen = bounce_listen,
	.connect = bounce_connect,
	.accept = bounce_accept,
	.regMr = bounce_reg_mr,
	.regMrDmaBuf = bounce_reg_mr_dmabuf,
	.deregMr = bounce_dereg_mr,
	.isend = bounce_isend,
	.irecv = bounce_irecv,
	.iflush = bounce_iflush,
	.test = bounce_test,
	.closeSend = bounce_close_send,
	.closeRecv = bounce_close_recv,
	.closeListen = bounce_close_listen,
	.getDeviceMr = NULL,
	.irecvConsumed = NULL,
	.makeVDevice = NULL,
	.finalize = bounce_finalize,
	.setNetAttr = NULL,
};
