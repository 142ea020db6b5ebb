/* SPDX-License-Identifier: MIT */
/* The hostile endpoint of attacker.h, straight on libfabric. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "attacker.h"
#include "net/net.h"
#include "zsm_client.h"

#define H_ATTACKER_PATIENCE_NS (5ULL * 1000000000ULL)

struct h_attacker {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t victim;
	unsigned char addr[64];
	size_t addr_len;
	/* Messages in flight keep their bytes and contexts here. */
	unsigned char bufs[64][16384];
	struct fi_context2 ctx[64];
	unsigned next;
};

void h_victim_from_handle(struct h_victim *v, const void *handle)
{
	const unsigned char *h = handle;
	uint16_t version, addr_len;

	/* magic 0, version 4, addr_len 6, listen_id 8, nonce 12, pid 16,
	 * host_hash 24, addr 32: the same in versions 3 and 4. */
	memcpy(&version, h + 4, 2);
	memcpy(&addr_len, h + 6, 2);
	v->version = version;
	memcpy(&v->listen_id, h + 8, 4);
	memcpy(&v->nonce, h + 12, 4);
	memcpy(&v->pid, h + 16, 4);
	memcpy(&v->host_hash, h + 24, 8);
	v->addr_len = addr_len <= sizeof(v->addr) ? addr_len : sizeof(v->addr);
	memcpy(v->addr, h + 32, v->addr_len);
}

/*
 * The victim's provider on lo, by zsm's own rule (plugin/net/net_dev.c):
 * tcp;ofi_rxm when zsm picks; under ZSM_PROVIDER=tcp, libfabric's own
 * tcp RDM endpoint where libfabric offers it; any other name as given.
 * The two tcp providers speak different wires: an attacker on the other
 * one reaches nothing, and a case would pass because its attack never
 * landed.  H_ATTACKER_PROV overrides it.  Runs where the victim's plugin
 * is loaded, so that it sees the libfabric the plugin sees.
 */
const char *h_attacker_prov(void)
{
	const char *p = getenv("H_ATTACKER_PROV");
	struct fi_info *hints, *got = NULL;
	const char *pick = "tcp;ofi_rxm";

	if (p && *p)
		return p;
	p = getenv("ZSM_PROVIDER");
	if (!p || !*p || strcasecmp(p, "auto") == 0)
		return pick;
	if (strcasecmp(p, "tcp") != 0)
		return p;
	hints = fi_allocinfo();
	if (!hints)
		return pick;
	hints->caps = FI_TAGGED | FI_SEND | FI_RECV;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup("tcp");
	hints->domain_attr->name = strdup("lo");
	if (fi_getinfo(FI_VERSION(1, 14), NULL, NULL, 0, hints, &got) == 0) {
		for (struct fi_info *fi = got; fi; fi = fi->next)
			if (strcmp(fi->fabric_attr->prov_name, "tcp") == 0)
				pick = "tcp";
		fi_freeinfo(got);
	}
	fi_freeinfo(hints);
	return pick;
}

int h_attacker_open(struct h_attacker **out, const struct h_victim *v)
{
	struct h_attacker *a = calloc(1, sizeof(*a));
	struct fi_info *hints = fi_allocinfo();
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED,
				     .size = 1024};
	const char *prov = h_attacker_prov();
	int ret;

	*out = NULL;
	if (!a || !hints)
		return -1;
	hints->caps = FI_TAGGED | FI_SEND | FI_RECV;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup(prov);
	hints->domain_attr->name = strdup("lo");
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY |
				      FI_MR_ENDPOINT | FI_MR_HMEM;
	ret = fi_getinfo(FI_VERSION(1, 14), NULL, NULL, 0, hints, &a->info);
	fi_freeinfo(hints);
	if (!ret)
		ret = fi_fabric(a->info->fabric_attr, &a->fabric, NULL);
	if (!ret)
		ret = fi_domain(a->fabric, a->info, &a->domain, NULL);
	if (!ret)
		ret = fi_av_open(a->domain, &av_attr, &a->av, NULL);
	if (!ret)
		ret = fi_cq_open(a->domain, &cq_attr, &a->cq, NULL);
	if (!ret)
		ret = fi_endpoint(a->domain, a->info, &a->ep, NULL);
	if (!ret)
		ret = fi_ep_bind(a->ep, &a->av->fid, 0);
	if (!ret)
		ret = fi_ep_bind(a->ep, &a->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_enable(a->ep);
	a->addr_len = sizeof(a->addr);
	if (!ret)
		ret = fi_getname(&a->ep->fid, a->addr, &a->addr_len);
	if (!ret && fi_av_insert(a->av, v->addr, 1, &a->victim, 0, NULL) != 1)
		ret = -FI_EINVAL;
	if (ret) {
		fprintf(stderr, "attacker: no %s endpoint on lo: %s\n", prov,
			fi_strerror(-ret));
		h_attacker_close(a);
		return -1;
	}
	*out = a;
	return 0;
}

