// SPDX-License-Identifier: MIT
/*
 * ops.c - how an engine moves the ops of one queue along.
 *
 * Descriptors are read from the ring in order, copied, and validated before
 * anything else. Each pending op then waits for its dependencies, becomes
 * ready, and runs: exec/zero/write/after_all at once, send/recv through the
 * rendezvous. An op that waits never holds up the ops behind it, except a
 * fence, which stops the ring until everything before it has completed.
 */

#include "fw_stub/fw_internal.h"
#include "fw_stub/peer.h"

static int is_pair_op(const struct fw_op *op)
{
	return op->d.kind == ACCDMA_OP_SEND || op->d.kind == ACCDMA_OP_RECV;
}

/*
 * An op waiting at the rendezvous is completed by its partner's engine, which
 * also drops this engine's reference (fw_peer_complete()): the slot may be
 * free, or reused, by the time we look. It is still ours only while its
 * generation is unchanged and it is not done.
 */
static int waiting_op_pending(const struct fw_queue *q, const struct fw_op *op)
{
	return fw_cpl_holds(&q->cpl[op->slot], op->gen);
}

/* A waiting op was completed by its partner (or by the eager scan) and leaves
 * the pending list: a recv no longer needs landing messages looked up for it. */
static void partner_completed(struct fw_device *fd, struct fw_op *op)
{
	if (op->d.kind == ACCDMA_OP_RECV)
		fw_eager_unwait(fd, op->d.peer);
	op->state = FW_OP_DONE;
}

/* Forget a waiting op that its partner completed; drop a stale copy of it from the list. */
static void forget_waiting(struct fw_device *fd, struct fw_queue *q, uint32_t slot)
{
	uint32_t out = 0;

	for (uint32_t i = 0; i < q->npend; i++)
		if (q->pend[i] != slot)
			q->pend[out++] = q->pend[i];
	q->npend = out;
	partner_completed(fd, &q->ops[slot]);
}

/* shm: 1 if @peer's process is gone (it died, or closed its world). Set once
 * by that process or a survivor's monitor, which then kicks the engines.
 * Called for every waiting op in every pass: the world's lost_any is read
 * first, so with nobody lost the peer seam is not asked. */
static inline int peer_lost(const struct fw_device *fd, int32_t peer)
{
	return os_load(&fd->w->sh->lost_any, OS_ACQUIRE) && peer >= 0 &&
	       (uint32_t)peer < fd->w->g.ndev && (uint32_t)peer != fd->id &&
	       fw_peer_lost(fd, (uint32_t)peer);
}

/* An op waiting at the rendezvous whose peer is gone completes PEER_LOST. If
 * the peer's engine had already taken the entry, it died (a closed peer's
 * engines finish what they took before it is marked lost), so nobody else
 * will complete the op. Always returns 1 (the op left the pending list). */
static int finish_lost(struct fw_device *fd, struct fw_queue *q, struct fw_op *op)
{
	fw_match_withdraw(fd, q, op, ACCDMA_ST_PEER_LOST);
	if (waiting_op_pending(q, op)) {
		fw_complete_own(fd, q, op, ACCDMA_ST_PEER_LOST, 0);
		fw_op_finish(fd, op);
	}
	return 1;
}

/* Where a far send's clearance, or a far write, stands (fw_op.cleared):
 * FW_CLEARED (a send to write), FW_CLEAR_WRITING, or FW_CLEAR_NONE. A
 * clearance is a send's only (one naming any other op is ignored), and one
 * for an earlier op of the slot is dropped; one being filled in is not there yet. */
static uint32_t clearance(struct fw_op *op)
{
	uint32_t cl = os_load(&op->cleared, OS_ACQUIRE);

	if (cl == FW_CLEARED && op->d.kind != ACCDMA_OP_SEND)
		return FW_CLEAR_NONE;
	if (cl == FW_CLEARED && os_load(&op->clear_gen, OS_RELAXED) != op->gen) {
		os_store(&op->cleared, FW_CLEAR_NONE, OS_RELAXED);
		return FW_CLEAR_NONE;
	}
	return cl == FW_CLEAR_FILLING ? FW_CLEAR_NONE : cl;
}

