/* SPDX-License-Identifier: MIT */
/*
 * zsm-conformance: load any NCCL net plugin the way NCCL does (dlopen
 * RTLD_NOW | RTLD_LOCAL, the highest ncclNetPlugin_vN or --abi N) and run a
 * catalog of named checks of its ncclNet table on this host.  Each check
 * runs in a fresh pair of forked processes, rank 0 sending and rank 1
 * receiving, under its own alarm, and prints PASS, FAIL or SKIP with one
 * line saying why; the run ends with "N passed, N failed, N skipped".
 * Exit 0 when all pass, 1 on any failure, 2 on bad usage, 77 when nothing
 * could run (no usable device).  docs/conformance.md lists the checks and
 * the NCCL rule behind each.  With --rma the run is conformance_rma.c's
 * instead: checks of the plugin's NCCL RMA table between N ranks.
 *
 * This file has the catalog, the command line and main, and the init
 * check that runs first; the checks are conformance_*.c's, one family a
 * file, on the harness of conformance_harness.c (conformance.h).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "conformance.h"
#include "conformance_rma.h"
#include "preload.h"

/* ---------------------------------------------------------------------- */

/*
 * What the init check learnt, written by its rank 0 into a shared page:
 * the checks run in forked processes, and the parent loads no plugin
 * itself so that every check starts from a process that never saw one.
 */
struct lb_found {
	int abi;
	int ndev;
	atomic_int warnings; /* WARN lines printed, see lb_warn */
};

static int check_init(int rank, void *arg)
{
	struct lb_found *found = arg;
	struct lb_ctx x;
	int ndev = 0, r;

	/* Forked, rank 1 shares rank 0's plugin; across hosts it has its
	 * own, which must load there too. */
	if (rank == 1 && !oob_joined())
		return OOB_PASS;
	r = zsm_client_open(lb_opts.plugin, lb_opts.abi, &x.c);
	if (lb_opts.abi)
		LB_EXPECT(!r, "cannot open %s with abi %d (no "
			      "ncclNetPlugin_v%d?)",
			  lb_opts.plugin, lb_opts.abi, lb_opts.abi);
	else
		LB_EXPECT(!r, "cannot open %s: no ncclNetPlugin_v8..v12 "
			      "(see stderr)",
			  lb_opts.plugin);
	found->abi = zsm_client_abi(x.c);
	r = zsm_client_init(x.c, 1);
	if (r) {
		zsm_client_close(x.c);
		return oob_skip("init returned %s: no usable device (is the "
				"tcp provider there? ZSM_PROVIDER=%s "
				"ZSM_DOMAIN=%s)",
				zsm_client_result_str(r),
				getenv("ZSM_PROVIDER") ? getenv("ZSM_PROVIDER")
						       : "(unset)",
				getenv("ZSM_DOMAIN") ? getenv("ZSM_DOMAIN")
						     : "(unset)");
	}
	r = zsm_client_devices(x.c, &ndev);
	LB_EXPECT(!r, "devices returned %s", zsm_client_result_str(r));
	if (ndev <= 0) {
		zsm_client_finalize(x.c);
		zsm_client_close(x.c);
		return oob_skip("plugin reports %d devices", ndev);
	}
	LB_EXPECT(lb_opts.dev < ndev, "device %d requested, plugin has %d",
		  lb_opts.dev, ndev);
	found->ndev = ndev;
	if (rank == 0)
		printf("# abi %d: plugin '%s', %d device(s)\n",
		       zsm_client_abi(x.c), zsm_client_name(x.c), ndev);
	LB_CALL(&x, zsm_client_finalize(x.c));
	zsm_client_close(x.c);
	return OOB_PASS;
}

/*
 * The catalog.  timeout_s bounds one check (both ranks) unless --timeout
 * gives one for all; what is the pass line's few words, and the --list
 * line.  docs/conformance.md describes each check and its NCCL rule.
 */
struct lb_check {
	const char *name;
	oob_check_fn fn;
	unsigned timeout_s;
	const char *what;
	/* NCCL's rule it holds the plugin to, for the FAIL line. */
	const char *rule;
};

