/* SPDX-License-Identifier: MIT */
/* net's devices (one per libfabric domain) and their handles (net_dev.c, net_init.c). */
#ifndef ZSM_NET_DEV_H
#define ZSM_NET_DEV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include "common/cuda_win.h"
#include "common/idmap.h"
#include "core/transport.h"
#include "net/net_credit.h"
#include "net/net_fi_lib.h"
#include "net/net_hmem.h"
#include "net/net_rma_plan.h"
#include "net/net_txpool.h"
#include "net/net_wire.h"
#include "proxy/proxy.h"

#define ZSM_NET_MAX_DEVS 32
#define ZSM_NET_PATHS_MAX 8
/* NICs one device spans at most: what NCCL fuses at most (net v12). */
#define ZSM_NET_RAILS_MAX ZSM_MAX_FUSED

/* Encode/decode, unit tested.  Decode refuses foreign or damaged handles. */
void zsm_net_handle_encode(struct zsm_net_handle *h, uint32_t listen_id,
			   uint32_t nonce, const void *addr, size_t addr_len,
			   uint64_t host_hash);
int zsm_net_handle_check(const struct zsm_net_handle *h);

/*
 * The NICs (rails) a device spans (net_rail.c): 1, or a group's.  Rail 0
 * is the device's own offers (info, rma_info); rail r > 0 another NIC's,
 * whose endpoints the paths p with p mod n == r open (net_path.h).
 */
struct zsm_net_dev_rails {
	int n;
	struct fi_info *info[ZSM_NET_RAILS_MAX];     /* [0] unused */
	struct fi_info *rma_info[ZSM_NET_RAILS_MAX]; /* [0] unused; or NULL */
	char why[192]; /* how the device came to span them */
	/* makeVDevice's: the devices NCCL fused into this one (vProps);
	 * 0 for every device zsm made itself. */
	int nfused;
	int fused[ZSM_NET_RAILS_MAX];
};

struct zsm_net_dev {
	struct fi_info *info; /* the chosen provider offer, dup'ed */
	char name[136];	      /* a group's: its NICs', joined by '+' */
	char *pci_path;
	uint64_t guid;
	int speed_mbps;
	int hmem;	       /* info is the provider's FI_HMEM offer */
	int read;	       /* info has RMA reads, which flush */
	/*
	 * The largest message the provider sends eagerly when it cannot
	 * take a truncated one of that size without dropping the
	 * connection every comm to that peer shares (the tcp core under
	 * rxm); 0 when truncation is safe.  Receives smaller than this get
	 * the endpoint's spill buffer as a second part, so that whatever
	 * arrives fits (net_ep.c).
	 */
	size_t trunc_unsafe;
	/* The largest message the provider keeps for a receive not yet
	 * posted, where zsm knows it (0: its inject size): a send no
	 * larger may go early (net_credit.h). */
	size_t eager;
	/*
	 * Early messages the receive comms of one peer may be allowed in
	 * all (UINT32_MAX: no limit): the provider stops reading a peer that has
	 * more unmatched messages than it keeps (libfabric's own tcp RDM
	 * endpoint), and every comm of that peer would wait behind them.
	 */
	uint32_t early_peer;
	struct zsm_net_hmem_plan gdr; /* GPU buffers over this device */
	/* One-sided operations: how signals are built, and the offer the
	 * RMA endpoints open (NULL: none). */
	struct zsm_net_rma_plan rma;
	struct fi_info *rma_info;
	struct zsm_net_ep *ep; /* where new comms go */
	/* ZSM_NET_DUPLEX: where listeners and the comms they accept go,
	 * so that bytes coming in and bytes going out are each moved by an
	 * endpoint of their own, with a thread of its own (net_pump.c);
	 * NULL otherwise (ep takes both). */
	struct zsm_net_ep *ep_rx;
	int duplex;
	int tx_pumps; /* duplex: pump threads of the sending endpoint */
	/* ZSM_NET_PATHS: the endpoints one comm spreads over (net_path.h);
	 * path p > 0 is path_ep[p - 1][role], opened on first use. */
	int paths;
	int path_pumps; /* each path's endpoint has a pump thread */
	struct zsm_net_ep *path_ep[ZSM_NET_PATHS_MAX - 1][2];
	char paths_why[160]; /* what ZSM_NET_PATHS decided, and why */
	char duplex_why[96]; /* what ZSM_NET_DUPLEX decided, and why */
	struct zsm_net_dev_rails rails;
	/* Endpoints retired after a peer went silent (see zsm_net_ep_retire):
	 * they serve their comms and close when the last one does. */
	struct zsm_net_ep *retired;
};

/* The process's view of what libfabric offers (built once, immutable). */
struct zsm_net_topo {
	int ndevs;
	struct zsm_net_dev devs[ZSM_NET_MAX_DEVS];
	struct fi_info *all; /* every offer, for zsm-info */
};

int zsm_net_topo_discover(struct zsm_net_topo *topo);
/*
 * ZSM_NET_GROUP: fold the NICs that serve one GPU (or, with "all", every
 * NIC) into one device each, where one comm's messages may go on any of
 * them (net_rail.c).  Before any endpoint opens.  0, or -ENOMEM.
 */
int zsm_net_topo_group(struct zsm_net_topo *topo);
/* The same with sysfs read under root (tests' recorded trees). */
int zsm_net_topo_group_at(struct zsm_net_topo *topo, const char *root);
/* The offer path p of dev opens its endpoints with (rail p mod n). */
struct fi_info *zsm_net_rail_offer(const struct zsm_net_dev *dev, int path);
/* The NIC path runs over, by its domain name (for what zsm says). */
const char *zsm_net_rail_nic(const struct zsm_net_dev *dev, int path);
/* The rail path p of dev rides. */
int zsm_net_rail_of(const struct zsm_net_dev *dev, int path);
/*
 * makeVDevice: a device over the NICs of devices devs[0..n) (each a NIC
 * of its own), built in *out from their offers, which stay theirs.  No
 * endpoint yet.  0; -EINVAL (said) for devices that cannot be one.
 */
int zsm_net_topo_fuse(const struct zsm_net_topo *topo, const int *devs,
		      int n, struct zsm_net_dev *out);
/* Give back the other rails' offers. */
void zsm_net_rail_free(struct zsm_net_dev *dev);
/* Give back every offer of dev and its PCI path, and clear it (its
 * endpoints closed, or never opened). */
void zsm_net_dev_drop(struct zsm_net_dev *dev);
void zsm_net_topo_free(struct zsm_net_topo *topo);
/* Why an offer was not taken ("" when it was). */
const char *zsm_net_topo_why(const struct zsm_net_topo *topo,
			     const struct fi_info *fi, char *buf, size_t len);
void zsm_net_dev_props(const struct zsm_net_dev *dev, int index,
		       struct zsm_props *props);
/* Decide dev->gdr: does the device take GPU buffers (net_hmem.h)?  cuda:
 * a driver with a device; min_cc: the lowest compute capability;
 * cuda_dmabuf: every GPU exports dma-bufs. */
void zsm_net_dev_plan_gdr(struct zsm_net_dev *dev, int cuda, int min_cc,
			  int cuda_dmabuf);
/* Decide dev->rma from what the provider grants (net_rma_dev.c). */
void zsm_net_dev_plan_rma(struct zsm_net_dev *dev);

/* Every device of the process (net_init.c). */
extern struct zsm_net_topo zsm_net_topo;

#endif
