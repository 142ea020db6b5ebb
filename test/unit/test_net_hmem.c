/* SPDX-License-Identifier: MIT */
/*
 * The GPUDirect decision per network device: GPU buffers only where the
 * provider offers FI_HMEM, a driver is there, the GPUs need no flush or
 * the provider can flush with an RMA read, and the user did not say no;
 * dma-bufs where libfabric and every GPU take them; every refusal says why.
 */
#include <string.h>

#include "entry/entry.h"
#include "net/net_fi_abi.h"
#include "net/net_hmem.h"
#include "zsm_test.h"

static struct zsm_net_hmem_in everything(void)
{
	return (struct zsm_net_hmem_in){
		.prov = "efa",
		.prov_hmem = 1,
		.prov_read = 1,
		.fi_api = FI_VERSION(1, 22),
		.cuda = 1,
		.min_cc = 90,
		.cuda_dmabuf = 1,
		.gdr_param = 1,
		.dmabuf_param = 1,
		.flush_param = ZSM_FLUSH_PARAM_AUTO,
	};
}

static void assert_host_only(const struct zsm_net_hmem_in *in,
			     const char *reason)
{
	struct zsm_net_hmem_plan plan;

	memset(&plan, 0xa5, sizeof(plan));
	zsm_net_hmem_decide(in, &plan);
	zsm_assert_int_eq(plan.ptr_support, ZSM_MEM_HOST);
	zsm_assert_int_eq(plan.reg, ZSM_HMEM_REG_NONE);
	zsm_assert_int_eq(plan.flush_gpu, 0);
	if (!strstr(plan.why, reason))
		fail_msg("reason '%s' lacks '%s'", plan.why, reason);
}

static void test_net_hmem_takes_gpu_buffers_when_all_agree(void **state)
{
	struct zsm_net_hmem_in in = everything();
	struct zsm_net_hmem_plan plan;

	(void)state;
	zsm_net_hmem_decide(&in, &plan);
	zsm_assert_int_eq(plan.ptr_support,
			  ZSM_MEM_HOST | ZSM_MEM_CUDA | ZSM_MEM_DMABUF);
	zsm_assert_int_eq(plan.reg, ZSM_HMEM_REG_DMABUF);
	/* NCCL asks for flushes on Hopper only when forced: have one. */
	zsm_assert_int_eq(plan.flush_gpu, 1);
	zsm_assert_int_eq(plan.flush_host, 0);
	assert_non_null(strstr(plan.why, "efa"));
	assert_non_null(strstr(plan.why, "dma-bufs"));
	/* Blackwell too. */
	in.min_cc = 100;
	zsm_net_hmem_decide(&in, &plan);
	zsm_assert_int_eq(plan.reg, ZSM_HMEM_REG_DMABUF);
}

/* Each missing piece of dma-buf falls back to CUDA registrations, and
 * says which piece it was. */
static void test_net_hmem_dmabuf_needs_all_three(void **state)
{
	/* In the order the loop below spoils them. */
	static const char *const why[] = {
		"ZSM_DMABUF=0",
		"libfabric 1.17 is older than 1.20",
		"cannot export dma-bufs",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(why) / sizeof(why[0]); i++) {
		struct zsm_net_hmem_in in = everything();
		struct zsm_net_hmem_plan plan;

		if (i == 0)
			in.dmabuf_param = 0;
		else if (i == 1)
			in.fi_api = FI_VERSION(1, 17);
		else
			in.cuda_dmabuf = 0;
		zsm_net_hmem_decide(&in, &plan);
		zsm_assert_int_eq(plan.ptr_support,
				  ZSM_MEM_HOST | ZSM_MEM_CUDA);
		zsm_assert_int_eq(plan.reg, ZSM_HMEM_REG_CUDA);
		if (!strstr(plan.why, why[i]))
			fail_msg("case %zu: '%s' lacks '%s'", i, plan.why,
				 why[i]);
	}
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
	zsm_assert_int_eq(plan.reg, ZSM_HMEM_REG_DMABUF);
	in.prov = "verbs;ofi_rxm";
	zsm_net_hmem_decide(&in, &plan);
	zsm_assert_int_eq(plan.reg, ZSM_HMEM_REG_DMABUF);
}

