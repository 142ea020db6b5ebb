/* SPDX-License-Identifier: MIT */
/*
 * zsm-bench's command line: every mode's options, parsed and checked
 * before any process starts, shared by zsm-bench and zsm-bench-coll (the
 * --coll mode, a program of its own so that it links zsm's shared library
 * and nothing else of zsm).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "oob.h"
#include "size_arg.h"

#ifndef ZSM_BENCH_DEFAULT_PLUGIN
#define ZSM_BENCH_DEFAULT_PLUGIN "libnccl-net-zsm.so"
#endif
/* Largest CUDA device ordinal --gpu takes. */
#define BENCH_GPU_MAX 1023

/* A size in a --sizes list: it ends the string or a list item. */
static int bench_parse_size(const char *s, size_t *out)
{
	const char *end;

	if (zsm_size_arg(s, out, &end) || (*end && *end != ','))
		return -1;
	return 0;
}

const char *bench_size_str(size_t size, char *buf, size_t len)
{
	if (size >= (1ull << 30) && size % (1ull << 30) == 0)
		snprintf(buf, len, "%zuG", size >> 30);
	else if (size >= (1u << 20) && size % (1u << 20) == 0)
		snprintf(buf, len, "%zuM", size >> 20);
	else if (size >= 1024 && size % 1024 == 0)
		snprintf(buf, len, "%zuK", size >> 10);
	else
		snprintf(buf, len, "%zu", size);
	return buf;
}

static void bench_usage(FILE *out)
{
	fprintf(out,
		"usage: zsm-bench [--plugin PATH | --raw] [--abi 8..12]\n"
		"         [--test stream|pingpong|both]\n"
		"         [--rma [--test put|putsignal|both] [--bidir]]\n"
		"         [--coll all_gather|all_to_all|both [--ranks N]\n"
		"          [--hosts H0,H1,...] [--inplace] [--poll spin|nap]]\n"
		"         [--sizes LIST | --min-size N --max-size N]\n"
		"         [--iters N] [--warmup N] [--reps N] [--csv FILE]\n"
		"         [--device N] [--gpu [G0[,G1]]] [--flush]\n"
		"         [--no-verify]\n"
		"         [--timeout S] [--rendezvous HOST:PORT\n"
		"         [--rank R --nranks 2]]\n"
		"\n"
		"Two processes; rank 0 sends, rank 1 receives.\n"
		"  stream    rank 0 sends --iters messages, up to %d in\n"
		"            flight; GB/s = 1e9 bytes/s at the receiver,\n"
		"            usec per message\n"
		"  pingpong  round trips; usec = half a round trip,\n"
		"            GB/s = 2 * size * iters / time\n"
		"Sizes take K, M, G suffixes (binary); default 8 .. 64M,\n"
		"powers of 4.  Results are medians over --reps (default 5).\n"
		"--timeout bounds each size and the rendezvous (default\n"
		"300 s).  The plugin defaults to $ZSM_BENCH_PLUGIN, else\n"
		"  %s\n"
		"--gpu puts the buffers in CUDA memory (cuMemAlloc): rank 0\n"
		"on device G0, rank 1 on G1 (default 0; one number for\n"
		"both), registered as NCCL_PTR_CUDA, with iflush after each\n"
		"receive.  It exits 77 (skip), saying why, when the plugin\n"
		"does not take CUDA buffers or CUDA is not available.\n"
		"--flush calls iflush after host receives too (NCCL does\n"
		"only for GPU ones), to time a plugin's flush; each rank\n"
		"that received says how many calls gave a request.\n"
		"Launch: by default zsm-bench forks its pair on this host.\n"
		"With --rendezvous this process is one of 2 ranks, which\n"
		"may be on two hosts (rank 0 listens at HOST:PORT); the\n"
		"rank comes from --rank/--nranks or from mpirun, srun or\n"
		"PMI.\n"
		"--raw runs the same patterns on libfabric alone, with\n"
		"the provider and domain the plugin would pick\n"
		"(ZSM_PROVIDER, FI_PROVIDER, ZSM_DOMAIN); CSV plugin 'raw';\n"
		"host memory only.\n"
		"--rma times one-sided puts through the plugin's\n"
		"ncclRmaPlugin_v14, as NCCL's RMA proxy drives it (zsm\n"
		"serves it with ZSM_RMA=1); rank 0 puts into rank 1's\n"
		"window:\n"
		"  put        --iters puts, up to %d in flight, the last an\n"
		"             iputSignal; the clock runs at the target,\n"
		"             from a barrier until it sees the signal (so\n"
		"             every byte landed); GB/s and usec per put;\n"
		"             --bidir: both ranks put to each other at\n"
		"             once (as a 2-rank AllGather moves data), each\n"
		"             clock until its own puts are done and the\n"
		"             peer's signal seen\n"
		"             as stream's\n"
		"  putsignal  iputSignal ping-pong: rank 0 puts and\n"
		"             signals, rank 1 waits on its signal word and\n"
		"             puts and signals back; usec = half a round\n"
		"             trip, GB/s as pingpong's\n"
		"Data windows are in --gpu memory when asked, signal words\n"
		"in host memory.  With --raw: fi_write, and for a signal\n"
		"the message zsm sends after the write on tcp;ofi_rxm\n"
		"(ordered by FI_ORDER_SAW), added by the target.\n",
		BENCH_WINDOW, ZSM_BENCH_DEFAULT_PLUGIN, BENCH_WINDOW);
	/* Two strings: C99 promises no more than 4095 characters in one. */
	fputs("--coll times zsm's own AllGather or AlltoAll\n"
		"(include/zsm/zsm.h, linked) between --ranks processes\n"
		"forked here (default 2), or one process per rank with\n"
		"--rendezvous HOST:PORT [--rank R --nranks N] or a\n"
		"launcher's variables; --hosts gives each forked rank its\n"
		"own ZSM_HOSTID (zsm-bench-host-H), so that they are\n"
		"different hosts to zsm.  size = bytes per rank\n"
		"(all_gather) or per block to each peer (all_to_all);\n"
		"each of --iters calls is timed (with --gpu: on a CUDA\n"
		"stream, to its completion seen by the host), a call's\n"
		"time is its slowest rank's, the row the median;\n"
		"GB/s = (n-1) x size / time, the bytes a rank receives\n"
		"per second; algGB/s = n x size / time.  --gpu takes one\n"
		"device for all ranks or one per rank.  Every byte is\n"
		"checked once per size unless --no-verify.  --poll says\n"
		"how the host waits for a call's stream: spin (default)\n"
		"queries it without pause; nap sleeps between queries,\n"
		"for 1% of the time waited so far (at most 50 us), so that\n"
		"the waiting thread leaves the driver and the CPUs to\n"
		"zsm's own threads during long calls.\n"
		"\n"
		"       zsm-bench --plot OUT.png CSV...\n"
		"draws GB/s and usec against size from zsm-bench CSV\n"
		"files with gnuplot (Debian package gnuplot-nox).\n",
	      out);
}

