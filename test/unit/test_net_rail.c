/* SPDX-License-Identifier: MIT */
/*
 * Devices over several NICs (net_rail.c): which NICs ZSM_NET_GROUP folds
 * into one device, from made-up offers and from the recorded PCI trees of
 * data/pci; what the device then says (name, speed, why), which offer
 * each path opens, and how many paths a comm gets on it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/param.h"
#include "net/net.h"
#include "pci_tree.h"
#include "zsm_test.h"

static const char *group_mode, *paths_mode;

static const char *test_getenv(const char *name)
{
	if (strcmp(name, "ZSM_NET_GROUP") == 0)
		return group_mode;
	if (strcmp(name, "ZSM_NET_PATHS") == 0)
		return paths_mode;
	return NULL;
}

static void load(const char *group, const char *paths)
{
	group_mode = group;
	paths_mode = paths;
	zsm_assert_int_eq(zsm_param_load(test_getenv), 0);
}

/* A NIC as topo_add leaves it: its offer, name, speed, PCI path. */
static void add_nic(struct zsm_net_topo *t, const char *prov,
		    const char *name, uint64_t mr_mode, const char *pci)
{
	struct zsm_net_dev *d = &t->devs[t->ndevs++];

	d->info = zsm_fi_dupinfo(NULL);
	assert_non_null(d->info);
	d->info->fabric_attr->prov_name = strdup(prov);
	d->info->domain_attr->name = strdup(name);
	d->info->domain_attr->mr_mode = mr_mode;
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->speed_mbps = 100000;
	d->pci_path = pci ? strdup(pci) : NULL;
}

static int setup(void **state)
{
	(void)state;
	return zsm_fi_lib_load() ? -1 : 0;
}

static void test_rail_all_folds_every_nic_sorted(void **state)
{
	struct zsm_net_topo t = {0};

	(void)state;
	load("all", "1");
	add_nic(&t, "tcp;ofi_rxm", "eth2", 0, NULL);
	add_nic(&t, "tcp;ofi_rxm", "eth0", 0, NULL);
	add_nic(&t, "tcp;ofi_rxm", "eth1", 0, NULL);
	zsm_assert_int_eq(zsm_net_topo_group(&t), 0);
	zsm_assert_int_eq(t.ndevs, 1);
	assert_string_equal(t.devs[0].name, "eth0+eth1+eth2");
	zsm_assert_int_eq(t.devs[0].rails.n, 3);
	zsm_assert_int_eq(t.devs[0].speed_mbps, 300000);
	assert_non_null(strstr(t.devs[0].rails.why, "3 NICs"));
	/* Path p rides rail p mod 3, the names' order. */
	assert_ptr_equal(zsm_net_rail_offer(&t.devs[0], 0), t.devs[0].info);
	assert_string_equal(
		zsm_net_rail_offer(&t.devs[0], 1)->domain_attr->name, "eth1");
	assert_string_equal(
		zsm_net_rail_offer(&t.devs[0], 5)->domain_attr->name, "eth2");
	assert_string_equal(t.devs[0].info->domain_attr->name, "eth0");
	/* One path asked: one on each NIC; 4 asked: 2 each, the most 8
	 * allow. */
	zsm_net_dev_plan_paths(&t.devs[0]);
	zsm_assert_int_eq(t.devs[0].paths, 3);
	assert_non_null(strstr(t.devs[0].paths_why, "1 on each of 3 NICs"));
	load("all", "4");
	zsm_net_dev_plan_paths(&t.devs[0]);
	zsm_assert_int_eq(t.devs[0].paths, 6);
	zsm_net_topo_free(&t);
}

static void test_rail_nic_mode_leaves_each_alone(void **state)
{
	struct zsm_net_topo t = {0};

	(void)state;
	load("nic", "1");
	add_nic(&t, "tcp;ofi_rxm", "eth0", 0, NULL);
	add_nic(&t, "tcp;ofi_rxm", "eth1", 0, NULL);
	zsm_assert_int_eq(zsm_net_topo_group(&t), 0);
	zsm_assert_int_eq(t.ndevs, 2);
	for (int i = 0; i < 2; i++) {
		zsm_assert_int_eq(t.devs[i].rails.n, 1);
		assert_non_null(strstr(t.devs[i].rails.why, "nic"));
		zsm_net_dev_plan_paths(&t.devs[i]);
		zsm_assert_int_eq(t.devs[i].paths, 1);
	}
	zsm_net_topo_free(&t);
}

/* A NIC whose buffers need registering cannot take a share of a comm's
 * messages (another domain's descriptor): it stays a device, and says
 * why; the others still fold. */
