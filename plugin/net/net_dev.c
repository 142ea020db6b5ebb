/* SPDX-License-Identifier: MIT */
/*
 * Owns device discovery: which libfabric offers become NCCL devices (one
 * per domain, best provider first) and why the others were passed over.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "common/log.h"
#include "common/param.h"
#include "net/net.h"
#include "net/net_fi_abi.h"

/*
 * Providers picked without being asked for, best first.  libfabric's own
 * tcp RDM endpoint ("tcp", from 1.18) is not among them, though it
 * bounds what strays cost where rxm does not (docs/security.md,
 * "Floods"): under many comms of small messages (load-tcp-ahead) it moved
 * a third or less of rxm's bytes and its processes' memory kept growing.
 * ZSM_PROVIDER=tcp picks it where it is offered.
 */
static const char *const zsm_net_prov_rank[] = {
	"efa",
	"cxi",
	"verbs;ofi_rxm",
	"tcp;ofi_rxm",
};
#define ZSM_NET_NPROV (sizeof(zsm_net_prov_rank) / sizeof(zsm_net_prov_rank[0]))

/*
 * Every mr_mode bit we know how to honour, all in net_mr.c: LOCAL (buffers
 * carry descriptors), ENDPOINT (bind and enable), PROV_KEY (provider keys),
 * VIRT_ADDR and ALLOCATED (we register real, allocated addresses), HMEM
 * (device memory registered before use; zsm passes only host memory yet).
 */
#define ZSM_NET_MR_MODES                                                      \
	(FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY |    \
	 FI_MR_ENDPOINT | FI_MR_HMEM)

static int zsm_net_prov_rank_of(const char *prov)
{
	for (size_t i = 0; i < ZSM_NET_NPROV; i++)
		if (strcmp(prov, zsm_net_prov_rank[i]) == 0)
			return (int)i;
	return -1;
}

/*
 * Where prov stands among the offers taken: its rank when zsm picks, and
 * under ZSM_PROVIDER the provider of exactly that name before the core
 * provider's ofi_rxm ('tcp': libfabric's own tcp RDM endpoint where it
 * offers one, whichever offer libfabric lists first).  -1: not taken.
 */
static int zsm_net_prov_order(const char *prov)
{
	const char *want = zsm_param_str(ZSM_P_PROVIDER);

	if (strcasecmp(want, "auto") == 0)
		return zsm_net_prov_rank_of(prov);
	return strcasecmp(want, prov) == 0 ? 0 : 1;
}

/* ZSM_PROVIDER accepts the full name or the core provider's name. */
static int zsm_net_prov_wanted(const char *want, const char *prov)
{
	size_t n = strlen(want);

	if (strcasecmp(want, prov) == 0)
		return 1;
	return strncasecmp(prov, want, n) == 0 &&
	       strcmp(prov + n, ";ofi_rxm") == 0;
}

static int zsm_net_list_has(const char *list, const char *word)
{
	size_t len = strlen(word);

	for (const char *p = list; *p;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);

		if (n == len && strncmp(p, word, n) == 0)
			return 1;
		if (!comma)
			break;
		p = comma + 1;
	}
	return 0;
}

static int zsm_net_is_loopback(const struct fi_info *fi)
{
	return strcmp(fi->domain_attr->name, "lo") == 0;
}

static unsigned zsm_net_tag_bits(const struct fi_info *fi)
{
	uint64_t fmt = fi->ep_attr->mem_tag_format;

	return fmt ? 64 - (unsigned)__builtin_clzll(fmt) : 64;
}

/*
 * Why this offer cannot be a device; NULL when it can.  Loopback is
 * acceptable but ranked last (see zsm_net_topo_discover).
 */