static long bench_atol(const char *s, const char *what, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, "zsm-bench: %s: '%s' is not in %ld..%ld\n",
			what, s, min, max);
		exit(1);
	}
	return v;
}

/* Options that cannot go together, told before any process starts. */
static void bench_parse_check(const struct bench_opts *o)
{
	if (o->raw && o->gpu) {
		fprintf(stderr,
			"zsm-bench: --raw cannot take --gpu: Debian's "
			"libfabric is built without CUDA (no FI_HMEM), so raw "
			"endpoints move host memory only\n");
		exit(1);
	}
	if (o->raw && o->flush) {
		fprintf(stderr, "zsm-bench: --flush times a plugin's iflush; "
				"--raw has none\n");
		exit(1);
	}
	if (o->rma && (o->flush || o->abi)) {
		fprintf(stderr, "zsm-bench: --rma drives ncclRmaPlugin_v14, "
				"which has neither --flush's iflush nor "
				"--abi's ncclNet versions\n");
		exit(1);
	}
	if (o->bidir && (!o->rma || o->raw || o->coll)) {
		fprintf(stderr, "zsm-bench: --bidir goes with --rma (through "
				"the plugin) only\n");
		exit(1);
	}
	if (!o->coll &&
	    (o->coll_ranks || o->coll_hosts || o->inplace || o->poll)) {
		fprintf(stderr, "zsm-bench: --ranks, --hosts, --inplace and "
				"--poll go with --coll only\n");
		exit(1);
	}
	if (o->rma) {
		for (int i = 0; i < o->nsizes; i++)
			if (!o->sizes[i]) {
				fprintf(stderr,
					"zsm-bench: --rma: size 0 is not a "
					"put (a signal alone is not timed)\n");
				exit(1);
			}
	}
	if ((o->launch_rank >= 0 || o->launch_nranks >= 0) &&
	    !o->rendezvous) {
		fprintf(stderr,
			"zsm-bench: --rank and --nranks need --rendezvous "
			"HOST:PORT (without it zsm-bench forks its own "
			"pair)\n");
		bench_usage(stderr);
		exit(1);
	}
}

