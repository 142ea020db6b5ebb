/* SPDX-License-Identifier: MIT */
/*
 * alloc: the small-message calls allocate nothing.  Every allocation of
 * the process (this executable's malloc family stands in for libc's, so
 * zsm's, libfabric's and the threads' calls all land here) is counted
 * while --iters rounds (10^4 in the test) of zsm_put_signal of 8 bytes,
 * zsm_signal and zsm_wait_signal run between two ranks, after as many
 * warm-up rounds.  Any allocation zsm makes fails the run, named by its
 * stack.  libfabric's own are counted apart: tcp;ofi_rxm's FI_PEEK (the
 * stray scan's look, net_drain.c) allocates now and then: its looks are
 * timed, so their count follows the run's length, not its calls (about
 * two a second, whatever else loads the machine).  More than one in 100
 * rounds and more than 10 a second would be per call, and fails too.
 * Then one window registration inside the count must count some: proof
 * that the counter sees the library's allocations.  Built into
 * api_ranks_alloc only, never under a sanitizer (which owns malloc).
 */
#include "api_ranks.h"

#include <dlfcn.h>
#include <link.h>
#include <execinfo.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t align, size_t size);
void *memalign(size_t align, size_t size);
void __libc_free(void *p);

/* The stacks of the first allocations counted, for the report. */
#define ALLOC_SITES 4
#define ALLOC_DEPTH 16

static atomic_int counting;
static atomic_long counted, by_fabric;
/* libfabric's code, found before the count (dl_iterate_phdr). */
static uintptr_t fabric_lo, fabric_hi;
static void *sites[ALLOC_SITES][ALLOC_DEPTH];
static int depth[ALLOC_SITES];

static void note(void *caller)
{
	long n;

	/* relaxed: gauges, read once the rounds are over. */
	if (!atomic_load_explicit(&counting, memory_order_relaxed))
		return;
	if ((uintptr_t)caller >= fabric_lo && (uintptr_t)caller < fabric_hi) {
		atomic_fetch_add_explicit(&by_fabric, 1, memory_order_relaxed);
		return;
	}
	n = atomic_fetch_add_explicit(&counted, 1, memory_order_relaxed);
	/* backtrace() allocates only on its first call, made before the
	 * count. */
	if (n < ALLOC_SITES)
		depth[n] = backtrace(sites[n], ALLOC_DEPTH);
}

void *malloc(size_t size)
{
	note(__builtin_return_address(0));
	return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	note(__builtin_return_address(0));
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	note(__builtin_return_address(0));
	return __libc_realloc(p, size);
}

void *aligned_alloc(size_t align, size_t size)
{
	note(__builtin_return_address(0));
	return __libc_memalign(align, size);
}