/* Fail an op that has not arrived at the rendezvous: its partner is told. */
static void fail_op(struct fw_device *fd, struct fw_queue *q, struct fw_op *op, enum accdma_status st)
{
	if (op->d.kind == ACCDMA_OP_RECV && (op->d.flags & Q_DF_DEFER))
		fw_any_skip(fd, op); /* not numbered: it takes no message */
	else if (op->d.kind == ACCDMA_OP_RECV && op->d.peer >= 0 && (uint32_t)op->d.peer < fd->w->g.ndev)
		fw_eager_fail_recv(fd, q, op, st);
	else if (is_pair_op(op) && op->d.peer >= 0 && (uint32_t)op->d.peer < fd->w->g.ndev)
		fw_match_fail(fd, q, op, st);
	fw_complete_own(fd, q, op, st, 0);
	fw_op_finish(fd, op);
}

/* Check what the host wrote before trusting any of it; resolves local memory. */
static enum accdma_status validate(struct fw_device *fd, struct fw_op *op)
{
	const struct q_desc *d = &op->d;
	int internal = d->flags & Q_DF_INTERNAL;

	if (fw_fault_hit(FW_FAULT_FETCH))
		return ACCDMA_ST_DMA_ERROR;
	switch (d->kind) {
	case ACCDMA_OP_SEND:
	case ACCDMA_OP_RECV:
	case ACCDMA_OP_WRITE:
		if (d->kind == ACCDMA_OP_RECV && d->peer == ACCDMA_ANY_SOURCE && (d->flags & Q_DF_DEFER))
			return dma_resolve(fd->space, fd->w, fd->id, d->key, d->offset, d->length, internal,
					   &op->addr);
		if (d->peer < 0 || (uint32_t)d->peer >= fd->w->g.ndev)
			return ACCDMA_ST_BAD_KEY;
		/* fall through */
	case ACCDMA_OP_ZERO:
		return dma_resolve(fd->space, fd->w, fd->id, d->key, d->offset, d->length,
				   internal && d->kind != ACCDMA_OP_WRITE, &op->addr);
	case ACCDMA_OP_EXEC:
		return d->exec ? ACCDMA_OK : ACCDMA_ST_NOT_ATTEMPTED;
	case ACCDMA_OP_FENCE:
	case ACCDMA_OP_AFTER_ALL:
		return ACCDMA_OK;
	default:
		return ACCDMA_ST_NOT_ATTEMPTED;
	}
}

/* Dependency tokens must name slots of this device; the host pinned each one. */
static int deps_valid(struct fw_device *fd, const struct q_desc *d)
{
	if (d->num_deps > ACCDMA_MAX_DEPS)
		return 0;
	for (uint16_t i = 0; i < d->num_deps; i++) {
		uint64_t t = d->deps[i];

		if (q_token_dev(t) != fd->id || q_token_queue(t) >= fd->w->g.nq ||
		    q_token_slot(t) >= fd->w->g.depth)
			return 0;
	}
	return 1;
}

/* Copy a descriptor out of shared memory once: the fixed part, then only the
 * dependency tokens it uses (a bad count is caught by deps_valid on the copy). */
static void read_desc(struct q_desc *dst, const struct q_desc *src)
{
	/* The count is read once, from the source: the copy's and the length
	 * copied agree, and nothing waits to read back what was just stored. */
	uint16_t num = src->num_deps, n = num <= ACCDMA_MAX_DEPS ? num : 0;

	memcpy(dst, src, offsetof(struct q_desc, deps));
	dst->num_deps = num;
	if (n)
		memcpy(dst->deps, src->deps, n * sizeof(dst->deps[0]));
}

static int run(struct fw_device *fd, struct fw_queue *q, struct fw_op *op);

