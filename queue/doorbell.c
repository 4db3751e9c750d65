// SPDX-License-Identifier: MIT
/*
 * doorbell.c - sleeping and waking through futexes.
 *
 * Futexes are used without FUTEX_PRIVATE_FLAG so the same words work when the
 * arena is shared between processes.
 */
#include "queue/queue.h"

/* This process: 1 registered for membarrier(GLOBAL_EXPEDITED), 0 not (yet). */
static _Atomic int asym_self;
static _Atomic int asym_tried; /* 0 not yet, 1 being tried, 2 done */

int q_asym_register(int allow)
{
	int t = 0;

	if (!allow)
		return 0;
	/* Once per process; a caller that finds another registering waits for it. */
	if (os_cas(&asym_tried, &t, 1, OS_ACQ_REL, OS_ACQUIRE)) {
		os_store(&asym_self, os_membarrier_register(), OS_SEQ_CST);
		os_store(&asym_tried, 2, OS_RELEASE);
	}
	while (os_load(&asym_tried, OS_ACQUIRE) != 2)
		os_yield();
	return os_load(&asym_self, OS_SEQ_CST);
}

int q_asym_registered(void)
{
	return os_load(&asym_self, OS_SEQ_CST);
}

void q_kick_fence(const struct q_dev_sh *d)
{
	/* Light only if both ends are registered: our thread is then covered by
	 * the sleeper's membarrier, and the sleeper issues one. */
	if (os_load(&d->asym, OS_RELAXED) &&
	    os_load(&asym_self, OS_RELAXED))
		os_compiler_fence();
	else
		os_fence(OS_SEQ_CST);
}

void q_sleep_fence(struct q_dev_sh *d)
{
	os_fence(OS_SEQ_CST);
	if (os_load(&d->asym, OS_RELAXED) && os_membarrier()) {
		/* Cannot fail once registered. If it ever does, kicks toward this
		 * device stop being light from now on (this one may be late: the
		 * sleeper's timeout, or the next kick, ends it). */
		os_store(&d->asym, 0, OS_SEQ_CST);
		os_fence(OS_SEQ_CST);
	}
}

void q_engine_wake(struct q_engine_sh *e)
{
	os_fetch_add(&e->wake_seq, 1, OS_RELEASE);
	os_wake32(&e->wake_seq);
}
