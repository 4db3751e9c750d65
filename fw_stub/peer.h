/* SPDX-License-Identifier: MIT */
/*
 * peer.h - the one seam for everything an engine does to another device.
 *
 * An engine works on its own device's queues, rings and tables; whatever it
 * does to another device (its rendezvous, its inline ring, its ops, its
 * memory, its liveness) goes through these calls, and no other file of
 * fw_stub/ navigates to another device's block. Today's implementation,
 * peer_direct.c, does each with plain loads and stores in memory that every
 * engine maps (one process, or shared memory on one host). A device of
 * another host is "far": for it, peer_far.c does each as a message or a
 * one-sided read or write through the device's link (link.h), and msg.c
 * serves the messages on the receiving side; docs/design-notes.md ("The
 * peer seam") says how each one maps. The calls below choose by device.
 */
#ifndef ACCDMA_FW_PEER_H
#define ACCDMA_FW_PEER_H

#include "fw_stub/fw_internal.h"
#include "fw_stub/link.h"

/**
 * struct fw_rdv - a device's rendezvous table: its header (lock, counts),
 * entries and capacity (this process's own, q_geom), and whose it is.
 */
struct fw_rdv {
	struct q_dev_sh *sh;
	struct q_rdv *t;
	uint32_t cap;
	uint32_t dev;
};

/**
 * fw_peer_init() - a booting device's state about the devices it sends to.
 * @fd: the device (its eager geometry set by fw_eager_init()).
 * Return: 0 or -ENOMEM.
 */
int fw_peer_init(struct fw_device *fd);

/** fw_peer_fini() - free what fw_peer_init() allocated. @fd: the device. */
void fw_peer_fini(struct fw_device *fd);

/**
 * fw_peer_rdv() - the rendezvous table of near device @dev, where sends to it and
 * its recvs meet (match.c runs the protocol on it).
 * @fd: the calling device. @dev: a device of the world. @r: filled in.
 */
void fw_peer_rdv(const struct fw_device *fd, uint32_t dev, struct fw_rdv *r);

/**
 * fw_peer_lost() - is device @dev's process gone (closed, or died)?
 * @fd: the calling device. @dev: a device of the world.
 * Return: non-zero if so.
 */
int fw_peer_lost(const struct fw_device *fd, uint32_t dev);

/**
 * fw_direct_polled() - is @dev driven by host polling only (no engine threads)?
 * Return: non-zero if so.
 */
int fw_direct_polled(const struct fw_device *fd, uint32_t dev);

/**
 * fw_direct_kick() - make device @dev's engines look at their work again.
 * @fd: the calling device. @dev: a device of the world. The caller published
 * what they should see.
 */
void fw_direct_kick(const struct fw_device *fd, uint32_t dev);

/**
 * fw_direct_op_posted() - does (@dev, @queue, @slot) name a posted op?
 * A rendezvous entry naming it may have been written by another process.
 * Return: 1 if it is in range and posted, 0 if not.
 */
int fw_direct_op_posted(const struct fw_device *fd, int32_t dev, uint32_t queue, uint32_t slot);

/**
 * fw_direct_complete() - complete an op that waited in a rendezvous table, on
 * behalf of its own engine (which notices and forgets it).
 * @fd: the completing device. @dev/@queue/@slot: the op (fw_direct_op_posted()).
 * @st/@bytes: its outcome.
 */
void fw_direct_complete(const struct fw_device *fd, uint32_t dev, uint32_t queue, uint32_t slot,
		      enum accdma_status st, uint64_t bytes);

/**
 * fw_peer_handoff() - tell a near waiting recv that its large send now waits for
 * the recv's engine to copy it (match.c, under the table's lock).
 * @fd: the sending device. @dev/@queue/@slot: the recv.
 */
void fw_peer_handoff(const struct fw_device *fd, uint32_t dev, uint32_t queue, uint32_t slot);

/**
 * fw_peer_range() - the range (@key, @off, @len) of near device @dev's memory,
 * checked against its region table, as this engine reaches it.
 * @allow_empty: accept a zero length. @addr: on success, where it is.
 * Return: ACCDMA_OK or the range's failure status (dma_resolve()).
 */
enum accdma_status fw_peer_range(const struct fw_device *fd, uint32_t dev, uint32_t key, uint64_t off,
				 uint64_t len, int allow_empty, void **addr);

/**
 * fw_peer_move() - move @len bytes between @local (this engine's range) and
 * the range (@key, @off, @rlen) of near device @dev, checked as
 * fw_peer_range(): by a copy where this process maps it, else by
 * cross-memory attach into the process that registered it (shm).
 * @to_peer: 1 copies @local into the peer's range, 0 the other way.
 * Return: ACCDMA_OK; PEER_ERROR (the range is bad, or its process's memory
 * is not there: the peer's own doing); PEER_LOST (its process is gone);
 * DMA_ERROR (the copy failed).
 */
