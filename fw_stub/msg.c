// SPDX-License-Identifier: MIT
/*
 * msg.c - serving the messages of far devices (peer_far.c sends them).
 *
 * The receiver owns its state: a far sender's small send is written into
 * our inline ring by us, its large send waits in our rendezvous table until
 * our recv meets it, and then we clear the sender to write the data into
 * the recv; its finish completes the recv (soft-RoCE writes much faster
 * than it reads, and the sender can keep many writes in flight). So
 * the steps match.c takes for a near sender run here on the sender's
 * behalf, on our own table. A medium send comes staged in a slot we keep
 * for its sender (stage.c), and is filed in the table the same way. Every
 * field of a message is checked before use: a peer that sends garbage
 * fails its own ops, never ours.
 */

#include "fw_stub/eager_ring.h"
#include "fw_stub/rdv.h"

/* Messages a device serves in one pass: the rest wait for the next, so a
 * flood from a peer never starves the device's own queues. */
#define FW_POLL_BATCH 64

/* A status a message may carry for a failure (never OK, never out of range). */
static enum accdma_status failure_of(uint16_t st)
{
	return st != ACCDMA_OK && st < ACCDMA_ST__COUNT ? (enum accdma_status)st : ACCDMA_ST_PEER_ERROR;
}

/* Send a finish for the far op (@src, @queue, @slot, @gen). */
static void finish(const struct fw_device *fd, int32_t src, uint32_t queue, uint32_t slot, uint32_t gen,
		   enum accdma_status st, uint64_t bytes)
{
	struct q_rdv op = { .dev = src, .queue = (uint16_t)queue, .slot = slot, .gen = gen };

	fw_far_complete(fd, &op, st, bytes);
}

/* Is @e a live recv of ours, still posted? */
static int our_recv(const struct fw_device *fd, const struct q_rdv *e)
{
	return !e->failed && e->side == ACCDMA_OP_RECV && e->dev == (int32_t)fd->id &&
	       fw_direct_op_posted(fd, e->dev, e->queue, e->slot);
}

/* What a message about one of our ops may act on: its record and length. */
struct named_op {
	struct q_cpl *c;
	uint64_t length;
};

/*
 * Is our op (@m->queue, @m->slot) still the one @m names (posted, generation
 * @m->gen), and a send to far device @m->src, or (if @recv_too) a recv from
 * it or from any source? Only an op's partner may clear or finish it: any
 * other peer could guess the slot and generation. Fills @o. Return: 1 if so.
 */
static int partner_op(const struct fw_device *fd, const struct q_msg *m, int recv_too, struct named_op *o)
{
	const struct q_arena *w = fd->w;
	const struct q_desc *d;
	uint16_t kind;
	int32_t peer;

	if (m->queue >= w->g.nq || m->slot >= w->g.depth)
		return 0;
	o->c = &q_cpls(w, fd->id, m->queue)[m->slot];
	if (!fw_cpl_holds(o->c, m->gen))
		return 0;
	d = &fd->queues[m->queue].desc[m->slot]; /* the host's, and fixed while the op is posted */
	kind = d->kind;
	peer = d->peer;
	o->length = d->length;
	if (!fw_cpl_holds(o->c, m->gen)) /* reused meanwhile: what was read is another op's */
		return 0;
	if (kind == ACCDMA_OP_SEND)
		return peer == m->src;
	return recv_too && kind == ACCDMA_OP_RECV && (peer == m->src || peer == ACCDMA_ANY_SOURCE);
}

/* A small send: into our ring from @src at the position it was given. */
static void serve_eager(struct fw_device *fd, const struct q_msg *m)
{
	struct fw_eager_rx *rx;
	uint32_t span, done;

	if (!fd->eager_rx || !fd->eager_max || m->len > fd->eager_max)
		return;
	rx = &fd->eager_rx[m->src];
	span = q_eager_span(m->len);
	done = os_load(&rx->ring->done, OS_ACQUIRE);
	/* Positions come in order and within the credit we gave: anything else
	 * is a sender gone wrong, whose message is dropped (its recv then waits
	 * for its timeout, as for a send that never came). */
	if (m->pos != os_load(&rx->wpos, OS_RELAXED) || m->pos + span - done > fd->eager_mask + 1)
		return;
	fw_ring_write(fd->eager_mask, rx->ring, m->pos, done, m->tag, m->seq, m->data, m->len);
	os_store(&rx->wpos, m->pos + span, OS_RELAXED);
	fw_direct_kick(fd, fd->id); /* the recv's engine may sleep */
}

