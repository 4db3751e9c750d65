// SPDX-License-Identifier: MIT
/*
 * peer_far.c - the peer seam (peer.h) for devices reached through a link:
 * another host's (verbs), or any other device in the message-level test
 * double. Whatever would touch the other device's block becomes a message
 * (struct q_msg) or a one-sided read or write of its memory; the receiver
 * owns its table and its rings, and serves the messages itself (msg.c).
 */

#include "fw_stub/peer.h"

static int link_send(const struct fw_device *fd, const struct q_msg *m)
{
	return fd->link->ops->send(fd->link, m);
}

/* A message header from @fd to @dst. Every message carries our consumed
 * mark of @dst's ring to us: its credit, for free on reverse traffic. */
void fw_far_msg_init(struct q_msg *m, const struct fw_device *fd, uint32_t dst, uint16_t type)
{
	memset(m, 0, Q_MSG_HEAD_BYTES);
	m->type = type;
	m->src = (int32_t)fd->id;
	m->dst = (int32_t)dst;
	if (fd->eager_rx)
		m->credit = os_load(&fd->eager_rx[dst].ring->done, OS_ACQUIRE);
}

int fw_far_polled(const struct fw_device *fd, uint32_t dev)
{
	(void)fd;
	(void)dev;
	return 0; /* its own engines serve our messages: nothing waits for its host */
}

int fw_far_op_posted(const struct fw_device *fd, int32_t dev, uint32_t queue, uint32_t slot)
{
	const struct q_geom *g = &fd->w->g;

	/* Only its owner can tell: it checks the slot's generation at the finish. */
	return dev >= 0 && (uint32_t)dev < g->ndev && queue < g->nq && slot < g->depth;
}

void fw_far_complete(const struct fw_device *fd, const struct q_rdv *op, enum accdma_status st, uint64_t bytes)
{
	struct q_msg m;

	fw_far_msg_init(&m, fd, (uint32_t)op->dev, Q_MSG_FIN);
	m.status = (uint16_t)st;
	m.queue = op->queue;
	m.slot = op->slot;
	m.gen = op->gen;
	m.length = bytes;
	m.tag = op->tag;
	m.seq = op->seq;
	m.pos = op->staged; /* a staged send's slot, given back */
	(void)link_send(fd, &m); /* a peer gone: its ops went with it */
}

int fw_far_write_start(struct fw_device *fd, struct fw_queue *q, struct fw_op *op)
{
	enum accdma_status st = fd->link->ops->write(fd->link, (uint32_t)op->d.peer, op->d.remote_key,
						     op->d.remote_offset, op->d.length, op->addr, &op->wreq);

	if (st == ACCDMA_ST_NOT_ATTEMPTED) {
		q->retry = 1; /* the link's writes are all in flight: again at the next pass */
		return 0;
	}
	if (st != ACCDMA_OK) {
		fw_complete_own(fd, q, op, st, 0);
		return 1;
	}
	op->clear.length = op->d.length;
	op->state = FW_OP_PEER;
	os_store(&op->cleared, FW_CLEAR_WRITING, OS_RELAXED);
	return fw_far_write_finish(fd, q, op);
}

/* No room as far as @dst's last credit says. Credit comes back a quarter of
 * the ring at a time (or on reverse traffic), so the receiver may well have
 * room: ask it once, and wait for the answer rather than have the send wait
 * for its recv. Under eager_tx_lock.
 * Return: -EAGAIN to try again at the next pass, 0 to take the rendezvous path. */
static int short_of_room(struct fw_device *fd, struct fw_eager_tx *tx, uint32_t dst)
{
	struct q_msg m;

	switch (os_load(&tx->ask, OS_RELAXED)) {
	case FW_ASK_NONE:
		/* asked before the question leaves: a thread serving our inbox
		 * may take the answer before link_send() returns */
		os_store(&tx->ask, FW_ASK_SENT, OS_RELEASE);
		fw_far_msg_init(&m, fd, dst, Q_MSG_CREDIT_ASK);
		if (link_send(fd, &m)) {
			os_store(&tx->ask, FW_ASK_NONE, OS_RELAXED);
			return 0; /* the receiver is gone: the rendezvous path says so */
		}
		return -EAGAIN;
	case FW_ASK_SENT:
		return -EAGAIN;
	default:
		return 0;
	}
}

int fw_far_eager_put(struct fw_device *fd, const struct fw_op *op)
{
	uint32_t dst = (uint32_t)op->d.peer, mask = fd->eager_mask, span = q_eager_span(op->d.length);
	struct fw_eager_tx *tx = &fd->eager_tx[dst];
	struct q_msg m;
	int rc;

	fw_eager_lock(fd, &fd->eager_tx_lock);
	if (tx->pos + span - tx->done > mask + 1) {
		tx->done = os_load(&tx->credit, OS_ACQUIRE);
		if (tx->pos + span - tx->done > mask + 1) {
			rc = short_of_room(fd, tx, dst);
			fw_eager_unlock(fd, &fd->eager_tx_lock);
			return rc;
		}
	}
	fw_far_msg_init(&m, fd, dst, Q_MSG_EAGER);
	m.tag = op->d.tag;
	m.seq = op->d.seq;
	m.len = (uint32_t)op->d.length;
	m.pos = tx->pos;
	if (m.len)
		memcpy(m.data, op->addr, m.len);
	/* Under the lock: the receiver takes positions in the order they were given. */
	rc = link_send(fd, &m);
	if (!rc)
		tx->pos += span;
	fw_eager_unlock(fd, &fd->eager_tx_lock);
	return !rc;
}

