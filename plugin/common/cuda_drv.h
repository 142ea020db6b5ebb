/* SPDX-License-Identifier: MIT */
/*
 * The CUDA driver API, reached at run time through dlopen("libcuda.so.1")
 * and dlsym: nothing links libcuda and nothing includes cuda.h, so code
 * using this builds and runs on machines without a GPU, a driver or the
 * CUDA toolkit, and finds out at run time whether CUDA is there.
 *
 * Never call zsm_cuda_drv_open (or anything else here) in a process that
 * will later fork children that use CUDA: a CUDA context does not survive
 * fork, and the driver's state in the child is undefined.  Fork first,
 * then open the driver in each process that needs it.
 *
 * Functions return 0 or -errno, and write what went wrong, for a person,
 * into why[why_len] (which may be NULL): -ENOENT no libcuda.so.1,
 * -ENOSYS a symbol missing from it, -ENODEV no usable device, -ENOMEM out
 * of device memory, -EINVAL a bad argument, -EPERM the table names an
 * entry point zsm must never call (zsm_cuda_drv_refused), -EIO any other
 * CUDA failure.
 */
#ifndef ZSM_COMMON_CUDA_DRV_H
#define ZSM_COMMON_CUDA_DRV_H

#include <stddef.h>

/* Our own names for the driver's types, with the same sizes as cuda.h's. */
typedef int zsm_cu_result;
typedef int zsm_cu_device;
typedef void *zsm_cu_context;
typedef unsigned long long zsm_cu_deviceptr;
typedef void *zsm_cu_stream;
typedef void *zsm_cu_event;
typedef unsigned long long zsm_cu_mem_handle; /* CUmemGenericAllocationHandle */
/* CUmemLocation: a type and an id. */
typedef struct {
	int type;
	int id;
} zsm_cu_mem_location;
/* CUmemAccessDesc: a location {type, id} and the access flags. */
typedef struct {
	int type;
	int id;
	int flags;
} zsm_cu_mem_access;
/* CUmemcpyAttributes: source order, two location hints, flags. */
typedef struct {
	int src_access_order;
	zsm_cu_mem_location src_hint;
	zsm_cu_mem_location dst_hint;
	unsigned int flags;
} zsm_cu_memcpy_attr;
/* CUipcMemHandle: 64 opaque bytes, passed by value. */
typedef struct {
	char reserved[64];
} zsm_cu_ipc_handle;

/* The few values of the driver's enums that callers use (cuda.h's). */
#define ZSM_CU_SUCCESS 0
#define ZSM_CU_ERROR_INVALID_VALUE 1
#define ZSM_CU_ERROR_OUT_OF_MEMORY 2
#define ZSM_CU_ERROR_NOT_INITIALIZED 3
#define ZSM_CU_ERROR_NO_DEVICE 100
#define ZSM_CU_ERROR_INVALID_DEVICE 101
#define ZSM_CU_ERROR_NOT_READY 600

#define ZSM_CU_DEVICE_ATTRIBUTE_PCI_BUS_ID 33
#define ZSM_CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID 34
#define ZSM_CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING 41
#define ZSM_CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID 50
#define ZSM_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define ZSM_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define ZSM_CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS 122
#define ZSM_CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED 124
#define ZSM_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD 0x1

#define ZSM_CU_POINTER_ATTRIBUTE_CONTEXT 1
#define ZSM_CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define ZSM_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9
#define ZSM_CU_MEM_HANDLE_TYPE_POSIX_FD 0x1
#define ZSM_CU_MEM_LOCATION_TYPE_DEVICE 0x1
#define ZSM_CU_MEM_ACCESS_FLAGS_PROT_READWRITE 0x3
#define ZSM_CU_STREAM_NON_BLOCKING 0x1
/* CU_STREAM_LEGACY and CU_STREAM_PER_THREAD, and NULL (the legacy stream,
 * or the per-thread one where a program is built for it). */