/* --test's word: each mode has its two tests and "both". */
static int bench_parse_test(const char *v, int rma)
{
	const char *one = rma ? "put" : "stream";
	const char *two = rma ? "putsignal" : "pingpong";
	int first = rma ? BENCH_PUT : BENCH_STREAM;
	int second = rma ? BENCH_PUTSIGNAL : BENCH_PINGPONG;

	if (!strcmp(v, one))
		return first;
	if (!strcmp(v, two))
		return second;
	if (!strcmp(v, "both"))
		return first | second;
	fprintf(stderr, "zsm-bench: --test: '%s' is not %s, %s or both%s\n",
		v, one, two,
		rma ? " (with --rma)" : " (put and putsignal need --rma)");
	exit(1);
}

/* --coll's word. */
static int bench_parse_coll(const char *v)
{
	if (!strcmp(v, "all_gather"))
		return BENCH_COLL_AG;
	if (!strcmp(v, "all_to_all"))
		return BENCH_COLL_A2A;
	if (!strcmp(v, "both"))
		return BENCH_COLL_AG | BENCH_COLL_A2A;
	fprintf(stderr,
		"zsm-bench: --coll: '%s' is not all_gather, all_to_all or "
		"both\n",
		v);
	exit(1);
}

/* Options taking a value that --coll refuses or that only --coll takes,
 * as bits, so that each is refused by name. */
static const char *const bench_bit_names[] = {
	"--plugin", "--abi", "--test", "--reps", "--device",
	"--ranks", "--hosts",
};

static unsigned bench_opt_bit(const char *a)
{
	for (unsigned k = 0;
	     k < sizeof(bench_bit_names) / sizeof(bench_bit_names[0]); k++)
		if (!strcmp(a, bench_bit_names[k]))
			return 1u << k;
	return 0;
}

/* --coll's own rules, and the pair modes' options it has no use for. */
static void bench_parse_coll_check(struct bench_opts *o, unsigned given)
{
	static const char *const why[] = {
		"zsm-bench-coll calls the zsm library it is linked to",
		"there is no ncclNet version to pick",
		"--coll names the collective",
		"every call is timed; the row is the median over --iters calls",
		"the API picks its own NIC (ZSM_DOMAIN)",
	};
	const char *flag = o->raw ? "--raw" : o->rma ? "--rma"
					: o->flush ? "--flush" : NULL;

	if (flag) {
		fprintf(stderr,
			"zsm-bench: --coll cannot take %s: it times zsm's "
			"own API, not a plugin table or libfabric\n",
			flag);
		exit(1);
	}
	for (unsigned k = 0; k < 5; k++)
		if (given & (1u << k)) {
			fprintf(stderr, "zsm-bench: --coll cannot take %s: %s\n",
				bench_bit_names[k], why[k]);
			exit(1);
		}
	if (o->iters > 100000) {
		fprintf(stderr, "zsm-bench: --coll: --iters is at most 100000 "
				"(one time per call is kept)\n");
		exit(1);
	}
	if (o->poll && !o->gpu) {
		fprintf(stderr, "zsm-bench: --coll: --poll says how the host "
				"waits for a call's CUDA stream: it goes with "
				"--gpu (host-memory calls complete before "
				"returning)\n");
		exit(1);
	}
	if (o->coll_ranks && (o->rendezvous || o->launch_nranks >= 0)) {
		fprintf(stderr, "zsm-bench: --ranks is the size of a forked "
				"run; with --rendezvous the launcher (or "
				"--nranks) gives it\n");
		exit(1);
	}
	if ((o->launch_rank >= 0) != (o->launch_nranks >= 0)) {
		fprintf(stderr, "zsm-bench: --coll: give --rank and --nranks "
				"together, or neither (the launcher's)\n");
		exit(1);
	}
}

