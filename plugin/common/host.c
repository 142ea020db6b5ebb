/* SPDX-License-Identifier: MIT */
/* Owns the host identity and its hash (see host.h for the precedence). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/host.h"
#include "common/log.h"
#include "common/param.h"

#define ZSM_HOST_BOOT_ID_PATH "/proc/sys/kernel/random/boot_id"

/*
 * Written by zsm_host_init while the plugin comes up, before its proxy
 * thread starts and before any comm exists, and only read afterwards:
 * thread creation orders the writes before every reader, so no atomics.
 */
static struct {
	int ready;
	enum zsm_host_source src;
	uint64_t hash;
	char id[ZSM_HOST_ID_MAX];
} zsm_host;

static int zsm_host_is_set(const char *s)
{
	return s && s[0];
}

static int zsm_host_copy(char *buf, size_t len, const char *s)
{
	size_t n = strlen(s);

	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(buf, s, n + 1);
	return 0;
}

int zsm_host_id_pick(const char *zsm_hostid, const char *nccl_hostid,
		     const char *hostname, const char *boot_id, char *buf,
		     size_t len, enum zsm_host_source *src)
{
	int n;

	if (zsm_host_is_set(zsm_hostid)) {
		*src = ZSM_HOST_SRC_ZSM_HOSTID;
		return zsm_host_copy(buf, len, zsm_hostid);
	}
	if (zsm_host_is_set(nccl_hostid)) {
		*src = ZSM_HOST_SRC_NCCL_HOSTID;
		return zsm_host_copy(buf, len, nccl_hostid);
	}
	if (!zsm_host_is_set(hostname))
		return -EINVAL;
	if (!zsm_host_is_set(boot_id)) {
		*src = ZSM_HOST_SRC_HOSTNAME;
		return zsm_host_copy(buf, len, hostname);
	}
	*src = ZSM_HOST_SRC_BOOT_ID;
	/* ':' cannot appear in a hostname, so the two parts stay apart. */
	n = snprintf(buf, len, "%s:%s", hostname, boot_id);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

uint64_t zsm_host_id_hash(const char *id)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a 64 offset basis */

	for (const unsigned char *p = (const unsigned char *)id; *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ULL; /* FNV-1a 64 prime */
	}
	/* FNV-1a leaves similar strings ("node1", "node2") with hashes that
	 * differ in few bits; a multiply-xorshift finaliser spreads each
	 * input bit over the whole word. */
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	/* 0 is what a handle from before locality carried: "unknown".  The
	 * finaliser maps only 0 to 0, so this is FNV's state being 0. */
	return h ? h : 0x9e3779b97f4a7c15ULL;
}

/* The boot id without its newline, or "" when it cannot be read. */
static void zsm_host_read_boot_id(char *buf, size_t len)
{
	ssize_t n;
	int fd;

	buf[0] = '\0';
	fd = open(ZSM_HOST_BOOT_ID_PATH, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0) {
		buf[0] = '\0';
		return;
	}
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
}

int zsm_host_init(void)
{
	char hostname[HOST_NAME_MAX + 1];
	char boot_id[64];
	const char *zsm_id = zsm_param_str(ZSM_P_HOSTID);
	const char *nccl_id = getenv("NCCL_HOSTID");
	int ret;

	if (gethostname(hostname, sizeof(hostname)) != 0) {
		ret = -errno;
		ZSM_WARN("host: gethostname failed: %s", strerror(-ret));
		return ret;
	}
	hostname[sizeof(hostname) - 1] = '\0';
	zsm_host_read_boot_id(boot_id, sizeof(boot_id));
	ret = zsm_host_id_pick(zsm_id, nccl_id, hostname, boot_id, zsm_host.id,
			       sizeof(zsm_host.id), &zsm_host.src);
	if (ret == -ENAMETOOLONG) {
		ZSM_WARN("host: %s is longer than %d characters",
			 zsm_host_is_set(zsm_id) ? "ZSM_HOSTID" : "NCCL_HOSTID",
			 ZSM_HOST_ID_MAX - 1);
		return -EDOM; /* the user's to fix, like a bad ZSM_* value */
	}
	if (ret) {
		ZSM_WARN("host: no identity: hostname is empty; set "
			 "ZSM_HOSTID");
		return -EDOM;
	}
	zsm_host.hash = zsm_host_id_hash(zsm_host.id);
	zsm_host.ready = 1;
	if (zsm_host.src == ZSM_HOST_SRC_HOSTNAME)
		ZSM_INFO("host: %s unreadable: the identity is the hostname "
			 "alone, which containers of other machines may share",
			 ZSM_HOST_BOOT_ID_PATH);
	ZSM_INFO("host: identity '%s' from %s, hash 0x%016llx", zsm_host.id,
		 zsm_host_source_name(zsm_host.src),
		 (unsigned long long)zsm_host.hash);
	return 0;
}

static void zsm_host_ensure(void)
{
	/* Tools that never init: a failure leaves the hash 0, "unknown". */
	if (!zsm_host.ready)
		zsm_host_init();
}

int zsm_host_identity(char *buf, size_t len)
{
	zsm_host_ensure();
	if (!zsm_host.ready)
		return -ENODATA;
	if (strlen(zsm_host.id) >= len)
		return -ENOSPC;
	strcpy(buf, zsm_host.id);
	return 0;
}

uint64_t zsm_host_hash(void)
{
	zsm_host_ensure();
	return zsm_host.hash;
}

enum zsm_host_source zsm_host_source(void)
{
	zsm_host_ensure();
	return zsm_host.src;
}

const char *zsm_host_source_name(enum zsm_host_source src)
{
	switch (src) {
	case ZSM_HOST_SRC_ZSM_HOSTID:
		return "ZSM_HOSTID";
	case ZSM_HOST_SRC_NCCL_HOSTID:
		return "NCCL_HOSTID";
	case ZSM_HOST_SRC_BOOT_ID:
		return "hostname+boot_id";
	case ZSM_HOST_SRC_HOSTNAME:
		return "hostname";
	}
	return "?";
}