void fw_far_send_credit(const struct fw_device *fd, uint32_t src)
{
	struct q_msg m;

	fw_far_msg_init(&m, fd, src, Q_MSG_CREDIT);
	(void)link_send(fd, &m);
}

void fw_far_eager_done(struct fw_device *fd, uint32_t src, uint32_t done)
{
	struct fw_eager_rx *rx = &fd->eager_rx[src];
	uint32_t quarter = (fd->eager_mask + 1) / 4;

	/* A credit of its own once a quarter of the ring is free again; until
	 * then our next message carries it. Not on every drained ring: a sender
	 * of one message at a time would pay a message back for each (a second
	 * post per send over verbs), and the sender still sees three quarters
	 * free, six of its largest messages (q_eager_cap()). A sender short of
	 * credit asks for one (short_of_room()). */
	if (done - rx->credited < (quarter ? quarter : 1))
		return;
	rx->credited = done;
	fw_far_send_credit(fd, src);
}

void fw_far_op_msg(struct q_msg *m, const struct fw_device *fd, const struct fw_queue *q, const struct fw_op *op,
		   uint16_t type)
{
	fw_far_msg_init(m, fd, (uint32_t)op->d.peer, type);
	m->tag = op->d.tag;
	m->seq = op->d.seq;
	m->key = op->d.key;
	m->offset = op->d.offset;
	m->length = op->d.length;
	m->queue = q->index;
	m->slot = op->slot;
	m->gen = op->gen;
}

int fw_far_announce(struct fw_device *fd, struct fw_queue *q, struct fw_op *op)
{
	struct q_msg m;

	fw_far_op_msg(&m, fd, q, op, Q_MSG_RTS);
	op->withdrawing = 0;
	return link_send(fd, &m);
}

void fw_far_send_failed(struct fw_device *fd, const struct fw_op *op, enum accdma_status st)
{
	struct q_msg m;

	fw_far_msg_init(&m, fd, (uint32_t)op->d.peer, Q_MSG_SFAIL);
	m.tag = op->d.tag;
	m.seq = op->d.seq;
	m.status = (uint16_t)st;
	(void)link_send(fd, &m);
}

int fw_far_withdraw(struct fw_device *fd, struct fw_queue *q, struct fw_op *op, enum accdma_status st)
{
	struct q_msg m;

	if (fw_peer_lost(fd, (uint32_t)op->d.peer))
		return 1;
	if (op->withdrawing)
		return 0; /* asked already: its finish is on the way */
	fw_far_op_msg(&m, fd, q, op, Q_MSG_WITHDRAW);
	m.status = (uint16_t)st;
	if (link_send(fd, &m))
		return 1;
	op->withdrawing = 1;
	return 0;
}

int fw_far_clear(struct fw_device *fd, const struct q_rdv *send, uint32_t queue, uint32_t slot, uint32_t gen,
		 uint32_t key, uint64_t offset, uint64_t len)
{
	struct q_msg_cts r = { .queue = queue, .slot = slot, .gen = gen };
	struct q_msg m;

	fw_far_msg_init(&m, fd, (uint32_t)send->dev, Q_MSG_CTS);
	m.queue = send->queue;
	m.slot = send->slot;
	m.gen = send->gen;
	m.key = key;
	m.offset = offset;
	m.length = len;
	m.len = sizeof(r);
	memcpy(m.data, &r, sizeof(r));
	return link_send(fd, &m);
}

int fw_far_write_cleared(struct fw_device *fd, struct fw_queue *q, struct fw_op *op)
{
	const struct q_rdv *r = &op->clear;
	enum accdma_status st;

	os_store(&q->cpl[op->slot].stage, ACCDMA_STAGE_RUNNING, OS_RELAXED);
	/* The receiver decided truncation before it cleared us: it asks for the
	 * whole send, never more (that would hand it our memory past the send). */
	if (r->dev != op->d.peer || r->length != op->d.length || !r->length)
		st = ACCDMA_ST_PEER_ERROR;
	else
		st = fd->link->ops->write(fd->link, (uint32_t)r->dev, r->key, r->offset, r->length, op->addr,
					  &op->wreq);
	/* A range its recv's engine validated that does not resolve now (freed,
	 * or a forged clearance) is the receiver's failure. */
	if (st == ACCDMA_ST_BAD_KEY || st == ACCDMA_ST_OUT_OF_BOUNDS)
		st = ACCDMA_ST_PEER_ERROR;
	if (st == ACCDMA_ST_NOT_ATTEMPTED)
		return 0; /* the link's writes are all in flight: again at the next pass */
	if (st != ACCDMA_OK) {
		fw_far_complete(fd, r, st, 0);
		fw_complete_own(fd, q, op, st, 0);
		return 1;
	}
	/* A write already done (or failed) says so in the finish. Else the
	 * finish goes now: the link delivers it after the data, and not at all
	 * if the write fails. The send completes when the write does (its
	 * memory is read until then). */
	if (fd->link->ops->write_done(fd->link, op->wreq, &st)) {
		fw_far_complete(fd, r, st, st == ACCDMA_OK ? r->length : 0);
		fw_complete_own(fd, q, op, st, st == ACCDMA_OK ? r->length : 0);
		return 1;
	}
	fw_far_complete(fd, r, ACCDMA_OK, r->length);
	os_store(&op->cleared, FW_CLEAR_WRITING, OS_RELAXED);
	return 0;
}

int fw_far_write_finish(struct fw_device *fd, struct fw_queue *q, struct fw_op *op)
{
	enum accdma_status st;

	if (!fd->link->ops->write_done(fd->link, op->wreq, &st))
		return 0;
	fw_complete_own(fd, q, op, st, st == ACCDMA_OK ? op->clear.length : 0);
	return 1;
}
