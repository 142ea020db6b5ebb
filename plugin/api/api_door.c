/* SPDX-License-Identifier: MIT */
/*
 * The stream doorbell (api_door.h): host words the stream writes and
 * waits on through cuStreamBatchMemOp, and the agent's loads and stores
 * of them.
 */
#include "api/api_door.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/cuda.h"
#include "common/log.h"

/*
 * Each word has a cache line of its own: the stream's write of ready and
 * the agent's of done would otherwise take the line from each other on
 * every operation.
 */
#define ZSM_CUDA_DOOR_LINE 64
#define ZSM_CUDA_DOOR_STRIDE (2 * ZSM_CUDA_DOOR_LINE / sizeof(uint64_t))
#define ZSM_CUDA_DOOR_DONE_AT (ZSM_CUDA_DOOR_LINE / sizeof(uint64_t))
/* Far more slots than a communicator has peers and queues. */
#define ZSM_CUDA_DOOR_MAX_SLOTS (1u << 20)
/*
 * How far ahead of the last ready a failed door's done word goes: a GEQ
 * wait compares cyclically, so any seq within 2^62 after (or before) the
 * stream's last write passes, and no stream rings 2^62 ahead.
 */
#define ZSM_CUDA_DOOR_RELEASE_ALL (UINT64_C(1) << 62)

struct zsm_api_door {
	const struct zsm_cuda_drv *drv; /* NULL: host-memory mode */
	zsm_cu_context ctx;
	unsigned int nslots;
	/* ready of slot i at [i * STRIDE], done at [i * STRIDE + DONE_AT] */
	_Atomic uint64_t *words;
	zsm_cu_deviceptr dwords; /* the same words, for the device */
	_Atomic int err;
};

static _Atomic uint64_t *zsm_api_door_ready_word(
	const struct zsm_api_door *door, unsigned int slot)
{
	return &door->words[(size_t)slot * ZSM_CUDA_DOOR_STRIDE];
}

static _Atomic uint64_t *zsm_api_door_done_word(
	const struct zsm_api_door *door, unsigned int slot)
{
	return &door->words[(size_t)slot * ZSM_CUDA_DOOR_STRIDE +
			    ZSM_CUDA_DOOR_DONE_AT];
}

static zsm_cu_deviceptr zsm_api_door_dev(const struct zsm_api_door *door,
					  const _Atomic uint64_t *word)
{
	return door->dwords + (zsm_cu_deviceptr)((const char *)word -
						 (const char *)door->words);
}

/* Cyclic a >= b, as CU_STREAM_WAIT_VALUE_GEQ compares 64-bit values. */
int zsm_api_door_geq(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b) >= 0;
}

static size_t zsm_api_door_bytes(unsigned int nslots)
{
	return (size_t)nslots * ZSM_CUDA_DOOR_STRIDE * sizeof(uint64_t);
}

/* The words in mapped, pinned host memory of ctx (current already). */
static int zsm_api_door_map(struct zsm_api_door *door)
{
	const struct zsm_cuda_drv *d = door->drv;
	size_t bytes = zsm_api_door_bytes(door->nslots);
	zsm_cu_device dev = 0;
	zsm_cu_result res;
	char why[256] = "";
	void *p = NULL;
	int can = 0;

	res = d->ctx_get_device(&dev);
	if (res == ZSM_CU_SUCCESS)
		res = d->device_get_attribute(
			&can, ZSM_CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS,
			dev);
	if (res != ZSM_CU_SUCCESS) {
		int ret = zsm_cuda_drv_fail(d, res, why, sizeof(why),
					    "asking the context's device for "
					    "64-bit stream memory operations");

		ZSM_WARN("cuda door: %s", why);
		return ret;
	}
	/*
	 * No host-function fallback (cuLaunchHostFunc) for now: it costs
	 * tens of microseconds, runs on one driver thread, and is skipped on
	 * a context error, which would leave the stream waiting.
	 */
	if (!can) {
		ZSM_WARN("cuda door: CUDA device %d cannot run 64-bit stream "
			 "memory operations (CAN_USE_64_BIT_STREAM_MEM_OPS is "
			 "0; before CUDA 11.7 the driver needs "
			 "NVreg_EnableStreamMemOPs=1): no zero-SM stream "
			 "doorbell",
			 (int)dev);
		return -EOPNOTSUPP;
	}
	res = d->mem_host_alloc(&p, bytes,
				ZSM_CU_MEMHOSTALLOC_PORTABLE |
					ZSM_CU_MEMHOSTALLOC_DEVICEMAP);
	if (res != ZSM_CU_SUCCESS) {
		int ret = zsm_cuda_drv_fail(d, res, why, sizeof(why),
					    "cuMemHostAlloc of %zu bytes",
					    bytes);

		ZSM_WARN("cuda door: %s", why);
		return ret;
	}
	memset(p, 0, bytes);
	res = d->mem_host_get_device_pointer(&door->dwords, p, 0);
	if (res != ZSM_CU_SUCCESS) {
		int ret = zsm_cuda_drv_fail(d, res, why, sizeof(why),
					    "cuMemHostGetDevicePointer of the "
					    "door's words");

		ZSM_WARN("cuda door: %s", why);
		d->mem_free_host(p);
		return ret;
	}
	door->words = p;
	return 0;
}

