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
 * The table is open addressing with linear probing and backward-shift
 * deletion, under the receiving device's lock (never a lock of all devices).
 * Every bound (capacity, probe lengths) is this process's own: the table
 * and its count are in shared memory.
 */

#include "fw_stub/fw_internal.h"
#include "fw_stub/peer.h"

static uint64_t rdv_hash(int32_t src, uint64_t tag, uint64_t seq)
{
	uint64_t h = (uint64_t)(uint32_t)src * 0x9e3779b97f4a7c15ull;

	h ^= tag + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
	h ^= seq * 0xbf58476d1ce4e5b9ull;
	h ^= h >> 31;
	return h;
}

static void rdv_unlock(const struct fw_rdv *r)
{
	os_store(&r->sh->rdv_lock, 0, OS_RELEASE);
}

/* May the lock word's holder @v be passed over? A value that names no
 * device is a peer's scribble, and a device that is lost died with the lock
 * (its process's updates to the table are each complete before its unlock
 * is reachable, so the table is consistent). */
static int holder_gone(const struct fw_device *fd, uint32_t v)
{
	return v > fd->w->g.ndev || fw_peer_lost(fd, v - 1);
}

/* Take table @r's lock. Held for a hash lookup: spin, yielding the core to
 * a holder that may have been descheduled (more threads than cores is common
 * here), and every so often look whether the holder is gone, or whether
 * this device is stopping (then give up: the caller treats the table as
 * unavailable, so that no peer can hold up a close).
 * Return: 0 with the lock held, -1 if not taken. */
static int rdv_lock(struct fw_device *fd, const struct fw_rdv *r)
{
	uint32_t me = fd->id + 1, v = 0;

	for (uint32_t n = 1;; n++) {
		if (os_cas_weak(&r->sh->rdv_lock, &v, me, OS_ACQUIRE, OS_RELAXED))
			return 0;
		if (v == 0)
			continue;
		if (!(n & 255)) {
			if (os_load(&fd->stop, OS_ACQUIRE))
				return -1;
			if (holder_gone(fd, v))
				continue; /* the CAS from v takes it over */
		}
		os_yield();
		v = 0;
	}
}

/* The entry for (src, tag, seq), or NULL. Under the table's lock. */
static struct q_rdv *rdv_find(const struct fw_rdv *r, int32_t src, uint64_t tag, uint64_t seq)
{
	struct q_rdv *t = r->t;
	uint32_t cap = r->cap, i = (uint32_t)rdv_hash(src, tag, seq) & (cap - 1);

	for (uint32_t n = 0; n < cap; n++, i = (i + 1) & (cap - 1)) {
		struct q_rdv *e = &t[i];

		if (!e->used)
			return NULL;
		if (e->src == src && e->tag == tag && e->seq == seq)
			return e;
	}
	return NULL;
}

/* A new entry for (src, tag, seq), or NULL when the table is full (the op
 * retries later). Under the table's lock. */
static struct q_rdv *rdv_insert(const struct fw_rdv *r, int32_t src, uint64_t tag, uint64_t seq)
{
	struct q_rdv *t = r->t;
	uint32_t cap = r->cap, i = (uint32_t)rdv_hash(src, tag, seq) & (cap - 1), n;

	if (r->sh->rdv_count + 1 >= cap)
		return NULL;
	/* Bounded: the count is in shared memory, and a scribbled table may have no free entry. */
	for (n = 0; n < cap && t[i].used; n++)
		i = (i + 1) & (cap - 1);
	if (n == cap)
		return NULL;
	r->sh->rdv_count++;
	t[i] = (struct q_rdv){ .used = 1, .src = src, .tag = tag, .seq = seq };
	return &t[i];
}

/* Set whose entry @e is, keeping the count of send entries (under the lock). */
static void rdv_set_side(const struct fw_rdv *r, struct q_rdv *e, uint16_t side)
{
	uint32_t n = os_load(&r->sh->rdv_sends, OS_RELAXED);

	n -= e->side == ACCDMA_OP_SEND;
	n += side == ACCDMA_OP_SEND;
	e->side = side;
	os_store(&r->sh->rdv_sends, n, OS_RELEASE);
}

/* Backward-shift deletion keeps probe chains unbroken without tombstones. */
static void rdv_remove(const struct fw_rdv *r, struct q_rdv *e)
{
	struct q_rdv *t = r->t;
	uint32_t cap = r->cap, i = (uint32_t)(e - t), j = i;

	rdv_set_side(r, e, 0);

	for (uint32_t n = 0; n < cap; n++) {
		j = (j + 1) & (cap - 1);
		if (!t[j].used)
			break;
		uint32_t home = (uint32_t)rdv_hash(t[j].src, t[j].tag, t[j].seq) & (cap - 1);
		/* Move t[j] into the hole at i unless its home lies cyclically in (i, j]. */
		int in_range = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
		if (!in_range) {
			t[i] = t[j];
			i = j;
		}
	}
	t[i].used = 0;
	r->sh->rdv_count--;
}

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
	rdv_set_side(home, e, op->d.kind);
	e->failed = 0;
	e->key = op->d.key;
	e->offset = op->d.offset;
	e->length = op->d.length;
	e->dev = (int32_t)fd->id;
	e->queue = (uint16_t)q->index;
	e->slot = op->slot;
}

