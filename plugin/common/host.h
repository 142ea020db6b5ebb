/* SPDX-License-Identifier: MIT */
/*
 * Host identity: a string naming the machine this process runs on, and its
 * 64-bit hash.  Handles and control messages carry the hash so that each
 * comm knows whether its peer shares the host, which a same-host transport
 * needs before it can pick a path.
 *
 * The identity is, first found wins: ZSM_HOSTID, NCCL_HOSTID, or the
 * hostname and the kernel's boot id.  The boot id tells apart containers
 * that share a hostname on different machines, and changes at reboot, so a
 * stale identity never matches a fresh one.
 */
#ifndef ZSM_COMMON_HOST_H
#define ZSM_COMMON_HOST_H

#include <stddef.h>
#include <stdint.h>

/* Room for an identity and its NUL: as much of NCCL_HOSTID as NCCL itself
 * uses; ZSM_HOSTID is at most 255 characters, a hostname 64, a boot id 36. */
#define ZSM_HOST_ID_MAX 1024

enum zsm_host_source {
	ZSM_HOST_SRC_ZSM_HOSTID,
	ZSM_HOST_SRC_NCCL_HOSTID,
	ZSM_HOST_SRC_BOOT_ID,  /* hostname + boot id */
	ZSM_HOST_SRC_HOSTNAME, /* the boot id could not be read */
};

/*
 * Pick the identity from its inputs, without reading anything: NULL or ""
 * means unset.  Writes "hostname:boot_id" (or the hostname alone) when both
 * variables are unset.  Returns 0, or -ENAMETOOLONG when it does not fit
 * len, or -EINVAL when every input is empty.
 */
int zsm_host_id_pick(const char *zsm_hostid, const char *nccl_hostid,
		     const char *hostname, const char *boot_id, char *buf,
		     size_t len, enum zsm_host_source *src);

/* FNV-1a over the bytes, then a 64-bit finaliser; never 0. */
uint64_t zsm_host_id_hash(const char *id);

/*
 * Compute this process's identity from ZSM_HOSTID (the param table, so
 * after zsm_param_load), NCCL_HOSTID and the machine, and keep it.  The
 * plugin calls it at init, before any comm exists; returns 0, or -EDOM for
 * an identity variable that cannot be used (logged), or -errno.
 */
int zsm_host_init(void);

/* The kept identity; tools that never initialise the plugin get it
 * computed on first use. */
int zsm_host_identity(char *buf, size_t len);
uint64_t zsm_host_hash(void);
enum zsm_host_source zsm_host_source(void);
/* "ZSM_HOSTID", "NCCL_HOSTID", "hostname+boot_id" or "hostname". */
const char *zsm_host_source_name(enum zsm_host_source src);

#endif
