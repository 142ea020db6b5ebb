/* SPDX-License-Identifier: MIT */
/*
 * ce's wire format (ZSM_CE_VERSION; docs/ce.md gives the same numbers, and
 * test/abi/wire-doc checks them): what the handshake carries for ce
 * inside net's opaque offer, and the shared window of Ready/Complete
 * slots that sender and receiver both map.
 */
#ifndef ZSM_CE_WIRE_H
#define ZSM_CE_WIRE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cuda_drv.h"
#include "core/limits.h"

/*
 * Slots in a window: at least as many as requests a comm can have, so a
 * sender never waits for a slot while its own requests are outstanding.
 */
#define ZSM_CE_SLOTS ZSM_MAX_REQUESTS
#define ZSM_CE_MAGIC 0x45434d5aU /* "ZMCE" */
/* 4: the receiver makes the window; its header names the comm.  5: a
 * slot may be a put into one of the receiver's windows.  6: or a get
 * out of one, which the receiver answers in the slot. */
#define ZSM_CE_VERSION 6
/* Pieces both sides claim of a message they copy together. */
#define ZSM_CE_PIECE ((size_t)512 << 10)
/* deregMr notices a window holds (struct zsm_ce_window). */
#define ZSM_CE_FORGET 64

/* What the handshake carries for ce (entry/select.c frames it). */
struct zsm_ce_offer_msg {
	uint64_t probe_addr; /* a word of the connector's to read */
};
struct zsm_ce_answer_msg {
	int32_t fd;	/* the window's fd in the listener */
	uint32_t id;	/* the receive comm its header names */
	uint64_t addr;	/* the window's address in the listener */
	uint64_t key;	/* and the key its header holds */
};
_Static_assert(sizeof(struct zsm_ce_answer_msg) == 24,
	       "ce's answer is wire format");

/*
 * One send, in shared memory.  The sender writes the fields, then seq
 * (release); the receiver reads seq (acquire), copies, writes the
 * result, then done (release); the sender reads done (acquire).  For a
 * shared copy the receiver also writes dst and zeroes claim, then
 * matched (release); both sides take pieces with fetch-adds on claim
 * (relaxed: the counter is all they share through it), and the sender,
 * once a claim comes back past the end or a write failed, writes
 * help_err and the failed range, then helped (release): every byte it
 * wrote is in place by then.  The counters hold the send's number + 1,
 * so a reused slot is never mistaken for its previous use.
 */
/* A put's or get's bytes in the receiver: at dst of its window win. */
struct zsm_ce_slot_put {
	uint64_t dst;
	uint64_t win;
};

/* A GPU send's allocation in the sender, for cuIpcOpenMemHandle. */
struct zsm_ce_slot_alloc {
	uint64_t off;	/* addr - the allocation's base */
	int32_t vmm_fd; /* cuMem memory: the exported fd in the sender */
	uint32_t pad;
	zsm_cu_ipc_handle ipc;
	uint64_t reg_id; /* the registration's number in the sender */
	uint64_t size;
};

/* What the sender claimed of a split copy but could not write. */
struct zsm_ce_slot_fail {
	uint64_t off;
	uint64_t len;
};

/* A put's signal: add to the word at off of the receiver's window win
 * (0: none). */
struct zsm_ce_slot_sig {
	uint64_t win;
	uint64_t off;
	uint64_t add;
};

struct zsm_ce_slot {
	_Atomic uint64_t seq;
	uint64_t addr;
	uint64_t size;
	int32_t tag;
	int32_t err;	 /* receiver: 0 or -errno */
	uint64_t len;	 /* receiver: bytes it took */
	_Atomic uint64_t done;
	/* A put (kind ZSM_CE_KIND_PUT): where its bytes go in the
	 * receiver.  A get (kind ZSM_CE_KIND_GET): where its bytes are. */
	struct zsm_ce_slot_put put;
	/* Second line: the split copy. */
	uint64_t dst;	 /* receiver: its buffer */
	_Atomic uint64_t claim; /* the next piece either side may copy */
	_Atomic uint64_t matched;
	_Atomic uint64_t helped;
	int32_t help_err; /* sender: 0, or -errno and the receiver does it */
	uint32_t gpu;	  /* 1: addr is device memory, in alloc */
	struct zsm_ce_slot_alloc alloc;
	struct zsm_ce_slot_fail help_fail; /* with help_err set */
	/* What the slot is, and a put's signal, applied by the receiver
	 * once the put's bytes (and every earlier put's) are in place. */
	uint32_t kind;
	uint32_t pad3;
	struct zsm_ce_slot_sig sig;
	uint64_t pad4;
};
/* The layout the two processes share, unchanged by its parts. */
_Static_assert(offsetof(struct zsm_ce_slot, put) == 48, "slot: put");
_Static_assert(offsetof(struct zsm_ce_slot, alloc) == 104, "slot: alloc");
_Static_assert(offsetof(struct zsm_ce_slot, alloc.ipc) == 120, "slot: ipc");
_Static_assert(offsetof(struct zsm_ce_slot, help_fail) == 200,
	       "slot: help_fail");
_Static_assert(offsetof(struct zsm_ce_slot, sig) == 224, "slot: sig");
_Static_assert(sizeof(struct zsm_ce_slot) == 256, "four cache lines a slot");

/*
 * A slot's kind: a message for a receive, a put (size 0: the signal
 * alone), or a get.  A get's slot names size bytes at put.dst of the
 * receiver's window put.win, and the receiver answers in it where the
 * sender may read them, then done (release): err, and either addr, a
 * host address in the receiver (its window, or a staged window's
 * mirror, the bytes copied down first), or with gpu set its device
 * allocation, named as a GPU send names the sender's (alloc: ipc or
 * vmm_fd, reg_id, size) with the bytes at alloc.off.  The sender reads
 * them itself once done says so, taking the answer's fields once.
 */
enum { ZSM_CE_KIND_SEND = 0, ZSM_CE_KIND_PUT = 1, ZSM_CE_KIND_GET = 2 };

struct zsm_ce_window {
	uint32_t magic;
	uint32_t version;
	/* The receive comm the window belongs to, and its key: a sender
	 * that took another window of the same process finds out. */
	uint32_t comm_id;
	uint32_t pad0;
	uint64_t key;
	/* Set once by each side when it closes (seq_cst, see busy). */
	_Atomic uint32_t closed[2];
	/*
	 * busy[side]: that side is inside a copy on the other's memory
	 * (process_vm_readv by the receiver, process_vm_writev by the
	 * sender).  A copier sets busy[me], then reads closed[other]; a
	 * closing side sets closed[me], then waits for busy[other] to clear
	 * (all seq_cst), so no copy touches a side's buffers after its close
	 * returns.
	 */
	_Atomic uint32_t busy[2];
	uint32_t pad[6];
	/*
	 * GPU registrations the sender dropped (deregMr), by number: the
	 * receiver closes what it opened for them.  The sender writes
	 * forget[n % ZSM_CE_FORGET], then forget_head = n + 1 (release);
	 * the receiver reads forget_head (acquire).  A receiver that fell
	 * more than ZSM_CE_FORGET behind closes every mapping it holds
	 * (live registrations are opened again on their next use).
	 */
	_Atomic uint64_t forget_head;
	uint64_t forget[ZSM_CE_FORGET];
	uint64_t pad2[7];
	struct zsm_ce_slot slots[ZSM_CE_SLOTS];
};

#endif