void h_attacker_close(struct h_attacker *a)
{
	if (!a)
		return;
	if (a->ep)
		fi_close(&a->ep->fid);
	if (a->cq)
		fi_close(&a->cq->fid);
	if (a->av)
		fi_close(&a->av->fid);
	if (a->domain)
		fi_close(&a->domain->fid);
	if (a->fabric)
		fi_close(&a->fabric->fid);
	if (a->info)
		fi_freeinfo(a->info);
	free(a);
}

const void *h_attacker_addr(const struct h_attacker *a, size_t *len)
{
	*len = a->addr_len;
	return a->addr;
}

void h_attacker_poll(struct h_attacker *a)
{
	struct fi_cq_tagged_entry e[16];
	struct fi_cq_err_entry err = {0};

	while (fi_cq_read(a->cq, e, 16) > 0)
		;
	if (fi_cq_readerr(a->cq, &err, 0) > 0)
		return;
}

static int h_attacker_send(struct h_attacker *a, uint64_t tag, const void *buf,
			   size_t len, int with_cqd, uint64_t cqd)
{
	unsigned slot = a->next++ % 64;
	unsigned char *b = a->bufs[slot];
	uint64_t t0;
	ssize_t ret;

	if (len > sizeof(a->bufs[0]))
		len = sizeof(a->bufs[0]);
	memcpy(b, buf, len);
	/* A victim that takes nothing for long is not waited for for ever:
	 * the case judges what that did. */
	t0 = zsm_client_now_ns();
	do {
		if (with_cqd)
			ret = fi_tsenddata(a->ep, b, len, NULL, cqd, a->victim,
					   tag, &a->ctx[slot]);
		else
			ret = fi_tsend(a->ep, b, len, NULL, a->victim, tag,
				       &a->ctx[slot]);
		h_attacker_poll(a);
	} while (ret == -FI_EAGAIN &&
		 zsm_client_now_ns() - t0 < H_ATTACKER_PATIENCE_NS);
	return ret ? -1 : 0;
}

int h_attacker_data(struct h_attacker *a, uint32_t id, int tag,
		    const void *buf, size_t len, int with_cqd, uint64_t cqd)
{
	return h_attacker_send(a, zsm_tag_data(id, tag), buf, len, with_cqd,
			       cqd);
}

int h_attacker_ctrl(struct h_attacker *a, uint32_t id, unsigned type,
		    const void *buf, size_t len)
{
	return h_attacker_send(a, ZSM_TAG_CTRL | ((uint64_t)id << 24) | type,
			       buf, len, 0, 0);
}

/* Version 3's control message: 120 bytes, the address last at 56. */
struct h_ctrl_v3 {
	uint32_t magic;
	uint16_t version, type;
	uint32_t nonce, id, addr_len;
	int32_t status;
	uint64_t host_hash;
	uint32_t pid;
	int32_t ce_fd;
	uint64_t ce_addr;
	uint32_t ce_flags, reserved;
	uint8_t addr[64];
};
_Static_assert(sizeof(struct h_ctrl_v3) == 120, "version 3's layout");

/* Versions 4 and 5: 136 bytes, and 5 added the credit at the end. */
struct h_ctrl_v45 {
	uint32_t magic;
	uint16_t version, type;
	uint32_t src_id, dst_id;
	uint64_t key;
	int32_t status;
	uint32_t pid;
	uint64_t host_hash, reply_key;
	uint32_t data_key, flags;
	uint64_t ce_addr;
	int32_t ce_fd;
	uint32_t addr_len;
	uint8_t addr[64];
	uint64_t credit;
};
_Static_assert(sizeof(struct h_ctrl_v45) == 144 &&
		       offsetof(struct h_ctrl_v45, addr) == 72,
	       "version 5's layout");
#define H_CTRL_CE_WANT 1u /* versions 4, 5: the connector would take ce */

static size_t h_ctrl_len(unsigned version)
{
	return version == 4 ? offsetof(struct h_ctrl_v45, credit)
	       : version == 5 ? sizeof(struct h_ctrl_v45)
			      : sizeof(struct zsm_ctrl_msg);
}

/* Version 6: the core's offer asking for ce, {transport 1, 8 bytes: the
 * word to read}, as entry/select.c frames it. */
static void h_ctrl_ce_offer(struct zsm_ctrl_msg *m, uint64_t probe)
{
	m->offer[0] = 1;
	m->offer[1] = 8;
	memcpy(m->offer + 2, &probe, 8);
	m->offer_len = 10;
}