/* Read new descriptors from the ring, up to and including a fence. */
static int pull(struct fw_device *fd, struct fw_queue *q, int flushing)
{
	uint32_t tail = os_load(&q->sh->sq_tail, OS_ACQUIRE);
	int n = 0;

	/* A host never publishes more than a ring's worth ahead of us: a tail
	 * further on is a scribbled ring, whose entries are skipped, so that a
	 * pass stays bounded by the queue's depth. */
	if (tail - q->head > q->mask + 1)
		q->head = tail;

	while (q->head != tail && (!q->fenced || flushing)) {
		uint32_t slot = os_load(&q->sq[q->head & q->mask], OS_RELAXED);
		struct fw_op *op;
		enum accdma_status st;

		q->head++;
		n++;
		if (slot > q->mask || os_load(&q->cpl[slot].state, OS_ACQUIRE) !=
					      Q_SLOT_POSTED)
			continue; /* not a slot the host published: ignore it */
		op = &q->ops[slot];
		/* The slot's previous op may still be listed as waiting if its
		 * partner completed and freed it since our last look. */
		if (op->state == FW_OP_PEER)
			forget_waiting(fd, q, slot);
		read_desc(&op->d, &q->desc[slot]);
		op->slot = slot;
		op->gen = os_load(&q->cpl[slot].gen, OS_RELAXED);
		op->addr = NULL;
		op->withdrawing = 0;
		os_store(&op->cleared, FW_CLEAR_NONE, OS_RELAXED);
		if (!deps_valid(fd, &op->d)) {
			op->deps_held = 0;
			op->d.num_deps = 0;
			fail_op(fd, q, op, ACCDMA_ST_NOT_ATTEMPTED);
			continue;
		}
		op->deps_held = 1;
		st = flushing ? ACCDMA_ST_FLUSHED : validate(fd, op);
		if (st != ACCDMA_OK) {
			fail_op(fd, q, op, st);
			continue;
		}
		op->state = FW_OP_DEPS;
		os_store(&q->cpl[slot].stage, ACCDMA_STAGE_DEPS, OS_RELAXED);
		/* A send that waits for nothing starts as it is read, ahead of the
		 * recvs read with it: the peer waiting for it hears sooner. */
		if (op->d.kind == ACCDMA_OP_SEND && !op->d.num_deps &&
		    !os_load(&q->cpl[slot].cancel, OS_RELAXED)) {
			op->deps_held = 0;
			op->state = FW_OP_READY;
			if (run(fd, q, op))
				continue;
		}
		q->pend[q->npend++] = slot;
		if (op->d.kind == ACCDMA_OP_FENCE)
			q->fenced = 1;
	}
	os_store(&q->sh->sq_head, q->head, OS_RELEASE);
	return n;
}

/* 1: every dependency succeeded; 0: some still pending; -1: one failed. */
static int deps_state(struct fw_device *fd, const struct fw_op *op)
{
	int pending = 0;

	for (uint16_t i = 0; i < op->d.num_deps; i++) {
		uint64_t t = op->d.deps[i];
		struct q_cpl *c = &q_cpls(fd->w, fd->id, q_token_queue(t))[q_token_slot(t)];

		if (os_load(&c->state, OS_ACQUIRE) != Q_SLOT_DONE)
			pending = 1;
		else if (os_load(&c->status, OS_RELAXED) != ACCDMA_OK)
			return -1;
	}
	return pending ? 0 : 1;
}

/* Drop the references the host took on the dependencies (all of them succeeded). */
static void release_deps(struct fw_device *fd, struct fw_op *op)
{
	for (uint16_t i = 0; i < op->d.num_deps; i++) {
		uint64_t t = op->d.deps[i];
		q_slot_put(&q_cpls(fd->w, fd->id, q_token_queue(t))[q_token_slot(t)]);
	}
	op->deps_held = 0;
}

/* The rendezvous step of a ready send or recv (a recv looks in its sender's
 * ring first; @lost: its peer is gone). Returns 1 if it completed here. */
static inline int arrive(struct fw_device *fd, struct fw_queue *q, struct fw_op *op, int lost)
{
	switch (op->d.kind == ACCDMA_OP_RECV ? fw_eager_recv(fd, q, op, lost) : fw_match_arrive(fd, q, op)) {
	case FW_ARRIVE_DONE:
		fw_op_finish(fd, op);
		return 1;
	case FW_ARRIVE_WAIT:
		return 0;
	case FW_ARRIVE_RETRY:
		q->retry = 1;
		os_store(&q->cpl[op->slot].stage, ACCDMA_STAGE_PEER, OS_RELAXED);
		return 0;
	}
	return 0;
}

