/* SPDX-License-Identifier: MIT */
/*
 * Owns the plugin's lifetime (init/finalize reference counting, teardown
 * at unload) and the version-neutral entry points the ABI shims call.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_domain.h>

#include "ce/ce.h"
#include "common/host.h"
#include "common/log.h"
#include "common/param.h"
#include "core.h"
#include "net/net.h"
#include "proxy/proxy.h"
#include "zsm_config.h"

#define ZSM_CTX_MAGIC 0x5843535aU

struct zsm_ctx {
	uint32_t magic;
	uint64_t comm_id;
	int traffic_class;
};

struct zsm_net_topo zsm_net_topo;

static pthread_mutex_t zsm_plugin_lock = PTHREAD_MUTEX_INITIALIZER;
static int zsm_plugin_refs;

static void zsm_plugin_teardown_locked(void)
{
	zsm_proxy_stop();
	zsm_proxy_lock();
	for (int i = 0; i < zsm_net_topo.ndevs; i++)
		zsm_net_ep_close(zsm_net_topo.devs[i].ep);
	zsm_proxy_unlock();
	/* The comms' GPU mappings are closing on their own thread, which
	 * must be gone before NCCL unloads us. */
	zsm_ce_unmap_stop(5000);
	zsm_net_topo_free(&zsm_net_topo);
	zsm_plugin_refs = 0;
}

/*
 * Streams share the device's hardware queues, in order, once there are
 * more of them than CUDA_DEVICE_MAX_CONNECTIONS (8 unless set): ce's
 * copy stream may then sit behind NCCL's kernel, which spins until the
 * copy lands.  Frameworks set 1 to order their kernels; say what it
 * costs here.
 */
static void zsm_plugin_check_connections(void)
{
	const char *v = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
	char *end;
	long n;

	if (!v || !*v)
		return;
	n = strtol(v, &end, 10);
	if (*end || n >= 8)
		return;
	ZSM_WARN("ce: CUDA_DEVICE_MAX_CONNECTIONS=%s gives each GPU fewer "
		 "hardware queues than the default 8: ce's copies for a "
		 "same-host comm can queue behind the NCCL kernel that waits "
		 "for them, and NCCL hangs; unset it, or keep GPU buffers "
		 "off ce (ZSM_CE_GPU=0, NCCL_NET_GDR_LEVEL unset)",
		 v);
}

/* Per device: does it take GPU buffers (said once, at INFO)? */
static void zsm_plugin_plan_gdr(void)
{
	int cuda = zsm_ce_cuda_ready(), min_cc = zsm_ce_cuda_min_cc();
	int dmabuf = zsm_ce_cuda_dmabuf_ok();
	int gpu = cuda && zsm_param_int(ZSM_P_CE_GPU);

	for (int i = 0; i < zsm_net_topo.ndevs; i++) {
		struct zsm_net_dev *dev = &zsm_net_topo.devs[i];

		zsm_net_dev_plan_gdr(dev, cuda, min_cc, dmabuf);
		ZSM_INFO("net: %s: %s", dev->name, dev->gdr.why);
		gpu |= dev->gdr.reg != ZSM_HMEM_REG_NONE;
	}
	if (!gpu || !zsm_ce_enabled())
		return;
	/* GPU buffers of same-host comms are copied by ce on a stream while
	 * NCCL's kernel waits for them (docs/ce.md, "Lazy module loading"). */
	if (zsm_ce_cuda_lazy())
		ZSM_WARN("ce: CUDA loads modules lazily (CUDA_MODULE_LOADING="
			 "LAZY, the default): when NCCL hands GPU buffers to "
			 "a same-host comm, a kernel loaded while NCCL's "
			 "kernel waits for one of ce's copies can hold that "
			 "copy back for ever; set CUDA_MODULE_LOADING=EAGER");
	zsm_plugin_check_connections();
}

/* Devices whose endpoint does not open are dropped, with a warning. */
static int zsm_plugin_open_endpoints(void)
{
	struct zsm_net_topo *t = &zsm_net_topo;
	int kept = 0;

	for (int i = 0; i < t->ndevs; i++) {
		struct zsm_net_ep *ep;

		if (zsm_net_ep_get(&t->devs[i], &ep) != 0) {
			ZSM_WARN("net: device %s is left out: its endpoint "
				 "does not open",
				 t->devs[i].name);
			zsm_fi_freeinfo(t->devs[i].info);
			free(t->devs[i].pci_path);
			continue;
		}
		if (kept != i) {
			t->devs[kept] = t->devs[i];
			t->devs[kept].ep->dev = &t->devs[kept];
		}
		kept++;
	}
	for (int i = kept; i < t->ndevs; i++)
		memset(&t->devs[i], 0, sizeof(t->devs[i]));
	t->ndevs = kept;
	if (kept == 0) {
		ZSM_WARN("net: no device endpoint could be opened");
		zsm_net_topo_free(t);
		return -ENODEV;
	}
	return 0;
}

