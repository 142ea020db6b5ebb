/* SPDX-License-Identifier: MIT */
/* Owns the captured WARN text of the unit tests that check messages. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "log_capture.h"

char zsm_log_captured[4096];

static void zsm_log_capture_logger(int level, unsigned long flags,
				   const char *file, int line,
				   const char *fmt, ...)
{
	size_t used = strlen(zsm_log_captured);
	va_list ap;

	(void)flags;
	(void)file;
	(void)line;
	if (level != NCCL_LOG_WARN || used + 2 >= sizeof(zsm_log_captured))
		return;
	va_start(ap, fmt);
	vsnprintf(zsm_log_captured + used,
		  sizeof(zsm_log_captured) - used - 1, fmt, ap);
	va_end(ap);
	strcat(zsm_log_captured, "\n");
}

void zsm_log_capture_start(void)
{
	zsm_log_captured[0] = '\0';
	zsm_log_set_logger(zsm_log_capture_logger);
}

void zsm_log_capture_stop(void)
{
	zsm_log_set_logger(NULL);
}
