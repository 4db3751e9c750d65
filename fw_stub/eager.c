// SPDX-License-Identifier: MIT
/*
 * eager.c - small sends through inline rings, as a NIC sends inline data.
 *
 * A send of at most eager_max bytes does not wait for its recv: the engine
 * copies the payload into the receiver's ring for this sender (one 32-byte
 * position up to 8 bytes, one more per 32 bytes beyond: two 8-byte messages
 * to a cache line) and completes the send (its buffer may be reused). The receiver's engines take
 * slots out of order, by (tag, seq): a recv that arrives looks at what its
 * sender has put in the ring; a small recv that finds nothing waits parked
 * and looks again at each pass (may_park()); a larger one waits in the
 * rendezvous table and is found by the engine that sees the message land. A
 * message nobody asked for yet stays in its slot ("held") until its recv arrives.
 *
 * So a small send costs the receiver the lines it reads once, instead of a
 * round trip through the rendezvous table's lock and entries; the consumed
 * mark it writes back stays in its cache until the sender runs out of room.
 * A full ring (no room before the oldest message not yet asked for) sends
 * the op down the rendezvous path: matching is by sequence number, so mixing
 * paths keeps FIFO order per tag.
 *
 * This file is the receiving side; the sending side's ring put is the peer
 * seam's (fw_peer_eager_put()).
 *
 * Locks: fd->eager_tx_lock serialises this device's senders, fd->eager_rx_lock
 * its consumers. Both are this process's (one device is driven by one process),
 * and taken only when the device has more than one engine: otherwise the
 * engine's in_pass flag already lets one thread at a time in. Order: rx, then
 * the device's rendezvous lock.
 */

#include "fw_stub/eager_ring.h"
#include "fw_stub/fw_internal.h"
#include "fw_stub/peer.h"

/* The receiver keeps each message's span in a byte. */
_Static_assert(1 + (ACCDMA_EAGER_MAX - Q_EAGER_HEAD_BYTES + Q_EAGER_CONT_BYTES - 1) / Q_EAGER_CONT_BYTES <= 255,
	       "the largest eager message spans at most 255 positions");

/* Add @d to the count of our recvs from @src waiting in the table. Only the
 * device's engines change it, in their passes: with one engine (passes one
 * at a time, under in_pass) a plain add, with several a locked one. */
static void count_waiting(struct fw_device *fd, uint32_t src, int d)
{
	_Atomic uint32_t *c[2] = { &fd->eager_rx[src].waiting, &fd->eager_waiting };

	for (int i = 0; i < 2; i++) {
		if (fd->nengines < 2)
			q_single_writer_add(c[i], (uint32_t)d);
		else
			os_fetch_add(c[i], (uint32_t)d, OS_RELAXED);
	}
}

/* Slot index of ring position @pos. The ring size is our copy, read once
 * at boot: every index stays inside the arrays sized by it, whatever the
 * shared arena's header says later. */
static uint32_t slot_of(const struct fw_device *fd, uint32_t pos)
{
	return pos & fd->eager_mask;
}

static int is_held(const struct fw_eager_rx *rx, uint32_t idx)
{
	return (rx->held[idx / 64] >> (idx % 64)) & 1;
}

/* Home bucket of (@tag, @seq) in @rx's held index. */
static uint32_t index_home(const struct fw_eager_rx *rx, uint64_t tag, uint64_t seq)
{
	uint64_t h = tag * 0x9e3779b97f4a7c15ull ^ seq * 0xc2b2ae3d27d4eb4full;

	return (uint32_t)(h >> 40) & rx->imask;
}

/* Hold the message whose head is at slot @idx: no recv asked for it yet.
 * It goes into the held index by (tag, seq), so a recv finds it (or learns
 * it is not in the ring) in a probe or two, however full the ring is. */
static void hold(struct fw_eager_rx *rx, uint32_t idx)
{
	const struct q_eager_slot *s = &rx->ring->slots[idx];
	uint32_t b = index_home(rx, s->tag, s->seq);

	while (rx->index[b] >= 0)
		b = (b + 1) & rx->imask;
	rx->index[b] = (int16_t)idx;
	rx->bucket[idx] = (uint16_t)b;
	rx->held[idx / 64] |= 1ull << (idx % 64);
	rx->nheld++;
}

