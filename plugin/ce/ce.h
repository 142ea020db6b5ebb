/* SPDX-License-Identifier: MIT */
/*
 * The same-host transport.  A comm whose peer runs on this host (same host
 * identity, see common/host.h) moves host buffers with one copy by the
 * kernel (cross-memory attach) instead of a trip through the network
 * stack.  The handshake still runs over net; it also sets up a channel:
 *
 *   sender (connect)                          receiver (accept)
 *                          --CONN_REQ(pid, probe word)-->
 *                                             read the probe word, make the
 *                                             memfd window of send slots
 *   pidfd_getfd from the       <--CONN_ACK(fd, addr)--
 *   handle's pid + mmap, probe
 *                          --CONN_DONE(ce on/off)-->
 *
 * Data: isend publishes a Ready slot {tag, address, size} in the shared
 * window; the receiver's engine matches it to the oldest posted receive
 * of that tag, reads the bytes straight out of the sender's buffer with
 * process_vm_readv, and marks the slot Complete, which finishes the send.
 * Both engines poll the window; no message crosses the network.
 */
#ifndef ZSM_CE_H
#define ZSM_CE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/cuda_drv.h"
#include "core/transport.h"

struct zsm_ce_chan;

/* ce's comm ops and its progress hooks (ce_xfer.c, ce_chan.c). */
extern const struct zsm_comm_ops zsm_ce_comm_ops;
extern const struct zsm_transport_ops zsm_ce_progress_ops;
/* The instance zsm_ce_progress_ops drives: every channel of the process. */
void *zsm_ce_progress_self(void);

/* Whether comms to same-host peers may use ce (ZSM_CE). */
int zsm_ce_enabled(void);
/*
 * At init, once the devices are known (gpu: GPU buffers may reach some
 * comm): say what would hold ce's GPU copies back (lazy module loading,
 * CUDA_DEVICE_MAX_CONNECTIONS).
 */
void zsm_ce_init_checks(int gpu);
/* Teardown: let the closes of peers' GPU mappings end (up to timeout_ms)
 * and end their thread; free the registrations left. */
void zsm_ce_fini(unsigned timeout_ms);

/*
 * The handshake, run by the transport choice over net.  The connector
 * offers a word of its memory to read (offer: the payload's length);
 * the listener reads it, makes the shared window and answers; the
 * connector takes the window from the listener's process, the one its
 * handle names.  id names the receive comm in messages.  0, or -errno
 * with why filled (the comm then uses net).
 */
size_t zsm_ce_offer(void *buf, size_t cap);
int zsm_ce_answer(const void *offer, size_t len, pid_t sender, uint32_t id,
		  void **tp, void *answer, size_t cap, size_t *alen, char *why,
		  size_t why_len);
int zsm_ce_take(const void *answer, size_t len, pid_t receiver, void **tp,
		char *why, size_t why_len);
/* Engine: the handshake is done; comm's data moves through channel tp. */
void zsm_ce_start(void *tp, struct zsm_comm *comm);
/* Engine: a channel offered and not taken. */
void zsm_ce_drop(void *tp);

/*
 * regMr of host memory on a ce comm: move the whole huge-page extents of
 * [data, data + size) onto transparent huge pages (ZSM_CE_HUGEPAGE), so
 * that the peer's cross-memory attach pins them cheaply.  Contents are
 * kept and nothing outside the buffer is touched.  0, or -errno when the
 * kernel refused (logged; the buffer still works, on small pages).
 */
int zsm_ce_hugepage_prepare(void *data, size_t size);
/* The whole extents of huge (a power of two) inside [addr, addr + size):
 * 1 and *start, *len, or 0 when there is none. */
int zsm_ce_hugepage_span(uintptr_t addr, size_t size, size_t huge,
			 uintptr_t *start, size_t *len);
/* The kernel's transparent huge page size (2 MiB when it does not say). */
size_t zsm_ce_hugepage_size(void);
/* Whether the text of /sys/kernel/mm/transparent_hugepage/enabled lets
 * ce ask for huge pages: not when "never" is the mode in force. */
int zsm_ce_hugepage_policy_allows(const char *enabled);
/* Whether this machine's THP mode lets ce ask (read once; the first
 * "no" is logged at INFO). */
int zsm_ce_hugepage_allowed(void);

/*
 * GPU buffers (ce_cuda.c), over the process's CUDA state (common/cuda.h).
 */
struct zsm_ce_gpu_mr {
	zsm_cu_ipc_handle ipc; /* of the allocation holding the buffer */
	uint64_t base;	       /* that allocation's start */
	uint64_t alloc_size;   /* and size */
	zsm_cu_context ctx;    /* its context, for copies into it */
	int dev;	       /* its device */
	/* cuMem (VMM) memory, which has no IPC handle: an exported POSIX
	 * fd the peer takes with pidfd_getfd. */
	int vmm_fd;	       /* -1 for cudaMalloc memory */
	int primary;	       /* ctx is the device's primary, retained */
	/* Unique in this process: names the registration in the peer's
	 * cache of opened allocations, and in deregMr's notice. */
	uint64_t reg_id;
};
/* Close what mr_prepare opened (the exported fd). */
void zsm_ce_cuda_mr_release(struct zsm_ce_gpu_mr *mr);

/* regMr of device memory: its IPC handle and context.  0 or -errno. */
int zsm_ce_cuda_mr_prepare(void *data, size_t size, struct zsm_ce_gpu_mr *out);
/* The same, saying nothing: why filled on failure. */
int zsm_ce_cuda_mr_try(void *data, size_t size, struct zsm_ce_gpu_mr *out,
		       char *why, size_t why_len);
/*
 * deregMr of device memory registered on ch's sending side: tell the
 * receiver, which closes what it opened for it (caller holds the engine
 * lock).
 */
void zsm_ce_chan_forget(struct zsm_ce_chan *ch, const struct zsm_ce_gpu_mr *mr);

#endif
