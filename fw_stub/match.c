// SPDX-License-Identifier: MIT
/*
 * match.c - pairing sends with recvs.
 *
 * The host numbers each send and recv at post time: the k-th send from A to B
 * with tag T and the k-th recv on B from A with tag T get the same sequence
 * number. So matching is a rendezvous on the key (A, T, k) in B's table: the
 * first of the two to become ready leaves an entry; the second finds it, takes
 * it out and moves the data itself, then completes both. A failed op leaves a
 * marker instead, so its partner completes PEER_ERROR instead of hanging.
 *
 * The table is rdv.c's. A send whose receiver is far (another host: the
 * peer seam's link) never touches that table: it announces itself in a
 * message, and the receiver's engine runs the same steps on its own table
 * (msg.c), clearing the sender to write the data when the pair meets.
 */

#include "fw_stub/rdv.h"

/* The table that pairs this op: the receiving device's (its index). */
static uint32_t rdv_home(const struct fw_device *fd, const struct fw_op *op, int32_t *src)
{
	if (op->d.kind == ACCDMA_OP_SEND) {
		*src = (int32_t)fd->id;
		return (uint32_t)op->d.peer;
	}
	*src = op->d.peer;
	return fd->id;
}

/* What the partner needs to move the data and complete this op. */
static void rdv_fill(const struct fw_rdv *home, struct q_rdv *e, struct fw_device *fd, struct fw_queue *q,
		     const struct fw_op *op)
{
	fw_rdv_set_side(home, e, op->d.kind);
	e->failed = 0;
	e->key = op->d.key;
	e->offset = op->d.offset;
	e->length = op->d.length;
	e->dev = (int32_t)fd->id;
	e->queue = (uint16_t)q->index;
	e->slot = op->slot;
	e->gen = op->gen;
}

/* Move the data of a matched pair; returns the status for both sides. */
static enum accdma_status rdv_transfer(struct fw_device *fd, const struct fw_op *op,
				       const struct q_rdv *e, uint64_t *bytes)
{
	uint64_t send_len = op->d.kind == ACCDMA_OP_SEND ? op->d.length : e->length;
	uint64_t recv_len = op->d.kind == ACCDMA_OP_RECV ? op->d.length : e->length;
	enum accdma_status st;

	*bytes = 0;
	if (send_len > recv_len)
		return ACCDMA_ST_TRUNCATED;
	if (!fw_peer_near(fd, (uint32_t)e->dev))
		return ACCDMA_OK; /* a far send with no data (one with data is cleared to write) */
	/* The waiting side was validated by its own engine; resolve it in this
	 * process's address space (and re-check: its region may have been
	 * freed), or reach it in its own process (registered memory over shm). */
	if (fw_fault_hit(FW_FAULT_MATCH))
		return ACCDMA_ST_DMA_ERROR;
	st = fw_peer_move(fd, (uint32_t)e->dev, e->key, e->offset, e->length, op->addr, send_len,
			  op->d.kind == ACCDMA_OP_SEND);
	*bytes = st == ACCDMA_OK ? send_len : 0;
	return st;
}

/* A rendezvous entry may have been written by another process (shm): before
 * touching the op it names, check that it names a posted slot of the arena. */
static int mate_slot_ok(const struct fw_device *fd, const struct q_rdv *m)
{
	return fw_peer_op_posted(fd, m->dev, m->queue, m->slot);
}

/* ... and, for a partner, that it is an op of @op's peer. */
static int mate_valid(const struct fw_device *fd, const struct fw_op *op, const struct q_rdv *m)
{
	return m->dev == op->d.peer && mate_slot_ok(fd, m);
}

/* Tell a waiting recv (named by @m) that its send now waits in the table for
 * the recv's engine to copy it. Under the table's lock: whoever takes the lock
 * next and finds the send's entry also sees the flag. */
static void handoff_flag(const struct fw_device *fd, const struct q_rdv *m)
{
	fw_peer_handoff(fd, (uint32_t)m->dev, m->queue, m->slot);
}

/* Hand off only to a device with engine threads: a polled device moves only
 * while its host polls, and the send must not wait for that. */
static int may_hand_off(const struct fw_device *fd, const struct fw_op *op, const struct q_rdv *m)
{
	return op->d.kind == ACCDMA_OP_SEND && op->d.length >= FW_HANDOFF_MIN && !m->failed &&
	       m->side == ACCDMA_OP_RECV && mate_valid(fd, op, m) &&
	       !fw_peer_polled(fd, (uint32_t)m->dev);
}

