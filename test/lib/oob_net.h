/* SPDX-License-Identifier: MIT */
/*
 * Inside the harness: the pieces of a run across hosts that oob.c needs.
 * Users see only oob.h.
 */
#ifndef ZSM_TEST_OOB_NET_H
#define ZSM_TEST_OOB_NET_H

#include <stddef.h>

/* Whether oob_join succeeded; then the pair rank (0 even, 1 odd). */
int oob_net_joined(void);
int oob_net_pair_rank(void);
/* The partner's global rank, for messages. */
int oob_net_partner(void);
/* The stream between this rank's and its partner's main processes. */
int oob_net_ctl_fd(void);

/*
 * A fresh TCP stream to the partner for one check, so a check that dies
 * mid-message leaves nothing behind for the next.  The even rank accepts,
 * the odd one connects.  The fd or -1 (reason on stderr).
 */
int oob_net_data_open(unsigned timeout_s);

/* Whole-buffer I/O on any stream; deadline_ms < 0 waits forever. */
int oob_net_send_all(int fd, const void *buf, size_t len);
int oob_net_recv_all(int fd, void *buf, size_t len, int deadline_ms);

/* Close every socket of the run in a forked child that runs one check. */
void oob_net_close_in_child(int keep_fd);

#endif