/* Take the message at slot @idx out of the held set and the index (linear
 * probing: the entries after it that could live in its bucket move back). */
static void unhold(struct fw_eager_rx *rx, uint32_t idx)
{
	uint32_t hole = rx->bucket[idx], b = hole;

	rx->held[idx / 64] &= ~(1ull << (idx % 64));
	rx->nheld--;
	for (;;) {
		uint32_t home;

		b = (b + 1) & rx->imask;
		if (rx->index[b] < 0)
			break;
		home = index_home(rx, rx->ring->slots[rx->index[b]].tag, rx->ring->slots[rx->index[b]].seq);
		/* the entry at b may fill the hole if its home is not in (hole, b] */
		if (((b - home) & rx->imask) >= ((b - hole) & rx->imask)) {
			rx->index[hole] = rx->index[b];
			rx->bucket[rx->index[b]] = (uint16_t)hole;
			hole = b;
		}
	}
	rx->index[hole] = -1;
}

/* Read @len payload bytes of the message whose head is at slot @idx. */
static void copy_out(const struct fw_device *fd, struct q_eager_ring *ring, uint32_t idx,
		     uint8_t *dst, uint64_t len)
{
	uint64_t n = len < Q_EAGER_HEAD_BYTES ? len : Q_EAGER_HEAD_BYTES, k;

	fw_ring_copy_head(dst, ring->slots[idx].data, n);
	if (len == n)
		return;
	k = fw_ring_cont_first(fd->eager_mask, idx, len - n);
	if (k)
		dma_copy_range(dst + n, fw_ring_cont(ring, idx + 1), k);
	if (n + k < len)
		dma_copy_range(dst + n + k, fw_ring_cont(ring, 0), len - n - k);
}

/* A message may have been written by another process (shm): its length is
 * checked before anything is copied. */
static enum accdma_status deliver(struct fw_device *fd, struct q_eager_ring *ring, uint32_t idx,
				  void *dst, uint64_t cap, uint64_t *bytes)
{
	uint32_t len = ring->slots[idx].len;

	*bytes = 0;
	if (len > fd->eager_max)
		return ACCDMA_ST_PEER_ERROR;
	if (len > cap)
		return ACCDMA_ST_TRUNCATED;
	if (fw_fault_hit(FW_FAULT_MATCH) || dma_copy(dst, ring->slots[idx].data, 0))
		return ACCDMA_ST_DMA_ERROR; /* the match's and the data mover's fault points */
	copy_out(fd, ring, idx, dst, len);
	*bytes = len;
	return ACCDMA_OK;
}

/* Move the consumed mark over every message no longer held, and publish it
 * for the sender. */
static void advance_done(struct fw_device *fd, uint32_t src)
{
	struct fw_eager_rx *rx = &fd->eager_rx[src];

	uint32_t done = rx->done;

	while (done != rx->cursor && !is_held(rx, slot_of(fd, done)))
		done += rx->span[slot_of(fd, done)];
	if (done != rx->done) {
		rx->done = done;
		fw_peer_eager_done(fd, src, done);
	}
}

/* A message just landed: if its recv waits in our rendezvous table, complete
 * the recv; if the recv was withdrawn (cancel, reset), drop the message.
 * Return: 1 if it was consumed (delivered or dropped), 0 if nobody asked for it yet. */
