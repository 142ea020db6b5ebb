/* SPDX-License-Identifier: MIT */
/* Owns the bridge from zsm's log sink to the logger NCCL gives init. */
#include <stdatomic.h>

#include "abi/shim.h"

/*
 * NCCL's logger, for the sink below.  Each init stores it before the
 * core takes the sink, while other threads may be logging; it is never
 * cleared (NCCL's logger lives as long as NCCL, which outlives us).
 */
static _Atomic(ncclDebugLogger_t) zsm_abi_nccl_logger;

static void zsm_abi_log_sink(int level, const char *file, int line,
			     const char *msg)
{
	/* relaxed: a pointer to code, nothing else is published with it. */
	ncclDebugLogger_t logger =
		atomic_load_explicit(&zsm_abi_nccl_logger, memory_order_relaxed);
	int nl = level == ZSM_LOG_WARN	 ? NCCL_LOG_WARN
		 : level == ZSM_LOG_INFO ? NCCL_LOG_INFO
					 : NCCL_LOG_TRACE;

	if (logger)
		logger(nl, NCCL_NET | NCCL_INIT, file, line, "NET/zsm: %s",
		       msg);
}

zsm_log_sink_fn zsm_abi_log_sink_for(ncclDebugLogger_t logger)
{
	if (!logger)
		return NULL;
	/* relaxed: as the load above. */
	atomic_store_explicit(&zsm_abi_nccl_logger, logger,
			      memory_order_relaxed);
	return zsm_abi_log_sink;
}