static void test_rail_unfit_nics_stay_alone(void **state)
{
	struct zsm_net_topo t = {0};

	(void)state;
	load("all", "1");
	add_nic(&t, "tcp;ofi_rxm", "eth0", 0, NULL);
	add_nic(&t, "tcp;ofi_rxm", "eth1", FI_MR_LOCAL, NULL);
	add_nic(&t, "tcp;ofi_rxm", "eth2", 0, NULL);
	add_nic(&t, "udp;ofi_rxd", "eth3", 0, NULL);
	zsm_assert_int_eq(zsm_net_topo_group(&t), 0);
	zsm_assert_int_eq(t.ndevs, 3);
	assert_string_equal(t.devs[0].name, "eth0+eth2");
	assert_string_equal(t.devs[1].name, "eth1");
	assert_non_null(strstr(t.devs[1].rails.why, "registered buffers"));
	assert_string_equal(t.devs[2].name, "eth3");
	assert_non_null(strstr(t.devs[2].rails.why, "other providers"));
	zsm_net_topo_free(&t);
}

/* The recorded p5-like host: 32 NICs, 4 under each GPU's switch, become
 * 8 devices of 4, in GPU order. */
static void test_rail_gpu_p5_four_nics_a_device(void **state)
{
	struct tree *tr = tree_build("p5");
	struct zsm_net_topo t = {0};
	char path[PATH_MAX], want[160];

	(void)state;
	load("gpu", "1");
	zsm_assert_int_eq(tr->nnics, 32);
	for (int i = 0; i < tr->nnics; i++) {
		char name[32];

		/* Listed in reverse: each device keeps the place of its
		 * NIC first by name. */
		const struct zsm_pci_dev *nic = &tr->nics[tr->nnics - 1 - i];

		snprintf(name, sizeof(name), "rdmap%02d", tr->nnics - 1 - i);
		fmt(path, "/sys/bus/pci/devices/%s", zsm_pci_dev_name(nic));
		add_nic(&t, "efa", name, 0, path);
	}
	zsm_assert_int_eq(zsm_net_topo_group_at(&t, tr->root), 0);
	zsm_assert_int_eq(t.ndevs, 8);
	for (int g = 0; g < 8; g++) {
		const struct zsm_net_dev *d = &t.devs[g];

		zsm_assert_int_eq(d->rails.n, 4);
		snprintf(want, sizeof(want), "rdmap%02d+rdmap%02d+rdmap%02d+rdmap%02d",
			 28 - 4 * g, 29 - 4 * g, 30 - 4 * g, 31 - 4 * g);
		assert_string_equal(d->name, want);
		zsm_assert_int_eq(d->speed_mbps, 400000);
		assert_non_null(strstr(d->rails.why, "PCIe switch"));
	}
	zsm_net_topo_free(&t);
	tree_free(tr);
}

/* GH200-like: one NIC per GPU, so no device spans two; efa wanting
 * registered buffers keeps its NICs apart too. */
static void test_rail_gpu_gh200_and_mr_local(void **state)
{
	struct tree *tr = tree_build("gh200");
	struct zsm_net_topo t = {0};
	char path[PATH_MAX];

	(void)state;
	load("gpu", "1");
	for (int i = 0; i < tr->nnics; i++) {
		char name[32];

		snprintf(name, sizeof(name), "nic%d", i);
		fmt(path, "/sys/bus/pci/devices/%s",
		    zsm_pci_dev_name(&tr->nics[i]));
		add_nic(&t, "cxi", name, 0, path);
	}
	zsm_assert_int_eq(zsm_net_topo_group_at(&t, tr->root), 0);
	zsm_assert_int_eq(t.ndevs, tr->nnics);
	for (int i = 0; i < t.ndevs; i++)
		zsm_assert_int_eq(t.devs[i].rails.n, 1);
	zsm_net_topo_free(&t);
	tree_free(tr);

	tr = tree_build("p5");
	memset(&t, 0, sizeof(t));
	for (int i = 0; i < 4; i++) {
		fmt(path, "/sys/bus/pci/devices/%s",
		    zsm_pci_dev_name(&tr->nics[i]));
		add_nic(&t, "efa", i ? "rdmap1" : "rdmap0", FI_MR_LOCAL, path);
	}
	zsm_assert_int_eq(zsm_net_topo_group_at(&t, tr->root), 0);
	zsm_assert_int_eq(t.ndevs, 4);
	assert_non_null(strstr(t.devs[1].rails.why, "registered buffers"));
	zsm_net_topo_free(&t);
	tree_free(tr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rail_all_folds_every_nic_sorted),
		cmocka_unit_test(test_rail_nic_mode_leaves_each_alone),
		cmocka_unit_test(test_rail_unfit_nics_stay_alone),
		cmocka_unit_test(test_rail_gpu_p5_four_nics_a_device),
		cmocka_unit_test(test_rail_gpu_gh200_and_mr_local),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