enum accdma_status fw_peer_move(struct fw_device *fd, uint32_t dev, uint32_t key, uint64_t off,
				uint64_t rlen, void *local, uint64_t len, int to_peer);

/**
 * fw_direct_write() - a one-sided write's data into its target's region.
 * @fd: the writing device. @op: the write (its local range resolved).
 * @bytes: what landed.
 * Return: ACCDMA_OK, the target range's failure status, or DMA_ERROR.
 */
enum accdma_status fw_direct_write(struct fw_device *fd, const struct fw_op *op, uint64_t *bytes);

/**
 * fw_direct_eager_put() - put a small send into its receiver's inline ring and
 * ring the receiver's doorbell.
 * @fd: the sending device. @op: the send (at most fd->eager_max bytes).
 * Return: 1 if it is in the ring, 0 if the ring has no room (the send takes
 * the rendezvous path, which keeps FIFO order by sequence number).
 */
int fw_direct_eager_put(struct fw_device *fd, const struct fw_op *op);

/**
 * fw_peer_near() - does @fd reach device @dev in memory (not through its link)?
 */
static inline int fw_peer_near(const struct fw_device *fd, uint32_t dev)
{
	return dev - fd->near_lo < fd->near_n;
}

/* peer_far.c: the far side of each call above, and what only a far receiver needs. */
void fw_far_msg_init(struct q_msg *m, const struct fw_device *fd, uint32_t dst, uint16_t type);

/**
 * fw_far_op_msg() - a message of @type about send @op of queue @q, to its
 * receiver: the header, and what names and matches the op (tag, sequence,
 * range, queue, slot, generation).
 */
void fw_far_op_msg(struct q_msg *m, const struct fw_device *fd, const struct fw_queue *q, const struct fw_op *op,
		   uint16_t type);
int fw_far_polled(const struct fw_device *fd, uint32_t dev);
int fw_far_op_posted(const struct fw_device *fd, int32_t dev, uint32_t queue, uint32_t slot);
void fw_far_complete(const struct fw_device *fd, const struct q_rdv *op, enum accdma_status st, uint64_t bytes);
int fw_far_eager_put(struct fw_device *fd, const struct fw_op *op);
void fw_far_eager_done(struct fw_device *fd, uint32_t src, uint32_t done);

/**
 * fw_far_send_credit() - send far sender @src a CREDIT: our consumed mark of
 * its ring, now (a quarter of the ring freed, or @src asked for it).
 */
void fw_far_send_credit(const struct fw_device *fd, uint32_t src);

/**
 * fw_far_announce() - a ready send whose receiver is far tells it so (a
 * ready-to-send message); the receiver matches it and pulls the data.
 * @fd/@q/@op: the send, which then waits (FW_OP_PEER) for the finish.
 * Return: 0, or -EPIPE if the receiver is gone.
 */
int fw_far_announce(struct fw_device *fd, struct fw_queue *q, struct fw_op *op);

/**
 * fw_far_send_failed() - a send to a far receiver failed before arriving:
 * its recv is told, and completes PEER_ERROR. @fd/@op: the send. @st: why.
 */
void fw_far_send_failed(struct fw_device *fd, const struct fw_op *op, enum accdma_status st);

/**
 * fw_far_withdraw() - ask a far receiver to give back a waiting send
 * (cancel, reset). Asked once; the receiver answers with the send's finish:
 * @st if it was still waiting, else the transfer's outcome.
 * @fd/@q/@op: the send, in FW_OP_PEER.
 * Return: 1 if the receiver is gone (the caller completes @op), else 0.
 */
int fw_far_withdraw(struct fw_device *fd, struct fw_queue *q, struct fw_op *op, enum accdma_status st);

/**
 * fw_far_clear() - clear far send @send to write @len bytes into our recv
 * (@queue, @slot, @gen) at (@key, @offset); its finish completes the recv.
 * Return: 0, or non-zero if the sender is gone.
 */
int fw_far_clear(struct fw_device *fd, const struct q_rdv *send, uint32_t queue, uint32_t slot, uint32_t gen,
		 uint32_t key, uint64_t offset, uint64_t len);

/**
 * fw_far_write_cleared() - our send @op, cleared by its far receiver (@op->clear),
 * starts writing its data there (RDMA WRITE) and finishes the recv; it
 * completes when the write does: OK, PEER_ERROR (a clearance that names
 * another size or a bad range), PEER_LOST or DMA_ERROR.
 * @fd/@q/@op: the send, in FW_OP_PEER.
 * Return: 1 if @op completed, 0 if its write is in flight (FW_CLEAR_WRITING).
 */
