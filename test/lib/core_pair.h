/* SPDX-License-Identifier: MIT */
/*
 * The two ends of a comm over the core's API (entry/entry.h), for tests
 * linked with the core: connect and accept return no comm until the
 * handshake is done, so each is called again until one comes.  Only a
 * test that links the core may call these.
 */
#ifndef ZSM_TEST_CORE_PAIR_H
#define ZSM_TEST_CORE_PAIR_H

/* Connect to handle on device 0 until a send comm comes: 0, or the
 * error (said with oob_fail). */
int core_pair_connect(void *ctx, void *handle, void **send_comm);
/* Accept on listen_comm until a receive comm comes: 0, or the error. */
int core_pair_accept(void *listen_comm, void **recv_comm);

#endif
