/* SPDX-License-Identifier: MIT */
/*
 * zsm-conformance --rma: checks of a plugin's NCCL 2.30 RMA table
 * (ncclRmaPlugin_v14, or _v13) between N forked ranks on this host,
 * a shared page standing in for NCCL's bootstrap.  zsm-conformance.c
 * parses the command line and calls rc_main; conformance_rma.c holds the
 * catalog and runner, conformance_rma_*.c the checks and their helpers
 * (conformance_rma_int.h).  docs/conformance.md ("RMA tables") lists
 * them.
 */
#ifndef ZSM_TOOLS_CONFORMANCE_RMA_H
#define ZSM_TOOLS_CONFORMANCE_RMA_H

#include <stddef.h>

/* Ranks one run may have: NCCL's RMA signal slots are per rank, and the
 * shared page is sized for this many. */
#define RC_MAX_RANKS 8

struct rc_opts {
	const char *plugin;
	int abi;		   /* 13 or 14; 0: v14, else v13 */
	int dev;		   /* the device each rank listens on */
	int nranks;		   /* 2..RC_MAX_RANKS */
	int hosts;		   /* 1..nranks host identities */
	const char *hostid_env;	   /* set per rank before dlopen; NULL: none */
	size_t max_size;	   /* rma_put_get's largest put and get */
	long signals;		   /* rma_signal_order's strong signals, all ranks */
	const char *init_fail_env; /* VAR=VALUE making init fail, or NULL */
	int gpu;		   /* --gpu: windows in CUDA memory */
	int gpu_ord[2];		   /* CUDA device of even and odd ranks */
	const char *only;	   /* comma-separated check names, or NULL */
	long timeout_s;		   /* every check's limit, 0: the catalog's */
	int scale;		   /* every limit's multiplier (valgrind: 10) */
};

/* rma_put_get's default largest size: about 4 GiB of windows in all. */
size_t rc_default_max_size(int nranks);
/* rma_signal_order's default count; with --gpu each signal read is a
 * device copy, so fewer. */
#define RC_DEFAULT_SIGNALS 1000000L
#define RC_DEFAULT_SIGNALS_GPU 10000L

/* Runs the selected checks; the exit status (0, 1, 77). */
int rc_main(const struct rc_opts *o);
/* --list with --rma. */
void rc_list(void);
/* Whether the len bytes at name name an RMA check. */
int rc_known(const char *name, size_t len);

/* zsm-conformance.c's, shared: whether name is one of only's names. */
int lb_selected(const char *only, const char *name);
/* 0 when known() knows every name in only, else -1 (said on stderr). */
int lb_only_valid(const char *only, int (*known)(const char *, size_t));

#endif
