/* SPDX-License-Identifier: MIT */
/*
 * Owns the unique id: its encoding, its nonce, the choice of rank 0's
 * address, and the listeners opened for ids that no init has taken yet.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "boot/boot_int.h"
#include "common/log.h"
#include "common/param.h"

_Static_assert(sizeof(struct zsm_boot_id_fields) <= ZSM_BOOT_ID_BYTES,
	       "the id's fields must fit its opaque bytes");

/*
 * Listeners of ids made in this process, until rank 0's init takes one.
 * A few at most (one per communicator being created), so a short array.
 */
#define ZSM_BOOT_PENDING 16
static struct {
	uint64_t nonce;
	int used;
	int fd;
} zsm_boot_pending[ZSM_BOOT_PENDING];
static pthread_mutex_t zsm_boot_pending_lock = PTHREAD_MUTEX_INITIALIZER;

void zsm_boot_id_encode(const struct zsm_boot_id_fields *f,
			struct zsm_boot_id *id)
{
	struct zsm_boot_id_fields w = *f;

	w.magic = htole32(w.magic);
	w.version = htole32(w.version);
	w.nonce = htole64(w.nonce);
	zsm_boot_addr_swap(&w.addr);
	memset(id, 0, sizeof(*id));
	memcpy(id->bytes, &w, sizeof(w));
}

int zsm_boot_id_decode(const struct zsm_boot_id *id,
		       struct zsm_boot_id_fields *f)
{
	memcpy(f, id->bytes, sizeof(*f));
	f->magic = le32toh(f->magic);
	f->version = le32toh(f->version);
	f->nonce = le64toh(f->nonce);
	zsm_boot_addr_swap(&f->addr);
	if (f->magic != ZSM_BOOT_MAGIC || f->version != ZSM_BOOT_VERSION ||
	    (f->addr.family != 4 && f->addr.family != 6) || f->addr.port == 0) {
		ZSM_WARN("boot: the id is not a zsm bootstrap id of version "
			 "%d (magic 0x%x, version %u, family %u, port %u)",
			 ZSM_BOOT_VERSION, f->magic, f->version,
			 f->addr.family, f->addr.port);
		return -EINVAL;
	}
	return 0;
}

int zsm_boot_id_nonce(uint64_t *nonce)
{
	ssize_t n;

	do
		n = getrandom(nonce, sizeof(*nonce), 0);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(*nonce)) {
		ZSM_WARN("boot: getrandom for the id's nonce failed: %s",
			 n < 0 ? strerror(errno) : "short read");
		return n < 0 ? -errno : -EIO;
	}
	return 0;
}

/* Whether ifa can carry the bootstrap: up, and not IPv6 link-local
 * (which would need a scope id the other hosts cannot use). */
static int zsm_boot_ifa_usable(const struct ifaddrs *ifa)
{
	if (!ifa->ifa_addr || !(ifa->ifa_flags & IFF_UP))
		return 0;
	if (ifa->ifa_addr->sa_family == AF_INET)
		return 1;
	if (ifa->ifa_addr->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)ifa->ifa_addr;

		return !IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr);
	}
	return 0;
}

static void zsm_boot_ifa_addr(const struct ifaddrs *ifa,
			      struct zsm_boot_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (ifa->ifa_addr->sa_family == AF_INET) {
		a->family = 4;
		memcpy(a->ip, &((const struct sockaddr_in *)(const void *)
					ifa->ifa_addr)->sin_addr, 4);
	} else {
		a->family = 6;
		memcpy(a->ip, &((const struct sockaddr_in6 *)(const void *)
					ifa->ifa_addr)->sin6_addr, 16);
	}
}

/*
 * The address rank 0 listens on: ZSM_BOOT_IFNAME's when set (an error
 * when it has none), else the first non-loopback interface's, else
 * loopback.  IPv4 first within an interface: it needs no scope.
 */