/* A far send (@m) meets our recv @mate (taken out of the table): clear the
 * sender to write, or, when no data is to move, finish both here. The recv
 * stays waiting (FW_OP_PEER) for the sender's finish. */
static void meet(struct fw_device *fd, const struct q_msg *m, const struct q_rdv *mate)
{
	struct q_rdv send = { .dev = m->src, .queue = (uint16_t)m->queue, .slot = m->slot, .gen = m->gen };
	enum accdma_status st = ACCDMA_OK;
	void *dst = NULL;

	if (m->length > mate->length)
		st = ACCDMA_ST_TRUNCATED;
	else if (dma_resolve(fd->space, fd->w, fd->id, mate->key, mate->offset, mate->length, 1, &dst) !=
		 ACCDMA_OK)
		st = ACCDMA_ST_PEER_ERROR; /* the recv's region went away meanwhile */
	else if (fw_fault_hit(FW_FAULT_MATCH))
		st = ACCDMA_ST_DMA_ERROR;
	else if (m->length && !fw_far_clear(fd, &send, mate->queue, mate->slot, mate->gen, mate->key,
					    mate->offset, m->length))
		return;
	else if (m->length)
		st = ACCDMA_ST_PEER_LOST;
	fw_direct_complete(fd, fd->id, mate->queue, mate->slot, st, 0);
	finish(fd, m->src, m->queue, m->slot, m->gen, st, 0);
}

/* Our send waiting at a far receiver is cleared to write: its engine does
 * (fw_far_write_cleared()). Only if it is still that op, a send to that
 * receiver, cleared once; a clearance for no such op (the receiver met a
 * forged announcement) fails the recv it names, which would otherwise wait
 * for a finish never sent. */
static void serve_cts(struct fw_device *fd, const struct q_msg *m)
{
	uint32_t idle = FW_CLEAR_NONE;
	struct q_msg_cts r;
	struct named_op o;
	struct fw_op *op;

	if (m->len != sizeof(r))
		return;
	memcpy(&r, m->data, sizeof(r));
	if (!partner_op(fd, m, 0, &o)) {
		finish(fd, m->src, r.queue, r.slot, r.gen, ACCDMA_ST_PEER_ERROR, 0);
		return;
	}
	op = &fd->queues[m->queue].ops[m->slot];
	if (!os_cas(&op->cleared, &idle, FW_CLEAR_FILLING, OS_ACQUIRE, OS_RELAXED))
		return; /* cleared twice: a peer gone wrong */
	op->clear = (struct q_rdv){ .dev = m->src, .key = m->key, .offset = m->offset, .length = m->length,
				    .queue = (uint16_t)r.queue, .slot = r.slot, .gen = r.gen };
	os_store(&op->clear_gen, m->gen, OS_RELAXED);
	os_store(&op->cleared, FW_CLEARED, OS_RELEASE);
	fw_direct_kick(fd, fd->id); /* its engine may sleep */
}

/* A large send (or a small one that found no room) is ready: meet its recv
 * if it waits, else wait in our table for it. */
static void serve_rts(struct fw_device *fd, const struct q_msg *m)
{
	const struct q_geom *g = &fd->w->g;
	struct fw_rdv home;
	struct q_rdv *e, mate;

	if (m->queue >= g->nq || m->slot >= g->depth)
		return; /* names no op a finish could reach */
	fw_peer_rdv(fd, fd->id, &home);
	if (fw_rdv_lock(fd, &home))
		return; /* stopping: the sender sees this device lost */
	e = fw_rdv_find(&home, m->src, m->tag, m->seq);
	if (!e) {
		e = fw_rdv_insert(&home, m->src, m->tag, m->seq);
		if (e) {
			fw_rdv_set_side(&home, e, ACCDMA_OP_SEND);
			e->failed = 0;
			e->key = m->key;
			e->offset = m->offset;
			e->length = m->length;
			e->dev = m->src;
			e->queue = (uint16_t)m->queue;
			e->slot = m->slot;
			e->gen = m->gen;
		}
		fw_rdv_unlock(&home);
		if (e) {
			fw_direct_kick(fd, fd->id); /* a parked recv looks in the table now */
		} else {
			/* built afresh: the announcement's credit field is the
			 * sender's, and taken back as ours it could be ahead */
			struct q_msg busy;

			fw_far_msg_init(&busy, fd, (uint32_t)m->src, Q_MSG_BUSY);
			busy.queue = m->queue;
			busy.slot = m->slot;
			busy.gen = m->gen;
			busy.tag = m->tag;
			busy.seq = m->seq;
			(void)fd->link->ops->send(fd->link, &busy);
		}
		return;
	}
	if (e->side == ACCDMA_OP_SEND && !e->failed && e->dev == m->src && e->queue == m->queue &&
	    e->slot == m->slot && e->gen == m->gen) {
		fw_rdv_unlock(&home); /* announced again (after a busy answer): it waits already */
		return;
	}
	mate = *e;
	fw_rdv_remove(&home, e);
	fw_rdv_unlock(&home);
	if (our_recv(fd, &mate)) {
		meet(fd, m, &mate);
		return;
	}
	/* A failed recv's marker, a withdrawn one, or a second send with this
	 * sequence number (a corrupt peer): the send fails; so does a send
	 * that was waiting under that number. */
	fw_stage_drop(fd, &mate);
	if (!mate.failed && mate.side == ACCDMA_OP_SEND && fw_peer_op_posted(fd, mate.dev, mate.queue, mate.slot))
		fw_peer_complete(fd, &mate, ACCDMA_ST_PEER_ERROR, 0);
	finish(fd, m->src, m->queue, m->slot, m->gen, ACCDMA_ST_PEER_ERROR, 0);
}

