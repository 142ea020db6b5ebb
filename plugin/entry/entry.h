/* SPDX-License-Identifier: MIT */
/*
 * The version-neutral entry points.  The ncclNetPlugin_vN tables in
 * plugin/abi and NCCL's RMA tables in plugin/rma are thin shims over
 * these functions; everything here returns 0 or -errno, and only the
 * shims turn that into ncclResult_t.  Every object a caller holds is a
 * handle (common/handle.h).
 */
#ifndef ZSM_ENTRY_ENTRY_H
#define ZSM_ENTRY_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#include "common/log.h"
#include "core/limits.h"

/* sink: where log lines go from now on (NULL: stderr, by ZSM_LOG). */
int zsm_init(void **ctx, uint64_t comm_id, int traffic_class,
	     zsm_log_sink_fn sink);
int zsm_finalize(void *ctx);
int zsm_devices(int *ndev);
int zsm_get_properties(int dev, struct zsm_props *props);
/* makeVDevice: devs[0..n) fused into a new device *d; max is what the
 * caller's ABI fuses at most. */
int zsm_make_vdevice(const int *devs, int n, int max, int *d);

int zsm_listen(void *ctx, int dev, void *handle, void **listen_comm);
int zsm_connect(void *ctx, int dev, void *handle, void **send_comm);
int zsm_accept(void *listen_comm, void **recv_comm);
int zsm_close_send(void *send_comm);
int zsm_close_recv(void *recv_comm);
int zsm_close_listen(void *listen_comm);

int zsm_reg_mr(void *comm, void *data, size_t size, int type, void **mh);
int zsm_reg_mr_dmabuf(void *comm, void *data, size_t size, int type,
		      uint64_t offset, int fd, void **mh);
int zsm_dereg_mr(void *comm, void *mh);

int zsm_isend(void *send_comm, void *data, size_t size, int tag, void *mh,
	      void **request);
int zsm_irecv(void *recv_comm, int n, void **data, const size_t *sizes,
	      const int *tags, void **mhs, void **request);
int zsm_iflush(void *recv_comm, int n, void **data, const int *sizes,
	       void **mhs, void **request);

/*
 * One-sided operations.  Puts and gets go on a connected send comm, to
 * or from its peer's windows.
 */
/* regMr of a window on comm's transport; *win describes it to peers. */
int zsm_reg_window(void *comm, void *data, size_t size, int type, void **mh,
		   struct zsm_rma_window *win);
/*
 * Put size bytes from src (registration mh) at dst_off of the peer's
 * window dst; then, when sig is not NULL, add sig_add to the 64-bit word
 * at sig_off of the peer's window sig.  The signal is strong: once the
 * peer sees it, this put and every earlier put and signal of the comm are
 * visible.  size 0 with NULL src and mh: the signal alone.  The request
 * completes when src may be reused.  Like isend, a NULL request with 0
 * says none is free now: call again.
 */
int zsm_iput(void *send_comm, void *src, size_t size, void *mh,
	     const struct zsm_rma_window *dst, uint64_t dst_off,
	     const struct zsm_rma_window *sig, uint64_t sig_off,
	     uint64_t sig_add, void **request);
/* 1 when comm (send or receive) failed or is gone, else 0. */
int zsm_comm_failed(void *comm);
/* The transport a connected comm moves its data by ("net", "ce"), for
 * windows registered once per transport; NULL for no such comm. */
const char *zsm_comm_transport(void *comm);
/*
 * Get size bytes at src_off of the peer's window src into dst (host or
 * GPU memory, registration mh).  The bytes read are the window's as of
 * after every earlier put and signal of the comm (the owner answers
 * first, in the comm's order); the request completes when they are in
 * dst.  Later operations of the comm may wait for it.
 */
int zsm_iget(void *send_comm, void *dst, size_t size, void *mh,
	     const struct zsm_rma_window *src, uint64_t src_off,
	     void **request);
/*
 * Let send_comm hold `sets` times ZSM_MAX_REQUESTS requests (at most
 * ZSM_MAX_REQUEST_SETS): one set per ordering domain sharing it (NCCL
 * counts its credits per RMA context), so that one domain's requests
 * waiting for test() never keep another's from being taken.  0 or
 * -errno.
 */
int zsm_comm_reserve(void *send_comm, int sets);
/*
 * Handle-free calls, for zsm's own API (plugin/api): it resolves its
 * comms and registrations once, when it makes them, and then moves data
 * with no handle look-up, no allocation and no lock of its own.
 */
struct zsm_comm;
struct zsm_mr;
struct zsm_req;
/* The send comm behind a handle, and the registration behind mh (NULL
 * for NULL); they stay valid until closed and deregistered. */
int zsm_entry_comm_of(void *send_comm, struct zsm_comm **out);
int zsm_entry_mr_of(void *mh, struct zsm_mr **out);
/* zsm_iput on c with src's registration mr (the request holds it): a
 * NULL *out with 0 says none is free now, call again. */
int zsm_entry_put(struct zsm_comm *c, void *src, size_t size,
		  struct zsm_mr *mr, const struct zsm_rma_window *dst,
		  uint64_t dst_off, const struct zsm_rma_window *sig,
		  uint64_t sig_off, uint64_t sig_add, struct zsm_req **out);
/* zsm_test of req: *done 1 once it ended (it is freed then), with its
 * result. */
int zsm_entry_req_test(struct zsm_req *req, int *done);
/* A progress pass for a caller that polls now and then (NCCL's
 * rmaProgress): 0, or -errno where the plugin cannot be used. */
int zsm_progress(void);
/* sizes: NULL, or room for the request's n ints (sends write one). */
int zsm_test(void *request, int *done, int *sizes);

#endif
