// SPDX-License-Identifier: MIT
/*
 * block.c - host threads blocked in a world's calls, and closing the world
 * under them.
 *
 * A thread about to block (a wait that found its op not done, a mailbox
 * call) counts itself in the world; accdma_world_close() first marks the
 * world closing, wakes every such thread and waits until none is left, so
 * that no thread reads the arena it then frees. A blocked wait that sees the
 * mark returns -ESHUTDOWN. The world's handle outlives close (a tombstone),
 * so the count and the mark may be read at any time.
 */
#include <sched.h>
#include <time.h>

#include "driver/internal.h"

/* The world a thread is blocked in (a wait or a mailbox call), so that a
 * close from inside it (an exec function its poll runs) fails instead of
 * waiting for itself. */
static _Thread_local struct accdma_world *blocked_in;

/**
 * drv_block_enter() - a host thread is about to block in a call on @w: count
 * it, so that accdma_world_close() waits for it to leave before it frees the
 * arena. Only calls that block register: a wait that finds its op done
 * takes no locked instruction more than before.
 * @w: an open world.
 * Return: 0; -ESHUTDOWN if the world is closing (the caller must not touch it).
 */
int drv_block_enter(struct accdma_world *w)
{
	atomic_fetch_add_explicit(&w->blocked, 1, memory_order_seq_cst);
	/* seq_cst pairs with the closer's: it sees us counted, or we see it closing */
	if (atomic_load_explicit(&w->closing, memory_order_seq_cst)) {
		atomic_fetch_sub_explicit(&w->blocked, 1, memory_order_release);
		return -ESHUTDOWN;
	}
	blocked_in = w;
	return 0;
}

/**
 * drv_block_leave() - the thread has stopped touching @w (after its last
 * access to the arena: the closer may free it at once).
 * @w: the world passed to a successful drv_block_enter().
 */
void drv_block_leave(struct accdma_world *w)
{
	blocked_in = NULL;
	atomic_fetch_sub_explicit(&w->blocked, 1, memory_order_release);
}

/**
 * drv_block_shutdown() - the first step of closing @w: from now on a blocked
 * wait returns -ESHUTDOWN; wake every waiter of this process and wait until
 * all of them have left.
 * @w: an open world.
 * Return: 0; -EBADF if another thread closes it already; -EDEADLK if the
 * calling thread is itself blocked in @w (an exec function run by its poll).
 */
int drv_block_shutdown(struct accdma_world *w)
{
	if (blocked_in == w)
		return -EDEADLK;
	if (atomic_exchange_explicit(&w->closing, 1, memory_order_seq_cst))
		return -EBADF;
	for (unsigned int round = 0; atomic_load_explicit(&w->blocked, memory_order_acquire); round++) {
		/* Bump what the sleepers sleep on, so that a sleep that began
		 * after our look returns at once, then wake them. Spurious for
		 * another process's waiters on a shared arena: they look again. */
		for (int d = w->first_local; d < w->first_local + w->nlocal; d++) {
			struct q_dev_sh *ds = q_dev(&w->a, (uint32_t)d);

			atomic_fetch_add_explicit(&ds->cq_seq, 1, memory_order_seq_cst);
			q_futex_wake(&ds->cq_seq);
		}
		atomic_fetch_add_explicit(&w->a.sh->any_seq, 1, memory_order_seq_cst);
		q_futex_wake(&w->a.sh->any_seq);
		/* a waiter may be running a pass, or a long exec function: yield,
		 * then sleep between looks rather than spin */
		if (round < 64)
			sched_yield();
		else
			nanosleep(&(struct timespec){ 0, 100000 }, NULL);
	}
	return 0;
}