static const char *zsm_net_reject(const struct fi_info *fi, char *buf,
				  size_t len)
{
	const char *want = zsm_param_str(ZSM_P_PROVIDER);
	const char *domains = zsm_param_str(ZSM_P_DOMAIN);
	const char *prov = fi->fabric_attr->prov_name;

	if (strcasecmp(want, "auto") != 0) {
		if (!zsm_net_prov_wanted(want, prov)) {
			snprintf(buf, len, "ZSM_PROVIDER=%s asks for another",
				 want);
			return buf;
		}
	} else if (zsm_net_prov_rank_of(prov) < 0) {
		snprintf(buf, len,
			 "not picked automatically (ZSM_PROVIDER=%s forces it)",
			 prov);
		return buf;
	}
	if (domains[0] && !zsm_net_list_has(domains, fi->domain_attr->name)) {
		snprintf(buf, len, "domain %s is not in ZSM_DOMAIN=%s",
			 fi->domain_attr->name, domains);
		return buf;
	}
	if (zsm_net_tag_bits(fi) < 48) {
		snprintf(buf, len, "tags of %u bits, zsm needs 48",
			 zsm_net_tag_bits(fi));
		return buf;
	}
	if (fi->src_addrlen > ZSM_NET_ADDR_MAX) {
		snprintf(buf, len, "addresses of %zu bytes, zsm carries %d",
			 fi->src_addrlen, ZSM_NET_ADDR_MAX);
		return buf;
	}
	return NULL;
}

static char *zsm_net_pci_path(const struct fi_info *fi)
{
	char path[PATH_MAX];
	const char *dom = fi->domain_attr->name;

	if (fi->nic && fi->nic->bus_attr &&
	    fi->nic->bus_attr->bus_type == FI_BUS_PCI) {
		const struct fi_pci_attr *pci = &fi->nic->bus_attr->attr.pci;

		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%04x:%02x:%02x.%x",
			 pci->domain_id, pci->bus_id, pci->device_id,
			 pci->function_id);
		return realpath(path, NULL);
	}
	snprintf(path, sizeof(path), "/sys/class/net/%s/device", dom);
	char *real = realpath(path, NULL);
	if (real)
		return real;
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device", dom);
	return realpath(path, NULL);
}

static int zsm_net_speed_mbps(const struct fi_info *fi)
{
	char path[PATH_MAX];
	FILE *f;
	long mbps = -1;

	if (fi->nic && fi->nic->link_attr && fi->nic->link_attr->speed)
		return (int)(fi->nic->link_attr->speed / 1000000);
	snprintf(path, sizeof(path), "/sys/class/net/%s/speed",
		 fi->domain_attr->name);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%ld", &mbps) != 1)
			mbps = -1;
		fclose(f);
	}
	/* Loopback and virtual NICs report nothing: NCCL's socket default. */
	return mbps > 0 && mbps < INT_MAX ? (int)mbps : 10000;
}

static uint64_t zsm_net_fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
	return h;
}

/*
 * Measured on libfabric 1.17: tcp;ofi_rxm delivers a message of up to its
 * eager limit straight into the posted buffer, and one that does not fit
 * makes the tcp core drop the connection to that peer, losing the next
 * message of any comm on it; larger messages go by rendezvous and
 * truncate cleanly.  Other providers truncate cleanly at any size.  The
 * eager limit is FI_OFI_RXM_BUFFER_SIZE (16 KiB by default), or
 * FI_OFI_RXM_EAGER_LIMIT where that is larger (rxm raises it to the
 * buffer size): with only the buffer size guarded, an oversized 64 KiB
 * send under FI_OFI_RXM_EAGER_LIMIT=1048576 reset the connection and
 * another comm's message never came (trunc_isolated).  What rxm keeps
 * of an early message is one of its buffers, so the buffer size alone
 * is what may go early (dev->eager).
 */
#define ZSM_NET_RXM_EAGER_DEFAULT 16384
#define ZSM_NET_RXM_EAGER_MAX (1 << 20)
/* The spill buffer is virtual memory of each endpoint that only an
 * oversized message touches: larger eager limits than this are refused
 * rather than guarded. */
#define ZSM_NET_RXM_TRUNC_MAX (64 << 20)

