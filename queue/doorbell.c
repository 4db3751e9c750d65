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
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
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

/* This process: 1 registered for membarrier(GLOBAL_EXPEDITED), 0 not (yet). */
static _Atomic int asym_self;
static pthread_once_t asym_once = PTHREAD_ONCE_INIT;

static void asym_init(void)
{
	long cmds;

	cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
	if (cmds < 0 || !(cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) ||
	    !(cmds & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED))
		return;
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0))
		return;
	atomic_store(&asym_self, 1);
}

int q_asym_register(int allow)
{
	if (!allow)
		return 0;
	pthread_once(&asym_once, asym_init);
	return atomic_load(&asym_self);
}

int q_asym_registered(void)
{
	return atomic_load(&asym_self);
}

void q_kick_fence(const struct q_dev_sh *d)
{
	/* Light only if both ends are registered: our thread is then covered by
	 * the sleeper's membarrier, and the sleeper issues one. */
	if (atomic_load_explicit(&d->asym, memory_order_relaxed) &&
	    atomic_load_explicit(&asym_self, memory_order_relaxed))
		atomic_signal_fence(memory_order_seq_cst);
	else
		atomic_thread_fence(memory_order_seq_cst);
}

void q_sleep_fence(struct q_dev_sh *d)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&d->asym, memory_order_relaxed) &&
	    syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0)) {
		/* Cannot fail once registered. If it ever does, kicks toward this
		 * device stop being light from now on (this one may be late: the
		 * sleeper's timeout, or the next kick, ends it). */
		atomic_store(&d->asym, 0);
		atomic_thread_fence(memory_order_seq_cst);
	}
}

void q_engine_wake(struct q_engine_sh *e)
{
	atomic_fetch_add_explicit(&e->wake_seq, 1, memory_order_release);
	q_futex_wake(&e->wake_seq);
}

uint64_t q_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
