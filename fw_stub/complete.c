// SPDX-License-Identifier: MIT
/*
 * complete.c - writing completion records and waking whoever waits on them.
 */
#include "fw_stub/fw_internal.h"

/* Wake the host threads sleeping on device @d's completions (@cq) and on any
 * device's (@any). Out of line: most completions find nobody asleep. */
static __attribute__((__noinline__)) void wake_host_waiters(const struct q_arena *w, struct q_dev_sh *d,
							  uint32_t cq, uint32_t any)
{
	if (fw_fault_hit(FW_FAULT_WAKE))
		return; /* fault point: this wake-up of host waiters is lost */
	if (cq) {
		os_fetch_add(&d->cq_seq, 1, OS_RELAXED);
		os_wake32(&d->cq_seq);
	}
	if (any) {
		os_fetch_add(&w->sh->any_seq, 1, OS_RELAXED);
		os_wake32(&w->sh->any_seq);
	}
}

/**
 * fw_complete_record() - write an op's final status and publish it.
 * @w: the arena. @d/@qs/@c: the op's device, queue and completion record.
 * @st/@bytes: its outcome.
 * @own: the caller is the engine that owns the op's queue (in a pass, so
 *       alone), which counts it with a plain add; any other engine counts
 *       with a locked one.
 * @kick_all: also wake the device's engines (the op belongs to another
 *            engine, or another queue may depend on it).
 */
void fw_complete_record(const struct q_arena *w, struct q_dev_sh *d, struct q_queue_sh *qs, struct q_cpl *c,
			enum accdma_status st, uint64_t bytes, int own, int kick_all)
{
	uint32_t cq, any;

	os_store(&c->bytes, bytes, OS_RELAXED);
	os_store(&c->status, st, OS_RELAXED);
	os_store(&c->stage, ACCDMA_STAGE_DONE, OS_RELAXED);
	/* Counted before DONE is published: whoever sees the op done sees it counted. */
	if (own)
		q_single_writer_add(&qs->completed_own, 1);
	else
		os_fetch_add(&qs->completed, 1, OS_RELAXED);
	if (st != ACCDMA_OK)
		os_fetch_add(&qs->errors, 1, OS_RELAXED);
	os_store(&c->state, Q_SLOT_DONE, OS_RELEASE);
	if (d->polled)
		return; /* nobody sleeps on a polled device: no fence, no wake-up */

	/* Host waiters sleep on cq_seq. The fence orders our DONE store before
	 * reading cq_waiters, against the waiter's increment-then-recheck: either
	 * we see the waiter, or it sees DONE. With no waiter, no shared write.
	 * (Light when both processes use membarrier: q_kick_fence().) */
	q_kick_fence(d);
	cq = os_load(&d->cq_waiters, OS_RELAXED);
	any = os_load(&w->sh->any_waiters, OS_RELAXED);
	if (cq | any)
		wake_host_waiters(w, d, cq, any);
	/* The fence above also orders DONE before each engine's `sleeping` read. */
	if (kick_all)
		for (uint32_t e = 0; e < w->g.engines; e++)
			q_engine_kick_fenced(&d->engines[e]);
}

/**
 * fw_complete_own() - complete an op of the calling engine's own queue.
 * @fd/@q/@op: the op. @st/@bytes: its outcome.
 * Sibling engines of the device may hold dependents of it: they are kicked.
 */
void fw_complete_own(struct fw_device *fd, struct fw_queue *q, struct fw_op *op,
		     enum accdma_status st, uint64_t bytes)
{
	fw_complete_record(fd->w, fd->sh, q->sh, &q->cpl[op->slot], st, bytes, 1, fd->nengines > 1);
}

/**
 * fw_op_finish() - the owning engine lets go of a completed op: drops the pins
 * it holds on its dependencies. (It holds none on the op's own slot: the
 * slot is the host's again once DONE is published, q_slot_reusable().)
 * @fd: the device. @op: the op (DONE in the shared record).
 */
void fw_op_finish(struct fw_device *fd, struct fw_op *op)
{
	if (op->deps_held) {
		for (uint16_t i = 0; i < op->d.num_deps; i++) {
			uint64_t t = op->d.deps[i];
			q_slot_put(&q_cpls(fd->w, fd->id, q_token_queue(t))[q_token_slot(t)]);
		}
		op->deps_held = 0;
	}
	op->state = FW_OP_DONE;
}
