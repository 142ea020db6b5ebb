/* SPDX-License-Identifier: MIT */
/*
 * Our own declarations of NCCL's RMA plugin tables, ncclRma_v14 and
 * ncclRma_v13 (the GIN v13 layout, which NCCL 2.30 loads as RMA), written
 * from the shared reference (nccl-plugin-abi.md section 3).  Nothing is
 * copied from NCCL: the static asserts at the bottom pin every size and
 * slot, so a wrong order fails the build instead of NCCL calling the wrong
 * function.  Both tables take the v12 net properties.
 */
#ifndef ZSM_ABI_NCCL_RMA_H
#define ZSM_ABI_NCCL_RMA_H

#include <stdbool.h>

#include "abi/nccl_net.h"

/* netDeviceType an RMA plugin reports: NCCL's proxy drives it.  v13
 * refuses anything else; v14 then leaves multi-node RMA off. */
#define NCCL_NET_DEVICE_GIN_PROXY 2

/* Registration flags of regMrSym. */
#define NCCL_NET_MR_FLAG_FORCE_SO (1ULL << 0)
#define NCCL_NET_MR_FLAG_SIGNAL_NEVER_RESET (1ULL << 1)

/* iputSignal's signalOp: INC adds 1, ADD adds signalValue. */
#define NCCL_NET_SIGNAL_OP_INC 1
#define NCCL_NET_SIGNAL_OP_ADD 2

typedef struct {
	int nContexts;
	int trafficClass;
	int rankStride;
} ncclRmaConfig_v14_t;

typedef struct {
	int nSignals;
	int nCounters;
	int nContexts;
	int queueDepth;
	int trafficClass;
} ncclGinConfig_v13_t;

/* Slots 0 to 5, the same in both tables. */
#define ZSM_NCCL_RMA_HEAD_SLOTS                                               \
	const char *name;                                                     \
	ncclResult_t (*init)(void **ctx, uint64_t commId,                     \
			     ncclDebugLogger_t logFunction);                  \
	ncclResult_t (*devices)(int *ndev);                                   \
	ncclResult_t (*getProperties)(int dev,                                \
				      ncclNetProperties_v12_t *props);        \
	ncclResult_t (*listen)(void *ctx, int dev, void *handle,              \
			       void **listenComm);                            \
	ncclResult_t (*connect)(void *ctx, void **handles, int nranks,        \
				int rank, void *listenComm, void **collComm)

typedef struct {
	ZSM_NCCL_RMA_HEAD_SLOTS;
	ncclResult_t (*createContext)(void *collComm,
				      ncclRmaConfig_v14_t *config,
				      void **rmaCtx);
	ncclResult_t (*regMrSym)(void *collComm, void *data, size_t size,
				 int type, uint64_t mrFlags, void **mhandle);
	ncclResult_t (*regMrSymDmaBuf)(void *collComm, void *data,
				       size_t size, int type, uint64_t offset,
				       int fd, uint64_t mrFlags,
				       void **mhandle);
	ncclResult_t (*deregMrSym)(void *collComm, void *mhandle);
	ncclResult_t (*destroyContext)(void *rmaCtx);
	ncclResult_t (*closeColl)(void *collComm);
	ncclResult_t (*closeListen)(void *listenComm);
	ncclResult_t (*iput)(void *rmaCtx, int context, uint64_t srcOff,
			     void *srcMh, size_t size, uint64_t dstOff,
			     void *dstMh, uint32_t rank, void **request);
	ncclResult_t (*iputSignal)(void *rmaCtx, int context, uint64_t srcOff,
				   void *srcMh, size_t size, uint64_t dstOff,
				   void *dstMh, uint32_t rank,
				   uint64_t signalOff, void *signalMh,
				   uint64_t signalValue, uint32_t signalOp,
				   bool isStrongSignal, void **request);
	ncclResult_t (*iget)(void *rmaCtx, int context, uint64_t remoteOff,
			     void *remoteMh, size_t size, uint64_t localOff,
			     void *localMh, uint32_t rank, void **request);
	ncclResult_t (*iflush)(void *rmaCtx, int context, void *mhandle,
			       uint32_t rank, void **request);
	/* The collComm, not the context (reference pitfall 8). */
	ncclResult_t (*test)(void *collComm, void *request, int *done);
	ncclResult_t (*rmaProgress)(void *rmaCtx);
	ncclResult_t (*queryLastError)(void *rmaCtx, bool *hasError);
	ncclResult_t (*finalize)(void *ctx);
} ncclRma_v14_t;