static const struct lb_check lb_checks[] = {
	{ "properties", check_properties, 20,
	  "every device's properties written, sane, unique and stable",
	  "every field written, names unique, values NCCL accepts (2.3, 6.2, "
	  "6.4)" },
	{ "connect_retry", check_connect_retry, 30,
	  "connect/accept retried with one handle, no call blocks",
	  "listen, connect and accept do not block; NULL means call again "
	  "with the same handle (2.5 listen, connect, accept)" },
	{ "bad_handle", check_bad_handle, 240,
	  "random, zeroed, corrupted handles fail connect, no crash",
	  "a bad handle makes connect fail with an error, not crash or hang "
	  "(2.5 listen, connect)" },
	{ "connect_closed_listener", check_connect_closed_listener, 100,
	  "connect to a closed listener fails, does not pend",
	  "a connect that cannot succeed ends in an error (2.5 connect)" },
	{ "vdevice", check_vdevice, 60,
	  "makeVDevice fuses devices 0 and 1 into one that carries data",
	  "a fused device comes after the physical ones, names its members "
	  "in vProps and takes listen and connect (2.5 makeVDevice)" },
	{ "order", check_order, 30,
	  "one-tag sends match receives in posting order",
	  "sends and receives on one connection match in posting order (2.5 "
	  "isend)" },
	{ "tag_select", check_tag_select, 30,
	  "tags pick the buffer of a grouped receive",
	  "within the first grouped receive the tag picks the buffer (2.5 "
	  "isend, irecv)" },
	{ "grouped_n", check_grouped_n, 30,
	  "grouped receives n = 1..maxRecvs, mixed and partial sizes",
	  "irecv's n is in [1, maxRecvs]; test reports each size received "
	  "(2.5 irecv, test)" },
	{ "recv_larger", check_recv_larger, 30,
	  "a larger receive buffer reports the size sent",
	  "a posted size may exceed the sent one; test reports the size "
	  "received (2.5 irecv, test)" },
	{ "send_too_large", check_send_too_large, 30,
	  "a send over the posted size fails, nothing overflows",
	  "a send larger than the posted receive is an error (2.5 isend)" },
	{ "trunc_isolated", check_trunc_isolated, 60,
	  "an oversized send fails its receive and no other comm",
	  "an oversized send is its receive's error; every comm is its own "
	  "connection (2.5 isend, connect)" },
	{ "zero_byte", check_zero_byte, 30,
	  "0-byte messages, single and grouped, write nothing",
	  "a message may be 0 bytes (2.5 isend)" },
	{ "null_retry", check_null_retry, 30,
	  "NULL requests retried; twice NCCL's minimum complete",
	  "a NULL request means try again later, never an error (2.5 isend, "
	  "irecv; 6.7)" },
	{ "recv_overwrites_request", check_recv_overwrites_request, 30,
	  "irecv overwrites the 0x1 hint in *request",
	  "irecv overwrites the 0x1 NCCL stores in *request (2.5 irecv, 6.1)" },
	{ "test_sizes_n", check_test_sizes_n, 30,
	  "test writes exactly n sizes, only when done",
	  "test writes sizes[0..n-1] only, and only when done (2.5 test)" },
	{ "iflush_host", check_iflush_host, 30,
	  "iflush on host memory: success and a NULL request",
	  "a NULL iflush request means nothing to wait for (2.5 iflush)" },
	{ "inflight", check_inflight, 30,
	  "32 x maxRecvs sends, 32 receives in flight before any test",
	  "32 receives and 32 x maxRecvs sends in flight per comm (2.1, 6.7)" },
	{ "mr_cache", check_mr_cache, 30,
	  "twin, nested, overlapping registrations in any order",
	  "NCCL registers repeated and overlapping ranges, on either comm "
	  "(2.5 regMr)" },
	{ "close_inflight", check_close_inflight, 30,
	  "comms close with requests in flight; the plugin lives on",
	  "comms close with requests outstanding, after deregistration (2.5 "
	  "closeSend)" },
	{ "peer_dies_recv", check_peer_dies_recv, 45,
	  "receives from a dead sender fail within the limit",
	  "a dead peer is an error of isend, irecv or test (2.5, error "
	  "codes)" },
	{ "peer_dies_send", check_peer_dies_send, 45,
	  "sends to a dead receiver fail within the limit",
	  "a dead peer is an error of isend, irecv or test (2.5, error "
	  "codes)" },
	{ "pingpong_wait", check_pingpong_wait, 45,
	  "small round trips that wait for each send finish promptly",
	  "NCCL waits for a send before it reuses its slot (2.5 test)" },
	{ "peer_closes", check_peer_closes, 45,
	  "a comm whose live peer closed fails its requests",
	  "zsm's rule: a peer's close fails the comm's sends and receives "
	  "with ncclRemoteError, whatever their size" },
	{ "data_sizes", check_data_sizes, 90,
	  "1 B to 1 GiB arrive byte-exact",
	  "NCCL sends up to maxP2pBytes in one message (6.2)" },
	{ "many_comms", check_many_comms, 60,
	  "64 connections at once, traffic interleaved on all",
	  "one connection per peer and channel, progressed together (2.5 "
	  "connect, test)" },
	{ "regmr_concurrent", check_regmr_concurrent, 30,
	  "regMr/deregMr on another thread during traffic",
	  "regMr runs on another thread than isend and test on the same comm "
	  "(6.14)" },
	/* 40 inits, each opening every endpoint a comm to itself takes:
	 * with 4 paths and duplex that is 8 tcp;ofi_rxm endpoints, about
	 * 0.1 s each on an idle 2-core host (30 s in all). */
	{ "init_cycles", check_init_cycles, 180,
	  "init/finalize and dlopen cycles leak no fds or threads",
	  "what init starts, finalize stops; NCCL unloads and reloads "
	  "plugins (6.13)" },
	{ "gpu_buffers", check_gpu_buffers, 60,
	  "NCCL_PTR_CUDA buffers GPU to GPU, byte-exact, iflush",
	  "NCCL_PTR_CUDA buffers come from NCCL's proxy; iflush before the "
	  "GPU reads (2.5 regMr, iflush)" },
};

