/* SPDX-License-Identifier: MIT */
/* ZSM_NET_DUPLEX: which devices get a second endpoint and pump threads;
 * ZSM_NET_TX_PUMPS: how many pump the sending one. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "common/param.h"
#include "net/net.h"
#include "zsm_test.h"

static const char *duplex_value, *pumps_value;
static char why[96]; /* the last plan's reason */
static int tx_pumps; /* the last plan's sending pumps */

static const char *fake_getenv(const char *name)
{
	if (strcmp(name, "ZSM_NET_TX_PUMPS") == 0)
		return pumps_value;
	return strcmp(name, "ZSM_NET_DUPLEX") == 0 ? duplex_value : NULL;
}

/* Whether a device of provider prov is duplex with ZSM_NET_DUPLEX=value
 * (NULL: unset). */
static int plan(const char *value, const char *prov)
{
	struct fi_fabric_attr fabric = {.prov_name = (char *)prov};
	struct fi_info info = {.fabric_attr = &fabric};
	struct zsm_net_dev dev;

	memset(&dev, 0, sizeof(dev));
	strcpy(dev.name, "lo");
	dev.info = &info;
	duplex_value = value;
	zsm_assert_int_eq(zsm_param_load(fake_getenv), 0);
	zsm_net_dev_plan_duplex(&dev);
	strcpy(why, dev.duplex_why);
	tx_pumps = dev.tx_pumps;
	return dev.duplex;
}

/* Run on one CPU, as a small machine or a pinned rank. */
static void pin_to_one_cpu(void)
{
	cpu_set_t set;
	int cpu = sched_getcpu();

	CPU_ZERO(&set);
	CPU_SET(cpu >= 0 ? cpu : 0, &set);
	zsm_assert_int_eq(sched_setaffinity(0, sizeof(set), &set), 0);
}

static void test_net_duplex_forced_on_any_provider(void **state)
{
	(void)state;
	pin_to_one_cpu();
	assert_true(plan("1", "tcp;ofi_rxm"));
	assert_true(plan("1", "efa"));
}

static void test_net_duplex_off_when_asked(void **state)
{
	(void)state;
	assert_false(plan("0", "tcp;ofi_rxm"));
	assert_string_equal(why, "off (ZSM_NET_DUPLEX=0)");
}

static void test_net_duplex_auto_leaves_nics_alone(void **state)
{
	/* A NIC moves the bytes itself: a pump only takes a core. */
	(void)state;
	assert_false(plan(NULL, "efa"));
	assert_non_null(strstr(why, "efa moves bytes without"));
	assert_false(plan("auto", "cxi"));
	assert_false(plan(NULL, "verbs;ofi_rxm"));
}

static void test_net_duplex_auto_wants_cpus_for_tcp(void **state)
{
	(void)state;
	/* More than 4 CPUs: on (only where this machine has them). */
	if (zsm_proxy_cpus() > 4)
		assert_true(plan(NULL, "tcp;ofi_rxm"));
	pin_to_one_cpu();
	assert_false(plan(NULL, "tcp;ofi_rxm"));
	assert_string_equal(why, "off: 1 CPUs, 4 or fewer (auto)");
	assert_false(plan("auto", "tcp;ofi_rxm"));
}

static void test_net_duplex_tx_pumps_auto_wants_cpus(void **state)
{
	cpu_set_t all;

	(void)state;
	zsm_assert_int_eq(sched_getaffinity(0, sizeof(all), &all), 0);
	pumps_value = NULL;
	/* More than 8 CPUs: a second one (only where this machine has
	 * them). */
	if (zsm_proxy_cpus() > 8) {
		assert_true(plan("1", "tcp;ofi_rxm"));
		assert_int_equal(tx_pumps, 2);
	}
	pin_to_one_cpu();
	assert_true(plan("1", "tcp;ofi_rxm"));
	assert_int_equal(tx_pumps, 1);
	assert_string_equal(why, "on (ZSM_NET_DUPLEX=1); 1 sending pump "
				 "(auto)");
	/* The next tests count this machine's CPUs again. */
	zsm_assert_int_eq(sched_setaffinity(0, sizeof(all), &all), 0);
}

static void test_net_duplex_tx_pumps_as_asked(void **state)
{
	(void)state;
	pin_to_one_cpu();
	pumps_value = "3";
	assert_true(plan("1", "tcp;ofi_rxm"));
	assert_int_equal(tx_pumps, 3);
	assert_string_equal(why, "on (ZSM_NET_DUPLEX=1); 3 sending pumps "
				 "(ZSM_NET_TX_PUMPS)");
	/* Off: the count is kept, and not said. */
	assert_false(plan("0", "tcp;ofi_rxm"));
	assert_string_equal(why, "off (ZSM_NET_DUPLEX=0)");
	/* Out of range: the load refuses it, naming the variable. */
	duplex_value = NULL;
	pumps_value = "0";
	assert_int_not_equal(zsm_param_load(fake_getenv), 0);
	pumps_value = "5";
	assert_int_not_equal(zsm_param_load(fake_getenv), 0);
	pumps_value = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* First: the last two pin this thread to one CPU for good. */
		cmocka_unit_test(test_net_duplex_tx_pumps_auto_wants_cpus),
		cmocka_unit_test(test_net_duplex_off_when_asked),
		cmocka_unit_test(test_net_duplex_auto_leaves_nics_alone),
		cmocka_unit_test(test_net_duplex_auto_wants_cpus_for_tcp),
		cmocka_unit_test(test_net_duplex_forced_on_any_provider),
		cmocka_unit_test(test_net_duplex_tx_pumps_as_asked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
