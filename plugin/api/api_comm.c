/* SPDX-License-Identifier: MIT */
/*
 * Owns the API's communicators: the bootstrap that finds the ranks, the
 * group that joins them (group/group.h, whose send comms the agent then
 * uses directly), the two doors, the signal counters
 * registered on every rank, the operations and scratch every call uses,
 * and the agent (a thread in GPU mode).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api_int.h"
#include "common/clock.h"
#include "common/cuda.h"
#include "common/handle.h"
#include "common/log.h"
#include "common/param.h"
#include "entry/entry.h"
#include "group/group.h"

int zsm_api_wait_timeout_ms(void)
{
	return (int)zsm_param_int(ZSM_P_WAIT_TIMEOUT_MS);
}

int zsm_api_comm_error(const struct zsm_api_comm *c)
{
	/* Pairs with the release exchange in zsm_api_comm_fail. */
	return atomic_load_explicit(&c->err, memory_order_acquire);
}

void zsm_api_comm_fail(struct zsm_api_comm *c, int err, const char *why)
{
	int none = 0;

	if (err >= 0)
		err = -EIO;
	/* The release pairs with the acquire in zsm_api_comm_error: a caller
	 * that sees the error sees the doors failed after it. */
	if (atomic_compare_exchange_strong_explicit(&c->err, &none, err,
						    memory_order_release,
						    memory_order_relaxed))
		ZSM_WARN("api: rank %d of %d: the communicator failed: %s (%s)",
			 c->rank, c->nranks, why, strerror(-err));
	if (c->ops)
		zsm_api_door_fail(c->ops, err);
	if (c->sig)
		zsm_api_door_fail(c->sig, err);
}

int zsm_api_comm_get(const char *call, uint64_t h, struct zsm_api_comm **out)
{
	int ret = zsm_handle_get(h, ZSM_H_API_COMM, (void **)out);

	if (ret)
		ZSM_WARN("api: %s: %#llx is not a live zsm communicator", call,
			 (unsigned long long)h);
	return ret;
}

int zsm_api_comm_quiesce(struct zsm_api_comm *c)
{
	int ms = zsm_api_wait_timeout_ms();
	uint64_t start = zsm_now_ns();
	struct timespec nap = {0, 50000};

	/* Acquire: pairs with the agent's release decrement, so what the
	 * retired operations did is visible. */
	while (atomic_load_explicit(&c->outstanding, memory_order_acquire)) {
		if (zsm_api_comm_error(c))
			return zsm_api_comm_error(c);
		if (ms && zsm_now_ns() - start > (uint64_t)ms * 1000000u) {
			ZSM_WARN("api: %ld operations still in flight after "
				 "ZSM_WAIT_TIMEOUT_MS (%d ms)",
				 atomic_load_explicit(&c->outstanding,
						      memory_order_relaxed),
				 ms);
			return -ETIMEDOUT;
		}
		nanosleep(&nap, NULL);
	}
	return 0;
}

int zsm_api_host_alloc(struct zsm_api_comm *c, size_t size, void **out)
{
	zsm_cu_result res;
	char why[256] = "";
	int ret;

	*out = NULL;
	if (!c->gpu) {
		*out = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
		return *out ? 0 : -ENOMEM;
	}
	res = zsm_cuda_table()->mem_host_alloc(out, size,
					       ZSM_CU_MEMHOSTALLOC_PORTABLE);
	if (res == ZSM_CU_SUCCESS)
		return 0;
	*out = NULL;
	ret = zsm_cuda_drv_fail(zsm_cuda_table(), res, why, sizeof(why),
				"cuMemHostAlloc of %zu staging bytes", size);
	ZSM_WARN("api: %s", why);
	return ret;
}

void zsm_api_host_free(struct zsm_api_comm *c, void *p)
{
	if (!p)
		return;
	if (c->gpu)
		zsm_cuda_table()->mem_free_host(p);
	else
		free(p);
}

/* The CUDA context current on this thread, or NULL (host-memory mode). */
static zsm_cu_context zsm_api_current_ctx(void)
{
	zsm_cu_context ctx = NULL;

	if (zsm_cuda_init() || !zsm_cuda_ready())
		return NULL;
	if (zsm_cuda_table()->ctx_get_current(&ctx) != ZSM_CU_SUCCESS)
		return NULL;
	return ctx;
}