static int to_waiting_recv(struct fw_device *fd, uint32_t src, uint32_t idx)
{
	struct fw_eager_rx *rx = &fd->eager_rx[src];
	struct q_eager_slot *s = &rx->ring->slots[idx];
	enum accdma_status st;
	struct q_rdv mate;
	uint64_t bytes = 0;
	void *dst;
	int r;

	/* No recv of ours from @src waits in the table: no lock, no lookup. */
	if (!os_load(&rx->waiting, OS_RELAXED))
		return 0;
	r = fw_match_claim_recv(fd, (int32_t)src, s->tag, s->seq, &mate);
	if (r == 0)
		return 0; /* not asked for yet: held */
	if (r > 0) {
		st = dma_resolve(fd->space, fd->w, fd->id, mate.key, mate.offset, mate.length, 1, &dst);
		if (st == ACCDMA_OK)
			st = deliver(fd, rx->ring, idx, dst, mate.length, &bytes);
		fw_peer_complete(fd, &mate, st, bytes);
	}
	return 1;
}

/* Has the message at @rx's cursor landed? (acquire: its contents are visible) */
static inline int cursor_landed(const struct fw_device *fd, const struct fw_eager_rx *rx)
{
	return os_load(&rx->ring->slots[slot_of(fd, rx->cursor)].stamp, OS_ACQUIRE) ==
	       q_eager_stamp(rx->cursor);
}

/* The message at @rx's cursor if it has landed: its span is recorded and the
 * cursor moves past it. A head whose length is out of range (a peer process
 * gone wrong) is taken as one position; its recv fails PEER_ERROR (deliver).
 * Return: the head's slot, or -1 if nothing new landed. */
static inline int next_landed(const struct fw_device *fd, struct fw_eager_rx *rx)
{
	uint32_t idx = slot_of(fd, rx->cursor), len;
	const struct q_eager_slot *s = &rx->ring->slots[idx];

	/* Never more than a ring's worth past the consumed mark, whatever the
	 * stamps say: the held index stays at most half full. */
	if (!cursor_landed(fd, rx) || rx->cursor - rx->done > fd->eager_mask)
		return -1;
	len = s->len;
	rx->span[idx] = (uint8_t)(len <= fd->eager_max ? q_eager_span(len) : 1);
	rx->cursor += rx->span[idx];
	return (int)idx;
}

/* A message that landed and is not the one looked for: its recv may wait in
 * our table, else it is held until its recv arrives. Out of line, so that
 * scan() stays small enough to inline. */
static void not_wanted(struct fw_device *fd, uint32_t src, uint32_t idx)
{
	struct fw_eager_rx *rx = &fd->eager_rx[src];

	if (to_waiting_recv(fd, src, idx))
		advance_done(fd, src);
	else
		hold(rx, idx);
}

/* Take in what @src put in its ring since we last looked, and stop at the
 * message carrying (@tag, @seq) if @want: that one is returned, not held (its
 * recv takes it now), and what follows stays in the ring for the next look.
 * Recvs posted in the order of their sends so find each message at the
 * cursor and never hold it. Under eager_rx. Inline: a recv taking the
 * message its send just stamped, or a look that finds nothing new, is then
 * a few loads and no call.
 * Return: the wanted message's head slot, or -1. */
static inline int scan(struct fw_device *fd, uint32_t src, int want, uint64_t tag, uint64_t seq)
{
	struct fw_eager_rx *rx = &fd->eager_rx[src];
	int idx;

	while ((idx = next_landed(fd, rx)) >= 0) {
		const struct q_eager_slot *s = &rx->ring->slots[idx];

		if (want && s->tag == tag && s->seq == seq)
			return idx;
		not_wanted(fd, src, (uint32_t)idx);
	}
	return -1;
}

/* The held message carrying (@tag, @seq) from @src: its head's slot, or -1.
 * Under eager_rx. (tag, seq) names one message, so the index's answer is it. */
static int find_held(struct fw_device *fd, uint32_t src, uint64_t tag, uint64_t seq)
{
	struct fw_eager_rx *rx = &fd->eager_rx[src];
	uint32_t b;

	if (!rx->nheld)
		return -1;
	for (b = index_home(rx, tag, seq); rx->index[b] >= 0; b = (b + 1) & rx->imask) {
		const struct q_eager_slot *s = &rx->ring->slots[rx->index[b]];

		if (s->tag == tag && s->seq == seq)
			return rx->index[b];
	}
	return -1;
}

