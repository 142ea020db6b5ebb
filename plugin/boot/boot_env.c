/* SPDX-License-Identifier: MIT */
/*
 * Owns the bootstrap's reading of a launcher's environment: rank, size,
 * rendezvous address and nonce, without any id passed around.
 *
 * The nonce cannot be random here (no rank can tell the others), so it
 * is a hash every rank of one job computes alike: of ZSM_BOOT_NONCE when
 * set, else of the address and the launcher's job id.  It keeps ranks of
 * another job that meets at the same address (a stale run, a neighbour
 * with the same port) from being counted; it is no secret and no
 * security (docs/security.md says what the bootstrap trusts).
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "boot/boot_int.h"
#include "common/log.h"
#include "common/param.h"

/* Rank and size variables, in the order they are looked for. */
static const struct {
	const char *rank, *size, *who;
} zsm_boot_launchers[] = {
	{"RANK", "WORLD_SIZE", "torchrun"},
	{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI"},
	{"SLURM_PROCID", "SLURM_NTASKS", "Slurm"},
	{"PMI_RANK", "PMI_SIZE", "PMI"},
};

/*
 * Job ids, where the launcher has one.  OMPI_MCA_orte_hnp_uri starts
 * with the job family ("1234.0;tcp://..."): its part before ';' is
 * taken.  PMIX_NAMESPACE is what Open MPI 5 (PRRTE) sets instead.
 * TORCHELASTIC_RUN_ID is torchrun's --rdzv-id ("none" when not given,
 * which is then no id at all).
 */
static const char *const zsm_boot_job_vars[] = {
	"SLURM_JOB_ID", "OMPI_MCA_orte_hnp_uri", "PMIX_NAMESPACE",
	"TORCHELASTIC_RUN_ID",
};

/* Non-negative decimal below limit, digits only. */
static int zsm_boot_env_int(const char *name, const char *text, long limit,
			    int *out)
{
	long v = 0;

	if (!text[0])
		goto bad;
	for (const char *p = text; *p; p++) {
		if (*p < '0' || *p > '9' || v > limit)
			goto bad;
		v = v * 10 + (*p - '0');
	}
	if (v >= limit)
		goto bad;
	*out = (int)v;
	return 0;
bad:
	ZSM_WARN("boot: %s='%s' is not a decimal integer in [0, %ld)", name,
		 text, limit);
	return -EINVAL;
}

static int zsm_boot_env_ranks(int *rank, int *nranks)
{
	for (size_t i = 0; i < sizeof(zsm_boot_launchers) /
				   sizeof(zsm_boot_launchers[0]);
	     i++) {
		const char *r = getenv(zsm_boot_launchers[i].rank);
		const char *s = getenv(zsm_boot_launchers[i].size);
		int ret;

		if (!r && !s)
			continue;
		if (!r || !s) {
			ZSM_WARN("boot: %s is set but %s is not (%s)",
				 r ? zsm_boot_launchers[i].rank
				   : zsm_boot_launchers[i].size,
				 r ? zsm_boot_launchers[i].size
				   : zsm_boot_launchers[i].rank,
				 zsm_boot_launchers[i].who);
			return -EINVAL;
		}
		ret = zsm_boot_env_int(zsm_boot_launchers[i].size, s, 65536,
				       nranks);
		if (!ret)
			ret = zsm_boot_env_int(zsm_boot_launchers[i].rank, r,
					       *nranks, rank);
		if (!ret && *nranks == 0)
			ret = -EINVAL;
		if (!ret)
			ZSM_INFO("boot: rank %d of %d from %s", *rank, *nranks,
				 zsm_boot_launchers[i].who);
		return ret;
	}
	ZSM_WARN("boot: no launcher's rank and size in the environment "
		 "(RANK/WORLD_SIZE, OMPI_COMM_WORLD_RANK/SIZE, "
		 "SLURM_PROCID/NTASKS or PMI_RANK/SIZE)");
	return -ENOENT;
}

/* host and port into an address, through the resolver (names too). */
static int zsm_boot_env_resolve(const char *host, const char *port,
				const char *from, struct zsm_boot_addr *a)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC,
				 .ai_socktype = SOCK_STREAM}, *res, *ai;
	int p, ret;

	if (zsm_boot_env_int(from, port, 65536, &p) || p == 0)
		return -EINVAL;
	ret = getaddrinfo(host, NULL, &hints, &res);
	if (ret) {
		ZSM_WARN("boot: %s: cannot resolve '%s': %s", from, host,
			 gai_strerror(ret));
		return -EHOSTUNREACH;
	}
	/* IPv4 first: every rank must pick the same one of the answers. */
	for (ai = res; ai && ai->ai_family != AF_INET; ai = ai->ai_next)
		;
	if (!ai)
		for (ai = res; ai && ai->ai_family != AF_INET6;
		     ai = ai->ai_next)
			;
	memset(a, 0, sizeof(*a));
	if (ai && ai->ai_family == AF_INET) {
		a->family = 4;
		memcpy(a->ip, &((struct sockaddr_in *)(void *)ai->ai_addr)
				       ->sin_addr, 4);
	} else if (ai) {
		a->family = 6;
		memcpy(a->ip, &((struct sockaddr_in6 *)(void *)ai->ai_addr)
				       ->sin6_addr, 16);
	}
	freeaddrinfo(res);
	if (!ai) {
		ZSM_WARN("boot: %s: '%s' has no IPv4 or IPv6 address", from,
			 host);
		return -EHOSTUNREACH;
	}
	a->port = (uint16_t)p;
	return 0;
}

