/* SPDX-License-Identifier: MIT */
/*
 * zsm-load: a load test of any NCCL net plugin, through its exported
 * ncclNet table only (test/lib/zsm_client).  Two processes on one host
 * (the fork of test/lib/oob), each with N send comms to the other and N
 * receive comms from it, move grouped messages of random sizes both ways
 * for a given time, check every byte and every reported size, and fail
 * on a stall, a lost message, an error, or RSS or fd counts that grow.
 *
 * The schedule.  Each direction is a stream of groups numbered g = 0, 1,
 * ...; group g goes on comm perm_r(g % N) in round r = g / N (a fresh
 * seeded permutation every round), so it is round r of that comm.  What a
 * group holds (n sub-messages up to maxRecvs, their sizes, the sizes
 * posted, tags, the order the sender posts them and where their bytes
 * come from) is a function of the seed, the direction, the comm and the
 * round: both sides compute it and nothing per message crosses a side
 * channel.  Both sides start groups in g order, each under its own
 * budget (bytes in flight, groups in flight per comm); since the oldest
 * group neither side has finished is then always posted on both sides,
 * the schedule itself cannot deadlock: a stall is the plugin's.
 *
 * With --recv-ahead each receiver posts every round in an order of its
 * own, as NCCL's receives are posted in an order its peer's sends do not
 * follow, and at the end only the senders stop: a receiver finishes
 * what its sender started and goes on posting a window of rounds past
 * it, receives no message will come for, left posted when the comms
 * close.  The schedule stays deadlock-free: each side starts whole
 * rounds in order, so neither is more than a round and a window apart.
 *
 * The data.  Byte i of a sub-message is zsm_pattern_byte(seed, off + i)
 * for an offset off drawn per (comm, round, sub): senders send straight
 * out of one read-only table of those bytes (no copy, no fill), receivers
 * compare with the same table, so every byte is checked at memcmp speed
 * and a message that lands on the wrong comm, round or sub, or shifted,
 * does not verify.
 */
#include <errno.h>
#include <getopt.h>
#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "oob.h"
#include "pattern.h"
#include "zsm_client.h"

#ifndef ZSM_LOAD_DEFAULT_PLUGIN
#define ZSM_LOAD_DEFAULT_PLUGIN "libnccl-net-zsm.so"
#endif

/* Sub-receives in one irecv: NCCL's limit is the plugin's maxRecvs. */
#define LD_MAX_N 8
/* The sizes array NCCL hands to test(). */
#define LD_SIZES 64
/* Groups a comm may have in flight: NCCL_NET_MAX_REQUESTS. */
#define LD_MAX_DEPTH 32
/* Source offsets are drawn from [0, LD_OFF_SPAN): the table's slack. */
#define LD_OFF_SPAN (1u << 20)
/* Sizes up to this are "small"; 1 in 64 messages is larger. */
#define LD_SMALL_MAX (64u << 10)
/* Bytes after every posted receive that must stay as they were. */
#define LD_GUARD 64
#define LD_GUARD_BYTE 0xA5
/* Edge bytes of a receive set to the wrong value before posting. */
#define LD_POISON 16
/* Groups one stream starts per pass, so that tests are never starved. */
#define LD_POST_BURST 64
#define LD_TICK_NS (100 * 1000000ull)
#define LD_SAMPLES 4096
#define LD_WHY 1024
#define LD_NSEC 1000000000ull

struct ld_opts {
	const char *plugin;
	int abi;
	int dev;
	int pairs;
	double seconds;
	size_t max_size;
	size_t inflight;
	int depth;
	int max_recvs;
	uint64_t seed;
	double stall_s;
	double lost_s;
	double warmup_s; /* < 0: a fifth of the run */
	double sample_s;
	double rss_tol_mib;
	double rss_tol_pct;
	int fd_tol;
	int dump_max;
	int connect_batch;
	int recv_ahead;
	int verbose;
};

/* One resource sample of one process. */
struct ld_sample {
	float t_s; /* since traffic started */
	uint32_t rss_kib;
	uint32_t fds;
};

/* Counts of one direction as one side saw them. */
struct ld_counts {
	uint64_t groups;
	uint64_t msgs;
	uint64_t zero_msgs;
	uint64_t bytes;
	uint64_t nulls; /* isend/irecv that returned a NULL request */
	uint64_t tests;
};

/* What one side has pending on one comm of one direction, for a dump. */
struct ld_pend {
	int32_t round; /* oldest group not finished, -1: none */
	int8_t n;
	int8_t posted; /* sub-sends posted, or 1 once the irecv was taken */
	int8_t done;
	int8_t count; /* groups started and not finished */
	float age_s;   /* since its first request was posted */
};

/* One rank's part of the memory both processes share. */
struct ld_side {
	/* Last completion of any request, ns; see ld_check_progress. */
	_Atomic uint64_t last_done_ns;
	/* Groups this side started per direction when it saw the stop. */
	uint64_t started[2];
	_Atomic int stop_seen;
	_Atomic int dumped;
	_Atomic int stats_ready;
	/* What this side found: plugin errors, wrong data, stalls, losses. */
	uint64_t errors;
	uint64_t bad;
	int stalls;
	int lost;
	struct ld_counts counts[2];
	/* Where each stream was at the dump. */
	uint64_t next_g[2];
	uint64_t limit_g[2];
	uint64_t inflight_bytes[2];
	uint64_t groups_open[2];
	uint32_t nsamples;
	struct ld_sample samples[LD_SAMPLES];
};

struct ld_shm {
	/* 0, or 1 + the rank whose failure came first. */
	_Atomic int fail;
	_Atomic int stop;
	_Atomic int printed;
	char why[LD_WHY];
	struct ld_side side[2];
	/* Then pend[rank][dir][comm]; see ld_pend_at. */
};

/* A sub-message as both sides derive it. */
struct ld_sub {
	uint32_t size;
	uint32_t posted;
	uint32_t off;
	int tag;
};

struct ld_group {
	uint64_t g;
	uint32_t round;
	int n;
	int posted; /* sender: sub-sends posted; receiver: 1 once taken */
	int done;   /* sender: sub-sends finished, in posting order */
	struct ld_sub sub[LD_MAX_N];
	uint8_t order[LD_MAX_N]; /* posting order of the sub-sends */
	void *req[LD_MAX_N];
	uint64_t t_post;
	uint64_t bytes; /* sent bytes of all subs */
	/* Receiver: the arena chunk and its record. */
	size_t chunk;
	uint64_t rec;
};

struct ld_comm {
	void *comm;
	void *mh;
	unsigned head, tail; /* free-running indices into ring */
	struct ld_group ring[LD_MAX_DEPTH];
};

/* A chunk of the receive arena, in the order the groups were started. */
struct ld_chunk {
	size_t off;
	size_t len;
	int done;
};

struct ld_stream {
	int dir;
	int sending;
	struct ld_comm *comms;
	uint32_t *perm;
	uint64_t perm_round; /* the round perm is for, +1 (0: none yet) */
	uint64_t next_g;     /* groups started */
	uint64_t limit_g;    /* start none at or past this */
	struct ld_group *partial; /* started, not wholly posted */
	int partial_comm;
	uint64_t inflight_bytes;
	uint64_t groups_open;
	uint32_t rounds_done; /* 1 + the highest round finished on any comm */
	/* Receiver with --recv-ahead: the groups its sender started, which
	 * it must finish (UINT64_MAX: not known yet); those past it stay
	 * posted. */
	uint64_t final_g;
	uint32_t *final_pos; /* comm -> its place in the sender's last round */
	struct ld_counts counts;
	/* Receiver: the arena and its chunk records. */
	unsigned char *arena;
	size_t arena_len;
	size_t a_head, a_tail;
	struct ld_chunk *chunks;
	uint64_t c_head, c_tail, c_cap;
};

struct ld {
	struct ld_opts o;
	struct ld_shm *shm;
	struct ld_pend *pend;
	struct zsm_client *c;
	int rank;
	int max_recvs;
	const char *name;
	unsigned char *table;
	size_t table_len;
	struct ld_stream out, in;
	uint64_t t0;
	uint64_t next_sample;
	uint64_t sample_ns;
	int stopping;        /* saw the stop and published our counts */
	int ending;          /* peer's counts in: limits final */
};

static struct ld ld_g;

/* ---------------------------------------------------------------------- */
/* failure, shared by both ranks */

static double ld_s(uint64_t ns)
{
	return (double)ns / 1e9;
}

/*
 * Record a failure: the first reason of the run is kept in shared memory
 * and both ranks dump what they have pending.  Returns -1.
 */
static int ld_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int ld_fail(const char *fmt, ...)
{
	struct ld *x = &ld_g;
	char msg[LD_WHY - 16];
	int expected = 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* acq_rel: the winner's why is published by the release below. */
	if (atomic_compare_exchange_strong_explicit(&x->shm->fail, &expected,
						    -1, memory_order_acq_rel,
						    memory_order_acquire)) {
		snprintf(x->shm->why, sizeof(x->shm->why), "rank %d: %s",
			 x->rank, msg);
		/* release: pairs with the acquire loads of fail (ld_failed). */
		atomic_store_explicit(&x->shm->fail, 1 + x->rank,
				      memory_order_release);
	} else {
		fprintf(stderr, "zsm-load: rank %d: also: %s\n", x->rank, msg);
	}
	return -1;
}