/* The message carrying (@tag, @seq) from @src if it landed: held, or next in
 * the ring (*@held says which). Under eager_rx. Return: its head slot, or -1. */
static int take(struct fw_device *fd, uint32_t src, uint64_t tag, uint64_t seq, int *held)
{
	int idx = find_held(fd, src, tag, seq);

	*held = idx >= 0;
	return *held ? idx : scan(fd, src, 1, tag, seq);
}

/* The message at @idx has been copied out (or dropped): its slots are room again. */
static void taken(struct fw_device *fd, uint32_t src, uint32_t idx, int held)
{
	if (held)
		unhold(&fd->eager_rx[src], idx);
	advance_done(fd, src);
}

/* Is @op a send or recv with a peer we have a ring with? */
static int has_ring(const struct fw_device *fd, const struct fw_op *op)
{
	return fd->eager_rx && (uint32_t)op->d.peer < fd->w->g.ndev; /* a negative peer is out of range */
}

/**
 * fw_eager_send() - send @op eagerly if it is small and its ring slot is free.
 * @fd/@q/@op: a ready send (validated, dependencies met).
 * Return: 1 if sent (@op is complete and finished), 0 to take the rendezvous
 * path, -EAGAIN to look again at the next pass (fw_peer_eager_put()).
 */
int fw_eager_send(struct fw_device *fd, struct fw_queue *q, struct fw_op *op)
{
	int rc;

	if (!has_ring(fd, op) || !fd->eager_max || op->d.length > fd->eager_max)
		return 0;
	rc = fw_peer_eager_put(fd, op);
	if (rc <= 0)
		return rc;
	fw_complete_own(fd, q, op, ACCDMA_OK, op->d.length);
	fw_op_finish(fd, op);
	return 1;
}

/*
 * May @op wait for its message parked (in no rendezvous table)? Only a recv
 * an eager message can fill, and only while no send waits in our table: a
 * send that waits there (rendezvous: too large, or its ring was full) or
 * failed leaves an entry, counts it in rdv_sends and kicks us, and the
 * parked recv then looks in the table at its next pass. Parking spares the
 * common small recv that comes before its message two trips through the
 * table's lock (insert, then take out when the message lands).
 */
static int may_park(const struct fw_device *fd, const struct fw_op *op)
{
	return op->d.length <= fd->eager_max &&
	       !os_load(&fd->sh->rdv_sends, OS_ACQUIRE);
}

/**
 * fw_eager_recv() - a ready recv takes its message from the ring if it is
 * there, else waits for it: parked if it is small and no send waits in our
 * table (looked at again at every pass), else at the rendezvous.
 * @fd/@q/@op: the recv (READY, or PARKED by an earlier call).
 * @lost: its sender's process is gone: what it sent before is still taken,
 *        but nothing more will come (the recv completes PEER_LOST).
 * Return: as fw_match_arrive() (FW_ARRIVE_WAIT also when parked). The look
 * and the wait are one step under eager_rx, so a message that lands in
 * between is matched by the next scan (or the parked recv's next look).
 */
enum fw_arrive fw_eager_recv(struct fw_device *fd, struct fw_queue *q, struct fw_op *op, int lost)
{
	uint32_t src = (uint32_t)op->d.peer;
	int ring = has_ring(fd, op), idx, held;
	enum fw_arrive r = FW_ARRIVE_DONE;
	uint64_t bytes;