/* run() for a ready recv, inline where pending ops are advanced: most of
 * what a pass advances is recvs, and each call to run() saved and restored
 * six registers for a look of a few dozen instructions. A recv whose peer is
 * gone still looks in its sender's ring, which may hold what the peer sent
 * before it went away. */
static inline int run_recv(struct fw_device *fd, struct fw_queue *q, struct fw_op *op)
{
	if (op->state != FW_OP_PARKED) /* a parked recv looks again: it is still waiting */
		os_store(&q->cpl[op->slot].stage, ACCDMA_STAGE_RUNNING, OS_RELAXED);
	return arrive(fd, q, op, peer_lost(fd, op->d.peer));
}

/* Run a ready op. Returns 1 if it completed here. */
static int run(struct fw_device *fd, struct fw_queue *q, struct fw_op *op)
{
	enum accdma_status st = ACCDMA_OK;
	uint64_t bytes = 0;
	int lost, rc;

	if (op->d.kind == ACCDMA_OP_RECV)
		return run_recv(fd, q, op);
	lost = (op->d.kind == ACCDMA_OP_SEND || op->d.kind == ACCDMA_OP_WRITE) && peer_lost(fd, op->d.peer);
	/* A small send leaves at once (its stage goes from DEPS to DONE), or
	 * waits for its far receiver to say whether it has room. */
	if (op->d.kind == ACCDMA_OP_SEND && !lost && (rc = fw_eager_send(fd, q, op)) != 0) {
		if (rc > 0)
			return 1;
		q->retry = 1; /* the answer kicks us, but look soon too */
		os_store(&q->cpl[op->slot].stage, ACCDMA_STAGE_PEER, OS_RELAXED);
		return 0;
	}
	os_store(&q->cpl[op->slot].stage, ACCDMA_STAGE_RUNNING, OS_RELAXED);
	if (lost) {
		fw_complete_own(fd, q, op, ACCDMA_ST_PEER_LOST, 0);
		fw_op_finish(fd, op);
		return 1;
	}
	switch (op->d.kind) {
	case ACCDMA_OP_SEND:
		return arrive(fd, q, op, 0);
	case ACCDMA_OP_WRITE:
		if (!fw_peer_near(fd, (uint32_t)op->d.peer)) {
			rc = fw_far_write_start(fd, q, op); /* completes when the link's write does */
			if (rc)
				fw_op_finish(fd, op);
			return rc;
		}
		st = fw_direct_write(fd, op, &bytes); /* checked against the target's key and bounds */
		break;
	case ACCDMA_OP_ZERO:
		st = dma_zero(op->addr, op->d.length) ? ACCDMA_ST_DMA_ERROR : ACCDMA_OK;
		bytes = op->d.length;
		break;
	case ACCDMA_OP_EXEC:
		if (fw_fault_hit(FW_FAULT_EXEC))
			st = ACCDMA_ST_EXEC_FAILED;
		else if ((rc = fd->host->exec(fd->host->ctx, fd->id, q->index, op->d.exec)) != 0)
			st = rc > 0 ? ACCDMA_ST_EXEC_FAILED : ACCDMA_ST_NOT_ATTEMPTED;
		break;
	case ACCDMA_OP_FENCE:
		q->fenced = 0;
		break;
	default:
		break;
	}
	fw_complete_own(fd, q, op, st, bytes);
	fw_op_finish(fd, op);
	return 1;
}

static int is_deferred(const struct fw_op *op)
{
	return op->d.kind == ACCDMA_OP_RECV && (op->d.flags & Q_DF_DEFER);
}

/* Number a deferred recv (any.c) if it is its turn.
 * Return: 0 if numbered (it goes on as an ordinary recv), 1 if it stops
 * here: still waiting, or completed (FW_OP_DONE: lost, failed). */
static int number_deferred(struct fw_device *fd, struct fw_queue *q, struct fw_op *op, int *progress)
{
	int r = fw_any_number(fd, q, op);

	if (r == 0)
		return 1;
	*progress = 1;
	if (r > 0)
		return 0;
	fail_op(fd, q, op, r == FW_ANY_LOST ? ACCDMA_ST_PEER_LOST : ACCDMA_ST_NOT_ATTEMPTED);
	return 1;
}

