// SPDX-License-Identifier: MIT
/*
 * bench_copy.c - the data mover's large copy, by store width (make bench-copy):
 * 16 MiB copies with memcpy and with each streaming store the CPU has (16:
 * SSE2, the kernel module's; 32: AVX2; 64: AVX-512), interleaved over rounds, each copy between buffers of their own so none is
 * in the cache. Prints each one's median GB/s and its ratio to memcpy's.
 * A measurement, not a test: nothing is judged.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dma/dma.h"

#define LEN (16u << 20)
#define NBUF 8 /* 128 MiB each way: well past any last-level cache */
#define ROUNDS 21

static const unsigned int widths[] = { 0, 16, 32, 64 }; /* 0: memcpy */

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(void)
{
	enum { NW = sizeof(widths) / sizeof(widths[0]) };
	static double gbs[NW][ROUNDS];
	char *src = aligned_alloc(64, (size_t)LEN * NBUF), *dst = aligned_alloc(64, (size_t)LEN * NBUF);
	int have[NW];
	double base = 0;

	if (!src || !dst) {
		fprintf(stderr, "bench_copy: %s\n", strerror(ENOMEM));
		return 1;
	}
	memset(src, 0x5a, (size_t)LEN * NBUF);
	memset(dst, 0xa5, (size_t)LEN * NBUF);
	for (int w = 0; w < NW; w++)
		have[w] = !widths[w] || dma_copy_set_width(widths[w]) == 0;
	for (int r = 0, n = 0; r < ROUNDS; r++) {
		for (int w = 0; w < NW; w++) {
			size_t at = (size_t)(n++ % NBUF) * LEN;
			double t0;

			if (!have[w])
				continue;
			if (widths[w])
				dma_copy_set_width(widths[w]);
			t0 = now_s();
			if (widths[w])
				dma_copy_range(dst + at, src + at, LEN);
			else
				memcpy(dst + at, src + at, LEN);
			gbs[w][r] = LEN / (now_s() - t0) / 1e9;
		}
	}
	printf("# 16 MiB copies, median of %d rounds\n%-8s %8s %10s\n", ROUNDS, "store", "GB/s", "x memcpy");
	for (int w = 0; w < NW; w++) {
		double med;

		if (!have[w]) {
			printf("%-6u B %8s %10s\n", widths[w], "-", "-");
			continue;
		}
		qsort(gbs[w], ROUNDS, sizeof(double), by_value);
		med = gbs[w][ROUNDS / 2];
		if (!widths[w]) {
			base = med;
			printf("%-8s %8.2f %10s\n", "memcpy", med, "1.00");
		} else {
			printf("%-6u B %8.2f %10.2f\n", widths[w], med, med / base);
		}
	}
	free(src);
	free(dst);
	return 0;
}
