/* SPDX-License-Identifier: MIT */
/* ZSM_NET_DUPLEX: which devices get a second endpoint and pump threads. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "common/param.h"
#include "net/net.h"
#include "zsm_test.h"

static const char *duplex_value;
static char why[96]; /* the last plan's reason */

static const char *fake_getenv(const char *name)
{
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_net_duplex_off_when_asked),
		cmocka_unit_test(test_net_duplex_auto_leaves_nics_alone),
		cmocka_unit_test(test_net_duplex_auto_wants_cpus_for_tcp),
		cmocka_unit_test(test_net_duplex_forced_on_any_provider),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