/* Advance one pending op. Returns 1 if it is finished (leaves the pending list). */
static int advance(struct fw_device *fd, struct fw_queue *q, struct fw_op *op, int first, int *progress)
{
	struct q_cpl *c = &q->cpl[op->slot];
	uint32_t cl;
	int ds;

	if (op->state == FW_OP_PEER) {
		/* Its eager message, if it landed, was matched to it by the pass's
		 * fw_eager_poll() (or another engine's scan). */
		if (!waiting_op_pending(q, op)) {
			partner_completed(fd, op);
			return 1;
		}
		/* Its far receiver cleared it to write (even if canceled since:
		 * the receiver took it, so it goes), or its write is in flight. */
		cl = clearance(op);
		if (cl != FW_CLEAR_NONE) {
			int done = cl == FW_CLEARED ? fw_far_write_cleared(fd, q, op) : fw_far_write_finish(fd, q, op);

			if (cl == FW_CLEARED)
				*progress = 1;
			if (!done) {
				q->retry = 1; /* the write's completion kicks us, but look soon too */
				return 0;
			}
			*progress = 1;
			fw_op_finish(fd, op);
			return 1;
		}
		/* A send whose far receiver had no room for it announces again
		 * (a canceled one fails instead: its recv is told). */
		if (op->d.kind == ACCDMA_OP_SEND && os_load(&c->handoff, OS_ACQUIRE)) {
			os_store(&c->handoff, 0, OS_RELAXED);
			*progress = 1;
			if (os_load(&c->cancel, OS_RELAXED)) {
				fail_op(fd, q, op, ACCDMA_ST_CANCELED);
				return 1;
			}
			op->state = FW_OP_READY;
			q->retry = 1;
			return run(fd, q, op);
		}
		/* Its large send handed the copy to us: arrive again, second now
		 * (unless canceled first: nothing has moved yet). */
		if (os_load(&c->handoff, OS_ACQUIRE)) {
			if (os_load(&c->cancel, OS_RELAXED) &&
			    fw_match_refuse_handoff(fd, q, op)) {
				fw_eager_unwait(fd, op->d.peer);
				fw_complete_own(fd, q, op, ACCDMA_ST_CANCELED, 0);
				fw_op_finish(fd, op);
				return 1;
			}
			os_store(&c->handoff, 0, OS_RELAXED);
			fw_eager_unwait(fd, op->d.peer);
			op->state = FW_OP_READY;
			*progress = 1;
			return run(fd, q, op);
		}
		if (peer_lost(fd, op->d.peer))
			return finish_lost(fd, q, op);
		if (os_load(&c->cancel, OS_RELAXED) &&
		    fw_match_withdraw(fd, q, op, ACCDMA_ST_CANCELED)) {
			fw_complete_own(fd, q, op, ACCDMA_ST_CANCELED, 0);
			fw_op_finish(fd, op);
			return 1;
		}
		return 0;
	}
	if (os_load(&c->cancel, OS_RELAXED)) {
		if (op->d.kind == ACCDMA_OP_FENCE)
			q->fenced = 0;
		fail_op(fd, q, op, ACCDMA_ST_CANCELED);
		return 1;
	}
	/* A recv from one source the host left for us to number (it was posted
	 * behind an any-source recv) takes its number in turn, whatever it
	 * waits for, as it would have at post time. */
	if (is_deferred(op) && op->d.peer != ACCDMA_ANY_SOURCE && number_deferred(fd, q, op, progress))
		return op->state == FW_OP_DONE;
	if (op->state == FW_OP_DEPS) {
		ds = deps_state(fd, op);
		/* A fence also waits until everything before it has left the list. */
		if (op->d.kind == ACCDMA_OP_FENCE && !first)
			return 0;
		if (ds == 0)
			return 0;
		if (ds < 0) {
			if (op->d.kind == ACCDMA_OP_FENCE)
				q->fenced = 0;
			fail_op(fd, q, op, ACCDMA_ST_NOT_ATTEMPTED);
			*progress = 1;
			return 1;
		}
		release_deps(fd, op);
		op->state = FW_OP_READY;
		*progress = 1;
	}
	/* An any-source recv chooses its message once it is ready: one whose
	 * dependency failed takes none. */
	if (is_deferred(op) && number_deferred(fd, q, op, progress))
		return op->state == FW_OP_DONE;
	if (op->d.kind == ACCDMA_OP_RECV) {
		if (op->state == FW_OP_PARKED && fw_eager_parked_miss(fd, op))
			return 0; /* what its look would find: nothing yet */
		return run_recv(fd, q, op);
	}
	return run(fd, q, op);
}

