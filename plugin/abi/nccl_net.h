/* SPDX-License-Identifier: MIT */
/*
 * Our own declarations of NCCL's net plugin ABI, versions 8 to 12, written
 * from docs/abi notes (shared reference, section 2).  Nothing here is copied
 * from NCCL: the layouts are pinned by the static asserts at the bottom, so a
 * wrong field order fails the build instead of corrupting NCCL's stack.
 */
#ifndef ZSM_ABI_NCCL_NET_H
#define ZSM_ABI_NCCL_NET_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

/* ncclResult_t values as NCCL defines them; the enum is an int on the ABI. */
typedef enum {
	ncclSuccess = 0,
	ncclUnhandledCudaError = 1,
	ncclSystemError = 2,
	ncclInternalError = 3,
	ncclInvalidArgument = 4,
	ncclInvalidUsage = 5,
	ncclRemoteError = 6,
	ncclInProgress = 7,
} ncclResult_t;

/* ncclDebugLogLevel */
enum {
	NCCL_LOG_NONE = 0,
	NCCL_LOG_VERSION = 1,
	NCCL_LOG_WARN = 2,
	NCCL_LOG_INFO = 3,
	NCCL_LOG_ABORT = 4,
	NCCL_LOG_TRACE = 5,
};

/* ncclDebugLogSubSys bits used by net plugins. */
#define NCCL_INIT (1UL << 0)
#define NCCL_NET (1UL << 4)
#define NCCL_ALL (~0UL)

typedef void (*ncclDebugLogger_t)(int level, unsigned long flags,
				  const char *file, int line,
				  const char *fmt, ...);
typedef ncclResult_t (*ncclProfilerCallback_t)(void **eHandle, int type,
					       void *pHandle, int64_t pluginId,
					       void *extData);

#define NCCL_NET_HANDLE_MAXSIZE 128
#define NCCL_NET_MAX_REQUESTS 32
#define NCCL_PTR_HOST 0x1
#define NCCL_PTR_CUDA 0x2
#define NCCL_PTR_DMABUF 0x4
#define NCCL_NET_OPTIONAL_RECV_COMPLETION 0x1
#define NCCL_MAX_NET_SIZE_BYTES (1ULL << 40)
#define NCCL_NET_DEVICE_HOST 0
#define NCCL_NET_DEVICE_INVALID_VERSION 0
#define NCCL_NET_MAX_DEVS_PER_NIC_V11 4
#define NCCL_NET_MAX_DEVS_PER_NIC_V12 8
#define NCCL_NET_TRAFFIC_CLASS_UNDEF (-1)
#define NCCL_NET_ID_UNDEF (-1)

typedef struct {
	int netDeviceType;
	int netDeviceVersion;
	void *handle;
	size_t size;
	int needsProxyProgress;
} ncclNetDeviceHandle_t;

typedef struct {
	int ndevs;
	int devs[NCCL_NET_MAX_DEVS_PER_NIC_V11];
} ncclNetVDeviceProps_v9_t;
typedef ncclNetVDeviceProps_v9_t ncclNetVDeviceProps_v10_t;
typedef ncclNetVDeviceProps_v9_t ncclNetVDeviceProps_v11_t;

typedef struct {
	int ndevs;
	int devs[NCCL_NET_MAX_DEVS_PER_NIC_V12];
} ncclNetVDeviceProps_v12_t;

typedef struct {
	int trafficClass;
} ncclNetCommConfig_t;

typedef struct {
	int32_t maxConcurrentPeers;
	int32_t minConcurrentPeers;
	int32_t maxFlowsPerPeer;
	int32_t minFlowsPerPeer;
} ncclNetCommAttr_t;

typedef struct {
	ncclNetCommAttr_t sendCommAttr;
	ncclNetCommAttr_t recvCommAttr;
	uint32_t op;
	uint32_t algo;
	uint32_t proto;
} ncclNetAttr_t;

typedef struct {
	char *name;
	char *pciPath;
	uint64_t guid;
	int ptrSupport;
	int regIsGlobal;
	int speed;
	int port;
	float latency;
	int maxComms;
	int maxRecvs;
	int netDeviceType;
	int netDeviceVersion;
} ncclNetProperties_v8_t;