#define LB_NCHECKS (sizeof(lb_checks) / sizeof(lb_checks[0]))

/* Exit status of a command line the tool cannot run. */
#define LB_USAGE 2

static void lb_usage(FILE *out)
{
	fprintf(out,
		"usage: zsm-conformance [--abi 8..12] [--device N] "
		"[--timeout SECONDS]\n"
		"                       [--only NAME[,NAME...]] [--list] "
		"PLUGIN.so\n"
		"                       [--gpu G0[,G1]] [--zsm-rules]\n"
		"       zsm-conformance --rendezvous HOST:PORT [--rank R "
		"--nranks N]\n"
		"                       [--join-timeout SECONDS] [options] "
		"PLUGIN.so\n"
		"       zsm-conformance --rma [--ranks 2..8] [--hosts K] "
		"[--hostid-env NAME]\n"
		"                       [--rma-abi 13|14] [--max-size "
		"BYTES[K|M|G]] [--signals N]\n"
		"                       [--init-fail-env VAR=VALUE] [--gpu G0[,G1]] "
		"[options] PLUGIN.so\n"
		"Loads PLUGIN.so as NCCL does and runs two-process checks of "
		"its ncclNet\n"
		"table (--plugin PLUGIN.so works too).  By default both "
		"processes run\n"
		"on this host.  With --rendezvous, this process is rank R of "
		"N started\n"
		"on any hosts (R and N from --rank/--nranks, or from mpirun, "
		"srun or PMI);\n"
		"rank 0 listens at HOST:PORT, ranks 2k and 2k+1 run the "
		"checks as a pair.\n"
		"--rma checks its NCCL RMA table (ncclRmaPlugin_v14/v13) "
		"between N forked\n"
		"ranks instead.  "
		"--list prints the checks.  Exit status: 0 all passed, 1 a "
		"check failed,\n"
		"2 bad usage, 77 nothing could run (no usable device).  See "
		"docs/conformance.md.\n");
}

/*
 * ZSM_TEST_TIME_SCALE multiplies every time limit; under valgrind
 * (its preload is in LD_PRELOAD) it defaults to 10.
 */
static int lb_time_scale(void)
{
	const char *env = getenv("ZSM_TEST_TIME_SCALE");
	const char *preload = getenv("LD_PRELOAD");
	int v;

	if (env) {
		v = atoi(env);
		return v >= 1 && v <= 1000 ? v : 1;
	}
	return preload && strstr(preload, "vgpreload") ? 10 : 1;
}

/* Whether name is one of the comma-separated names in only. */
int lb_selected(const char *only, const char *name)
{
	size_t len = strlen(name);
	const char *p = only;

	if (!only)
		return 1;
	while ((p = strstr(p, name))) {
		if ((p == only || p[-1] == ',') && (p[len] == ',' || !p[len]))
			return 1;
		p += len;
	}
	return 0;
}

/* Whether the len bytes at name name a check of the catalog. */
static int lb_known(const char *name, size_t len)
{
	for (size_t k = 0; k < LB_NCHECKS; k++)
		if (strlen(lb_checks[k].name) == len &&
		    !strncmp(lb_checks[k].name, name, len))
			return 1;
	return 0;
}