/**
 * fw_queue_progress() - one pass over a queue: advance pending ops, then read new descriptors.
 * @fd: the device. @q: the queue.
 * Return: non-zero if anything changed.
 */
int fw_queue_progress(struct fw_device *fd, struct fw_queue *q)
{
	int progress = 0;

	/* Advance what is pending, read what is new, and advance once more so
	 * that a new op starts in the pass that read it, not one pass later. */
	for (int round = 0; round < 2; round++) {
		uint32_t out = 0;

		/* Messages that landed for recvs waiting at the rendezvous (or for
		 * failed recvs' markers, to drop them): one look per pass at the
		 * senders they name, before walking the list; none if nothing waits. */
		if (!round && fw_eager_poll(fd))
			progress = 1;

		for (uint32_t i = 0; i < q->npend; i++) {
			struct fw_op *op = &q->ops[q->pend[i]];

			if (advance(fd, q, op, out == 0, &progress))
				progress = 1;
			else
				q->pend[out++] = q->pend[i];
		}
		q->npend = out;
		if (round || !pull(fd, q, 0))
			break;
		progress = 1;
	}
	return progress;
}

/**
 * fw_queue_submit() - read the @count descriptors just published on an idle
 * queue, in the thread that posted them (under the engine's in_pass).
 * @fd: the device. @q: the queue. @count: how many the host just published.
 *
 * Only when nothing else waits on the queue and nothing older is unread: on
 * a busy queue the next pass reads a batch at once (a message per post would
 * hand the peer its ring lines one by one, not a batch of them), and an older op may be a large send, an engine's to start.
 * Return: the descriptors read (0: left to the next pass).
 */
int fw_queue_submit(struct fw_device *fd, struct fw_queue *q, uint32_t count)
{
	uint32_t tail = os_load(&q->sh->sq_tail, OS_ACQUIRE);

	if (q->npend || tail - q->head != count) /* a fence in effect is pending too */
		return 0;
	return pull(fd, q, 0);
}

/**
 * fw_queue_flush() - complete every op of the queue FLUSHED (device reset).
 * @fd: the device. @q: the queue.
 *
 * Ops whose partner is already moving their data are left to complete; the
 * next progress pass removes them. A recv whose large send handed it the copy
 * has moved nothing yet: it completes FLUSHED, and its send PEER_ERROR.
 */
void fw_queue_flush(struct fw_device *fd, struct fw_queue *q)
{
	uint32_t out = 0;

	for (uint32_t i = 0; i < q->npend; i++) {
		struct fw_op *op = &q->ops[q->pend[i]];
		uint32_t cl;

		if (op->state == FW_OP_PEER) {
			if (!waiting_op_pending(q, op)) {
				partner_completed(fd, op);
				continue;
			}
			cl = os_load(&op->cleared, OS_ACQUIRE);
			if (cl == FW_CLEAR_WRITING || (cl != FW_CLEAR_NONE && op->d.kind == ACCDMA_OP_SEND)) {
				q->pend[out++] = q->pend[i]; /* cleared or writing: it completes when written */
				continue;
			}
			if (op->d.kind == ACCDMA_OP_RECV && fw_match_refuse_handoff(fd, q, op)) {
				fw_eager_unwait(fd, op->d.peer);
			} else if (!fw_match_withdraw(fd, q, op, ACCDMA_ST_FLUSHED)) {
				q->pend[out++] = q->pend[i]; /* the partner is completing it */
				continue;
			}
			fw_complete_own(fd, q, op, ACCDMA_ST_FLUSHED, 0);
			fw_op_finish(fd, op);
			continue;
		}
		fail_op(fd, q, op, ACCDMA_ST_FLUSHED);
	}
	q->npend = out;
	q->fenced = 0;
	pull(fd, q, 1);
}