/*
 * A size libfabric reads from its own variable: lo to hi, else dflt.
 * Out of range it is the user's to fix there, and the default is the safe
 * guess.
 */
static size_t zsm_net_fi_env(const char *name, size_t dflt, long lo, long hi)
{
	const char *env = getenv(name);
	char *end;
	long v;

	if (!env || !*env)
		return dflt;
	v = strtol(env, &end, 10);
	return *end || v < lo || v > hi ? dflt : (size_t)v;
}

/* tcp;ofi_rxm's limits from its variables: 0, or -EINVAL where its
 * eager limit is larger than zsm guards (said once, here). */
static int zsm_net_rxm_rules(struct zsm_net_dev *dev)
{
	size_t buf = zsm_net_fi_env("FI_OFI_RXM_BUFFER_SIZE",
				    ZSM_NET_RXM_EAGER_DEFAULT, 1, LONG_MAX);
	size_t eager = zsm_net_fi_env("FI_OFI_RXM_EAGER_LIMIT", 0, 1,
				      LONG_MAX);

	dev->trunc_unsafe = eager > buf ? eager : buf;
	dev->eager = buf <= ZSM_NET_RXM_EAGER_MAX ? buf
						   : ZSM_NET_RXM_EAGER_DEFAULT;
	if (dev->trunc_unsafe <= ZSM_NET_RXM_TRUNC_MAX)
		return 0;
	ZSM_WARN("net: tcp;ofi_rxm would send messages of up to %zu bytes "
		 "eagerly (FI_OFI_RXM_BUFFER_SIZE, FI_OFI_RXM_EAGER_LIMIT), "
		 "and one larger than its receive resets the connection; zsm "
		 "guards up to %d: set them to %d or less",
		 dev->trunc_unsafe, ZSM_NET_RXM_TRUNC_MAX,
		 ZSM_NET_RXM_TRUNC_MAX);
	return -EINVAL;
}

/*
 * libfabric's own tcp RDM endpoint keeps up to FI_TCP_MAX_SAVED (64)
 * unmatched messages of each peer, then reads nothing more from that
 * peer until a receive matches the next one: data and control messages
 * of every comm of that peer wait behind it.  So the early messages of a
 * peer's comms together get half of that, the rest left for strays of
 * its closed comms (until the scan drops them) and for control messages
 * that find every control receive taken.  It keeps an unmatched message
 * of any size (FI_TCP_MAX_SAVED_SIZE is unbounded by default) in a buffer
 * of FI_TCP_MAX_RX_SIZE (16 KiB) or one of its own size: what rxm takes
 * eagerly, so small messages go early there too (its inject size, 128
 * bytes, would make every larger one wait for its GRANT).  Other
 * providers keep what comes (rxm in a pool that grows): no limit.
 */
#define ZSM_NET_TCP_SAVED_DEFAULT 64
#define ZSM_NET_TCP_RX_DEFAULT 16384

/* What the chosen provider's rules make of a device's limits: 0, or
 * -EINVAL for limits zsm cannot keep safe. */
static int zsm_net_dev_rules(struct zsm_net_dev *dev)
{
	const char *prov = dev->info->fabric_attr->prov_name;

	dev->trunc_unsafe = 0;
	dev->eager = 0;
	dev->early_peer = UINT32_MAX;
	if (strcmp(prov, "tcp;ofi_rxm") == 0 && zsm_net_rxm_rules(dev))
		return -EINVAL;
	if (strcmp(prov, "tcp") == 0) {
		dev->eager = zsm_net_fi_env("FI_TCP_MAX_RX_SIZE",
					    ZSM_NET_TCP_RX_DEFAULT, 1,
					    ZSM_NET_RXM_EAGER_MAX);
		dev->early_peer =
			(uint32_t)(zsm_net_fi_env("FI_TCP_MAX_SAVED",
						  ZSM_NET_TCP_SAVED_DEFAULT, 0,
						  INT_MAX) /
				   2);
	}
	return 0;
}