size_t h_attacker_conn_req(const struct h_attacker *a, const struct h_victim *v,
			   void *buf, uint32_t src, uint32_t pid, int ce_fd,
			   uint64_t ce_addr, uint64_t key)
{
	if (v->version == 3) {
		struct h_ctrl_v3 m = {
			.magic = ZSM_HANDLE_MAGIC,
			.version = 3,
			.type = 1,
			.nonce = v->nonce,
			.id = src,
			.addr_len = (uint32_t)a->addr_len,
			.host_hash = v->host_hash,
			.pid = pid,
			.ce_fd = ce_fd,
			.ce_addr = ce_addr,
		};

		memcpy(m.addr, a->addr, a->addr_len);
		memcpy(buf, &m, sizeof(m));
		return sizeof(m);
	}
	if (v->version == 4 || v->version == 5) {
		struct h_ctrl_v45 m = {
			.magic = ZSM_HANDLE_MAGIC,
			.version = (uint16_t)v->version,
			.type = ZSM_CTRL_CONN_REQ,
			.src_id = src,
			.dst_id = v->listen_id,
			.key = v->nonce,
			.pid = pid,
			.host_hash = v->host_hash,
			.reply_key = key,
			.flags = ce_fd >= 0 ? H_CTRL_CE_WANT : 0,
			.ce_addr = ce_addr,
			.ce_fd = ce_fd,
			.addr_len = (uint32_t)a->addr_len,
		};

		memcpy(m.addr, a->addr, a->addr_len);
		memcpy(buf, &m, sizeof(m));
		return h_ctrl_len(v->version);
	}
	if (v->version >= 6 && v->version <= ZSM_HANDLE_VERSION) {
		struct zsm_ctrl_msg m = {
			.magic = ZSM_HANDLE_MAGIC,
			.version = (uint16_t)v->version,
			.type = ZSM_CTRL_CONN_REQ,
			.src_id = src,
			.dst_id = v->listen_id,
			.key = v->nonce,
			.pid = pid,
			.host_hash = v->host_hash,
			.reply_key = key,
			.addr_len = (uint32_t)a->addr_len,
		};

		if (ce_fd >= 0)
			h_ctrl_ce_offer(&m, ce_addr);
		memcpy(m.addr, a->addr, a->addr_len);
		memcpy(buf, &m, sizeof(m));
		return sizeof(m);
	}
	return 0;
}

size_t h_attacker_req_addr_offset(unsigned version)
{
	return version == 3   ? offsetof(struct h_ctrl_v3, addr)
	       : version < 6 ? offsetof(struct h_ctrl_v45, addr)
			     : offsetof(struct zsm_ctrl_msg, addr);
}

size_t h_attacker_conn_ack(const struct h_victim *v, void *buf, uint32_t dst,
			   uint32_t id, uint64_t key)
{
	if (v->version == 3) {
		struct h_ctrl_v3 m = {
			.magic = ZSM_HANDLE_MAGIC,
			.version = 3,
			.type = 2,
			.nonce = v->nonce,
			.id = id,
			.host_hash = v->host_hash,
			.pid = v->pid,
			.ce_fd = -1,
		};

		memcpy(buf, &m, sizeof(m));
		return sizeof(m);
	}
	if (v->version == 4 || v->version == 5) {
		struct h_ctrl_v45 m = {
			.magic = ZSM_HANDLE_MAGIC,
			.version = (uint16_t)v->version,
			.type = ZSM_CTRL_CONN_ACK,
			.src_id = id,
			.dst_id = dst,
			.key = key,
			.pid = v->pid,
			.host_hash = v->host_hash,
			.ce_fd = -1,
			.credit = 16,
		};

		memcpy(buf, &m, sizeof(m));
		return h_ctrl_len(v->version);
	}
	if (v->version >= 6 && v->version <= ZSM_HANDLE_VERSION) {
		struct zsm_ctrl_msg m = {
			.magic = ZSM_HANDLE_MAGIC,
			.version = (uint16_t)v->version,
			.type = ZSM_CTRL_CONN_ACK,
			.src_id = id,
			.dst_id = dst,
			.key = key,
			.pid = v->pid,
			.host_hash = v->host_hash,
			.credit = 16,
		};

		memcpy(buf, &m, sizeof(m));
		return sizeof(m);
	}
	return 0;
}

size_t h_attacker_junk_ctrl(const struct h_attacker *a,
			    const struct h_victim *v, unsigned char *m,
			    unsigned long i, uint32_t *id)
{
	size_t len = h_attacker_conn_req(a, v, m, 4000 + (uint32_t)i, 1, -1,
					 0, 5);

	*id = v->listen_id;
	switch (i % 5) {
	case 0: /* foreign bytes */
		memset(m, (int)i, H_JUNK_BYTES);
		break;
	case 1: /* short */
		len = 10;
		break;
	case 2: /* another version */
		m[4] = 99;
		break;
	case 3: /* the wrong nonce: refused, an answer sent back */
		m[v->version == 3 ? 8 : 16] ^= 0xff;
		break;
	default: /* for a comm that does not exist */
		*id = v->listen_id + 5000 + (uint32_t)(i % 100000);
		break;
	}
	return len;
}
