// SPDX-License-Identifier: MIT
/*
 * slot.c - reference counting of completion slots.
 *
 * A slot is reused only when nobody can still look at it: the host's token,
 * the engine that owns the op, and every op that depends on it each hold a
 * reference. (The engine's matters when the host releases the token of an op
 * still pending: the op must still run, and its slot stay taken until then.)
 * Taking a reference checks the generation, so a stale token never pins a
 * newer op.
 */
#include <errno.h>

#include "queue/queue.h"

int q_slot_tryget(struct q_cpl *c, uint32_t gen)
{
	uint32_t r = atomic_load_explicit(&c->refs, memory_order_acquire);

	do {
		if (r == 0)
			return 0;
	} while (!atomic_compare_exchange_weak_explicit(&c->refs, &r, r + 1, memory_order_acq_rel,
							memory_order_acquire));
	if (atomic_load_explicit(&c->gen, memory_order_acquire) != gen) {
		q_slot_put(c);
		return 0;
	}
	return 1;
}

void q_slot_put(struct q_cpl *c)
{
	if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1)
		atomic_store_explicit(&c->state, Q_SLOT_FREE, memory_order_release);
}

int q_slot_put_token(struct q_cpl *c)
{
	uint32_t r = atomic_load_explicit(&c->refs, memory_order_relaxed), nr;

	do {
		if (!(r & Q_REF_TOKEN))
			return -ESTALE;
		nr = r & ~Q_REF_TOKEN;
	} while (!atomic_compare_exchange_weak_explicit(&c->refs, &r, nr, memory_order_acq_rel,
							memory_order_relaxed));
	if (nr == 0)
		atomic_store_explicit(&c->state, Q_SLOT_FREE, memory_order_release);
	return 0;
}
