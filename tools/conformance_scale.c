/* SPDX-License-Identifier: MIT */
/*
 * zsm-conformance's checks of scale: data_sizes (1 byte to 1 GiB),
 * many_comms (64 connections at once) and init_cycles (init/finalize and
 * dlopen/dlclose cycles leak nothing).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conformance.h"
#include "pattern.h"

/* ---------------------------------------------------------------------- */
/* data_sizes: byte-exact data from 1 byte to 1 GiB */

#define DS_GIB ((size_t)1 << 30)

static const size_t ds_sizes[] = {
	1, 4095, ((size_t)1 << 20) + 3, (size_t)64 << 20, DS_GIB,
};

#define DS_NSIZES (sizeof(ds_sizes) / sizeof(ds_sizes[0]))

int check_data_sizes(int rank, void *arg)
{
	struct zsm_client_props p;
	int sizes[64], ran = 0, r, ms;
	struct lb_ctx x;
	struct lb_buf b;
	uint64_t t0;
	size_t k, size;
	void *req;

	(void)arg;
	LB_TRY(lb_setup(&x, rank));
	LB_CALL(&x, zsm_client_get_properties(x.c, x.dev, &p));
	for (k = 0; k < DS_NSIZES; k++) {
		size = ds_sizes[k];
		if (size > p.max_p2p_bytes) {
			if (rank == 0)
				printf("# abi %d: size %zu skipped: above "
				       "maxP2pBytes %zu\n",
				       lb_opts.abi, size, p.max_p2p_bytes);
			continue;
		}
		/* Big messages need more than the usual wait: 1 s/16 MiB. */
		ms = LB_WAIT_MS + (int)(size >> 24) * 1000 * lb_scale;
		LB_TRY(lb_buf_alloc(&b, size));
		LB_TRY(lb_buf_reg(&x, &b, rank ? x.recv : x.send));
		LB_OOB(oob_barrier());
		t0 = zsm_client_now_ns();
		if (rank == 0) {
			zsm_pattern_fill(b.p, size, 60 + (uint32_t)k);
			LB_TRY(lb_post_send(&x, x.send, b.p, size, 3, b.mh,
					    &req));
		} else {
			LB_TRY(lb_post_recv(&x, x.recv, 1, &b.vp, &b.size,
					    (int[]){ 3 }, &b.mh, &req));
		}
		r = zsm_client_wait(x.c, req, sizes, ms);
		LB_EXPECT(r != ZSM_CLIENT_TIMEOUT,
			  "size %zu: not done after %d ms", size, ms);
		LB_EXPECT(!r, "size %zu: test returned %s", size,
			  zsm_client_result_str(r));
		LB_EXPECT(sizes[0] >= 0 && (size_t)sizes[0] == size,
			  "size %zu: test reported %d bytes", size, sizes[0]);
		if (rank == 1) {
			long bad;

			bad = zsm_pattern_check(b.p, size, 60 + (uint32_t)k);
			LB_EXPECT(bad < 0,
				  "size %zu: byte %ld differs from what was "
				  "sent",
				  size, bad);
			LB_TRY(lb_buf_guards(&b, "data_sizes"));
			printf("# abi %d: %zu bytes byte-exact in %.0f ms\n",
			       lb_opts.abi, size, lb_ms_since(t0));
		}
		LB_TRY(lb_buf_free(&x, &b));
		ran++;
	}
	LB_EXPECT(ran, "no size at or below maxP2pBytes %zu",
		  p.max_p2p_bytes);
	return lb_teardown(&x);
}

/* ---------------------------------------------------------------------- */
/* many_comms: 64 connections at once, traffic interleaved on all */

#define MC_PAIRS 64
#define MC_SLOT 8192

struct mc_state {
	char handles[MC_PAIRS][NCCL_NET_HANDLE_MAXSIZE];
	void *listen[MC_PAIRS];
	void *comm[MC_PAIRS];
	void *req[MC_PAIRS];
	struct lb_buf b[MC_PAIRS];
};