void *memalign(size_t align, size_t size)
{
	note(__builtin_return_address(0));
	return __libc_memalign(align, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
	note(__builtin_return_address(0));
	*out = __libc_memalign(align, size);
	return *out ? 0 : 12; /* ENOMEM */
}

void free(void *p)
{
	__libc_free(p);
}

/* The executable segments of libfabric.so, as one range. */
static int find_fabric(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	if (!info->dlpi_name || !strstr(info->dlpi_name, "libfabric.so"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (!fabric_lo || lo < fabric_lo)
			fabric_lo = lo;
		if (lo + ph->p_memsz > fabric_hi)
			fabric_hi = lo + ph->p_memsz;
	}
	return 1;
}

static void say_sites(long n)
{
	for (long i = 0; i < n && i < ALLOC_SITES; i++) {
		printf("  allocation %ld:\n", i);
		for (int f = 1; f < depth[i]; f++) {
			Dl_info info;

			if (dladdr(sites[i][f], &info) && info.dli_fname)
				printf("    %s (%s+%#lx)\n",
				       info.dli_sname ? info.dli_sname : "?",
				       info.dli_fname,
				       (unsigned long)((char *)sites[i][f] -
						       (char *)info.dli_fbase));
			else
				printf("    %p\n", sites[i][f]);
		}
	}
}

/* One round: 8 bytes with a signal and a signal alone to the peer, then
 * a wait for the peer's two. */
static int round_trip(zsm_comm_t comm, unsigned char *buf, zsm_window_t win,
		      int peer, int i)
{
	zsm_wait_signal_desc_t d = {.op_cnt = 2, .peer = peer, .ctx = 0};
	int ret;

	buf[0] = (unsigned char)i;
	ret = zsm_put_signal(buf, 8, zsm_uint8, peer, win,
			     (size_t)(1 + api_rank) * 64, 0, 0, 0, comm, NULL);
	if (!ret)
		ret = zsm_signal(peer, 0, 0, 0, comm, NULL);
	if (!ret)
		ret = zsm_wait_signal(1, &d, comm, NULL);
	if (ret)
		API_FAIL("round %d: %s", i, zsm_strerror(ret));
	/* The peer's next round may have landed already. */
	if (buf[(1 + peer) * 64] != (unsigned char)i &&
	    buf[(1 + peer) * 64] != (unsigned char)(i + 1))
		API_FAIL("round %d: rank %d's byte is %u", i, peer,
			 buf[(1 + peer) * 64]);
	return 0;
}

int api_alloc_run(zsm_comm_t comm)
{
	int n = api_opt.iters > 0 ? api_opt.iters : 10000;
	int peer = api_rank ^ 1;
	unsigned char *buf = api_alloc(4096), *more = api_alloc(4096);
	zsm_window_t win, extra;
	long got, fab;
	double t0, secs;
	void *warm[2];

	if (api_opt.nranks != 2)
		API_FAIL("alloc takes 2 ranks");
	(void)backtrace(warm, 2);
	dl_iterate_phdr(find_fabric, NULL);
	if (!buf || !more || zsm_comm_window_register(comm, buf, 4096, &win, 0))
		API_FAIL("window");
	for (int i = 0; i < n; i++)
		if (round_trip(comm, buf, win, peer, i))
			return 1;
	api_phase("%d counted rounds", n);
	t0 = api_now_ms();
	/* relaxed: this thread's calls follow in program order. */
	atomic_store_explicit(&counting, 1, memory_order_relaxed);
	for (int i = n; i < 2 * n; i++)
		if (round_trip(comm, buf, win, peer, i)) {
			atomic_store_explicit(&counting, 0,
					      memory_order_relaxed);
			return 1;
		}
	atomic_store_explicit(&counting, 0, memory_order_relaxed);
	secs = (api_now_ms() - t0) / 1000.0;
	got = atomic_load_explicit(&counted, memory_order_relaxed);
	fab = atomic_load_explicit(&by_fabric, memory_order_relaxed);
	printf("rank %d: %ld allocations by zsm, %ld by libfabric, in %d "
	       "rounds of put_signal, signal and wait_signal (%.1f s)\n",
	       api_rank, got, fab, n, secs);
	if (got) {
		say_sites(got);
		API_FAIL("the small-message calls allocated");
	}
	if (!fabric_hi)
		API_FAIL("libfabric's code was not found in the process");
	if (fab > n / 100 && fab > 10.0 * secs)
		API_FAIL("libfabric allocated about once per call");
	/* The counter must see the library: a registration allocates. */
	atomic_store_explicit(&counting, 1, memory_order_relaxed);
	if (zsm_comm_window_register(comm, more, 4096, &extra, 0))
		API_FAIL("the second window");
	atomic_store_explicit(&counting, 0, memory_order_relaxed);
	got = atomic_load_explicit(&counted, memory_order_relaxed);
	if (!got)
		API_FAIL("a window registration counted no allocation: the "
			 "counter is blind");
	printf("rank %d: a window registration counted %ld (the counter "
	       "sees the library)\n",
	       api_rank, got);
	if (zsm_comm_window_deregister(comm, extra) ||
	    zsm_comm_window_deregister(comm, win))
		API_FAIL("deregister");
	return 0;
}