/* Take one reference, bringing the plugin up on the first. */
static int zsm_plugin_get(ncclDebugLogger_t logger)
{
	int ret = 0;

	pthread_mutex_lock(&zsm_plugin_lock);
	if (logger)
		zsm_log_set_logger(logger);
	if (zsm_plugin_refs > 0) {
		zsm_plugin_refs++;
		goto out;
	}
	ret = zsm_param_load(NULL);
	if (ret) {
		ret = -EDOM; /* a bad ZSM_* value: the user's to fix */
		goto out;
	}
	/* Before any handle or control message needs the host's hash. */
	ret = zsm_host_init();
	if (ret)
		goto out;
	ret = zsm_net_topo_discover(&zsm_net_topo);
	if (ret)
		goto out;
	if (zsm_net_topo.ndevs == 0) {
		ZSM_WARN("net: no usable libfabric device (zsm-info tells "
			 "why each offer was passed over)");
		zsm_net_topo_free(&zsm_net_topo);
		ret = -ENODEV;
		goto out;
	}
	/* Open every endpoint now: listen() and connect() must not block,
	 * and opening one takes tens of milliseconds. */
	ret = zsm_plugin_open_endpoints();
	if (ret)
		goto out;
	zsm_proxy_add_transport(&zsm_net_ops);
	if (zsm_ce_enabled())
		zsm_proxy_add_transport(&zsm_ce_ops);
	/* GPU buffers: ce moves them between same-host processes, the
	 * provider (FI_HMEM) to other hosts. */
	zsm_ce_cuda_init();
	zsm_plugin_plan_gdr();
	ret = zsm_proxy_start();
	if (ret) {
		zsm_net_topo_free(&zsm_net_topo);
		goto out;
	}
	zsm_plugin_refs = 1;
	ZSM_INFO("zsm %s ready: %d device(s), proxy %s", ZSM_VERSION,
		 zsm_net_topo.ndevs,
		 zsm_param_int(ZSM_P_PROXY) ? "inline" : "thread");
out:
	pthread_mutex_unlock(&zsm_plugin_lock);
	return ret;
}

static void zsm_plugin_put(void)
{
	pthread_mutex_lock(&zsm_plugin_lock);
	if (zsm_plugin_refs > 0 && --zsm_plugin_refs == 0)
		zsm_plugin_teardown_locked();
	pthread_mutex_unlock(&zsm_plugin_lock);
}

/* NCCL dlcloses the plugin after the last comm; v8-v10 never finalize. */
__attribute__((destructor)) static void zsm_plugin_unload(void)
{
	pthread_mutex_lock(&zsm_plugin_lock);
	if (zsm_plugin_refs > 0)
		zsm_plugin_teardown_locked();
	pthread_mutex_unlock(&zsm_plugin_lock);
	zsm_log_set_logger(NULL);
}

int zsm_init(void **ctx, uint64_t comm_id, int traffic_class,
	     ncclDebugLogger_t logger)
{
	struct zsm_ctx *c;
	int ret;

	if (!ctx) {
		/* v8-v10: one process-wide reference, dropped at unload. */
		static int legacy_ref;

		if (legacy_ref)
			return 0;
		ret = zsm_plugin_get(logger);
		if (!ret)
			legacy_ref = 1;
		return ret;
	}
	*ctx = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	ret = zsm_plugin_get(logger);
	if (ret) {
		free(c);
		return ret;
	}
	c->magic = ZSM_CTX_MAGIC;
	c->comm_id = comm_id;
	c->traffic_class = traffic_class;
	*ctx = c;
	return 0;
}

int zsm_finalize(void *ctx)
{
	struct zsm_ctx *c = ctx;

	/* NCCL 2.28.9 calls finalize after a failed init: nothing to do. */
	if (!c || c->magic != ZSM_CTX_MAGIC)
		return 0;
	c->magic = 0;
	free(c);
	zsm_plugin_put();
	return 0;
}