/* A send whose receiver is far is staged (stage.c) or announces itself, and
 * waits for its finish: waiting before the message leaves, since the finish
 * may come at once. */
static enum fw_arrive far_arrive(struct fw_device *fd, struct fw_queue *q, struct fw_op *op)
{
	int staged;

	op->state = FW_OP_PEER;
	op->withdrawing = 0;
	os_store(&q->cpl[op->slot].stage, ACCDMA_STAGE_PEER, OS_RELAXED);
	staged = fw_stage_send(fd, q, op); /* a medium send goes in one post, if it may */
	if (staged >= 0)
		return staged ? FW_ARRIVE_DONE : FW_ARRIVE_WAIT;
	if (!fw_far_announce(fd, q, op))
		return FW_ARRIVE_WAIT;
	fw_complete_own(fd, q, op, ACCDMA_ST_PEER_LOST, 0);
	return FW_ARRIVE_DONE;
}

/**
 * fw_match_arrive() - a ready send or recv looks for its partner.
 * @fd: the op's device. @q: its queue. @op: the op.
 * Return: FW_ARRIVE_DONE (the pair completed; @op is complete), FW_ARRIVE_WAIT
 * (an entry was left; the partner will complete @op), FW_ARRIVE_RETRY (the table is full).
 */
enum fw_arrive fw_match_arrive(struct fw_device *fd, struct fw_queue *q, struct fw_op *op)
{
	int32_t src;
	uint32_t hid = rdv_home(fd, op, &src);
	struct q_rdv *e, mate;
	struct fw_rdv home;
	enum accdma_status st;
	uint64_t bytes;

	if (!fw_peer_near(fd, hid))
		return far_arrive(fd, q, op);
	fw_peer_rdv(fd, hid, &home);
	if (fw_rdv_lock(fd, &home))
		return FW_ARRIVE_RETRY;
	e = fw_rdv_find(&home, src, op->d.tag, op->d.seq);
	if (!e) {
		e = fw_rdv_insert(&home, src, op->d.tag, op->d.seq);
		if (e) {
			rdv_fill(&home, e, fd, q, op);
			op->state = FW_OP_PEER;
			os_store(&q->cpl[op->slot].stage, ACCDMA_STAGE_PEER, OS_RELAXED);
		}
		fw_rdv_unlock(&home);
		/* A send waits: its recv may be parked, and its engine asleep. */
		if (e && op->d.kind == ACCDMA_OP_SEND)
			fw_peer_kick(fd, hid);
		return e ? FW_ARRIVE_WAIT : FW_ARRIVE_RETRY;
	}
	mate = *e;
	/* A large send that finds its recv waiting leaves the copy to the recv's
	 * engine: in a permute each device then copies what it receives, instead
	 * of whichever arrived second copying both directions. */
	if (may_hand_off(fd, op, &mate)) {
		rdv_fill(&home, e, fd, q, op);
		op->state = FW_OP_PEER;
		os_store(&q->cpl[op->slot].stage, ACCDMA_STAGE_PEER, OS_RELAXED);
		handoff_flag(fd, &mate);
		fw_rdv_unlock(&home);
		fw_peer_kick(fd, (uint32_t)mate.dev); /* it may sleep */
		return FW_ARRIVE_WAIT;
	}
	fw_rdv_remove(&home, e);
	fw_rdv_unlock(&home);