/*
 * Every name in only must be known (lb_known, or the RMA catalog's
 * rc_known): a typo would otherwise run nothing and pass.  Returns 0 or
 * prints the first unknown name.
 */
int lb_only_valid(const char *only, int (*known)(const char *, size_t))
{
	const char *p = only, *end;
	size_t len;

	while (*p) {
		end = strchr(p, ',');
		len = end ? (size_t)(end - p) : strlen(p);
		if (!known(p, len)) {
			fprintf(stderr, "zsm-conformance: no check named "
					"'%.*s' (see --list)\n",
				(int)len, p);
			return -1;
		}
		p += len + (end ? 1 : 0);
	}
	return 0;
}

/* A whole number in [lo, hi], or -1. */
static long lb_parse_num(const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	return v;
}

/* A size in bytes with an optional K, M or G (binary), 1 B to 64 GiB; 0
 * when malformed. */
static size_t lb_parse_size(const char *s)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-')
		return 0;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (*end || v == 0 || v > (64ULL << 30) >> shift)
		return 0;
	return (size_t)(v << shift);
}

/*
 * The options of --rma's checks (conformance_rma.h): 2 for --rma, 1
 * when argv[*i] was another (its value consumed), 0 when it is none, -1
 * (said) when its value is bad.
 */
static int lb_rma_option(int argc, char **argv, int *i, struct rc_opts *o)
{
	const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
	long n;

	if (!strcmp(a, "--rma"))
		return 2;
	if (!v)
		return 0;
	if (!strcmp(a, "--rma-abi")) {
		n = lb_parse_num(v, 13, 14);
		o->abi = (int)n;
	} else if (!strcmp(a, "--ranks")) {
		n = lb_parse_num(v, 2, RC_MAX_RANKS);
		o->nranks = (int)n;
	} else if (!strcmp(a, "--hosts")) {
		n = lb_parse_num(v, 1, RC_MAX_RANKS);
		o->hosts = (int)n;
	} else if (!strcmp(a, "--hostid-env")) {
		n = v[0] && !strchr(v, '=') ? 1 : -1;
		o->hostid_env = strcmp(v, "none") ? v : NULL;
	} else if (!strcmp(a, "--max-size")) {
		o->max_size = lb_parse_size(v);
		n = o->max_size ? 1 : -1;
	} else if (!strcmp(a, "--signals")) {
		n = lb_parse_num(v, 1, 1000000000L);
		o->signals = n;
	} else if (!strcmp(a, "--init-fail-env")) {
		n = strchr(v, '=') && v[0] != '=' ? 1 : -1;
		o->init_fail_env = v;
	} else {
		return 0;
	}
	if (n < 0) {
		fprintf(stderr, "zsm-conformance: bad %s '%s': --rma-abi 13 or "
				"14, --ranks 2..%d, --hosts 1..ranks, "
				"--hostid-env NAME or none, --max-size "
				"BYTES[K|M|G], --signals 1..10^9, "
				"--init-fail-env VAR=VALUE\n",
			a, v, RC_MAX_RANKS);
		return -1;
	}
	(*i)++;
	return 1;
}

/* Whether this process prints the run's lines: one per pair. */
static int lb_leader(void)
{
	return !oob_joined() || oob_global_rank() % 2 == 0;
}

/*
 * The last line.  Across hosts rank 0 prints the whole run's counts and
 * the other pairs' even ranks their own; each process's exit status is
 * its pair's (rank 0's: the run's).
 */
static int lb_summary(int passed, int failed, int skipped)
{
	int counts[3] = { passed, failed, skipped };

	if (oob_joined() && oob_totals(counts))
		counts[1]++;
	if (lb_leader()) {
		if (oob_joined() && oob_global_rank() == 0 &&
		    oob_global_size() > 2)
			printf("# %d ranks, %d pairs\n", oob_global_size(),
			       oob_global_size() / 2);
		printf("%d passed, %d failed, %d skipped\n", counts[0],
		       counts[1], counts[2]);
	}
	fflush(stdout);
	if (oob_global_rank() != 0 || !oob_joined()) {
		counts[0] = passed;
		counts[1] = failed;
		counts[2] = skipped;
	}
	return counts[1] ? OOB_FAIL : OOB_PASS;
}

