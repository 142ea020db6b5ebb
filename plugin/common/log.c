/* SPDX-License-Identifier: MIT */
/* Owns where log lines go: NCCL's logger when given, else stderr. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "common/log.h"

int zsm_log_level = ZSM_LOG_WARN;
static ncclDebugLogger_t zsm_log_logger;

void zsm_log_set_logger(ncclDebugLogger_t logger)
{
	zsm_log_logger = logger;
}

void zsm_log_set_level(int level)
{
	zsm_log_level = level;
}

int zsm_log_enabled(int level)
{
	/* NCCL's logger does its own filtering by NCCL_DEBUG. */
	return zsm_log_logger != NULL || level <= zsm_log_level;
}

void zsm_log_emit(int level, const char *file, int line, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int saved = errno;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	if (zsm_log_logger) {
		int nl = level == ZSM_LOG_WARN   ? NCCL_LOG_WARN
			 : level == ZSM_LOG_INFO ? NCCL_LOG_INFO
						 : NCCL_LOG_TRACE;
		zsm_log_logger(nl, NCCL_NET | NCCL_INIT, file, line,
			       "NET/zsm: %s", msg);
	} else if (level <= zsm_log_level) {
		static const char *names[] = {"", "WARN", "INFO", "TRACE"};
		fprintf(stderr, "zsm %d %s %s\n", (int)getpid(), names[level],
			msg);
	}
	errno = saved;
}
