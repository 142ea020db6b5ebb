/* SPDX-License-Identifier: MIT */
/*
 * The run-time table of CUDA driver entry points (cuda_drv.h): loading
 * libcuda.so.1, resolving its symbols, and the few synchronous helpers
 * the tools need, each turning a CUDA result into -errno and a message.
 */
#include "common/cuda_drv.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define ZSM_CUDA_DRV_LIB "libcuda.so.1"

/*
 * dlsym returns a void *, and ISO C has no conversion from it to a
 * function pointer; POSIX guarantees they have the same representation,
 * so the bytes are copied into the slot.
 */
_Static_assert(sizeof(void *) == sizeof(zsm_cu_result (*)(void)),
	       "function pointers are not the size of void *");

/* CUmemcpyAttributes as cuda.h 13.0 lays it out. */
_Static_assert(sizeof(zsm_cu_memcpy_attr) == 24, "CUmemcpyAttributes size");
_Static_assert(offsetof(zsm_cu_memcpy_attr, src_hint) == 4,
	       "CUmemcpyAttributes.srcLocHint");
_Static_assert(offsetof(zsm_cu_memcpy_attr, flags) == 20,
	       "CUmemcpyAttributes.flags");

/* CUstreamBatchMemOpParams as cuda.h 11.7 to 13.0 lay it out. */
_Static_assert(sizeof(zsm_cu_memop) == 48, "CUstreamBatchMemOpParams size");
_Static_assert(offsetof(zsm_cu_memop, value.address) == 8,
	       "CUstreamMemOpWaitValueParams.address");
_Static_assert(offsetof(zsm_cu_memop, value.value64) == 16,
	       "CUstreamMemOpWaitValueParams.value64");
_Static_assert(offsetof(zsm_cu_memop, value.flags) == 24,
	       "CUstreamMemOpWaitValueParams.flags");
_Static_assert(offsetof(zsm_cu_memop, value.alias) == 32,
	       "CUstreamMemOpWaitValueParams.alias");

struct zsm_cuda_drv_sym {
	const char *name;
	size_t offset;
};

#define ZSM_CUDA_DRV_SYM(field, symbol, params) \
	{ symbol, offsetof(struct zsm_cuda_drv, field) },

static const struct zsm_cuda_drv_sym zsm_cuda_drv_syms[] = {
	ZSM_CUDA_DRV_FUNCS(ZSM_CUDA_DRV_SYM)
};

#undef ZSM_CUDA_DRV_SYM

/* Entry points newer than the rest: each slot stays NULL without it. */
static const struct zsm_cuda_drv_sym zsm_cuda_drv_optional_syms[] = {
	{ "cuMemcpyBatchAsync_v2", offsetof(struct zsm_cuda_drv, memcpy_batch) },
	{ "cuMemGetHandleForAddressRange",
	  offsetof(struct zsm_cuda_drv, mem_get_handle_range) },
	{ "cuStreamBatchMemOp_v2",
	  offsetof(struct zsm_cuda_drv, stream_batch_mem_op) },
	{ "cuModuleGetLoadingMode",
	  offsetof(struct zsm_cuda_drv, module_loading_mode) },
};

#define ZSM_CUDA_DRV_NSYMS \
	(sizeof(zsm_cuda_drv_syms) / sizeof(zsm_cuda_drv_syms[0]))
#define ZSM_CUDA_DRV_NOPTIONAL \
	(sizeof(zsm_cuda_drv_optional_syms) / \
	 sizeof(zsm_cuda_drv_optional_syms[0]))

const char *zsm_cuda_drv_symbol(size_t i)
{
	if (i < ZSM_CUDA_DRV_NSYMS)
		return zsm_cuda_drv_syms[i].name;
	i -= ZSM_CUDA_DRV_NSYMS;
	return i < ZSM_CUDA_DRV_NOPTIONAL ? zsm_cuda_drv_optional_syms[i].name
					  : NULL;
}

