/* SPDX-License-Identifier: MIT */
/*
 * ce's GPU paths on a fake CUDA driver table: what regMr records of a GPU
 * buffer, the receiver's cache of the sender's opened allocations (one
 * open per allocation, closed on deregMr and on close), copies that end
 * only when their event does, several copies queued at once (batched
 * where the driver can), and failures that end both requests.
 *
 * "Device memory" here is host memory the fake calls device memory.  The
 * receiver's opened mappings get addresses of their own, which only the
 * fake copy resolves (and bounds-checks), so a wrong base or offset
 * shows up as wrong bytes or a refused copy, not as a lucky alias.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ce_pair.h"
#include "common/cuda.h"
#include "common/handle.h"
#include "common/param.h"
#include "zsm_test.h"

#define FAKE_ALLOCS 8
#define FAKE_MAPS 16
#define FAKE_VA ((zsm_cu_deviceptr)0x7e0000000000ULL)

struct fake_alloc {
	unsigned char *mem;
	size_t size;
	int vmm; /* cuMem: no IPC handle, exported as an fd */
};

struct fake_map {
	zsm_cu_deviceptr va;
	size_t size;
	int alloc; /* index, or -1: free */
};

struct fake_copy {
	void *dst;
	const void *src;
	size_t n;
};

static struct fake {
	struct fake_alloc alloc[FAKE_ALLOCS];
	struct fake_map map[FAKE_MAPS];
	zsm_cu_deviceptr next_va;
	/* Queued copies land one per event query that finds its own not
	 * landed yet: a copy is never done at the first look. */
	struct fake_copy q[64];
	int nq, landed;
	struct fake_event {
		int wm; /* done once this many copies landed */
	} ev[48];
	int nev, batches, batch_bad_attr;
	int fail_copy;
	int no_export; /* cuMem made without a shareable handle type */
	/* What the code under test did. */
	int imports, ipc_opens, unmaps, ipc_closes, releases, copies, pinned;
	int stream_prio;
	int streams, streams_gone;
	int closes_off_main; /* closes made on another thread than main's */
	pthread_t main;
	int bad_ranges;
	/* dma-buf: what the device says, what was asked of the driver. */
	int dmabuf_attr;
	zsm_cu_deviceptr range_ptr;
	size_t range_size;
	int range_type;
} fk;

static int fake_alloc_of(zsm_cu_deviceptr p)
{
	for (int i = 0; i < FAKE_ALLOCS; i++) {
		uintptr_t b = (uintptr_t)fk.alloc[i].mem;

		if (b && p >= b && p < b + fk.alloc[i].size)
			return i;
	}
	return -1;
}

/* Where a device address really is: an opened mapping, or as is. */
static void *fake_resolve(zsm_cu_deviceptr p, size_t n)
{
	for (int i = 0; i < FAKE_MAPS; i++) {
		struct fake_map *m = &fk.map[i];

		if (m->alloc < 0 || p < m->va || p >= m->va + m->size)
			continue;
		if (p + n > m->va + m->size) {
			fk.bad_ranges++;
			return NULL;
		}
		return fk.alloc[m->alloc].mem + (p - m->va);
	}
	return (void *)(uintptr_t)p;
}

