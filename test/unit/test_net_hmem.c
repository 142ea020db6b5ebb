/* SPDX-License-Identifier: MIT */
/*
 * The GPUDirect decision per network device: GPU buffers only where the
 * provider offers FI_HMEM, a driver is there, the GPUs need no flush and
 * the user did not say no; every refusal says why.
 */
#include <string.h>

#include "abi/nccl_net.h"
#include "net/net_hmem.h"
#include "zsm_test.h"

static struct zsm_net_hmem_in everything(void)
{
	return (struct zsm_net_hmem_in){
		.prov = "efa",
		.prov_hmem = 1,
		.cuda = 1,
		.min_cc = 90,
		.gdr_param = 1,
	};
}

static void assert_host_only(const struct zsm_net_hmem_in *in,
			     const char *reason)
{
	struct zsm_net_hmem_plan plan;

	memset(&plan, 0xa5, sizeof(plan));
	zsm_net_hmem_decide(in, &plan);
	zsm_assert_int_eq(plan.ptr_support, NCCL_PTR_HOST);
	zsm_assert_int_eq(plan.reg, ZSM_HMEM_REG_NONE);
	if (!strstr(plan.why, reason))
		fail_msg("reason '%s' lacks '%s'", plan.why, reason);
}

static void test_net_hmem_takes_gpu_buffers_when_all_agree(void **state)
{
	struct zsm_net_hmem_in in = everything();
	struct zsm_net_hmem_plan plan;

	(void)state;
	zsm_net_hmem_decide(&in, &plan);
	zsm_assert_int_eq(plan.ptr_support, NCCL_PTR_HOST | NCCL_PTR_CUDA);
	zsm_assert_int_eq(plan.reg, ZSM_HMEM_REG_CUDA);
	/* dma-buf is not offered: no registration path takes one yet. */
	zsm_assert_int_eq(plan.ptr_support & NCCL_PTR_DMABUF, 0);
	assert_non_null(strstr(plan.why, "efa"));
	/* Blackwell too. */
	in.min_cc = 100;
	zsm_net_hmem_decide(&in, &plan);
	zsm_assert_int_eq(plan.reg, ZSM_HMEM_REG_CUDA);
}

static void test_net_hmem_user_off_wins(void **state)
{
	struct zsm_net_hmem_in in = everything();

	(void)state;
	in.gdr_param = 0;
	assert_host_only(&in, "ZSM_GDR=0");
}

static void test_net_hmem_needs_a_driver(void **state)
{
	struct zsm_net_hmem_in in = everything();

	(void)state;
	in.cuda = 0;
	in.min_cc = 0;
	assert_host_only(&in, "no CUDA driver");
}

static void test_net_hmem_needs_provider_hmem(void **state)
{
	struct zsm_net_hmem_in in = everything();

	(void)state;
	in.prov = "tcp;ofi_rxm";
	in.prov_hmem = 0;
	assert_host_only(&in, "tcp;ofi_rxm offers no FI_HMEM");
}

/* FI_HMEM from a provider that copies through host memory is no
 * GPUDirect; the RDMA providers all count. */
static void test_net_hmem_wants_an_rdma_provider(void **state)
{
	struct zsm_net_hmem_in in = everything();
	struct zsm_net_hmem_plan plan;

	(void)state;
	in.prov = "tcp;ofi_rxm";
	assert_host_only(&in, "not as GPUDirect RDMA");
	in.prov = "shm";
	assert_host_only(&in, "not as GPUDirect RDMA");
	in.prov = "cxi";
	zsm_net_hmem_decide(&in, &plan);
	zsm_assert_int_eq(plan.reg, ZSM_HMEM_REG_CUDA);
	in.prov = "verbs;ofi_rxm";
	zsm_net_hmem_decide(&in, &plan);
	zsm_assert_int_eq(plan.reg, ZSM_HMEM_REG_CUDA);
}

/* Before Hopper every GPUDirect receive needs a flush zsm cannot do. */
static void test_net_hmem_refuses_gpus_that_need_a_flush(void **state)
{
	struct zsm_net_hmem_in in = everything();

	(void)state;
	in.min_cc = 80;
	assert_host_only(&in, "compute capability 8.0 needs a flush");
	/* Unknown capability counts as old. */
	in.min_cc = 0;
	assert_host_only(&in, "compute capability is unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_net_hmem_takes_gpu_buffers_when_all_agree),
		cmocka_unit_test(test_net_hmem_user_off_wins),
		cmocka_unit_test(test_net_hmem_needs_a_driver),
		cmocka_unit_test(test_net_hmem_needs_provider_hmem),
		cmocka_unit_test(test_net_hmem_wants_an_rdma_provider),
		cmocka_unit_test(test_net_hmem_refuses_gpus_that_need_a_flush),
	};

	return cmocka_run_group_tests_name("net_hmem", tests, NULL, NULL);
}