static int zsm_boot_pick_addr(struct zsm_boot_addr *a)
{
	const char *want = zsm_param_str(ZSM_P_BOOT_IFNAME);
	struct ifaddrs *list, *ifa, *best = NULL;

	if (getifaddrs(&list)) {
		int ret = -errno;

		ZSM_WARN("boot: getifaddrs failed: %s", strerror(-ret));
		return ret;
	}
	for (ifa = list; ifa; ifa = ifa->ifa_next) {
		int loop;

		if (!zsm_boot_ifa_usable(ifa))
			continue;
		loop = !!(ifa->ifa_flags & IFF_LOOPBACK);
		if (want[0] ? strcmp(ifa->ifa_name, want) != 0 : loop)
			continue;
		if (!best || (best->ifa_addr->sa_family == AF_INET6 &&
			      ifa->ifa_addr->sa_family == AF_INET &&
			      strcmp(best->ifa_name, ifa->ifa_name) == 0))
			best = ifa;
	}
	if (best)
		zsm_boot_ifa_addr(best, a);
	freeifaddrs(list);
	if (!best && want[0]) {
		ZSM_WARN("boot: ZSM_BOOT_IFNAME='%s' names no interface that "
			 "is up with an IPv4 or global IPv6 address", want);
		return -ENODEV;
	}
	if (!best) {
		memset(a, 0, sizeof(*a));
		a->family = 4;
		a->ip[0] = 127;
		a->ip[3] = 1;
	}
	return 0;
}

static int zsm_boot_pending_add(uint64_t nonce, int fd)
{
	int ret = -ENOSPC;

	pthread_mutex_lock(&zsm_boot_pending_lock);
	for (int i = 0; i < ZSM_BOOT_PENDING; i++) {
		if (!zsm_boot_pending[i].used) {
			zsm_boot_pending[i].used = 1;
			zsm_boot_pending[i].nonce = nonce;
			zsm_boot_pending[i].fd = fd;
			ret = 0;
			break;
		}
	}
	pthread_mutex_unlock(&zsm_boot_pending_lock);
	return ret;
}

int zsm_boot_id_take_listener(uint64_t nonce)
{
	int fd = -1;

	pthread_mutex_lock(&zsm_boot_pending_lock);
	for (int i = 0; i < ZSM_BOOT_PENDING; i++) {
		if (zsm_boot_pending[i].used &&
		    zsm_boot_pending[i].nonce == nonce) {
			fd = zsm_boot_pending[i].fd;
			zsm_boot_pending[i].used = 0;
			break;
		}
	}
	pthread_mutex_unlock(&zsm_boot_pending_lock);
	return fd;
}

int zsm_boot_id_new(struct zsm_boot_id *id)
{
	struct zsm_boot_id_fields f = {.magic = ZSM_BOOT_MAGIC,
				       .version = ZSM_BOOT_VERSION};
	struct zsm_boot_addr want;
	char where[64];
	int fd, ret;

	ret = zsm_boot_id_nonce(&f.nonce);
	if (ret)
		return ret;
	ret = zsm_boot_pick_addr(&want);
	if (ret)
		return ret;
	ret = zsm_boot_sock_listen(&want, &fd, &f.addr);
	if (ret) {
		zsm_boot_addr_str(&want, where, sizeof(where));
		ZSM_WARN("boot: cannot listen on %s: %s", where,
			 strerror(-ret));
		return ret;
	}
	ret = zsm_boot_pending_add(f.nonce, fd);
	if (ret) {
		ZSM_WARN("boot: more than %d ids made and not yet used by "
			 "an init", ZSM_BOOT_PENDING);
		close(fd);
		return ret;
	}
	zsm_boot_addr_str(&f.addr, where, sizeof(where));
	ZSM_INFO("boot: new id, rank 0 listens on %s", where);
	zsm_boot_id_encode(&f, id);
	return 0;
}

void zsm_boot_id_drop(const struct zsm_boot_id *id)
{
	struct zsm_boot_id_fields f;
	int fd;

	memcpy(&f, id->bytes, sizeof(f));
	fd = zsm_boot_id_take_listener(le64toh(f.nonce));
	if (fd >= 0)
		close(fd);
}