static int zsm_api_door_new_cuda(struct zsm_api_door *door,
				  zsm_cu_context ctx)
{
	const struct zsm_cuda_drv *d;
	zsm_cu_context was = NULL;
	zsm_cu_result res;
	int ret;

	if (!zsm_cuda_ready()) {
		ZSM_WARN("cuda door: a CUDA context was given but zsm has no "
			 "CUDA driver");
		return -ENODEV;
	}
	d = zsm_cuda_table();
	if (!d->stream_batch_mem_op) {
		ZSM_WARN("cuda door: libcuda.so.1 lacks cuStreamBatchMemOp_v2 "
			 "(a driver older than CUDA 11.7?)");
		return -ENOSYS;
	}
	door->drv = d;
	door->ctx = ctx;
	/* The caller's thread gets its own context back. */
	if (d->ctx_get_current(&was) != ZSM_CU_SUCCESS)
		was = NULL;
	res = d->ctx_set_current(ctx);
	if (res != ZSM_CU_SUCCESS) {
		char why[256] = "";

		ret = zsm_cuda_drv_fail(d, res, why, sizeof(why),
					"entering the door's context");
		ZSM_WARN("cuda door: %s", why);
		return ret;
	}
	ret = zsm_api_door_map(door);
	if (was != ctx)
		d->ctx_set_current(was);
	return ret;
}

int zsm_api_door_new(zsm_cu_context ctx, unsigned int nslots,
		      struct zsm_api_door **door)
{
	struct zsm_api_door *n;
	int ret;

	*door = NULL;
	if (!nslots || nslots > ZSM_CUDA_DOOR_MAX_SLOTS) {
		ZSM_WARN("cuda door: %u slots asked for; 1 to %u can be had",
			 nslots, ZSM_CUDA_DOOR_MAX_SLOTS);
		return -EINVAL;
	}
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->nslots = nslots;
	atomic_init(&n->err, 0);
	if (ctx) {
		ret = zsm_api_door_new_cuda(n, ctx);
		if (ret) {
			free(n);
			return ret;
		}
	} else {
		n->words = aligned_alloc(ZSM_CUDA_DOOR_LINE,
					 zsm_api_door_bytes(nslots));
		if (!n->words) {
			free(n);
			return -ENOMEM;
		}
		memset((void *)n->words, 0, zsm_api_door_bytes(nslots));
		n->dwords = (zsm_cu_deviceptr)(uintptr_t)n->words;
	}
	*door = n;
	return 0;
}

void zsm_api_door_free(struct zsm_api_door *door)
{
	const struct zsm_cuda_drv *d;
	zsm_cu_context was = NULL;

	if (!door)
		return;
	d = door->drv;
	if (d) {
		if (d->ctx_get_current(&was) != ZSM_CU_SUCCESS)
			was = NULL;
		if (d->ctx_set_current(door->ctx) == ZSM_CU_SUCCESS)
			d->mem_free_host((void *)door->words);
		if (was != door->ctx)
			d->ctx_set_current(was);
	} else {
		free((void *)door->words);
	}
	free(door);
}

void zsm_api_door_region(const struct zsm_api_door *door, void **base,
			  size_t *bytes)
{
	*base = (void *)door->words;
	*bytes = zsm_api_door_bytes(door->nslots);
}

size_t zsm_api_door_done_at(unsigned int slot)
{
	return ((size_t)slot * ZSM_CUDA_DOOR_STRIDE + ZSM_CUDA_DOOR_DONE_AT) *
	       sizeof(uint64_t);
}