	if (ring) {
		fw_eager_lock(fd, &fd->eager_rx_lock);
		idx = take(fd, src, op->d.tag, op->d.seq, &held);
		if (idx >= 0) {
			struct fw_eager_rx *rx = &fd->eager_rx[src];
			enum accdma_status st;

			q_trace(Q_TRACE_LANDED);
			st = deliver(fd, rx->ring, (uint32_t)idx, op->addr, op->d.length, &bytes);
			taken(fd, src, (uint32_t)idx, held);
			fw_eager_unlock(fd, &fd->eager_rx_lock);
			fw_complete_own(fd, q, op, st, bytes);
			q_trace(Q_TRACE_RECV_DONE);
			return FW_ARRIVE_DONE;
		}
		if (!lost && may_park(fd, op)) {
			fw_eager_unlock(fd, &fd->eager_rx_lock);
			if (op->state != FW_OP_PARKED) {
				op->state = FW_OP_PARKED;
				os_store(&q->cpl[op->slot].stage, ACCDMA_STAGE_PEER, OS_RELAXED);
			}
			return FW_ARRIVE_WAIT;
		}
	}
	if (lost) {
		fw_complete_own(fd, q, op, ACCDMA_ST_PEER_LOST, 0);
	} else {
		r = fw_match_arrive(fd, q, op);
		if (ring && r == FW_ARRIVE_WAIT && op->state == FW_OP_PEER)
			count_waiting(fd, (uint32_t)src, 1);
	}
	if (ring)
		fw_eager_unlock(fd, &fd->eager_rx_lock);
	return r;
}

/**
 * fw_eager_probe() - has the message (@tag, @seq) from @src landed in our ring?
 * @fd: the receiving device. @src: a sender (in range). @tag/@seq: the message.
 *
 * For an any-source recv choosing its source (any.c): what landed is taken
 * in (held, or given to a recv waiting for it), and the message, if there,
 * stays held for the recv that takes its number next.
 * Return: 1 if it is there, 0 if not.
 */
int fw_eager_probe(struct fw_device *fd, uint32_t src, uint64_t tag, uint64_t seq)
{
	int found;

	if (!fd->eager_rx)
		return 0;
	fw_eager_lock(fd, &fd->eager_rx_lock);
	scan(fd, src, 0, 0, 0);
	found = find_held(fd, src, tag, seq) >= 0;
	fw_eager_unlock(fd, &fd->eager_rx_lock);
	return found;
}

/**
 * fw_eager_parked_miss() - would a parked recv's next look find nothing?
 * @fd: the device. @op: a recv parked by fw_eager_recv() (so it has a ring).
 *
 * Most looks of a parked recv come before its message: this answers them
 * without the look's locks and calls. Only with one engine (a pass runs
 * alone, so the ring's private cursor is ours to read), nothing held, no
 * send waiting in our table (the recv would have to leave the ring for the
 * rendezvous) and no peer lost (it would complete PEER_LOST).
 * Return: 1 if the look would find nothing and leave @op parked; 0 if it must look.
 */
int fw_eager_parked_miss(const struct fw_device *fd, const struct fw_op *op)
{
	const struct fw_eager_rx *rx = &fd->eager_rx[op->d.peer];

	if (fd->nengines > 1 || rx->nheld || os_load(&fd->w->sh->lost_any, OS_ACQUIRE) ||
	    os_load(&fd->sh->rdv_sends, OS_ACQUIRE))
		return 0;
	return !cursor_landed(fd, rx);
}

/**
 * fw_eager_poll() - match what landed to this device's recvs that wait for it.
 * @fd: the device. Once per pass, not once per waiting recv: only senders
 * that a waiting recv of ours names are looked at.
 * Return: 1 if a message landed since the last look.
 */
int fw_eager_poll(struct fw_device *fd)
{
	uint32_t landed = 0;

	if (!fd->eager_rx || !os_load(&fd->eager_waiting, OS_RELAXED))
		return 0;
	fw_eager_lock(fd, &fd->eager_rx_lock);
	for (uint32_t src = 0; src < fd->w->g.ndev; src++) {
		struct fw_eager_rx *rx = &fd->eager_rx[src];
		uint32_t before = rx->cursor;

		if (!os_load(&rx->waiting, OS_RELAXED))
			continue;
		scan(fd, src, 0, 0, 0);
		landed |= rx->cursor - before;
	}
	fw_eager_unlock(fd, &fd->eager_rx_lock);
	return landed != 0;
}

/**
 * fw_eager_unwait() - a recv of ours that waited in the rendezvous table has
 * been completed (by its sender, or by a scan) and its engine lets go of it.
 * @fd: the device. @src: the recv's sender.
 *
 * Only then: a recv withdrawn by cancel or reset leaves a marker that a late
 * message must still find, so those keep the count up (a lookup too many).
 */