/* --rma: the RMA checks take the run (conformance_rma.c). */
static int lb_rma_main(struct rc_opts *rma, int list, const char *only,
		       long timeout_s, int gpu_given,
		       const struct oob_launch *launch)
{
	if (list) {
		rc_list();
		return 0;
	}
	if (lb_opts.abi || lb_opts.zsm_rules || launch->rendezvous ||
	    launch->rank >= 0 || launch->nranks >= 0) {
		fprintf(stderr, "zsm-conformance: --abi, --zsm-rules and the "
				"options across hosts do not go with --rma\n");
		return LB_USAGE;
	}
	if (!lb_opts.plugin) {
		lb_usage(stderr);
		return LB_USAGE;
	}
	if (only && lb_only_valid(only, rc_known))
		return LB_USAGE;
	if (rma->hosts > rma->nranks) {
		fprintf(stderr, "zsm-conformance: --hosts %d with %d ranks: at "
				"most one host a rank\n",
			rma->hosts, rma->nranks);
		return LB_USAGE;
	}
	rma->plugin = lb_opts.plugin;
	rma->dev = lb_opts.dev;
	rma->only = only;
	rma->timeout_s = timeout_s;
	rma->gpu = gpu_given;
	rma->gpu_ord[0] = lb_opts.gpu[0];
	rma->gpu_ord[1] = lb_opts.gpu[1];
	rma->scale = lb_time_scale();
	return rc_main(rma);
}