typedef struct {
	char *name;
	char *pciPath;
	uint64_t guid;
	int ptrSupport;
	int regIsGlobal;
	int forceFlush;
	int speed;
	int port;
	float latency;
	int maxComms;
	int maxRecvs;
	int netDeviceType;
	int netDeviceVersion;
	ncclNetVDeviceProps_v9_t vProps;
	size_t maxP2pBytes;
	size_t maxCollBytes;
} ncclNetProperties_v9_t;
typedef ncclNetProperties_v9_t ncclNetProperties_v10_t;

typedef struct {
	char *name;
	char *pciPath;
	uint64_t guid;
	int ptrSupport;
	int regIsGlobal;
	int forceFlush;
	int speed;
	int port;
	float latency;
	int maxComms;
	int maxRecvs;
	int netDeviceType;
	int netDeviceVersion;
	ncclNetVDeviceProps_v11_t vProps;
	size_t maxP2pBytes;
	size_t maxCollBytes;
	int maxMultiRequestSize;
} ncclNetProperties_v11_t;

typedef struct {
	char *name;
	char *pciPath;
	uint64_t guid;
	int ptrSupport;
	int regIsGlobal;
	int forceFlush;
	int speed;
	int port;
	float latency;
	int maxComms;
	int maxRecvs;
	int netDeviceType;
	int netDeviceVersion;
	ncclNetVDeviceProps_v12_t vProps;
	size_t maxP2pBytes;
	size_t maxCollBytes;
	int maxMultiRequestSize;
	int16_t railId;
	int16_t planeId;
} ncclNetProperties_v12_t;

/* Function slots shared by every version from regMr on. */
#define ZSM_NCCL_NET_MR_SLOTS                                                 \
	ncclResult_t (*regMr)(void *comm, void *data, size_t size, int type,  \
			      void **mhandle);                                \
	ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size,      \
				    int type, uint64_t offset, int fd,        \
				    void **mhandle);                          \
	ncclResult_t (*deregMr)(void *comm, void *mhandle)

#define ZSM_NCCL_NET_TAIL_SLOTS                                               \
	ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, \
			       void **mhandles, void **request);              \
	ncclResult_t (*test)(void *request, int *done, int *sizes);           \
	ncclResult_t (*closeSend)(void *sendComm);                            \
	ncclResult_t (*closeRecv)(void *recvComm);                            \
	ncclResult_t (*closeListen)(void *listenComm);                        \
	ncclResult_t (*getDeviceMr)(void *comm, void *mhandle,                \
				    void **dptr_mhandle);                     \
	ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request)

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v8_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(int dev, void *handle, void **sendComm,
				ncclNetDeviceHandle_t **sendDevComm);
	ncclResult_t (*accept)(void *listenComm, void **recvComm,
			       ncclNetDeviceHandle_t **recvDevComm);
	ZSM_NCCL_NET_MR_SLOTS;
	ncclResult_t (*isend)(void *sendComm, void *data, int size, int tag,
			      void *mhandle, void **request);
	ncclResult_t (*irecv)(void *recvComm, int n, void **data, int *sizes,
			      int *tags, void **mhandles, void **request);
	ZSM_NCCL_NET_TAIL_SLOTS;
} ncclNet_v8_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v9_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(int dev, void *handle, void **sendComm,
				ncclNetDeviceHandle_t **sendDevComm);
	ncclResult_t (*accept)(void *listenComm, void **recvComm,
			       ncclNetDeviceHandle_t **recvDevComm);
	ZSM_NCCL_NET_MR_SLOTS;
	ncclResult_t (*isend)(void *sendComm, void *data, size_t size, int tag,
			      void *mhandle, void **request);
	ncclResult_t (*irecv)(void *recvComm, int n, void **data,
			      size_t *sizes, int *tags, void **mhandles,
			      void **request);
	ZSM_NCCL_NET_TAIL_SLOTS;
	ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v9_t *props);
} ncclNet_v9_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction,
			     ncclProfilerCallback_t profFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v10_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(int dev, ncclNetCommConfig_t *config,
				void *handle, void **sendComm,
				ncclNetDeviceHandle_t **sendDevComm);
	ncclResult_t (*accept)(void *listenComm, void **recvComm,
			       ncclNetDeviceHandle_t **recvDevComm);
	ZSM_NCCL_NET_MR_SLOTS;
	ncclResult_t (*isend)(void *sendComm, void *data, size_t size, int tag,
			      void *mhandle, void *phandle, void **request);
	ncclResult_t (*irecv)(void *recvComm, int n, void **data,
			      size_t *sizes, int *tags, void **mhandles,
			      void **phandles, void **request);
	ZSM_NCCL_NET_TAIL_SLOTS;
	ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v10_t *props);
} ncclNet_v10_t;