/* Move the data of a matched pair; returns the status for both sides. */
static enum accdma_status rdv_transfer(struct fw_device *fd, const struct fw_op *op,
				       const struct q_rdv *e, uint64_t *bytes)
{
	uint64_t send_len = op->d.kind == ACCDMA_OP_SEND ? op->d.length : e->length;
	uint64_t recv_len = op->d.kind == ACCDMA_OP_RECV ? op->d.length : e->length;
	void *other, *src, *dst;
	enum accdma_status st;

	*bytes = 0;
	if (send_len > recv_len)
		return ACCDMA_ST_TRUNCATED;
	/* The waiting side was validated by its own engine; resolve it in this
	 * process's address space (and re-check: its region may have been freed). */
	st = fw_peer_range(fd, (uint32_t)e->dev, e->key, e->offset, e->length, 1, &other);
	if (st != ACCDMA_OK)
		return ACCDMA_ST_PEER_ERROR;
	src = op->d.kind == ACCDMA_OP_SEND ? op->addr : other;
	dst = op->d.kind == ACCDMA_OP_SEND ? other : op->addr;
	if (fw_fault_hit(FW_FAULT_MATCH) || fw_copy(fd, dst, src, send_len))
		return ACCDMA_ST_DMA_ERROR;
	*bytes = send_len;
	return ACCDMA_OK;
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

	fw_peer_rdv(fd, hid, &home);
	if (rdv_lock(fd, &home))
		return FW_ARRIVE_RETRY;
	e = rdv_find(&home, src, op->d.tag, op->d.seq);
	if (!e) {
		e = rdv_insert(&home, src, op->d.tag, op->d.seq);
		if (e) {
			rdv_fill(&home, e, fd, q, op);
			op->state = FW_OP_PEER;
			os_store(&q->cpl[op->slot].stage, ACCDMA_STAGE_PEER, OS_RELAXED);
		}
		rdv_unlock(&home);
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
		rdv_unlock(&home);
		fw_peer_kick(fd, (uint32_t)mate.dev); /* it may sleep */
		return FW_ARRIVE_WAIT;
	}
	rdv_remove(&home, e);
	rdv_unlock(&home);

	if (mate.failed) {
		fw_complete_own(fd, q, op, ACCDMA_ST_PEER_ERROR, 0);
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
	} else {
		os_store(&q->cpl[op->slot].stage, ACCDMA_STAGE_RUNNING, OS_RELAXED);
		st = rdv_transfer(fd, op, &mate, &bytes);
	}
	if (mate_slot_ok(fd, &mate))
		fw_peer_complete(fd, (uint32_t)mate.dev, mate.queue, mate.slot, st, bytes);
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
	fw_peer_rdv(fd, hid, &home);
	if (rdv_lock(fd, &home))
		return; /* stopping: the partner's own peer check completes it */
	e = rdv_find(&home, src, op->d.tag, op->d.seq);
	if (e) {
		mate = *e;
		rdv_remove(&home, e);
		rdv_unlock(&home);
		if (!mate.failed && mate.side != op->d.kind && mate_valid(fd, op, &mate))
			fw_peer_complete(fd, (uint32_t)mate.dev, mate.queue, mate.slot,
					    ACCDMA_ST_PEER_ERROR, 0);
		return;
	}
	e = rdv_insert(&home, src, op->d.tag, op->d.seq);
	if (e) {
		rdv_set_side(&home, e, op->d.kind);
		e->failed = (uint16_t)st;
		e->dev = (int32_t)fd->id;
	}
	rdv_unlock(&home);
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

	fw_peer_rdv(fd, rdv_home(fd, op, &src), &home);
	if (rdv_lock(fd, &home))
		return 1; /* stopping: the op completes here; its partner sees the device lost */
	e = rdv_find(&home, src, op->d.tag, op->d.seq);
	if (e && !e->failed && e->side == op->d.kind && e->dev == (int32_t)fd->id &&
	    e->queue == q->index && e->slot == op->slot) {
		e->failed = (uint16_t)st;
		taken = 1;
	}
	rdv_unlock(&home);
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
	if (rdv_lock(fd, &home))
		return 0;
	e = rdv_find(&home, src, tag, seq);
	if (!e || e->side != ACCDMA_OP_RECV) {
		rdv_unlock(&home);
		return 0; /* a send entry here would be a corrupt ring: leave it to its recv */
	}
	*mate = *e;
	rdv_remove(&home, e);
	rdv_unlock(&home);
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
	if (rdv_lock(fd, &home))
		return 0;
	e = rdv_find(&home, op->d.peer, op->d.tag, op->d.seq);
	if (!e || e->side != ACCDMA_OP_SEND || e->failed ||
	    !os_load(&c->handoff, OS_ACQUIRE)) {
		rdv_unlock(&home);
		return 0;
	}
	mate = *e;
	rdv_remove(&home, e);
	os_store(&c->handoff, 0, OS_RELAXED);
	rdv_unlock(&home);
	if (mate_valid(fd, op, &mate))
		fw_peer_complete(fd, (uint32_t)mate.dev, mate.queue, mate.slot, ACCDMA_ST_PEER_ERROR, 0);
	return 1;
}
