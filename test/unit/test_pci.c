/* SPDX-License-Identifier: MIT */
/*
 * The PCI view (common/pci.h) on the trees recorded in data/pci (one
 * .tree file each), each built as a sysfs under a temporary root: what a device's chain reads,
 * how near two devices are, and which NICs serve which GPU together.
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/pci.h"
#include "pci_tree.h"
#include "zsm_test.h"

static int group(const struct tree *t, int ngpus, int max,
		 struct zsm_pci_group *g)
{
	int n = -1;

	zsm_assert_int_eq(zsm_pci_group(t->nics, t->nnics, t->gpus, ngpus, max,
					g, &n),
			  0);
	return n;
}

static void test_pci_p5_four_nics_per_gpu(void **state)
{
	struct tree *t = tree_build("p5");
	struct zsm_pci_group g[MAX_DEVS];
	int n;

	(void)state;
	zsm_assert_int_eq(t->ngpus, 8);
	zsm_assert_int_eq(t->nnics, 32);
	n = group(t, t->ngpus, 4, g);
	zsm_assert_int_eq(n, 8);
	for (int i = 0; i < n; i++) {
		zsm_assert_int_eq(g[i].gpu, i);
		zsm_assert_int_eq(g[i].n, 4);
		zsm_assert_int_eq(g[i].near, ZSM_PCI_SWITCH);
		zsm_assert_int_eq(g[i].numa, i / 4);
		for (int k = 0; k < 4; k++)
			zsm_assert_int_eq(g[i].nics[k], 4 * i + k);
	}
	tree_free(t);
}

static void test_pci_p5_max_splits_groups(void **state)
{
	struct tree *t = tree_build("p5");
	struct zsm_pci_group g[MAX_DEVS];
	int n;

	(void)state;
	n = group(t, t->ngpus, 3, g);
	/* 4 NICs a GPU, 3 a group at most: 3 and 1. */
	zsm_assert_int_eq(n, 16);
	for (int i = 0; i < n; i++) {
		zsm_assert_int_eq(g[i].gpu, i / 2);
		zsm_assert_int_eq(g[i].n, i % 2 ? 1 : 3);
		zsm_assert_int_eq(g[i].nics[0], 4 * (i / 2) + (i % 2 ? 3 : 0));
	}
	n = group(t, t->ngpus, 1, g);
	zsm_assert_int_eq(n, 32);
	tree_free(t);
}

static void test_pci_p5en_splits_a_switch_between_its_gpus(void **state)
{
	struct tree *t = tree_build("p5en");
	struct zsm_pci_group g[MAX_DEVS];
	int n;

	(void)state;
	zsm_assert_int_eq(t->ngpus, 8);
	zsm_assert_int_eq(t->nnics, 16);
	n = group(t, t->ngpus, 8, g);
	zsm_assert_int_eq(n, 8);
	for (int i = 0; i < n; i++) {
		int sw = i / 2, first = i % 2;

		zsm_assert_int_eq(g[i].gpu, i);
		zsm_assert_int_eq(g[i].n, 2);
		zsm_assert_int_eq(g[i].near, ZSM_PCI_SWITCH);
		/* The switch's NICs alternate between its two GPUs. */
		zsm_assert_int_eq(g[i].nics[0], 4 * sw + first);
		zsm_assert_int_eq(g[i].nics[1], 4 * sw + first + 2);
	}
	tree_free(t);
}

static void test_pci_gh200_one_nic_per_gpu(void **state)
{
	struct tree *t = tree_build("gh200");
	struct zsm_pci_group g[MAX_DEVS];
	int n;

	(void)state;
	zsm_assert_int_eq(t->ngpus, 4);
	zsm_assert_int_eq(t->nnics, 4);
	n = group(t, t->ngpus, 8, g);
	zsm_assert_int_eq(n, 4);
	for (int i = 0; i < n; i++) {
		zsm_assert_int_eq(g[i].gpu, i);
		zsm_assert_int_eq(g[i].n, 1);
		zsm_assert_int_eq(g[i].nics[0], i);
		zsm_assert_int_eq(g[i].near, ZSM_PCI_NUMA);
		zsm_assert_int_eq(g[i].numa, i);
	}
	tree_free(t);
}