#define ZSM_CU_STREAM_NULL ((zsm_cu_stream)0)
#define ZSM_CU_STREAM_LEGACY ((zsm_cu_stream)0x1)
#define ZSM_CU_STREAM_PER_THREAD ((zsm_cu_stream)0x2)
#define ZSM_CU_STREAM_CAPTURE_STATUS_NONE 0
#define ZSM_CU_MEMHOSTREGISTER_PORTABLE 0x1
#define ZSM_CU_MODULE_LAZY_LOADING 0x2
#define ZSM_CU_MEMCPY_SRC_ACCESS_ORDER_STREAM 0x1
#define ZSM_CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE 0x1
#define ZSM_CU_EVENT_DISABLE_TIMING 0x2
#define ZSM_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS 0x1
#define ZSM_CU_MEMORYTYPE_HOST 1
#define ZSM_CU_MEMORYTYPE_DEVICE 2
#define ZSM_CU_MEMHOSTALLOC_PORTABLE 0x1
#define ZSM_CU_MEMHOSTALLOC_DEVICEMAP 0x2
/* CUstreamBatchMemOpType and CUstreamWaitValue_flags. */
#define ZSM_CU_STREAM_MEM_OP_WAIT_VALUE_64 4
#define ZSM_CU_STREAM_MEM_OP_WRITE_VALUE_64 5
#define ZSM_CU_STREAM_WAIT_VALUE_GEQ 0x0
/* cuStreamBatchMemOp takes fewer than 256 operations per call. */
#define ZSM_CU_BATCH_MEM_OP_MAX 255

/*
 * CUstreamBatchMemOpParams: a 48-byte union whose first int is the
 * operation; the wait and write members share one layout, which is all
 * zsm uses (cuda_drv.c checks the offsets, and test/gpu/door_probe.c
 * checks them against cuda.h where it is installed).
 */
typedef union {
	int operation;
	struct {
		int operation;
		zsm_cu_deviceptr address;
		unsigned long long value64;
		unsigned int flags;
		zsm_cu_deviceptr alias; /* the driver's; left 0 */
	} value; /* waitValue and writeValue */
	unsigned long long pad[6];
} zsm_cu_memop;

/*
 * Every entry point the table holds: X(field, "exported symbol", (params)).
 * All return zsm_cu_result.  The symbol is the versioned name the driver
 * exports (cuda.h maps cuMemAlloc to cuMemAlloc_v2 and so on); the
 * unversioned ones are the old 32-bit-size ABI and must not be used.
 * Extending the table is one line here; enum parameters are int, as the
 * C ABI passes them.
 */
