/* SPDX-License-Identifier: MIT */
/*
 * The API edge: the only code that knows include/zsm/zsm.h's types.  It
 * checks every argument, says what was wrong, and hands plain values to
 * the layers below (api_int.h); handles are the handle table's numbers,
 * so a stale or made-up one is an error, never a crash.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zsm/zsm.h>

#include "api/api_int.h"
#include "boot/boot.h"
#include "common/cuda.h"
#include "common/log.h"

_Static_assert(sizeof(zsm_unique_id_t) == sizeof(struct zsm_boot_id),
	       "the unique id is the bootstrap's id");
_Static_assert(ZSM_MAX_CTX == ZSM_API_CTX, "the header's contexts");

#define ZSM_API_WIN_HANDLE(w) ((zsm_window_t)(uintptr_t)(w)->handle)

int zsm_get_version(int *version)
{
	if (!version)
		return -EINVAL;
	*version = ZSM_API_VERSION;
	return 0;
}

const char *zsm_strerror(int err)
{
	if (!err)
		return "Success";
	/* INT_MIN has no positive errno to name (and -INT_MIN overflows). */
	if (err > 0 || err == INT_MIN)
		return "Not a zsm result (zsm returns 0 or a negative errno)";
	return strerror(-err);
}

static int zsm_api_null(const char *call, const char *what)
{
	ZSM_WARN("api: %s: %s is NULL", call, what);
	return -EINVAL;
}

int zsm_get_unique_id(zsm_unique_id_t *id)
{
	struct zsm_boot_id b;
	int ret;

	if (!id)
		return zsm_api_null("get_unique_id", "id");
	ret = zsm_boot_id_new(&b);
	if (!ret)
		memcpy(id->internal, b.bytes, sizeof(b.bytes));
	return ret;
}

static int zsm_api_init(zsm_comm_t *comm, int nranks,
			const struct zsm_boot_id *id, int rank)
{
	struct zsm_api_comm *c;
	int ret;

	ret = zsm_api_comm_init(id, nranks, rank, &c);
	if (!ret)
		*comm = (zsm_comm_t)(uintptr_t)c->handle;
	return ret;
}

int zsm_comm_init_rank(zsm_comm_t *comm, int nranks, zsm_unique_id_t id,
		       int rank)
{
	struct zsm_boot_id b;

	if (!comm)
		return zsm_api_null("comm_init_rank", "comm");
	*comm = NULL;
	if (nranks < 1 || rank < 0 || rank >= nranks) {
		ZSM_WARN("api: comm_init_rank: rank %d of %d", rank, nranks);
		return -EINVAL;
	}
	memcpy(b.bytes, id.internal, sizeof(b.bytes));
	return zsm_api_init(comm, nranks, &b, rank);
}

int zsm_comm_init_env(zsm_comm_t *comm)
{
	struct zsm_boot_id b;
	int rank, nranks, ret;

	if (!comm)
		return zsm_api_null("comm_init_env", "comm");
	*comm = NULL;
	ret = zsm_boot_env(&rank, &nranks, &b);
	if (ret)
		return ret;
	return zsm_api_init(comm, nranks, &b, rank);
}

static int zsm_api_comm_of(const char *call, zsm_comm_t comm,
			   struct zsm_api_comm **c)
{
	if (!comm)
		return zsm_api_null(call, "comm");
	return zsm_api_comm_get(call, (uint64_t)(uintptr_t)comm, c);
}

int zsm_comm_destroy(zsm_comm_t comm)
{
	struct zsm_api_comm *c;
	int ret = zsm_api_comm_of("comm_destroy", comm, &c);

	return ret ? ret : zsm_api_comm_destroy(c);
}

int zsm_comm_get_async_error(zsm_comm_t comm, int *error)
{
	struct zsm_api_comm *c;
	int ret = zsm_api_comm_of("comm_get_async_error", comm, &c);

	if (!ret && !error)
		ret = zsm_api_null("comm_get_async_error", "error");
	if (!ret)
		*error = zsm_api_comm_error(c);
	return ret;
}

int zsm_comm_count(zsm_comm_t comm, int *nranks)
{
	struct zsm_api_comm *c;
	int ret = zsm_api_comm_of("comm_count", comm, &c);

	if (!ret && !nranks)
		ret = zsm_api_null("comm_count", "nranks");
	if (!ret)
		*nranks = c->nranks;
	return ret;
}

int zsm_comm_user_rank(zsm_comm_t comm, int *rank)
{
	struct zsm_api_comm *c;
	int ret = zsm_api_comm_of("comm_user_rank", comm, &c);

	if (!ret && !rank)
		ret = zsm_api_null("comm_user_rank", "rank");
	if (!ret)
		*rank = c->rank;
	return ret;
}