static void test_pci_numa_nodes_never_fused(void **state)
{
	struct tree *t = tree_build("gh200");
	struct zsm_pci_group g[MAX_DEVS];
	int n;

	(void)state;
	/* GPU 0 alone: every NIC serves it, NIC 0 from its NUMA node, the
	 * others from three other nodes, and no group mixes two. */
	n = group(t, 1, 8, g);
	zsm_assert_int_eq(n, 4);
	zsm_assert_int_eq(g[0].near, ZSM_PCI_NUMA);
	for (int i = 0; i < n; i++) {
		zsm_assert_int_eq(g[i].gpu, 0);
		zsm_assert_int_eq(g[i].n, 1);
		zsm_assert_int_eq(g[i].numa, t->nics[g[i].nics[0]].numa);
		if (i)
			zsm_assert_int_eq(g[i].near, ZSM_PCI_FAR);
	}
	tree_free(t);
}

static void test_pci_no_gpu_leaves_each_nic_alone(void **state)
{
	struct tree *t = tree_build("p5");
	struct zsm_pci_group g[MAX_DEVS];
	int n;

	(void)state;
	n = group(t, 0, 8, g);
	zsm_assert_int_eq(n, 32);
	for (int i = 0; i < n; i++) {
		zsm_assert_int_eq(g[i].gpu, -1);
		zsm_assert_int_eq(g[i].n, 1);
		zsm_assert_int_eq(g[i].nics[0], i);
	}
	tree_free(t);
}

static void test_pci_near_classes(void **state)
{
	struct tree *t = tree_build("p5");
	int shared = -1;

	(void)state;
	/* NIC 0 and GPU 0: host bridge, root port, switch upstream port. */
	zsm_assert_int_eq(zsm_pci_near(&t->nics[0], &t->gpus[0], &shared),
			  ZSM_PCI_SWITCH);
	zsm_assert_int_eq(shared, 3);
	zsm_assert_int_eq(zsm_pci_near(&t->nics[0], &t->gpus[1], &shared),
			  ZSM_PCI_NUMA);
	zsm_assert_int_eq(shared, 0);
	zsm_assert_int_eq(zsm_pci_near(&t->nics[0], &t->gpus[4], &shared),
			  ZSM_PCI_FAR);
	/* A device is never its own bridge: a NIC against itself shares all
	 * but its own name. */
	zsm_assert_int_eq(zsm_pci_near(&t->nics[0], &t->nics[0], &shared),
			  ZSM_PCI_SWITCH);
	zsm_assert_int_eq(shared, t->nics[0].depth - 1);
	tree_free(t);
}

static void test_pci_dev_read_chain(void **state)
{
	struct tree *t = tree_build("p5");
	struct zsm_pci_dev d;
	char dir[PATH_MAX], link[PATH_MAX];

	(void)state;
	zsm_assert_int_eq(t->nics[0].depth, 5);
	assert_string_equal(t->nics[0].chain[0], "pci0000:10");
	assert_string_equal(t->nics[0].chain[3], "0000:12:01.0");
	assert_string_equal(zsm_pci_dev_name(&t->nics[0]), "0000:14:00.0");
	zsm_assert_int_eq(t->nics[31].numa, 1);
	/* A network interface's link, through folders that are not PCI. */
	fmt(dir, "%s/sys/devices/pci0000:10/0000:10:01.0/0000:11:00.0/"
		 "0000:12:01.0/0000:14:00.0/net/eth3",
		 t->root);
	mkdirs(dir);
	fmt(link, "%s/sys/class/net", t->root);
	mkdirs(link);
	fmt(link, "%s/sys/class/net/eth3", t->root);
	assert_int_equal(symlink("../../devices/pci0000:10/0000:10:01.0/"
				 "0000:11:00.0/0000:12:01.0/0000:14:00.0/net/"
				 "eth3",
				 link),
			 0);
	zsm_assert_int_eq(zsm_pci_dev_read(t->root, "/sys/class/net/eth3", &d),
			  0);
	zsm_assert_int_eq(d.depth, 5);
	assert_string_equal(zsm_pci_dev_name(&d), "0000:14:00.0");
	zsm_assert_int_eq(d.numa, 0);
	tree_free(t);
}

