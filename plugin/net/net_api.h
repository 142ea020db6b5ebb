/* SPDX-License-Identifier: MIT */
/*
 * What the core asks of net beyond its comm ops: its lifetime, its
 * devices, and the handshake it runs for every comm (net is the setup
 * transport: listen, connect and accept always go through it).
 */
#ifndef ZSM_NET_API_H
#define ZSM_NET_API_H

#include "core/limits.h"
#include "core/transport.h"

extern const struct zsm_comm_ops zsm_net_comm_ops;
extern const struct zsm_transport_ops zsm_net_progress_ops;
/* The instance zsm_net_progress_ops drives: every device of the process. */
void *zsm_net_progress_self(void);

/*
 * Discover the devices, check the settings that depend on them and open
 * every device's endpoint (listen and connect must not wait for one).
 * 0, -ENODEV (no usable device), -EDOM (a setting the devices cannot
 * honour), or -errno.
 */
int zsm_net_init(void);
/* Close every endpoint; the engine lock is held, the proxy stopped. */
void zsm_net_close_endpoints(void);
/* Free the devices (after zsm_net_close_endpoints). */
void zsm_net_fini(void);
int zsm_net_ndevs(void);
/*
 * makeVDevice: a new device over the NICs of devices devs[0..n), its
 * endpoint open, into *out (its index).  0; -EINVAL (said) for devices
 * that cannot be fused, -ENOSPC for no room, -EIO no endpoint.  Engine
 * lock held.
 */
int zsm_net_make_vdev(const int *devs, int n, int *out);
/* Whether some device takes GPU buffers from the provider. */
int zsm_net_gdr_any(void);
void zsm_net_props(int dev, struct zsm_props *props);

/*
 * listen on dev for comm lc: fills NCCL's handle (ZSM_HANDLE_BYTES).
 * 0 or -errno.  Engine lock held.
 */
int zsm_net_listen(int dev, void *handle, struct zsm_comm *lc);
/*
 * The connect in progress that NCCL's handle names: 1 and *out (its
 * comm), 0 when the handle names none yet, or -errno (it ran out of
 * time, or the handle is stale).  Engine lock held.
 */
int zsm_net_connect_find(int dev, void *handle, struct zsm_comm **out);
/* Start a connect for comm sc to the listener the handle names (the
 * handle is checked first); 0 or -errno.  Engine lock held. */
int zsm_net_connect_start(int dev, void *handle, struct zsm_comm *sc);
/* After a failed connect: the handle names no connect any more. */
void zsm_net_connect_forget(void *handle);
/* Whether the handle is a zsm handle of this wire version (said). */
int zsm_net_handle_ok(const void *handle);
/* The next receive comm of listener lc that is ready, or NULL.  Engine
 * lock held. */
struct zsm_comm *zsm_net_accept(struct zsm_comm *lc);

#endif
