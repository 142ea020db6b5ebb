/* SPDX-License-Identifier: MIT */
/*
 * The libfabric transport: devices (one per libfabric domain), one RDM
 * endpoint per device shared by every comm of the process, comms, requests
 * and memory registrations, each part declared in its own header below;
 * net's files include this one.
 *
 * The wire format is in net/net_wire.h.
 */
#ifndef ZSM_NET_H
#define ZSM_NET_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include "common/cuda_win.h"
#include "common/idmap.h"
#include "core/transport.h"
#include "net/net_credit.h"
#include "net/net_fi_lib.h"
#include "net/net_hmem.h"
#include "net/net_rma_plan.h"
#include "net/net_txpool.h"
#include "net/net_wire.h"
#include "proxy/proxy.h"

/* Its parts, each with its own header. */
#include "net/net_dev.h"
#include "net/net_op.h"
#include "net/net_ctrl.h"
#include "net/net_drain.h"
#include "net/net_ep.h"
#include "net/net_req.h"
#include "net/net_comm.h"
#include "net/net_rma.h"
#include "net/net_peer.h"
#include "net/net_mr.h"

#endif