/* File the send staged in slot @slot from @src (stage.c) in our table: it
 * meets its waiting recv, which gets the data now, or waits for it. Its
 * finish, whatever the outcome, gives the slot back.
 * Return: 0 if the table had no room (filed again at a later poll). */
static int file_staged(struct fw_device *fd, uint32_t src, uint32_t slot)
{
	const struct fw_stage_msg *sm = &fd->stage_rx[src].msg[slot];
	const struct q_rdv send = { .side = ACCDMA_OP_SEND, .src = (int32_t)src, .dev = (int32_t)src,
				    .tag = sm->tag, .seq = sm->seq, .length = sm->length, .queue = sm->queue,
				    .slot = sm->slot, .gen = sm->gen, .staged = (uint16_t)(slot + 1) };
	enum accdma_status st;
	struct fw_rdv home;
	struct q_rdv *e, mate;
	uint64_t bytes = 0;
	void *dst = NULL;

	fw_peer_rdv(fd, fd->id, &home);
	if (fw_rdv_lock(fd, &home))
		return 1; /* stopping: the sender sees this device lost */
	e = fw_rdv_find(&home, send.src, send.tag, send.seq);
	if (!e) {
		e = fw_rdv_insert(&home, send.src, send.tag, send.seq);
		if (e) {
			fw_rdv_set_side(&home, e, ACCDMA_OP_SEND);
			e->length = send.length;
			e->dev = send.dev;
			e->queue = send.queue;
			e->slot = send.slot;
			e->gen = send.gen;
			e->staged = send.staged;
		}
		fw_rdv_unlock(&home);
		if (e)
			fw_direct_kick(fd, fd->id); /* a parked recv looks in the table now */
		return e != NULL;
	}
	mate = *e;
	fw_rdv_remove(&home, e);
	fw_rdv_unlock(&home);
	if (our_recv(fd, &mate)) {
		if (dma_resolve(fd->space, fd->w, fd->id, mate.key, mate.offset, mate.length, 1, &dst) == ACCDMA_OK) {
			st = fw_stage_take(fd, &send, dst, mate.length, &bytes);
		} else {
			st = ACCDMA_ST_PEER_ERROR; /* the recv's region went away meanwhile */
			fw_stage_release(fd, src, slot);
		}
		fw_direct_complete(fd, fd->id, mate.queue, mate.slot, st, bytes);
		fw_far_complete(fd, &send, st, bytes);
		return 1;
	}
	/* As for a ready-to-send (serve_rts()): the send fails, and so does a
	 * send that waited under its number. */
	fw_stage_drop(fd, &mate);
	if (!mate.failed && mate.side == ACCDMA_OP_SEND && fw_peer_op_posted(fd, mate.dev, mate.queue, mate.slot))
		fw_peer_complete(fd, &mate, ACCDMA_ST_PEER_ERROR, 0);
	fw_stage_release(fd, src, slot);
	fw_far_complete(fd, &send, ACCDMA_ST_PEER_ERROR, 0);
	return 1;
}

/* A medium send staged in our slot for it: filed, or kept for a later poll
 * if the table is full. A slot named twice before we freed it, or out of
 * range, is a sender gone wrong: dropped (its recv waits for its timeout). */