int fw_far_write_cleared(struct fw_device *fd, struct fw_queue *q, struct fw_op *op);

/**
 * fw_far_write_start() - one-sided write @op (a READY op) to a far device:
 * start it (RDMA WRITE); it completes when the write does.
 * Return: 1 if @op completed here (it failed), 0 if its write is in flight
 * (FW_OP_PEER, FW_CLEAR_WRITING) or the link has no room for it yet (still
 * READY: run again).
 */
int fw_far_write_start(struct fw_device *fd, struct fw_queue *q, struct fw_op *op);

/**
 * fw_far_write_finish() - complete @op (a send, or a one-sided write) if its
 * write (FW_CLEAR_WRITING) is done.
 * Return: 1 if @op completed, 0 if the write is still in flight.
 */
int fw_far_write_finish(struct fw_device *fd, struct fw_queue *q, struct fw_op *op);

/* stage.c: medium sends staged in slots their far receiver keeps. */
int fw_stage_init(struct fw_device *fd);
void fw_stage_fini(struct fw_device *fd);
int fw_stage_send(struct fw_device *fd, struct fw_queue *q, struct fw_op *op);
void fw_stage_unstaged(struct fw_device *fd, uint32_t dst, uint32_t slot);
void fw_stage_release(struct fw_device *fd, uint32_t src, uint32_t slot);
enum accdma_status fw_stage_take(struct fw_device *fd, const struct q_rdv *send, void *dst, uint64_t cap,
				 uint64_t *bytes);
int fw_stage_drop(struct fw_device *fd, const struct q_rdv *e);

/* msg.c */
/**
 * fw_peer_poll() - serve the messages far devices sent to @fd (engine 0's pass).
 * Return: non-zero if any was served.
 */
int fw_peer_poll(struct fw_device *fd);

/**
 * fw_msg_serve() - act on one message for @fd, every field checked first.
 * @fd: the device it is for. @m: the message (q_msg_bytes() of it valid).
 */
void fw_msg_serve(struct fw_device *fd, const struct q_msg *m);

/* Each call chooses by device: a near one in memory, a far one through the link. */

static inline int fw_peer_polled(const struct fw_device *fd, uint32_t dev)
{
	return fw_peer_near(fd, dev) ? fw_direct_polled(fd, dev) : fw_far_polled(fd, dev);
}

static inline void fw_peer_kick(const struct fw_device *fd, uint32_t dev)
{
	if (fw_peer_near(fd, dev)) /* a far device's message is its own doorbell */
		fw_direct_kick(fd, dev);
}

static inline int fw_peer_op_posted(const struct fw_device *fd, int32_t dev, uint32_t queue, uint32_t slot)
{
	return fw_peer_near(fd, (uint32_t)dev) ? fw_direct_op_posted(fd, dev, queue, slot)
					       : fw_far_op_posted(fd, dev, queue, slot);
}

/**
 * fw_peer_complete() - complete an op that waited in a rendezvous table, on
 * behalf of its own engine (which notices and forgets it).
 * @fd: the completing device. @op: the op's entry (fw_peer_op_posted()).
 * @st/@bytes: its outcome.
 */
static inline void fw_peer_complete(const struct fw_device *fd, const struct q_rdv *op, enum accdma_status st,
				    uint64_t bytes)
{
	if (fw_peer_near(fd, (uint32_t)op->dev))
		fw_direct_complete(fd, (uint32_t)op->dev, op->queue, op->slot, st, bytes);
	else
		fw_far_complete(fd, op, st, bytes);
}


/**
 * fw_peer_eager_put() - put a small send into its receiver's inline ring.
 * Return: 1 if it went, 0 if it takes the rendezvous path, -EAGAIN if it
 * waits for a far receiver's answer about room (try again at the next pass).
 */
static inline int fw_peer_eager_put(struct fw_device *fd, const struct fw_op *op)
{
	return fw_peer_near(fd, (uint32_t)op->d.peer) ? fw_direct_eager_put(fd, op) : fw_far_eager_put(fd, op);
}

/**
 * fw_peer_eager_done() - publish how far @fd consumed its ring from @src
 * (every position below @done), for the sender's room check: in the ring,
 * and for a far sender, now and then in a credit message.
 */
static inline void fw_peer_eager_done(struct fw_device *fd, uint32_t src, uint32_t done)
{
	os_store(&fd->eager_rx[src].ring->done, done, OS_RELEASE);
	if (fd->eager_rx[src].far)
		fw_far_eager_done(fd, src, done);
}

#endif /* ACCDMA_FW_PEER_H */
