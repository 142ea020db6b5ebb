/* SPDX-License-Identifier: MIT */
/*
 * memcpy-bw [--cma [--huge]] SIZE [REPS]: the baselines the same-host
 * transport is measured against.  Plain: a single-thread memcpy of SIZE
 * bytes (K/M/G suffixes) between two buffers, both touched first.  --cma:
 * what cross-memory attach can do here at all, moved the way ce moves a
 * large message: two processes, the receiver reading the lower half from
 * the sender (process_vm_readv) while the sender writes the upper half
 * into the receiver (process_vm_writev), both in 512 KiB pieces, no
 * protocol.  --huge: both buffers on transparent huge pages, as ce's
 * regMr leaves them (plugin/ce/ce_hugepage.c), where the kernel pins a
 * peer's pages far faster.
 * Prints the median GB/s (1e9 bytes/s) of REPS timed copies (default 9),
 * each as long as it takes to move at least 256 MiB.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CMA_PIECE ((size_t)512 << 10)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	switch (*end) {
	case 'K': case 'k': v <<= 10; break;
	case 'M': case 'm': v <<= 20; break;
	case 'G': case 'g': v <<= 30; break;
	case '\0': break;
	default: return 0;
	}
	return (size_t)v;
}

/* Copy [from, to) of the peer's buffer in pieces: read it into ours
 * (write 0) or write ours into it (write 1).  0, or -1 (said). */
static int cma_half(pid_t peer, char *ours, char *theirs, size_t from,
		    size_t to, int write)
{
	for (size_t off = from; off < to; off += CMA_PIECE) {
		size_t n = to - off < CMA_PIECE ? to - off : CMA_PIECE;
		struct iovec l = {.iov_base = ours + off, .iov_len = n};
		struct iovec r = {.iov_base = theirs + off, .iov_len = n};
		ssize_t got = write ? process_vm_writev(peer, &l, 1, &r, 1, 0)
				    : process_vm_readv(peer, &l, 1, &r, 1, 0);

		if (got != (ssize_t)n) {
			perror(write ? "memcpy-bw: process_vm_writev"
				     : "memcpy-bw: process_vm_readv");
			return errno == EPERM ? 77 : -1;
		}
	}
	return 0;
}

/* Ask for huge pages on the whole 2 MiB extents of [p, p + size). */
static int madvise_huge(char *p, size_t size)
{
	size_t huge = (size_t)2 << 20;
	uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1);
	uintptr_t hi = ((uintptr_t)p + size) & ~(uintptr_t)(huge - 1);

	if (hi > lo && madvise((void *)lo, hi - lo, MADV_HUGEPAGE)) {
		perror("memcpy-bw: madvise(MADV_HUGEPAGE)");
		return -1;
	}
	return 0;
}

/*
 * Both buffers are mapped before the fork, so they sit at the same
 * address in both processes, and each is first touched after it by its
 * owner only: no copy-on-write sharing.  Returns 0; 1 (said) when a copy
 * failed or the bytes are wrong; 77 when the kernel forbids it (ptrace
 * rules, containers).
 */
static int cma_measure(size_t size, int huge, int reps, long iters,
		       double *gbps)
{
	char *src = malloc(size), *dst = malloc(size), c = 0;
	int go[2], done[2], status, ret = 0;
	pid_t parent = getpid(), child;

	if (!src || !dst || pipe(go) || pipe(done)) {
		fprintf(stderr, "memcpy-bw: no buffers or pipes\n");
		return 1;
	}
	/* Before the first touch, so the faults themselves take huge pages. */
	if (huge && (madvise_huge(src, size) || madvise_huge(dst, size)))
		return 1;
	child = fork();
	if (child < 0) {
		perror("memcpy-bw: fork");
		return 1;
	}
	if (child == 0) {
		/* The sender: owns src, writes the upper half. */
		close(go[1]);
		close(done[0]);
		memset(src, 0x5a, size);
		while (read(go[0], &c, 1) == 1) {
			c = (char)cma_half(parent, src, dst, size / 2, size, 1);
			c = c == 77 ? 77 : c ? 1 : 0;
			if (write(done[1], &c, 1) != 1)
				break;
		}
		_exit(0);
	}
	close(go[0]);
	close(done[1]);
	memset(dst, 0, size);
	for (int r = 0; r < reps && !ret; r++) {
		double t0 = now_s();

		for (long i = 0; i < iters && !ret; i++) {
			c = 0;
			if (write(go[1], &c, 1) != 1)
				ret = 1;
			if (!ret)
				ret = cma_half(child, dst, src, 0, size / 2, 0);
			if (read(done[0], &c, 1) != 1)
				c = 1;
			if (!ret)
				ret = c;
		}
		gbps[r] = (double)size * (double)iters / (now_s() - t0) / 1e9;
	}
	close(go[1]); /* the sender sees the end and exits */
	close(done[0]);
	waitpid(child, &status, 0);
	/* Every byte came over, from both halves. */
	for (size_t i = 0; !ret && i < size; i++)
		if (dst[i] != 0x5a)
			ret = 1;
	if (ret == 77)
		fprintf(stderr, "memcpy-bw: cross-memory attach is not allowed "
				"here: skipping\n");
	else if (ret)
		fprintf(stderr, "memcpy-bw: --cma copy failed or moved wrong "
				"bytes\n");
	free(src);
	free(dst);
	return ret;
}

int main(int argc, char **argv)
{
	int cma = argc > 1 && strcmp(argv[1], "--cma") == 0;
	int huge = cma && argc > 2 && strcmp(argv[2], "--huge") == 0;
	int at = 1 + cma + huge;
	size_t size = argc > at ? parse_size(argv[at]) : 0;
	int reps = argc > at + 1 ? atoi(argv[at + 1]) : 9;
	double *gbps;
	char *src, *dst;
	long iters;

	if (!size || reps < 1 || reps > 1000 || argc > at + 2) {
		fprintf(stderr,
			"usage: memcpy-bw [--cma [--huge]] SIZE [REPS]\n");
		return 2;
	}
	iters = (long)((256u << 20) / size);
	if (iters < 1)
		iters = 1;
	if (cma) {
		gbps = calloc((size_t)reps, sizeof(*gbps));
		int ret = gbps ? cma_measure(size, huge, reps, iters, gbps)
			       : 1;

		if (ret)
			return ret;
		qsort(gbps, (size_t)reps, sizeof(*gbps), cmp_double);
		printf("%zu %.3f\n", size, gbps[reps / 2]);
		free(gbps);
		return 0;
	}
	src = malloc(size);
	dst = malloc(size);
	gbps = calloc((size_t)reps, sizeof(*gbps));
	if (!src || !dst || !gbps) {
		fprintf(stderr, "memcpy-bw: out of memory for %zu bytes\n",
			size);
		return 1;
	}
	memset(src, 0x5a, size);
	memset(dst, 0, size);
	for (int r = 0; r < reps; r++) {
		double t0 = now_s(), t;

		for (long i = 0; i < iters; i++) {
			memcpy(dst, src, size);
			/* Keep the compiler from dropping the copies. */
			__asm__ volatile("" : : "r"(dst) : "memory");
		}
		t = now_s() - t0;
		gbps[r] = (double)size * (double)iters / t / 1e9;
	}
	qsort(gbps, (size_t)reps, sizeof(*gbps), cmp_double);
	printf("%zu %.3f\n", size, gbps[reps / 2]);
	free(src);
	free(dst);
	free(gbps);
	return 0;
}
