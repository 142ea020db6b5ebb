/* SPDX-License-Identifier: MIT */
/*
 * Owns what regMr does to host buffers of ce comms: backing them with
 * transparent huge pages.
 *
 * Cross-memory attach pins the other process's pages for every copy, one
 * struct page at a time, and on 4 KiB pages that pinning costs as much as
 * the copy: one core moved 4.5 GB/s out of a peer's 4 KiB pages and
 * 9.5 GB/s out of huge pages on the development machine, and only the
 * peer's (the remote) side counted.  ce reads from the sender's buffer
 * and writes into the receiver's, so each side prepares its own buffers
 * when NCCL registers them.
 *
 * MADV_COLLAPSE (Linux 6.1) moves the pages already there into huge pages
 * and keeps their contents; it sets no lasting flag on the mapping, so
 * memory the application frees later behaves as before.  Only the whole
 * huge-page extents inside the buffer are touched, never a byte outside
 * it.  A machine whose administrator set transparent huge pages to
 * "never" is left alone.  Memory the kernel cannot collapse (pinned by a driver, as
 * cudaHostAlloc's is; not yet touched; not anonymous) stays as it is and
 * still moves, at 4 KiB speed.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "ce/ce.h"
#include "common/log.h"
#include "common/param.h"

/* glibc 2.36 (Debian 12) predates the name; the value is the kernel's. */
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#define ZSM_CE_HUGEPAGE_DEFAULT (2UL << 20)

/* The first failure is logged at INFO, later ones at TRACE: NCCL
 * registers many buffers and they all fail alike. */
static atomic_int zsm_ce_hugepage_told;

int zsm_ce_hugepage_span(uintptr_t addr, size_t size, size_t huge,
			 uintptr_t *start, size_t *len)
{
	uintptr_t lo, hi;

	*start = 0;
	*len = 0;
	if (!huge || (huge & (huge - 1)) || size < huge ||
	    addr > UINTPTR_MAX - size)
		return 0;
	lo = (addr + huge - 1) & ~(uintptr_t)(huge - 1);
	hi = (addr + size) & ~(uintptr_t)(huge - 1);
	if (lo < addr || hi <= lo)
		return 0;
	*start = lo;
	*len = hi - lo;
	return 1;
}

/* The first line of a file of the kernel's THP settings, or "" when it
 * cannot be read (a kernel without THP). */
static void zsm_ce_hugepage_sysfs(const char *name, char *buf, size_t len)
{
	char path[96];
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/sys/kernel/mm/transparent_hugepage/%s",
		 name);
	f = fopen(path, "re");
	if (!f)
		return;
	if (!fgets(buf, (int)len, f))
		buf[0] = '\0';
	fclose(f);
}

size_t zsm_ce_hugepage_size(void)
{
	/* relaxed: every thread that races here computes the same value. */
	static atomic_size_t cached;
	size_t have = atomic_load_explicit(&cached, memory_order_relaxed);
	unsigned long v;
	char buf[32];

	if (have)
		return have;
	/* 2 MiB on x86-64; arm64 kernels with 64 KiB pages use 512 MiB. */
	zsm_ce_hugepage_sysfs("hpage_pmd_size", buf, sizeof(buf));
	v = strtoul(buf, NULL, 10);
	if (!v || (v & (v - 1)))
		v = ZSM_CE_HUGEPAGE_DEFAULT;
	atomic_store_explicit(&cached, v, memory_order_relaxed);
	return v;
}

int zsm_ce_hugepage_policy_allows(const char *enabled)
{
	/* The kernel brackets the mode in force: "always [madvise] never".
	 * MADV_COLLAPSE works even under "never", but an administrator who
	 * chose it does not want huge pages, so ce does not force them. */
	return !enabled || !strstr(enabled, "[never]");
}

int zsm_ce_hugepage_allowed(void)
{
	/* relaxed: every racing thread reads the same file; 0 unknown. */
	static atomic_int verdict;
	int v = atomic_load_explicit(&verdict, memory_order_relaxed);
	char buf[128];

	if (v)
		return v > 0;
	zsm_ce_hugepage_sysfs("enabled", buf, sizeof(buf));
	v = zsm_ce_hugepage_policy_allows(buf) ? 1 : -1;
	if (v < 0 &&
	    !atomic_exchange_explicit(&zsm_ce_hugepage_told, 1,
				      memory_order_relaxed))
		ZSM_INFO("ce: transparent huge pages are off on this machine "
			 "(enabled: never): host buffers stay on small pages, "
			 "which cross-memory attach moves at about half the "
			 "speed");
	atomic_store_explicit(&verdict, v, memory_order_relaxed);
	return v > 0;
}

static const char *zsm_ce_hugepage_why(int err)
{
	switch (err) {
	case EINVAL:
		return "a kernel before 6.1, or memory not yet touched or not "
		       "anonymous";
	case EAGAIN:
		return "pages pinned or in use (cudaHostAlloc memory is)";
	case ENOMEM:
		return "no free huge page";
	default:
		return "refused by the kernel";
	}
}

int zsm_ce_hugepage_prepare(void *data, size_t size)
{
	struct timespec t0, t1;
	uintptr_t start;
	size_t len;
	double ms;
	int err;

	if (!zsm_param_int(ZSM_P_CE_HUGEPAGE) ||
	    !zsm_ce_hugepage_span((uintptr_t)data, size,
				  zsm_ce_hugepage_size(), &start, &len) ||
	    !zsm_ce_hugepage_allowed())
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	err = madvise((void *)start, len, MADV_COLLAPSE) ? errno : 0;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
	     (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (!err) {
		ZSM_TRACE("ce: regMr: %p+%zu on huge pages (%zu bytes, "
			  "%.1f ms)", data, size, len, ms);
		return 0;
	}
	/* relaxed: only picks which level the message goes to. */
	if (!atomic_exchange_explicit(&zsm_ce_hugepage_told, 1,
				      memory_order_relaxed))
		ZSM_INFO("ce: regMr: host buffer %p+%zu stays on small pages "
			 "(MADV_COLLAPSE: %s: %s); cross-memory attach moves "
			 "it at about half the speed. Later such buffers are "
			 "logged at TRACE; ZSM_CE_HUGEPAGE=0 stops trying",
			 data, size, strerror(err), zsm_ce_hugepage_why(err));
	else
		ZSM_TRACE("ce: regMr: %p+%zu stays on small pages (%s)", data,
			  size, strerror(err));
	return -err;
}
