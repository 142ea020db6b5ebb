/* SPDX-License-Identifier: MIT */
/*
 * A doorbell between CUDA streams and the API's agent, made of stream
 * memory operations only (no kernel, no host function).  Each slot has
 * two 64-bit words in host memory the device can reach: "ready", which
 * the stream writes when it reaches an operation, and "done", which the
 * agent writes when the operation is complete and the stream waits on.
 * Sequence numbers only grow, per slot, and waits compare them cyclically
 * (GEQ), so the words are never reset.
 *
 * Stream side (application threads): zsm_api_door_ring,
 * zsm_api_door_post, zsm_api_door_batch and zsm_api_door_wait enqueue
 * on a stream (post may store at once instead) and return at once.
 * Agent side (plugin/api's agent, no CUDA call): zsm_api_door_ready,
 * zsm_api_door_done, zsm_api_door_fail.
 *
 * Host-memory mode (a door made with no CUDA context): the words are
 * plain memory, ring with a NULL stream stores ready at once, and the
 * caller completes the operation itself before returning (the API runs
 * the agent on the caller; zsm_api_door_wait_host waits for another
 * thread's).  Both modes work without a GPU on the agent's side.
 *
 * Functions return 0 or -errno and WARN what went wrong.
 */
#ifndef ZSM_API_API_DOOR_H
#define ZSM_API_API_DOOR_H

#include <stddef.h>
#include <stdint.h>

#include "common/cuda_drv.h"

struct zsm_api_door;

/*
 * A door of nslots slots.  ctx NULL: host-memory mode.  Otherwise the
 * words are pinned, mapped host memory of that context (it is made
 * current on the calling thread for the call, and the thread's own is
 * put back), from the table zsm_cuda_table() holds: -ENODEV without one,
 * -ENOSYS where the driver lacks cuStreamBatchMemOp_v2, -EOPNOTSUPP
 * where the device cannot run 64-bit stream memory operations.
 */
int zsm_api_door_new(zsm_cu_context ctx, unsigned int nslots,
		      struct zsm_api_door **door);
/* Free the words: only once no stream can still reach them (the streams
 * that rang it have drained, or fail released them and they drained). */
void zsm_api_door_free(struct zsm_api_door *door);

/*
 * Stream side: for each i, the stream writes ready[slots[i]] = seqs[i],
 * then, once all are written, waits for done[slots[i]] >= seqs[i] for
 * each i, in that order: one cuStreamBatchMemOp per 255 operations.  In
 * host-memory mode (stream NULL) the ready words are stored now and
 * nothing waits.  A failed door refuses with its recorded error.  Call
 * it (and zsm_api_door_wait) with the door's context current.
 */
int zsm_api_door_ring(struct zsm_api_door *door, zsm_cu_stream stream,
		       unsigned int n, const unsigned int *slots,
		       const uint64_t *seqs);
/*
 * Stream side: the writes of ready[slots[i]] = seqs[i] alone (the waits
 * come later, zsm_api_door_batch).  When the stream has nothing left to
 * run (a non-blocking stream of the caller's own, not captured, whose
 * earlier work is over), the words are stored from this thread now and
 * *now is 1: the agent starts at once instead of when the GPU next
 * schedules the stream, which on a GPU that time-slices between
 * processes can be milliseconds.  Otherwise one batch of stream writes,
 * *now 0.  now may be NULL.  Host-memory mode: stored now; stream must
 * be NULL.
 */
int zsm_api_door_post(struct zsm_api_door *door, zsm_cu_stream stream,
		       unsigned int n, const unsigned int *slots,
		       const uint64_t *seqs, int *now);
/*
 * Stream side, for operations on several doors in one go: ops in order,
 * each the write of a ready word (wait 0) or a wait on a done word (wait
 * 1), in as few cuStreamBatchMemOp calls as they fit (255 each).  Every
 * door must be a device door of the same context; a failed one refuses.
 * Refused after an earlier batch went in, every door named fails.
 */
struct zsm_api_door_op {
	struct zsm_api_door *door;
	unsigned int slot;
	int wait;
	uint64_t seq;
};
int zsm_api_door_batch(zsm_cu_stream stream, unsigned int n,
			const struct zsm_api_door_op *ops);
/* Stream side: the wait alone (done[slot] >= seq), for waits on signals
 * the host applies.  -EINVAL in host-memory mode: see wait_host. */
int zsm_api_door_wait(struct zsm_api_door *door, zsm_cu_stream stream,
		       unsigned int slot, uint64_t seq);
/*
 * Host side, either mode: wait on this thread until done[slot] >= seq,
 * at most timeout_ms.  0; the door's error once it has failed (even when
 * the word passed before: the caller reports the failure); -ETIMEDOUT,
 * with a WARN naming the slot and the values, when the time ran out.
 */
int zsm_api_door_wait_host(struct zsm_api_door *door, unsigned int slot,
			    uint64_t seq, int timeout_ms);

/* Agent side: the last sequence number the stream reached at slot. */
uint64_t zsm_api_door_ready(const struct zsm_api_door *door,
			     unsigned int slot);
/* Agent side: publish completion up to seq at slot; never lowers the
 * word (a failed door's stays far ahead). */
void zsm_api_door_done(struct zsm_api_door *door, unsigned int slot,
			uint64_t seq);
/*
 * Record err (-errno; the first one stays) and release every waiter of
 * every slot, now and later: each done word jumps far ahead of anything
 * a stream can have rung.  Any thread; no CUDA call.
 */
void zsm_api_door_fail(struct zsm_api_door *door, int err);
/* The recorded error, or 0. */
int zsm_api_door_error(const struct zsm_api_door *door);
/*
 * The words as memory, for a door whose done words others update (signal
 * words peers add into, registered as a window): [*base, *base + *bytes)
 * holds every word, and slot's done word is at zsm_api_door_done_at(slot)
 * of it.  What the agent side reads of it: zsm_api_door_done_get.
 */
void zsm_api_door_region(const struct zsm_api_door *door, void **base,
			  size_t *bytes);
size_t zsm_api_door_done_at(unsigned int slot);
/* The done word of slot now (0 for a slot out of range). */
uint64_t zsm_api_door_done_get(const struct zsm_api_door *door,
				unsigned int slot);
/* Whether a >= b as the stream's waits compare them (cyclically). */
int zsm_api_door_geq(uint64_t a, uint64_t b);
/* The number of slots. */
unsigned int zsm_api_door_slots(const struct zsm_api_door *door);

#endif