static int zsm_boot_env_addr(struct zsm_boot_addr *a)
{
	const char *text = zsm_param_str(ZSM_P_BOOT_ADDR);
	const char *maddr = getenv("MASTER_ADDR");
	const char *mport = getenv("MASTER_PORT");
	char host[256], port[16];

	if (text[0]) {
		const char *colon = strrchr(text, ':');
		const char *h = text;
		size_t n;

		if (!colon)
			goto bad;
		n = (size_t)(colon - text);
		if (text[0] == '[') {
			/* [v6]:port */
			if (n < 2 || text[n - 1] != ']')
				goto bad;
			h = text + 1;
			n -= 2;
		}
		if (n == 0 || n >= sizeof(host) ||
		    strlen(colon + 1) >= sizeof(port))
			goto bad;
		memcpy(host, h, n);
		host[n] = 0;
		strcpy(port, colon + 1);
		return zsm_boot_env_resolve(host, port, "ZSM_BOOT_ADDR", a);
	}
	if (maddr && mport) {
		int p, ret;

		ret = zsm_boot_env_resolve(maddr, mport, "MASTER_PORT", a);
		if (ret)
			return ret;
		/* torchrun's own store listens on MASTER_PORT. */
		p = a->port + 1;
		if (p > 65535) {
			ZSM_WARN("boot: MASTER_PORT=%s leaves no port above "
				 "it for zsm; set ZSM_BOOT_ADDR",
				 mport);
			return -EINVAL;
		}
		a->port = (uint16_t)p;
		return 0;
	}
	ZSM_WARN("boot: no rendezvous address: set ZSM_BOOT_ADDR=HOST:PORT "
		 "(or MASTER_ADDR and MASTER_PORT)");
	return -ENOENT;
bad:
	ZSM_WARN("boot: ZSM_BOOT_ADDR='%s' is not HOST:PORT or [IPV6]:PORT",
		 text);
	return -EINVAL;
}

/* FNV-1a, 64 bits: an even spread of short texts, not a secret. */
static uint64_t zsm_boot_env_hash(uint64_t h, const char *text)
{
	if (!h)
		h = 0xcbf29ce484222325ULL;
	for (const unsigned char *p = (const void *)text; *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static uint64_t zsm_boot_env_nonce(const struct zsm_boot_addr *a)
{
	const char *given = zsm_param_str(ZSM_P_BOOT_NONCE);
	char where[64], job[256];
	uint64_t h;

	if (given[0])
		return zsm_boot_env_hash(zsm_boot_env_hash(0, "nonce|"),
					 given);
	zsm_boot_addr_str(a, where, sizeof(where));
	h = zsm_boot_env_hash(zsm_boot_env_hash(0, "addr|"), where);
	for (size_t i = 0;
	     i < sizeof(zsm_boot_job_vars) / sizeof(zsm_boot_job_vars[0]); i++) {
		const char *v = getenv(zsm_boot_job_vars[i]);

		if (!v || !v[0] || strcmp(v, "none") == 0)
			continue;
		snprintf(job, sizeof(job), "|%s=%.*s", zsm_boot_job_vars[i],
			 (int)strcspn(v, ";"), v);
		ZSM_INFO("boot: nonce from %s and %s", where, job + 1);
		return zsm_boot_env_hash(h, job);
	}
	ZSM_INFO("boot: no job id in the environment: the nonce comes from "
		 "%s alone", where);
	return h;
}

int zsm_boot_env(int *rank, int *nranks, struct zsm_boot_id *id)
{
	struct zsm_boot_id_fields f = {.magic = ZSM_BOOT_MAGIC,
				       .version = ZSM_BOOT_VERSION};
	int ret;

	ret = zsm_boot_env_ranks(rank, nranks);
	if (ret)
		return ret;
	ret = zsm_boot_env_addr(&f.addr);
	if (ret)
		return ret;
	f.nonce = zsm_boot_env_nonce(&f.addr);
	zsm_boot_id_encode(&f, id);
	return 0;
}