	if (mate.failed) {
		fw_complete_own(fd, q, op, ACCDMA_ST_PEER_ERROR, 0);
		return FW_ARRIVE_DONE;
	}
	if (op->d.kind == ACCDMA_OP_RECV && mate.side == ACCDMA_OP_SEND && mate.staged &&
	    !fw_peer_near(fd, (uint32_t)mate.dev)) {
		/* A far send staged in our slot: copy it out, and finish the send. */
		os_store(&q->cpl[op->slot].stage, ACCDMA_STAGE_RUNNING, OS_RELAXED);
		st = fw_stage_take(fd, &mate, op->addr, op->d.length, &bytes);
		fw_peer_complete(fd, &mate, st, bytes);
		fw_complete_own(fd, q, op, st, bytes);
		return FW_ARRIVE_DONE;
	}
	if (mate.side == op->d.kind) {
		/* Two sends (or recvs) with one sequence number: a corrupt ring. */
		st = ACCDMA_ST_PEER_ERROR;
		bytes = 0;
	} else if (!mate_valid(fd, op, &mate)) {
		/* An entry naming no posted op of the peer: only this op completes. */
		fw_complete_own(fd, q, op, ACCDMA_ST_PEER_ERROR, 0);
		return FW_ARRIVE_DONE;
	} else if (!fw_peer_near(fd, (uint32_t)mate.dev) && mate.length && mate.length <= op->d.length) {
		/* A far send (only a recv meets one here: the table is ours):
		 * clear it to write, and wait for its finish. */
		bytes = 0;
		st = fw_fault_hit(FW_FAULT_MATCH) ? ACCDMA_ST_DMA_ERROR : ACCDMA_ST_PEER_LOST;
		if (st == ACCDMA_ST_PEER_LOST) {
			op->state = FW_OP_PEER;
			os_store(&q->cpl[op->slot].stage, ACCDMA_STAGE_PEER, OS_RELAXED);
			if (!fw_far_clear(fd, &mate, q->index, op->slot, op->gen, op->d.key, op->d.offset,
					  mate.length))
				return FW_ARRIVE_WAIT;
		}
	} else {
		os_store(&q->cpl[op->slot].stage, ACCDMA_STAGE_RUNNING, OS_RELAXED);
		st = rdv_transfer(fd, op, &mate, &bytes);
	}
	if (mate_slot_ok(fd, &mate))
		fw_peer_complete(fd, &mate, st, bytes);
	fw_complete_own(fd, q, op, st, bytes);
	return FW_ARRIVE_DONE;
}

/**
 * fw_match_fail() - a send or recv that failed before arriving tells its partner.
 * @fd/@q/@op: the failed op (not yet completed). @st: its status (for the marker).
 *
 * A partner already waiting completes PEER_ERROR now; otherwise a marker is
 * left so the partner completes PEER_ERROR when it arrives.
 */
void fw_match_fail(struct fw_device *fd, struct fw_queue *q, struct fw_op *op, enum accdma_status st)
{
	int32_t src;
	uint32_t hid = rdv_home(fd, op, &src);
	struct q_rdv *e, mate;
	struct fw_rdv home;

	(void)q;
	if (!fw_peer_near(fd, hid)) {
		fw_far_send_failed(fd, op, st);
		return;
	}
	fw_peer_rdv(fd, hid, &home);
	if (fw_rdv_lock(fd, &home))
		return; /* stopping: the partner's own peer check completes it */
	e = fw_rdv_find(&home, src, op->d.tag, op->d.seq);
	if (e) {
		mate = *e;
		fw_rdv_remove(&home, e);
		fw_rdv_unlock(&home);
		fw_stage_drop(fd, &mate); /* the finish below gives its slot back */
		if (!mate.failed && mate.side != op->d.kind && mate_valid(fd, op, &mate))
			fw_peer_complete(fd, &mate, ACCDMA_ST_PEER_ERROR, 0);
		return;
	}
	e = fw_rdv_insert(&home, src, op->d.tag, op->d.seq);
	if (e) {
		fw_rdv_set_side(&home, e, op->d.kind);
		e->failed = (uint16_t)st;
		e->dev = (int32_t)fd->id;
	}
	fw_rdv_unlock(&home);
	/* A failed send's marker: its recv may be parked, and its engine asleep. */
	if (e && op->d.kind == ACCDMA_OP_SEND)
		fw_peer_kick(fd, hid);
}

/**
 * fw_match_withdraw() - take back an op's waiting entry (cancel, reset).
 * @fd/@q/@op: an op in FW_OP_PEER. @st: the status to leave for the partner.
 * Return: 1 if withdrawn (the caller completes @op; the partner will see
 * PEER_ERROR), 0 if the partner already took it (it will complete @op).
 */
