// SPDX-License-Identifier: MIT
/*
 * slot.c - when a completion slot may be reused.
 *
 * A slot is reused only when nobody can still look at it: the op is done
 * (the engine's last write), its token was consumed, and no op that depends
 * on it pins it. Only the queue's producer reuses slots (q_slot_reusable, at
 * post time), so none of the three needs a locked instruction to say "I let
 * go": each is a plain store, and the producer reads all three. Pinning
 * checks the token and the generation, so a stale token never pins a newer op.
 *
 * The one race: a producer of another queue of the same device pins the slot
 * (q_slot_tryget) while its token is consumed and the slot's own producer
 * looks. The pin's add is locked; if the consume is too (a device with
 * several queues), then of "pin, read token" and "consume, read pin" one sees
 * the other, and the slot is not reused under a pin that succeeded. With one
 * queue, the pinner and the reuser are the same thread, so the consume is a
 * plain store. (q_slot_consume_token() and q_slot_reusable() are inline, in
 * queue.h.)
 */

#include "queue/queue.h"

int q_slot_tryget(struct q_cpl *c, uint32_t gen)
{
	os_fetch_add(&c->refs, 1, OS_SEQ_CST);
	/* Token before generation: a reused slot's live token is published after
	 * its new generation, so a live token read here comes with the new one. */
	if (!os_load(&c->token, OS_SEQ_CST) ||
	    os_load(&c->gen, OS_ACQUIRE) != gen) {
		q_slot_put(c);
		return 0;
	}
	return 1;
}

void q_slot_put(struct q_cpl *c)
{
	/* release: the dependent's reads of the slot come before its reuse */
	os_fetch_sub(&c->refs, 1, OS_RELEASE);
}
