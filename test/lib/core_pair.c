/* SPDX-License-Identifier: MIT */
/* Owns the retry loops of connect and accept over the core's API. */
#include <time.h>

#include "entry/entry.h"
#include "core_pair.h"
#include "oob.h"

static void core_pair_nap(void)
{
	struct timespec ts = {0, 20000};

	nanosleep(&ts, NULL);
}

int core_pair_connect(void *ctx, void *handle, void **send_comm)
{
	*send_comm = NULL;
	while (!*send_comm) {
		int ret = zsm_connect(ctx, 0, handle, send_comm);

		if (ret)
			return oob_fail("connect failed: %d", ret);
		if (!*send_comm)
			core_pair_nap();
	}
	return 0;
}

int core_pair_accept(void *listen_comm, void **recv_comm)
{
	*recv_comm = NULL;
	while (!*recv_comm) {
		int ret = zsm_accept(listen_comm, recv_comm);

		if (ret)
			return oob_fail("accept failed: %d", ret);
		if (!*recv_comm)
			core_pair_nap();
	}
	return 0;
}
