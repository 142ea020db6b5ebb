/* SPDX-License-Identifier: MIT */
/* Owns the captured WARN text of the unit tests that check messages. */
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "log_capture.h"

char zsm_log_captured[4096];

static void zsm_log_capture_sink(int level, const char *file, int line,
				 const char *msg)
{
	size_t used = strlen(zsm_log_captured);

	(void)file;
	(void)line;
	if (level != ZSM_LOG_WARN || used + 2 >= sizeof(zsm_log_captured))
		return;
	snprintf(zsm_log_captured + used, sizeof(zsm_log_captured) - used - 1,
		 "%s", msg);
	strcat(zsm_log_captured, "\n");
}

void zsm_log_capture_start(void)
{
	zsm_log_captured[0] = '\0';
	zsm_log_set_sink(zsm_log_capture_sink);
}

void zsm_log_capture_stop(void)
{
	zsm_log_set_sink(NULL);
}
