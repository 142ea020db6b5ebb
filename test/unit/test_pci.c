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
#include "zsm_test.h"

#ifndef ZSM_TEST_PCI_DIR
#error "ZSM_TEST_PCI_DIR names the recorded trees"
#endif

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
__attribute__((format(printf, 2, 3))) static void fmt(char *buf,
						     const char *f, ...)
{
	va_list ap;
	int n;

	va_start(ap, f);
	n = vsnprintf(buf, PATH_MAX, f, ap);
	va_end(ap);
	assert_true(n >= 0 && n < PATH_MAX);
}

static void mkdirs(const char *path)
{
	char p[PATH_MAX];

	fmt(p, "%s", path);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0755);
			*s = '/';
		}
	mkdir(p, 0755);
}

static void put_file(const char *dir, const char *name, const char *text)
{
	char p[PATH_MAX];
	FILE *f;

	fmt(p, "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", text);
	fclose(f);
}

/* A device as sysfs has it: its folder with vendor, class and numa_node,
 * and its bus id's link in /sys/bus/pci/devices. */
static void add_dev(const char *root, const char *path, const char *vendor,
		    const char *class, const char *numa)
{
	char dir[PATH_MAX], link[PATH_MAX], target[PATH_MAX];
	const char *id = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;

	fmt(dir, "%s/sys/devices/%s", root, path);
	mkdirs(dir);
	put_file(dir, "vendor", vendor);
	put_file(dir, "class", class);
	put_file(dir, "numa_node", numa);
	fmt(link, "%s/sys/bus/pci/devices", root);
	mkdirs(link);
	fmt(link, "%s/sys/bus/pci/devices/%s", root, id);
	fmt(target, "../../../devices/%s", path);
	assert_int_equal(symlink(target, link), 0);
}

static struct tree *tree_build(const char *name)
{
	struct tree *t = calloc(1, sizeof(*t));
	char file[PATH_MAX], line[512];
	FILE *f;

	assert_non_null(t);
	snprintf(t->root, sizeof(t->root), "/tmp/zsm-pci-XXXXXX");
	assert_non_null(mkdtemp(t->root));
	fmt(file, "%s/%s.tree", ZSM_TEST_PCI_DIR, name);
	f = fopen(file, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char path[400], vendor[16], class[16], numa[16], link[PATH_MAX];

		if (sscanf(line, "dev %399s %15s %15s %15s", path, vendor,
			   class, numa) != 4)
			continue;
		add_dev(t->root, path, vendor, class, numa);
		if (strncmp(class, "0x02", 4) != 0)
			continue;
		assert_true(t->nnics < MAX_DEVS);
		fmt(link, "/sys/bus/pci/devices/%s",
			 strrchr(path, '/') + 1);
		zsm_assert_int_eq(zsm_pci_dev_read(t->root, link,
						   &t->nics[t->nnics]),
				  0);
		t->nnics++;
	}
	fclose(f);
	zsm_assert_int_eq(zsm_pci_gpus(t->root, t->gpus, MAX_DEVS, &t->ngpus),
			  0);
	return t;
}

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *w)
{
	(void)st;
	(void)flag;
	(void)w;
	return remove(p);
}

static void tree_free(struct tree *t)
{
	nftw(t->root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(t);
}

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