/* Entry points the fake has nothing to do for. */
static zsm_cu_result fake_dev_ok(zsm_cu_device d)
{
	(void)d;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_ptr_ok(void *p)
{
	(void)p;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_record(zsm_cu_event ev, zsm_cu_stream st)
{
	(void)st;
	((struct fake_event *)ev)->wm = fk.nq;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_host_register(void *p, size_t n, unsigned flags)
{
	(void)p;
	(void)n;
	(void)flags;
	fk.pinned++;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_range_ok(zsm_cu_deviceptr p, size_t n)
{
	(void)p;
	(void)n;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_access(zsm_cu_deviceptr p, size_t n,
				 const zsm_cu_mem_access *a, size_t count)
{
	(void)p;
	(void)n;
	(void)a;
	return count == 1 ? ZSM_CU_SUCCESS : ZSM_CU_ERROR_INVALID_VALUE;
}

static zsm_cu_result fake_error_string(zsm_cu_result e, const char **s)
{
	(void)e;
	*s = "fake failure";
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_get_address_range(zsm_cu_deviceptr *base,
					    size_t *size, zsm_cu_deviceptr p)
{
	int i = fake_alloc_of(p);

	if (i < 0)
		return ZSM_CU_ERROR_INVALID_VALUE;
	*base = (uintptr_t)fk.alloc[i].mem;
	*size = fk.alloc[i].size;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_ipc_get(zsm_cu_ipc_handle *h, zsm_cu_deviceptr p)
{
	int i = fake_alloc_of(p);

	if (i < 0 || fk.alloc[i].vmm)
		return ZSM_CU_ERROR_INVALID_VALUE;
	memset(h, 0, sizeof(*h));
	memcpy(h->reserved, &i, sizeof(i));
	return ZSM_CU_SUCCESS;
}

static int fake_map_new(int alloc, zsm_cu_deviceptr *va)
{
	for (int i = 0; i < FAKE_MAPS; i++) {
		if (fk.map[i].alloc >= 0)
			continue;
		fk.map[i].alloc = alloc;
		fk.map[i].size = fk.alloc[alloc].size;
		fk.map[i].va = fk.next_va;
		fk.next_va += (zsm_cu_deviceptr)1 << 32;
		*va = fk.map[i].va;
		return 0;
	}
	return -1;
}

static int fake_map_drop(zsm_cu_deviceptr va)
{
	for (int i = 0; i < FAKE_MAPS; i++) {
		if (fk.map[i].alloc >= 0 && fk.map[i].va == va) {
			fk.map[i].alloc = -1;
			return 0;
		}
	}
	return -1;
}

static zsm_cu_result fake_ipc_open(zsm_cu_deviceptr *p, zsm_cu_ipc_handle h,
				   unsigned int flags)
{
	int i;

	(void)flags;
	memcpy(&i, h.reserved, sizeof(i));
	if (i < 0 || i >= FAKE_ALLOCS || !fk.alloc[i].mem ||
	    fake_map_new(i, p))
		return ZSM_CU_ERROR_INVALID_VALUE;
	fk.ipc_opens++;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_ipc_close(zsm_cu_deviceptr p)
{
	fk.ipc_closes++;
	fk.closes_off_main += !pthread_equal(pthread_self(), fk.main);
	return fake_map_drop(p) ? ZSM_CU_ERROR_INVALID_VALUE : ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_retain(zsm_cu_mem_handle *h, void *addr)
{
	int i = fake_alloc_of((uintptr_t)addr);

	if (i < 0 || !fk.alloc[i].vmm)
		return ZSM_CU_ERROR_INVALID_VALUE;
	*h = (zsm_cu_mem_handle)i + 1;
	return ZSM_CU_SUCCESS;
}

/* An export is a memfd holding the allocation's index. */
static zsm_cu_result fake_export(void *shareable, zsm_cu_mem_handle h,
				 int type, unsigned long long flags)
{
	int i = (int)h - 1, fd;

	(void)flags;
	if (type != ZSM_CU_MEM_HANDLE_TYPE_POSIX_FD || fk.no_export)
		return ZSM_CU_ERROR_INVALID_VALUE;
	fd = memfd_create("fake-cumem-export", MFD_CLOEXEC);
	if (fd < 0 || pwrite(fd, &i, sizeof(i), 0) != (ssize_t)sizeof(i))
		return ZSM_CU_ERROR_OUT_OF_MEMORY;
	*(int *)shareable = fd;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_import(zsm_cu_mem_handle *h, void *os_handle,
				 int type)
{
	int i = -1;

	if (type != ZSM_CU_MEM_HANDLE_TYPE_POSIX_FD ||
	    pread((int)(uintptr_t)os_handle, &i, sizeof(i), 0) !=
		    (ssize_t)sizeof(i))
		return ZSM_CU_ERROR_INVALID_VALUE;
	*h = (zsm_cu_mem_handle)i + 1;
	fk.imports++;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_release(zsm_cu_mem_handle h)
{
	(void)h;
	fk.releases++;
	return ZSM_CU_SUCCESS;
}

/* The reservation is made at map time, when the handle is known. */
static zsm_cu_result fake_reserve(zsm_cu_deviceptr *p, size_t size,
				  size_t align, zsm_cu_deviceptr addr,
				  unsigned long long flags)
{
	(void)size;
	(void)align;
	(void)addr;
	(void)flags;
	*p = fk.next_va;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_map(zsm_cu_deviceptr p, size_t size, size_t off,
			      zsm_cu_mem_handle h, unsigned long long flags)
{
	zsm_cu_deviceptr va;
	int i = (int)h - 1;

	(void)flags;
	if (off || i < 0 || size != fk.alloc[i].size || p != fk.next_va ||
	    fake_map_new(i, &va))
		return ZSM_CU_ERROR_INVALID_VALUE;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_unmap(zsm_cu_deviceptr p, size_t size)
{
	(void)size;
	fk.unmaps++;
	fk.closes_off_main += !pthread_equal(pthread_self(), fk.main);
	return fake_map_drop(p) ? ZSM_CU_ERROR_INVALID_VALUE : ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_bus_id(char *bus_id, int len, zsm_cu_device d)
{
	snprintf(bus_id, (size_t)len, "0000:%02x:00.0", d + 0x1b);
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_pointer_attr(void *data, int attr,
				       zsm_cu_deviceptr p)
{
	if (fake_alloc_of(p) < 0)
		return ZSM_CU_ERROR_INVALID_VALUE;
	if (attr == ZSM_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
		*(int *)data = 0;
	else if (attr == ZSM_CU_POINTER_ATTRIBUTE_CONTEXT)
		*(zsm_cu_context *)data = (zsm_cu_context)&fk;
	else
		return ZSM_CU_ERROR_INVALID_VALUE;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_ctx_retain(zsm_cu_context *ctx, zsm_cu_device d)
{
	(void)d;
	*ctx = (zsm_cu_context)&fk;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_device_get(zsm_cu_device *d, int ordinal)
{
	*d = ordinal;
	return ordinal == 0 ? ZSM_CU_SUCCESS : ZSM_CU_ERROR_INVALID_DEVICE;
}

static zsm_cu_result fake_new_handle(void **out, unsigned int flags)
{
	(void)flags;
	*out = &fk;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_stream_prio(void **out, unsigned int flags,
				      int prio)
{
	fk.stream_prio = prio;
	fk.streams++;
	return fake_new_handle(out, flags);
}

static zsm_cu_result fake_stream_destroy(void *st)
{
	fk.streams_gone++;
	return fake_ptr_ok(st);
}

static zsm_cu_result fake_ctx_get(zsm_cu_context *ctx)
{
	*ctx = (zsm_cu_context)&fk;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_prio_range(int *least, int *greatest)
{
	*least = 0;
	*greatest = -5;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_event_new(void **out, unsigned int flags)
{
	(void)flags;
	if (fk.nev == (int)(sizeof(fk.ev) / sizeof(fk.ev[0])))
		return ZSM_CU_ERROR_OUT_OF_MEMORY;
	*out = &fk.ev[fk.nev++];
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_queue(zsm_cu_deviceptr dst, zsm_cu_deviceptr src,
				size_t n)
{
	void *d = fake_resolve(dst, n), *s = fake_resolve(src, n);

	if (fk.fail_copy || !d || !s || fk.nq == 64)
		return ZSM_CU_ERROR_INVALID_VALUE;
	fk.q[fk.nq++] = (struct fake_copy){ .dst = d, .src = s, .n = n };
	fk.copies++;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_memcpy_async(zsm_cu_deviceptr dst,
				       zsm_cu_deviceptr src, size_t n,
				       zsm_cu_stream stream)
{
	(void)stream;
	return fake_queue(dst, src, n);
}

static zsm_cu_result fake_memcpy_batch(zsm_cu_deviceptr *dsts,
				       zsm_cu_deviceptr *srcs, size_t *sizes,
				       size_t count, zsm_cu_memcpy_attr *attrs,
				       size_t *idxs, size_t nattrs,
				       zsm_cu_stream stream)
{
	(void)stream;
	if (nattrs != 1 || idxs[0] != 0 ||
	    attrs[0].src_access_order != ZSM_CU_MEMCPY_SRC_ACCESS_ORDER_STREAM ||
	    !(attrs[0].flags & ZSM_CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE))
		fk.batch_bad_attr++;
	for (size_t i = 0; i < count; i++)
		if (fake_queue(dsts[i], srcs[i], sizes[i]))
			return ZSM_CU_ERROR_INVALID_VALUE;
	fk.batches++;
	return ZSM_CU_SUCCESS;
}

static zsm_cu_result fake_event_query(zsm_cu_event e)
{
	struct fake_event *ev = e;

	if (fk.landed >= ev->wm)
		return ZSM_CU_SUCCESS;
	memcpy(fk.q[fk.landed].dst, fk.q[fk.landed].src, fk.q[fk.landed].n);
	fk.landed++;
	return ZSM_CU_ERROR_NOT_READY;
}

/* Like an event's: the next queued copy lands at each look that finds
 * the stream busy. */
static zsm_cu_result fake_stream_query(zsm_cu_stream st)
{
	(void)st;
	if (fk.landed == fk.nq)
		return ZSM_CU_SUCCESS;
	memcpy(fk.q[fk.landed].dst, fk.q[fk.landed].src, fk.q[fk.landed].n);
	fk.landed++;
	return ZSM_CU_ERROR_NOT_READY;
}

static zsm_cu_result fake_attribute(int *value, int attribute,
				    zsm_cu_device d)
{
	(void)d;
	*value = attribute == ZSM_CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED
			 ? fk.dmabuf_attr
			 : 0;
	return ZSM_CU_SUCCESS;
}

/* A real fd the caller can close: /dev/null stands for the dma-buf. */
static zsm_cu_result fake_handle_range(void *handle, zsm_cu_deviceptr p,
				       size_t size, int type,
				       unsigned long long flags)
{
	(void)flags;
	fk.range_ptr = p;
	fk.range_size = size;
	fk.range_type = type;
	if (!size)
		return ZSM_CU_ERROR_INVALID_VALUE;
	*(int *)handle = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return ZSM_CU_SUCCESS;
}

static struct zsm_cuda_drv fake_table(void)
{
	struct zsm_cuda_drv t;

	memset(&t, 0, sizeof(t));
	t.lib = &fk; /* "open": one device */
	t.ndev = 1;
	t.ordinal = -1;
	t.get_error_string = fake_error_string;
	t.get_error_name = fake_error_string;
	t.device_get = fake_device_get;
	t.device_get_attribute = fake_attribute;
	t.device_primary_ctx_retain = fake_ctx_retain;
	t.device_get_pci_bus_id = fake_bus_id;
	t.device_primary_ctx_release = fake_dev_ok;
	t.ctx_set_current = fake_ptr_ok;
	t.pointer_get_attribute = fake_pointer_attr;
	t.mem_get_address_range = fake_get_address_range;
	t.ipc_get_mem_handle = fake_ipc_get;
	t.ipc_open_mem_handle = fake_ipc_open;
	t.ipc_close_mem_handle = fake_ipc_close;
	t.stream_create = fake_new_handle;
	t.stream_create_prio = fake_stream_prio;
	t.ctx_stream_prio_range = fake_prio_range;
	t.stream_destroy = fake_stream_destroy;
	t.ctx_get_current = fake_ctx_get;
	t.event_create = fake_event_new;
	t.stream_query = fake_stream_query;
	t.event_destroy = fake_ptr_ok;
	t.event_record = fake_record;
	t.event_query = fake_event_query;
	t.memcpy_async = fake_memcpy_async;
	t.mem_retain_allocation_handle = fake_retain;
	t.mem_export = fake_export;
	t.mem_import = fake_import;
	t.mem_release = fake_release;
	t.mem_address_reserve = fake_reserve;
	t.mem_address_free = fake_range_ok;
	t.mem_map = fake_map;
	t.mem_unmap = fake_unmap;
	t.mem_set_access = fake_access;
	t.mem_host_register = fake_host_register;
	t.mem_host_unregister = fake_ptr_ok;
	return t;
}

/* A fake allocation of size bytes, its bytes a pattern of seed. */
static unsigned char *fake_alloc(size_t size, int vmm, unsigned seed)
{
	for (int i = 0; i < FAKE_ALLOCS; i++) {
		if (fk.alloc[i].mem)
			continue;
		fk.alloc[i].mem = malloc(size);
		assert_non_null(fk.alloc[i].mem);
		fk.alloc[i].size = size;
		fk.alloc[i].vmm = vmm;
		for (size_t j = 0; j < size; j++)
			fk.alloc[i].mem[j] = (unsigned char)(seed + j * 31 +
							     (j >> 9));
		return fk.alloc[i].mem;
	}
	fail_msg("too many fake allocations");
	return NULL;
}

static int fake_setup(void **state)
{
	struct zsm_cuda_drv t = fake_table();

	memset(&fk, 0, sizeof(fk));
	for (int i = 0; i < FAKE_MAPS; i++)
		fk.map[i].alloc = -1;
	fk.next_va = FAKE_VA;
	fk.main = pthread_self();
	zsm_cuda_use_table(&t);
	return pair_setup(state);
}

static int fake_teardown(void **state)
{
	int ret = pair_teardown(state);

	/* Mappings close on their own thread: let it finish with the
	 * table before it goes. */
	zsm_assert_int_eq(zsm_ce_unmap_flush(5000), 0);
	zsm_param_load(NULL); /* a test may have changed them */
	zsm_cuda_use_table(NULL);
	for (int i = 0; i < FAKE_ALLOCS; i++)
		free(fk.alloc[i].mem);
	return ret;
}

/* regMr of device memory, as ce_mr.c does it. */
static struct zsm_ce_mr *gpu_reg(void *data, size_t size)
{
	struct zsm_ce_mr *mr = calloc(1, sizeof(*mr));

	assert_non_null(mr);
	zsm_assert_int_eq(zsm_ce_cuda_mr_prepare(data, size, &mr->g), 0);
	mr->gpu = 1;
	mr->base.type = ZSM_MEM_CUDA;
	mr->base.ops = &zsm_ce_comm_ops;
	return mr;
}

static void gpu_dereg(struct pair *p, struct zsm_ce_mr *mr)
{
	if (p && p->s)
		zsm_ce_chan_forget(p->s, &mr->g);
	zsm_ce_cuda_mr_release(&mr->g);
	free(mr);
}

/* Pump until req leaves PENDING; how many passes that took. */
static int pump_until_done(struct zsm_ce_req *req)
{
	int passes = 0;

	while (state_of(req) == ZSM_REQ_PENDING && passes < 1000) {
		pump(1);
		passes++;
	}
	return passes;
}

/* Send len bytes of GPU memory at src (registered as smr) into host
 * memory at dst, pumping until the send is over. */
static void gpu_to_host(struct pair *p, struct zsm_ce_req *s,
			struct zsm_ce_req *r, void *src, size_t len,
			struct zsm_ce_mr *smr, void *dst, size_t cap, int tag)
{
	void *bufs[1] = { dst };

	post_recv(p, r, 1, bufs, &cap, (int[]){ tag }, NULL);
	post_send(p, s, src, len, tag, smr);
	pump_until_done(s);
}

/* The closes posted so far are over (they run on the unmap thread). */
static void closes_done(void)
{
	zsm_assert_int_eq(zsm_ce_unmap_flush(5000), 0);
}

/* regMr of cudaMalloc memory records its IPC handle, the allocation's
 * bounds and a number; cuMem memory is exported as an fd, closed again
 * by the release; memory CUDA does not know is refused. */
static void test_ce_cuda_mr_prepare_records_the_allocation(void **state)
{
	unsigned char *legacy = fake_alloc(4096, 0, 1);
	unsigned char *vmm = fake_alloc(8192, 1, 2);
	struct zsm_ce_gpu_mr a, b;
	char host[64];

	(void)state;
	zsm_assert_int_eq(zsm_ce_cuda_mr_prepare(legacy + 100, 200, &a), 0);
	zsm_assert_int_eq(a.vmm_fd, -1);
	zsm_assert_int_eq(a.base, (uintptr_t)legacy);
	zsm_assert_int_eq(a.alloc_size, 4096);
	assert_true(a.reg_id != 0);

	zsm_assert_int_eq(zsm_ce_cuda_mr_prepare(vmm + 4096, 4096, &b), 0);
	assert_true(b.vmm_fd >= 0);
	zsm_assert_int_eq(fcntl(b.vmm_fd, F_GETFD) >= 0, 1);
	zsm_assert_int_eq(b.base, (uintptr_t)vmm);
	assert_true(b.reg_id != a.reg_id);
	assert_true(b.primary);
	{
		int fd = b.vmm_fd;

		zsm_ce_cuda_mr_release(&b);
		zsm_assert_int_eq(fcntl(fd, F_GETFD), -1);
		zsm_assert_int_eq(b.vmm_fd, -1);
	}
	zsm_ce_cuda_mr_release(&a);

	zsm_assert_int_eq(zsm_ce_cuda_mr_prepare(host, sizeof(host), &a),
			  -EINVAL);
	/* Running past the end of the allocation is refused too. */
	zsm_assert_int_eq(zsm_ce_cuda_mr_prepare(legacy + 4000, 200, &a),
			  -EINVAL);
}

/* Sends out of one allocation open it once; each lands where it should
 * (the offset within the allocation is honoured), and a send is done only
 * when the copy's event says so. */
static void test_ce_cuda_opens_each_allocation_once(void **state)
{
	struct pair *p = need_pair(state);
	unsigned char *src = fake_alloc(1 << 16, 1, 7);
	unsigned char *dst = fake_alloc(1 << 16, 0, 0);
	struct zsm_ce_mr *smr = gpu_reg(src, 1 << 16);
	struct zsm_ce_mr *rmr = gpu_reg(dst, 1 << 16);
	const size_t off[3] = { 0, 5000, 40000 }, len[3] = { 777, 1, 20000 };

	memset(dst, 0, 1 << 16);
	for (int i = 0; i < 3; i++) {
		struct zsm_ce_req s, r;
		void *bufs[1] = { dst + 2 * off[i] / 3 };
		size_t cap = len[i] + 10;

		post_recv(p, &r, 1, bufs, &cap, (int[]){ 1 }, &rmr);
		post_send(p, &s, src + off[i], len[i], 1, smr);
		pump(1);
		/* The copy is queued but its event has not fired. */
		zsm_assert_int_eq(state_of(&r), ZSM_REQ_PENDING);
		zsm_assert_int_eq(state_of(&s), ZSM_REQ_PENDING);
		pump_until_done(&r);
		zsm_assert_int_eq(state_of(&r), ZSM_REQ_DONE);
		pump_until_done(&s);
		zsm_assert_int_eq(state_of(&s), ZSM_REQ_DONE);
		zsm_assert_int_eq(r.base.sizes[0], (int)len[i]);
		assert_memory_equal(bufs[0], src + off[i], len[i]);
	}
	zsm_assert_int_eq(fk.imports, 1);
	zsm_assert_int_eq(fk.copies, 3);
	zsm_assert_int_eq(fk.bad_ranges, 0);
	/* The copy stream goes first: a kernel may spin until it lands. */
	zsm_assert_int_eq(fk.stream_prio, -5);
	gpu_dereg(p, smr);
	gpu_dereg(NULL, rmr);
}

/* ZSM_CE_GPU_UNMAP as a test sets it (zsm_param_load reads it here). */
static const char *unmap_value;

static const char *unmap_env(const char *name)
{
	return strcmp(name, "ZSM_CE_GPU_UNMAP") == 0 ? unmap_value
						     : getenv(name);
}

static void set_unmap(const char *value)
{
	unmap_value = value;
	zsm_assert_int_eq(zsm_param_load(unmap_env), 0);
}

/* ZSM_CE_GPU_UNMAP=1: deregMr on the sender closes the receiver's
 * mapping of it (at the receiver's next pass); a new registration is
 * opened anew. */
static void test_ce_cuda_dereg_closes_the_peer_mapping(void **state)
{
	struct pair *p = need_pair(state);
	unsigned char *src = fake_alloc(4096, 1, 3), *dst = calloc(1, 4096);
	struct zsm_ce_mr *smr = gpu_reg(src, 4096);
	struct zsm_ce_req s, r;
	size_t cap = 4096;
	int releases;

	assert_non_null(dst);
	set_unmap("1");
	/* A GPU send into host memory. */
	gpu_to_host(p, &s, &r, src, 4096, smr, dst, cap, 2);
	zsm_assert_int_eq(state_of(&s), ZSM_REQ_DONE);
	assert_memory_equal(dst, src, 4096);
	zsm_assert_int_eq(fk.imports, 1);
	zsm_assert_int_eq(fk.unmaps, 0);

	/* regMr released the handle it retained to export; the receiver
	 * holds the imported one. */
	releases = fk.releases;
	gpu_dereg(p, smr);
	pump(1);
	closes_done();
	zsm_assert_int_eq(fk.unmaps, 1);
	zsm_assert_int_eq(fk.releases, releases + 1);
	/* Not on the engine, which must not wait for the device. */
	zsm_assert_int_eq(fk.closes_off_main, 1);

	smr = gpu_reg(src, 4096);
	memset(dst, 0, 4096);
	gpu_to_host(p, &s, &r, src, 4096, smr, dst, cap, 2);
	zsm_assert_int_eq(state_of(&s), ZSM_REQ_DONE);
	assert_memory_equal(dst, src, 4096);
	zsm_assert_int_eq(fk.imports, 2);
	gpu_dereg(p, smr);
	free(dst);
}

/* ZSM_CE_GPU_UNMAP=0 (the default): deregMr notices are read, mappings
 * stay until the channel closes. */
static void test_ce_cuda_unmap_off_keeps_mappings_until_close(void **state)
{
	struct pair *p = need_pair(state);
	unsigned char *src = fake_alloc(2048, 1, 8), dst[2048];
	struct zsm_ce_mr *smr = gpu_reg(src, 2048);
	struct zsm_ce_req s, r;
	size_t cap = sizeof(dst);

	set_unmap("0");
	gpu_to_host(p, &s, &r, src, 2048, smr, dst, cap, 5);
	zsm_assert_int_eq(state_of(&s), ZSM_REQ_DONE);
	gpu_dereg(p, smr);
	pump(2);
	zsm_assert_int_eq(fk.unmaps, 0);
	zsm_assert_int_eq(p->r->gpu.forget_tail,
			  atomic_load(&p->r->win->forget_head));
	zsm_ce_chan_close(p->r, -ECANCELED);
	p->r = NULL;
	closes_done();
	zsm_assert_int_eq(fk.unmaps, 1);
}

/* ZSM_CE_GPU_UNMAP=1 and more deregMr notices than the window holds:
 * the receiver closes every mapping rather than miss one. */
static void test_ce_cuda_forget_overflow_closes_everything(void **state)
{
	struct pair *p = need_pair(state);
	unsigned char *src = fake_alloc(1024, 0, 9), dst[1024];
	struct zsm_ce_mr *smr = gpu_reg(src, 1024);
	struct zsm_ce_gpu_mr other = { .reg_id = ~0ULL };
	struct zsm_ce_req s, r;
	size_t cap = sizeof(dst);

	set_unmap("1");
	gpu_to_host(p, &s, &r, src, 1024, smr, dst, cap, 3);
	zsm_assert_int_eq(fk.ipc_opens, 1);
	for (int i = 0; i <= ZSM_CE_FORGET; i++)
		zsm_ce_chan_forget(p->s, &other);
	pump(1);
	closes_done();
	zsm_assert_int_eq(fk.ipc_closes, 1);
	zsm_assert_int_eq(p->r->gpu.maps == NULL, 1);
	gpu_dereg(p, smr);
}

/* Closing the receiving channel closes what it opened. */
static void test_ce_cuda_close_releases_mappings(void **state)
{
	struct pair *p = need_pair(state);
	unsigned char *a = fake_alloc(2048, 1, 4), *b = fake_alloc(2048, 0, 5);
	struct zsm_ce_mr *ma = gpu_reg(a, 2048), *mb = gpu_reg(b, 2048);
	unsigned char dst[2048];
	struct zsm_ce_req s, r;
	size_t cap = sizeof(dst);

	gpu_to_host(p, &s, &r, a, 2048, ma, dst, cap, 1);
	gpu_to_host(p, &s, &r, b, 2048, mb, dst, cap, 1);
	assert_memory_equal(dst, b, 2048);
	zsm_assert_int_eq(fk.imports + fk.ipc_opens, 2);
	zsm_ce_chan_close(p->r, -ECANCELED);
	p->r = NULL;
	closes_done();
	zsm_assert_int_eq(fk.unmaps, 1);
	zsm_assert_int_eq(fk.ipc_closes, 1);
	zsm_assert_int_eq(fk.closes_off_main, 2);
	gpu_dereg(NULL, ma);
	gpu_dereg(NULL, mb);
}

/* Teardown ends the unmap thread once the closes queued on it are over;
 * a close after that starts it again. */
static void test_ce_cuda_unmap_stop_finishes_the_queue(void **state)
{
	struct pair *p = need_pair(state);
	unsigned char *a = fake_alloc(2048, 0, 6), dst[2048];
	struct zsm_ce_mr *ma = gpu_reg(a, 2048);
	struct zsm_ce_req s, r;
	size_t cap = sizeof(dst);
	void *second = NULL;

	gpu_to_host(p, &s, &r, a, 2048, ma, dst, cap, 1);
	zsm_ce_chan_close(p->r, -ECANCELED);
	p->r = NULL;
	zsm_ce_unmap_stop(5000);
	zsm_assert_int_eq(fk.ipc_closes, 1);
	zsm_assert_int_eq(fk.closes_off_main, 1);

	zsm_assert_int_eq(pair_setup(&second), 0);
	gpu_to_host(second, &s, &r, a, 2048, ma, dst, cap, 1);
	zsm_assert_int_eq(state_of(&s), ZSM_REQ_DONE);
	pair_teardown(&second);
	closes_done();
	zsm_assert_int_eq(fk.ipc_closes, 2);
	zsm_assert_int_eq(fk.closes_off_main, 2);
	gpu_dereg(NULL, ma);
}

/* Host bytes into a GPU buffer go through the bounce buffer, piece by
 * piece, and land whole. */
static void test_ce_cuda_host_to_gpu_lands_whole(void **state)
{
	struct pair *p = need_pair(state);
	size_t len = 2 * ZSM_CE_CHUNK + 999;
	unsigned char *src = malloc(len), *dst = fake_alloc(len, 1, 0);
	struct zsm_ce_mr *rmr = gpu_reg(dst, len);
	struct zsm_ce_req s, r;
	void *bufs[1] = { dst };

	assert_non_null(src);
	for (size_t i = 0; i < len; i++)
		src[i] = (unsigned char)(i * 11 + 5);
	memset(dst, 0, len);
	post_recv(p, &r, 1, bufs, &len, (int[]){ 8 }, &rmr);
	post_send(p, &s, src, len, 8, NULL);
	pump_until_done(&r);
	zsm_assert_int_eq(state_of(&r), ZSM_REQ_DONE);
	pump_until_done(&s);
	zsm_assert_int_eq(state_of(&s), ZSM_REQ_DONE);
	zsm_assert_int_eq(r.base.sizes[0], (int)len);
	assert_memory_equal(dst, src, len);
	zsm_assert_int_eq(fk.copies, 3);
	/* Up from pinned memory: pageable copies may wait for the kernel
	 * that waits for them. */
	zsm_assert_int_eq(fk.pinned, 1);
	gpu_dereg(NULL, rmr);
	free(src);
}

/* A copy the driver refuses fails the receive and the send, and the
 * channel goes on to the next message. */
static void test_ce_cuda_failed_copy_fails_both(void **state)
{
	struct pair *p = need_pair(state);
	unsigned char *src = fake_alloc(512, 0, 6), dst[512];
	struct zsm_ce_mr *smr = gpu_reg(src, 512);
	struct zsm_ce_req s, r;
	void *bufs[1] = { dst };
	size_t cap = sizeof(dst);

	fk.fail_copy = 1;
	gpu_to_host(p, &s, &r, src, 512, smr, bufs[0], cap, 4);
	assert_true(state_of(&r) < 0);
	assert_true(state_of(&s) < 0);

	fk.fail_copy = 0;
	gpu_to_host(p, &s, &r, src, 512, smr, bufs[0], cap, 4);
	zsm_assert_int_eq(state_of(&r), ZSM_REQ_DONE);
	zsm_assert_int_eq(state_of(&s), ZSM_REQ_DONE);
	assert_memory_equal(dst, src, 512);
	gpu_dereg(p, smr);
}

/* Several GPU-to-GPU messages: queued together, not one per event. */
static void pipeline_four(struct pair *p)
{
	unsigned char *src = fake_alloc(1 << 14, 1, 21);
	unsigned char *dst = fake_alloc(1 << 14, 1, 0);
	struct zsm_ce_mr *smr = gpu_reg(src, 1 << 14);
	struct zsm_ce_mr *rmr = gpu_reg(dst, 1 << 14);
	struct zsm_ce_req s[4], r[4];
	size_t cap = 4096;

	memset(dst, 0, 1 << 14);
	for (int i = 0; i < 4; i++) {
		void *bufs[1] = { dst + i * 4096 };

		post_recv(p, &r[i], 1, bufs, &cap, (int[]){ i }, &rmr);
	}
	for (int i = 0; i < 4; i++)
		post_send(p, &s[i], src + i * 4096 + i, 1000 + i, i, smr);
	pump(1);
	zsm_assert_int_eq(fk.copies, 4);
	for (int i = 0; i < 4; i++)
		zsm_assert_int_eq(state_of(&r[i]), ZSM_REQ_PENDING);
	pump_until_done(&s[3]);
	for (int i = 0; i < 4; i++) {
		zsm_assert_int_eq(state_of(&r[i]), ZSM_REQ_DONE);
		zsm_assert_int_eq(state_of(&s[i]), ZSM_REQ_DONE);
		zsm_assert_int_eq(r[i].base.sizes[0], 1000 + i);
		assert_memory_equal(dst + i * 4096, src + i * 4096 + i,
				    1000 + i);
	}
	zsm_assert_int_eq(fk.bad_ranges, 0);
	gpu_dereg(p, smr);
	gpu_dereg(NULL, rmr);
}

/* Two receiving channels copy on one stream, made once and destroyed
 * with the last: a stream each would outnumber the device's hardware
 * queues and put copies behind NCCL's kernel. */
static void test_ce_cuda_channels_share_one_stream(void **state)
{
	struct pair *p = need_pair(state);
	void *second = NULL;
	struct pair *q;

	pipeline_four(p);
	zsm_assert_int_eq(fk.streams, 1);
	zsm_assert_int_eq(pair_setup(&second), 0);
	q = second;
	assert_non_null(q);
	fk.copies = 0;
	pipeline_four(q);
	zsm_assert_int_eq(fk.streams, 1);
	zsm_ce_chan_close(p->r, -ECANCELED);
	p->r = NULL;
	closes_done(); /* the fake table is not thread-safe */
	zsm_assert_int_eq(fk.streams_gone, 0);
	fk.copies = 0;
	pipeline_four(q);
	zsm_ce_chan_close(q->r, -ECANCELED);
	q->r = NULL;
	closes_done();
	zsm_assert_int_eq(fk.streams_gone, 1);
	pair_teardown(&second);
	/* A new channel after that makes a new one. */
	zsm_assert_int_eq(pair_setup(&second), 0);
	fk.copies = 0;
	pipeline_four(second);
	zsm_assert_int_eq(fk.streams, 2);
	pair_teardown(&second);
	closes_done();
	zsm_assert_int_eq(fk.streams_gone, 2);
}

/* More messages than the pipe holds: the rest wait their turn untaken
 * and still land in order. */
static void test_ce_cuda_full_pipe_takes_no_more(void **state)
{
	struct pair *p = need_pair(state);
	enum { N = ZSM_CE_PIPE + 4 };
	unsigned char *src = fake_alloc(N * 64, 1, 33);
	unsigned char *dst = fake_alloc(N * 64, 0, 0);
	struct zsm_ce_mr *smr = gpu_reg(src, N * 64);
	struct zsm_ce_mr *rmr = gpu_reg(dst, N * 64);
	struct zsm_ce_req s[N], r[N];
	size_t cap = 64;

	memset(dst, 0, N * 64);
	for (int i = 0; i < N; i++) {
		void *bufs[1] = { dst + i * 64 };

		post_recv(p, &r[i], 1, bufs, &cap, (int[]){ 1 }, &rmr);
		post_send(p, &s[i], src + i * 64, 64, 1, smr);
	}
	pump(1);
	zsm_assert_int_eq(fk.copies, ZSM_CE_PIPE);
	zsm_assert_int_eq(p->r->rx.req == NULL, 1);
	pump_until_done(&s[N - 1]);
	for (int i = 0; i < N; i++)
		zsm_assert_int_eq(state_of(&r[i]), ZSM_REQ_DONE);
	assert_memory_equal(dst, src, N * 64);
	gpu_dereg(p, smr);
	gpu_dereg(NULL, rmr);
}

static void test_ce_cuda_pipelines_gpu_copies(void **state)
{
	pipeline_four(need_pair(state));
	zsm_assert_int_eq(fk.batches, 0);
}

/* Where the driver has cuMemcpyBatchAsync, one call queues them all,
 * in stream order and with the overlap-with-compute hint. */
static void test_ce_cuda_batches_copies_where_the_driver_can(void **state)
{
	struct pair *p = need_pair(state);
	struct zsm_cuda_drv t = fake_table();

	t.memcpy_batch = fake_memcpy_batch;
	zsm_cuda_use_table(&t);
	pipeline_four(p);
	zsm_assert_int_eq(fk.batches, 1);
	zsm_assert_int_eq(fk.batch_bad_attr, 0);
}

/* dma-bufs only where every device and the driver can; the fd covers
 * whole pages, and the offset finds the buffer in it. */
static void test_ce_cuda_dmabuf_whole_pages(void **state)
{
	struct zsm_cuda_drv t = fake_table();
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t at = FAKE_VA + 5 * page + 100;
	void *base = NULL;
	uint64_t offset = 0;
	int fd = 7;

	(void)state;
	fk.dmabuf_attr = 1;
	zsm_cuda_use_table(&t); /* no cuMemGetHandleForAddressRange */
	zsm_assert_int_eq(zsm_cuda_dmabuf_ok(), 0);
	zsm_assert_int_eq(zsm_cuda_dmabuf_get((void *)at, 10, &fd, &base,
						 &offset),
			  -ENOSYS);
	zsm_assert_int_eq(fd, -1);
	t.mem_get_handle_range = fake_handle_range;
	zsm_cuda_use_table(&t);
	zsm_assert_int_eq(zsm_cuda_dmabuf_ok(), 1);
	fk.dmabuf_attr = 0;
	zsm_assert_int_eq(zsm_cuda_dmabuf_ok(), 0);

	/* 2 pages and a bit from 100 bytes into a page: 3 pages. */
	zsm_assert_int_eq(zsm_cuda_dmabuf_get((void *)at, 2 * page + 10,
						 &fd, &base, &offset),
			  0);
	assert_true(fd >= 0);
	close(fd);
	zsm_assert_int_eq(fk.range_type,
			  ZSM_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD);
	assert_true(fk.range_ptr == FAKE_VA + 5 * page);
	assert_true(fk.range_size == 3 * page);
	assert_true((uintptr_t)base == FAKE_VA + 5 * page);
	assert_true(offset == 100);
	/* A driver error is an error, and no fd. */
	fd = 7;
	zsm_assert_int_eq(zsm_cuda_dmabuf_get((void *)(FAKE_VA + page), 0,
						 &fd, &base, &offset),
			  -EINVAL);
	zsm_assert_int_eq(fd, -1);
}

/* A window of ours in fake GPU memory, named by a handle as the core
 * names it for peers. */
static struct zsm_ce_mr *gpu_window(struct pair *p, void *data, size_t size,
				    struct zsm_rma_window *win)
{
	struct zsm_mr *m;

	memset(win, 0, sizeof(*win));
	zsm_assert_int_eq(zsm_ce_mr_reg_window(&p->rc, data, size,
					       ZSM_MEM_CUDA, &m, win),
			  0);
	zsm_assert_int_eq(zsm_handle_open(ZSM_H_MR, m, &m->handle), 0);
	win->id = m->handle;
	assert_true(win->flags & ZSM_WIN_GPU);
	return zsm_container_of(m, struct zsm_ce_mr, base);
}

static void gpu_window_drop(struct zsm_ce_mr *mr)
{
	void *obj;

	zsm_assert_int_eq(zsm_handle_close(mr->base.handle, ZSM_H_MR, &obj),
			  0);
	zsm_ce_mr_free(&mr->base);
}

/* Post a put of len bytes from src (registration smr, or NULL) to off of
 * window dst, then (sig not NULL) add add to the word at sig_off of
 * window sig. */
static void post_put(struct pair *p, struct zsm_ce_req *req, void *src,
		     size_t len, struct zsm_ce_mr *smr,
		     const struct zsm_rma_window *dst, uint64_t off,
		     const struct zsm_rma_window *sig, uint64_t sig_off,
		     uint64_t add)
{
	req_init(req, &p->sc, ZSM_REQ_PUT, 1);
	req->base.data[0] = src;
	req->base.len[0] = len;
	req->base.mh[0] = smr ? &smr->base : NULL;
	req->base.rma.addr = dst ? dst->addr + off : 0;
	req->base.rma.key = dst ? dst->key : 0;
	req->base.rma.dst_id = dst ? dst->id : 0;
	req->base.rma.dst_flags = dst ? dst->flags : 0;
	req->base.rma.sig_id = sig ? sig->id : 0;
	req->base.rma.sig_off = sig_off;
	req->base.rma.sig_add = add;
	zsm_assert_int_eq(zsm_ce_comm_ops.post[req->base.type](&req->base), 0);
}

/*
 * A put from GPU memory into a GPU window, with a signal into another GPU
 * window: the owner copies on its stream, and the signal word changes
 * only once every byte is in place (looked at after each engine pass);
 * a signal alone then adds to it.
 */
static void test_ce_cuda_put_signals_after_its_bytes(void **state)
{
	struct pair *p = need_pair(state);
	size_t len = 3 * 4096 + 17, off = 1001;
	unsigned char *src = fake_alloc(len, 0, 3);
	unsigned char *dst = fake_alloc(len + off + 64, 1, 0);
	uint64_t *sig = (uint64_t *)(void *)fake_alloc(64, 0, 0);
	struct zsm_ce_mr *smr = gpu_reg(src, len), *dmr, *gmr;
	struct zsm_rma_window dwin, gwin;
	struct zsm_ce_req req;
	int passes = 0;

	memset(dst, 0, len + off + 64);
	memset(sig, 0, 64);
	dmr = gpu_window(p, dst, len + off + 64, &dwin);
	gmr = gpu_window(p, sig, 64, &gwin);
	post_put(p, &req, src, len, smr, &dwin, off, &gwin, 8, 5);
	while (state_of(&req) == ZSM_REQ_PENDING && passes++ < 1000) {
		pump(1);
		if (sig[1])
			assert_memory_equal(dst + off, src, len);
	}
	zsm_assert_int_eq(state_of(&req), ZSM_REQ_DONE);
	assert_memory_equal(dst + off, src, len);
	zsm_assert_int_eq(sig[1], 5);
	zsm_assert_int_eq(sig[0], 0);
	zsm_assert_int_eq(dst[off - 1], 0);
	zsm_assert_int_eq(dst[off + len], 0);

	post_put(p, &req, NULL, 0, NULL, NULL, 0, &gwin, 8, 7);
	pump_until_done(&req);
	zsm_assert_int_eq(state_of(&req), ZSM_REQ_DONE);
	zsm_assert_int_eq(sig[1], 12);
	gpu_window_drop(dmr);
	gpu_window_drop(gmr);
	gpu_dereg(p, smr);
}

/*
 * A GPU window whose cuMem allocation cannot be exported (NCCL's own):
 * its registration still works, a put from it goes out through its
 * pinned host mirror (copied down first) into a host window, and one
 * into it from host memory is copied up; both byte-exact.
 */
static void test_ce_cuda_unexportable_window_goes_through_host(void **state)
{
	struct pair *p = need_pair(state);
	size_t len = (2u << 20) + 77; /* past the shared-copy size */
	unsigned char *gwin = fake_alloc(len, 1, 5);
	unsigned char *hwin = calloc(1, len), *src = malloc(len);
	uint64_t *sig = calloc(8, sizeof(uint64_t));
	struct zsm_rma_window gw, hw, sw;
	struct zsm_ce_mr *gmr, *hmr, *smr;
	struct zsm_ce_req req;
	struct zsm_mr *m;
	int pinned;

	assert_non_null(hwin);
	assert_non_null(src);
	assert_non_null(sig);
	fk.no_export = 1;
	pinned = fk.pinned;
	gmr = gpu_window(p, gwin, len, &gw);
	assert_non_null(gmr->mirror.host);
	zsm_assert_int_eq(fk.pinned, pinned + 1);
	zsm_assert_int_eq(zsm_ce_mr_reg_window(&p->rc, hwin, len,
					       ZSM_MEM_HOST, &m, &hw),
			  0);
	zsm_assert_int_eq(zsm_handle_open(ZSM_H_MR, m, &m->handle), 0);
	hw.id = m->handle;
	hmr = zsm_container_of(m, struct zsm_ce_mr, base);
	zsm_assert_int_eq(zsm_ce_mr_reg_window(&p->rc, sig, 64, ZSM_MEM_HOST,
					       &m, &sw),
			  0);
	zsm_assert_int_eq(zsm_handle_open(ZSM_H_MR, m, &m->handle), 0);
	sw.id = m->handle;
	smr = zsm_container_of(m, struct zsm_ce_mr, base);

	/* Out of the GPU window, into host memory. */
	post_put(p, &req, gwin, len, gmr, &hw, 0, &sw, 0, 1);
	pump_until_done(&req);
	zsm_assert_int_eq(state_of(&req), ZSM_REQ_DONE);
	assert_memory_equal(hwin, gwin, len);
	zsm_assert_int_eq(sig[0], 1);
	/* Into it, from host memory. */
	for (size_t i = 0; i < len; i++)
		src[i] = (unsigned char)(i * 7 + 1);
	post_put(p, &req, src, len, NULL, &gw, 0, &sw, 0, 1);
	pump_until_done(&req);
	zsm_assert_int_eq(state_of(&req), ZSM_REQ_DONE);
	assert_memory_equal(gwin, src, len);
	zsm_assert_int_eq(sig[0], 2);
	gpu_window_drop(gmr);
	gpu_window_drop(hmr);
	gpu_window_drop(smr);
	free(hwin);
	free(src);
	free(sig);
}

/* A put into a process that has no window at all is refused (the owner
 * still looks at its slots), not left waiting. */
static void test_ce_cuda_put_without_windows_is_refused(void **state)
{
	struct pair *p = need_pair(state);
	unsigned char src[64], dst[64] = {0};
	struct zsm_rma_window w = {.addr = (uint64_t)(uintptr_t)dst,
				   .key = (uint64_t)getpid(),
				   .size = sizeof(dst), .id = 0x1234};
	struct zsm_ce_req req;

	memset(src, 7, sizeof(src));
	zsm_assert_int_eq(zsm_ce_windows, 0);
	post_put(p, &req, src, sizeof(src), NULL, &w, 0, NULL, 0, 0);
	pump_until_done(&req);
	zsm_assert_int_eq(state_of(&req), -EPROTO);
	zsm_assert_int_eq(dst[0], 0);
}

/* A put past its window's end fails the put and the owner's comm, and
 * writes nothing. */
static void test_ce_cuda_put_outside_window_fails(void **state)
{
	struct pair *p = need_pair(state);
	unsigned char *src = fake_alloc(256, 0, 9);
	unsigned char *dst = fake_alloc(512, 1, 0);
	struct zsm_ce_mr *smr = gpu_reg(src, 256), *dmr;
	struct zsm_rma_window dwin;
	struct zsm_ce_req req;

	memset(dst, 0, 512);
	dmr = gpu_window(p, dst, 512, &dwin);
	/* Our own check is the core's: forge the descriptor. */
	dwin.size = 4096;
	post_put(p, &req, src, 256, smr, &dwin, 300, NULL, 0, 0);
	pump_until_done(&req);
	zsm_assert_int_eq(state_of(&req), -EPROTO);
	for (int i = 0; i < 512; i++)
		zsm_assert_int_eq(dst[i], 0);
	gpu_window_drop(dmr);
	gpu_dereg(p, smr);
}

/* A host window of ours, named by a handle as the core names it. */
static struct zsm_ce_mr *host_window(struct pair *p, void *data, size_t size,
				     struct zsm_rma_window *win)
{
	struct zsm_mr *m;

	memset(win, 0, sizeof(*win));
	zsm_assert_int_eq(zsm_ce_mr_reg_window(&p->rc, data, size,
					       ZSM_MEM_HOST, &m, win),
			  0);
	zsm_assert_int_eq(zsm_handle_open(ZSM_H_MR, m, &m->handle), 0);
	win->id = m->handle;
	return zsm_container_of(m, struct zsm_ce_mr, base);
}

/* Post a get of len bytes at off of window src into dst (registration
 * dmr, or NULL for host memory). */
static void post_get(struct pair *p, struct zsm_ce_req *req, void *dst,
		     size_t len, struct zsm_ce_mr *dmr,
		     const struct zsm_rma_window *src, uint64_t off)
{
	req_init(req, &p->sc, ZSM_REQ_GET, 1);
	req->base.data[0] = dst;
	req->base.len[0] = len;
	req->base.mh[0] = dmr ? &dmr->base : NULL;
	req->base.rma.addr = src->addr + off;
	req->base.rma.key = src->key;
	req->base.rma.dst_id = src->id;
	req->base.rma.dst_flags = src->flags;
	zsm_assert_int_eq(zsm_ce_comm_ops.post[req->base.type](&req->base), 0);
}

/* Get len bytes at off of window src into dst + 1 (dst poisoned first),
 * pumping until done: its state; the bytes around it keep the poison. */
static int get_into(struct pair *p, unsigned char *dst, size_t cap,
		    struct zsm_ce_mr *dmr, const struct zsm_rma_window *src,
		    uint64_t off, size_t len)
{
	struct zsm_ce_req req;

	assert_true(len + 2 <= cap);
	memset(dst, 0xee, cap);
	post_get(p, &req, dst + 1, len, dmr, src, off);
	pump_until_done(&req);
	zsm_assert_int_eq(dst[0], 0xee);
	zsm_assert_int_eq(dst[len + 1], 0xee);
	if (state_of(&req) == ZSM_REQ_DONE)
		zsm_assert_int_eq(req.base.sizes[0], (int)len);
	return state_of(&req);
}

/*
 * Gets out of GPU windows the sender can open (an IPC handle, a cuMem
 * export): at odd offsets and sizes, into host memory and into GPU
 * memory, byte-exact and nothing around them; each allocation is opened
 * once by the getting side, whatever the number of gets.
 */
static void test_ce_cuda_get_from_gpu_windows(void **state)
{
	struct pair *p = need_pair(state);
	const size_t size = 3 * 4096 + 55;
	const size_t offs[3] = { 0, 3, 4099 }, lens[3] = { 1, 4097, 7777 };
	unsigned char *legacy = fake_alloc(size, 0, 11);
	unsigned char *vmm = fake_alloc(size, 1, 12);
	unsigned char *gdst = fake_alloc(size, 0, 0);
	unsigned char *hdst = malloc(size);
	struct zsm_ce_mr *lmr, *vmr, *dmr = gpu_reg(gdst, size);
	struct zsm_rma_window lw, vw;

	assert_non_null(hdst);
	lmr = gpu_window(p, legacy, size, &lw);
	vmr = gpu_window(p, vmm, size, &vw);
	for (int i = 0; i < 3; i++) {
		zsm_assert_int_eq(get_into(p, hdst, size, NULL, &lw, offs[i],
					   lens[i]),
				  ZSM_REQ_DONE);
		assert_memory_equal(hdst + 1, legacy + offs[i], lens[i]);
		zsm_assert_int_eq(get_into(p, gdst, size, dmr, &vw, offs[i],
					   lens[i]),
				  ZSM_REQ_DONE);
		assert_memory_equal(gdst + 1, vmm + offs[i], lens[i]);
	}
	zsm_assert_int_eq(fk.ipc_opens, 1);
	zsm_assert_int_eq(fk.imports, 1);
	zsm_assert_int_eq(fk.bad_ranges, 0);
	gpu_window_drop(lmr);
	gpu_window_drop(vmr);
	gpu_dereg(NULL, dmr);
	free(hdst);
}

/*
 * A GPU window the sender cannot open (no shareable handle): its owner
 * copies the bytes down into the mirror before it answers, so a get
 * reads what the GPU holds now, not what the mirror held (GPU writes
 * never reach it).
 */
static void test_ce_cuda_get_from_staged_window_copies_down(void **state)
{
	struct pair *p = need_pair(state);
	const size_t size = 2 * 4096 + 9;
	unsigned char *gwin = fake_alloc(size, 1, 5);
	unsigned char *dst = malloc(size);
	unsigned char *gdst = fake_alloc(size, 0, 0);
	struct zsm_ce_mr *gmr, *dmr = gpu_reg(gdst, size);
	struct zsm_rma_window gw;

	assert_non_null(dst);
	fk.no_export = 1;
	gmr = gpu_window(p, gwin, size, &gw);
	assert_non_null(gmr->mirror.host);
	memset(gmr->mirror.host, 0, size);
	/* The GPU's own writes, after registration. */
	for (size_t i = 0; i < size; i++)
		gwin[i] = (unsigned char)(i * 13 + 7);
	zsm_assert_int_eq(get_into(p, dst, size, NULL, &gw, 17, 4001),
			  ZSM_REQ_DONE);
	assert_memory_equal(dst + 1, gwin + 17, 4001);
	zsm_assert_int_eq(get_into(p, gdst, size, dmr, &gw, 1, size - 3),
			  ZSM_REQ_DONE);
	assert_memory_equal(gdst + 1, gwin + 1, size - 3);
	gpu_window_drop(gmr);
	gpu_dereg(NULL, dmr);
	free(dst);
}

/* A get out of a host window into GPU memory goes through the pinned
 * bounce buffer a chunk at a time and lands whole. */
static void test_ce_cuda_get_into_gpu_in_chunks(void **state)
{
	struct pair *p = need_pair(state);
	size_t len = 2 * ZSM_CE_CHUNK + 999;
	unsigned char *hwin = malloc(len + 8), *dst = fake_alloc(len + 2, 1, 0);
	struct zsm_ce_mr *dmr = gpu_reg(dst, len + 2), *hmr;
	struct zsm_rma_window hw;
	int copies = fk.copies, pinned = fk.pinned;

	assert_non_null(hwin);
	for (size_t i = 0; i < len + 8; i++)
		hwin[i] = (unsigned char)(i * 11 + 5);
	hmr = host_window(p, hwin, len + 8, &hw);
	zsm_assert_int_eq(get_into(p, dst, len + 2, dmr, &hw, 5, len),
			  ZSM_REQ_DONE);
	assert_memory_equal(dst + 1, hwin + 5, len);
	zsm_assert_int_eq(fk.copies - copies, 3);
	/* Up from pinned memory: the bounce buffer, pinned once. */
	zsm_assert_int_eq(fk.pinned - pinned, 1);
	gpu_window_drop(hmr);
	gpu_dereg(NULL, dmr);
	free(hwin);
}

/* A get posted right behind a put into the same GPU window bytes, with
 * no pass between them, reads the put's bytes: the owner answers in slot
 * order, once the put's copy landed. */
static void test_ce_cuda_get_sees_earlier_put(void **state)
{
	struct pair *p = need_pair(state);
	const size_t size = 8192, off = 333, len = 5000;
	unsigned char *win = fake_alloc(size, 0, 0), *src = malloc(len);
	unsigned char *dst = malloc(len + 2);
	struct zsm_ce_mr *wmr;
	struct zsm_rma_window ww;
	struct zsm_ce_req put, get;

	assert_non_null(src);
	assert_non_null(dst);
	memset(win, 0, size);
	memset(dst, 0xee, len + 2);
	for (size_t i = 0; i < len; i++)
		src[i] = (unsigned char)(i * 3 + 1);
	wmr = gpu_window(p, win, size, &ww);
	post_put(p, &put, src, len, NULL, &ww, off, NULL, 0, 0);
	post_get(p, &get, dst + 1, len, NULL, &ww, off);
	pump_until_done(&get);
	zsm_assert_int_eq(state_of(&get), ZSM_REQ_DONE);
	zsm_assert_int_eq(state_of(&put), ZSM_REQ_DONE);
	assert_memory_equal(dst + 1, src, len);
	zsm_assert_int_eq(dst[0], 0xee);
	zsm_assert_int_eq(dst[len + 1], 0xee);
	gpu_window_drop(wmr);
	free(src);
	free(dst);
}

/* A get past its window's end (the descriptor forged) fails the get and
 * the owner's comm with -EPROTO, and reads nothing. */
static void test_ce_cuda_get_outside_window_fails(void **state)
{
	struct pair *p = need_pair(state);
	unsigned char *win = fake_alloc(512, 0, 9), dst[300];
	struct zsm_rma_window ww;
	struct zsm_ce_mr *wmr = gpu_window(p, win, 512, &ww);
	int copies = fk.copies;

	ww.size = 4096;
	zsm_assert_int_eq(get_into(p, dst, sizeof(dst), NULL, &ww, 300, 256),
			  -EPROTO);
	zsm_assert_int_eq(fk.copies, copies);
	zsm_assert_int_eq(dst[1], 0xee);
	zsm_assert_int_eq(atomic_load(&p->rc.error), -EPROTO);
	gpu_window_drop(wmr);
}

/*
 * The owner's answer is checked before anything is copied: one that
 * names bytes past the end of the GPU allocation it names fails the get
 * (-EPROTO), no copy made.  The test answers in the owner's place.
 */
static void test_ce_cuda_get_answer_past_allocation_refused(void **state)
{
	struct pair *p = need_pair(state);
	unsigned char *win = fake_alloc(1024, 0, 4), dst[200];
	struct zsm_ce_mr *wmr;
	struct zsm_rma_window ww;
	struct zsm_ce_slot *s;
	struct zsm_ce_req req;
	int copies = fk.copies;

	wmr = gpu_window(p, win, 1024, &ww);
	memset(dst, 0xee, sizeof(dst));
	/* The owner's engine stays out of it. */
	p->r->failed = 1;
	post_get(p, &req, dst, 100, NULL, &ww, 0);
	s = &p->s->win->slots[req.seq % ZSM_CE_SLOTS];
	s->err = 0;
	s->gpu = 1;
	s->alloc.ipc = wmr->g.ipc;
	s->alloc.vmm_fd = -1;
	s->alloc.reg_id = wmr->g.reg_id;
	s->alloc.size = 1024;
	s->alloc.off = 1000;
	atomic_store(&s->done, req.seq + 1);
	pump_until_done(&req);
	zsm_assert_int_eq(state_of(&req), -EPROTO);
	zsm_assert_int_eq(fk.copies, copies);
	zsm_assert_int_eq(dst[0], 0xee);
	p->r->failed = 0;
	p->r->next++;
	gpu_window_drop(wmr);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, fake_setup, fake_teardown)
	const struct CMUnitTest tests[] = {
		T(test_ce_cuda_mr_prepare_records_the_allocation),
		T(test_ce_cuda_opens_each_allocation_once),
		T(test_ce_cuda_dereg_closes_the_peer_mapping),
		T(test_ce_cuda_forget_overflow_closes_everything),
		T(test_ce_cuda_unmap_off_keeps_mappings_until_close),
		T(test_ce_cuda_close_releases_mappings),
		T(test_ce_cuda_host_to_gpu_lands_whole),
		T(test_ce_cuda_failed_copy_fails_both),
		T(test_ce_cuda_pipelines_gpu_copies),
		T(test_ce_cuda_full_pipe_takes_no_more),
		T(test_ce_cuda_batches_copies_where_the_driver_can),
		T(test_ce_cuda_channels_share_one_stream),
		T(test_ce_cuda_unmap_stop_finishes_the_queue),
		T(test_ce_cuda_dmabuf_whole_pages),
		T(test_ce_cuda_put_signals_after_its_bytes),
		T(test_ce_cuda_put_outside_window_fails),
		T(test_ce_cuda_unexportable_window_goes_through_host),
		T(test_ce_cuda_put_without_windows_is_refused),
		T(test_ce_cuda_get_from_gpu_windows),
		T(test_ce_cuda_get_from_staged_window_copies_down),
		T(test_ce_cuda_get_into_gpu_in_chunks),
		T(test_ce_cuda_get_sees_earlier_put),
		T(test_ce_cuda_get_outside_window_fails),
		T(test_ce_cuda_get_answer_past_allocation_refused),
	};
#undef T
	if (!ce_possible())
		return 0;
	return cmocka_run_group_tests_name("ce_cuda", tests, NULL, NULL);
}
