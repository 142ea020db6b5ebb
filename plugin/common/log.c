/* SPDX-License-Identifier: MIT */
/* Owns where log lines go: the ABI edge's sink when given, else stderr. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "common/log.h"

int zsm_log_level = ZSM_LOG_WARN;
static zsm_log_sink_fn zsm_log_sink;

void zsm_log_set_sink(zsm_log_sink_fn sink)
{
	zsm_log_sink = sink;
}

void zsm_log_set_level(int level)
{
	zsm_log_level = level;
}

int zsm_log_enabled(int level)
{
	/* The sink does its own filtering (NCCL's by NCCL_DEBUG). */
	return zsm_log_sink != NULL || level <= zsm_log_level;
}

void zsm_log_emit(int level, const char *file, int line, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int saved = errno;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	if (zsm_log_sink) {
		zsm_log_sink(level, file, line, msg);
	} else if (level <= zsm_log_level) {
		static const char *names[] = {"", "WARN", "INFO", "TRACE"};
		fprintf(stderr, "zsm %d %s %s\n", (int)getpid(), names[level],
			msg);
	}
	errno = saved;
}