/* v11 and v12 differ only in the properties and vdevice types. */
#define ZSM_NCCL_NET_V11_LIKE(V)                                              \
	typedef struct {                                                      \
		const char *name;                                             \
		ncclResult_t (*init)(void **ctx, uint64_t commId,             \
				     ncclNetCommConfig_t *config,             \
				     ncclDebugLogger_t logFunction,           \
				     ncclProfilerCallback_t profFunction);    \
		ncclResult_t (*devices)(int *ndev);                           \
		ncclResult_t (*getProperties)(int dev,                        \
					      ncclNetProperties_##V##_t *p);  \
		ncclResult_t (*listen)(void *ctx, int dev, void *handle,      \
				       void **listenComm);                    \
		ncclResult_t (*connect)(void *ctx, int dev, void *handle,     \
					void **sendComm,                      \
					ncclNetDeviceHandle_t **sendDevComm); \
		ncclResult_t (*accept)(void *listenComm, void **recvComm,     \
				       ncclNetDeviceHandle_t **recvDevComm);  \
		ZSM_NCCL_NET_MR_SLOTS;                                        \
		ncclResult_t (*isend)(void *sendComm, void *data,             \
				      size_t size, int tag, void *mhandle,    \
				      void *phandle, void **request);         \
		ncclResult_t (*irecv)(void *recvComm, int n, void **data,     \
				      size_t *sizes, int *tags,               \
				      void **mhandles, void **phandles,       \
				      void **request);                        \
		ZSM_NCCL_NET_TAIL_SLOTS;                                      \
		ncclResult_t (*makeVDevice)(int *d,                           \
					    ncclNetVDeviceProps_##V##_t *p);  \
		ncclResult_t (*finalize)(void *ctx);                          \
		ncclResult_t (*setNetAttr)(void *ctx, ncclNetAttr_t *attr);   \
	} ncclNet_##V##_t

ZSM_NCCL_NET_V11_LIKE(v11);
ZSM_NCCL_NET_V11_LIKE(v12);

/*
 * Layouts from the reference (x86-64 LP64).  A mismatch here means NCCL
 * would read our tables or write our structs at the wrong offsets.
 */
#if defined(__x86_64__) || defined(__aarch64__)
static_assert(sizeof(ncclNetDeviceHandle_t) == 32, "device handle size");
static_assert(offsetof(ncclNetDeviceHandle_t, handle) == 8, "dh.handle");
static_assert(offsetof(ncclNetDeviceHandle_t, size) == 16, "dh.size");
static_assert(offsetof(ncclNetDeviceHandle_t, needsProxyProgress) == 24,
	      "dh.needsProxyProgress");
static_assert(sizeof(ncclNetVDeviceProps_v9_t) == 20, "vprops v9-v11");
static_assert(sizeof(ncclNetVDeviceProps_v12_t) == 36, "vprops v12");
static_assert(sizeof(ncclNetAttr_t) == 44, "net attr");

#define ZSM_OFF(T, f, o) static_assert(offsetof(T, f) == (o), #T "." #f)
ZSM_OFF(ncclNetProperties_v8_t, pciPath, 8);
ZSM_OFF(ncclNetProperties_v8_t, guid, 16);
ZSM_OFF(ncclNetProperties_v8_t, ptrSupport, 24);
ZSM_OFF(ncclNetProperties_v8_t, regIsGlobal, 28);
ZSM_OFF(ncclNetProperties_v8_t, speed, 32);
ZSM_OFF(ncclNetProperties_v8_t, port, 36);
ZSM_OFF(ncclNetProperties_v8_t, latency, 40);
ZSM_OFF(ncclNetProperties_v8_t, maxComms, 44);
ZSM_OFF(ncclNetProperties_v8_t, maxRecvs, 48);
ZSM_OFF(ncclNetProperties_v8_t, netDeviceType, 52);
ZSM_OFF(ncclNetProperties_v8_t, netDeviceVersion, 56);
static_assert(sizeof(ncclNetProperties_v8_t) == 64, "props v8");

#define ZSM_PROPS_V9_OFFSETS(T)                                               \
	ZSM_OFF(T, pciPath, 8);                                               \
	ZSM_OFF(T, guid, 16);                                                 \
	ZSM_OFF(T, ptrSupport, 24);                                           \
	ZSM_OFF(T, regIsGlobal, 28);                                          \
	ZSM_OFF(T, forceFlush, 32);                                           \
	ZSM_OFF(T, speed, 36);                                                \
	ZSM_OFF(T, port, 40);                                                 \
	ZSM_OFF(T, latency, 44);                                              \
	ZSM_OFF(T, maxComms, 48);                                             \
	ZSM_OFF(T, maxRecvs, 52);                                             \
	ZSM_OFF(T, netDeviceType, 56);                                        \
	ZSM_OFF(T, netDeviceVersion, 60);                                     \
	ZSM_OFF(T, vProps, 64)
ZSM_PROPS_V9_OFFSETS(ncclNetProperties_v9_t);
ZSM_OFF(ncclNetProperties_v9_t, maxP2pBytes, 88);
ZSM_OFF(ncclNetProperties_v9_t, maxCollBytes, 96);
static_assert(sizeof(ncclNetProperties_v9_t) == 104, "props v9/v10");
ZSM_PROPS_V9_OFFSETS(ncclNetProperties_v11_t);
ZSM_OFF(ncclNetProperties_v11_t, maxP2pBytes, 88);
ZSM_OFF(ncclNetProperties_v11_t, maxCollBytes, 96);
ZSM_OFF(ncclNetProperties_v11_t, maxMultiRequestSize, 104);
static_assert(sizeof(ncclNetProperties_v11_t) == 112, "props v11");
ZSM_PROPS_V9_OFFSETS(ncclNetProperties_v12_t);
ZSM_OFF(ncclNetProperties_v12_t, maxP2pBytes, 104);
ZSM_OFF(ncclNetProperties_v12_t, maxCollBytes, 112);
ZSM_OFF(ncclNetProperties_v12_t, maxMultiRequestSize, 120);
ZSM_OFF(ncclNetProperties_v12_t, railId, 124);
ZSM_OFF(ncclNetProperties_v12_t, planeId, 126);
static_assert(sizeof(ncclNetProperties_v12_t) == 128, "props v12");

/* Slot positions: slot k sits at 8*k. */
ZSM_OFF(ncclNet_v8_t, init, 8);
ZSM_OFF(ncclNet_v8_t, regMr, 56);
ZSM_OFF(ncclNet_v8_t, isend, 80);
ZSM_OFF(ncclNet_v8_t, test, 104);
ZSM_OFF(ncclNet_v8_t, irecvConsumed, 144);
static_assert(sizeof(ncclNet_v8_t) == 152, "table v8");
ZSM_OFF(ncclNet_v9_t, makeVDevice, 152);
static_assert(sizeof(ncclNet_v9_t) == 160, "table v9");
ZSM_OFF(ncclNet_v10_t, isend, 80);
ZSM_OFF(ncclNet_v10_t, makeVDevice, 152);
static_assert(sizeof(ncclNet_v10_t) == 160, "table v10");
ZSM_OFF(ncclNet_v11_t, makeVDevice, 152);
ZSM_OFF(ncclNet_v11_t, finalize, 160);
ZSM_OFF(ncclNet_v11_t, setNetAttr, 168);
static_assert(sizeof(ncclNet_v11_t) == 176, "table v11");
static_assert(sizeof(ncclNet_v12_t) == 176, "table v12");
#undef ZSM_OFF
#endif

#endif /* ZSM_ABI_NCCL_NET_H */
