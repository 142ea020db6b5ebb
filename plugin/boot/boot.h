/* SPDX-License-Identifier: MIT */
/*
 * zsm's own bootstrap: N processes find each other over TCP without NCCL.
 * Rank 0 makes a unique id (zsm_boot_id_new) that reaches the others by
 * any means (or each derives it from its launcher's environment,
 * zsm_boot_env); every rank then calls zsm_boot_init with it.  After
 * init, small collectives carry set-up data (addresses, handles).
 *
 * Every call is collective and blocking; each waits at most the
 * communicator's timeout, and a dead or silent rank makes every call on
 * every rank fail (-ECONNRESET, -ETIMEDOUT), after which the communicator
 * only reports that error.  Not exported from the library.
 */
#ifndef ZSM_BOOT_BOOT_H
#define ZSM_BOOT_BOOT_H

#include <stddef.h>

#define ZSM_BOOT_ID_BYTES 128

/* Opaque: copy it byte for byte to every rank. */
struct zsm_boot_id {
	unsigned char bytes[ZSM_BOOT_ID_BYTES];
};

struct zsm_boot;

/*
 * Open rank 0's listening socket (on ZSM_BOOT_IFNAME's address, else the
 * first interface up that is not loopback, else loopback) and describe it,
 * with a fresh random nonce, in id.  Call it in the process that will be
 * rank 0; zsm_boot_init of rank 0 takes the socket over.
 */
int zsm_boot_id_new(struct zsm_boot_id *id);

/* Close the socket of an id that no init will use (no-op otherwise). */
void zsm_boot_id_drop(const struct zsm_boot_id *id);

/*
 * Rank, size and id from the launcher's environment (torchrun, Open MPI,
 * Slurm, PMI) and ZSM_BOOT_ADDR or MASTER_ADDR/MASTER_PORT; docs/api.md
 * says which variables and how the nonce is chosen.  0, or -EINVAL /
 * -ENOENT with a WARN saying what is missing or wrong.
 */
int zsm_boot_env(int *rank, int *nranks, struct zsm_boot_id *id);

/*
 * Join the job: rank in [0, nranks).  timeout_ms <= 0 takes
 * ZSM_BOOT_TIMEOUT_MS; it bounds init and each later call.  Returns 0 and
 * *out, or -errno: -ETIMEDOUT (rank 0 never answered, or not every rank
 * came), -EINVAL (a duplicate rank or a mismatched nranks: every rank
 * sees it), -ECONNRESET (a rank or rank 0 went away).
 */
int zsm_boot_init(const struct zsm_boot_id *id, int rank, int nranks,
		  int timeout_ms, struct zsm_boot **out);

/*
 * buf holds nranks blocks of bytes_per_rank; this rank's own block (at
 * rank * bytes_per_rank) is sent and every other one filled in.
 */
int zsm_boot_allgather(struct zsm_boot *boot, void *buf,
		       size_t bytes_per_rank);
/* root's bytes of buf reach every rank's buf. */
int zsm_boot_bcast(struct zsm_boot *boot, void *buf, size_t bytes, int root);
/* Returns once every rank has entered it. */
int zsm_boot_barrier(struct zsm_boot *boot);
/* Not collective: closes this rank's sockets, which the others see. */
void zsm_boot_fini(struct zsm_boot *boot);

/*
 * After the last set-up call: whether every rank is still there.  Not
 * collective, never blocks; a rank that leaves says so first
 * (zsm_boot_leave) and is then no longer watched.  -ECONNRESET and *gone
 * (rank 0 sees which rank; the others see rank 0, which passes any death
 * on) when a rank's process went away without leaving; 0 otherwise.  No
 * collective call may follow.
 */
int zsm_boot_watch(struct zsm_boot *boot, int *gone);
/* Tell the watching ranks this one leaves on purpose (before fini). */
void zsm_boot_leave(struct zsm_boot *boot);

int zsm_boot_rank(const struct zsm_boot *boot);
int zsm_boot_nranks(const struct zsm_boot *boot);

#endif