/* Every rank's listen handle through the bootstrap, then the RMA join. */
static int zsm_api_comm_join(struct zsm_api_comm *c)
{
	char *handles = calloc((size_t)c->nranks, ZSM_HANDLE_BYTES);
	void **hp = calloc((size_t)c->nranks, sizeof(*hp));
	int ret = handles && hp ? 0 : -ENOMEM;

	if (!ret)
		ret = zsm_group_listen(c->plugin, 0,
				     handles + (size_t)c->rank * ZSM_HANDLE_BYTES,
				     &c->group.listen);
	/* A rank that failed still joins the exchange with a zeroed handle,
	 * so that the others do not wait for it; connect then fails. */
	if (c->boot) {
		int x = zsm_boot_allgather(c->boot, handles, ZSM_HANDLE_BYTES);

		if (!ret)
			ret = x;
	}
	for (int p = 0; !ret && p < c->nranks; p++)
		hp[p] = handles + (size_t)p * ZSM_HANDLE_BYTES;
	if (!ret)
		ret = zsm_group_connect(c->plugin, hp, c->nranks, c->rank,
				      c->group.listen, &c->group.coll);
	free(handles);
	free(hp);
	return ret;
}

/* The send comm to every peer, resolved once: the agent's puts name
 * it directly (entry.h's handle-free calls). */
static int zsm_api_comm_links(struct zsm_api_comm *c)
{
	c->link = calloc((size_t)c->nranks, sizeof(*c->link));
	if (!c->link)
		return -ENOMEM;
	for (int p = 0; p < c->nranks; p++) {
		void *h;
		int ret;

		if (p == c->rank)
			continue;
		ret = zsm_group_link(c->group.coll, p, &h);
		if (!ret)
			ret = zsm_entry_comm_of(h, &c->link[p]);
		if (ret)
			return ret;
	}
	return 0;
}

/* What a call needs, made now so that calls allocate nothing: the
 * operations (for a few calls of every peer) and the ring's scratch. */
static int zsm_api_comm_scratch(struct zsm_api_comm *c)
{
	struct zsm_api_scratch *k = &c->scratch;
	size_t n = (size_t)c->nranks;
	int ret = zsm_api_pool_init(&c->pool,
				    (unsigned int)(4 * c->nranks + 60));

	k->mark = calloc(n + 1, sizeof(*k->mark));
	k->slots = calloc(n + 1, sizeof(*k->slots));
	k->seqs = calloc(n + 1, sizeof(*k->seqs));
	k->o = calloc(ZSM_API_DOOR_OPS, sizeof(*k->o));
	if (!ret && (!k->mark || !k->slots || !k->seqs || !k->o))
		ret = -ENOMEM;
	if (!ret)
		ret = zsm_api_agent_new(c);
	return ret;
}

static int zsm_api_comm_doors(struct zsm_api_comm *c)
{
	unsigned int nsig = (unsigned int)(ZSM_API_ROWS * c->nranks);
	void *base;
	int ret;

	ret = zsm_api_door_new(c->cuctx, (unsigned int)c->nranks + 1,
				&c->ops);
	if (!ret)
		ret = zsm_api_door_new(c->cuctx, nsig, &c->sig);
	c->seq = calloc((size_t)c->nranks + 1, sizeof(*c->seq));
	c->expect = calloc(nsig, sizeof(*c->expect));
	if (!ret && (!c->seq || !c->expect))
		ret = -ENOMEM;
	/* The registration below is collective: refused, not skipped. */
	if (ret)
		return zsm_group_reg_sym_refuse(c->group.coll, ret);
	/* The counters peers add into: one window, the same layout on every
	 * rank, registered on every link like any other. */
	zsm_api_door_region(c->sig, &base, &c->sig_win.size);
	c->sig_win.base = base;
	c->sig_win.comm = c;
	ret = zsm_group_reg_sym(c->group.coll, c->sig_win.base,
				c->sig_win.size, ZSM_MEM_HOST, &c->sig_win.sym);
	return ret ? ret : zsm_api_win_targets(c, c->sig_win.sym,
					       &c->sig_win.at);
}

