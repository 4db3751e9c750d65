// SPDX-License-Identifier: MIT
/*
 * doorbell.c - sleeping and waking through futexes.
 *
 * Futexes are used without FUTEX_PRIVATE_FLAG so the same words work when the
 * arena is shared between processes.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "queue/queue.h"

int q_futex_wait(_Atomic uint32_t *addr, uint32_t val, int64_t timeout_ns)
{
	struct timespec ts, *tsp = NULL;
	long rc;

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

void q_futex_wake(_Atomic uint32_t *addr)
{
	syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void q_engine_kick_fenced(struct q_engine_sh *e)
{
	if (atomic_load_explicit(&e->sleeping, memory_order_relaxed)) {
		atomic_fetch_add_explicit(&e->wake_seq, 1, memory_order_release);
		q_futex_wake(&e->wake_seq);
	}
}

void q_device_kick(struct q_dev_sh *d, uint32_t first, uint32_t n)
{
	atomic_thread_fence(memory_order_seq_cst); /* as in q_engine_kick(), once */
	for (uint32_t e = first; e < n; e++)
		q_engine_kick_fenced(&d->engines[e]);
}

void q_engine_kick(struct q_engine_sh *e)
{
	/* Pairs with the fence in the engine's sleep path: either the engine sees
	 * what we published, or we see it sleeping and wake it. */
	atomic_thread_fence(memory_order_seq_cst);
	q_engine_kick_fenced(e);
}

uint64_t q_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
