/* SPDX-License-Identifier: MIT */
/*
 * memcpy-bw SIZE [REPS]: the bandwidth of a plain single-thread memcpy of
 * SIZE bytes (K/M/G suffixes) between two buffers, both touched first, as
 * the baseline the same-host transport is measured against.  Prints the
 * median GB/s (1e9 bytes/s) of REPS timed copies (default 9), each as
 * long as it takes to move at least 256 MiB.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

int main(int argc, char **argv)
{
	size_t size = argc > 1 ? parse_size(argv[1]) : 0;
	int reps = argc > 2 ? atoi(argv[2]) : 9;
	double *gbps;
	char *src, *dst;
	long iters;

	if (!size || reps < 1 || reps > 1000) {
		fprintf(stderr, "usage: memcpy-bw SIZE [REPS]\n");
		return 2;
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
	iters = (long)((256u << 20) / size);
	if (iters < 1)
		iters = 1;
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