static void zsm_api_comm_free(struct zsm_api_comm *c)
{
	zsm_api_agent_stop(c);
	zsm_api_win_free_all(c);
	if (c->sig_win.sym)
		zsm_group_dereg_sym(c->group.coll, c->sig_win.sym);
	free(c->sig_win.at);
	if (c->group.coll)
		zsm_group_close(c->group.coll);
	if (c->group.listen)
		zsm_group_close_listen(c->group.listen);
	/*
	 * A failed comm's streams were released but may not have drained
	 * yet, and a device could still write ready words: its door words
	 * are left allocated (a few KiB) rather than freed under a stream.
	 */
	if (!zsm_api_comm_error(c) || !c->gpu) {
		zsm_api_door_free(c->ops);
		zsm_api_door_free(c->sig);
	}
	zsm_api_host_free(c, c->staging.bounce_buf);
	zsm_api_host_free(c, c->staging.buf);
	if (c->boot) {
		/* A rank that goes on purpose is not taken for dead. */
		if (!zsm_api_comm_error(c))
			zsm_boot_leave(c->boot);
		zsm_boot_fini(c->boot);
	}
	if (c->plugin)
		zsm_finalize(c->plugin);
	zsm_api_agent_free(c);
	zsm_api_pool_fini(&c->pool);
	pthread_mutex_destroy(&c->lock);
	free(c->scratch.mark);
	free(c->scratch.slots);
	free(c->scratch.seqs);
	free(c->scratch.o);
	free(c->link);
	free(c->seq);
	free(c->expect);
	free(c);
}

int zsm_api_comm_init(const struct zsm_boot_id *id, int nranks, int rank,
		      struct zsm_api_comm **out)
{
	struct zsm_api_comm *c = calloc(1, sizeof(*c));
	int ret;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	c->nranks = nranks;
	c->rank = rank;
	pthread_mutex_init(&c->lock, NULL);
	atomic_init(&c->outstanding, 0);
	atomic_init(&c->err, 0);
	atomic_init(&c->watching, 0);
	/* Traffic class -1: none asked for. */
	ret = zsm_init(&c->plugin, 0, -1, NULL);
	if (!ret) {
		c->cuctx = zsm_api_current_ctx();
		c->gpu = c->cuctx != NULL;
		ret = zsm_group_enabled();
	}
	/* Every rank joins the bootstrap even when its own set-up failed, so
	 * that the others see it fail rather than wait for it. */
	{
		int x = zsm_boot_init(id, rank, nranks, 0, &c->boot);

		if (!ret)
			ret = x;
	}
	if (!ret)
		ret = zsm_api_comm_join(c);
	if (!ret)
		ret = zsm_api_comm_links(c);
	if (!ret)
		ret = zsm_api_comm_scratch(c);
	if (!ret)
		ret = zsm_api_comm_doors(c);
	/* Joined, but failed before the counters' registration: this rank
	 * still takes part in it, refusing, so that no peer waits for it. */
	else if (c->group.coll && !c->sig_win.sym)
		(void)zsm_group_reg_sym_refuse(c->group.coll, ret);
	/* Host-memory mode: each call runs the agent itself. */
	if (!ret && c->gpu)
		ret = zsm_api_agent_start(c);
	/* Everyone ready before anyone's first put reaches a peer. */
	if (!ret)
		ret = zsm_boot_barrier(c->boot);
	/* Release: pairs with the agent's acquire; the bootstrap is the
	 * agent's from here. */
	if (!ret)
		atomic_store_explicit(&c->watching, 1, memory_order_release);
	if (!ret && zsm_handle_open(ZSM_H_API_COMM, c, &c->handle))
		ret = -ENOMEM;
	if (ret) {
		ZSM_WARN("api: rank %d of %d: init failed (%s)", rank, nranks,
			 strerror(-ret));
		zsm_api_comm_free(c);
		return ret;
	}
	ZSM_INFO("api: rank %d of %d joined every peer (%s mode)", rank,
		 nranks, c->gpu ? "GPU" : "host-memory");
	/* A kernel loaded lazily while a stream waits on a signal or a put
	 * can hold zsm's own copies back (docs/api.md, "GPU mode"). */
	if (c->gpu && zsm_cuda_lazy())
		ZSM_WARN("api: CUDA loads modules lazily (CUDA_MODULE_LOADING="
			 "LAZY, the default): a kernel loaded for the first "
			 "time while a stream waits for one of zsm's puts can "
			 "hold the put's copy back until ZSM_WAIT_TIMEOUT_MS "
			 "fails the communicator; set "
			 "CUDA_MODULE_LOADING=EAGER");
	*out = c;
	return 0;
}

int zsm_api_comm_destroy(struct zsm_api_comm *c)
{
	void *obj;
	int ret = zsm_api_comm_quiesce(c);

	zsm_handle_close(c->handle, ZSM_H_API_COMM, &obj);
	zsm_api_comm_free(c);
	/* Errors of the comm itself were the caller's to ask for. */
	return ret == -ETIMEDOUT ? ret : 0;
}