static void serve_staged(struct fw_device *fd, const struct q_msg *m)
{
	uint32_t src = (uint32_t)m->src, slot = m->pos;
	struct fw_stage_rx *rx;
	uint64_t bit;

	if (!fd->stage_slots || slot >= fd->stage_slots || !m->length || m->length > Q_STAGE_BYTES)
		return;
	rx = &fd->stage_rx[src];
	bit = 1ull << slot;
	if (m->queue >= fd->w->g.nq || m->slot >= fd->w->g.depth || (os_fetch_or(&rx->busy, bit, OS_ACQUIRE) & bit))
		return;
	rx->msg[slot] = (struct fw_stage_msg){ .tag = m->tag, .seq = m->seq, .length = m->length,
					       .queue = (uint16_t)m->queue, .slot = m->slot, .gen = m->gen };
	if (file_staged(fd, src, slot))
		return;
	if (!rx->unfiled)
		fd->stage_unfiled++;
	rx->unfiled |= bit;
}

/* File the staged sends our table had no room for, while it has. */
static void file_unfiled(struct fw_device *fd)
{
	for (uint32_t src = 0; src < fd->w->g.ndev && fd->stage_unfiled; src++) {
		struct fw_stage_rx *rx = &fd->stage_rx[src];

		while (rx->unfiled) {
			uint32_t slot = (uint32_t)__builtin_ctzll(rx->unfiled);

			if (!file_staged(fd, src, slot))
				return;
			rx->unfiled &= rx->unfiled - 1;
			if (!rx->unfiled)
				fd->stage_unfiled--;
		}
	}
}

/* A far send failed before it was announced: its recv fails, now or when it comes. */
static void serve_sfail(struct fw_device *fd, const struct q_msg *m)
{
	struct fw_rdv home;
	struct q_rdv *e, mate;

	fw_peer_rdv(fd, fd->id, &home);
	if (fw_rdv_lock(fd, &home))
		return;
	e = fw_rdv_find(&home, m->src, m->tag, m->seq);
	if (e) {
		mate = *e;
		fw_rdv_remove(&home, e);
		fw_rdv_unlock(&home);
		if (our_recv(fd, &mate))
			fw_direct_complete(fd, fd->id, mate.queue, mate.slot, ACCDMA_ST_PEER_ERROR, 0);
		else
			fw_stage_drop(fd, &mate); /* a corrupt peer's second send under the number */
		return;
	}
	e = fw_rdv_insert(&home, m->src, m->tag, m->seq);
	if (e) {
		fw_rdv_set_side(&home, e, ACCDMA_OP_SEND);
		e->failed = (uint16_t)failure_of(m->status);
		e->dev = m->src;
	}
	fw_rdv_unlock(&home);
	if (e)
		fw_direct_kick(fd, fd->id); /* a parked recv looks in the table now */
}

/* A far sender takes back its waiting send: if it still waits, it leaves a
 * marker (our recv completes PEER_ERROR) and finishes with the sender's
 * status; if our recv took it already, that finish is on its way. */
static void serve_withdraw(struct fw_device *fd, const struct q_msg *m)
{
	struct fw_rdv home;
	struct q_rdv *e, op = { 0 };

	fw_peer_rdv(fd, fd->id, &home);
	if (fw_rdv_lock(fd, &home))
		return;
	e = fw_rdv_find(&home, m->src, m->tag, m->seq);
	if (e && !e->failed && e->side == ACCDMA_OP_SEND && e->dev == m->src && e->queue == m->queue &&
	    e->slot == m->slot && e->gen == m->gen) {
		op = *e;
		e->failed = (uint16_t)failure_of(m->status);
		e->staged = 0; /* a marker holds no data: the slot goes back with the finish */
	}
	fw_rdv_unlock(&home);
	if (op.used) {
		fw_stage_drop(fd, &op);
		fw_far_complete(fd, &op, failure_of(m->status), 0);
	}
}

/* Our op (@m->queue, @m->slot) that waited for a far partner is finished by
 * it: only if it is still that op, a send or recv with that partner, and not
 * a send it cleared to write (it ends with its write: finishing it would
 * complete it while the write still reads its memory, and the write would
 * never be taken back). */
