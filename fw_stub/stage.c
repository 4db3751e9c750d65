// SPDX-License-Identifier: MIT
/*
 * stage.c - medium sends to far devices, staged in slots their receiver keeps.
 *
 * A send to a far device of at most Q_STAGE_BYTES that did not go eagerly is
 * written by the link (RDMA WRITE) into one of the q_stage_slots() slots its
 * receiver keeps for this sender, and a Q_MSG_STAGED message follows it: one
 * post, and the data moves before the pair meets, where the rendezvous takes
 * a ready-to-send, a clearance, a write and a finish, one after the other.
 *
 * The receiver files the message in its rendezvous table as a waiting send
 * whose q_rdv.staged names the slot, so FIFO order by sequence number holds
 * across the eager, staged and rendezvous paths; the recv that meets it
 * copies the slot out and finishes the send as a rendezvous would (the
 * send's status is the pair's: truncation, a canceled recv), and the finish
 * gives the slot back. A sender short of slots takes the rendezvous path
 * meanwhile, so a slow receiver costs speed, never progress.
 *
 * Locks: a sender's slot mask is under fd->eager_tx_lock. A receiver's
 * masks are atomic (any engine of the device may deliver a slot); only the
 * thread holding the device's inbox (msg.c) fills slots and files them.
 */

#include "fw_stub/rdv.h"

static uint64_t all_slots(const struct fw_device *fd)
{
	return fd->stage_slots >= 64 ? ~0ull : (1ull << fd->stage_slots) - 1;
}

/**
 * fw_stage_init() - the device's staging state, if its link stages and the
 * world is small enough to keep slots (q_stage_slots()).
 * Return: 0 or -ENOMEM.
 */
int fw_stage_init(struct fw_device *fd)
{
	uint32_t n = fd->w->g.ndev;

	fd->stage_slots = 0;
	if (!fd->link || !fd->link->ops->stage || !fd->link->ops->staged || !q_stage_slots(n))
		return 0;
	fd->stage_tx = os_zalloc(n, sizeof(*fd->stage_tx));
	fd->stage_rx = os_zalloc(n, sizeof(*fd->stage_rx));
	if (!fd->stage_tx || !fd->stage_rx)
		return -ENOMEM;
	fd->stage_slots = q_stage_slots(n);
	return 0;
}

/** fw_stage_fini() - free what fw_stage_init() allocated. */
void fw_stage_fini(struct fw_device *fd)
{
	os_free(fd->stage_tx);
	os_free(fd->stage_rx);
	fd->stage_tx = NULL;
	fd->stage_rx = NULL;
	fd->stage_slots = 0;
}

/**
 * fw_stage_send() - stage send @op (to a far device, already waiting:
 * FW_OP_PEER) if it fits a slot and one is free. It then waits for its
 * finish, as an announced one does.
 * Return: -1 if not staged (it takes the rendezvous path), 0 if staged, 1 if
 * it completed here (it failed).
 */
int fw_stage_send(struct fw_device *fd, struct fw_queue *q, struct fw_op *op)
{
	uint32_t dst = (uint32_t)op->d.peer;
	struct fw_stage_tx *tx;
	enum accdma_status st;
	uint64_t free;
	struct q_msg m;
	uint32_t slot;

	if (!fd->stage_slots || !op->d.length || op->d.length > Q_STAGE_BYTES)
		return -1;
	tx = &fd->stage_tx[dst];
	fw_eager_lock(fd, &fd->eager_tx_lock);
	tx->busy &= ~os_exchange(&tx->freed, 0, OS_ACQUIRE);
	free = ~tx->busy & all_slots(fd);
	if (free)
		tx->busy |= free & -free;
	fw_eager_unlock(fd, &fd->eager_tx_lock);
	if (!free)
		return -1;
	slot = (uint32_t)__builtin_ctzll(free);

	fw_far_op_msg(&m, fd, q, op, Q_MSG_STAGED);
	m.pos = slot;
	st = fd->link->ops->stage(fd->link, slot, op->addr, op->d.length, &m);
	if (st == ACCDMA_OK)
		return 0;
	fw_stage_unstaged(fd, dst, slot);
	if (st == ACCDMA_ST_NOT_ATTEMPTED)
		return -1;
	fw_far_send_failed(fd, op, st); /* its recv is told */
	fw_complete_own(fd, q, op, st, 0);
	return 1;
}

/** fw_stage_unstaged() - far device @dst gave back our slot @slot (in a finish). */
void fw_stage_unstaged(struct fw_device *fd, uint32_t dst, uint32_t slot)
{
	if (slot < fd->stage_slots)
		os_fetch_or(&fd->stage_tx[dst].freed, 1ull << slot, OS_RELEASE);
}

/**
 * fw_stage_release() - slot @slot from far device @src is free again (its
 * finish, which tells the sender, goes after this).
 */
void fw_stage_release(struct fw_device *fd, uint32_t src, uint32_t slot)
{
	os_fetch_and(&fd->stage_rx[src].busy, ~(1ull << slot), OS_RELEASE);
}

/**
 * fw_stage_take() - deliver staged send @send (an entry of our table) into
 * @dst, room for @cap bytes, and free its slot.
 * Return: the pair's status (OK, TRUNCATED, DMA_ERROR); *@bytes: what landed.
 */
enum accdma_status fw_stage_take(struct fw_device *fd, const struct q_rdv *send, void *dst, uint64_t cap,
				 uint64_t *bytes)
{
	uint32_t src = (uint32_t)send->dev, slot = send->staged - 1u;
	const void *from = fd->link->ops->staged(fd->link, fd->id, src, slot);
	enum accdma_status st = ACCDMA_OK;

	*bytes = 0;
	if (send->length > cap)
		st = ACCDMA_ST_TRUNCATED;
	else if (!from || fw_fault_hit(FW_FAULT_MATCH) || dma_copy(dst, from, 0))
		st = ACCDMA_ST_DMA_ERROR; /* the match's and the data mover's fault points */
	else
		dma_copy_range(dst, from, send->length);
	if (st == ACCDMA_OK)
		*bytes = send->length;
	fw_stage_release(fd, src, slot);
	return st;
}

/**
 * fw_stage_drop() - a table entry being taken out for good: if it is a staged
 * send, free its slot. Return: 1 if it was one.
 */
int fw_stage_drop(struct fw_device *fd, const struct q_rdv *e)
{
	if (!e->staged || e->side != ACCDMA_OP_SEND || fw_peer_near(fd, (uint32_t)e->dev) || !fd->stage_slots ||
	    e->staged > fd->stage_slots)
		return 0;
	fw_stage_release(fd, (uint32_t)e->dev, e->staged - 1u);
	return 1;
}
