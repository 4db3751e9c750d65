/* SPDX-License-Identifier: MIT */
/*
 * memref.c - the physical reference: plain memcpy with as many threads
 * copying at once as the pattern has concurrent transfers, over the same
 * number of buffer slots (so the same cache footprint) as the accdma run.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bw.h"

struct ref_start {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int go;
};

struct ref_thread {
	pthread_t tid;
	struct ref_start *start;
	uint8_t *src, *dst;
	uint64_t bytes, stride;
	int slots;
	long iters;
	double secs;
};

static void *ref_main(void *arg)
{
	struct ref_thread *t = arg;
	double t0;
	long i;

	pthread_mutex_lock(&t->start->lock);
	while (!t->start->go)
		pthread_cond_wait(&t->start->cond, &t->start->lock);
	pthread_mutex_unlock(&t->start->lock);
	t0 = bw_now();
	for (i = 0; i < t->iters; i++) {
		uint64_t off = (uint64_t)(i % t->slots) * t->stride;
		memcpy(t->dst + off, t->src + off, t->bytes);
		__asm__ volatile("" ::: "memory");
	}
	t->secs = bw_now() - t0;
	return NULL;
}

/*
 * bw_memcpy_ref() - per-thread memcpy GB/s: @threads threads start together,
 * each copies @bytes @iters times over @slots slots of its own buffers.
 * Returns the mean per-thread bandwidth (total bytes / slowest thread / threads), or NAN.
 */
double bw_memcpy_ref(int threads, uint64_t bytes, int slots, long iters)
{
	struct ref_start start = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 };
	struct ref_thread *t;
	double slowest = 0, gbs = NAN;
	int i, started = 0, ok = 1;

	if (threads < 1)
		threads = 1;
	if (threads > 64)
		threads = 64;
	t = calloc((size_t)threads, sizeof(*t));
	if (!t)
		return NAN;
	for (i = 0; i < threads && ok; i++) {
		uint64_t stride = (bytes + 63) & ~(uint64_t)63; /* as the accdma run's slots */
		size_t len = (size_t)stride * (size_t)slots;
		len = (len + 4095) & ~(size_t)4095;
		t[i].src = aligned_alloc(4096, len);
		t[i].dst = aligned_alloc(4096, len);
		if (!t[i].src || !t[i].dst) {
			ok = 0;
			break;
		}
		memset(t[i].src, 0x5a, len);
		memset(t[i].dst, 0, len);
		t[i].start = &start;
		t[i].bytes = bytes;
		t[i].stride = stride;
		t[i].slots = slots;
		t[i].iters = iters;
	}
	for (i = 0; i < threads && ok; i++) {
		if (pthread_create(&t[i].tid, NULL, ref_main, &t[i])) {
			ok = 0;
			break;
		}
		started++;
	}
	pthread_mutex_lock(&start.lock);
	start.go = 1;
	pthread_cond_broadcast(&start.cond);
	pthread_mutex_unlock(&start.lock);
	for (i = 0; i < started; i++) {
		pthread_join(t[i].tid, NULL);
		if (t[i].secs > slowest)
			slowest = t[i].secs;
	}
	if (ok && slowest > 0)
		gbs = (double)bytes * (double)iters / slowest / 1e9;
	for (i = 0; i < threads; i++) {
		free(t[i].src);
		free(t[i].dst);
	}
	free(t);
	return gbs;
}
