/* SPDX-License-Identifier: MIT */
/*
 * zsm's zero-SM host API: one-sided puts with signals, AllGather and
 * AlltoAll between processes, beside any NCCL or none.  Data moves on the
 * GPUs' copy engines (peers on this host) and on the NIC driven by zsm's
 * threads (peers on other hosts); no call launches a kernel.
 *
 * Every call returns 0 or a negative errno value (zsm_strerror says what it
 * means), and says what went wrong on the log (ZSM_LOG) once.  Calls that
 * take a stream are stream-ordered and return at once: the work starts when
 * the stream reaches it, and later work on the stream starts once it is
 * complete.  A communicator made where no CUDA context is current works in
 * host-memory mode: host windows only, stream NULL, and every call is
 * complete when it returns.  docs/api.md is the manual.
 *
 * Shapes follow NCCL 2.30's ncclCommWindowRegister, ncclPutSignal,
 * ncclSignal and ncclWaitSignal, so that code written for them runs on
 * older NCCLs and on fabrics NCCL's RMA does not reach: rename the calls,
 * and test for errors as negative numbers.
 */
#ifndef ZSM_ZSM_H
#define ZSM_ZSM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define ZSM_EXPORT __attribute__((visibility("default")))
#else
#define ZSM_EXPORT
#endif

/* 100 * major + minor of this header; zsm_get_version gives the library's. */
#define ZSM_API_VERSION 100

/* The same type as cudaStream_t and CUstream: pass either as it is. */
typedef struct CUstream_st *zsm_stream_t;

typedef struct zsm_comm *zsm_comm_t;
typedef struct zsm_window *zsm_window_t;

/* Opaque: rank 0 makes it and the caller copies it to every rank. */
#define ZSM_UNIQUE_ID_BYTES 128
typedef struct {
	char internal[ZSM_UNIQUE_ID_BYTES];
} zsm_unique_id_t;

/* The numbers are NCCL's (ncclDataType_t), so its values pass as they are. */
typedef enum {
	zsm_int8 = 0,
	zsm_uint8 = 1,
	zsm_int32 = 2,
	zsm_uint32 = 3,
	zsm_int64 = 4,
	zsm_uint64 = 5,
	zsm_float16 = 6,
	zsm_float32 = 7,
	zsm_float64 = 8,
	zsm_bfloat16 = 9,
	zsm_float8e4m3 = 10,
	zsm_float8e5m2 = 11,
} zsm_datatype_t;

/* One wait of zsm_wait_signal, as ncclWaitSignalDesc_t. */
typedef struct {
	int op_cnt;  /* signals from peer to wait for, counting from the last
			wait on (peer, ctx) */
	int peer;
	int sig_idx; /* 0 */
	int ctx;
} zsm_wait_signal_desc_t;

/* Signal contexts a communicator has (the ctx of the calls below). */
#define ZSM_MAX_CTX 4

ZSM_EXPORT int zsm_get_version(int *version);
/* A sentence for an error this API returned ("Success" for 0). */
ZSM_EXPORT const char *zsm_strerror(int err);

/* In the process that will be rank 0: a fresh id to give every rank. */
ZSM_EXPORT int zsm_get_unique_id(zsm_unique_id_t *id);
/*
 * Collective: join nranks processes.  Waits at most ZSM_BOOT_TIMEOUT_MS for
 * every rank, then connects every pair (same-host pairs on copy engines or
 * cross-memory attach, others over the network).  The CUDA context current
 * on the calling thread, if any, is the communicator's: its windows may be
 * that GPU's memory and its calls take that device's streams.
 */
ZSM_EXPORT int zsm_comm_init_rank(zsm_comm_t *comm, int nranks,
				  zsm_unique_id_t id, int rank);
/*
 * As zsm_comm_init_rank, with rank, size and rendezvous from the launcher's
 * environment: torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT + 1),
 * Open MPI, Slurm or PMI, or ZSM_BOOT_ADDR.
 */
ZSM_EXPORT int zsm_comm_init_env(zsm_comm_t *comm);
/* Not collective.  Waits for this rank's own work in flight (at most the
 * wait timeout), then closes; peers still using it see it as gone. */
