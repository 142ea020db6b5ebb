/* SPDX-License-Identifier: MIT */
/* For unit tests that check what the plugin WARNs: NCCL's logger, faked. */
#ifndef ZSM_TEST_LOG_CAPTURE_H
#define ZSM_TEST_LOG_CAPTURE_H

/* Every WARN since the last zsm_log_capture_start, one per line. */
extern char zsm_log_captured[4096];

/* Route the plugin's log through the capture and empty it. */
void zsm_log_capture_start(void);
/* Back to stderr. */
void zsm_log_capture_stop(void);

#endif
