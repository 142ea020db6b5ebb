/* SPDX-License-Identifier: MIT */
/* net's one-sided operations (net_rma.c, net_rma_get.c). */
#ifndef ZSM_NET_RMA_H
#define ZSM_NET_RMA_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include "common/cuda_win.h"
#include "common/idmap.h"
#include "core/transport.h"
#include "net/net_comm.h"
#include "net/net_credit.h"
#include "net/net_fi_lib.h"
#include "net/net_hmem.h"
#include "net/net_rma_plan.h"
#include "net/net_txpool.h"
#include "net/net_wire.h"
#include "proxy/proxy.h"

/* net_rma.c: one-sided operations.  The comm ops' reg_window and
 * can_signal; the operations a PUT or GET request posts, and posting op
 * i of them (engine); a SIGNAL message that passed every control check,
 * for its receive comm c (engine). */
int zsm_net_rma_reg_window_op(struct zsm_comm *c, void *data, size_t size,
			      int type, struct zsm_mr **out,
			      struct zsm_rma_window *win);
int zsm_net_rma_can_signal(struct zsm_comm *c);
int zsm_net_rma_nops(const struct zsm_req *b);
ssize_t zsm_net_rma_post_op(struct zsm_net_req *req, int i);
/* Op op of a put or get completed (engine, before its request may be
 * published). */
/* Op of a put or get ended, with err (0 or -errno). */
void zsm_net_rma_op_done(struct zsm_net_op *op, int err);
/* req's SIGNAL or GET (t), req->sig, sent as op: from a registered copy
 * where the provider wants descriptors, and none free is a refusal for
 * now, as the provider's own; a SIGNAL asks to be acknowledged (under
 * atomic with FI_FENCE).  The send's result. */
ssize_t zsm_net_rma_send_msg(struct zsm_net_req *req, struct zsm_net_op *op,
			     enum zsm_ctrl_type t);
void zsm_net_rma_on_signal(struct zsm_net_comm *c,
			   const struct zsm_sig_msg *m);
/* RMA_REFUSED: our provider refused a write or read of the peer's. */
void zsm_net_rma_on_refused(struct zsm_net_comm *c,
			    const struct zsm_ctrl_msg *m);
/* SIGNALED: the peer's receive comm says how many of send comm c's
 * SIGNALs it handled, and whether it failed. */
void zsm_net_rma_on_signaled(struct zsm_net_comm *c,
			     const struct zsm_ctrl_msg *m);
/* writedata: a put's write landed here, its remote CQ data data. */
void zsm_net_rma_on_write(struct zsm_net_ep *ep, uint64_t data);
/* The comm goes: the signals it still held back go with it. */
void zsm_net_rma_comm_fini(struct zsm_net_comm *c);
/* The window of ep that id names, or NULL (net_rma.c). */
struct zsm_net_mr *zsm_net_rma_window(struct zsm_net_ep *ep, uint64_t id);
/*
 * net_rma_get.c: gets.  Op i of a GET request (0: its GET message, 1:
 * the read, once the owner answered); a GET that passed every control
 * check and waited its turn behind the link's earlier signals, for
 * receive comm c; a GET_READY for send comm c; op completed without
 * error (the read of a get into a staged window is copied up): 0 or
 * -errno.  Engine.
 */
ssize_t zsm_net_rma_get_post(struct zsm_net_req *req, int i);
/* A SIGNAL's or GET's m from send comm comm, its other fields 0. */
void zsm_net_rma_msg_head(const struct zsm_net_comm *comm,
			  struct zsm_sig_msg *m, enum zsm_ctrl_type t);
void zsm_net_rma_get_serve(struct zsm_net_comm *c,
			   const struct zsm_sig_msg *m);
void zsm_net_rma_get_ready(struct zsm_net_comm *c,
			   const struct zsm_ctrl_msg *m);
int zsm_net_rma_get_landed(struct zsm_net_op *op);
/* net_mr.c: a window's registration with remote access; GPU memory
 * (type ZSM_MEM_CUDA) is staged through a pinned host mirror. */
int zsm_net_mr_reg_window(struct zsm_net_ep *ep, void *data, size_t size,
			  int type, struct zsm_net_mr **out);

#endif