/* The comm's CUDA context on this thread for a call in GPU mode, and the
 * stream's fitness for the mode. */
static int zsm_api_enter(const char *call, struct zsm_api_comm *c,
			 zsm_stream_t stream)
{
	zsm_cu_context cur = NULL;

	if (!c->gpu) {
		if (stream) {
			ZSM_WARN("api: %s: a stream was given to a "
				 "host-memory communicator (no CUDA context "
				 "was current at init): pass NULL",
				 call);
			return -EINVAL;
		}
		return 0;
	}
	if (zsm_cuda_table()->ctx_get_current(&cur) == ZSM_CU_SUCCESS &&
	    cur == c->cuctx)
		return 0;
	if (zsm_cuda_table()->ctx_set_current(c->cuctx) != ZSM_CU_SUCCESS) {
		ZSM_WARN("api: %s: cannot make the communicator's CUDA context "
			 "current",
			 call);
		return -EIO;
	}
	return 0;
}

int zsm_comm_window_register(zsm_comm_t comm, void *buff, size_t size,
			     zsm_window_t *win, int flags)
{
	struct zsm_api_comm *c;
	struct zsm_api_win *w;
	int ret = zsm_api_comm_of("comm_window_register", comm, &c);

	if (ret)
		return ret;
	if (!win)
		return zsm_api_null("comm_window_register", "win");
	*win = NULL;
	if (!buff || !size || flags) {
		/* Still joins the collective, so that peers fail alike. */
		ZSM_WARN("api: comm_window_register: buffer %p of %zu bytes, "
			 "flags %d (a buffer, a size and flags 0 are needed)",
			 buff, size, flags);
		if (!zsm_api_win_register(c, NULL, 0, &w))
			zsm_api_win_deregister(c, w);
		return -EINVAL;
	}
	ret = zsm_api_enter("comm_window_register", c, NULL);
	if (!ret)
		ret = zsm_api_win_register(c, buff, size, &w);
	if (!ret)
		*win = ZSM_API_WIN_HANDLE(w);
	return ret;
}

int zsm_comm_window_deregister(zsm_comm_t comm, zsm_window_t win)
{
	struct zsm_api_comm *c;
	struct zsm_api_win *w;
	int ret = zsm_api_comm_of("comm_window_deregister", comm, &c);

	if (!ret)
		ret = zsm_api_win_get("comm_window_deregister", c,
				      (uint64_t)(uintptr_t)win, &w);
	if (!ret && w == c->staging.bounce) {
		ZSM_WARN("api: comm_window_deregister: not a window of yours");
		ret = -EINVAL;
	}
	return ret ? ret : zsm_api_win_deregister(c, w);
}

static const size_t zsm_api_dtype_bytes[] = {1, 1, 4, 4, 8, 8,
					     2, 4, 8, 2, 1, 1};

/* count elements of datatype in bytes, or a WARN. */
static int zsm_api_bytes(const char *call, size_t count,
			 zsm_datatype_t datatype, size_t *bytes)
{
	size_t e;

	if ((unsigned int)datatype >=
	    sizeof(zsm_api_dtype_bytes) / sizeof(zsm_api_dtype_bytes[0])) {
		ZSM_WARN("api: %s: datatype %d is not one of zsm_datatype_t",
			 call, (int)datatype);
		return -EINVAL;
	}
	e = zsm_api_dtype_bytes[datatype];
	if (count > SIZE_MAX / e) {
		ZSM_WARN("api: %s: %zu elements overflow", call, count);
		return -EINVAL;
	}
	*bytes = count * e;
	return 0;
}

/* The checks put_signal, signal and wait share. */
static int zsm_api_sig_args(const char *call, struct zsm_api_comm *c,
			    int peer, int sig_idx, int ctx, unsigned int flags)
{
	if (peer < 0 || peer >= c->nranks || peer == c->rank) {
		ZSM_WARN("api: %s: peer %d (this is rank %d of %d)", call,
			 peer, c->rank, c->nranks);
		return -EINVAL;
	}
	if (sig_idx || flags || ctx < 0 || ctx >= ZSM_MAX_CTX) {
		ZSM_WARN("api: %s: sig_idx %d, ctx %d, flags %u (sig_idx 0, "
			 "ctx 0 to %d, flags 0)",
			 call, sig_idx, ctx, flags, ZSM_MAX_CTX - 1);
		return -EINVAL;
	}
	return 0;
}

