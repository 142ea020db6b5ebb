/* SPDX-License-Identifier: MIT */
/*
 * Logging: to the sink the ABI edge hands over at init (NCCL's logger
 * behind it), otherwise to stderr filtered by ZSM_LOG.  Messages read
 * "what failed: cause".
 */
#ifndef ZSM_COMMON_LOG_H
#define ZSM_COMMON_LOG_H

enum zsm_log_level {
	ZSM_LOG_WARN = 1,
	ZSM_LOG_INFO = 2,
	ZSM_LOG_TRACE = 3,
};

/* Current stderr threshold; NCCL filters its own logger by NCCL_DEBUG. */
extern int zsm_log_level;

/* One formatted line (no newline) at level, from file:line.  The sink
 * does its own filtering (NCCL's by NCCL_DEBUG). */
typedef void (*zsm_log_sink_fn)(int level, const char *file, int line,
				const char *msg);

void zsm_log_set_sink(zsm_log_sink_fn sink);
void zsm_log_set_level(int level);
void zsm_log_emit(int level, const char *file, int line, const char *fmt,
		  ...) __attribute__((format(printf, 4, 5)));

/* True when a message at this level would go anywhere. */
int zsm_log_enabled(int level);

#define ZSM_LOG_AT(lvl, ...)                                                  \
	do {                                                                  \
		if (zsm_log_enabled(lvl))                                     \
			zsm_log_emit(lvl, __FILE__, __LINE__, __VA_ARGS__);   \
	} while (0)
#define ZSM_WARN(...) ZSM_LOG_AT(ZSM_LOG_WARN, __VA_ARGS__)
#define ZSM_INFO(...) ZSM_LOG_AT(ZSM_LOG_INFO, __VA_ARGS__)
#define ZSM_TRACE(...) ZSM_LOG_AT(ZSM_LOG_TRACE, __VA_ARGS__)

#endif