/*
 * Provider queues zsm asks for: 64 comms' worth of requests each with
 * every buffer in flight (ZSM_MAX_REQUESTS x maxRecvs), which is also the
 * largest rxm grants (16384).  zsm itself never posts more data
 * operations than the queue it got, less a reserve that keeps control
 * messages (probes, handshakes) from waiting behind data (net_ep.c).
 */
#define ZSM_NET_QUEUE_WANT (64 * ZSM_MAX_REQUESTS * ZSM_MAX_RECVS)

/* The same offer with the largest queues the provider grants up to
 * ZSM_NET_QUEUE_WANT; info itself when it grants no more. */
static struct fi_info *zsm_net_offer_sized(const struct fi_info *info)
{
	size_t want = ZSM_NET_QUEUE_WANT;

	for (; want > info->tx_attr->size || want > info->rx_attr->size;
	     want /= 2) {
		struct fi_info *hints = zsm_fi_dupinfo(info), *got = NULL;
		int ret;

		if (!hints)
			break;
		hints->tx_attr->size = want > info->tx_attr->size
					       ? want
					       : info->tx_attr->size;
		hints->rx_attr->size = want > info->rx_attr->size
					       ? want
					       : info->rx_attr->size;
		ret = zsm_fi_getinfo(info->fabric_attr->api_version, NULL,
				     NULL, 0, hints, &got);
		zsm_fi_freeinfo(hints);
		if (!ret && got)
			return got;
	}
	return zsm_fi_dupinfo(info);
}

static struct fi_info *zsm_net_hints(void)
{
	struct fi_info *hints = zsm_fi_allocinfo();

	if (!hints)
		return NULL;
	/* Data receives are posted for their comm's peer alone. */
	hints->caps = FI_TAGGED | FI_SEND | FI_RECV | FI_DIRECTED_RECV;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->mr_mode = ZSM_NET_MR_MODES;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	/* Sends on one tag must match receives in order. */
	hints->tx_attr->msg_order = FI_ORDER_SAS;
	hints->rx_attr->msg_order = FI_ORDER_SAS;
	return hints;
}

/* What an endpoint needs to flush by reading its own memory back. */
#define ZSM_NET_READ_CAPS (FI_RMA | FI_READ | FI_REMOTE_READ)

/*
 * The API version for offers that may take device memory: 1.20 when the
 * library has it, since providers register dma-bufs only for fabrics of
 * that version (net_fi_abi.h says what else it changes, and covers it).
 */
static uint32_t zsm_net_hmem_api(void)
{
	return FI_VERSION_GE(zsm_fi_version(), ZSM_FI_API_DMABUF)
		       ? ZSM_FI_API_DMABUF
		       : FI_VERSION(1, 14);
}

/* The offers with extra capabilities, or NULL. */
static struct fi_info *zsm_net_offers_with(uint64_t caps, uint32_t api)
{
	struct fi_info *hints, *list = NULL;

	hints = zsm_net_hints();
	if (!hints)
		return NULL;
	hints->caps |= caps;
	if (zsm_fi_getinfo(api, NULL, NULL, 0, hints, &list))
		list = NULL;
	zsm_fi_freeinfo(hints);
	return list;
}

/*
 * The richer offers a device may take instead of its plain one, best
 * first: device memory with reads to flush it, device memory alone, and
 * reads alone when ZSM_GDR_FLUSH=always wants them for host memory.
 */
#define ZSM_NET_RICH_KINDS 3

struct zsm_net_rich {
	struct fi_info *lists[ZSM_NET_RICH_KINDS];
	uint64_t caps[ZSM_NET_RICH_KINDS];
};

