/* SPDX-License-Identifier: MIT */
/*
 * Owns the PCI view of NICs and GPUs (pci.h): chains read from sysfs
 * paths, nearness, and the NICs-per-GPU grouping.  Hand-read sysfs rather
 * than hwloc: the kernel's device path already names every bridge from
 * the host bridge down, which is all the grouping asks, and a library
 * (with its own topology load at every init) would buy nothing else.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/pci.h"

/* Whether s spells form, whose 'h's stand for hex digits. */
static int zsm_pci_is_form(const char *s, const char *form)
{
	size_t i;

	for (i = 0; form[i]; i++)
		if (form[i] == 'h' ? !isxdigit((unsigned char)s[i])
				   : s[i] != form[i])
			return 0;
	return s[i] == '\0';
}

/* "0000:00:1f.7": domain, bus, device, function (0 to 7). */
static int zsm_pci_is_bus_id(const char *s)
{
	return zsm_pci_is_form(s, "hhhh:hh:hh.h") && s[11] >= '0' &&
	       s[11] <= '7';
}

/* "pci0000:40": a host bridge's folder. */
static int zsm_pci_is_host_bridge(const char *s)
{
	return zsm_pci_is_form(s, "pcihhhh:hh");
}

/* A whole small file under dir, or -errno. */
static int zsm_pci_read_file(const char *dir, const char *name, char *buf,
			     size_t len)
{
	char path[PATH_MAX];
	FILE *f;
	size_t got;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	f = fopen(path, "r");
	if (!f)
		return -errno;
	got = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[got] = '\0';
	return 0;
}

/* "<root real path>/sys/devices/", the prefix every device's real path
 * has. */
static int zsm_pci_devices_dir(const char *root, char *buf, size_t len)
{
	char *real = realpath(root && root[0] ? root : "/", NULL);
	int n;

	if (!real)
		return -errno;
	n = snprintf(buf, len, "%s/sys/devices/",
		     strcmp(real, "/") == 0 ? "" : real);
	free(real);
	return n < (int)len ? 0 : -ENAMETOOLONG;
}

/* The chain's names from rest (the path after .../sys/devices/). */
static int zsm_pci_dev_parse(char *rest, struct zsm_pci_dev *d)
{
	char *save = NULL;

	d->depth = 0;
	for (char *s = strtok_r(rest, "/", &save); s;
	     s = strtok_r(NULL, "/", &save)) {
		if (d->depth == 0 ? !zsm_pci_is_host_bridge(s)
				  : !zsm_pci_is_bus_id(s))
			break;
		if (d->depth == ZSM_PCI_DEPTH)
			return -E2BIG;
		memcpy(d->chain[d->depth++], s, strlen(s) + 1);
	}
	return d->depth >= 2 ? 0 : -EINVAL;
}

int zsm_pci_dev_read(const char *root, const char *path,
		     struct zsm_pci_dev *d)
{
	char full[PATH_MAX], dir[PATH_MAX], numa[32];
	size_t plen;
	char *real;
	int ret;

	memset(d, 0, sizeof(*d));
	d->numa = -1;
	if (snprintf(full, sizeof(full), "%s%s", root ? root : "", path) >=
	    (int)sizeof(full))
		return -ENAMETOOLONG;
	ret = zsm_pci_devices_dir(root, dir, sizeof(dir));
	if (ret)
		return ret;
	real = realpath(full, NULL);
	if (!real)
		return -errno;
	plen = strlen(dir);
	ret = strncmp(real, dir, plen) == 0 ? zsm_pci_dev_parse(real + plen, d)
					    : -EINVAL;
	free(real);
	if (ret)
		return ret;
	/* The device's own folder: the prefix and the chain again. */
	for (int i = 0; i < d->depth; i++) {
		size_t at = strlen(dir);

		if (snprintf(dir + at, sizeof(dir) - at, "%s%s",
			     i ? "/" : "", d->chain[i]) >= (int)(sizeof(dir) - at))
			return -ENAMETOOLONG;
	}
	if (!zsm_pci_read_file(dir, "numa_node", numa, sizeof(numa))) {
		char *end;
		long v = strtol(numa, &end, 10);

		if (end != numa && v >= 0 && v < INT_MAX)
			d->numa = (int)v;
	}
	return 0;
}

const char *zsm_pci_dev_name(const struct zsm_pci_dev *d)
{
	/* A device no read filled names nothing. */
	return d->depth > 0 ? d->chain[d->depth - 1] : "";
}

/* Whether the device folder dir is an NVIDIA GPU. */
static int zsm_pci_is_gpu(const char *dir)
{
	char vendor[32], class[32];
	unsigned long v, c;

	if (zsm_pci_read_file(dir, "vendor", vendor, sizeof(vendor)) ||
	    zsm_pci_read_file(dir, "class", class, sizeof(class)))
		return 0;
	v = strtoul(vendor, NULL, 16);
	c = strtoul(class, NULL, 16);
	/* 0x0300: VGA compatible, 0x0302: 3D controller (data-center
	 * GPUs). */
	return v == 0x10de && (c >> 8 == 0x0300 || c >> 8 == 0x0302);
}

static int zsm_pci_cmp_dev(const void *a, const void *b)
{
	return strcmp(zsm_pci_dev_name(a), zsm_pci_dev_name(b));
}

