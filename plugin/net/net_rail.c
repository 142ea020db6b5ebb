/* SPDX-License-Identifier: MIT */
/*
 * Owns which NICs one NCCL device spans (its rails, net_dev.h): the
 * grouping ZSM_NET_GROUP asks for, decided once before any endpoint
 * opens, and which rail each of a device's paths rides.  A group is one
 * device whose comms spread their messages over paths on every member
 * (net_path.h), so NCCL sees the summed speed without merging devices
 * itself, as a job that only set NCCL_NET_PLUGIN expects.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/param.h"
#include "common/pci.h"
#include "net/net.h"

enum zsm_net_group_mode {
	ZSM_NET_GROUP_GPU = 0,
	ZSM_NET_GROUP_NIC = 1,
	ZSM_NET_GROUP_ALL = 2,
};

/* Groups of device indices, as found, before checking that they fit. */
struct zsm_net_rail_plan {
	int n;
	int size[ZSM_NET_MAX_DEVS];
	int dev[ZSM_NET_MAX_DEVS][ZSM_NET_RAILS_MAX];
	char why[ZSM_NET_MAX_DEVS][64];
};

struct fi_info *zsm_net_rail_offer(const struct zsm_net_dev *dev, int path)
{
	int r = zsm_net_rail_of(dev, path);

	if (r == 0)
		return dev->rma_info ? dev->rma_info : dev->info;
	return dev->rails.rma_info[r] ? dev->rails.rma_info[r]
				      : dev->rails.info[r];
}

const char *zsm_net_rail_nic(const struct zsm_net_dev *dev, int path)
{
	return zsm_net_rail_offer(dev, path)->domain_attr->name;
}

int zsm_net_rail_of(const struct zsm_net_dev *dev, int path)
{
	return dev->rails.n > 1 ? path % dev->rails.n : 0;
}

void zsm_net_rail_free(struct zsm_net_dev *dev)
{
	for (int r = 1; r < dev->rails.n; r++) {
		zsm_fi_freeinfo(dev->rails.info[r]);
		if (dev->rails.rma_info[r])
			zsm_fi_freeinfo(dev->rails.rma_info[r]);
		dev->rails.info[r] = dev->rails.rma_info[r] = NULL;
	}
	dev->rails.n = 1;
}

void zsm_net_dev_drop(struct zsm_net_dev *dev)
{
	zsm_fi_freeinfo(dev->info);
	if (dev->rma_info)
		zsm_fi_freeinfo(dev->rma_info);
	free(dev->pci_path);
	zsm_net_rail_free(dev);
	memset(dev, 0, sizeof(*dev));
}

/* Why b cannot be a rail of a device whose first NIC is a ("" when it
 * can): a comm's messages must be able to go on either as they are. */
static const char *zsm_net_rail_unfit(const struct zsm_net_dev *a,
				      const struct zsm_net_dev *b)
{
	const struct fi_info *fa = a->info, *fb = b->info;

	if (strcmp(fa->fabric_attr->prov_name, fb->fabric_attr->prov_name))
		return "other providers";
	/* A buffer's descriptor belongs to one domain (net_path.c). */
	if ((fa->domain_attr->mr_mode | fb->domain_attr->mr_mode) &
		    FI_MR_LOCAL ||
	    zsm_param_int(ZSM_P_MR_LOCAL))
		return "the provider wants registered buffers, which are "
		       "one NIC's";
	if (a->hmem || b->hmem)
		return "the provider takes GPU memory, whose registrations "
		       "are one NIC's";
	if (a->trunc_unsafe != b->trunc_unsafe || a->eager != b->eager ||
	    a->early_peer != b->early_peer || a->rma.mech != b->rma.mech ||
	    !a->rma_info != !b->rma_info)
		return "their providers' rules differ";
	return "";
}

/* ZSM_NET_GROUP=all: every NIC, in topo order, up to the most a device
 * spans each. */
static void zsm_net_rail_plan_all(const struct zsm_net_topo *topo,
				  struct zsm_net_rail_plan *plan)
{
	for (int i = 0; i < topo->ndevs; i++) {
		int g = i / ZSM_NET_RAILS_MAX;

		if (g == plan->n) {
			plan->n++;
			snprintf(plan->why[g], sizeof(plan->why[g]),
				 "ZSM_NET_GROUP=all");
		}
		plan->dev[g][plan->size[g]++] = i;
	}
}

/* ZSM_NET_GROUP=gpu: the NICs sysfs (under root) places, grouped per
 * GPU (pci.h). */
static int zsm_net_rail_plan_gpu(const struct zsm_net_topo *topo,
				 const char *root,
				 struct zsm_net_rail_plan *plan)
{
	struct zsm_pci_dev nics[ZSM_NET_MAX_DEVS], gpus[64];
	struct zsm_pci_group groups[ZSM_NET_MAX_DEVS];
	int at[ZSM_NET_MAX_DEVS], nnics = 0, ngpus = 0, ngroups = 0, ret;