uint64_t zsm_api_door_done_get(const struct zsm_api_door *door,
				unsigned int slot)
{
	if (slot >= door->nslots)
		return 0;
	/* Pairs with the release of whoever raised it: _done, _fail, or a
	 * peer's signal applied with a release add. */
	return atomic_load_explicit(zsm_api_door_done_word(door, slot),
				    memory_order_acquire);
}

unsigned int zsm_api_door_slots(const struct zsm_api_door *door)
{
	return door->nslots;
}

int zsm_api_door_error(const struct zsm_api_door *door)
{
	/* Pairs with the release exchange in zsm_api_door_fail. */
	return atomic_load_explicit(&door->err, memory_order_acquire);
}

static void zsm_api_door_op(zsm_cu_memop *op, int operation,
			     zsm_cu_deviceptr address, uint64_t value)
{
	memset(op, 0, sizeof(*op));
	op->value.operation = operation;
	op->value.address = address;
	op->value.value64 = value;
	op->value.flags = operation == ZSM_CU_STREAM_MEM_OP_WAIT_VALUE_64
				  ? ZSM_CU_STREAM_WAIT_VALUE_GEQ
				  : 0;
}

/* What zsm_api_door_enqueue puts on the stream. */
#define ZSM_CUDA_DOOR_WRITES 0x1
#define ZSM_CUDA_DOOR_WAITS 0x2

/*
 * The writes of ready for each (slots[i], seqs[i]), then the waits on
 * done for each (parts says which of the two), in batches of at most
 * 255 operations, in that order.  A batch refused after an earlier one
 * went in leaves the stream half rung (ready written, no wait), so the
 * door fails: the operation cannot be trusted and no later one must rely
 * on it.
 */
static int zsm_api_door_enqueue(struct zsm_api_door *door,
				 zsm_cu_stream stream, unsigned int n,
				 const unsigned int *slots,
				 const uint64_t *seqs, int parts)
{
	zsm_cu_memop ops[ZSM_CU_BATCH_MEM_OP_MAX];
	int writes = parts & ZSM_CUDA_DOOR_WRITES;
	size_t nops = (writes ? (size_t)n : 0) +
		      (parts & ZSM_CUDA_DOOR_WAITS ? (size_t)n : 0);
	size_t k = 0, m, i;
	zsm_cu_result res;
	char why[256] = "";
	int ret;

	while (k < nops) {
		for (m = 0; m < ZSM_CU_BATCH_MEM_OP_MAX && k < nops; m++, k++) {
			int write = writes && k < n;

			i = writes && !write ? k - n : k;
			zsm_api_door_op(
				&ops[m],
				write ? ZSM_CU_STREAM_MEM_OP_WRITE_VALUE_64
				      : ZSM_CU_STREAM_MEM_OP_WAIT_VALUE_64,
				zsm_api_door_dev(
					door,
					write ? zsm_api_door_ready_word(
							door, slots[i])
					      : zsm_api_door_done_word(
							door, slots[i])),
				seqs[i]);
		}
		res = door->drv->stream_batch_mem_op(stream, (unsigned int)m,
						     ops, 0);
		if (res == ZSM_CU_SUCCESS)
			continue;
		ret = zsm_cuda_drv_fail(door->drv, res, why, sizeof(why),
					"cuStreamBatchMemOp of %zu operations",
					m);
		ZSM_WARN("cuda door: %s%s", why,
			 k > m ? " after earlier ones went in: the door fails"
			       : "");
		if (k > m)
			zsm_api_door_fail(door, ret);
		return ret;
	}
	return 0;
}