void bench_parse(struct bench_opts *o, int argc, char **argv)
{
	size_t min_size = 8, max_size = 64u << 20, s;
	const char *list = NULL, *test = "both", *p;
	unsigned given = 0;
	int i;

	memset(o, 0, sizeof(*o));
	o->plugin = getenv("ZSM_BENCH_PLUGIN");
	if (!o->plugin || !o->plugin[0])
		o->plugin = ZSM_BENCH_DEFAULT_PLUGIN;
	o->warmup = -1;
	o->reps = 5;
	o->verify = 1;
	o->step_timeout_s = 300;
	o->launch_rank = -1;
	o->launch_nranks = -1;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			bench_usage(stdout);
			exit(0);
		} else if (!strcmp(a, "--no-verify")) {
			o->verify = 0;
			continue;
		} else if (!strcmp(a, "--raw")) {
			o->raw = 1;
			continue;
		} else if (!strcmp(a, "--rma")) {
			o->rma = 1;
			continue;
		} else if (!strcmp(a, "--flush")) {
			o->flush = 1;
			continue;
		} else if (!strcmp(a, "--gpu")) {
			/* The device list is optional: take a number only. */
			o->gpu = 1;
			if (v && *v >= '0' && *v <= '9') {
				o->gpu_list = v;
				i++;
			}
			continue;
		} else if (!strcmp(a, "--inplace")) {
			o->inplace = 1;
			continue;
		} else if (!strcmp(a, "--bidir")) {
			o->bidir = 1;
			continue;
		}
		if (!v) {
			bench_usage(stderr);
			exit(1);
		}
		i++;
		given |= bench_opt_bit(a);
		if (!strcmp(a, "--plugin")) {
			o->plugin = v;
		} else if (!strcmp(a, "--abi")) {
			o->abi = (int)bench_atol(v, "--abi", 8, 12);
		} else if (!strcmp(a, "--test")) {
			test = v;
		} else if (!strcmp(a, "--sizes")) {
			list = v;
		} else if (!strcmp(a, "--min-size")) {
			if (bench_parse_size(v, &min_size))
				bench_die("--min-size: bad size '%s'", v);
		} else if (!strcmp(a, "--max-size")) {
			if (bench_parse_size(v, &max_size))
				bench_die("--max-size: bad size '%s'", v);
		} else if (!strcmp(a, "--iters")) {
			o->iters = bench_atol(v, "--iters", 1, 100000000);
		} else if (!strcmp(a, "--warmup")) {
			o->warmup = bench_atol(v, "--warmup", 0, 100000000);
		} else if (!strcmp(a, "--reps")) {
			o->reps =
				(int)bench_atol(v, "--reps", 1, BENCH_MAX_REPS);
		} else if (!strcmp(a, "--csv")) {
			o->csv = v;
		} else if (!strcmp(a, "--device")) {
			o->dev = (int)bench_atol(v, "--device", 0, 1 << 20);
		} else if (!strcmp(a, "--timeout")) {
			o->step_timeout_s =
				(unsigned)bench_atol(v, "--timeout", 1, 86400);
		} else if (!strcmp(a, "--rank")) {
			o->launch_rank =
				(int)bench_atol(v, "--rank", 0, 1 << 20);
		} else if (!strcmp(a, "--nranks")) {
			o->launch_nranks =
				(int)bench_atol(v, "--nranks", 1, 1 << 20);
		} else if (!strcmp(a, "--rendezvous")) {
			o->rendezvous = v;
		} else if (!strcmp(a, "--coll")) {
			o->coll = bench_parse_coll(v);
		} else if (!strcmp(a, "--ranks")) {
			o->coll_ranks = (int)bench_atol(v, "--ranks", 2, 64);
		} else if (!strcmp(a, "--hosts")) {
			o->coll_hosts = v;
		} else if (!strcmp(a, "--poll")) {
			if (!strcmp(v, "spin"))
				o->poll = BENCH_POLL_SPIN;
			else if (!strcmp(v, "nap"))
				o->poll = BENCH_POLL_NAP;
			else
				bench_die("--poll: '%s' is not spin or nap", v);
		} else {
			fprintf(stderr, "zsm-bench: unknown option %s\n", a);
			bench_usage(stderr);
			exit(1);
		}
	}
	if (o->coll)
		bench_parse_coll_check(o, given);
	else
		o->tests = bench_parse_test(test, o->rma);
	if (o->gpu_list && !o->coll &&
	    oob_pair_values(o->gpu_list, BENCH_GPU_MAX, o->gpu_ord)) {
		fprintf(stderr,
			"zsm-bench: --gpu: '%s' is not G0 or G0,G1 (device "
			"numbers 0..%d)\n",
			o->gpu_list, BENCH_GPU_MAX);
		exit(1);
	}
	if (list) {
		for (p = list; *p;) {
			if (o->nsizes == BENCH_MAX_SIZES)
				bench_die("--sizes: more than %d sizes",
					  BENCH_MAX_SIZES);
			if (bench_parse_size(p, &o->sizes[o->nsizes]))
				bench_die("--sizes: bad size in '%s'", p);
			o->nsizes++;
			p = strchr(p, ',');
			if (!p)
				break;
			p++;
		}
	} else {
		if (min_size > max_size)
			bench_die("--min-size %zu > --max-size %zu", min_size,
				  max_size);
		for (s = min_size; s <= max_size && o->nsizes < BENCH_MAX_SIZES;
		     s = s ? s * 4 : 8) {
			o->sizes[o->nsizes++] = s;
			if (s > max_size / 4)
				break;
		}
		if (o->sizes[o->nsizes - 1] != max_size &&
		    o->nsizes < BENCH_MAX_SIZES)
			o->sizes[o->nsizes++] = max_size;
	}
	if (!o->nsizes)
		bench_die("no sizes");
	bench_parse_check(o);
}

/* Byte i of message `iter` of this size: differs across all three. */
uint32_t bench_seed(size_t size, long iter)
{
	return (uint32_t)(size * 2654435761u) ^ (uint32_t)(iter * 40503 + 1);
}