static void zsm_net_rich_get(struct zsm_net_rich *r)
{
	memset(r, 0, sizeof(*r));
	r->caps[0] = FI_HMEM | ZSM_NET_READ_CAPS;
	r->caps[1] = FI_HMEM;
	r->caps[2] = ZSM_NET_READ_CAPS;
	if (zsm_param_int(ZSM_P_GDR)) {
		r->lists[0] = zsm_net_offers_with(r->caps[0],
						  zsm_net_hmem_api());
		r->lists[1] = zsm_net_offers_with(r->caps[1],
						  zsm_net_hmem_api());
	}
	if (zsm_param_int(ZSM_P_GDR_FLUSH) == ZSM_FLUSH_PARAM_ALWAYS)
		r->lists[2] = zsm_net_offers_with(r->caps[2],
						  FI_VERSION(1, 14));
}

static void zsm_net_rich_free(struct zsm_net_rich *r)
{
	for (int i = 0; i < ZSM_NET_RICH_KINDS; i++)
		if (r->lists[i])
			zsm_fi_freeinfo(r->lists[i]);
}

/*
 * The richest offer of fi's provider and domain, or NULL.  shm claims
 * FI_HMEM for host memory alone and is never a device, so it is left out.
 */
static const struct fi_info *zsm_net_rich_pick(const struct zsm_net_rich *r,
					       const struct fi_info *fi)
{
	for (int i = 0; i < ZSM_NET_RICH_KINDS; i++) {
		const struct fi_info *o;

		for (o = r->lists[i]; o; o = o->next)
			if ((o->caps & r->caps[i]) == r->caps[i] &&
			    strcmp(o->fabric_attr->prov_name, "shm") != 0 &&
			    strcmp(o->fabric_attr->prov_name,
				   fi->fabric_attr->prov_name) == 0 &&
			    strcmp(o->domain_attr->name,
				   fi->domain_attr->name) == 0 &&
			    o->addr_format == fi->addr_format)
				return o;
	}
	return NULL;
}

/*
 * The distinct provider names (domain names when domains) of the offers,
 * comma-separated, in buf; "none" when there is no offer.
 */
static const char *zsm_net_offered(const struct fi_info *all, int domains,
				   char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (const struct fi_info *fi = all; fi; fi = fi->next) {
		const char *name = domains ? fi->domain_attr->name
					   : fi->fabric_attr->prov_name;
		const struct fi_info *e;

		for (e = all; e != fi; e = e->next)
			if (strcmp(name, domains ? e->domain_attr->name
						 : e->fabric_attr->prov_name) ==
			    0)
				break;
		if (e == fi && used < len)
			used += (size_t)snprintf(buf + used, len - used, "%s%s",
						 used ? ", " : "", name);
	}
	return buf[0] ? buf : "none";
}

/* The offer of domain name[0, n) to explain, or NULL when none has it:
 * one of a provider that would be taken, when there is one. */
static const struct fi_info *zsm_net_domain_offer(const struct fi_info *all,
						  const char *name, size_t n)
{
	const char *want = zsm_param_str(ZSM_P_PROVIDER);
	const struct fi_info *first = NULL;

	for (const struct fi_info *fi = all; fi; fi = fi->next) {
		const char *prov = fi->fabric_attr->prov_name;

		if (strlen(fi->domain_attr->name) != n ||
		    strncmp(fi->domain_attr->name, name, n) != 0)
			continue;
		if (strcasecmp(want, "auto") == 0
			    ? zsm_net_prov_rank_of(prov) >= 0
			    : zsm_net_prov_wanted(want, prov))
			return fi;
		if (!first)
			first = fi;
	}
	return first;
}

static int zsm_net_topo_has_dev(const struct zsm_net_topo *topo,
				const char *name, size_t n)
{
	for (int i = 0; i < topo->ndevs; i++)
		if (strlen(topo->devs[i].name) == n &&
		    strncmp(topo->devs[i].name, name, n) == 0)
			return 1;
	return 0;
}

/*
 * What libfabric's own filter left, for a message about a name it does
 * not offer: FI_PROVIDER hides every provider it does not name, so a
 * ZSM_PROVIDER or ZSM_DOMAIN that names another is not found for that
 * reason, and the message must say which variable to look at.
 */