/* Before Hopper every GPUDirect receive needs a flush: an RMA read when
 * the provider has one, else no GPU buffers. */
static void test_net_hmem_old_gpus_need_a_read(void **state)
{
	struct zsm_net_hmem_in in = everything();
	struct zsm_net_hmem_plan plan;

	(void)state;
	in.min_cc = 80;
	zsm_net_hmem_decide(&in, &plan);
	zsm_assert_int_eq(plan.reg, ZSM_HMEM_REG_DMABUF);
	zsm_assert_int_eq(plan.flush_gpu, 1);
	assert_non_null(strstr(plan.why, "loopback RMA read"));
	in.prov_read = 0;
	assert_host_only(&in, "compute capability 8.0 needs a flush");
	/* Unknown capability counts as old. */
	in.min_cc = 0;
	assert_host_only(&in, "compute capability is unknown");
	/* Hopper with no reads: GPU buffers, and no flush. */
	in.min_cc = 90;
	zsm_net_hmem_decide(&in, &plan);
	zsm_assert_int_eq(plan.reg, ZSM_HMEM_REG_DMABUF);
	zsm_assert_int_eq(plan.flush_gpu, 0);
	assert_non_null(strstr(plan.why, "no flush needed"));
}

/* never: the user vouches for the platform's ordering; always: host
 * buffers are read back too, wherever reads exist. */
static void test_net_hmem_flush_param(void **state)
{
	struct zsm_net_hmem_in in = everything();
	struct zsm_net_hmem_plan plan;

	(void)state;
	in.min_cc = 80;
	in.prov_read = 0;
	in.flush_param = ZSM_FLUSH_PARAM_NEVER;
	zsm_net_hmem_decide(&in, &plan);
	zsm_assert_int_eq(plan.reg, ZSM_HMEM_REG_DMABUF);
	zsm_assert_int_eq(plan.flush_gpu, 0);
	assert_non_null(strstr(plan.why, "ZSM_GDR_FLUSH=never"));

	in = everything();
	in.flush_param = ZSM_FLUSH_PARAM_ALWAYS;
	zsm_net_hmem_decide(&in, &plan);
	zsm_assert_int_eq(plan.flush_gpu, 1);
	zsm_assert_int_eq(plan.flush_host, 1);
	/* A host-only device still reads back when forced... */
	in.prov = "tcp;ofi_rxm";
	in.prov_hmem = 0;
	assert_host_only(&in, "ZSM_GDR_FLUSH=always");
	zsm_net_hmem_decide(&in, &plan);
	zsm_assert_int_eq(plan.flush_host, 1);
	/* ...but not without reads, and not by default. */
	in.prov_read = 0;
	zsm_net_hmem_decide(&in, &plan);
	zsm_assert_int_eq(plan.flush_host, 0);
	in.prov_read = 1;
	in.flush_param = ZSM_FLUSH_PARAM_AUTO;
	zsm_net_hmem_decide(&in, &plan);
	zsm_assert_int_eq(plan.flush_host, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_net_hmem_takes_gpu_buffers_when_all_agree),
		cmocka_unit_test(test_net_hmem_user_off_wins),
		cmocka_unit_test(test_net_hmem_needs_a_driver),
		cmocka_unit_test(test_net_hmem_needs_provider_hmem),
		cmocka_unit_test(test_net_hmem_wants_an_rdma_provider),
		cmocka_unit_test(test_net_hmem_dmabuf_needs_all_three),
		cmocka_unit_test(test_net_hmem_old_gpus_need_a_read),
		cmocka_unit_test(test_net_hmem_flush_param),
	};

	return cmocka_run_group_tests_name("net_hmem", tests, NULL, NULL);
}