ZSM_EXPORT int zsm_comm_destroy(zsm_comm_t comm);
/*
 * 0 while the communicator is sound; otherwise the error that failed it
 * (a dead peer, a failed transfer, a wait past ZSM_WAIT_TIMEOUT_MS).  A
 * failed communicator releases every stream waiting on it, leaves the data
 * of the calls in flight undefined, and refuses new calls with that error.
 */
ZSM_EXPORT int zsm_comm_get_async_error(zsm_comm_t comm, int *error);
ZSM_EXPORT int zsm_comm_count(zsm_comm_t comm, int *nranks);
ZSM_EXPORT int zsm_comm_user_rank(zsm_comm_t comm, int *rank);

/*
 * Collective, in the same order on every rank: register size bytes at buff
 * (cudaMalloc or cuMem memory of the communicator's GPU, or host memory)
 * as a window peers put into.  Sizes may differ between ranks; a put is
 * checked against its target's size.  flags: 0.
 */
ZSM_EXPORT int zsm_comm_window_register(zsm_comm_t comm, void *buff,
					size_t size, zsm_window_t *win,
					int flags);
/* Collective, in the same order on every rank. */
ZSM_EXPORT int zsm_comm_window_deregister(zsm_comm_t comm, zsm_window_t win);

/*
 * Put count elements at localbuff (inside a window of comm) at
 * peer_win_offset bytes into peer's copy of peer_win, then add 1 to peer's
 * signal for (this rank, ctx): once peer's wait for it passes, the bytes of
 * this put and of every earlier put and signal from this rank are there.
 * sig_idx and flags: 0.  The stream goes on once localbuff may be reused.
 */
ZSM_EXPORT int zsm_put_signal(const void *localbuff, size_t count,
			      zsm_datatype_t datatype, int peer,
			      zsm_window_t peer_win, size_t peer_win_offset,
			      int sig_idx, int ctx, unsigned int flags,
			      zsm_comm_t comm, zsm_stream_t stream);
/* The signal alone.  peer is another rank: a rank never signals itself. */
ZSM_EXPORT int zsm_signal(int peer, int sig_idx, int ctx, unsigned int flags,
			  zsm_comm_t comm, zsm_stream_t stream);
/* The stream waits until, for each desc, op_cnt more signals came from
 * desc->peer on desc->ctx than all earlier waits on them asked for. */
ZSM_EXPORT int zsm_wait_signal(int ndesc, const zsm_wait_signal_desc_t *descs,
			       zsm_comm_t comm, zsm_stream_t stream);

/*
 * Collectives.  recvbuff must lie at the same offset of the same window on
 * every rank (the n-th registered), and an out-of-place sendbuff inside a
 * window too.  AllGather: rank r's sendcount elements land at
 * r * sendcount of every rank's recvbuff; in place when sendbuff is
 * recvbuff + rank * sendcount elements.  AlltoAll: block j (count
 * elements) of rank r's sendbuff lands as block r of rank j's recvbuff; in
 * place when sendbuff is recvbuff.  No same-GPU device-to-device copy is
 * made (on many drivers it runs on SMs): docs/api.md says what the own
 * block and in-place AlltoAll cost instead.  Calls on one communicator are
 * ordered on one stream at a time.  Every rank must make the same call
 * with the same bytes per rank (count 0 included: it moves nothing but
 * still meets every peer); a call where ranks differ fails the
 * communicator with -EPROTO on every rank, before any block is written
 * into a rank whose call differs.
 */
ZSM_EXPORT int zsm_all_gather(const void *sendbuff, void *recvbuff,
			      size_t sendcount, zsm_datatype_t datatype,
			      zsm_comm_t comm, zsm_stream_t stream);
ZSM_EXPORT int zsm_all_to_all(const void *sendbuff, void *recvbuff,
			      size_t count, zsm_datatype_t datatype,
			      zsm_comm_t comm, zsm_stream_t stream);

#ifdef __cplusplus
}
#endif

#endif