	for (int i = 0; i < topo->ndevs; i++)
		if (topo->devs[i].pci_path &&
		    !zsm_pci_dev_read(root, topo->devs[i].pci_path,
				      &nics[nnics]))
			at[nnics++] = i;
	if (zsm_pci_gpus(root, gpus, 64, &ngpus) == -E2BIG)
		ngpus = 64;
	if (nnics < 2)
		return 0;
	ret = zsm_pci_group(nics, nnics, gpus, ngpus, ZSM_NET_RAILS_MAX,
			    groups, &ngroups);
	if (ret)
		return ret;
	for (int g = 0; g < ngroups; g++) {
		const struct zsm_pci_group *grp = &groups[g];

		if (grp->gpu < 0 || grp->n < 2)
			continue;
		for (int k = 0; k < grp->n; k++)
			plan->dev[plan->n][k] = at[grp->nics[k]];
		plan->size[plan->n] = grp->n;
		snprintf(plan->why[plan->n], sizeof(plan->why[plan->n]),
			 "GPU %s, %s, NUMA node %d",
			 zsm_pci_dev_name(&gpus[grp->gpu]),
			 zsm_pci_near_name(grp->near), grp->numa);
		plan->n++;
	}
	return 0;
}

/* Sort a group's members by name, so that hosts built alike pair their
 * k-th NICs whatever order libfabric lists them in. */
static void zsm_net_rail_sort(const struct zsm_net_dev *devs, int *m, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i;
		     j > 0 && strcmp(devs[m[j - 1]].name, devs[m[j]].name) > 0;
		     j--) {
			int t = m[j];

			m[j] = m[j - 1];
			m[j - 1] = t;
		}
}

/* A device's name and speed take in member d's: "a+b", summed. */
static void zsm_net_rail_join(struct zsm_net_dev *to,
			      const struct zsm_net_dev *d)
{
	size_t at = strlen(to->name), len = strlen(d->name);

	to->speed_mbps += d->speed_mbps;
	if (at + 2 >= sizeof(to->name))
		return;
	if (len > sizeof(to->name) - at - 2)
		len = sizeof(to->name) - at - 2;
	/* memmove: to and d may be elements of one array. */
	to->name[at] = '+';
	memmove(to->name + at + 1, d->name, len);
	to->name[at + 1 + len] = '\0';
}

/* Fold the members (sorted) into the first; the others' offers move to
 * it and their slots are left empty (info NULL). */
static void zsm_net_rail_merge(struct zsm_net_topo *topo, const int *m,
			       int n, const char *why)
{
	struct zsm_net_dev *lead = &topo->devs[m[0]];

	lead->rails.n = n;
	for (int k = 1; k < n; k++) {
		struct zsm_net_dev *d = &topo->devs[m[k]];

		lead->rails.info[k] = d->info;
		lead->rails.rma_info[k] = d->rma_info;
		zsm_net_rail_join(lead, d);
		free(d->pci_path);
		memset(d, 0, sizeof(*d));
	}
	snprintf(lead->rails.why, sizeof(lead->rails.why),
		 "%d NICs (%s), one comm's messages on all of them", n, why);
	ZSM_INFO("net: device %s spans %s", lead->name, lead->rails.why);
}

/* Checks a planned group: the members that fit its first stay in it. */
static int zsm_net_rail_fit(struct zsm_net_topo *topo, int *m, int n)
{
	int kept = 1;

	for (int k = 1; k < n; k++) {
		struct zsm_net_dev *d = &topo->devs[m[k]];
		const char *why = zsm_net_rail_unfit(&topo->devs[m[0]], d);
		char line[sizeof(d->rails.why)];

		if (!why[0]) {
			m[kept++] = m[k];
			continue;
		}
		/* Through a copy: the name printed is another device's. */
		snprintf(line, sizeof(line), "one NIC: not grouped with %s: %s",
			 topo->devs[m[0]].name, why);
		memcpy(d->rails.why, line, sizeof(line));
		ZSM_INFO("net: %s: %s", d->name, line);
	}
	return kept;
}

int zsm_net_topo_group(struct zsm_net_topo *topo)
{
	return zsm_net_topo_group_at(topo, "");
}