int zsm_pci_gpus(const char *root, struct zsm_pci_dev *gpus, int max,
		 int *n)
{
	char bus[PATH_MAX], dir[PATH_MAX], link[PATH_MAX];
	struct dirent *e;
	DIR *dh;
	int ret = 0;

	*n = 0;
	if (snprintf(bus, sizeof(bus), "%s/sys/bus/pci/devices",
		     root ? root : "") >= (int)sizeof(bus))
		return -ENAMETOOLONG;
	dh = opendir(bus);
	if (!dh)
		return -ENOENT;
	while ((e = readdir(dh))) {
		if (!zsm_pci_is_bus_id(e->d_name))
			continue;
		if (snprintf(dir, sizeof(dir), "%s/%s", bus, e->d_name) >=
			    (int)sizeof(dir) ||
		    !zsm_pci_is_gpu(dir))
			continue;
		if (*n >= max) {
			(*n)++;
			ret = -E2BIG;
			continue;
		}
		snprintf(link, sizeof(link), "/sys/bus/pci/devices/%s",
			 e->d_name);
		/* A GPU whose path cannot be read is not one zsm can place. */
		if (!zsm_pci_dev_read(root, link, &gpus[*n]))
			(*n)++;
	}
	closedir(dh);
	/* Beyond max, the ones read are still sorted (they are the first
	 * readdir gave, not the lowest bus ids). */
	qsort(gpus, (size_t)(*n < max ? *n : max), sizeof(*gpus),
	      zsm_pci_cmp_dev);
	return ret;
}

enum zsm_pci_near zsm_pci_near(const struct zsm_pci_dev *a,
			       const struct zsm_pci_dev *b, int *shared)
{
	int most = (a->depth < b->depth ? a->depth : b->depth) - 1;
	int k = 0;

	while (k < most && strcmp(a->chain[k], b->chain[k]) == 0)
		k++;
	*shared = k;
	if (k >= 2)
		return ZSM_PCI_SWITCH;
	if (k == 1)
		return ZSM_PCI_HOST_BRIDGE;
	return a->numa >= 0 && a->numa == b->numa ? ZSM_PCI_NUMA
						  : ZSM_PCI_FAR;
}

const char *zsm_pci_near_name(enum zsm_pci_near near)
{
	switch (near) {
	case ZSM_PCI_SWITCH:
		return "under one PCIe switch";
	case ZSM_PCI_HOST_BRIDGE:
		return "on one host bridge";
	case ZSM_PCI_NUMA:
		return "on one NUMA node";
	case ZSM_PCI_FAR:
		break;
	}
	return "on other NUMA nodes";
}

/* The GPU nic serves, or -1 when there is none; count[g]: NICs that
 * serve g so far. */
static int zsm_pci_serve(const struct zsm_pci_dev *nic,
			 const struct zsm_pci_dev *gpus, int ngpus,
			 const int *count, enum zsm_pci_near *near)
{
	int best = -1, best_shared = -1;

	*near = ZSM_PCI_FAR;
	for (int g = 0; g < ngpus; g++) {
		int shared;
		enum zsm_pci_near k = zsm_pci_near(nic, &gpus[g], &shared);

		if (best < 0 || k > *near ||
		    (k == *near && (shared > best_shared ||
				    (shared == best_shared &&
				     count[g] < count[best])))) {
			best = g;
			*near = k;
			best_shared = shared;
		}
	}
	return best;
}

/* The open group of gpu, near and numa with room, or a new one. */
static struct zsm_pci_group *zsm_pci_group_for(struct zsm_pci_group *groups,
					       int *ngroups, int gpu,
					       enum zsm_pci_near near,
					       int numa, int max)
{
	struct zsm_pci_group *grp;

	/* Without a GPU nothing is fused. */
	for (int i = 0; gpu >= 0 && i < *ngroups; i++) {
		grp = &groups[i];
		if (grp->gpu == gpu && grp->near == near &&
		    grp->numa == numa && grp->n < max)
			return grp;
	}
	grp = &groups[(*ngroups)++];
	memset(grp, 0, sizeof(*grp));
	grp->gpu = gpu;
	grp->near = near;
	grp->numa = numa;
	return grp;
}

int zsm_pci_group(const struct zsm_pci_dev *nics, int nnics,
		  const struct zsm_pci_dev *gpus, int ngpus, int max,
		  struct zsm_pci_group *groups, int *ngroups)
{
	enum zsm_pci_near *near;
	int *serve, *count;

	*ngroups = 0;
	if (nnics < 0 || ngpus < 0 || max < 1 || max > ZSM_PCI_GROUP_MAX)
		return -EINVAL;
	if (!nnics)
		return 0;
	serve = calloc((size_t)nnics, sizeof(*serve));
	near = calloc((size_t)nnics, sizeof(*near));
	count = calloc((size_t)ngpus + 1, sizeof(*count));
	if (!serve || !near || !count) {
		free(serve);
		free(near);
		free(count);
		return -ENOMEM;
	}
	for (int i = 0; i < nnics; i++) {
		serve[i] = zsm_pci_serve(&nics[i], gpus, ngpus, count,
					 &near[i]);
		if (serve[i] >= 0)
			count[serve[i]]++;
	}
	/* GPU by GPU (the NICs of none last), each NIC in order. */
	for (int g = 0; g < ngpus; g++)
		for (int i = 0; i < nnics; i++) {
			struct zsm_pci_group *grp;

			if (serve[i] != g)
				continue;
			grp = zsm_pci_group_for(groups, ngroups, g, near[i],
						nics[i].numa, max);
			grp->nics[grp->n++] = i;
		}
	for (int i = 0; i < nnics; i++)
		if (serve[i] < 0) {
			struct zsm_pci_group *grp = zsm_pci_group_for(
				groups, ngroups, -1, near[i], nics[i].numa,
				max);

			grp->nics[grp->n++] = i;
		}
	free(serve);
	free(near);
	free(count);
	return 0;
}
