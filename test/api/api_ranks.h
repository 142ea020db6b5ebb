/* SPDX-License-Identifier: MIT */
/*
 * api_ranks: N processes on this host drive zsm's public API (zsm.h) in
 * host-memory mode, each rank a host given by --hosts, and check every
 * byte.  api_ranks.c starts the ranks and judges their exit codes; each
 * scenario is a file of its own and runs in every rank.
 */
#ifndef API_RANKS_H
#define API_RANKS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <zsm/zsm.h>

#include "pattern.h"

#define API_MAXR 8
#define API_MAXLIST 16

/* Exit code of the rank a kill scenario makes die on purpose. */
#define API_VICTIM_EXIT 42

struct api_opts {
	const char *scenario;
	int nranks;
	int hosts[API_MAXR];
	/* coll: element counts per block and element sizes to try */
	size_t counts[API_MAXLIST];
	int ncounts;
	int esizes[API_MAXLIST];
	int nesizes;
	int modes;      /* API_MODE_* bits */
	int iters;      /* coll: calls per case; putsignal: rounds */
	size_t big;     /* putsignal: bytes of the one large put per rank */
	int victim;     /* kill: the rank that dies */
	const char *kill_mode; /* between, during, wait */
	int calls;      /* kill: collectives the survivors try */
	int deadline_s; /* the parent's limit for the whole run */
	const char *threads; /* NAME=N,...: threads each rank must have */
	const char *mismatch; /* mismatch: count, kind or zero */
};

enum {
	API_MODE_OOP = 1,     /* sendbuff in a window of its own */
	API_MODE_INPLACE = 2,
	API_MODE_SAMEWIN = 4, /* sendbuff in recvbuff's window, beside it */
};

extern struct api_opts api_opt;
extern int api_rank;

/* What this rank is doing: said when the parent stops a hung run. */
void api_phase(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define API_FAIL(...)                                                         \
	do {                                                                  \
		printf("FAIL: rank %d: ", api_rank);                          \
		printf(__VA_ARGS__);                                          \
		printf("\n");                                                 \
		fflush(stdout);                                               \
		return 1;                                                     \
	} while (0)

/* A seed from four small numbers: which data a block holds. */
uint32_t api_seed(uint32_t a, uint32_t b, uint32_t c, uint32_t d);
/* Byte i of p is pattern byte base + i of seed: a range of a larger
 * buffer can be filled or checked where it lies. */
void api_fill(unsigned char *p, size_t len, uint32_t seed, size_t base);
/* Index of the first byte that differs, or -1. */
long api_check(const unsigned char *p, size_t len, uint32_t seed,
	       size_t base);
/* A datatype of esize bytes (variant picks among those of that size). */
zsm_datatype_t api_dtype(int esize, int variant);
double api_now_ms(void);
/* A host buffer, zeroed, that every page of is touched; NULL on failure. */
void *api_alloc(size_t size);

/* Register a (and b, unless NULL) as windows, in that order; then
 * deregister them, b first.  Collective; 0 or 1 after a FAIL line. */
int api_win_pair(zsm_comm_t comm, void *a, size_t asize, zsm_window_t *wa,
		 void *b, size_t bsize, zsm_window_t *wb);
int api_win_unpair(zsm_comm_t comm, zsm_window_t wa, zsm_window_t wb);

int api_coll_run(zsm_comm_t comm);
int api_signal_run(zsm_comm_t comm);
/* Before the communicator exists: init's own refusals. */
int api_errors_pre_init(const zsm_unique_id_t *id);
int api_errors_run(zsm_comm_t comm);
/* After zsm_comm_destroy: the handle is refused. */
int api_errors_after_destroy(zsm_comm_t comm);
int api_mismatch_run(zsm_comm_t comm);
/* In api_ranks_alloc only (api_alloc.c): NULL elsewhere. */
int api_alloc_run(zsm_comm_t comm) __attribute__((weak));
int api_chain_run(zsm_comm_t comm);
/* May _exit(API_VICTIM_EXIT) in the victim rank. */
int api_kill_run(zsm_comm_t comm);

#endif