int zsm_net_topo_group_at(struct zsm_net_topo *topo, const char *root)
{
	int64_t mode = zsm_param_int(ZSM_P_NET_GROUP);
	struct zsm_net_rail_plan plan = {0};
	int kept = 0, ret = 0;

	for (int i = 0; i < topo->ndevs; i++) {
		topo->devs[i].rails.n = 1;
		snprintf(topo->devs[i].rails.why,
			 sizeof(topo->devs[i].rails.why), "one NIC%s",
			 mode == ZSM_NET_GROUP_NIC ? " (ZSM_NET_GROUP=nic)"
						   : "");
	}
	if (mode == ZSM_NET_GROUP_ALL)
		zsm_net_rail_plan_all(topo, &plan);
	else if (mode == ZSM_NET_GROUP_GPU)
		ret = zsm_net_rail_plan_gpu(topo, root, &plan);
	if (ret)
		return ret;
	for (int g = 0; g < plan.n; g++) {
		int *m = plan.dev[g], n = plan.size[g];

		zsm_net_rail_sort(topo->devs, m, n);
		n = zsm_net_rail_fit(topo, m, n);
		if (n > 1)
			zsm_net_rail_merge(topo, m, n, plan.why[g]);
	}
	/* The members' slots go; the devices keep their order. */
	for (int i = 0; i < topo->ndevs; i++) {
		if (!topo->devs[i].info)
			continue;
		if (kept != i)
			topo->devs[kept] = topo->devs[i];
		kept++;
	}
	for (int i = kept; i < topo->ndevs; i++)
		memset(&topo->devs[i], 0, sizeof(topo->devs[i]));
	topo->ndevs = kept;
	return 0;
}

/* Why devs cannot be fused, said once; 0 when they can. */
static int zsm_net_rail_fuse_check(const struct zsm_net_topo *topo,
				   const int *devs, int n)
{
	const char *why;
	int nics = 0;

	for (int k = 0; k < n; k++) {
		const struct zsm_net_dev *d = &topo->devs[devs[k]];

		for (int j = 0; j < k; j++)
			if (devs[j] == devs[k]) {
				ZSM_WARN("makeVDevice: device %d named twice",
					 devs[k]);
				return -EINVAL;
			}
		nics += d->rails.n > 1 ? d->rails.n : 1;
		why = k ? zsm_net_rail_unfit(&topo->devs[devs[0]], d) : "";
		if (why[0]) {
			ZSM_WARN("makeVDevice: device %d (%s) cannot join %s: %s",
				 devs[k], d->name, topo->devs[devs[0]].name,
				 why);
			return -EINVAL;
		}
	}
	if (nics > ZSM_NET_RAILS_MAX) {
		ZSM_WARN("makeVDevice: %d NICs in all: one device spans %d at "
			 "most", nics, ZSM_NET_RAILS_MAX);
		return -EINVAL;
	}
	return 0;
}

/* A copy of offer fi for another device, or NULL (with *bad set). */
static struct fi_info *zsm_net_rail_dup(const struct fi_info *fi, int *bad)
{
	struct fi_info *c = fi ? zsm_fi_dupinfo(fi) : NULL;

	if (fi && !c)
		*bad = 1;
	return c;
}

int zsm_net_topo_fuse(const struct zsm_net_topo *topo, const int *devs,
		      int n, struct zsm_net_dev *out)
{
	const struct zsm_net_dev *lead = &topo->devs[devs[0]];
	int bad = 0, ret = zsm_net_rail_fuse_check(topo, devs, n);

	if (ret)
		return ret;
	/* The first NIC's rules and plans (they match the others'); its
	 * endpoints, paths and offers are not shared. */
	*out = *lead;
	out->ep = out->ep_rx = NULL;
	out->retired = NULL;
	memset(out->path_ep, 0, sizeof(out->path_ep));
	memset(&out->rails, 0, sizeof(out->rails));
	out->rails.n = 1; /* the first NIC: out->info */
	out->info = zsm_net_rail_dup(lead->info, &bad);
	out->rma_info = zsm_net_rail_dup(lead->rma_info, &bad);
	out->pci_path = lead->pci_path ? strdup(lead->pci_path) : NULL;
	bad |= lead->pci_path && !out->pci_path;
	/* Every member's NICs, in NCCL's order: a member may be a group. */
	for (int k = 0; k < n; k++) {
		const struct zsm_net_dev *d = &topo->devs[devs[k]];

		out->rails.fused[k] = devs[k];
		for (int j = k ? 0 : 1; j < (d->rails.n > 1 ? d->rails.n : 1);
		     j++) {
			int r = out->rails.n++;

			out->rails.info[r] = zsm_net_rail_dup(
				j ? d->rails.info[j] : d->info, &bad);
			out->rails.rma_info[r] = zsm_net_rail_dup(
				j ? d->rails.rma_info[j] : d->rma_info, &bad);
		}
		if (k == 0)
			continue;
		out->guid = out->guid * 31 + d->guid;
		zsm_net_rail_join(out, d);
	}
	out->rails.nfused = n;
	snprintf(out->rails.why, sizeof(out->rails.why),
		 "%d NICs (%d devices fused by NCCL: makeVDevice), one "
		 "comm's messages on all of them",
		 out->rails.n, n);
	if (bad) {
		ZSM_WARN("makeVDevice: out of memory building %s", out->name);
		zsm_net_dev_drop(out);
		return -ENOMEM;
	}
	return 0;
}
