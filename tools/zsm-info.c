/* SPDX-License-Identifier: MIT */
/*
 * zsm-info: what the plugin sees — its version, the ZSM_* settings in
 * force, the host identity and where it came from, the libfabric offers and
 * why each was taken or passed over, and the properties NCCL will read for
 * each device.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>

#include "ce/ce.h"
#include "common/cuda.h"
#include "common/host.h"
#include "common/log.h"
#include "common/param.h"
#include "common/pci.h"
#include "entry/entry.h"
#include "net/net.h"
#include "zsm_config.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: zsm-info [--params-md]\n"
		     "  (no option)   version, settings, host identity, "
		     "providers, devices\n"
		     "  --params-md   print docs/configuration.md\n");
}

static int zsm_info_seen(const struct fi_info *all, const struct fi_info *fi)
{
	for (const struct fi_info *e = all; e != fi; e = e->next)
		if (strcmp(e->fabric_attr->prov_name,
			   fi->fabric_attr->prov_name) == 0 &&
		    strcmp(e->domain_attr->name, fi->domain_attr->name) == 0 &&
		    strcmp(e->fabric_attr->name, fi->fabric_attr->name) == 0)
			return 1;
	return 0;
}

/* Providers libfabric has but that offer nothing zsm can use at all. */
static void zsm_info_print_unfit(const struct fi_info *fit)
{
	struct fi_info *every = NULL, *fi;

	if (fi_getinfo(FI_VERSION(1, 14), NULL, NULL, 0, NULL, &every))
		return;
	for (fi = every; fi; fi = fi->next) {
		const struct fi_info *f, *e;

		for (f = fit; f; f = f->next)
			if (!strcmp(f->fabric_attr->prov_name,
				    fi->fabric_attr->prov_name))
				break;
		for (e = every; e != fi; e = e->next)
			if (!strcmp(e->fabric_attr->prov_name,
				    fi->fabric_attr->prov_name))
				break;
		if (!f && e == fi)
			printf("  %-14s %-12s %-20s passed over: no RDM "
			       "endpoint with tagged messages, send-after-send "
			       "order and the memory modes zsm handles\n",
			       fi->fabric_attr->prov_name,
			       fi->domain_attr->name, fi->fabric_attr->name);
	}
	fi_freeinfo(every);
}

/* What guards a device's data (docs/security.md). */
static void zsm_info_print_guards(const struct zsm_net_dev *dev)
{
	const struct fi_info *fi = dev->info;
	size_t cqd = fi->domain_attr->cq_data_size;

	printf("      receives: %s; data keys: %s; ZSM_CHECKSUM: %s\n",
	       fi->caps & FI_DIRECTED_RECV ? "for the peer's address only"
					   : "from any source",
	       cqd >= 4 ? "in remote CQ data" : "none (no remote CQ data)",
	       cqd >= 8 ? "possible" : "not possible (needs 8 bytes of "
				       "remote CQ data)");
	if (dev->trunc_unsafe)
		printf("      receives under %zu bytes take a spill buffer, "
		       "so a longer message fails that receive alone\n",
		       dev->trunc_unsafe);
}

/* Where each device's (first) NIC sits on PCI and which GPU it serves:
 * under ZSM_NET_GROUP=gpu the NICs of a group are already one device
 * above ("NICs:" says which), so each group here is one device. */
static void zsm_info_print_groups(const struct zsm_net_topo *topo)
{
	struct zsm_pci_dev nics[64], gpus[64];
	struct zsm_pci_group groups[64];
	int at[64], nnics = 0, ngpus = 0, ngroups = 0, ret;

	printf("\ndevices per GPU (PCI, from sysfs):\n");
	ret = zsm_pci_gpus("", gpus, 64, &ngpus);
	if (ret == -E2BIG)
		ngpus = 64;
	printf("  GPUs: %d%s\n", ngpus,
	       ret == -ENOENT ? " (no /sys/bus/pci/devices)"
	       : ngpus	      ? ""
			      : " (no NVIDIA GPU on PCI)");
	for (int i = 0; i < topo->ndevs && nnics < 64; i++) {
		const char *path = topo->devs[i].pci_path;

		if (path && !zsm_pci_dev_read("", path, &nics[nnics])) {
			at[nnics++] = i;
			continue;
		}
		printf("  [%d] %s: not on PCI (%s): a group of its own\n", i,
		       topo->devs[i].info->domain_attr->name,
		       path ? path : "virtual");
	}
	if (zsm_pci_group(nics, nnics, gpus, ngpus, ZSM_PCI_GROUP_MAX,
			  groups, &ngroups))
		return;
	for (int g = 0; g < ngroups; g++) {
		const struct zsm_pci_group *grp = &groups[g];

		printf("  group %d:", g);
		for (int k = 0; k < grp->n; k++)
			printf(" [%d] %s (%s)", at[grp->nics[k]],
			       topo->devs[at[grp->nics[k]]]
				       .info->domain_attr->name,
			       zsm_pci_dev_name(&nics[grp->nics[k]]));
		if (grp->gpu < 0)
			printf(": no GPU to serve\n");
		else
			printf(": GPU %s, %s, NUMA node %d\n",
			       zsm_pci_dev_name(&gpus[grp->gpu]),
			       zsm_pci_near_name(grp->near), grp->numa);
	}
}