#define ZSM_CUDA_DRV_FUNCS(X)                                                 \
	X(init, "cuInit", (unsigned int flags))                               \
	X(driver_get_version, "cuDriverGetVersion", (int *version))           \
	X(get_error_string, "cuGetErrorString",                               \
	  (zsm_cu_result error, const char **str))                            \
	X(get_error_name, "cuGetErrorName",                                   \
	  (zsm_cu_result error, const char **str))                            \
	X(device_get_count, "cuDeviceGetCount", (int *count))                 \
	X(device_get, "cuDeviceGet", (zsm_cu_device * dev, int ordinal))      \
	X(device_get_attribute, "cuDeviceGetAttribute",                       \
	  (int *value, int attribute, zsm_cu_device dev))                     \
	X(device_get_pci_bus_id, "cuDeviceGetPCIBusId",                       \
	  (char *bus_id, int len, zsm_cu_device dev))                         \
	X(device_primary_ctx_retain, "cuDevicePrimaryCtxRetain",              \
	  (zsm_cu_context * ctx, zsm_cu_device dev))                          \
	X(device_primary_ctx_release, "cuDevicePrimaryCtxRelease_v2",         \
	  (zsm_cu_device dev))                                                \
	X(ctx_set_current, "cuCtxSetCurrent", (zsm_cu_context ctx))           \
	X(ctx_synchronize, "cuCtxSynchronize", (void))                        \
	X(mem_alloc, "cuMemAlloc_v2", (zsm_cu_deviceptr * dptr, size_t size)) \
	X(mem_free, "cuMemFree_v2", (zsm_cu_deviceptr dptr))                  \
	X(memcpy_htod, "cuMemcpyHtoD_v2",                                     \
	  (zsm_cu_deviceptr dst, const void *src, size_t size))               \
	X(memcpy_dtoh, "cuMemcpyDtoH_v2",                                     \
	  (void *dst, zsm_cu_deviceptr src, size_t size))                     \
	X(memset_d8, "cuMemsetD8_v2",                                         \
	  (zsm_cu_deviceptr dst, unsigned char value, size_t count))          \
	X(pointer_get_attribute, "cuPointerGetAttribute",                     \
	  (void *data, int attribute, zsm_cu_deviceptr ptr))                  \
	X(ctx_get_current, "cuCtxGetCurrent", (zsm_cu_context * ctx))         \
	X(mem_get_address_range, "cuMemGetAddressRange_v2",                   \
	  (zsm_cu_deviceptr * base, size_t *size, zsm_cu_deviceptr dptr))     \
	X(ipc_get_mem_handle, "cuIpcGetMemHandle",                            \
	  (zsm_cu_ipc_handle * handle, zsm_cu_deviceptr dptr))                \
	X(ipc_open_mem_handle, "cuIpcOpenMemHandle_v2",                       \
	  (zsm_cu_deviceptr * dptr, zsm_cu_ipc_handle handle,                 \
	   unsigned int flags))                                               \
	X(ipc_close_mem_handle, "cuIpcCloseMemHandle", (zsm_cu_deviceptr dptr)) \
	X(stream_create, "cuStreamCreate",                                    \
	  (zsm_cu_stream * stream, unsigned int flags))                       \
	X(stream_create_prio, "cuStreamCreateWithPriority",                   \
	  (zsm_cu_stream * stream, unsigned int flags, int priority))         \
	X(ctx_stream_prio_range, "cuCtxGetStreamPriorityRange",               \
	  (int *least, int *greatest))                                        \
	X(stream_destroy, "cuStreamDestroy_v2", (zsm_cu_stream stream))       \
	X(event_create, "cuEventCreate",                                      \
	  (zsm_cu_event * event, unsigned int flags))                         \
	X(event_record, "cuEventRecord",                                      \
	  (zsm_cu_event event, zsm_cu_stream stream))                         \
	X(event_query, "cuEventQuery", (zsm_cu_event event))                  \
	X(stream_query, "cuStreamQuery", (zsm_cu_stream stream))              \
	X(stream_get_flags, "cuStreamGetFlags",                               \
	  (zsm_cu_stream stream, unsigned int *flags))                        \
	X(stream_is_capturing, "cuStreamIsCapturing",                         \
	  (zsm_cu_stream stream, int *status))                                \
	X(event_destroy, "cuEventDestroy_v2", (zsm_cu_event event))           \
	X(memcpy_async, "cuMemcpyAsync",                                      \
	  (zsm_cu_deviceptr dst, zsm_cu_deviceptr src, size_t size,           \
	   zsm_cu_stream stream))                                             \
	X(mem_retain_allocation_handle, "cuMemRetainAllocationHandle",        \
	  (zsm_cu_mem_handle * handle, void *addr))                           \
	X(mem_export, "cuMemExportToShareableHandle",                         \
	  (void *shareable, zsm_cu_mem_handle handle, int type,               \
	   unsigned long long flags))                                         \
	X(mem_import, "cuMemImportFromShareableHandle",                       \
	  (zsm_cu_mem_handle * handle, void *os_handle, int type))            \
	X(mem_release, "cuMemRelease", (zsm_cu_mem_handle handle))            \
	X(mem_address_reserve, "cuMemAddressReserve",                         \
	  (zsm_cu_deviceptr * ptr, size_t size, size_t align,                 \
	   zsm_cu_deviceptr addr, unsigned long long flags))                  \
	X(mem_address_free, "cuMemAddressFree",                               \
	  (zsm_cu_deviceptr ptr, size_t size))                                \
	X(mem_map, "cuMemMap",                                                \
	  (zsm_cu_deviceptr ptr, size_t size, size_t offset,                  \
	   zsm_cu_mem_handle handle, unsigned long long flags))               \
	X(mem_unmap, "cuMemUnmap", (zsm_cu_deviceptr ptr, size_t size))       \
	X(mem_host_register, "cuMemHostRegister_v2",                          \
	  (void *p, size_t size, unsigned int flags))                         \
	X(mem_host_unregister, "cuMemHostUnregister", (void *p))              \
	X(mem_set_access, "cuMemSetAccess",                                   \
	  (zsm_cu_deviceptr ptr, size_t size, const zsm_cu_mem_access *desc,  \
	   size_t count))                                                     \
	X(ctx_get_device, "cuCtxGetDevice", (zsm_cu_device * dev))            \
	X(mem_host_alloc, "cuMemHostAlloc",                                   \
	  (void **p, size_t size, unsigned int flags))                        \
	X(mem_host_get_device_pointer, "cuMemHostGetDevicePointer_v2",        \
	  (zsm_cu_deviceptr * dptr, void *p, unsigned int flags))             \
	X(mem_free_host, "cuMemFreeHost", (void *p))

#define ZSM_CUDA_DRV_FIELD(field, symbol, params) \
	zsm_cu_result (*field) params;

