/* SPDX-License-Identifier: MIT */
/* stats.c - clock, medians and percentiles. */
#include <math.h>
#include <stdlib.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "bw.h"

double bw_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

uint64_t bw_ticks(void)
{
#if defined(__x86_64__)
	/* The time-stamp counter, as perftest and ucx_perftest time each
	 * iteration: it costs about half a clock_gettime(). Its rate is
	 * measured against bw_now() over the same loop. */
	return __rdtsc();
#else
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
#endif
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* bw_sort() - sort @n values ascending, once for all the percentiles taken. */
void bw_sort(double *v, long n)
{
	if (n > 0)
		qsort(v, (size_t)n, sizeof(*v), cmp_double);
}

/* bw_percentile() - nearest-rank percentile @pct (0..100) of @n values sorted ascending. */
double bw_percentile(const double *v, long n, double pct)
{
	long k;

	if (n <= 0)
		return NAN;
	k = (long)ceil(pct / 100.0 * (double)n) - 1;
	if (k < 0)
		k = 0;
	if (k >= n)
		k = n - 1;
	return v[k];
}

/* bw_median() - the median of @n values (mean of the middle two for even n); sorts @v. */
double bw_median(double *v, int n)
{
	if (n <= 0)
		return NAN;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
