// SPDX-License-Identifier: MIT
/*
 * trace.c - the buffer behind q_trace() in an ACCDMA_TRACE build.
 *
 * One buffer per process, appended to without a locked instruction (one would
 * drain the store buffer and move what is measured): the trace is meant for
 * the one-host-thread latency round (tools/accdma-bw/trace.sh), where the
 * posting thread also runs the passes; an engine thread tracing at the same
 * moment may overwrite an entry. Each entry is TSC << 3 | point. At exit the
 * entries go to $ACCDMA_TRACE_OUT.<pid>, one "point tsc" per line, after a
 * line "tsc_per_ns R" measured against CLOCK_MONOTONIC over the run. Off x86
 * the "TSC" is CLOCK_MONOTONIC in ns.
 */
#include "queue/queue.h"
#include "queue/trace.h"

#ifdef ACCDMA_TRACE
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#define TRACE_MAX (1u << 22)

static uint64_t entries[TRACE_MAX];
static _Atomic uint32_t count;
static uint64_t tsc0, ns0;

/* Plain RDTSC: it is not ordered after earlier loads, so a point right after
 * a load that misses may be stamped before the miss is served (the found
 * message's miss shows up after the "landed" point). RDTSCP orders it but
 * costs several times as much a point, which stretches the round it measures
 * by more than that error. */
static uint64_t ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __rdtsc();
#else
	return q_now_ns();
#endif
}

/** q_trace() - append point @p with the TSC now (dropped once the buffer is full). */
void q_trace(enum q_trace_point p)
{
	uint32_t n = atomic_load_explicit(&count, memory_order_relaxed);

	if (n < TRACE_MAX) {
		entries[n] = ticks() << 3 | (uint64_t)p;
		atomic_store_explicit(&count, n + 1, memory_order_relaxed);
	}
}

static char out[4000];

void q_trace_set_out(const char *prefix)
{
	if (prefix && strlen(prefix) < sizeof(out))
		strcpy(out, prefix);
}

__attribute__((constructor)) static void trace_start(void)
{
	ns0 = q_now_ns();
	tsc0 = ticks();
}

__attribute__((destructor)) static void trace_write(void)
{
	const char *prefix = out[0] ? out : NULL;
	uint64_t ns = q_now_ns() - ns0, tsc = ticks() - tsc0;
	uint32_t n = atomic_load(&count);
	char path[4096];
	FILE *f;

	if (!prefix || !n || !ns)
		return;
	snprintf(path, sizeof(path), "%s.%d", prefix, (int)getpid());
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		return;
	}
	fprintf(f, "tsc_per_ns %.6f\n", (double)tsc / (double)ns);
	for (uint32_t i = 0; i < n; i++)
		fprintf(f, "%u %llu\n", (unsigned)(entries[i] & 7), (unsigned long long)(entries[i] >> 3));
	fclose(f);
}
#else
void q_trace_set_out(const char *prefix)
{
	(void)prefix;
}
#endif
