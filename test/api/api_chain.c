/* SPDX-License-Identifier: MIT */
/*
 * chain: --iters put_signal calls of 8 bytes from rank 0 to rank 1, which
 * waits for them all and checks the last byte: the traffic that
 * test/api/put-chain.sh runs rank 0 under gdb for, to read the call stack
 * of each write the puts make.
 */
#include "api_ranks.h"

int api_chain_run(zsm_comm_t comm)
{
	int n = api_opt.iters > 0 ? api_opt.iters : 20, ret = 0;
	unsigned char *buf = api_alloc(4096);
	zsm_window_t win;

	if (api_opt.nranks != 2)
		API_FAIL("chain takes 2 ranks");
	if (!buf || zsm_comm_window_register(comm, buf, 4096, &win, 0))
		API_FAIL("window");
	for (int i = 0; !ret && i < n && api_rank == 0; i++) {
		buf[i] = (unsigned char)(i + 1);
		ret = zsm_put_signal(buf + i, 8, zsm_uint8, 1, win,
				     1024 + (size_t)i, 0, 0, 0, comm, NULL);
	}
	if (!ret && api_rank == 1) {
		zsm_wait_signal_desc_t d = {.op_cnt = n, .peer = 0, .ctx = 0};

		ret = zsm_wait_signal(1, &d, comm, NULL);
		if (!ret && buf[1024 + n - 1] != (unsigned char)n)
			API_FAIL("the last put's byte is %u, not %d",
				 buf[1024 + n - 1], n);
	}
	if (ret)
		API_FAIL("%s", zsm_strerror(ret));
	if (zsm_comm_window_deregister(comm, win))
		API_FAIL("deregister");
	return 0;
}