static const char *zsm_net_fi_filter(char *buf, size_t len)
{
	const char *fi = getenv("FI_PROVIDER");

	if (!fi || !fi[0])
		return "";
	snprintf(buf, len,
		 "; FI_PROVIDER=%s limits libfabric to the providers it "
		 "names",
		 fi);
	return buf;
}

/*
 * A provider or domain that the user named and that gives no device is a
 * configuration error (-EDOM), said once per name with the reason: init
 * must not go on quietly with fewer NICs than the job was set up for.
 */
static int zsm_net_topo_check_asked(const struct zsm_net_topo *topo)
{
	const char *want = zsm_param_str(ZSM_P_PROVIDER);
	const char *domains = zsm_param_str(ZSM_P_DOMAIN);
	const int forced = strcasecmp(want, "auto") != 0;
	const struct fi_info *fi;
	char list[512], why[160], filter[160];
	int ret = 0;

	for (fi = topo->all; forced && fi; fi = fi->next)
		if (zsm_net_prov_wanted(want, fi->fabric_attr->prov_name))
			break;
	if (forced && !fi) {
		ZSM_WARN("ZSM_PROVIDER=%s matches no provider libfabric offers "
			 "(offered: %s)%s",
			 want, zsm_net_offered(topo->all, 0, list, sizeof(list)),
			 zsm_net_fi_filter(filter, sizeof(filter)));
		return -EDOM;
	}
	/* The list's syntax was checked when it was read (param.c). */
	for (const char *p = domains; *p;) {
		size_t n = strcspn(p, ",");

		if (!zsm_net_topo_has_dev(topo, p, n)) {
			fi = zsm_net_domain_offer(topo->all, p, n);
			if (!fi)
				ZSM_WARN("ZSM_DOMAIN=%s: %.*s is not a domain "
					 "libfabric offers (offered: %s)%s",
					 domains, (int)n, p,
					 zsm_net_offered(topo->all, 1, list,
							 sizeof(list)),
					 zsm_net_fi_filter(filter,
							   sizeof(filter)));
			else
				ZSM_WARN("ZSM_DOMAIN=%s: %.*s is offered by %s "
					 "but passed over: %s",
					 domains, (int)n, p,
					 fi->fabric_attr->prov_name,
					 zsm_net_topo_why(topo, fi, why,
							  sizeof(why)));
			ret = -EDOM;
		}
		p += n + (p[n] == ',');
	}
	if (ret || !forced || topo->ndevs > 0)
		return ret;
	/* Offered, but every offer of it is passed over (tags, addresses). */
	for (fi = topo->all; fi; fi = fi->next)
		if (zsm_net_prov_wanted(want, fi->fabric_attr->prov_name))
			break;
	ZSM_WARN("ZSM_PROVIDER=%s gives no device: its offers are passed over "
		 "(%s on %s: %s)",
		 want, fi->fabric_attr->prov_name, fi->domain_attr->name,
		 zsm_net_topo_why(topo, fi, why, sizeof(why)));
	return -EDOM;
}

/* The best offer of each domain in topo->all (the first wins ties, IPv4
 * first): how many, in best; *have_real when one is not loopback. */
static int zsm_net_topo_best(const struct zsm_net_topo *topo,
			     const struct fi_info **best, int *have_real)
{
	const struct fi_info *fi;
	char why[160];
	int nbest = 0;

	*have_real = 0;
	for (fi = topo->all; fi; fi = fi->next) {
		int i, r;

		if (zsm_net_reject(fi, why, sizeof(why)))
			continue;
		r = zsm_net_prov_order(fi->fabric_attr->prov_name);
		for (i = 0; i < nbest; i++)
			if (strcmp(best[i]->domain_attr->name,
				   fi->domain_attr->name) == 0)
				break;
		if (i == nbest) {
			if (nbest == ZSM_NET_MAX_DEVS)
				continue;
			best[nbest++] = fi;
		} else if (r >= 0 &&
			   r < zsm_net_prov_order(
				       best[i]->fabric_attr->prov_name)) {
			best[i] = fi;
		}
		if (!zsm_net_is_loopback(fi))
			*have_real = 1;
	}
	return nbest;
}