void fw_eager_unwait(struct fw_device *fd, int32_t src)
{
	if (fd->eager_rx && src >= 0 && (uint32_t)src < fd->w->g.ndev)
		count_waiting(fd, (uint32_t)src, -1);
}

/**
 * fw_eager_fail_recv() - a recv fails before arriving: drop its message if it
 * already landed (its send completed long ago), else tell the rendezvous.
 * @fd/@q/@op: the recv. @st: its status, for the rendezvous marker.
 */
void fw_eager_fail_recv(struct fw_device *fd, struct fw_queue *q, struct fw_op *op, enum accdma_status st)
{
	uint32_t src = (uint32_t)op->d.peer;
	int idx, held;

	if (!has_ring(fd, op)) {
		fw_match_fail(fd, q, op, st);
		return;
	}
	fw_eager_lock(fd, &fd->eager_rx_lock);
	idx = take(fd, src, op->d.tag, op->d.seq, &held);
	if (idx >= 0) {
		taken(fd, src, (uint32_t)idx, held);
	} else {
		/* The marker must be found by the message if it lands later (else
		 * it would be held, unasked for, for good, and its slots never
		 * room again): landings from @src look in the table from now on
		 * (a lookup too many, as after a cancel). */
		fw_match_fail(fd, q, op, st);
		count_waiting(fd, (uint32_t)src, 1);
	}
	fw_eager_unlock(fd, &fd->eager_rx_lock);
}

/**
 * fw_eager_init() - the device's private ring positions, if the world has rings.
 * @fd: the device being booted.
 *
 * Each sender's held set, spans and index are sized by the world's
 * eager_slots (read once here: the layout fixed it at open), in one block.
 * Return: 0 or -ENOMEM.
 */
int fw_eager_init(struct fw_device *fd)
{
	uint32_t n = fd->w->g.ndev, slots = fd->w->g.eager_slots;
	size_t held = (slots + 63) / 64 * sizeof(uint64_t), span = slots, bucket = slots * sizeof(uint16_t);
	size_t index = 2 * (size_t)slots * sizeof(int16_t);

	fd->eager_max = 0;
	if (!fd->w->g.eager_rel)
		return 0;
	if (!q_eager_slots_ok(slots) || fd->w->g.eager_max > q_eager_cap(slots))
		return -EINVAL; /* not a layout of q_geom_init()'s */
	fd->eager_mask = slots - 1;
	fd->eager_max = fd->w->g.eager_max;
	fd->eager_rx = os_zalloc(n, sizeof(*fd->eager_rx));
	if (!fd->eager_rx)
		return -ENOMEM;
	for (uint32_t p = 0; p < n; p++) {
		struct fw_eager_rx *rx = &fd->eager_rx[p];
		/* the widest arrays first, so each is aligned for its type */
		char *blk = os_alloc(held + index + bucket + span);

		if (!blk)
			return -ENOMEM;
		rx->held = (uint64_t *)blk;
		rx->index = (int16_t *)(blk + held);
		rx->bucket = (uint16_t *)(blk + held + index);
		rx->span = (uint8_t *)(blk + held + index + bucket);
		memset(rx->held, 0, held);
		memset(rx->index, 0xff, index); /* all -1: empty */
		rx->imask = 2 * slots - 1;
		rx->ring = q_eager_ring(fd->w, fd->id, p);
		rx->far = !fw_peer_near(fd, p);
	}
	return 0;
}

/** fw_eager_fini() - free what fw_eager_init() allocated. @fd: the device. */
void fw_eager_fini(struct fw_device *fd)
{
	os_free(fd->any_seqs); /* any.c's, allocated at its first any-source recv */
	fd->any_seqs = NULL;
	for (uint32_t p = 0; fd->eager_rx && p < fd->w->g.ndev; p++)
		os_free(fd->eager_rx[p].held); /* the start of the block */
	os_free(fd->eager_rx);
	fd->eager_rx = NULL;
}