/* v13 (GIN v13's layout): a device handle out of createContext, a GIN
 * handle out of each registration, every signal strong. */
typedef struct {
	ZSM_NCCL_RMA_HEAD_SLOTS;
	ncclResult_t (*createContext)(void *collComm,
				      ncclGinConfig_v13_t *config,
				      void **ginCtx,
				      ncclNetDeviceHandle_t **devHandle);
	ncclResult_t (*regMrSym)(void *collComm, void *data, size_t size,
				 int type, uint64_t mrFlags, void **mhandle,
				 void **ginHandle);
	ncclResult_t (*regMrSymDmaBuf)(void *collComm, void *data,
				       size_t size, int type, uint64_t offset,
				       int fd, uint64_t mrFlags,
				       void **mhandle, void **ginHandle);
	ncclResult_t (*deregMrSym)(void *collComm, void *mhandle);
	ncclResult_t (*destroyContext)(void *ginCtx);
	ncclResult_t (*closeColl)(void *collComm);
	ncclResult_t (*closeListen)(void *listenComm);
	ncclResult_t (*iput)(void *ginCtx, int context, uint64_t srcOff,
			     void *srcMh, size_t size, uint64_t dstOff,
			     void *dstMh, uint32_t rank, void **request);
	ncclResult_t (*iputSignal)(void *ginCtx, int context, uint64_t srcOff,
				   void *srcMh, size_t size, uint64_t dstOff,
				   void *dstMh, uint32_t rank,
				   uint64_t signalOff, void *signalMh,
				   uint64_t signalValue, uint32_t signalOp,
				   void **request);
	ncclResult_t (*iget)(void *ginCtx, int context, uint64_t remoteOff,
			     void *remoteMh, size_t size, uint64_t localOff,
			     void *localMh, uint32_t rank, void **request);
	ncclResult_t (*iflush)(void *ginCtx, int context, void *mhandle,
			       uint32_t rank, void **request);
	ncclResult_t (*test)(void *collComm, void *request, int *done);
	ncclResult_t (*ginProgress)(void *ginCtx);
	ncclResult_t (*queryLastError)(void *ginCtx, bool *hasError);
	ncclResult_t (*finalize)(void *ctx);
} ncclRma_v13_t;

#if defined(__x86_64__) || defined(__aarch64__)
#define ZSM_OFF(T, f, o) static_assert(offsetof(T, f) == (o), #T "." #f)
static_assert(sizeof(ncclRmaConfig_v14_t) == 12, "rma config v14");
static_assert(sizeof(ncclGinConfig_v13_t) == 20, "gin config v13");
static_assert(sizeof(bool) == 1, "C99 bool");
/* 21 slots of 8 bytes each; slot k at 8 * k. */
#define ZSM_RMA_SLOTS(T, progname)                                   \
	ZSM_OFF(T, name, 0);                                                  \
	ZSM_OFF(T, init, 8);                                                  \
	ZSM_OFF(T, devices, 16);                                              \
	ZSM_OFF(T, getProperties, 24);                                        \
	ZSM_OFF(T, listen, 32);                                               \
	ZSM_OFF(T, connect, 40);                                              \
	ZSM_OFF(T, createContext, 48);                                        \
	ZSM_OFF(T, regMrSym, 56);                                             \
	ZSM_OFF(T, regMrSymDmaBuf, 64);                                       \
	ZSM_OFF(T, deregMrSym, 72);                                           \
	ZSM_OFF(T, destroyContext, 80);                                       \
	ZSM_OFF(T, closeColl, 88);                                            \
	ZSM_OFF(T, closeListen, 96);                                          \
	ZSM_OFF(T, iput, 104);                                                \
	ZSM_OFF(T, iputSignal, 112);                                          \
	ZSM_OFF(T, iget, 120);                                                \
	ZSM_OFF(T, iflush, 128);                                              \
	ZSM_OFF(T, test, 136);                                                \
	ZSM_OFF(T, progname, 144);                                            \
	ZSM_OFF(T, queryLastError, 152);                                      \
	ZSM_OFF(T, finalize, 160);                                            \
	static_assert(sizeof(T) == 168, #T " size")
ZSM_RMA_SLOTS(ncclRma_v14_t, rmaProgress);
ZSM_RMA_SLOTS(ncclRma_v13_t, ginProgress);
#undef ZSM_RMA_SLOTS
#undef ZSM_OFF
#endif

#endif /* ZSM_ABI_NCCL_RMA_H */