int zsm_put_signal(const void *localbuff, size_t count,
		   zsm_datatype_t datatype, int peer, zsm_window_t peer_win,
		   size_t peer_win_offset, int sig_idx, int ctx,
		   unsigned int flags, zsm_comm_t comm, zsm_stream_t stream)
{
	struct zsm_api_comm *c;
	struct zsm_api_win *w = NULL;
	size_t bytes = 0;
	int ret = zsm_api_comm_of("put_signal", comm, &c);

	if (!ret)
		ret = zsm_api_sig_args("put_signal", c, peer, sig_idx, ctx,
				       flags);
	if (!ret)
		ret = zsm_api_bytes("put_signal", count, datatype, &bytes);
	if (!ret && bytes)
		ret = zsm_api_win_get("put_signal", c,
				      (uint64_t)(uintptr_t)peer_win, &w);
	if (!ret && bytes && !localbuff)
		ret = zsm_api_null("put_signal", "localbuff");
	if (!ret)
		ret = zsm_api_enter("put_signal", c, stream);
	if (ret)
		return ret;
	return zsm_api_put_signal(c, localbuff, bytes, peer, w,
				  peer_win_offset, ctx,
				  (zsm_cu_stream)stream);
}

int zsm_signal(int peer, int sig_idx, int ctx, unsigned int flags,
	       zsm_comm_t comm, zsm_stream_t stream)
{
	struct zsm_api_comm *c;
	int ret = zsm_api_comm_of("signal", comm, &c);

	if (!ret)
		ret = zsm_api_sig_args("signal", c, peer, sig_idx, ctx, flags);
	if (!ret)
		ret = zsm_api_enter("signal", c, stream);
	if (ret)
		return ret;
	return zsm_api_signal(c, peer, ctx, (zsm_cu_stream)stream);
}

int zsm_wait_signal(int ndesc, const zsm_wait_signal_desc_t *descs,
		    zsm_comm_t comm, zsm_stream_t stream)
{
	struct zsm_api_comm *c;
	int ret = zsm_api_comm_of("wait_signal", comm, &c);
	struct zsm_api_wait_desc w = {0};

	if (!ret && (ndesc < 0 || (ndesc && !descs))) {
		ZSM_WARN("api: wait_signal: %d descriptors at %p", ndesc,
			 (const void *)descs);
		ret = -EINVAL;
	}
	for (int i = 0; !ret && i < ndesc; i++) {
		ret = zsm_api_sig_args("wait_signal", c, descs[i].peer,
				       descs[i].sig_idx, descs[i].ctx, 0);
		if (!ret && descs[i].op_cnt < 0) {
			ZSM_WARN("api: wait_signal: op_cnt %d",
				 descs[i].op_cnt);
			ret = -EINVAL;
		}
	}
	if (!ret)
		ret = zsm_api_enter("wait_signal", c, stream);
	if (ret || !ndesc)
		return ret ? ret
			   : zsm_api_wait_signal(c, 0, &w,
						 (zsm_cu_stream)stream);
	w.base = (const char *)descs;
	w.stride = sizeof(descs[0]);
	w.peer_at = offsetof(zsm_wait_signal_desc_t, peer);
	w.ctx_at = offsetof(zsm_wait_signal_desc_t, ctx);
	w.count_at = offsetof(zsm_wait_signal_desc_t, op_cnt);
	return zsm_api_wait_signal(c, ndesc, &w, (zsm_cu_stream)stream);
}

static int zsm_api_coll_args(const char *call, zsm_comm_t comm,
			     const void *send, const void *recv,
			     size_t count, zsm_datatype_t datatype,
			     zsm_stream_t stream, struct zsm_api_comm **c,
			     size_t *bytes)
{
	int ret = zsm_api_comm_of(call, comm, c);

	if (!ret)
		ret = zsm_api_bytes(call, count, datatype, bytes);
	if (!ret && *bytes && (!send || !recv))
		ret = zsm_api_null(call, send ? "recvbuff" : "sendbuff");
	if (!ret)
		ret = zsm_api_enter(call, *c, stream);
	return ret;
}

int zsm_all_gather(const void *sendbuff, void *recvbuff, size_t sendcount,
		   zsm_datatype_t datatype, zsm_comm_t comm,
		   zsm_stream_t stream)
{
	struct zsm_api_comm *c;
	size_t bytes = 0;
	int ret = zsm_api_coll_args("all_gather", comm, sendbuff, recvbuff,
				    sendcount, datatype, stream, &c, &bytes);

	return ret ? ret
		   : zsm_api_all_gather(c, sendbuff, recvbuff, bytes,
					(zsm_cu_stream)stream);
}

int zsm_all_to_all(const void *sendbuff, void *recvbuff, size_t count,
		   zsm_datatype_t datatype, zsm_comm_t comm,
		   zsm_stream_t stream)
{
	struct zsm_api_comm *c;
	size_t bytes = 0;
	int ret = zsm_api_coll_args("all_to_all", comm, sendbuff, recvbuff,
				    count, datatype, stream, &c, &bytes);

	return ret ? ret
		   : zsm_api_all_to_all(c, sendbuff, recvbuff, bytes,
					(zsm_cu_stream)stream);
}