static void test_pci_dev_read_refuses(void **state)
{
	struct tree *t = tree_build("gh200");
	struct zsm_pci_dev d;
	char dir[PATH_MAX];
	size_t at;

	(void)state;
	zsm_assert_int_eq(zsm_pci_dev_read(t->root, "/sys/devices/nothing",
					   &d),
			  -ENOENT);
	fmt(dir, "%s/sys/devices/virtual/net/lo", t->root);
	mkdirs(dir);
	zsm_assert_int_eq(zsm_pci_dev_read(t->root,
					   "/sys/devices/virtual/net/lo", &d),
			  -EINVAL);
	/* Outside the root's /sys/devices. */
	zsm_assert_int_eq(zsm_pci_dev_read(t->root, "/sys/bus", &d), -EINVAL);
	/* A host bridge and 12 bridges below it: deeper than the chain. */
	fmt(dir, "%s/sys/devices/pci0001:00", t->root);
	at = strlen(dir);
	for (int i = 0; i < ZSM_PCI_DEPTH; i++)
		at += (size_t)snprintf(dir + at, sizeof(dir) - at,
				       "/0001:%02x:00.0", i);
	mkdirs(dir);
	zsm_assert_int_eq(zsm_pci_dev_read(t->root, dir + strlen(t->root), &d),
			  -E2BIG);
	tree_free(t);
}

static void test_pci_gpus_bus_order_and_room(void **state)
{
	struct tree *t = tree_build("p5");
	struct zsm_pci_dev few[4];
	int n = 0;

	(void)state;
	for (int i = 1; i < t->ngpus; i++)
		assert_true(strcmp(zsm_pci_dev_name(&t->gpus[i - 1]),
				   zsm_pci_dev_name(&t->gpus[i])) < 0);
	assert_string_equal(zsm_pci_dev_name(&t->gpus[0]), "0000:13:00.0");
	zsm_assert_int_eq(zsm_pci_gpus(t->root, few, 4, &n), -E2BIG);
	zsm_assert_int_eq(n, 8);
	zsm_assert_int_eq(zsm_pci_gpus("/nonexistent-zsm-root", few, 4, &n),
			  -ENOENT);
	zsm_assert_int_eq(n, 0);
	tree_free(t);
}

static void test_pci_group_bad_arguments(void **state)
{
	struct zsm_pci_group g[1];
	struct zsm_pci_dev d = {0};
	int n = -1;

	(void)state;
	zsm_assert_int_eq(zsm_pci_group(&d, 1, NULL, 0, 0, g, &n), -EINVAL);
	zsm_assert_int_eq(n, 0);
	zsm_assert_int_eq(zsm_pci_group(&d, 1, NULL, 0, ZSM_PCI_GROUP_MAX + 1,
					g, &n),
			  -EINVAL);
	zsm_assert_int_eq(zsm_pci_group(&d, -1, NULL, 0, 1, g, &n), -EINVAL);
	zsm_assert_int_eq(zsm_pci_group(&d, 0, NULL, 0, 1, g, &n), 0);
	zsm_assert_int_eq(n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pci_p5_four_nics_per_gpu),
		cmocka_unit_test(test_pci_p5_max_splits_groups),
		cmocka_unit_test(test_pci_p5en_splits_a_switch_between_its_gpus),
		cmocka_unit_test(test_pci_gh200_one_nic_per_gpu),
		cmocka_unit_test(test_pci_numa_nodes_never_fused),
		cmocka_unit_test(test_pci_no_gpu_leaves_each_nic_alone),
		cmocka_unit_test(test_pci_near_classes),
		cmocka_unit_test(test_pci_dev_read_chain),
		cmocka_unit_test(test_pci_dev_read_refuses),
		cmocka_unit_test(test_pci_gpus_bus_order_and_room),
		cmocka_unit_test(test_pci_group_bad_arguments),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
