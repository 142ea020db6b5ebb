/* SPDX-License-Identifier: MIT */
/*
 * A comm's paths (net_path.c): its data messages spread over several
 * endpoints of its device.  Which path a data message goes on: both
 * sides choose alike without a word between them: NCCL matches a tag's
 * sends and receives in order, so the k-th send of a tag meets the k-th
 * receive buffer of that tag, and both put it on path k mod n.  A
 * grouped receive's buffers each follow their own tag.  One table per
 * link: its tags and how many messages of each went so far.
 */
#ifndef ZSM_NET_PATH_H
#define ZSM_NET_PATH_H

#include <stdint.h>

struct zsm_net_path_slot {
	uint32_t used; /* 0: empty */
	int tag;
	uint64_t count; /* messages of the tag placed so far */
};

struct zsm_net_path_seq {
	struct zsm_net_path_slot *slots;
	uint32_t cap; /* a power of two, or 0 */
	uint32_t n;   /* tags held */
};

struct zsm_net_comm;
struct zsm_ctrl_msg;

void zsm_net_path_seq_fini(struct zsm_net_path_seq *s);
/*
 * The path (0 .. npaths-1) of the next message of tag into *path: 0, or
 * -ENOMEM.  Allocates only for a tag not seen before (NCCL uses a few
 * per comm); with one path it holds nothing and always says 0.
 */
int zsm_net_path_next(struct zsm_net_path_seq *s, int tag, int npaths,
		      int *path);

/*
 * A comm's paths (wire 14).  The connector's CONN_REQ says how many it
 * has; the listener makes a receive link on each of the smaller count's
 * paths and its CONN_ACK says that count; then, once the connector's
 * CONN_DONE keeps the comm on net, the receive comm sends a PATH per
 * further path, naming its link there (id, keys, address); the
 * connector makes its own link on that path and sends the PATH of it on
 * the path, to that link.  Each link then carries a share of the comm's
 * data messages with its own credit and CLOSE; control messages of the
 * comm stay on path 0.
 */
/* c's peer went silent: the endpoints of the other paths of its comm
 * retire too (zsm_net_ep_retire), since their connections to it may
 * come back with transfers in them. */
void zsm_net_path_retire_links(struct zsm_net_comm *c);
/* Says at INFO what each of comm's paths carried (a comm with paths). */
void zsm_net_path_report(const struct zsm_net_comm *comm);
/* The comm a link serves: itself, or a path's link's comm. */
struct zsm_net_comm *zsm_net_path_top(struct zsm_net_comm *c);
/* Listener: the receive comm rc's links for asked paths (a CONN_REQ's). */
void zsm_net_path_accept(struct zsm_net_comm *rc, uint32_t asked);
/* Listener: the connector confirmed (CONN_DONE): name the paths to it,
 * or drop them where the comm took another transport. */
void zsm_net_path_confirmed(struct zsm_net_comm *rc);
/* Connector: the CONN_ACK's count; -EPROTO if more than we have. */
int zsm_net_path_agreed(struct zsm_net_comm *sc, uint32_t n);
/* A PATH's fields, from comm's state. */
void zsm_net_path_build(const struct zsm_net_comm *comm,
			struct zsm_ctrl_msg *m);
/* A PATH of comm's went: the next, if any. */
void zsm_net_path_told(struct zsm_net_comm *comm);
/* Connector: the receive comm named a path; receive link: its sender's
 * link named itself. */
void zsm_net_path_on_named(struct zsm_net_comm *sc,
			   const struct zsm_ctrl_msg *m);
void zsm_net_path_on_joined(struct zsm_net_comm *l,
			    const struct zsm_ctrl_msg *m);

#endif
