/* SPDX-License-Identifier: MIT */
/*
 * Both ends of a ce channel in one process, for the ce unit tests: the
 * receiver maps the sender's window through pidfd_getfd of our own fd and
 * copies from our own pid, so the real code paths run without a second
 * process.
 */
#ifndef ZSM_TEST_CE_PAIR_H
#define ZSM_TEST_CE_PAIR_H

#include <stddef.h>

#include "ce/ce.h"
#include "ce/ce_int.h"
#include "core/transport.h"

/* The receive comm the pair's window names. */
#define PAIR_ID 77u
#define PAIR_KEY 0x1234567887654321ULL

struct pair {
	struct zsm_comm sc, rc;
	struct zsm_ce_chan *s, *r;
};

/* cmocka setup/teardown: *state is the pair, or NULL where this machine
 * can make no channel (need_pair then skips). */
int pair_setup(void **state);
int pair_teardown(void **state);
struct pair *need_pair(void **state);

/* Post a send (one buffer) or a grouped receive on the pair; mh (or
 * mhs[i]) may be NULL for plain host memory. */
void post_send(struct pair *p, struct zsm_ce_req *req, void *buf, size_t len,
	       int tag, struct zsm_ce_mr *mh);
void post_recv(struct pair *p, struct zsm_ce_req *req, int n, void **bufs,
	       const size_t *lens, const int *tags, struct zsm_ce_mr **mhs);
void req_init(struct zsm_ce_req *req, struct zsm_comm *c, int type, int n);
/* Engine passes of every ce channel. */
void pump(int passes);
int state_of(struct zsm_ce_req *req);
/*
 * Whether a channel can be made here.  Where it cannot (valgrind has no
 * pidfd_getfd, some sandboxes forbid it) the plugin keeps such comms on
 * net, so the whole program is skipped with the reason: a TAP
 * "1..0 # SKIP" plan, as meson reads these tests as TAP.
 */
int ce_possible(void);

#endif