/* A plugin call returned an error: counted, then failed. */
#define LD_CALL_FAIL(x, ...)                                                   \
	((x)->shm->side[(x)->rank].errors++, ld_fail(__VA_ARGS__))

static int ld_failed(const struct ld *x)
{
	/* acquire: pairs with the release in ld_fail, so why is complete. */
	return atomic_load_explicit(&x->shm->fail, memory_order_acquire) > 0;
}

/* ---------------------------------------------------------------------- */
/* the seeded schedule */

static uint64_t ld_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

struct ld_rng {
	uint64_t s;
};

static uint64_t ld_rng_next(struct ld_rng *r)
{
	r->s += 0x9e3779b97f4a7c15ull;
	return ld_mix(r->s);
}

static struct ld_rng ld_rng_for(uint64_t seed, uint64_t a, uint64_t b,
				uint64_t c)
{
	struct ld_rng r = { ld_mix(seed ^ ld_mix(a * 0x100000001b3ull ^
						 ld_mix(b ^ ld_mix(c)))) };
	return r;
}

static int ld_bits(uint32_t v)
{
	return v ? 32 - __builtin_clz(v) : 0;
}

/* Uniform in the number of bits, then uniform within: log-uniform. */
static uint32_t ld_log_uniform(struct ld_rng *r, uint32_t lo, uint32_t hi)
{
	int blo = ld_bits(lo), bhi = ld_bits(hi), b;
	uint32_t a, z;

	b = blo + (int)(ld_rng_next(r) % (uint64_t)(bhi - blo + 1));
	a = b > 1 ? 1u << (b - 1) : 1;
	z = b < 32 ? (1u << b) - 1 : UINT32_MAX;
	if (a < lo)
		a = lo;
	if (z > hi)
		z = hi;
	return a + (uint32_t)(ld_rng_next(r) % ((uint64_t)z - a + 1));
}

/*
 * The size distribution: 1 in 32 messages is empty; of the others 63 in
 * 64 are small, log-uniform in 1..64 KiB, and 1 in 64 large, log-uniform
 * in 64 KiB..max.  With max 8 MiB (measured on 400,000 draws): median 347
 * bytes, 70% of messages at most 4 KiB, mean 48 KB, and the 1.5% of large
 * messages carry 81% of the bytes.  So every comm has many requests in
 * flight, as NCCL's LL protocols give, and the bytes still come mostly in
 * large ones.
 */
static uint32_t ld_size_draw(struct ld_rng *r, uint32_t max)
{
	uint64_t u = ld_rng_next(r);

	if (max == 0 || u % 32 == 0)
		return 0;
	if (max > LD_SMALL_MAX && (u >> 5) % 64 == 0)
		return ld_log_uniform(r, LD_SMALL_MAX + 1, max);
	return ld_log_uniform(r, 1, max < LD_SMALL_MAX ? max : LD_SMALL_MAX);
}

/* A receive posts the sent size, or in 1 of 4 cases more. */
static uint32_t ld_posted_draw(struct ld_rng *r, uint32_t size)
{
	uint64_t u = ld_rng_next(r);

	if (u % 4)
		return size;
	return size + 1 + (uint32_t)((u >> 2) % (size / 2 + 4096));
}

/* Bytes the largest group takes in the receive arena. */
static size_t ld_chunk_max(size_t max_size, int max_recvs)
{
	size_t posted = max_size + max_size / 2 + 4096;

	return (size_t)max_recvs * ((posted + LD_GUARD + 63) & ~(size_t)63);
}

static size_t ld_sub_span(uint32_t posted)
{
	return ((size_t)posted + LD_GUARD + 63) & ~(size_t)63;
}

static void ld_shuffle(struct ld_rng *r, uint8_t *a, int n)
{
	int j, k;
	uint8_t t;

	for (j = 0; j < n; j++)
		a[j] = (uint8_t)j;
	for (j = n - 1; j > 0; j--) {
		k = (int)(ld_rng_next(r) % (uint64_t)(j + 1));
		t = a[j];
		a[j] = a[k];
		a[k] = t;
	}
}

/*
 * Round r of comm c in direction dir: the same on both sides.  Tags come
 * from a pool of LD_MAX_N per comm, as NCCL's are the few ranks behind a
 * comm, so consecutive groups reuse them and a message matched to the
 * wrong group does not verify.
 */
static void ld_group_make(const struct ld *x, int dir, int c, uint32_t round,
			  struct ld_group *gr)
{
	struct ld_rng r = ld_rng_for(x->o.seed, (uint64_t)dir,
				     (uint64_t)c, round);
	uint8_t pool[LD_MAX_N];
	int j;

	gr->round = round;
	gr->n = 1 + (int)(ld_rng_next(&r) % (uint64_t)x->max_recvs);
	gr->posted = gr->done = 0;
	gr->bytes = 0;
	ld_shuffle(&r, pool, LD_MAX_N);
	for (j = 0; j < gr->n; j++) {
		struct ld_sub *s = &gr->sub[j];

		s->size = ld_size_draw(&r, (uint32_t)x->o.max_size);
		s->posted = ld_posted_draw(&r, s->size);
		s->off = (uint32_t)(ld_rng_next(&r) % LD_OFF_SPAN);
		s->tag = (int)(((uint32_t)c * LD_MAX_N + pool[j]) & 0xffff);
		gr->bytes += s->size;
		gr->req[j] = NULL;
	}
	/* The sender posts the sub-sends in any order, as NCCL may. */
	ld_shuffle(&r, gr->order, gr->n);
}

/* The comms of round r of direction dir, in the order its sender starts
 * their groups; other: in another order, a receiver's with --recv-ahead. */
static void ld_perm_fill(const struct ld *x, int dir, int other,
			 uint64_t round, uint32_t *perm)
{
	struct ld_rng r = ld_rng_for(x->o.seed,
				     (other ? 4 : 2) + (uint64_t)dir,
				     0x7065726du, round);
	int n = x->o.pairs, i, k;
	uint32_t t;

	for (i = 0; i < n; i++)
		perm[i] = (uint32_t)i;
	for (i = n - 1; i > 0; i--) {
		k = (int)(ld_rng_next(&r) % (uint64_t)(i + 1));
		t = perm[i];
		perm[i] = perm[k];
		perm[k] = t;
	}
}

/*
 * The comms of round r in the order this side starts their groups: the
 * same on both sides, except that with --recv-ahead a receiver posts
 * each round in an order of its own, as NCCL's receives are posted in an
 * order its peer's sends do not follow.
 */
static void ld_perm_make(const struct ld *x, struct ld_stream *st,
			 uint64_t round)
{
	ld_perm_fill(x, st->dir, !st->sending && x->o.recv_ahead, round,
		     st->perm);
	st->perm_round = round + 1;
}

/* ---------------------------------------------------------------------- */
/* resources */

static uint32_t ld_rss_kib(void)
{
	char line[256];
	unsigned long v = 0;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %lu kB", &v) == 1)
			break;
	fclose(f);
	return (uint32_t)v;
}

/* Open fds, not counting the one that reads the directory. */
static uint32_t ld_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	uint32_t n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n ? n - 1 : 0;
}

static void ld_sample_take(struct ld *x, uint64_t now)
{
	struct ld_side *me = &x->shm->side[x->rank];
	struct ld_sample *s;

	if (me->nsamples >= LD_SAMPLES)
		return;
	s = &me->samples[me->nsamples++];
	s->t_s = (float)ld_s(now - x->t0);
	s->rss_kib = ld_rss_kib();
	s->fds = ld_fds();
}