static int zsm_dev_check(int dev)
{
	if (zsm_plugin_refs <= 0) {
		ZSM_WARN("called before a successful init");
		return -EINVAL;
	}
	if (dev < 0 || dev >= zsm_net_topo.ndevs) {
		ZSM_WARN("device %d does not exist (%d devices)", dev,
			 zsm_net_topo.ndevs);
		return -EINVAL;
	}
	return 0;
}

int zsm_devices(int *ndev)
{
	*ndev = zsm_plugin_refs > 0 ? zsm_net_topo.ndevs : 0;
	return 0;
}

int zsm_get_properties(int dev, struct zsm_props *props)
{
	int ret = zsm_dev_check(dev);

	if (ret)
		return ret;
	zsm_net_dev_props(&zsm_net_topo.devs[dev], dev, props);
	props->ptr_support |= zsm_net_topo.devs[dev].gdr.ptr_support;
	/*
	 * Without FI_HMEM, same-host comms still take device memory (ce)
	 * but comms to other hosts cannot, and NCCL would hand GPU buffers
	 * to both wherever its topology allows GPUDirect: opt-in.
	 */
	if (zsm_ce_cuda_ready() && zsm_param_int(ZSM_P_CE_GPU))
		props->ptr_support |= NCCL_PTR_CUDA;
	return 0;
}

int zsm_listen(void *ctx, int dev, void *handle, void **listen_comm)
{
	struct zsm_net_comm *lc = NULL;
	int ret = zsm_dev_check(dev);

	(void)ctx;
	*listen_comm = NULL;
	if (ret)
		return ret;
	ret = zsm_net_comm_listen(dev, handle, &lc);
	if (!ret)
		*listen_comm = lc;
	return ret;
}

int zsm_connect(void *ctx, int dev, void *handle, void **send_comm)
{
	struct zsm_net_comm *sc = NULL;
	int ret = zsm_dev_check(dev);

	(void)ctx;
	*send_comm = NULL;
	if (ret)
		return ret;
	if (!handle) {
		ZSM_WARN("net: connect: NULL handle");
		return -EINVAL;
	}
	ret = zsm_net_comm_connect(dev, handle, &sc);
	if (!ret)
		*send_comm = sc;
	return ret;
}

int zsm_accept(void *listen_comm, void **recv_comm)
{
	struct zsm_net_comm *rc = NULL;
	int ret;

	*recv_comm = NULL;
	if (!zsm_net_comm_valid(listen_comm, ZSM_COMM_LISTEN)) {
		ZSM_WARN("net: accept: not a listen comm");
		return -EINVAL;
	}
	ret = zsm_net_comm_accept(listen_comm, &rc);
	if (!ret)
		*recv_comm = rc;
	return ret;
}

static int zsm_close_typed(void *comm, int type, const char *kind)
{
	if (!comm)
		return 0;
	if (!zsm_net_comm_valid(comm, type)) {
		ZSM_WARN("net: close: not a live %s comm (closed twice?)",
			 kind);
		return -EINVAL;
	}
	return zsm_net_comm_close(comm);
}

int zsm_close_send(void *send_comm)
{
	return zsm_close_typed(send_comm, ZSM_COMM_SEND, "send");
}

int zsm_close_recv(void *recv_comm)
{
	return zsm_close_typed(recv_comm, ZSM_COMM_RECV, "receive");
}

int zsm_close_listen(void *listen_comm)
{
	return zsm_close_typed(listen_comm, ZSM_COMM_LISTEN, "listen");
}

static struct zsm_net_comm *zsm_any_comm(void *comm)
{
	struct zsm_net_comm *c = comm;

	if (zsm_net_comm_valid(c, ZSM_COMM_SEND) ||
	    zsm_net_comm_valid(c, ZSM_COMM_RECV))
		return c;
	ZSM_WARN("net: registration on something that is not a comm");
	return NULL;
}

/*
 * Device memory: only a same-host (ce) comm can move it today; the
 * registration is its IPC handle, nothing is given to the provider.
 */