/* Every listen, then connect or accept on all 64, round robin. */
static int mc_connect(struct lb_ctx *x, struct mc_state *s)
{
	uint64_t t0;
	int left = MC_PAIRS, i, r;

	if (x->rank == 1) {
		for (i = 0; i < MC_PAIRS; i++) {
			LB_CALL(x, zsm_client_listen(x->c, x->dev,
						     s->handles[i],
						     &s->listen[i]));
			LB_EXPECT(s->listen[i], "listen %d returned NULL", i);
		}
		LB_OOB(oob_send(s->handles, sizeof(s->handles)));
	} else {
		LB_OOB(oob_recv(s->handles, sizeof(s->handles)));
	}
	t0 = zsm_client_now_ns();
	while (left) {
		for (i = 0; i < MC_PAIRS; i++) {
			if (s->comm[i])
				continue;
			if (x->rank == 1)
				r = zsm_client_accept(x->c, s->listen[i],
						      &s->comm[i]);
			else
				r = zsm_client_connect(x->c, x->dev,
						       s->handles[i],
						       &s->comm[i]);
			LB_EXPECT(!r, "%s %d returned %s",
				  x->rank ? "accept" : "connect", i,
				  zsm_client_result_str(r));
			left -= !!s->comm[i];
		}
		LB_EXPECT(lb_ms_since(t0) < LB_CONNECT_MS,
			  "%d of %d connections not done after %d ms", left,
			  MC_PAIRS, LB_CONNECT_MS);
	}
	for (i = 0; x->rank == 1 && i < MC_PAIRS; i++)
		LB_CALL(x, zsm_client_close_listen(x->c, s->listen[i]));
	return OOB_PASS;
}

/* One message on every comm, all posted before any is tested. */
static int mc_round(struct lb_ctx *x, struct mc_state *s, int round)
{
	size_t size, slot = MC_SLOT;
	int left = MC_PAIRS, sizes[64], done, i, r;
	uint32_t seed;
	uint64_t t0;

	for (i = 0; i < MC_PAIRS; i++) {
		/* Sizes differ per comm, so a crossed wire shows. */
		size = 100 + (size_t)i * 97 + (size_t)round;
		seed = 500 + (uint32_t)(round * MC_PAIRS + i);
		if (x->rank == 0) {
			zsm_pattern_fill(s->b[i].p, size, seed);
			LB_TRY(lb_post_send(x, s->comm[i], s->b[i].p, size, 5,
					    s->b[i].mh, &s->req[i]));
		} else {
			LB_TRY(lb_post_recv(x, s->comm[i], 1, &s->b[i].vp,
					    &slot, (int[]){ 5 }, &s->b[i].mh,
					    &s->req[i]));
		}
	}
	t0 = zsm_client_now_ns();
	while (left) {
		for (i = 0; i < MC_PAIRS; i++) {
			if (!s->req[i])
				continue;
			r = zsm_client_test(x->c, s->req[i], &done, sizes);
			LB_EXPECT(!r, "round %d comm %d: test returned %s",
				  round, i, zsm_client_result_str(r));
			if (!done)
				continue;
			s->req[i] = NULL;
			left--;
			if (x->rank == 0)
				continue;
			size = 100 + (size_t)i * 97 + (size_t)round;
			seed = 500 + (uint32_t)(round * MC_PAIRS + i);
			LB_EXPECT(sizes[0] == (int)size &&
					  zsm_pattern_check(s->b[i].p, size,
							    seed) < 0,
				  "round %d comm %d: size %d (sent %zu) or "
				  "data wrong: messages crossed comms?",
				  round, i, sizes[0], size);
		}
		LB_EXPECT(lb_ms_since(t0) < LB_WAIT_MS,
			  "round %d: %d of %d requests not done after %d ms",
			  round, left, MC_PAIRS, LB_WAIT_MS);
	}
	return OOB_PASS;
}

int check_many_comms(int rank, void *arg)
{
	struct zsm_client_props p;
	struct mc_state *s;
	struct lb_ctx x;
	int i, round;

	(void)arg;
	LB_TRY(lb_open(&x, rank));
	LB_CALL(&x, zsm_client_get_properties(x.c, x.dev, &p));
	if (p.max_comms < MC_PAIRS)
		return oob_skip("maxComms %d is below the %d pairs checked",
				p.max_comms, MC_PAIRS);
	s = calloc(1, sizeof(*s));
	LB_EXPECT(s, "out of memory");
	LB_TRY(mc_connect(&x, s));
	for (i = 0; i < MC_PAIRS; i++) {
		LB_TRY(lb_buf_alloc(&s->b[i], MC_SLOT));
		LB_TRY(lb_buf_reg(&x, &s->b[i], s->comm[i]));
	}
	LB_OOB(oob_barrier());
	for (round = 0; round < 3; round++)
		LB_TRY(mc_round(&x, s, round));
	LB_OOB(oob_barrier());
	for (i = 0; i < MC_PAIRS; i++) {
		LB_TRY(lb_buf_free(&x, &s->b[i]));
		if (rank == 0)
			LB_CALL(&x, zsm_client_close_send(x.c, s->comm[i]));
		else
			LB_CALL(&x, zsm_client_close_recv(x.c, s->comm[i]));
	}
	free(s);
	return lb_teardown(&x);
}