static void ld_raise_nofile(void)
{
	struct rlimit rl;

	/* ce holds fds per comm: 2000 comms exceed the usual 1024. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			perror("zsm-load: setrlimit(RLIMIT_NOFILE)");
	}
}

/* ---------------------------------------------------------------------- */
/* the receive arena: chunks taken in group order, freed in any order */

/* Room for len bytes, or -1; the oldest live chunk bounds reuse. */
static long ld_arena_take(struct ld_stream *st, size_t len)
{
	size_t off;

	if (st->c_head == st->c_tail) {
		st->a_head = st->a_tail = 0;
		off = 0;
	} else if (st->a_head > st->a_tail) {
		if (st->a_head + len <= st->arena_len)
			off = st->a_head;
		else if (len < st->a_tail)
			off = 0;
		else
			return -1;
	} else if (st->a_head + len < st->a_tail) {
		off = st->a_head;
	} else {
		return -1;
	}
	if (st->c_tail - st->c_head == st->c_cap)
		return -1;
	st->chunks[st->c_tail % st->c_cap] =
		(struct ld_chunk){ .off = off, .len = len, .done = 0 };
	st->c_tail++;
	st->a_head = off + len;
	return (long)off;
}

static void ld_arena_give(struct ld_stream *st, uint64_t rec)
{
	st->chunks[rec % st->c_cap].done = 1;
	while (st->c_head != st->c_tail &&
	       st->chunks[st->c_head % st->c_cap].done)
		st->c_head++;
	if (st->c_head == st->c_tail)
		st->a_head = st->a_tail = 0;
	else
		st->a_tail = st->chunks[st->c_head % st->c_cap].off;
}

/* ---------------------------------------------------------------------- */
/* posting */

static unsigned char *ld_sub_buf(const struct ld_stream *st,
				 const struct ld_group *gr, int j)
{
	size_t at = gr->chunk;
	int i;

	for (i = 0; i < j; i++)
		at += ld_sub_span(gr->sub[i].posted);
	return st->arena + at;
}

/*
 * Before a receive is posted: its guard as it must stay, its edge bytes
 * the wrong value, so a receive that reports data without writing it
 * cannot pass on what an earlier message left there.
 */
static void ld_recv_prepare(struct ld *x, struct ld_stream *st,
			    struct ld_group *gr)
{
	int j;
	uint32_t i, e;

	for (j = 0; j < gr->n; j++) {
		const struct ld_sub *s = &gr->sub[j];
		unsigned char *p = ld_sub_buf(st, gr, j);

		memset(p + s->posted, LD_GUARD_BYTE, LD_GUARD);
		e = s->size < LD_POISON ? s->size : LD_POISON;
		for (i = 0; i < e; i++) {
			p[i] = (unsigned char)~x->table[s->off + i];
			p[s->size - 1 - i] =
				(unsigned char)~x->table[s->off + s->size - 1 -
							 i];
		}
	}
}

/* The comm and round of the next group to start. */
static int ld_next_comm(struct ld *x, struct ld_stream *st, uint32_t *round)
{
	uint64_t r = st->next_g / (uint64_t)x->o.pairs;

	if (st->perm_round != r + 1)
		ld_perm_make(x, st, r);
	*round = (uint32_t)r;
	return (int)st->perm[st->next_g % (uint64_t)x->o.pairs];
}

/* Start the next group if the budgets allow: 1 started, 0 not now. */
static int ld_group_start(struct ld *x, struct ld_stream *st)
{
	struct ld_group *gr, tmp;
	struct ld_comm *cm;
	uint32_t round;
	size_t len = 0;
	long off = 0;
	int c, j;

	if (st->next_g >= st->limit_g)
		return 0;
	c = ld_next_comm(x, st, &round);
	cm = &st->comms[c];
	if (cm->tail - cm->head >= (unsigned)x->o.depth)
		return 0;
	ld_group_make(x, st->dir, c, round, &tmp);
	if (st->groups_open && st->inflight_bytes + tmp.bytes > x->o.inflight)
		return 0;
	if (!st->sending) {
		for (j = 0; j < tmp.n; j++)
			len += ld_sub_span(tmp.sub[j].posted);
		off = ld_arena_take(st, len);
		if (off < 0)
			return 0;
	}
	gr = &cm->ring[cm->tail % LD_MAX_DEPTH];
	*gr = tmp;
	gr->g = st->next_g;
	if (!st->sending) {
		gr->chunk = (size_t)off;
		gr->rec = st->c_tail - 1;
		ld_recv_prepare(x, st, gr);
	}
	cm->tail++;
	st->next_g++;
	st->inflight_bytes += gr->bytes;
	st->groups_open++;
	st->partial = gr;
	st->partial_comm = c;
	return 1;
}

/* Post what the partial group still needs: 1 all posted, 0 NULL, -1. */
static int ld_group_post(struct ld *x, struct ld_stream *st)
{
	struct ld_group *gr = st->partial;
	struct ld_comm *cm = &st->comms[st->partial_comm];
	void *data[LD_MAX_N], *mhs[LD_MAX_N];
	size_t sizes[LD_MAX_N];
	int tags[LD_MAX_N], j, r;

	if (st->sending) {
		while (gr->posted < gr->n) {
			const struct ld_sub *s =
				&gr->sub[gr->order[gr->posted]];
			void **req = &gr->req[gr->posted];

			*req = NULL;
			r = zsm_client_isend(x->c, cm->comm,
					     x->table + s->off, s->size,
					     s->tag, cm->mh, req);
			if (r)
				return LD_CALL_FAIL(
					x,
					"isend(dir %d comm %d round %u size "
					"%u tag %d) returned %s",
					st->dir, st->partial_comm, gr->round,
					s->size, s->tag,
					zsm_client_result_str(r));
			if (!*req) {
				st->counts.nulls++;
				return 0;
			}
			if (!gr->posted)
				gr->t_post = zsm_client_now_ns();
			gr->posted++;
		}
	} else {
		for (j = 0; j < gr->n; j++) {
			data[j] = ld_sub_buf(st, gr, j);
			sizes[j] = gr->sub[j].posted;
			tags[j] = gr->sub[j].tag;
			mhs[j] = cm->mh;
		}
		gr->req[0] = NULL;
		r = zsm_client_irecv(x->c, cm->comm, gr->n, data, sizes, tags,
				     mhs, &gr->req[0]);
		if (r)
			return LD_CALL_FAIL(x,
					    "irecv(dir %d comm %d round %u n "
					    "%d) returned %s",
					    st->dir, st->partial_comm,
					    gr->round, gr->n,
					    zsm_client_result_str(r));
		if (!gr->req[0]) {
			st->counts.nulls++;
			return 0;
		}
		gr->t_post = zsm_client_now_ns();
		gr->posted = 1;
	}
	st->partial = NULL;
	return 1;
}

/*
 * Start and post groups in g order; a NULL request ends the burst and is
 * retried on the next pass, after the tests, as NCCL's proxy does.
 */
static int ld_stream_post(struct ld *x, struct ld_stream *st)
{
	int k, r;

	for (k = 0; k < LD_POST_BURST; k++) {
		if (!st->partial && !ld_group_start(x, st))
			return 0;
		r = ld_group_post(x, st);
		if (r <= 0)
			return r;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* completion */

static int ld_recv_verify(struct ld *x, struct ld_stream *st, int c,
			  const struct ld_group *gr, const int *sizes)
{
	int j;

	for (j = 0; j < gr->n; j++) {
		const struct ld_sub *s = &gr->sub[j];
		const unsigned char *p = ld_sub_buf(st, gr, j);
		const unsigned char *want = x->table + s->off;
		uint32_t i;

		if (sizes[j] != (int)s->size) {
			x->shm->side[x->rank].bad++;
			return ld_fail("dir %d comm %d round %u sub %d of %d "
				       "(tag %d, posted %u): test reported %d "
				       "bytes, %u were sent",
				       st->dir, c, gr->round, j, gr->n, s->tag,
				       s->posted, sizes[j], s->size);
		}
		if (memcmp(p, want, s->size)) {
			for (i = 0; i < s->size && p[i] == want[i]; i++)
				;
			x->shm->side[x->rank].bad++;
			return ld_fail("dir %d comm %d round %u sub %d of %d "
				       "(tag %d, %u bytes): byte %u is 0x%02x, "
				       "sent 0x%02x",
				       st->dir, c, gr->round, j, gr->n, s->tag,
				       s->size, i, p[i], want[i]);
		}
		for (i = 0; i < LD_GUARD; i++)
			if (p[s->posted + i] != LD_GUARD_BYTE) {
				x->shm->side[x->rank].bad++;
				return ld_fail("dir %d comm %d round %u sub %d "
					       "(%u bytes into %u posted): "
					       "byte %u past the posted size "
					       "written",
					       st->dir, c, gr->round, j,
					       s->size, s->posted, i);
			}
	}
	return 0;
}

static void ld_group_finish(struct ld *x, struct ld_stream *st,
			    struct ld_comm *cm, struct ld_group *gr, int c,
			    uint64_t now)
{
	struct ld_side *me = &x->shm->side[x->rank];
	int j;

	st->counts.groups++;
	for (j = 0; j < gr->n; j++) {
		st->counts.msgs++;
		st->counts.zero_msgs += gr->sub[j].size == 0;
	}
	st->counts.bytes += gr->bytes;
	if (gr->round >= st->rounds_done)
		st->rounds_done = gr->round + 1;
	st->inflight_bytes -= gr->bytes;
	st->groups_open--;
	if (!st->sending)
		ld_arena_give(st, gr->rec);
	if (x->o.verbose)
		printf("rank %d %s dir %d comm %d round %u: %d messages, "
		       "%" PRIu64 " bytes, %.3f ms\n",
		       x->rank, st->sending ? "sent" : "received", st->dir, c,
		       gr->round, gr->n, gr->bytes,
		       (double)(now - gr->t_post) / 1e6);
	cm->head++;
	/* relaxed: a progress stamp; the peer only compares its age. */
	atomic_store_explicit(&me->last_done_ns, now, memory_order_relaxed);
}

/*
 * Test the oldest request of comm c, once: what NCCL's proxy does.  sizes
 * is NCCL's int[64]: a send reports its size in sizes[0], a receive its n
 * sizes and nothing past them (NCCL sums all 64).
 */
static int ld_comm_test(struct ld *x, struct ld_stream *st, int c,
			uint64_t now)
{
	struct ld_comm *cm = &st->comms[c];
	struct ld_group *gr;
	int sizes[LD_SIZES], done = 0, j, r;
	const struct ld_sub *s;

	if (cm->head == cm->tail)
		return 0;
	gr = &cm->ring[cm->head % LD_MAX_DEPTH];
	if (gr->done >= gr->posted)
		return 0; /* nothing posted yet that is not finished */
	for (j = 0; j < LD_SIZES; j++)
		sizes[j] = -1;
	st->counts.tests++;
	if (st->sending) {
		s = &gr->sub[gr->order[gr->done]];
		r = zsm_client_test(x->c, gr->req[gr->done], &done, sizes);
		if (r)
			return LD_CALL_FAIL(x, "test of send %d of %d (dir %d "
					    "comm %d round %u) returned %s",
					    gr->done, gr->n, st->dir, c,
					    gr->round,
					    zsm_client_result_str(r));
		if (!done)
			return 0;
		if (sizes[0] != -1 && sizes[0] != (int)s->size) {
			x->shm->side[x->rank].bad++;
			return ld_fail("send (dir %d comm %d round %u tag %d): "
				       "test reported %d bytes sent, not %u",
				       st->dir, c, gr->round, s->tag, sizes[0],
				       s->size);
		}
		gr->req[gr->done++] = NULL;
		if (gr->done < gr->n)
			return 0;
	} else {
		r = zsm_client_test(x->c, gr->req[0], &done, sizes);
		if (r)
			return LD_CALL_FAIL(x,
					    "test of receive (dir %d comm %d "
					    "round %u n %d) returned %s",
					    st->dir, c, gr->round, gr->n,
					    zsm_client_result_str(r));
		if (!done)
			return 0;
		gr->req[0] = NULL;
		gr->done = 1;
		for (j = gr->n; j < LD_SIZES; j++) {
			if (sizes[j] == -1)
				continue;
			x->shm->side[x->rank].bad++;
			return ld_fail("receive of %d (dir %d comm %d round "
				       "%u): test wrote sizes[%d]",
				       gr->n, st->dir, c, gr->round, j);
		}
		if (ld_recv_verify(x, st, c, gr, sizes))
			return -1;
	}
	ld_group_finish(x, st, cm, gr, c, now);
	return 0;
}

/* One pass over every comm, send and receive interleaved. */
static int ld_test_pass(struct ld *x, uint64_t now)
{
	int c;

	for (c = 0; c < x->o.pairs; c++) {
		if (ld_comm_test(x, &x->out, c, now) ||
		    ld_comm_test(x, &x->in, c, now))
			return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* the dump */

static struct ld_pend *ld_pend_at(struct ld *x, int rank, int dir, int c)
{
	return &x->pend[((size_t)rank * 2 + (size_t)dir) * (size_t)x->o.pairs +
			(size_t)c];
}

static void ld_stream_publish(struct ld *x, struct ld_stream *st,
			      uint64_t now)
{
	struct ld_side *me = &x->shm->side[x->rank];
	int c;

	if (!st->comms)
		return; /* failed before its set-up */
	me->next_g[st->dir] = st->next_g;
	me->limit_g[st->dir] = st->limit_g;
	me->inflight_bytes[st->dir] = st->inflight_bytes;
	me->groups_open[st->dir] = st->groups_open;
	me->counts[st->dir] = st->counts;
	for (c = 0; c < x->o.pairs; c++) {
		struct ld_comm *cm = &st->comms[c];
		struct ld_pend *p = ld_pend_at(x, x->rank, st->dir, c);
		struct ld_group *gr;

		memset(p, 0, sizeof(*p));
		p->round = -1;
		if (cm->head == cm->tail)
			continue;
		gr = &cm->ring[cm->head % LD_MAX_DEPTH];
		p->round = (int32_t)gr->round;
		p->n = (int8_t)gr->n;
		p->posted = (int8_t)gr->posted;
		p->done = (int8_t)gr->done;
		p->count = (int8_t)(cm->tail - cm->head);
		p->age_s = gr->posted ? (float)ld_s(now - gr->t_post) : 0;
	}
}

/* This side's state into shared memory, for rank 0 to print. */
static void ld_publish(struct ld *x, uint64_t now)
{
	ld_stream_publish(x, &x->out, now);
	ld_stream_publish(x, &x->in, now);
}

static void ld_print_side(struct ld *x, int rank, uint64_t now)
{
	struct ld_side *s = &x->shm->side[rank];
	/* relaxed: a progress stamp, see ld_group_finish. */
	uint64_t last = atomic_load_explicit(&s->last_done_ns,
					     memory_order_relaxed);
	int d;

	if (last > now)
		last = now;
	printf("rank %d: last completion %.1f s ago; found %" PRIu64
	       " errors, %" PRIu64 " bad messages, %d stalls, %d lost\n",
	       rank, ld_s(now - last), s->errors, s->bad, s->stalls, s->lost);
	for (d = 0; d < 2; d++)
		printf("rank %d %s dir %d: %" PRIu64 " groups started "
		       "(limit %s), %" PRIu64 " finished, %" PRIu64
		       " open with %" PRIu64 " bytes\n",
		       rank, d == rank ? "send" : "recv", d, s->next_g[d],
		       s->limit_g[d] == UINT64_MAX ? "none" : "set",
		       s->counts[d].groups, s->groups_open[d],
		       s->inflight_bytes[d]);
}

/*
 * Both sides of every comm with something pending: which round each side
 * waits on, how much of it was posted, and for how long.  "posted both"
 * is the case where the plugin holds both ends of the same message.
 */
static void ld_print_pending(struct ld *x, int have_peer)
{
	int d, c, shown;

	for (d = 0; d < 2; d++) {
		int pending = 0, both = 0, sonly = 0, ronly = 0, differ = 0;

		shown = 0;
		for (c = 0; c < x->o.pairs; c++) {
			struct ld_pend *s = ld_pend_at(x, d, d, c);
			struct ld_pend *r = ld_pend_at(x, 1 - d, d, c);
			int sp = s->round >= 0 && s->posted > s->done;
			int rp = r->round >= 0 && r->posted > r->done;

			if (!have_peer)
				rp = 0, r = NULL;
			if (s->round < 0 && (!r || r->round < 0))
				continue;
			pending++;
			if (sp && rp && s->round == r->round)
				both++;
			else if (r && s->round >= 0 && r->round >= 0 &&
				 s->round != r->round)
				differ++;
			else if (sp)
				sonly++;
			else if (rp)
				ronly++;
			if (shown >= x->o.dump_max)
				continue;
			shown++;
			printf("  dir %d comm %4d: send ", d, c);
			if (s->round < 0)
				printf("%-38s", "none");
			else
				printf("round %-6d %d/%d posted %d done "
				       "%6.1f s (%d open)",
				       s->round, s->posted, s->n, s->done,
				       (double)s->age_s, s->count);
			if (!r)
				printf(" | recv: not known\n");
			else if (r->round < 0)
				printf(" | recv none\n");
			else
				printf(" | recv round %-6d n %d %s %6.1f s "
				       "(%d open)\n",
				       r->round, r->n,
				       r->posted ? "posted" : "not posted",
				       (double)r->age_s, r->count);
		}
		printf("dir %d: %d comms pending: %d with the send and its "
		       "receive both posted, %d send only, %d receive only, "
		       "%d on different rounds%s\n",
		       d, pending, both, sonly, ronly, differ,
		       pending > shown ? " (not all listed: --dump-max)" : "");
	}
}

/*
 * After a failure: publish, and on rank 0 print both sides once rank 1
 * has published too (or has not within 10 s: it may be stuck in the
 * plugin).  Rank 1 waits for the print so that its exit does not end
 * rank 0 first, and prints its own side if rank 0 never does.
 */
static void ld_dump(struct ld *x)
{
	struct ld_side *peer = &x->shm->side[1 - x->rank];
	uint64_t now = zsm_client_now_ns(), t;
	int have_peer = 0;

	ld_publish(x, now);
	/* release: pairs with the acquire below on the other rank. */
	atomic_store_explicit(&x->shm->side[x->rank].dumped, 1,
			      memory_order_release);
	for (t = now; zsm_client_now_ns() - t < 10 * LD_NSEC;) {
		/* acquire: pairs with the release above on the other rank. */
		if (atomic_load_explicit(&peer->dumped, memory_order_acquire)) {
			have_peer = 1;
			break;
		}
		if (x->rank == 1 &&
		    atomic_load_explicit(&x->shm->printed,
					 memory_order_acquire))
			return;
		usleep(10000);
	}
	if (x->rank == 1) {
		/* acquire: pairs with the release after rank 0's print. */
		for (t = zsm_client_now_ns();
		     zsm_client_now_ns() - t < 20 * LD_NSEC;)
			if (atomic_load_explicit(&x->shm->printed,
						 memory_order_acquire))
				return;
			else
				usleep(10000);
	}
	printf("FAIL: %s\n", x->shm->why);
	if (x->t0)
		printf("pending at the failure (%.1f s into the traffic):\n",
		       ld_s(now - x->t0));
	else
		printf("failed during set-up\n");
	ld_print_side(x, x->rank, now);
	if (have_peer)
		ld_print_side(x, 1 - x->rank, now);
	if (x->rank == 0)
		ld_print_pending(x, have_peer);
	fflush(stdout);
	/* release: rank 1 may exit now; pairs with its acquire above. */
	atomic_store_explicit(&x->shm->printed, 1, memory_order_release);
}

/* ---------------------------------------------------------------------- */
/* the run */

static uint64_t ld_last_done_any(struct ld *x)
{
	/* relaxed: progress stamps, see ld_group_finish. */
	uint64_t a = atomic_load_explicit(&x->shm->side[0].last_done_ns,
					  memory_order_relaxed);
	uint64_t b = atomic_load_explicit(&x->shm->side[1].last_done_ns,
					  memory_order_relaxed);

	return a > b ? a : b;
}

/*
 * Whether group gr of comm c must finish: always, but for a receiver with
 * --recv-ahead once its sender stopped, only a group the sender started
 * (its first final_g, in the sender's order).
 */
static int ld_needed(const struct ld *x, const struct ld_stream *st, int c,
		     const struct ld_group *gr)
{
	uint64_t n = (uint64_t)x->o.pairs, last;

	if (st->final_g == UINT64_MAX)
		return 1;
	last = st->final_g / n;
	return gr->round < last ||
	       (gr->round == last && st->final_pos[c] < st->final_g % n);
}

/* The oldest posted request of this side that has not finished. */
static const struct ld_group *ld_oldest(struct ld *x, struct ld_stream **in,
					int *comm)
{
	const struct ld_group *best = NULL;
	struct ld_stream *sts[2] = { &x->out, &x->in };
	int s, c;

	for (s = 0; s < 2; s++)
		for (c = 0; c < x->o.pairs; c++) {
			struct ld_comm *cm = &sts[s]->comms[c];
			const struct ld_group *gr;

			if (cm->head == cm->tail)
				continue;
			gr = &cm->ring[cm->head % LD_MAX_DEPTH];
			/* Unposted, or a receive no message is sent for. */
			if (!gr->posted || !ld_needed(x, sts[s], c, gr))
				continue;
			if (!best || gr->t_post < best->t_post) {
				best = gr;
				*in = sts[s];
				*comm = c;
			}
		}
	return best;
}

/* Whether st has a group open that must finish. */
static int ld_stream_busy(const struct ld *x, const struct ld_stream *st)
{
	int c;

	if (st->final_g == UINT64_MAX)
		return st->groups_open || st->partial;
	/* A comm's groups are in round order, its oldest first. */
	for (c = 0; c < x->o.pairs; c++) {
		const struct ld_comm *cm = &st->comms[c];

		if (cm->head != cm->tail &&
		    ld_needed(x, st, c, &cm->ring[cm->head % LD_MAX_DEPTH]))
			return 1;
	}
	return 0;
}

/* Whether anything that must finish is still open on this side. */
static int ld_busy(const struct ld *x)
{
	return ld_stream_busy(x, &x->out) || ld_stream_busy(x, &x->in);
}

/*
 * A lost message: one request open for lost_s while others went on
 * finishing, or a stall in which one comm's open group is a whole depth
 * of rounds behind what its stream finished on other comms (one message
 * lost, and the stream then stopped on that comm's full window: groups
 * start in order).  A stall: no request of either side finished for
 * stall_s although some are open, the comms at about the same round.
 */
static int ld_check_progress(struct ld *x, uint64_t now)
{
	uint64_t last = ld_last_done_any(x);
	const struct ld_group *gr;
	struct ld_stream *st = NULL;
	double idle, age;
	int comm = 0;
	long lag, lag_lost;

	if (!ld_busy(x))
		return 0;
	/* The other rank's stamp can be newer than our now. */
	idle = last < now ? ld_s(now - last) : 0;
	gr = ld_oldest(x, &st, &comm);
	age = gr && gr->t_post < now ? ld_s(now - gr->t_post) : 0;
	lag = gr ? (long)st->rounds_done - 1 - (long)gr->round : 0;
	/*
	 * Groups start in order, so no comm finishes more than depth rounds
	 * ahead of another's open group: a comm that far behind is the one the
	 * rest waited for.  Comms stopped together are a round or two apart.
	 */
	lag_lost = x->o.depth > 2 ? x->o.depth - 1 : x->o.depth;
	if (gr && ((idle > x->o.stall_s && lag >= lag_lost) ||
		   (age > x->o.lost_s && idle < x->o.stall_s / 2))) {
		x->shm->side[x->rank].lost++;
		return ld_fail("lost message: %s of dir %d comm %d round %u "
			       "(%d messages) open for %.1f s (--lost-s %.0f), "
			       "%ld rounds behind its stream; the last request "
			       "of either process finished %.1f s ago "
			       "(--stall-s %.0f)",
			       st->sending ? "send" : "receive", st->dir, comm,
			       gr->round, gr->n, age, x->o.lost_s, lag, idle,
			       x->o.stall_s);
	}
	if (idle > x->o.stall_s) {
		x->shm->side[x->rank].stalls++;
		return ld_fail("stall: no request of either process finished "
			       "for %.1f s (--stall-s %.0f); the oldest open "
			       "request was posted %.1f s ago",
			       idle, x->o.stall_s, age);
	}
	return 0;
}

/*
 * The end: rank 0 says stop when the time is up; each side publishes how
 * many groups it started per direction and starts no more; once both
 * have, each finishes up to the larger count, so every group started on
 * either side is sent and received.  With --recv-ahead only the senders
 * stop: a receiver finishes the groups its sender started and leaves
 * posted those it started past them, as a peer that stopped sending
 * leaves NCCL's receives; the comms close with them posted.
 */
static void ld_end_ahead(struct ld *x, uint64_t sent)
{
	struct ld_stream *st = &x->in;
	uint64_t n = (uint64_t)x->o.pairs, last = sent / n;
	uint32_t i;

	/* Where each comm is in the sender's last round: the groups it
	 * started there are the first sent % n. */
	ld_perm_fill(x, st->dir, 0, last, st->final_pos);
	for (i = 0; i < n; i++)
		st->perm[st->final_pos[i]] = i;
	memcpy(st->final_pos, st->perm, n * sizeof(*st->perm));
	st->perm_round = 0; /* perm was used: made again when needed */
	st->final_g = sent;
	/* And on past them, a comm's whole window of rounds, as NCCL's
	 * receives stay posted for a peer that stopped sending. */
	st->limit_g = (last + 1 + (uint64_t)x->o.depth) * n;
}

/* The groups st must start: with --recv-ahead, once its sender stopped,
 * every round the sender started (in the receiver's order). */
static uint64_t ld_stream_need(const struct ld *x, const struct ld_stream *st)
{
	uint64_t n = (uint64_t)x->o.pairs;

	if (st->final_g == UINT64_MAX)
		return st->limit_g;
	return (st->final_g + n - 1) / n * n;
}

static void ld_check_end(struct ld *x, uint64_t now)
{
	struct ld_side *me = &x->shm->side[x->rank];
	struct ld_side *peer = &x->shm->side[1 - x->rank];
	uint64_t theirs;

	/* release: pairs with the acquire below on rank 1. */
	if (x->rank == 0 && ld_s(now - x->t0) >= x->o.seconds)
		atomic_store_explicit(&x->shm->stop, 1, memory_order_release);
	/* acquire: pairs with the release above. */
	if (!x->stopping &&
	    atomic_load_explicit(&x->shm->stop, memory_order_acquire)) {
		x->out.limit_g = x->out.next_g;
		if (!x->o.recv_ahead)
			x->in.limit_g = x->in.next_g;
		me->started[x->out.dir] = x->out.next_g;
		me->started[x->in.dir] = x->in.next_g;
		/* release: publishes started[]; pairs with the next acquire. */
		atomic_store_explicit(&me->stop_seen, 1, memory_order_release);
		x->stopping = 1;
	}
	/* acquire: pairs with the release above on the other rank. */
	if (!x->stopping || x->ending ||
	    !atomic_load_explicit(&peer->stop_seen, memory_order_acquire))
		return;
	x->ending = 1;
	if (x->o.recv_ahead) {
		ld_end_ahead(x, peer->started[x->in.dir]);
		return;
	}
	theirs = peer->started[x->out.dir];
	if (theirs > x->out.limit_g)
		x->out.limit_g = theirs;
	theirs = peer->started[x->in.dir];
	if (theirs > x->in.limit_g)
		x->in.limit_g = theirs;
}

static int ld_tick(struct ld *x, uint64_t now)
{
	if (ld_failed(x))
		return -1;
	if (now >= x->next_sample) {
		ld_sample_take(x, now);
		x->next_sample += x->sample_ns;
	}
	ld_check_end(x, now);
	return ld_check_progress(x, now);
}

static int ld_finished(const struct ld *x)
{
	return x->ending && !ld_busy(x) &&
	       x->out.next_g >= ld_stream_need(x, &x->out) &&
	       x->in.next_g >= ld_stream_need(x, &x->in);
}

static int ld_run(struct ld *x)
{
	uint64_t now = zsm_client_now_ns(), next_tick = now + LD_TICK_NS;

	for (;;) {
		if (ld_stream_post(x, &x->out) || ld_stream_post(x, &x->in))
			return -1;
		now = zsm_client_now_ns();
		if (ld_test_pass(x, now))
			return -1;
		if (now >= next_tick) {
			next_tick = now + LD_TICK_NS;
			if (ld_tick(x, now))
				return -1;
		}
		if (ld_finished(x))
			return 0;
	}
}

/* ---------------------------------------------------------------------- */
/* set-up and teardown */

static int ld_stream_init(struct ld *x, struct ld_stream *st, int dir)
{
	memset(st, 0, sizeof(*st));
	st->dir = dir;
	st->sending = dir == x->rank;
	st->limit_g = UINT64_MAX;
	st->final_g = UINT64_MAX;
	st->comms = calloc((size_t)x->o.pairs, sizeof(*st->comms));
	st->perm = calloc((size_t)x->o.pairs, sizeof(*st->perm));
	st->final_pos = calloc((size_t)x->o.pairs, sizeof(*st->perm));
	if (!st->comms || !st->perm || !st->final_pos)
		return ld_fail("out of memory for %d comms", x->o.pairs);
	/* Touched now (calloc may leave it unmapped), like the arena. */
	memset(st->comms, 0, (size_t)x->o.pairs * sizeof(*st->comms));
	if (st->sending)
		return 0;
	st->arena_len = x->o.inflight;
	/* 2 MiB aligned, so that it can sit on huge pages. */
	st->arena = aligned_alloc(2u << 20, (st->arena_len + (2u << 20) - 1) &
						    ~(size_t)((2u << 20) - 1));
	st->c_cap = (uint64_t)x->o.pairs * (uint64_t)x->o.depth;
	st->chunks = calloc(st->c_cap, sizeof(*st->chunks));
	if (!st->arena || !st->chunks)
		return ld_fail("out of memory for a %zu-byte receive arena",
			       st->arena_len);
	memset(st->chunks, 0, st->c_cap * sizeof(*st->chunks));
	/* Touched now, so that RSS after the warm-up is the steady state. */
	memset(st->arena, 0, st->arena_len);
	return 0;
}

static void ld_stream_free(struct ld_stream *st)
{
	free(st->comms);
	free(st->perm);
	free(st->final_pos);
	free(st->arena);
	free(st->chunks);
	st->comms = NULL;
	st->perm = NULL;
	st->final_pos = NULL;
	st->arena = NULL;
	st->chunks = NULL;
}

static int ld_open(struct ld *x)
{
	struct zsm_client_props p;
	int ndev = 0, r;

	r = zsm_client_open(x->o.plugin, x->o.abi, &x->c);
	if (r)
		return ld_fail("open %s: %s", x->o.plugin,
			       zsm_client_result_str(r));
	x->name = zsm_client_name(x->c);
	r = zsm_client_init(x->c, 0x6c6f6164u);
	if (!r)
		r = zsm_client_devices(x->c, &ndev);
	if (r)
		return ld_fail("init or devices returned %s",
			       zsm_client_result_str(r));
	if (ndev <= x->o.dev)
		return ld_fail("device %d asked for, the plugin has %d",
			       x->o.dev, ndev);
	r = zsm_client_get_properties(x->c, x->o.dev, &p);
	if (r)
		return ld_fail("getProperties returned %s",
			       zsm_client_result_str(r));
	if (p.max_recvs < 1)
		return ld_fail("maxRecvs is %d", p.max_recvs);
	x->max_recvs = p.max_recvs < LD_MAX_N ? p.max_recvs : LD_MAX_N;
	if (x->o.max_recvs > 0 && x->o.max_recvs < x->max_recvs)
		x->max_recvs = x->o.max_recvs;
	if (p.max_comms > 0 && p.max_comms < x->o.pairs)
		return ld_fail("maxComms %d is below the %d pairs asked for",
			       p.max_comms, x->o.pairs);
	if (p.max_p2p_bytes && p.max_p2p_bytes < x->o.max_size)
		return ld_fail("maxP2pBytes %zu is below --max-size %zu",
			       p.max_p2p_bytes, x->o.max_size);
	if (!(p.ptr_support & NCCL_PTR_HOST))
		return ld_fail("the plugin takes no host memory (ptrSupport "
			       "0x%x)",
			       p.ptr_support);
	return 0;
}

/* One call of connect and one of accept on comm i, where not yet done. */
static int ld_connect_one(struct ld *x, int i, void *handle, void *listen,
			  int *left)
{
	struct ld_comm *s = &x->out.comms[i], *rc = &x->in.comms[i];
	int r;

	if (!s->comm) {
		r = zsm_client_connect(x->c, x->o.dev, handle, &s->comm);
		if (r)
			return ld_fail("connect %d returned %s", i,
				       zsm_client_result_str(r));
		*left -= !!s->comm;
	}
	if (!rc->comm) {
		r = zsm_client_accept(x->c, listen, &rc->comm);
		if (r)
			return ld_fail("accept %d returned %s", i,
				       zsm_client_result_str(r));
		if (!rc->comm)
			return 0;
		(*left)--;
		/* As NCCL does: the accept ends the listen. */
		r = zsm_client_close_listen(x->c, listen);
		if (r)
			return ld_fail("closeListen %d returned %s", i,
				       zsm_client_result_str(r));
	}
	return 0;
}

/*
 * Every listen, the handles both ways, then connect and accept
 * round-robin, on at most connect_batch comms at once (both sides move the
 * same window up the indices), as NCCL's service thread has a few
 * connections in progress, not thousands.  Comm i of direction d links
 * rank d's send comm i to the other rank's receive comm i.
 */
static int ld_connect(struct ld *x)
{
	int n = x->o.pairs, left = 2 * n, lo = 0, hi, i, r;
	char (*mine)[NCCL_NET_HANDLE_MAXSIZE];
	char (*theirs)[NCCL_NET_HANDLE_MAXSIZE];
	size_t hlen = (size_t)n * NCCL_NET_HANDLE_MAXSIZE;
	void **listen;
	uint64_t t0 = zsm_client_now_ns();
	double limit_s = 60 + n / 10.0;

	mine = calloc((size_t)n, NCCL_NET_HANDLE_MAXSIZE);
	theirs = calloc((size_t)n, NCCL_NET_HANDLE_MAXSIZE);
	listen = calloc((size_t)n, sizeof(*listen));
	if (!mine || !theirs || !listen)
		return ld_fail("out of memory for %d handles", n);
	for (i = 0; i < n; i++) {
		r = zsm_client_listen(x->c, x->o.dev, mine[i], &listen[i]);
		if (r || !listen[i])
			return ld_fail("listen %d returned %s%s", i,
				       zsm_client_result_str(r),
				       listen[i] ? "" : " and no comm");
	}
	/* One side writes first: both writing 128 KiB could fill the pair. */
	if (x->rank == 0 ? oob_send(mine, hlen) || oob_recv(theirs, hlen)
			 : oob_recv(theirs, hlen) || oob_send(mine, hlen))
		return ld_fail("handle exchange with the peer failed");
	while (left) {
		while (lo < n && x->out.comms[lo].comm && x->in.comms[lo].comm)
			lo++;
		hi = lo + x->o.connect_batch < n ? lo + x->o.connect_batch : n;
		for (i = lo; i < hi; i++)
			if (ld_connect_one(x, i, theirs[i], listen[i], &left))
				return -1;
		if (ld_failed(x))
			return -1;
		if (ld_s(zsm_client_now_ns() - t0) > limit_s)
			return ld_fail("%d of %d connections not made after "
				       "%.0f s",
				       left, 2 * n, limit_s);
	}
	free(mine);
	free(theirs);
	free(listen);
	return 0;
}

static int ld_register(struct ld *x)
{
	int i, r;

	for (i = 0; i < x->o.pairs; i++) {
		r = zsm_client_reg_mr(x->c, x->out.comms[i].comm, x->table,
				      x->table_len, NCCL_PTR_HOST,
				      &x->out.comms[i].mh);
		if (!r)
			r = zsm_client_reg_mr(x->c, x->in.comms[i].comm,
					      x->in.arena, x->in.arena_len,
					      NCCL_PTR_HOST,
					      &x->in.comms[i].mh);
		if (r)
			return ld_fail("regMr on comm %d returned %s", i,
				       zsm_client_result_str(r));
	}
	return 0;
}

static int ld_teardown(struct ld *x)
{
	int i, r, ret = 0;

	for (i = 0; x->c && i < x->o.pairs; i++) {
		struct ld_comm *s = x->out.comms ? &x->out.comms[i] : NULL;
		struct ld_comm *rc = x->in.comms ? &x->in.comms[i] : NULL;

		if (s && s->mh && (r = zsm_client_dereg_mr(x->c, s->comm,
							    s->mh)))
			ret = ld_fail("deregMr on send comm %d: %s", i,
				      zsm_client_result_str(r));
		if (rc && rc->mh && (r = zsm_client_dereg_mr(x->c, rc->comm,
							      rc->mh)))
			ret = ld_fail("deregMr on receive comm %d: %s", i,
				      zsm_client_result_str(r));
		if (s && s->comm && (r = zsm_client_close_send(x->c, s->comm)))
			ret = ld_fail("closeSend %d: %s", i,
				      zsm_client_result_str(r));
		if (rc && rc->comm &&
		    (r = zsm_client_close_recv(x->c, rc->comm)))
			ret = ld_fail("closeRecv %d: %s", i,
				      zsm_client_result_str(r));
	}
	if (x->c) {
		r = zsm_client_finalize(x->c);
		if (r)
			ret = ld_fail("finalize: %s", zsm_client_result_str(r));
		zsm_client_close(x->c);
		x->c = NULL;
	}
	ld_stream_free(&x->out);
	ld_stream_free(&x->in);
	free(x->table);
	x->table = NULL;
	return ret;
}

/* ---------------------------------------------------------------------- */
/* the summary */

/* Largest sample with early <= t_s < late; 0 when none. */
static int ld_window_max(const struct ld_side *s, double lo, double hi,
			 uint32_t *rss, uint32_t *fds)
{
	uint32_t i;
	int n = 0;

	*rss = *fds = 0;
	for (i = 0; i < s->nsamples; i++) {
		const struct ld_sample *p = &s->samples[i];

		if (p->t_s < lo || p->t_s > hi)
			continue;
		n++;
		if (p->rss_kib > *rss)
			*rss = p->rss_kib;
		if (p->fds > *fds)
			*fds = p->fds;
	}
	return n;
}

/*
 * Flat: after the warm-up, the largest RSS of the last quarter of the
 * samples exceeds the largest of the first quarter by no more than
 * rss_tol_mib MiB or rss_tol_pct percent of it (whichever is larger),
 * and the largest fd count by no more than fd_tol.  Returns 0 flat, 1
 * grown, -1 too few samples to say.
 */
static int ld_flat(struct ld *x, int rank, char *msg, size_t len)
{
	const struct ld_side *s = &x->shm->side[rank];
	const struct ld_sample *first = &s->samples[0];
	const struct ld_sample *last = &s->samples[s->nsamples - 1];
	double warm = x->o.warmup_s, end, q, tol;
	uint32_t er, ef, lr, lf;
	int ne, nl, grown;

	if (s->nsamples < 2) {
		snprintf(msg, len, "no samples");
		return -1;
	}
	end = last->t_s;
	q = (end - warm) / 4;
	ne = ld_window_max(s, warm, warm + q, &er, &ef);
	nl = ld_window_max(s, end - q, end, &lr, &lf);
	tol = (double)er / 1024 * x->o.rss_tol_pct / 100;
	if (tol < x->o.rss_tol_mib)
		tol = x->o.rss_tol_mib;
	grown = ((double)lr - er) / 1024 > tol ||
		(int)lf - (int)ef > x->o.fd_tol;
	snprintf(msg, len,
		 "RSS MiB start %.1f early %.1f late %.1f end %.1f (growth "
		 "%+.1f, limit %.1f); fds start %u early %u late %u end %u "
		 "(growth %+d, limit %d); %d+%d samples after a %.1f s "
		 "warm-up",
		 first->rss_kib / 1024.0, er / 1024.0, lr / 1024.0,
		 last->rss_kib / 1024.0, ((double)lr - er) / 1024, tol,
		 first->fds, ef, lf, last->fds, (int)lf - (int)ef, x->o.fd_tol,
		 ne, nl, warm);
	if (!ne || !nl || q <= 0)
		return -1;
	return grown;
}

/* About a dozen samples, evenly spaced, all of them with --verbose. */
static void ld_print_samples(struct ld *x, int rank)
{
	const struct ld_side *s = &x->shm->side[rank];
	uint32_t i, step = s->nsamples / 12 + 1;

	if (x->o.verbose)
		step = 1;
	printf("rank %d samples (s: RSS MiB/fds):", rank);
	for (i = 0; i < s->nsamples; i++)
		if (i % step == 0 || i + 1 == s->nsamples)
			printf(" %.0f:%.1f/%u", (double)s->samples[i].t_s,
			       s->samples[i].rss_kib / 1024.0,
			       s->samples[i].fds);
	printf("\n");
}

static int ld_summary(struct ld *x, double secs)
{
	struct ld_side *s0 = &x->shm->side[0], *s1 = &x->shm->side[1];
	char msg[2][512];
	double gbs = 0;
	int d, rank, flat[2], ret = OOB_PASS;

	printf("zsm-load: plugin '%s' (%s), ncclNet v%d, device %d, %d comm "
	       "pairs each way, maxRecvs %d, sizes 0..%zu, depth %d, %zu "
	       "bytes in flight per direction at most, seed %" PRIu64 "\n",
	       x->name ? x->name : "?", x->o.plugin, zsm_client_abi(x->c),
	       x->o.dev, x->o.pairs, x->max_recvs, x->o.max_size, x->o.depth,
	       x->o.inflight, x->o.seed);
	for (d = 0; d < 2; d++) {
		const struct ld_counts *snd = &x->shm->side[d].counts[d];
		const struct ld_counts *rcv = &x->shm->side[1 - d].counts[d];
		double g = (double)rcv->bytes / secs / 1e9;

		gbs += g;
		printf("dir %d->%d: %" PRIu64 " groups, %" PRIu64
		       " messages (%" PRIu64 " empty), %" PRIu64
		       " bytes, %.3f GB/s; sent %" PRIu64 " messages; NULL "
		       "requests: isend %" PRIu64 ", irecv %" PRIu64
		       "; tests %" PRIu64 "\n",
		       d, 1 - d, rcv->groups, rcv->msgs, rcv->zero_msgs,
		       rcv->bytes, g, snd->msgs, snd->nulls, rcv->nulls,
		       snd->tests + rcv->tests);
		if (x->o.recv_ahead)
			printf("dir %d->%d: %" PRIu64 " receive groups left "
			       "posted for messages never sent\n",
			       d, 1 - d, x->shm->side[1 - d].groups_open[d]);
		if (snd->msgs != rcv->msgs || snd->bytes != rcv->bytes) {
			printf("FAIL: dir %d: %" PRIu64 " messages (%" PRIu64
			       " bytes) sent, %" PRIu64 " (%" PRIu64
			       " bytes) received\n",
			       d, snd->msgs, snd->bytes, rcv->msgs,
			       rcv->bytes);
			ret = OOB_FAIL;
		}
	}
	printf("both ways: %.3f GB/s over %.1f s; errors %" PRIu64
	       ", bad messages %" PRIu64 ", stalls %d, lost %d\n",
	       gbs, secs, s0->errors + s1->errors, s0->bad + s1->bad,
	       s0->stalls + s1->stalls, s0->lost + s1->lost);
	for (rank = 0; rank < 2; rank++)
		ld_print_samples(x, rank);
	for (rank = 0; rank < 2; rank++) {
		flat[rank] = ld_flat(x, rank, msg[rank], sizeof(msg[rank]));
		printf("rank %d: %s\n", rank, msg[rank]);
		if (flat[rank] > 0) {
			printf("FAIL: rank %d: RSS or fds grew\n", rank);
			ret = OOB_FAIL;
		} else if (flat[rank] < 0) {
			printf("note: rank %d: too short a run to judge RSS "
			       "and fds\n",
			       rank);
		}
	}
	printf("%s\n", ret == OOB_PASS ? "PASS" : "FAIL");
	fflush(stdout);
	return ret;
}

/* ---------------------------------------------------------------------- */
/* options */

static void ld_usage(FILE *f)
{
	fprintf(f,
		"usage: zsm-load [options]\n"
		"  --plugin PATH     the ncclNet plugin (default %s)\n"
		"  --abi N           ncclNetPlugin_vN, 8..12 (default: "
		"highest)\n"
		"  --dev N           device (default 0)\n"
		"  --pairs N         comm pairs each way (default 1000)\n"
		"  --seconds S       traffic time (default 60)\n"
		"  --max-size B      largest message, K/M suffixes (default "
		"8M)\n"
		"  --inflight B      bytes in flight per direction (default "
		"256M)\n"
		"  --depth N         groups in flight per comm, 1..32 "
		"(default 8)\n"
		"  --max-recvs N     cap below the plugin's maxRecvs\n"
		"  --seed N          schedule and data seed (default 1)\n"
		"  --stall-s S       fail when nothing finishes for S "
		"(default 20)\n"
		"  --lost-s S        fail when one request is open for S "
		"while others finish (default 30)\n"
		"  --warmup-s S      RSS/fds are judged after S (default: a "
		"fifth of the run)\n"
		"  --sample-s S      RSS/fds sample period (default 1)\n"
		"  --rss-tol-mib M   RSS growth allowed, MiB (default 32)\n"
		"  --rss-tol-pct P   or percent of early RSS (default 5)\n"
		"  --fd-tol N        fd growth allowed (default 2)\n"
		"  --dump-max N      comms listed per direction in a failure "
		"dump (default 40)\n"
		"  --connect-batch N connections in progress at once "
		"(default 16)\n"
		"  --recv-ahead      at the end only senders stop: receivers "
		"finish what\n"
		"                    was sent and leave the receives they "
		"posted past it\n"
		"  --verbose         a line per finished group\n",
		ZSM_LOAD_DEFAULT_PLUGIN);
}

static int ld_parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	else if (*end == 'G' || *end == 'g')
		v <<= 30, end++;
	if (*end)
		return -1;
	*out = (size_t)v;
	return 0;
}

static int ld_parse_num(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* What the run does: 0 taken, 1 a bad value, -1 not one of these. */
static int ld_parse_run(struct ld_opts *o, int c, const char *arg)
{
	double v;
	int bad = 0;

	switch (c) {
	case 'p':
		o->plugin = arg;
		break;
	case 'a':
		bad |= ld_parse_num(arg, 8, 12, &v);
		o->abi = (int)v;
		break;
	case 'd':
		bad |= ld_parse_num(arg, 0, 1023, &v);
		o->dev = (int)v;
		break;
	case 'n':
		bad |= ld_parse_num(arg, 1, 65536, &v);
		o->pairs = (int)v;
		break;
	case 't':
		bad |= ld_parse_num(arg, 0.1, 1e6, &o->seconds);
		break;
	case 'm':
		bad |= ld_parse_size(arg, &o->max_size);
		bad |= o->max_size > (1u << 30);
		break;
	case 'i':
		bad |= ld_parse_size(arg, &o->inflight);
		break;
	case 'D':
		bad |= ld_parse_num(arg, 1, LD_MAX_DEPTH, &v);
		o->depth = (int)v;
		break;
	case 'R':
		bad |= ld_parse_num(arg, 1, LD_MAX_N, &v);
		o->max_recvs = (int)v;
		break;
	case 's':
		bad |= ld_parse_num(arg, 0, 1e15, &v);
		o->seed = (uint64_t)v;
		break;
	default:
		return -1;
	}
	return bad;
}

/* What the run checks and says: 0, 1 or -1, as ld_parse_run. */
static int ld_parse_check(struct ld_opts *o, int c, const char *arg)
{
	double v;
	int bad = 0;

	switch (c) {
	case 'S':
		bad |= ld_parse_num(arg, 0.1, 1e6, &o->stall_s);
		break;
	case 'L':
		bad |= ld_parse_num(arg, 0.1, 1e6, &o->lost_s);
		break;
	case 'W':
		bad |= ld_parse_num(arg, 0, 1e6, &o->warmup_s);
		break;
	case 'P':
		bad |= ld_parse_num(arg, 0.01, 1e4, &o->sample_s);
		break;
	case 'M':
		bad |= ld_parse_num(arg, 0, 1e6, &o->rss_tol_mib);
		break;
	case 'C':
		bad |= ld_parse_num(arg, 0, 1e4, &o->rss_tol_pct);
		break;
	case 'F':
		bad |= ld_parse_num(arg, 0, 1e6, &v);
		o->fd_tol = (int)v;
		break;
	case 'X':
		bad |= ld_parse_num(arg, 0, 1e6, &v);
		o->dump_max = (int)v;
		break;
	case 'B':
		bad |= ld_parse_num(arg, 1, 65536, &v);
		o->connect_batch = (int)v;
		break;
	case 'A':
		o->recv_ahead = 1;
		break;
	case 'v':
		o->verbose = 1;
		break;
	default:
		return -1;
	}
	return bad;
}

static int ld_parse(struct ld_opts *o, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "plugin", required_argument, NULL, 'p' },
		{ "abi", required_argument, NULL, 'a' },
		{ "dev", required_argument, NULL, 'd' },
		{ "pairs", required_argument, NULL, 'n' },
		{ "seconds", required_argument, NULL, 't' },
		{ "max-size", required_argument, NULL, 'm' },
		{ "inflight", required_argument, NULL, 'i' },
		{ "depth", required_argument, NULL, 'D' },
		{ "max-recvs", required_argument, NULL, 'R' },
		{ "seed", required_argument, NULL, 's' },
		{ "stall-s", required_argument, NULL, 'S' },
		{ "lost-s", required_argument, NULL, 'L' },
		{ "warmup-s", required_argument, NULL, 'W' },
		{ "sample-s", required_argument, NULL, 'P' },
		{ "rss-tol-mib", required_argument, NULL, 'M' },
		{ "rss-tol-pct", required_argument, NULL, 'C' },
		{ "fd-tol", required_argument, NULL, 'F' },
		{ "dump-max", required_argument, NULL, 'X' },
		{ "connect-batch", required_argument, NULL, 'B' },
		{ "recv-ahead", no_argument, NULL, 'A' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, r, bad = 0;

	*o = (struct ld_opts){
		.plugin = ZSM_LOAD_DEFAULT_PLUGIN,
		.pairs = 1000,
		.seconds = 60,
		.max_size = 8u << 20,
		.inflight = 256u << 20,
		.depth = 8,
		.seed = 1,
		.stall_s = 20,
		.lost_s = 30,
		.warmup_s = -1,
		.sample_s = 1,
		.rss_tol_mib = 32,
		.rss_tol_pct = 5,
		.fd_tol = 2,
		.dump_max = 40,
		.connect_batch = 16,
	};
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'h') {
			ld_usage(stdout);
			exit(0);
		}
		r = ld_parse_run(o, c, optarg);
		if (r < 0)
			r = ld_parse_check(o, c, optarg);
		bad |= r != 0;
	}
	if (bad || optind != argc) {
		ld_usage(stderr);
		return -1;
	}
	if (o->warmup_s < 0)
		o->warmup_s = o->seconds / 5;
	return 0;
}

/* ---------------------------------------------------------------------- */

static void *ld_shm_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Set-up of one rank; on failure the reason is in shared memory. */
static int ld_setup(struct ld *x)
{
	size_t i;

	oob_doing("opening the plugin");
	if (ld_open(x))
		return -1;
	if (x->o.inflight < ld_chunk_max(x->o.max_size, x->max_recvs))
		x->o.inflight = ld_chunk_max(x->o.max_size, x->max_recvs);
	x->table_len = x->o.max_size + LD_OFF_SPAN;
	x->table = malloc(x->table_len);
	if (!x->table)
		return ld_fail("out of memory for the %zu-byte table",
			       x->table_len);
	for (i = 0; i < x->table_len; i++)
		x->table[i] = zsm_pattern_byte((uint32_t)x->o.seed, i);
	if (ld_stream_init(x, &x->out, x->rank) ||
	    ld_stream_init(x, &x->in, 1 - x->rank))
		return -1;
	oob_doing("connecting");
	if (ld_connect(x))
		return -1;
	oob_doing("registering buffers");
	if (ld_register(x))
		return -1;
	return 0;
}

/*
 * After this side drained: wait for the other, polling, so that a
 * failure it reports meanwhile still gets this side's dump.
 */
static int ld_wait_peer(struct ld *x)
{
	struct ld_side *peer = &x->shm->side[1 - x->rank];

	/* acquire: pairs with the release of stats_ready on the other rank. */
	while (!atomic_load_explicit(&peer->stats_ready,
				     memory_order_acquire)) {
		if (ld_failed(x))
			return -1;
		usleep(1000);
	}
	return 0;
}

/* A failed rank dumps and ends; comms stay open (closing may hang too). */
static int ld_end_failed(struct ld *x)
{
	ld_dump(x);
	return oob_finish(OOB_FAIL);
}

int main(int argc, char **argv)
{
	struct ld *x = &ld_g;
	uint64_t t_end;
	size_t shm_len;
	unsigned limit;
	int status = OOB_PASS, rank;

	if (ld_parse(&x->o, argc, argv))
		return 2;
	ld_raise_nofile();
	shm_len = sizeof(struct ld_shm) +
		  4 * (size_t)x->o.pairs * sizeof(struct ld_pend);
	x->shm = ld_shm_map(shm_len);
	if (!x->shm) {
		perror("zsm-load: mmap");
		return OOB_FAIL;
	}
	x->pend = (struct ld_pend *)(x->shm + 1);
	/* Touched before the first sample, so samples show others' memory. */
	memset(x->shm, 0, shm_len);
	/* Every bound below is a backstop: the checks fail first. */
	limit = (unsigned)(120 + x->o.pairs / 5);
	rank = oob_start(limit);
	if (rank < 0)
		return OOB_FAIL;
	x->rank = rank;
	if (ld_setup(x))
		return ld_end_failed(x);
	oob_doing("waiting for the peer's set-up");
	if (oob_barrier()) {
		ld_fail("peer gone during set-up");
		return oob_finish(OOB_FAIL);
	}
	oob_set_timeout((unsigned)(x->o.seconds + 2 * x->o.stall_s +
				   x->o.lost_s + 120));
	oob_doing("moving data");
	x->t0 = zsm_client_now_ns();
	x->sample_ns = (uint64_t)(x->o.sample_s * 1e9);
	x->next_sample = x->t0 + x->sample_ns;
	/* relaxed: progress stamps, see ld_group_finish. */
	atomic_store_explicit(&x->shm->side[rank].last_done_ns, x->t0,
			      memory_order_relaxed);
	ld_sample_take(x, x->t0);
	if (ld_run(x))
		return ld_end_failed(x);
	t_end = zsm_client_now_ns();
	ld_sample_take(x, t_end);
	ld_publish(x, t_end);
	/* release: the counts and samples above; pairs with ld_wait_peer. */
	atomic_store_explicit(&x->shm->side[rank].stats_ready, 1,
			      memory_order_release);
	oob_doing("waiting for the peer to drain");
	if (ld_wait_peer(x))
		return ld_end_failed(x);
	oob_set_timeout(limit);
	if (rank == 0)
		status = ld_summary(x, ld_s(t_end - x->t0));
	oob_doing("closing");
	if (oob_barrier() || ld_teardown(x))
		status = OOB_FAIL;
	if (ld_failed(x) && rank == 0)
		printf("FAIL: %s\n", x->shm->why);
	return oob_finish(status);
}