static int zsm_reg_mr_gpu(struct zsm_net_comm *c, void *data, size_t size,
			  void **mh)
{
	struct zsm_net_mr *mr;
	int ret;

	if (!zsm_ce_cuda_ready()) {
		ZSM_WARN("regMr of GPU memory, but no CUDA driver was "
			 "loaded (ptrSupport says host only)");
		return -EINVAL;
	}
	if (!c->ce) {
		if (c->ep->dev->gdr.reg != ZSM_HMEM_REG_NONE) {
			ret = zsm_net_mr_reg(c->ep, data, size, NCCL_PTR_CUDA,
					     &mr);
			if (!ret)
				*mh = mr;
			return ret;
		}
		ZSM_WARN("net: %s: GPU buffers on a comm to another host, "
			 "and this device takes host memory only (%s)",
			 c->ep->dev->name, c->ep->dev->gdr.why);
		return -EOPNOTSUPP;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	ret = zsm_ce_cuda_mr_prepare(data, size, &mr->gpu_mr);
	if (ret) {
		free(mr);
		return ret;
	}
	mr->magic = ZSM_MR_MAGIC;
	mr->ep = c->ep;
	mr->type = NCCL_PTR_CUDA;
	mr->gpu = 1;
	*mh = mr;
	return 0;
}

int zsm_reg_mr(void *comm, void *data, size_t size, int type, void **mh)
{
	struct zsm_net_comm *c = zsm_any_comm(comm);
	struct zsm_net_mr *mr;
	int ret;

	*mh = NULL;
	if (!c)
		return -EINVAL;
	if (type == NCCL_PTR_CUDA)
		return zsm_reg_mr_gpu(c, data, size, mh);
	/* A refusal is logged there and costs speed only. */
	if (c->ce)
		(void)zsm_ce_hugepage_prepare(data, size);
	ret = zsm_net_mr_reg(c->ep, data, size, type, &mr);
	if (!ret)
		*mh = mr;
	return ret;
}

int zsm_reg_mr_dmabuf(void *comm, void *data, size_t size, int type,
		      uint64_t offset, int fd, void **mh)
{
	struct zsm_net_comm *c = zsm_any_comm(comm);
	struct zsm_net_mr *mr;
	int ret;

	*mh = NULL;
	if (!c)
		return -EINVAL;
	/* Only devices that register dma-bufs advertise them; ce maps GPU
	 * memory by IPC, and host memory is plain memory. */
	if (type != NCCL_PTR_CUDA || c->ce ||
	    c->ep->dev->gdr.reg != ZSM_HMEM_REG_DMABUF || fd < 0)
		return zsm_reg_mr(comm, data, size, type, mh);
	ret = zsm_net_mr_reg_dmabuf(c->ep, data, size, fd, offset, &mr);
	if (!ret)
		*mh = mr;
	return ret;
}

int zsm_dereg_mr(void *comm, void *mh)
{
	struct zsm_net_mr *mr = mh;

	(void)comm;
	if (!mr)
		return 0;
	if (mr->magic != ZSM_MR_MAGIC) {
		ZSM_WARN("net: deregMr: not a zsm registration (freed "
			 "twice?)");
		return -EINVAL;
	}
	if (mr->gpu) {
		struct zsm_net_comm *c = comm;

		/* The receiver holds our allocation open (and its memory
		 * alive) until told: NCCL may free the buffer next. */
		if (zsm_net_comm_valid(c, ZSM_COMM_SEND)) {
			zsm_proxy_lock();
			if (c->ce)
				zsm_ce_chan_forget(c->ce, &mr->gpu_mr);
			zsm_proxy_unlock();
		}
		zsm_ce_cuda_mr_release(&mr->gpu_mr);
		mr->magic = 0;
		free(mr);
		return 0;
	}
	return zsm_net_mr_dereg(mr);
}

static void *zsm_mr_desc(struct zsm_net_comm *c, void *mh, int *err)
{
	struct zsm_net_mr *mr = mh;

	if (!mr) {
		if (c->ep->needs_mr) {
			ZSM_WARN("net: %s needs registered buffers, and this "
				 "one came without a memory handle",
				 c->ep->dev->name);
			*err = -EINVAL;
		}
		return NULL;
	}
	if (mr->magic != ZSM_MR_MAGIC) {
		ZSM_WARN("net: memory handle is not a live zsm registration");
		*err = -EINVAL;
		return NULL;
	}
	return mr->desc;
}

static int zsm_comm_usable(struct zsm_net_comm *c)
{
	/* acquire: pairs with the release in zsm_net_comm_fail. */
	int err = atomic_load_explicit(&c->error, memory_order_acquire);

	return err;
}

static int zsm_tag_check(int tag)
{
	if (tag < 0 || (unsigned)tag > ZSM_TAG_USER_MAX) {
		ZSM_WARN("net: tag %d outside [0, %u]", tag, ZSM_TAG_USER_MAX);
		return -EINVAL;
	}
	return 0;
}

/* Buffer i of a request, and the libfabric operation that moves it. */
static void zsm_req_buf(struct zsm_net_req *req, int i,
			enum zsm_net_op_kind kind, void *data, size_t len,
			int tag, void *desc, struct zsm_net_mr *mh)
{
	req->data[i] = data;
	req->len[i] = len;
	req->tag[i] = tag;
	req->mr_desc[i] = desc;
	req->mh[i] = mh;
	req->ops[i].req = req;
	req->ops[i].kind = kind;
	req->ops[i].index = (uint8_t)i;
	req->ops[i].posted = 0;
}

/* A comm on a same-host channel moves its data through ce, not net. */
static void zsm_req_route(struct zsm_net_comm *c, struct zsm_net_req *req)
{
	if (c->ce)
		req->desc.ops = &zsm_ce_ops;
}

int zsm_isend(void *send_comm, void *data, size_t size, int tag, void *mh,
	      void **request)
{
	struct zsm_net_comm *c = send_comm;
	struct zsm_net_req *req;
	int err = 0;
	void *desc;

	*request = NULL;
	if (!zsm_net_comm_valid(c, ZSM_COMM_SEND)) {
		ZSM_WARN("net: isend: not a send comm");
		return -EINVAL;
	}
	if (size > ZSM_MAX_P2P_BYTES) {
		ZSM_WARN("net: isend of %zu bytes is above maxP2pBytes %llu",
			 size, ZSM_MAX_P2P_BYTES);
		return -EINVAL;
	}
	err = zsm_tag_check(tag);
	if (err)
		return err;
	err = zsm_comm_usable(c);
	if (err)
		return err;
	desc = zsm_mr_desc(c, mh, &err);
	if (err)
		return err;
	req = zsm_net_req_alloc(c);
	if (!req)
		return 0;
	zsm_req_route(c, req);
	req->type = ZSM_REQ_SEND;
	req->n = 1;
	req->remaining = 1;
	zsm_req_buf(req, 0, ZSM_OP_SEND, data, size, tag, desc, mh);
	if (zsm_proxy_submit(&req->desc)) {
		zsm_net_req_free(req);
		return 0; /* queue full: NCCL retries */
	}
	*request = req;
	return 0;
}

int zsm_irecv(void *recv_comm, int n, void **data, const size_t *sizes,
	      const int *tags, void **mhs, void **request)
{
	struct zsm_net_comm *c = recv_comm;
	struct zsm_net_req *req;
	void *desc[ZSM_MAX_RECVS];
	int err = 0;

	*request = NULL;
	if (!zsm_net_comm_valid(c, ZSM_COMM_RECV)) {
		ZSM_WARN("net: irecv: not a receive comm");
		return -EINVAL;
	}
	if (n < 1 || n > ZSM_MAX_RECVS) {
		ZSM_WARN("net: irecv of %d buffers, maxRecvs is %d", n,
			 ZSM_MAX_RECVS);
		return -EINVAL;
	}
	for (int i = 0; i < n; i++) {
		err = zsm_tag_check(tags[i]);
		if (err)
			return err;
		desc[i] = zsm_mr_desc(c, mhs ? mhs[i] : NULL, &err);
		if (err)
			return err;
	}
	err = zsm_comm_usable(c);
	if (err)
		return err;
	req = zsm_net_req_alloc(c);
	if (!req)
		return 0;
	zsm_req_route(c, req);
	req->type = ZSM_REQ_RECV;
	req->n = (uint8_t)n;
	req->remaining = (uint8_t)n;
	for (int i = 0; i < n; i++) {
		zsm_req_buf(req, i, ZSM_OP_RECV, data[i], sizes[i], tags[i],
			    desc[i], mhs ? mhs[i] : NULL);
		req->sizes[i] = 0;
	}
	if (zsm_proxy_submit(&req->desc)) {
		zsm_net_req_free(req);
		return 0;
	}
	*request = req;
	return 0;
}

/*
 * The buffer a flush reads back: the last one that received bytes (the
 * NIC's writes to it were the last posted), or -1 when none did or the
 * device's plan needs no flush for its memory.
 */
static int zsm_iflush_pick(const struct zsm_net_comm *c, int n,
			   const int *sizes, void **mhs, int *err)
{
	const struct zsm_net_hmem_plan *plan = &c->ep->dev->gdr;
	const struct zsm_net_mr *mr;
	int last = -1;

	if (!plan->flush_gpu && !plan->flush_host)
		return -1;
	for (int i = n - 1; i >= 0 && last < 0; i--)
		if (sizes[i] > 0)
			last = i;
	if (last < 0)
		return -1;
	mr = mhs ? mhs[last] : NULL;
	if (!mr || mr->magic != ZSM_MR_MAGIC) {
		ZSM_WARN("net: iflush: buffer %d's memory handle is not a live "
			 "zsm registration",
			 last);
		*err = -EINVAL;
		return -1;
	}
	if (!(mr->type == NCCL_PTR_CUDA ? plan->flush_gpu : plan->flush_host))
		return -1;
	return last;
}

int zsm_iflush(void *recv_comm, int n, void **data, const int *sizes,
	       void **mhs, void **request)
{
	struct zsm_net_comm *c = recv_comm;
	struct zsm_net_req *req;
	int last, err = 0;

	*request = NULL;
	if (!zsm_net_comm_valid(c, ZSM_COMM_RECV)) {
		ZSM_WARN("net: iflush: not a receive comm");
		return -EINVAL;
	}
	if (n < 1 || n > ZSM_MAX_RECVS || !data || !sizes) {
		ZSM_WARN("net: iflush of %d buffers (maxRecvs %d)%s", n,
			 ZSM_MAX_RECVS, data && sizes ? "" : ", NULL arrays");
		return -EINVAL;
	}
	/* ce's copies are complete on the device before test() says done;
	 * host memory is visible once test() said done. */
	if (c->ce)
		return 0;
	last = zsm_iflush_pick(c, n, sizes, mhs, &err);
	if (last < 0)
		return err;
	err = zsm_comm_usable(c);
	if (err)
		return err;
	req = zsm_net_req_alloc(c);
	if (!req) {
		/* A NULL request would say "flushed": fail instead. */
		ZSM_WARN("net: iflush: no request left on this comm (%d in "
			 "use)",
			 ZSM_MAX_REQUESTS);
		return -ENOMEM;
	}
	/* A few bytes suffice: the read cannot pass the NIC's earlier
	 * writes to the GPU, so once it is back they have landed. */
	if (zsm_net_mr_flush_target(mhs[last], data[last], &req->rma_addr,
				    &req->rma_key)) {
		ZSM_WARN("net: iflush: buffer %d has no provider registration "
			 "to read back",
			 last);
		zsm_net_req_free(req);
		return -EINVAL;
	}
	req->type = ZSM_REQ_FLUSH;
	req->n = 1;
	req->remaining = 1;
	zsm_req_buf(req, 0, ZSM_OP_FLUSH, c->ep->flush_buf,
		    sizes[last] < 8 ? (size_t)sizes[last] : 8, 0,
		    c->ep->flush_desc, NULL);
	/* NCCL does not retry a flush: wait for room in the queue. */
	zsm_proxy_submit_wait(&req->desc);
	*request = req;
	return 0;
}

int zsm_test(void *request, int *done, int *sizes)
{
	struct zsm_net_req *req = request;
	int state;

	*done = 0;
	if (!req || req->magic != ZSM_REQ_MAGIC) {
		ZSM_WARN("net: test: %p is not a live zsm request", request);
		return -EINVAL;
	}
	/* acquire: pairs with the release in zsm_net_req_op_done. */
	state = atomic_load_explicit(&req->state, memory_order_acquire);
	if (state == ZSM_REQ_PENDING) {
		zsm_proxy_assist(req);
		/* acquire: as above; the pass may have completed it. */
		state = atomic_load_explicit(&req->state,
					     memory_order_acquire);
		if (state == ZSM_REQ_PENDING)
			return 0;
	}
	*done = 1;
	if (sizes) {
		if (req->type == ZSM_REQ_RECV)
			memcpy(sizes, req->sizes, sizeof(int) * req->n);
		else
			sizes[0] = req->sizes[0];
	}
	if (state < 0 && state != -ECANCELED)
		ZSM_WARN("net: %s failed: %s",
			 zsm_net_req_what(req),
			 state == -EMSGSIZE
				 ? "the message is larger than the posted "
				   "receive buffer"
				 : strerror(-state));
	zsm_net_req_free(req);
	return state < 0 ? state : 0;
}

ncclResult_t zsm_nccl_result(int err)
{
	switch (err) {
	case 0:
		return ncclSuccess;
	case -EMSGSIZE:
	case -EDOM:
		return ncclInvalidUsage;
	case -EINVAL:
	case -EPROTO:
		return ncclInternalError;
	case -ECONNRESET:
	case -ECANCELED:
	case -ETIMEDOUT:
		return ncclRemoteError;
	default:
		return ncclSystemError;
	}
}