int fw_match_withdraw(struct fw_device *fd, struct fw_queue *q, struct fw_op *op, enum accdma_status st)
{
	int32_t src;
	struct q_rdv *e;
	struct fw_rdv home;
	int taken = 0;
	uint32_t hid = rdv_home(fd, op, &src);

	if (!fw_peer_near(fd, hid))
		return fw_far_withdraw(fd, q, op, st);
	fw_peer_rdv(fd, hid, &home);
	if (fw_rdv_lock(fd, &home))
		return 1; /* stopping: the op completes here; its partner sees the device lost */
	e = fw_rdv_find(&home, src, op->d.tag, op->d.seq);
	if (e && !e->failed && e->side == op->d.kind && e->dev == (int32_t)fd->id &&
	    e->queue == q->index && e->slot == op->slot) {
		e->failed = (uint16_t)st;
		taken = 1;
	}
	fw_rdv_unlock(&home);
	return taken;
}

/**
 * fw_match_claim_recv() - take out the entry of a recv of ours waiting for
 * (@src, @tag, @seq): its eager message has landed.
 * @fd: the receiving device. @src/@tag/@seq: the message. @mate: the entry taken.
 * Return: 1 if a live recv was taken (the caller completes it), -1 if the
 * entry was a withdrawn or failed recv's marker (the message is dropped), 0
 * if nothing waits for it yet.
 */
int fw_match_claim_recv(struct fw_device *fd, int32_t src, uint64_t tag, uint64_t seq, struct q_rdv *mate)
{
	struct q_rdv *e;
	struct fw_rdv home;

	fw_peer_rdv(fd, fd->id, &home);
	if (fw_rdv_lock(fd, &home))
		return 0;
	e = fw_rdv_find(&home, src, tag, seq);
	if (!e || e->side != ACCDMA_OP_RECV) {
		fw_rdv_unlock(&home);
		return 0; /* a send entry here would be a corrupt ring: leave it to its recv */
	}
	*mate = *e;
	fw_rdv_remove(&home, e);
	fw_rdv_unlock(&home);
	if (mate->failed || mate->dev != (int32_t)fd->id || !mate_slot_ok(fd, mate))
		return -1;
	return 1;
}

/**
 * fw_match_refuse_handoff() - a waiting recv whose send handed it the copy
 * ends without copying (cancel, reset): take the send's entry out and
 * complete the send PEER_ERROR.
 * @fd/@q/@op: the recv, in FW_OP_PEER.
 * Return: 1 if the recv had been handed a send (the caller completes the
 * recv), 0 if not (its entry is its own, or a partner is completing it).
 */
int fw_match_refuse_handoff(struct fw_device *fd, struct fw_queue *q, struct fw_op *op)
{
	struct q_rdv *e, mate;
	struct fw_rdv home;
	struct q_cpl *c = &q->cpl[op->slot];

	fw_peer_rdv(fd, fd->id, &home);
	if (fw_rdv_lock(fd, &home))
		return 0;
	e = fw_rdv_find(&home, op->d.peer, op->d.tag, op->d.seq);
	if (!e || e->side != ACCDMA_OP_SEND || e->failed ||
	    !os_load(&c->handoff, OS_ACQUIRE)) {
		fw_rdv_unlock(&home);
		return 0;
	}
	mate = *e;
	fw_rdv_remove(&home, e);
	os_store(&c->handoff, 0, OS_RELAXED);
	fw_rdv_unlock(&home);
	if (mate_valid(fd, op, &mate))
		fw_peer_complete(fd, &mate, ACCDMA_ST_PEER_ERROR, 0);
	return 1;
}

/**
 * fw_match_probe_send() - does a send from some source s of [0, @n) (or
 * its failure's marker) wait in our table under (@tag, @seqs[s])?
 * @fd: the receiving device. @seqs: each source's next recv number.
 * @first: the source to look at first (the rest follow in turn).
 * Return: the first such source, or -1.
 */
int32_t fw_match_probe_send(struct fw_device *fd, uint64_t tag, const uint64_t *seqs, uint32_t n,
			    uint32_t first)
{
	struct fw_rdv home;
	int32_t found = -1;

	fw_peer_rdv(fd, fd->id, &home);
	if (!os_load(&home.sh->rdv_sends, OS_ACQUIRE) || fw_rdv_lock(fd, &home))
		return -1;
	for (uint32_t i = 0; i < n && found < 0; i++) {
		uint32_t src = (first + i) % n;
		const struct q_rdv *e = fw_rdv_find(&home, (int32_t)src, tag, seqs[src]);

		if (e && e->side == ACCDMA_OP_SEND)
			found = (int32_t)src;
	}
	fw_rdv_unlock(&home);
	return found;
}
