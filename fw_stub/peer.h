/* SPDX-License-Identifier: MIT */
/*
 * peer.h - the one seam for everything an engine does to another device.
 *
 * An engine works on its own device's queues, rings and tables; whatever it
 * does to another device (its rendezvous, its inline ring, its ops, its
 * memory, its liveness) goes through these calls, and no other file of
 * fw_stub/ navigates to another device's block. Today's implementation,
 * peer_direct.c, does each with plain loads and stores in memory that every
 * engine maps (one process, or shared memory on one host). A transport
 * whose peers are across a network implements the same operations as
 * messages and RDMA operations; docs/design-notes.md ("The peer seam") says
 * how each one maps.
 */
#ifndef ACCDMA_FW_PEER_H
#define ACCDMA_FW_PEER_H

#include "fw_stub/fw_internal.h"

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
 * fw_peer_rdv() - the rendezvous table of device @dev, where sends to it and
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
 * fw_peer_polled() - is @dev driven by host polling only (no engine threads)?
 * Return: non-zero if so.
 */
int fw_peer_polled(const struct fw_device *fd, uint32_t dev);

/**
 * fw_peer_kick() - make device @dev's engines look at their work again.
 * @fd: the calling device. @dev: a device of the world. The caller published
 * what they should see.
 */
void fw_peer_kick(const struct fw_device *fd, uint32_t dev);

/**
 * fw_peer_op_posted() - does (@dev, @queue, @slot) name a posted op?
 * A rendezvous entry naming it may have been written by another process.
 * Return: 1 if it is in range and posted, 0 if not.
 */
int fw_peer_op_posted(const struct fw_device *fd, int32_t dev, uint32_t queue, uint32_t slot);

/**
 * fw_peer_complete() - complete an op that waited in a rendezvous table, on
 * behalf of its own engine (which notices and forgets it).
 * @fd: the completing device. @dev/@queue/@slot: the op (fw_peer_op_posted()).
 * @st/@bytes: its outcome.
 */
void fw_peer_complete(const struct fw_device *fd, uint32_t dev, uint32_t queue, uint32_t slot,
		      enum accdma_status st, uint64_t bytes);

/**
 * fw_peer_handoff() - tell a waiting recv that its large send now waits for
 * the recv's engine to copy it (match.c, under the table's lock).
 * @fd: the sending device. @dev/@queue/@slot: the recv.
 */
void fw_peer_handoff(const struct fw_device *fd, uint32_t dev, uint32_t queue, uint32_t slot);

/**
 * fw_peer_range() - the range (@key, @off, @len) of device @dev's memory,
 * checked against its region table, as this engine reaches it.
 * @allow_empty: accept a zero length. @addr: on success, where it is.
 * Return: ACCDMA_OK or the range's failure status (dma_resolve()).
 */
enum accdma_status fw_peer_range(const struct fw_device *fd, uint32_t dev, uint32_t key, uint64_t off,
				 uint64_t len, int allow_empty, void **addr);

/**
 * fw_peer_write() - a one-sided write's data into its target's region.
 * @fd: the writing device. @op: the write (its local range resolved).
 * @bytes: what landed.
 * Return: ACCDMA_OK, the target range's failure status, or DMA_ERROR.
 */
enum accdma_status fw_peer_write(struct fw_device *fd, const struct fw_op *op, uint64_t *bytes);

/**
 * fw_peer_eager_put() - put a small send into its receiver's inline ring and
 * ring the receiver's doorbell.
 * @fd: the sending device. @op: the send (at most fd->eager_max bytes).
 * Return: 1 if it is in the ring, 0 if the ring has no room (the send takes
 * the rendezvous path, which keeps FIFO order by sequence number).
 */
int fw_peer_eager_put(struct fw_device *fd, const struct fw_op *op);

#endif /* ACCDMA_FW_PEER_H */
