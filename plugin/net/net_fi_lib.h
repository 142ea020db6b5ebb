/* SPDX-License-Identifier: MIT */
/*
 * libfabric, opened at run time instead of linked.
 *
 * Why: Debian's libfabric pulls in libpsm_infinipath, whose constructor
 * replaces the process's handlers of SIGSEGV, SIGBUS, SIGILL, SIGABRT,
 * SIGTERM and SIGINT without chaining to them; a plugin that links
 * libfabric has that happen when NCCL dlopens it, before any zsm code
 * runs, and the application's handlers are gone (issue 12 saw a crash
 * inside malloc hang in psm's handler).  zsm_fi_lib_load() opens libfabric at the
 * first init instead, and puts back every signal disposition that the
 * load changed.
 *
 * Only the six functions below are libfabric exports zsm calls: every
 * other fi_* call is an inline of libfabric's headers that goes through
 * the objects' ops tables.  Each is resolved at the symbol version the
 * linker binds for the headers we compile against (test_fi_lib checks
 * that), so the ABI is the one the code was written for.
 */
#ifndef ZSM_NET_FI_LIB_H
#define ZSM_NET_FI_LIB_H

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

/* The soname: the ABI major version of the headers. */
#define ZSM_FI_LIB_NAME "libfabric.so.1"

struct zsm_fi_lib {
	__typeof__(fi_getinfo) *getinfo;
	__typeof__(fi_freeinfo) *freeinfo;
	__typeof__(fi_dupinfo) *dupinfo;
	__typeof__(fi_fabric) *fabric;
	__typeof__(fi_strerror) *strerror;
	__typeof__(fi_version) *version;
};

/* All NULL until a load succeeded. */
extern struct zsm_fi_lib zsm_fi;

/*
 * Open ZSM_FI_LIB_NAME once per process (later calls return 0 at once).
 * Returns 0, -ENOENT when the library does not load or -ENOSYS when it
 * lacks one of the six functions, after a WARN naming it.  It is never
 * closed: a provider's threads may still run in it at exit.
 */
int zsm_fi_lib_load(void);
/* The same from another library name; for tests. */
int zsm_fi_lib_open(const char *name);

static inline int zsm_fi_getinfo(uint32_t version, const char *node,
				 const char *service, uint64_t flags,
				 const struct fi_info *hints,
				 struct fi_info **info)
{
	return zsm_fi.getinfo(version, node, service, flags, hints, info);
}

static inline void zsm_fi_freeinfo(struct fi_info *info)
{
	zsm_fi.freeinfo(info);
}

static inline struct fi_info *zsm_fi_dupinfo(const struct fi_info *info)
{
	return zsm_fi.dupinfo(info);
}

/* fi_allocinfo is an inline of fabric.h around fi_dupinfo. */
static inline struct fi_info *zsm_fi_allocinfo(void)
{
	return zsm_fi.dupinfo(NULL);
}

static inline int zsm_fi_fabric(struct fi_fabric_attr *attr,
				struct fid_fabric **fabric, void *context)
{
	return zsm_fi.fabric(attr, fabric, context);
}

static inline const char *zsm_fi_strerror(int errnum)
{
	return zsm_fi.strerror(errnum);
}

static inline uint32_t zsm_fi_version(void)
{
	return zsm_fi.version();
}

#endif
