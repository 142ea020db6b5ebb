/* SPDX-License-Identifier: MIT */
/*
 * Where NICs and GPUs sit on the PCI tree, as sysfs says, and which NICs
 * serve which GPU: the groups a GPU's traffic may be spread over on a host
 * with several NICs per GPU (issue 34; docs/design.md, "Devices").
 *
 * A device is its chain of PCI names from its host bridge down: the
 * host bridge ("pci0000:40"), each bridge below it, the device last, as
 * the kernel's path of the device under /sys/devices spells them.  Two
 * devices that share a bridge below the host bridge sit under one PCIe
 * switch (or are functions of one card); NCCL calls that PIX or PXB.
 *
 * Every read happens under a root folder ("" for this machine's own
 * /sys), so that tests run on recorded trees.  No allocation survives a
 * call; nothing here is on a data path.
 */
#ifndef ZSM_COMMON_PCI_H
#define ZSM_COMMON_PCI_H

#include <stddef.h>

/* PCI names in a chain, the host bridge's included. */
#define ZSM_PCI_DEPTH 12
/* "0000:00:00.0" or "pci0000:00", and its NUL. */
#define ZSM_PCI_NAME 16
/* The most NICs in one group: NCCL fuses at most 4 (net v9 to v11) or 8
 * (v12) devices into one. */
#define ZSM_PCI_GROUP_MAX 8

struct zsm_pci_dev {
	char chain[ZSM_PCI_DEPTH][ZSM_PCI_NAME];
	int depth; /* names in chain, 2 or more */
	int numa;  /* the kernel's numa_node, -1 when it does not say */
};

/* How near two devices are, farthest first. */
enum zsm_pci_near {
	ZSM_PCI_FAR,	     /* other host bridges, other (or unknown) NUMA nodes */
	ZSM_PCI_NUMA,	     /* other host bridges, one NUMA node */
	ZSM_PCI_HOST_BRIDGE, /* one host bridge, no bridge below it shared */
	ZSM_PCI_SWITCH,	     /* a bridge below the host bridge shared */
};

/*
 * The device at path (a sysfs path as this machine spells it: under
 * /sys/devices, or a link to there such as /sys/bus/pci/devices/<bus id>
 * or /sys/class/net/<if>/device), read under root.  Names after the last
 * PCI one (a virtio or net folder) are not part of the chain.  0;
 * -ENOENT no such path; -EINVAL not under root's /sys/devices, or not on
 * PCI (a virtual device); -E2BIG deeper than ZSM_PCI_DEPTH.
 */
int zsm_pci_dev_read(const char *root, const char *path,
		     struct zsm_pci_dev *d);
/* Its own PCI name: the chain's last. */
const char *zsm_pci_dev_name(const struct zsm_pci_dev *d);

/*
 * Every NVIDIA GPU (vendor 0x10de, class display: VGA or 3D controller)
 * of root's /sys/bus/pci/devices, in bus order, into gpus (room for max).
 * 0 with *n set; -ENOENT when there is no such folder (*n 0); -E2BIG when
 * there are more than max (*n the count; the max read, sorted, are the
 * first the folder listed).
 */
int zsm_pci_gpus(const char *root, struct zsm_pci_dev *gpus, int max,
		 int *n);

/* How near a and b are; *shared: how many names of their chains they
 * share (0 under other host bridges), the devices themselves never. */
enum zsm_pci_near zsm_pci_near(const struct zsm_pci_dev *a,
			       const struct zsm_pci_dev *b, int *shared);
const char *zsm_pci_near_name(enum zsm_pci_near near);

/* NICs that serve one GPU together. */
struct zsm_pci_group {
	int gpu;		/* index in the GPUs given, -1: none */
	enum zsm_pci_near near; /* every member's to that GPU */
	int numa;		/* every member's */
	int n;
	int nics[ZSM_PCI_GROUP_MAX]; /* indices in the NICs given, rising */
};

/*
 * Group nics by the GPU each serves: a NIC serves its nearest GPU (a
 * nearer class first, then more names shared; between equals, the one
 * with the fewest NICs so far, then the first), and the NICs of one GPU
 * form its groups, split where their nearness or NUMA node differs (NCCL
 * refuses to fuse across NUMA nodes) and at most max each (1 to
 * ZSM_PCI_GROUP_MAX).  With no GPU every NIC is a group of its own.
 * groups has room for nnics; groups come in GPU order, then by first
 * member.  0 and *ngroups; -EINVAL for a bad count or max; -ENOMEM.
 */
int zsm_pci_group(const struct zsm_pci_dev *nics, int nnics,
		  const struct zsm_pci_dev *gpus, int ngpus, int max,
		  struct zsm_pci_group *groups, int *ngroups);

#endif
