/* SPDX-License-Identifier: MIT */
/*
 * The choice of signal mechanism per network device (net_rma_plan.h):
 * the best one that what libfabric granted can build, never a name; a
 * writedata choice waits for its probe; a forced choice the provider
 * cannot build is refused with the reason.
 */
#include <string.h>

#include "net/net_rma_plan.h"
#include "zsm_test.h"

/* What each provider of the reference's matrix grants. */
static struct zsm_net_rma_in cxi_like(void)
{
	/* Hardware AMOs ordered with writes, FI_FENCE; writedata a stub
	 * (< 2.5). */
	return (struct zsm_net_rma_in){.prov = "cxi", .rma = 1,
				       .atomic_ordered = 1, .atomic_fence = 1,
				       .atomic_sum = 1, .saw_ordered = 0,
				       .cq_data_size = 8, .writedata = 0};
}

static struct zsm_net_rma_in efa_like(void)
{
	return (struct zsm_net_rma_in){.prov = "efa", .rma = 1,
				       .cq_data_size = 4, .writedata = -1};
}

static struct zsm_net_rma_in rxm_like(void)
{
	return (struct zsm_net_rma_in){.prov = "tcp;ofi_rxm", .rma = 1,
				       .saw_ordered = 1, .cq_data_size = 8,
				       .writedata = -1};
}

static void decide(const struct zsm_net_rma_in *in,
		   struct zsm_net_rma_plan *plan)
{
	memset(plan, 0xa5, sizeof(*plan));
	zsm_net_rma_decide(in, plan);
}

static void assert_why(const struct zsm_net_rma_plan *plan, const char *s)
{
	if (!strstr(plan->why, s))
		fail_msg("reason '%s' lacks '%s'", plan->why, s);
}

static void test_net_rma_plan_picks_from_grants(void **state)
{
	struct zsm_net_rma_in in;
	struct zsm_net_rma_plan plan;

	(void)state;
	in = cxi_like();
	decide(&in, &plan);
	zsm_assert_int_eq(plan.mech, ZSM_RMA_MECH_ATOMIC);
	zsm_assert_int_eq(plan.needs_probe, 0);
	zsm_assert_int_eq(plan.refused, 0);
	assert_why(&plan, "atomic");
	assert_why(&plan, "cxi");

	in = rxm_like();
	decide(&in, &plan);
	zsm_assert_int_eq(plan.mech, ZSM_RMA_MECH_SAW);
	zsm_assert_int_eq(plan.needs_probe, 0);

	/* The same grants under another name: the same choice. */
	in.prov = "anything";
	decide(&in, &plan);
	zsm_assert_int_eq(plan.mech, ZSM_RMA_MECH_SAW);

	/* An rxm offer whose ordering went (FI_ATOMIC asked, or several
	 * message endpoints): sequence numbers in CQ data instead. */
	in.saw_ordered = 0;
	decide(&in, &plan);
	zsm_assert_int_eq(plan.mech, ZSM_RMA_MECH_WRITEDATA);
	zsm_assert_int_eq(plan.needs_probe, 1);
}

static void test_net_rma_plan_writedata_waits_for_its_probe(void **state)
{
	struct zsm_net_rma_in in = efa_like();
	struct zsm_net_rma_plan plan;

	(void)state;
	decide(&in, &plan);
	zsm_assert_int_eq(plan.mech, ZSM_RMA_MECH_WRITEDATA);
	zsm_assert_int_eq(plan.needs_probe, 1);
	in.writedata = 1;
	decide(&in, &plan);
	zsm_assert_int_eq(plan.mech, ZSM_RMA_MECH_WRITEDATA);
	zsm_assert_int_eq(plan.needs_probe, 0);
	/* A stub: the completion fence is what is left. */
	in.writedata = 0;
	decide(&in, &plan);
	zsm_assert_int_eq(plan.mech, ZSM_RMA_MECH_FENCE);
	assert_why(&plan, "round trip");
	/* Too little CQ data for sequence numbers: likewise. */
	in = efa_like();
	in.cq_data_size = 2;
	in.writedata = 1;
	decide(&in, &plan);
	zsm_assert_int_eq(plan.mech, ZSM_RMA_MECH_FENCE);
}

static void test_net_rma_plan_no_rma_no_puts(void **state)
{
	struct zsm_net_rma_in in = rxm_like();
	struct zsm_net_rma_plan plan;

	(void)state;
	in.rma = 0;
	decide(&in, &plan);
	zsm_assert_int_eq(plan.mech, ZSM_RMA_MECH_NONE);
	zsm_assert_int_eq(plan.refused, 0);
	assert_why(&plan, "no RMA");
}

static void test_net_rma_plan_forced_choice(void **state)
{
	struct zsm_net_rma_in in = rxm_like();
	struct zsm_net_rma_plan plan;

	(void)state;
	/* What the provider can build is taken as asked. */
	in.want = ZSM_RMA_MECH_FENCE;
	decide(&in, &plan);
	zsm_assert_int_eq(plan.mech, ZSM_RMA_MECH_FENCE);
	assert_why(&plan, "ZSM_RMA_SIGNAL");
	in.want = ZSM_RMA_MECH_WRITEDATA;
	decide(&in, &plan);
	zsm_assert_int_eq(plan.mech, ZSM_RMA_MECH_WRITEDATA);
	zsm_assert_int_eq(plan.needs_probe, 1);
	/* What it cannot is refused, naming the variable and the lack. */
	in.want = ZSM_RMA_MECH_ATOMIC;
	decide(&in, &plan);
	zsm_assert_int_eq(plan.mech, ZSM_RMA_MECH_NONE);
	zsm_assert_int_eq(plan.refused, 1);
	assert_why(&plan, "ZSM_RMA_SIGNAL=atomic");
	assert_why(&plan, "FI_ATOMIC");
	in = efa_like();
	in.want = ZSM_RMA_MECH_SAW;
	decide(&in, &plan);
	zsm_assert_int_eq(plan.refused, 1);
	assert_why(&plan, "FI_ORDER_SAW");
	in = cxi_like();
	in.want = ZSM_RMA_MECH_WRITEDATA;
	decide(&in, &plan);
	zsm_assert_int_eq(plan.refused, 1);
	assert_why(&plan, "stub");
}