struct zsm_cuda_drv {
	void *lib;
	ZSM_CUDA_DRV_FUNCS(ZSM_CUDA_DRV_FIELD)
	/* Filled by zsm_cuda_drv_open. */
	int driver_version; /* 1000 * major + 10 * minor, e.g. 13000 */
	int ndev;
	int lazy_loading; /* CUDA_MODULE_LOADING is LAZY (cuda_drv.c) */
	/* cuMemcpyBatchAsync_v2 (CUDA 13), or NULL: newer than the rest, so
	 * looked up on its own. */
	zsm_cu_result (*memcpy_batch)(zsm_cu_deviceptr *dsts,
				      zsm_cu_deviceptr *srcs, size_t *sizes,
				      size_t count, zsm_cu_memcpy_attr *attrs,
				      size_t *attr_idxs, size_t nattrs,
				      zsm_cu_stream stream);
	/* cuMemGetHandleForAddressRange (CUDA 11.7), or NULL: a dma-buf fd
	 * of device memory, for registering it with a NIC. */
	zsm_cu_result (*mem_get_handle_range)(void *handle,
					      zsm_cu_deviceptr dptr,
					      size_t size, int type,
					      unsigned long long flags);
	/* cuStreamBatchMemOp_v2 (CUDA 11.7; what cuda.h maps the name to),
	 * or NULL: without it there is no stream doorbell (api_door.h), and
	 * the rest of the table still serves. */
	zsm_cu_result (*stream_batch_mem_op)(zsm_cu_stream stream,
					     unsigned int count,
					     zsm_cu_memop *ops,
					     unsigned int flags);
	/* cuModuleGetLoadingMode (CUDA 11.7), or NULL: a query of the mode
	 * only, for lazy_loading; nothing here loads a module. */
	zsm_cu_result (*module_loading_mode)(int *mode);
	/* The device zsm_cuda_drv_use_device made current; -1 for none. */
	int ordinal;
	zsm_cu_device dev;
	zsm_cu_context ctx;
	char pci_bus_id[32]; /* "0000:1b:00.0" */
};

#undef ZSM_CUDA_DRV_FIELD

/*
 * Load libcuda.so.1, resolve every entry point, cuInit(0) and count the
 * devices.  On any failure *d is left closed (zsm_cuda_drv_close is
 * harmless on it).
 */
int zsm_cuda_drv_open(struct zsm_cuda_drv *d, char *why, size_t why_len);
/*
 * The i-th name the table resolves (required entries, then the optional
 * ones), or NULL past the last: for the check that none of them launches
 * work on SMs.
 */
const char *zsm_cuda_drv_symbol(size_t i);
/*
 * Whether a driver entry point is one zsm must never resolve: a kernel,
 * graph or host-function launch, or module or library loading: zsm runs
 * nothing on SMs and holds no device code (check-no-device-code.sh).  zsm_cuda_drv_open refuses a
 * table holding one.
 */
int zsm_cuda_drv_refused(const char *name);
/*
 * Release the primary context taken by zsm_cuda_drv_use_device and clear
 * the table.  Once cuInit has run, libcuda stays loaded (see cuda_drv.c).
 */
void zsm_cuda_drv_close(struct zsm_cuda_drv *d);

/*
 * Retain the primary context of device `ordinal` and make it current on
 * the calling thread; -ENODEV when there is no such device.  A second
 * call for another device releases the first one's context.
 */
int zsm_cuda_drv_use_device(struct zsm_cuda_drv *d, int ordinal, char *why,
			    size_t why_len);

/* Device memory on the current device; these calls are synchronous. */
int zsm_cuda_drv_alloc(struct zsm_cuda_drv *d, size_t size,
		       zsm_cu_deviceptr *dptr, char *why, size_t why_len);
int zsm_cuda_drv_free(struct zsm_cuda_drv *d, zsm_cu_deviceptr dptr, char *why,
		      size_t why_len);
int zsm_cuda_drv_copy_htod(struct zsm_cuda_drv *d, zsm_cu_deviceptr dst,
			   const void *src, size_t size, char *why,
			   size_t why_len);
int zsm_cuda_drv_copy_dtoh(struct zsm_cuda_drv *d, void *dst,
			   zsm_cu_deviceptr src, size_t size, char *why,
			   size_t why_len);
int zsm_cuda_drv_memset(struct zsm_cuda_drv *d, zsm_cu_deviceptr dst,
			unsigned char value, size_t size, char *why,
			size_t why_len);

/*
 * For callers of the table's entries: turn a failed call's result into
 * -errno, and write "<fmt...>: <text> (<NAME>, <number>)" into why.
 */
int zsm_cuda_drv_fail(const struct zsm_cuda_drv *d, zsm_cu_result res,
		      char *why, size_t why_len, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

#endif