/* Device dev from offer fi (hm: the richer offer of the same provider
 * and domain, or NULL): 0, -ENOMEM, or -EINVAL where its provider is
 * set up beyond what zsm keeps safe. */
static int zsm_net_topo_add(struct zsm_net_topo *topo,
			    const struct fi_info *fi,
			    const struct fi_info *hm)
{
	struct zsm_net_dev *dev = &topo->devs[topo->ndevs];

	/* Endpoints need FI_HMEM to take GPU registrations, and reads to
	 * flush: the richer offer where there is one. */
	dev->info = zsm_net_offer_sized(hm ? hm : fi);
	if (!dev->info)
		return -ENOMEM;
	dev->hmem = (dev->info->caps & FI_HMEM) != 0;
	dev->read = (dev->info->caps & ZSM_NET_READ_CAPS) == ZSM_NET_READ_CAPS;
	if (zsm_net_dev_rules(dev)) {
		zsm_fi_freeinfo(dev->info);
		dev->info = NULL;
		return -EINVAL;
	}
	snprintf(dev->name, sizeof(dev->name), "%s", fi->domain_attr->name);
	dev->pci_path = zsm_net_pci_path(fi);
	dev->guid = zsm_net_fnv1a(dev->name);
	dev->speed_mbps = zsm_net_speed_mbps(fi);
	ZSM_INFO("net: device %d is %s over %s (%d Mb/s, pci %s%s%s, "
		 "queues %zu/%zu)",
		 topo->ndevs, dev->name, fi->fabric_attr->prov_name,
		 dev->speed_mbps, dev->pci_path ? dev->pci_path : "none",
		 dev->hmem ? ", FI_HMEM" : "", dev->read ? ", RMA reads" : "",
		 dev->info->tx_attr->size, dev->info->rx_attr->size);
	zsm_net_dev_plan_rma(dev);
	topo->ndevs++;
	return 0;
}

/* topo->all from libfabric: 0, -FI_ENODATA when it offers nothing. */
static int zsm_net_topo_getinfo(struct zsm_net_topo *topo)
{
	struct fi_info *hints = zsm_net_hints();
	int ret;

	if (!hints)
		return -ENOMEM;
	ret = zsm_fi_getinfo(FI_VERSION(1, 14), NULL, NULL, 0, hints,
			     &topo->all);
	zsm_fi_freeinfo(hints);
	if (ret == -FI_ENODATA) {
		ZSM_INFO("net: libfabric offers no RDM endpoint with tagged "
			 "messages");
		topo->all = NULL;
	} else if (ret) {
		ZSM_WARN("net: fi_getinfo failed: %s", zsm_fi_strerror(-ret));
		return -EIO;
	}
	return ret;
}

int zsm_net_topo_discover(struct zsm_net_topo *topo)
{
	struct zsm_net_rich rich;
	const struct fi_info *best[ZSM_NET_MAX_DEVS];
	int nbest, ret, have_real;

	memset(topo, 0, sizeof(*topo));
	ret = zsm_fi_lib_load();
	if (!ret)
		ret = zsm_net_topo_getinfo(topo);
	if (ret == -FI_ENODATA)
		return zsm_net_topo_check_asked(topo);
	if (ret)
		return ret;
	zsm_net_rich_get(&rich);
	nbest = zsm_net_topo_best(topo, best, &have_real);
	for (int i = 0; i < nbest && !ret; i++) {
		/* Loopback only when asked for, or when it is all there is. */
		if (zsm_net_is_loopback(best[i]) && have_real &&
		    !zsm_param_str(ZSM_P_DOMAIN)[0])
			continue;
		ret = zsm_net_topo_add(topo, best[i],
				       zsm_net_rich_pick(&rich, best[i]));
	}
	zsm_net_rich_free(&rich);
	if (!ret)
		ret = zsm_net_topo_check_asked(topo);
	if (!ret)
		ret = zsm_net_topo_group(topo);
	if (ret)
		zsm_net_topo_free(topo);
	return ret;
}

