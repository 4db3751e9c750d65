// SPDX-License-Identifier: MIT
/*
 * os_user.c - queue/os.h in a user process: pthreads, futexes, membarrier,
 * the heap, CLOCK_MONOTONIC and stderr.
 */
#include <limits.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "queue/os.h"

_Static_assert(sizeof(pthread_t) <= sizeof(unsigned long), "a pthread_t fits an os_thread");

int os_thread_start(struct os_thread *t, const char *name, void *(*fn)(void *), void *arg)
{
	pthread_t th;
	int rc = pthread_create(&th, NULL, fn, arg);

	if (rc)
		return -rc;
	if (name) {
		char n[16];

		snprintf(n, sizeof(n), "%s", name);
		pthread_setname_np(th, n);
	}
	t->handle = (unsigned long)th;
	return 0;
}

void os_thread_join(struct os_thread *t)
{
	pthread_join((pthread_t)t->handle, NULL);
}

void os_yield(void)
{
	sched_yield();
}

int os_thread_dying(void)
{
	return 0;
}

/* Ranges whose words the kernel waits on (os_wait_redirect()): set under
 * the lock, a slot's base published last, read without it. */
struct os_redirect {
	_Atomic uintptr_t base;
	size_t len;
	int (*wait)(void *ctx, size_t off, uint32_t val, int64_t timeout_ns);
	void (*wake)(void *ctx, size_t off);
	void *ctx;
};
static struct os_redirect redirects[OS_WAIT_REDIRECTS];
static _Atomic int redirects_used; /* slots ever used: the lookup's bound */
static pthread_mutex_t redirect_lock = PTHREAD_MUTEX_INITIALIZER;

static struct os_redirect *redirect_of(const void *addr)
{
	int n = atomic_load_explicit(&redirects_used, memory_order_acquire);

	for (int i = 0; i < n; i++) {
		uintptr_t b = atomic_load_explicit(&redirects[i].base, memory_order_acquire);

		if (b && (uintptr_t)addr - b < redirects[i].len)
			return &redirects[i];
	}
	return NULL;
}

int os_wait_redirect(void *base, size_t len,
		     int (*wait)(void *ctx, size_t off, uint32_t val, int64_t timeout_ns),
		     void (*wake)(void *ctx, size_t off), void *ctx)
{
	int rc = -ENOSPC;

	pthread_mutex_lock(&redirect_lock);
	for (int i = 0; i < OS_WAIT_REDIRECTS; i++) {
		struct os_redirect *r = &redirects[i];

		if (atomic_load_explicit(&r->base, memory_order_relaxed))
			continue;
		r->len = len;
		r->wait = wait;
		r->wake = wake;
		r->ctx = ctx;
		atomic_store_explicit(&r->base, (uintptr_t)base, memory_order_release);
		if (i >= atomic_load_explicit(&redirects_used, memory_order_relaxed))
			atomic_store_explicit(&redirects_used, i + 1, memory_order_release);
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&redirect_lock);
	return rc;
}

void os_wait_unredirect(void *base)
{
	pthread_mutex_lock(&redirect_lock);
	for (int i = 0; i < OS_WAIT_REDIRECTS; i++)
		if (atomic_load_explicit(&redirects[i].base, memory_order_relaxed) == (uintptr_t)base)
			atomic_store_explicit(&redirects[i].base, 0, memory_order_release);
	pthread_mutex_unlock(&redirect_lock);
}

int os_wait32(_Atomic uint32_t *addr, uint32_t val, int64_t timeout_ns)
{
	struct os_redirect *r = redirect_of(addr);
	struct timespec ts, *tsp = NULL;
	long rc;

	if (r)
		return r->wait(r->ctx, (uintptr_t)addr - atomic_load_explicit(&r->base, memory_order_relaxed),
			       val, timeout_ns);

	if (timeout_ns >= 0) {
		ts.tv_sec = timeout_ns / 1000000000;
		ts.tv_nsec = timeout_ns % 1000000000;
		tsp = &ts;
	}
	rc = syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT, val, tsp, NULL, 0);
	if (rc == 0 || errno == EAGAIN)
		return 0;
	return -errno;
}

void os_wake32(_Atomic uint32_t *addr)
{
	struct os_redirect *r = redirect_of(addr);

	if (r) {
		r->wake(r->ctx, (uintptr_t)addr - atomic_load_explicit(&r->base, memory_order_relaxed));
		return;
	}
	syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

int os_membarrier_register(void)
{
	long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

	if (cmds < 0 || !(cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) ||
	    !(cmds & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED))
		return 0;
	return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
}

int os_membarrier(void)
{
	return syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) ? -errno : 0;
}

void *os_alloc(size_t size)
{
	return malloc(size);
}

void *os_zalloc(size_t n, size_t size)
{
	return calloc(n, size);
}

void os_free(void *p)
{
	free(p);
}

uint64_t os_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void os_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("accdma: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}