int zsm_cuda_drv_refused(const char *name)
{
	/* Prefixes: every variant (_v2, _ptsz, Ex) of a refused call too. */
	static const char *const refused[] = {
		"cuLaunch",	    /* kernels, cooperative, host functions */
		"cuGraphLaunch",    /* a graph may hold kernel nodes */
		"cuGraphExecKernel", "cuGraphAddKernel",
		"cuModuleLoad",	    /* loading code for SMs */
		"cuModuleGetFunction", "cuLinkAdd", "cuLinkComplete",
		"cuLibrary",	    /* CUDA 12's module loading */
		"cuKernel",	    "cuFunc",
		"cuStreamAddCallback",	/* a host function, as cuLaunchHostFunc */
	};

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (!strncmp(name, refused[i], strlen(refused[i])))
			return 1;
	return 0;
}

static void zsm_cuda_drv_why(char *why, size_t why_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void zsm_cuda_drv_why(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !why_len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
}

static void zsm_cuda_drv_reset(struct zsm_cuda_drv *d)
{
	memset(d, 0, sizeof(*d));
	d->ordinal = -1;
}

static int zsm_cuda_drv_errno(zsm_cu_result res)
{
	switch (res) {
	case ZSM_CU_ERROR_OUT_OF_MEMORY:
		return -ENOMEM;
	case ZSM_CU_ERROR_INVALID_VALUE:
		return -EINVAL;
	case ZSM_CU_ERROR_NO_DEVICE:
	case ZSM_CU_ERROR_INVALID_DEVICE:
		return -ENODEV;
	default:
		return -EIO;
	}
}

int zsm_cuda_drv_fail(const struct zsm_cuda_drv *d, zsm_cu_result res,
		      char *why, size_t why_len, const char *fmt, ...)
{
	const char *text = NULL, *name = NULL;
	char what[256];
	va_list ap;

	if (!why || !why_len)
		return zsm_cuda_drv_errno(res);
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	/* Both work before cuInit succeeds; an unknown code leaves NULL. */
	if (d && d->get_error_string &&
	    d->get_error_string(res, &text) != ZSM_CU_SUCCESS)
		text = NULL;
	if (d && d->get_error_name &&
	    d->get_error_name(res, &name) != ZSM_CU_SUCCESS)
		name = NULL;
	snprintf(why, why_len, "%s: %s (%s, %d)", what,
		 text ? text : "unknown CUDA error",
		 name ? name : "CUresult", res);
	return zsm_cuda_drv_errno(res);
}

/* Fill every slot; names the missing symbols in why. */
static int zsm_cuda_drv_resolve(struct zsm_cuda_drv *d, char *why,
				size_t why_len)
{
	size_t n = ZSM_CUDA_DRV_NSYMS;
	char missing[256] = "";
	size_t i, used = 0;
	const char *name;
	void *sym;

	/* A launch entry point added to the table by mistake stops here,
	 * before anything could call it. */
	for (i = 0; (name = zsm_cuda_drv_symbol(i)); i++) {
		if (zsm_cuda_drv_refused(name)) {
			zsm_cuda_drv_why(why, why_len,
					 "zsm's CUDA table holds %s, which "
					 "zsm must never call (it runs work "
					 "on SMs)",
					 name);
			return -EPERM;
		}
	}
	for (i = 0; i < n; i++) {
		sym = dlsym(d->lib, zsm_cuda_drv_syms[i].name);
		if (sym) {
			memcpy((char *)d + zsm_cuda_drv_syms[i].offset, &sym,
			       sizeof(sym));
			continue;
		}
		if (used < sizeof(missing))
			used += (size_t)snprintf(missing + used,
						 sizeof(missing) - used,
						 "%s%s", used ? ", " : "",
						 zsm_cuda_drv_syms[i].name);
	}
	if (!missing[0])
		return 0;
	zsm_cuda_drv_why(why, why_len,
			 "%s lacks %s (a driver older than this code needs?)",
			 ZSM_CUDA_DRV_LIB, missing);
	return -ENOSYS;
}

/* The entry points newer than the table's: a slot stays NULL without. */
static void zsm_cuda_drv_optional(struct zsm_cuda_drv *d)
{
	void *sym;

	for (size_t i = 0; i < ZSM_CUDA_DRV_NOPTIONAL; i++) {
		sym = dlsym(d->lib, zsm_cuda_drv_optional_syms[i].name);
		if (sym)
			memcpy((char *)d + zsm_cuda_drv_optional_syms[i].offset,
			       &sym, sizeof(sym));
	}
}

/*
 * Whether modules load lazily (CUDA 12 and later default to it); a
 * driver without the query loads eagerly.
 */
static int zsm_cuda_drv_lazy(struct zsm_cuda_drv *d)
{
	int mode = 0;

	return d->module_loading_mode &&
	       d->module_loading_mode(&mode) == ZSM_CU_SUCCESS &&
	       mode == ZSM_CU_MODULE_LAZY_LOADING;
}

int zsm_cuda_drv_open(struct zsm_cuda_drv *d, char *why, size_t why_len)
{
	zsm_cu_result res;
	const char *err;
	int ret, n = 0;

	zsm_cuda_drv_reset(d);
	d->lib = dlopen(ZSM_CUDA_DRV_LIB, RTLD_NOW | RTLD_LOCAL);
	if (!d->lib) {
		err = dlerror();
		zsm_cuda_drv_why(why, why_len,
				 "cannot load %s (no NVIDIA driver here?): %s",
				 ZSM_CUDA_DRV_LIB, err ? err : "unknown error");
		return -ENOENT;
	}
	ret = zsm_cuda_drv_resolve(d, why, why_len);
	if (ret) {
		/* Nothing of libcuda has run yet, so it can go. */
		dlclose(d->lib);
		zsm_cuda_drv_reset(d);
		return ret;
	}
	/*
	 * From here libcuda stays loaded even on failure: cuInit may start
	 * driver threads and register handlers that run code from it, and
	 * unmapping that code under them would crash the process later.
	 */
	res = d->init(0);
	if (res != ZSM_CU_SUCCESS) {
		zsm_cuda_drv_fail(d, res, why, why_len, "cuInit(0) failed");
		zsm_cuda_drv_reset(d);
		return -ENODEV;
	}
	if (d->driver_get_version(&d->driver_version) != ZSM_CU_SUCCESS)
		d->driver_version = 0;
	res = d->device_get_count(&n);
	if (res != ZSM_CU_SUCCESS) {
		zsm_cuda_drv_fail(d, res, why, why_len,
				  "cuDeviceGetCount failed");
		zsm_cuda_drv_reset(d);
		return -ENODEV;
	}
	if (n <= 0) {
		zsm_cuda_drv_why(why, why_len,
				 "the CUDA driver sees no device");
		zsm_cuda_drv_reset(d);
		return -ENODEV;
	}
	d->ndev = n;
	zsm_cuda_drv_optional(d);
	d->lazy_loading = zsm_cuda_drv_lazy(d);
	return 0;
}

void zsm_cuda_drv_close(struct zsm_cuda_drv *d)
{
	/* The library stays loaded: see zsm_cuda_drv_open. */
	if (d->lib && d->ordinal >= 0)
		d->device_primary_ctx_release(d->dev);
	zsm_cuda_drv_reset(d);
}

int zsm_cuda_drv_use_device(struct zsm_cuda_drv *d, int ordinal, char *why,
			    size_t why_len)
{
	zsm_cu_context ctx = NULL;
	zsm_cu_device dev = 0;
	zsm_cu_result res;
	int ret;

	if (!d->lib) {
		zsm_cuda_drv_why(why, why_len, "the CUDA driver is not open");
		return -ENODEV;
	}
	if (ordinal < 0 || ordinal >= d->ndev) {
		zsm_cuda_drv_why(why, why_len,
				 "CUDA device %d does not exist: the driver "
				 "sees %d device%s",
				 ordinal, d->ndev, d->ndev == 1 ? "" : "s");
		return -ENODEV;
	}
	res = d->device_get(&dev, ordinal);
	if (res != ZSM_CU_SUCCESS)
		return zsm_cuda_drv_fail(d, res, why, why_len,
					 "cuDeviceGet(%d) failed", ordinal);
	res = d->device_primary_ctx_retain(&ctx, dev);
	if (res != ZSM_CU_SUCCESS)
		return zsm_cuda_drv_fail(d, res, why, why_len,
					 "cuDevicePrimaryCtxRetain on CUDA "
					 "device %d failed",
					 ordinal);
	res = d->ctx_set_current(ctx);
	if (res != ZSM_CU_SUCCESS) {
		ret = zsm_cuda_drv_fail(d, res, why, why_len,
					"cuCtxSetCurrent on CUDA device %d "
					"failed",
					ordinal);
		goto err_release_ctx;
	}
	/* A retain per use_device call would leak one on every repeat. */
	if (d->ordinal >= 0)
		d->device_primary_ctx_release(d->dev);
	d->ordinal = ordinal;
	d->dev = dev;
	d->ctx = ctx;
	if (d->device_get_pci_bus_id(d->pci_bus_id, (int)sizeof(d->pci_bus_id),
				     dev) != ZSM_CU_SUCCESS)
		d->pci_bus_id[0] = '\0';
	return 0;

err_release_ctx:
	d->device_primary_ctx_release(dev);
	return ret;
}

/*
 * cuMemcpyHtoD from pageable memory may return once the data is staged,
 * and cuMemsetD8 runs asynchronously to the host: a NIC or a peer reading
 * the buffer right after would see old bytes.  Wait for the device.
 */
static int zsm_cuda_drv_sync(struct zsm_cuda_drv *d, char *why, size_t why_len,
			     const char *after)
{
	zsm_cu_result res = d->ctx_synchronize();

	if (res != ZSM_CU_SUCCESS)
		return zsm_cuda_drv_fail(d, res, why, why_len,
					 "cuCtxSynchronize after %s failed",
					 after);
	return 0;
}

int zsm_cuda_drv_alloc(struct zsm_cuda_drv *d, size_t size,
		       zsm_cu_deviceptr *dptr, char *why, size_t why_len)
{
	zsm_cu_deviceptr p = 0;
	zsm_cu_result res = d->mem_alloc(&p, size);

	if (res != ZSM_CU_SUCCESS)
		return zsm_cuda_drv_fail(d, res, why, why_len,
					 "cuMemAlloc of %zu bytes on CUDA "
					 "device %d failed",
					 size, d->ordinal);
	*dptr = p;
	return 0;
}

int zsm_cuda_drv_free(struct zsm_cuda_drv *d, zsm_cu_deviceptr dptr, char *why,
		      size_t why_len)
{
	zsm_cu_result res = d->mem_free(dptr);

	if (res != ZSM_CU_SUCCESS)
		return zsm_cuda_drv_fail(d, res, why, why_len,
					 "cuMemFree of 0x%llx failed", dptr);
	return 0;
}

int zsm_cuda_drv_copy_htod(struct zsm_cuda_drv *d, zsm_cu_deviceptr dst,
			   const void *src, size_t size, char *why,
			   size_t why_len)
{
	zsm_cu_result res = d->memcpy_htod(dst, src, size);

	if (res != ZSM_CU_SUCCESS)
		return zsm_cuda_drv_fail(d, res, why, why_len,
					 "cuMemcpyHtoD of %zu bytes to 0x%llx "
					 "failed",
					 size, dst);
	return zsm_cuda_drv_sync(d, why, why_len, "cuMemcpyHtoD");
}

int zsm_cuda_drv_copy_dtoh(struct zsm_cuda_drv *d, void *dst,
			   zsm_cu_deviceptr src, size_t size, char *why,
			   size_t why_len)
{
	zsm_cu_result res = d->memcpy_dtoh(dst, src, size);

	if (res != ZSM_CU_SUCCESS)
		return zsm_cuda_drv_fail(d, res, why, why_len,
					 "cuMemcpyDtoH of %zu bytes from "
					 "0x%llx failed",
					 size, src);
	return 0;
}

int zsm_cuda_drv_memset(struct zsm_cuda_drv *d, zsm_cu_deviceptr dst,
			unsigned char value, size_t size, char *why,
			size_t why_len)
{
	zsm_cu_result res = d->memset_d8(dst, value, size);

	if (res != ZSM_CU_SUCCESS)
		return zsm_cuda_drv_fail(d, res, why, why_len,
					 "cuMemsetD8 of %zu bytes at 0x%llx "
					 "failed",
					 size, dst);
	return zsm_cuda_drv_sync(d, why, why_len, "cuMemsetD8");
}