static void serve_fin(struct fw_device *fd, const struct q_msg *m)
{
	const struct q_arena *w = fd->w;
	enum accdma_status st = (enum accdma_status)m->status;
	uint64_t bytes = m->length;
	struct named_op o;
	struct fw_op *op;
	uint32_t cl;

	if (m->pos && fd->stage_slots)
		fw_stage_unstaged(fd, (uint32_t)m->src, m->pos - 1); /* the slot our staged send used */
	if (m->status >= ACCDMA_ST__COUNT || !partner_op(fd, m, 1, &o))
		return; /* stale or forged */
	op = &fd->queues[m->queue].ops[m->slot];
	cl = os_load(&op->cleared, OS_ACQUIRE);
	if ((cl == FW_CLEARED || cl == FW_CLEAR_WRITING) && os_load(&op->clear_gen, OS_RELAXED) == m->gen)
		return; /* forged: a send cleared to write ends with its write */
	if (bytes > o.length) { /* more than the op holds: its partner went wrong */
		st = ACCDMA_ST_PEER_ERROR;
		bytes = 0;
	}
	fw_complete_record(w, fd->sh, q_queue(w, fd->id, m->queue), o.c, st, bytes, 0, 1);
}

/* Our send found no room in its receiver's table (so it says): its engine announces it again. */
static void serve_busy(struct fw_device *fd, const struct q_msg *m)
{
	struct named_op o;

	if (!partner_op(fd, m, 0, &o))
		return;
	os_store(&o.c->handoff, 1, OS_RELEASE);
	fw_direct_kick(fd, fd->id);
}

/* Every message says how far its sender consumed our messages to it: room
 * for more. Never past what we sent, nor backwards. A credit that moves lets
 * a sender short of room ask again; a CREDIT answers the asking one. */
static void take_credit(struct fw_device *fd, const struct q_msg *m)
{
	struct fw_eager_tx *tx;
	uint32_t old;
	int answer;

	if (!fd->eager_tx)
		return;
	tx = &fd->eager_tx[m->src];
	old = os_load(&tx->credit, OS_RELAXED);
	answer = m->type == Q_MSG_CREDIT && os_load(&tx->ask, OS_ACQUIRE) == FW_ASK_SENT;
	if (m->credit == old && !answer)
		return;
	fw_eager_lock(fd, &fd->eager_tx_lock);
	old = os_load(&tx->credit, OS_RELAXED);
	if (m->credit != old && m->credit - old <= tx->pos - old) {
		os_store(&tx->credit, m->credit, OS_RELEASE);
		if (os_load(&tx->ask, OS_RELAXED) == FW_ASK_ANSWERED)
			os_store(&tx->ask, FW_ASK_NONE, OS_RELAXED);
	}
	if (m->type == Q_MSG_CREDIT && os_load(&tx->ask, OS_RELAXED) == FW_ASK_SENT)
		os_store(&tx->ask, FW_ASK_ANSWERED, OS_RELAXED);
	fw_eager_unlock(fd, &fd->eager_tx_lock);
	if (answer)
		fw_direct_kick(fd, fd->id); /* its small sends wait for this */
}

void fw_msg_serve(struct fw_device *fd, const struct q_msg *m)
{
	uint32_t src = (uint32_t)m->src;

	if ((uint32_t)m->dst != fd->id || src >= fd->w->g.ndev || fw_peer_near(fd, src))
		return; /* not for us, or not from a far device */
	take_credit(fd, m);
	switch (m->type) {
	case Q_MSG_EAGER:
		serve_eager(fd, m);
		break;
	case Q_MSG_RTS:
		serve_rts(fd, m);
		break;
	case Q_MSG_SFAIL:
		serve_sfail(fd, m);
		break;
	case Q_MSG_WITHDRAW:
		serve_withdraw(fd, m);
		break;
	case Q_MSG_FIN:
		serve_fin(fd, m);
		break;
	case Q_MSG_CREDIT: /* taken above */
		break;
	case Q_MSG_CREDIT_ASK:
		fw_far_send_credit(fd, src); /* the sender waits for it */
		break;
	case Q_MSG_BUSY:
		serve_busy(fd, m);
		break;
	case Q_MSG_CTS:
		serve_cts(fd, m);
		break;
	case Q_MSG_STAGED:
		serve_staged(fd, m);
		break;
	default:
		break;
	}
}

int fw_peer_poll(struct fw_device *fd)
{
	struct q_msg m;
	int n = 0;

	if (!fd->link || os_exchange(&fd->inbox_lock, 1, OS_ACQUIRE))
		return 0;
	if (fd->stage_unfiled)
		file_unfiled(fd);
	while (n < FW_POLL_BATCH && fd->link->ops->recv(fd->link, fd->id, &m)) {
		fw_msg_serve(fd, &m);
		n++;
	}
	os_store(&fd->inbox_lock, 0, OS_RELEASE);
	return n;
}