static int zsm_api_door_check(struct zsm_api_door *door, unsigned int n,
			       const unsigned int *slots)
{
	int err = zsm_api_door_error(door);

	if (err)
		return err;
	for (unsigned int i = 0; i < n; i++) {
		if (slots[i] >= door->nslots) {
			ZSM_WARN("cuda door: slot %u of a door of %u",
				 slots[i], door->nslots);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * The ready words stored from this thread: a host-memory door's always
 * (stream must be NULL), a device door's when its stream has nothing left
 * to run.
 */
static int zsm_api_door_store(struct zsm_api_door *door,
			       zsm_cu_stream stream, unsigned int n,
			       const unsigned int *slots, const uint64_t *seqs)
{
	if (!door->drv && stream) {
		ZSM_WARN("cuda door: a stream was given to a host-memory door");
		return -EINVAL;
	}
	/*
	 * Release: pairs with the acquire load in zsm_api_door_ready, as
	 * the stream's write does: what the caller (or the stream's finished
	 * work, which the query saw over) wrote before is the agent's to read.
	 */
	for (unsigned int i = 0; i < n; i++)
		atomic_store_explicit(zsm_api_door_ready_word(door, slots[i]),
				      seqs[i], memory_order_release);
	return 0;
}

int zsm_api_door_ring(struct zsm_api_door *door, zsm_cu_stream stream,
		       unsigned int n, const unsigned int *slots,
		       const uint64_t *seqs)
{
	int ret = zsm_api_door_check(door, n, slots);

	if (ret || !n)
		return ret;
	if (door->drv)
		return zsm_api_door_enqueue(door, stream, n, slots, seqs,
					     ZSM_CUDA_DOOR_WRITES |
						     ZSM_CUDA_DOOR_WAITS);
	return zsm_api_door_store(door, stream, n, slots, seqs);
}

/*
 * Whether the stream has nothing left to run that work queued on it now
 * would follow: then that work's ready words may be stored from here at
 * once.  Only a non-blocking stream of the caller's own: the default
 * streams, and a blocking stream (which waits for the legacy stream's
 * work), also wait for other streams, which a query of the stream does not
 * cover, and a query of the legacy stream could break another thread's
 * capture.  Not while it is being captured (a query there invalidates the
 * capture).  Any error answers no: the stream's own write is always
 * right, only later.
 */
static int zsm_api_door_stream_over(const struct zsm_cuda_drv *d,
				     zsm_cu_stream stream)
{
	unsigned int flags = 0;
	int capturing = 1;

	if (stream == ZSM_CU_STREAM_NULL || stream == ZSM_CU_STREAM_LEGACY ||
	    stream == ZSM_CU_STREAM_PER_THREAD || !d->stream_is_capturing ||
	    !d->stream_get_flags || !d->stream_query)
		return 0;
	if (d->stream_is_capturing(stream, &capturing) != ZSM_CU_SUCCESS ||
	    capturing != ZSM_CU_STREAM_CAPTURE_STATUS_NONE)
		return 0;
	if (d->stream_get_flags(stream, &flags) != ZSM_CU_SUCCESS ||
	    !(flags & ZSM_CU_STREAM_NON_BLOCKING))
		return 0;
	return d->stream_query(stream) == ZSM_CU_SUCCESS;
}

int zsm_api_door_post(struct zsm_api_door *door, zsm_cu_stream stream,
		       unsigned int n, const unsigned int *slots,
		       const uint64_t *seqs, int *now)
{
	int ret = zsm_api_door_check(door, n, slots), dummy;

	if (!now)
		now = &dummy;
	*now = 0;
	if (ret || !n)
		return ret;
	if (door->drv && !zsm_api_door_stream_over(door->drv, stream))
		return zsm_api_door_enqueue(door, stream, n, slots, seqs,
					     ZSM_CUDA_DOOR_WRITES);
	ret = zsm_api_door_store(door, stream, n, slots, seqs);
	*now = !ret;
	return ret;
}

int zsm_api_door_batch(zsm_cu_stream stream, unsigned int n,
			const struct zsm_api_door_op *ops)
{
	zsm_cu_memop m[ZSM_CU_BATCH_MEM_OP_MAX];
	const struct zsm_cuda_drv *d;
	unsigned int k = 0, i, j;
	zsm_cu_result res;
	char why[256] = "";
	int ret;

	for (i = 0; i < n; i++) {
		ret = zsm_api_door_check(ops[i].door, 1, &ops[i].slot);
		if (ret)
			return ret;
		if (!ops[i].door->drv) {
			ZSM_WARN("cuda door: a stream operation on a "
				 "host-memory door");
			return -EINVAL;
		}
	}
	while (k < n) {
		d = ops[k].door->drv;
		for (j = 0; j < ZSM_CU_BATCH_MEM_OP_MAX && k + j < n; j++) {
			const struct zsm_api_door_op *o = &ops[k + j];

			zsm_api_door_op(
				&m[j],
				o->wait ? ZSM_CU_STREAM_MEM_OP_WAIT_VALUE_64
					: ZSM_CU_STREAM_MEM_OP_WRITE_VALUE_64,
				zsm_api_door_dev(
					o->door,
					o->wait ? zsm_api_door_done_word(
							  o->door, o->slot)
						: zsm_api_door_ready_word(
							  o->door, o->slot)),
				o->seq);
		}
		res = d->stream_batch_mem_op(stream, j, m, 0);
		if (res == ZSM_CU_SUCCESS) {
			k += j;
			continue;
		}
		ret = zsm_cuda_drv_fail(d, res, why, sizeof(why),
					"cuStreamBatchMemOp of %u operations",
					j);
		ZSM_WARN("cuda door: %s%s", why,
			 k ? " after earlier ones went in: the doors fail"
			   : "");
		for (i = 0; k && i < n; i++)
			zsm_api_door_fail(ops[i].door, ret);
		return ret;
	}
	return 0;
}

int zsm_api_door_wait(struct zsm_api_door *door, zsm_cu_stream stream,
		       unsigned int slot, uint64_t seq)
{
	int ret = zsm_api_door_check(door, 1, &slot);

	if (ret)
		return ret;
	if (!door->drv) {
		ZSM_WARN("cuda door: a stream wait on a host-memory door (the "
			 "host waits with zsm_api_door_wait_host)");
		return -EINVAL;
	}
	return zsm_api_door_enqueue(door, stream, 1, &slot, &seq,
				     ZSM_CUDA_DOOR_WAITS);
}

int zsm_api_door_wait_host(struct zsm_api_door *door, unsigned int slot,
			    uint64_t seq, int timeout_ms)
{
	uint64_t start = zsm_now_ns(), now = start, done;
	struct timespec nap = { 0, 20000 };
	unsigned int spins = 0;

	if (slot >= door->nslots || timeout_ms < 0)
		return -EINVAL;
	for (;;) {
		/* Pairs with the release in zsm_api_door_done and _fail. */
		done = atomic_load_explicit(zsm_api_door_done_word(door, slot),
					    memory_order_acquire);
		if (zsm_api_door_geq(done, seq))
			return zsm_api_door_error(door);
		if (now - start >= (uint64_t)timeout_ms * 1000000u)
			break;
		/* Spin a little for an agent about to answer, then sleep. */
		if (++spins < 1000)
			sched_yield();
		else
			nanosleep(&nap, NULL);
		now = zsm_now_ns();
	}
	ZSM_WARN("cuda door: waited %d ms for slot %u to be done to %llu; it "
		 "is done to %llu (ready %llu)",
		 timeout_ms, slot, (unsigned long long)seq,
		 (unsigned long long)done,
		 (unsigned long long)zsm_api_door_ready(door, slot));
	return -ETIMEDOUT;
}

uint64_t zsm_api_door_ready(const struct zsm_api_door *door,
			     unsigned int slot)
{
	/*
	 * Pairs with the stream's WRITE_VALUE_64, which fences the stream's
	 * earlier work before the write (so what the stream did before
	 * reaching the operation is visible once the value is), and in
	 * host-memory mode with the release store in zsm_api_door_ring.
	 */
	return atomic_load_explicit(zsm_api_door_ready_word(door, slot),
				    memory_order_acquire);
}

/* Raise done to seq unless it is already there (cyclically). */
static void zsm_api_door_raise(struct zsm_api_door *door, unsigned int slot,
				uint64_t seq)
{
	_Atomic uint64_t *w = zsm_api_door_done_word(door, slot);
	uint64_t cur = atomic_load_explicit(w, memory_order_relaxed);

	/*
	 * The release pairs with the stream's WAIT_VALUE_64 (and the acquire
	 * in zsm_api_door_wait_host): what the agent wrote for the
	 * operation is visible to work after the wait.  A failure reads
	 * cur again and retries.
	 */
	while (!zsm_api_door_geq(cur, seq) &&
	       !atomic_compare_exchange_weak_explicit(w, &cur, seq,
						      memory_order_release,
						      memory_order_relaxed))
		;
}

void zsm_api_door_done(struct zsm_api_door *door, unsigned int slot,
			uint64_t seq)
{
	if (slot < door->nslots)
		zsm_api_door_raise(door, slot, seq);
}

void zsm_api_door_fail(struct zsm_api_door *door, int err)
{
	int none = 0;

	if (err >= 0)
		err = -EIO;
	/* The first error stays; the release pairs with the acquire in
	 * zsm_api_door_error, and comes before the done words' releases,
	 * so a waiter that sees a released word sees the error too. */
	atomic_compare_exchange_strong_explicit(&door->err, &none, err,
						memory_order_release,
						memory_order_relaxed);
	for (unsigned int i = 0; i < door->nslots; i++)
		zsm_api_door_raise(door, i,
				    zsm_api_door_ready(door, i) +
					    ZSM_CUDA_DOOR_RELEASE_ALL);
}
