/* SPDX-License-Identifier: MIT */
/*
 * Recorded PCI trees (data/pci/NAME.tree) built as a sysfs under a
 * temporary root, for the tests of the PCI view and of the devices
 * grouped from it (pci_tree.c).
 */
#ifndef ZSM_TEST_PCI_TREE_H
#define ZSM_TEST_PCI_TREE_H

#include <limits.h>

#include "common/pci.h"

#define MAX_DEVS 64

/* One tree built under root, and its NICs (class 0x02xxxx) in bus order. */
struct tree {
	char root[PATH_MAX];
	struct zsm_pci_dev nics[MAX_DEVS];
	int nnics;
	struct zsm_pci_dev gpus[MAX_DEVS];
	int ngpus;
};

/* A path into buf (PATH_MAX): the test fails rather than cut one. */
__attribute__((format(printf, 2, 3))) void fmt(char *buf, const char *f,
					      ...);
void mkdirs(const char *path);
/* NAME.tree of ZSM_TEST_PCI_DIR, built; tree_free removes it. */
struct tree *tree_build(const char *name);
void tree_free(struct tree *t);

#endif