/* atomic needs all three: the ordering, the add itself, and the fence
 * its messages take; each lack is said, and the next mechanism taken. */
static void test_net_rma_plan_atomic_needs_sum_and_fence(void **state)
{
	struct zsm_net_rma_in in = cxi_like();
	struct zsm_net_rma_plan plan;

	(void)state;
	/* Every mechanism is built now: atomic is the choice. */
	in.unbuilt = ZSM_RMA_UNBUILT;
	decide(&in, &plan);
	zsm_assert_int_eq(plan.mech, ZSM_RMA_MECH_ATOMIC);
	assert_why(&plan, "no target CPU");
	in.atomic_sum = 0;
	decide(&in, &plan);
	zsm_assert_int_eq(plan.mech, ZSM_RMA_MECH_FENCE);
	zsm_assert_int_eq(plan.refused, 0);
	in.want = ZSM_RMA_MECH_ATOMIC;
	decide(&in, &plan);
	zsm_assert_int_eq(plan.refused, 1);
	assert_why(&plan, "FI_SUM on FI_UINT64");
	in = cxi_like();
	in.atomic_fence = 0;
	decide(&in, &plan);
	zsm_assert_int_eq(plan.mech, ZSM_RMA_MECH_FENCE);
	in.want = ZSM_RMA_MECH_ATOMIC;
	decide(&in, &plan);
	zsm_assert_int_eq(plan.refused, 1);
	assert_why(&plan, "no FI_FENCE");
	/* The add and the fence alone, without the ordering: not enough. */
	in = cxi_like();
	in.atomic_ordered = 0;
	in.want = ZSM_RMA_MECH_ATOMIC;
	decide(&in, &plan);
	zsm_assert_int_eq(plan.refused, 1);
	assert_why(&plan, "FI_ORDER_WAW");
	/* A provider granting saw as well (sockets): atomic first. */
	in = rxm_like();
	in.atomic_ordered = 1;
	in.atomic_fence = 1;
	in.atomic_sum = 1;
	decide(&in, &plan);
	zsm_assert_int_eq(plan.mech, ZSM_RMA_MECH_ATOMIC);
	zsm_assert_int_eq(plan.needs_probe, 0);
}

/* A mechanism this build lacks is passed over for the next one granted,
 * and the reason names it; asked for by name, it is refused. */
static void test_net_rma_plan_passes_over_what_is_not_built(void **state)
{
	struct zsm_net_rma_in in = cxi_like();
	struct zsm_net_rma_plan plan;

	(void)state;
	in.unbuilt = 1u << ZSM_RMA_MECH_ATOMIC;
	decide(&in, &plan);
	zsm_assert_int_eq(plan.mech, ZSM_RMA_MECH_FENCE);
	zsm_assert_int_eq(plan.refused, 0);
	assert_why(&plan, "fence");
	assert_why(&plan, "grants atomic too, which this build of zsm lacks");
	in.want = ZSM_RMA_MECH_ATOMIC;
	decide(&in, &plan);
	zsm_assert_int_eq(plan.mech, ZSM_RMA_MECH_NONE);
	zsm_assert_int_eq(plan.refused, 1);
	assert_why(&plan, "lacks it");
	/* What is built is chosen as before. */
	in = efa_like();
	in.unbuilt = 1u << ZSM_RMA_MECH_ATOMIC;
	in.writedata = 1;
	decide(&in, &plan);
	zsm_assert_int_eq(plan.mech, ZSM_RMA_MECH_WRITEDATA);
	in = rxm_like();
	in.unbuilt = 1u << ZSM_RMA_MECH_ATOMIC;
	decide(&in, &plan);
	zsm_assert_int_eq(plan.mech, ZSM_RMA_MECH_SAW);
}

static void test_net_rma_plan_names(void **state)
{
	(void)state;
	assert_string_equal(zsm_net_rma_mech_name(ZSM_RMA_MECH_NONE), "none");
	assert_string_equal(zsm_net_rma_mech_name(ZSM_RMA_MECH_ATOMIC),
			    "atomic");
	assert_string_equal(zsm_net_rma_mech_name(ZSM_RMA_MECH_SAW), "saw");
	assert_string_equal(zsm_net_rma_mech_name(ZSM_RMA_MECH_WRITEDATA),
			    "writedata");
	assert_string_equal(zsm_net_rma_mech_name(ZSM_RMA_MECH_FENCE),
			    "fence");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_net_rma_plan_picks_from_grants),
		cmocka_unit_test(
			test_net_rma_plan_writedata_waits_for_its_probe),
		cmocka_unit_test(test_net_rma_plan_no_rma_no_puts),
		cmocka_unit_test(test_net_rma_plan_forced_choice),
		cmocka_unit_test(test_net_rma_plan_atomic_needs_sum_and_fence),
		cmocka_unit_test(test_net_rma_plan_passes_over_what_is_not_built),
		cmocka_unit_test(test_net_rma_plan_names),
	};

	return cmocka_run_group_tests_name("net_rma_plan", tests, NULL, NULL);
}