/* ---------------------------------------------------------------------- */
/* init_cycles: init/finalize and dlopen/dlclose leave nothing behind */

#define IC_CYCLES 20

/* Entries of a /proc/self directory: open fds or threads. */
static int ic_count(const char *dir)
{
	struct dirent *e;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* One init, a connection to itself with a message, finalize. */
static int ic_cycle(struct lb_ctx *x, int cycle, const char *kind)
{
	int r = zsm_client_init(x->c, 0x7a736d10u + (unsigned)cycle);

	LB_EXPECT(!r, "%s cycle %d: init returned %s", kind, cycle,
		  zsm_client_result_str(r));
	LB_TRY(pd_still_works(x));
	r = zsm_client_finalize(x->c);
	LB_EXPECT(!r, "%s cycle %d: finalize returned %s", kind, cycle,
		  zsm_client_result_str(r));
	return OOB_PASS;
}

/* What the open fds are ("socket:[N]", "anon_inode:[eventfd]", a
 * path), joined into buf, for a FAIL that says what grew. */
static void ic_fd_kinds(char *buf, size_t len)
{
	char path[300], target[128];
	struct dirent *e;
	DIR *d = opendir("/proc/self/fd");
	size_t at = 0;
	ssize_t n;

	buf[0] = '\0';
	if (!d)
		return;
	while ((e = readdir(d)) && at + 1 < len) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "",
				       target);
	}
	closedir(d);
}

/*
 * The counts may lag a finalize by a thread's exit; wait up to 2 s for
 * them to come back to the baseline before calling it growth.
 */
static int ic_steady(int fds0, int tasks0, const char *kind)
{
	uint64_t t0 = zsm_client_now_ns();
	int fds, tasks;

	for (;;) {
		fds = ic_count("/proc/self/fd");
		tasks = ic_count("/proc/self/task");
		if ((fds <= fds0 && tasks <= tasks0) ||
		    lb_ms_since(t0) > 2000.0 * lb_scale)
			break;
		lb_sleep_ms(20);
	}
	if (fds > fds0) {
		char kinds[512];

		ic_fd_kinds(kinds, sizeof(kinds));
		return oob_fail("%d %s cycles: open fds grew from %d to %d "
				"(open now: %s)",
				IC_CYCLES, kind, fds0, fds, kinds);
	}
	LB_EXPECT(tasks <= tasks0, "%d %s cycles: threads grew from %d to %d",
		  IC_CYCLES, kind, tasks0, tasks);
	printf("# abi %d: %d %s cycles: %d fds, %d threads, as after the "
	       "first\n",
	       lb_opts.abi, IC_CYCLES, kind, fds, tasks);
	return OOB_PASS;
}

int check_init_cycles(int rank, void *arg)
{
	int fds0 = 0, tasks0 = 0, i;
	struct lb_ctx x;

	(void)arg;
	if (rank == 1)
		return OOB_PASS;
	if (lb_opts.abi < 11)
		return oob_skip("v%d has no finalize, so init cannot be "
				"undone and cycles would leak by design",
				lb_opts.abi);
	memset(&x, 0, sizeof(x));
	x.dev = lb_opts.dev;
	/* One load: init/finalize again and again. */
	LB_TRY(lb_client_open(&x));
	for (i = 0; i < IC_CYCLES; i++) {
		LB_TRY(ic_cycle(&x, i, "init/finalize"));
		/* The first cycle may set up what stays for the process. */
		if (i == 0) {
			fds0 = ic_count("/proc/self/fd");
			tasks0 = ic_count("/proc/self/task");
		}
	}
	LB_TRY(ic_steady(fds0, tasks0, "init/finalize"));
	lb_client_close(&x);
	/* Then a fresh dlopen each cycle, as a process reloading NCCL. */
	for (i = 0; i < IC_CYCLES; i++) {
		LB_TRY(lb_client_open(&x));
		LB_TRY(ic_cycle(&x, i, "dlopen/dlclose"));
		lb_client_close(&x);
		if (i == 0) {
			fds0 = ic_count("/proc/self/fd");
			tasks0 = ic_count("/proc/self/task");
		}
	}
	LB_TRY(ic_steady(fds0, tasks0, "dlopen/dlclose"));
	return OOB_PASS;
}