int main(int argc, char **argv)
{
	struct zsm_net_topo topo;
	char host[ZSM_HOST_ID_MAX];
	char why[160];
	int ret;

	if (argc > 1 && strcmp(argv[1], "--params-md") == 0) {
		zsm_param_print_md(stdout);
		return 0;
	}
	if (argc > 1) {
		usage(strcmp(argv[1], "--help") == 0 ? stdout : stderr);
		return strcmp(argv[1], "--help") == 0 ? 0 : 2;
	}
	printf("zsm %s (libfabric %u.%u, built against %u.%u)\n", ZSM_VERSION,
	       FI_MAJOR(fi_version()), FI_MINOR(fi_version()), FI_MAJOR_VERSION,
	       FI_MINOR_VERSION);
	if (zsm_param_load(NULL)) {
		fprintf(stderr, "zsm-info: the ZSM_* settings above are not "
				"valid; the plugin would refuse to start\n");
		return 1;
	}
	printf("\nsettings:\n");
	zsm_param_print_values(stdout);
	if (zsm_host_init()) {
		fprintf(stderr, "zsm-info: no usable host identity (see "
				"above); the plugin would refuse to start\n");
		return 1;
	}
	if (zsm_host_identity(host, sizeof(host)) == 0)
		printf("\nhost: '%s' (from %s), hash 0x%016llx\n", host,
		       zsm_host_source_name(zsm_host_source()),
		       (unsigned long long)zsm_host_hash());
	printf("same-host peers: %s\n",
	       zsm_ce_enabled()
		       ? "ce, host buffers by cross-memory attach where the "
			 "kernel allows it (ZSM_CE=1)"
		       : "the network provider (ZSM_CE=0)");

	/* Loads libcuda when there is one; says at INFO why not. */
	zsm_cuda_init();
	printf("GPU buffers between same-host processes: %s\n",
	       !zsm_cuda_ready()
		       ? "no (no CUDA driver or device)"
	       : zsm_param_int(ZSM_P_CE_GPU)
		       ? "yes, on copy engines (ZSM_CE_GPU=1)"
		       : "not advertised (ZSM_CE_GPU=0)");
	printf("GPU memory as dma-bufs (GPUDirect registrations): %s\n",
	       zsm_cuda_dmabuf_ok()
		       ? "yes, every GPU exports them"
		       : "no (no driver, a GPU without dma-buf support, or "
			 "no cuMemGetHandleForAddressRange)");

	ret = zsm_net_topo_discover(&topo);
	if (ret == -EDOM) {
		fprintf(stderr, "zsm-info: ZSM_PROVIDER or ZSM_DOMAIN names "
				"what zsm cannot use (see above); the plugin "
				"would refuse to start\n");
		return 1;
	}
	if (ret) {
		fprintf(stderr, "zsm-info: provider discovery failed (%d)\n",
			ret);
		return 1;
	}
	printf("\nlibfabric offers (RDM, tagged):\n");
	if (!topo.all)
		printf("  none: no provider offers an RDM endpoint with "
		       "tagged messages and send-after-send ordering\n");
	for (struct fi_info *fi = topo.all; fi; fi = fi->next) {
		const char *w;

		/* libfabric lists some offers more than once. */
		if (zsm_info_seen(topo.all, fi))
			continue;
		w = zsm_net_topo_why(&topo, fi, why, sizeof(why));

		printf("  %-14s %-12s %-20s %s%s\n",
		       fi->fabric_attr->prov_name, fi->domain_attr->name,
		       fi->fabric_attr->name, w[0] ? "passed over: " : "USED",
		       w);
	}
	zsm_info_print_unfit(topo.all);
	printf("\ndevices NCCL will see: %d\n", topo.ndevs);
	for (int i = 0; i < topo.ndevs; i++) {
		struct zsm_props p;

		zsm_net_dev_props(&topo.devs[i], i, &p);
		printf("  [%d] name=%s provider=%s\n", i, p.name,
		       topo.devs[i].info->fabric_attr->prov_name);
		printf("      pciPath=%s guid=0x%016llx speed=%d Mb/s "
		       "port=%d latency=%.1f\n",
		       p.pci_path ? p.pci_path : "(none: virtual)",
		       (unsigned long long)p.guid, p.speed_mbps, p.port,
		       p.latency_us);
		printf("      ptrSupport=0x%x regIsGlobal=%d forceFlush=%d "
		       "maxComms=%d maxRecvs=%d\n",
		       p.ptr_support, p.reg_is_global, p.force_flush,
		       p.max_comms, p.max_recvs);
		printf("      netDeviceType=HOST maxP2pBytes=%zu "
		       "maxCollBytes=%zu railId=%d planeId=%d\n",
		       p.max_p2p_bytes, p.max_coll_bytes, p.rail_id,
		       p.plane_id);
		printf("      mr_mode=0x%llx queues tx %zu rx %zu\n",
		       (unsigned long long)topo.devs[i].info->domain_attr->mr_mode,
		       topo.devs[i].info->tx_attr->size,
		       topo.devs[i].info->rx_attr->size);
		zsm_info_print_guards(&topo.devs[i]);
		zsm_net_dev_plan_gdr(&topo.devs[i], zsm_cuda_ready(),
				     zsm_cuda_min_cc(),
				     zsm_cuda_dmabuf_ok());
		printf("      GPU buffers to other hosts: %s\n",
		       topo.devs[i].gdr.why);
		printf("      one-sided (put, signal, get): %s\n",
		       topo.devs[i].rma.why);
		zsm_net_dev_plan_duplex(&topo.devs[i]);
		printf("      duplex endpoints and pumps: %s\n",
		       topo.devs[i].duplex_why);
		zsm_net_dev_plan_paths(&topo.devs[i]);
		printf("      NICs: %s\n", topo.devs[i].rails.why);
		printf("      paths per comm: %s\n", topo.devs[i].paths_why);
	}
	zsm_info_print_groups(&topo);
	zsm_net_topo_free(&topo);
	return 0;
}