const char *zsm_net_topo_why(const struct zsm_net_topo *topo,
			     const struct fi_info *fi, char *buf, size_t len)
{
	const char *why = zsm_net_reject(fi, buf, len);

	if (why)
		return why;
	for (int i = 0; i < topo->ndevs; i++) {
		const struct fi_info *d = topo->devs[i].info;

		if (strcmp(d->domain_attr->name, fi->domain_attr->name))
			continue;
		if (strcmp(d->fabric_attr->prov_name,
			   fi->fabric_attr->prov_name) == 0 &&
		    d->addr_format == fi->addr_format &&
		    strcmp(d->fabric_attr->name, fi->fabric_attr->name) == 0)
			return "";
		snprintf(buf, len, "domain %s is already served by %s (%s)",
			 fi->domain_attr->name, d->fabric_attr->prov_name,
			 d->fabric_attr->name);
		return buf;
	}
	if (zsm_net_is_loopback(fi)) {
		snprintf(buf, len, "loopback is used only when it is the "
				   "only NIC or ZSM_DOMAIN names it");
		return buf;
	}
	snprintf(buf, len, "more than %d devices", ZSM_NET_MAX_DEVS);
	return buf;
}

void zsm_net_topo_free(struct zsm_net_topo *topo)
{
	for (int i = 0; i < topo->ndevs; i++)
		zsm_net_dev_drop(&topo->devs[i]);
	if (topo->all)
		zsm_fi_freeinfo(topo->all);
	memset(topo, 0, sizeof(*topo));
}

void zsm_net_dev_plan_gdr(struct zsm_net_dev *dev, int cuda, int min_cc,
			  int cuda_dmabuf)
{
	struct zsm_net_hmem_in in = {
		.prov = dev->info->fabric_attr->prov_name,
		.prov_hmem = dev->hmem,
		.prov_read = dev->read,
		.fi_api = dev->info->fabric_attr->api_version,
		.cuda = cuda,
		.min_cc = min_cc,
		.cuda_dmabuf = cuda_dmabuf,
		.gdr_param = (int)zsm_param_int(ZSM_P_GDR),
		.dmabuf_param = (int)zsm_param_int(ZSM_P_DMABUF),
		.flush_param = (int)zsm_param_int(ZSM_P_GDR_FLUSH),
	};

	zsm_net_hmem_decide(&in, &dev->gdr);
}

void zsm_net_dev_props(const struct zsm_net_dev *dev, int index,
		       struct zsm_props *p)
{
	size_t max = dev->info->ep_attr->max_msg_size;

	memset(p, 0, sizeof(*p));
	p->name = (char *)dev->name;
	p->pci_path = dev->pci_path;
	p->guid = dev->guid;
	p->ptr_support = ZSM_MEM_HOST;
	p->reg_is_global = 1;
	p->force_flush = 0;
	p->speed_mbps = dev->speed_mbps;
	p->port = 1;
	p->latency_us = 0;
	p->max_comms = 65536;
	p->max_recvs = ZSM_MAX_RECVS;
	p->max_p2p_bytes = max && max < ZSM_MAX_P2P_BYTES ? max
							 : ZSM_MAX_P2P_BYTES;
	p->max_coll_bytes = p->max_p2p_bytes;
	p->max_multi_request_size = 1;
	p->rail_id = ZSM_ID_UNDEF;
	p->plane_id = ZSM_ID_UNDEF;
	p->nfused = dev->rails.nfused;
	for (int k = 0; k < dev->rails.nfused; k++)
		p->fused[k] = dev->rails.fused[k];
	(void)index;
}