int main(int argc, char **argv)
{
	struct oob_launch launch = { .rank = -1, .nranks = -1 };
	struct rc_opts rma = { .nranks = 2, .hostid_env = "ZSM_HOSTID" };
	const char *rma_opt = NULL;
	int rma_on = 0, gpu_given = 0;
	long join_s = 300;
	const char *only = NULL;
	int passed = 0, failed = 0, skipped = 0, list = 0, i, r;
	struct lb_found *found;
	long timeout_s = 0, v;
	unsigned limit;
	size_t k;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		int has_val = i + 1 < argc;

		if (!strcmp(a, "--plugin") && has_val) {
			lb_opts.plugin = argv[++i];
		} else if (!strcmp(a, "--abi") && has_val) {
			v = lb_parse_num(argv[++i], ZSM_CLIENT_ABI_MIN,
					 ZSM_CLIENT_ABI_MAX);
			if (v < 0) {
				fprintf(stderr, "zsm-conformance: --abi must "
						"be 8..12\n");
				return LB_USAGE;
			}
			lb_opts.abi = (int)v;
		} else if (!strcmp(a, "--device") && has_val) {
			v = lb_parse_num(argv[++i], 0, 63);
			if (v < 0) {
				fprintf(stderr, "zsm-conformance: --device "
						"must be 0..63\n");
				return LB_USAGE;
			}
			lb_opts.dev = (int)v;
		} else if (!strcmp(a, "--timeout") && has_val) {
			timeout_s = lb_parse_num(argv[++i], 1, 86400);
			if (timeout_s < 0) {
				fprintf(stderr, "zsm-conformance: --timeout "
						"must be 1..86400 seconds\n");
				return LB_USAGE;
			}
		} else if (!strcmp(a, "--only") && has_val) {
			only = argv[++i];
		} else if (!strcmp(a, "--rank") && has_val) {
			v = lb_parse_num(argv[++i], 0, 1 << 20);
			if (v < 0) {
				fprintf(stderr, "zsm-conformance: --rank must "
						"be a whole number\n");
				return LB_USAGE;
			}
			launch.rank = (int)v;
			launch.source = "--rank";
		} else if (!strcmp(a, "--nranks") && has_val) {
			v = lb_parse_num(argv[++i], 2, 1 << 20);
			if (v < 0 || v % 2) {
				fprintf(stderr, "zsm-conformance: --nranks "
						"must be even and at least 2 "
						"(ranks run in pairs)\n");
				return LB_USAGE;
			}
			launch.nranks = (int)v;
		} else if (!strcmp(a, "--gpu") && has_val) {
			if (oob_pair_values(argv[++i], 63, lb_opts.gpu)) {
				fprintf(stderr, "zsm-conformance: --gpu takes "
						"G0[,G1], CUDA device numbers "
						"0..63\n");
				return LB_USAGE;
			}
			gpu_given = 1;
		} else if (!strcmp(a, "--rendezvous") && has_val) {
			launch.rendezvous = argv[++i];
		} else if (!strcmp(a, "--join-timeout") && has_val) {
			join_s = lb_parse_num(argv[++i], 1, 86400);
			if (join_s < 0) {
				fprintf(stderr, "zsm-conformance: "
						"--join-timeout must be "
						"1..86400 seconds\n");
				return LB_USAGE;
			}
		} else if (!strcmp(a, "--zsm-rules")) {
			lb_opts.zsm_rules = 1;
		} else if (!strcmp(a, "--list")) {
			list = 1;
		} else if ((r = lb_rma_option(argc, argv, &i, &rma)) != 0) {
			if (r < 0)
				return LB_USAGE;
			if (r == 2)
				rma_on = 1;
			else
				rma_opt = a;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			lb_usage(stdout);
			return 0;
		} else if (a[0] != '-' && !lb_opts.plugin) {
			lb_opts.plugin = a;
		} else {
			lb_usage(stderr);
			return LB_USAGE;
		}
	}
	/* Before the first rank forks (docs/conformance.md). */
	if (preload_from_env())
		return OOB_FAIL;
	if (rma_on)
		return lb_rma_main(&rma, list, only, timeout_s, gpu_given,
				   &launch);
	if (rma_opt) {
		fprintf(stderr, "zsm-conformance: %s only goes with --rma\n",
			rma_opt);
		return LB_USAGE;
	}
	if (list) {
		for (k = 0; k < LB_NCHECKS; k++)
			printf("%-24s %s\n", lb_checks[k].name,
			       lb_checks[k].what);
		return 0;
	}
	if (!lb_opts.plugin) {
		lb_usage(stderr);
		return LB_USAGE;
	}
	if (only && lb_only_valid(only, lb_known))
		return LB_USAGE;
	if (oob_launch_resolve(&launch, "zsm-conformance"))
		return LB_USAGE;
	if (launch.rendezvous && oob_join(&launch, (unsigned)join_s)) {
		fprintf(stderr, "zsm-conformance: rank %d could not join the "
				"run at %s\n",
			launch.rank, launch.rendezvous);
		return OOB_FAIL;
	}
	lb_scale = lb_time_scale();
	if (access(lb_opts.plugin, R_OK)) {
		printf("FAIL init: %s: %s\n", lb_opts.plugin, strerror(errno));
		printf("0 passed, 1 failed, 0 skipped\n");
		return OOB_FAIL;
	}
	found = mmap(NULL, sizeof(*found), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (found == MAP_FAILED) {
		perror("zsm-conformance: mmap");
		return OOB_FAIL;
	}
	memset(found, 0, sizeof(*found));
	lb_warnings = &found->warnings;
	atomic_init(lb_warnings, 0);
	/* Every wait of a rank drives its outstanding requests. */
	oob_set_idle(lb_idle, NULL);
	limit = (unsigned)(timeout_s ? timeout_s : 30) * (unsigned)lb_scale;
	r = oob_check("init", "plugin loads, init succeeds, devices > 0",
		      NULL, check_init, found, limit);
	if (r == OOB_PASS && !found->abi)
		r = OOB_FAIL;
	/* Nothing could run: every selected check is a skip. */
	if (r == OOB_SKIP) {
		for (k = 0; k < LB_NCHECKS; k++)
			skipped += lb_selected(only, lb_checks[k].name);
		lb_summary(0, 0, skipped);
		return OOB_SKIP;
	}
	if (r != OOB_PASS)
		return lb_summary(0, 1, 0);
	/* Every check uses the table init found: the highest by default. */
	lb_opts.abi = found->abi;
	for (k = 0; k < LB_NCHECKS; k++) {
		if (!lb_selected(only, lb_checks[k].name))
			continue;
		limit = (unsigned)(timeout_s ? timeout_s
					     : (long)lb_checks[k].timeout_s) *
			(unsigned)lb_scale;
		lb_check_name = lb_checks[k].name;
		r = oob_check(lb_checks[k].name, lb_checks[k].what,
			      lb_checks[k].rule, lb_checks[k].fn, NULL, limit);
		if (r == OOB_PASS)
			passed++;
		else if (r == OOB_SKIP)
			skipped++;
		else
			failed++;
	}
	if (lb_leader())
		printf("# plugin %s, abi %d, device %d\n", lb_opts.plugin,
		       lb_opts.abi, lb_opts.dev);
	/* relaxed: every fork that counted has been reaped. */
	k = (size_t)atomic_load_explicit(lb_warnings, memory_order_relaxed);
	if (k)
		printf("# %zu warning%s (WARN lines above): slow, but within "
		       "NCCL's rules\n",
		       k, k == 1 ? "" : "s");
	return lb_summary(passed, failed, skipped);
}
