/* SPDX-License-Identifier: MIT */
/*
 * link.h - an engine's port to devices it cannot reach in memory: devices of
 * other hosts (verbs), or, in the message-level test double (loop), every
 * other device. A link carries messages (struct q_msg) between engines and
 * moves data one-sided: a write into a peer's region (RDMA WRITE), by a
 * one-sided write op or by a large send its receiver cleared. The
 * peer seam (peer.h) turns each of its calls for such a device into these;
 * a transport provides the table, as rdma-core's providers do.
 */
#ifndef ACCDMA_FW_LINK_H
#define ACCDMA_FW_LINK_H

#include "queue/queue.h"

struct fw_link;

/**
 * struct fw_link_ops - what a link does.
 * @send: queue message @m (q_msg_bytes() of it) for device @m->dst, in order
 *        after every earlier message from @m->src to it. May wait for room,
 *        never for the peer's engine. Return: 0, or -EPIPE if the peer is
 *        gone (the message is dropped).
 * @recv: take the next message for local device @dev into @m. Return: 1 if
 *        one was taken, 0 if none waits.
 * @write: start copying @len bytes from @src into device @dev's region
 *        (@key, @off), checking the range against the region's key and
 *        bounds first; @src stays untouched until @write_done says so.
 *        Return: ACCDMA_OK (started: *@req names it), ACCDMA_ST_BAD_KEY,
 *        ACCDMA_ST_OUT_OF_BOUNDS, ACCDMA_ST_PEER_LOST, ACCDMA_ST_DMA_ERROR,
 *        or ACCDMA_ST_NOT_ATTEMPTED: no room for another write in flight
 *        now (nothing started; the caller tries again after a write_done).
 * @write_done: has write @req completed? Return: 0 while in flight; 1 when
 *        done, with its outcome (one of @write's) in *@st. Once only.
 *        Messages sent after @write started reach the peer after its data,
 *        and none does if it fails.
 * @idle: (optional) an engine that polled the link (through @recv) is going
 *        to sleep: whatever watches the link while nobody polls it must take
 *        over now, not when it next looks.
 * @stage: (optional, with @staged) write @len bytes from @src into staging
 *        slot @slot that far device @m->dst keeps for our device @m->src
 *        (fw_stub/stage.c), then send @m behind it, in one post where the
 *        link can; @m arrives only after the data, and @src stays untouched
 *        until @m's answer comes back. Return: ACCDMA_OK (posted),
 *        ACCDMA_ST_NOT_ATTEMPTED (no room, or the receiver's slots not known
 *        yet: nothing sent), ACCDMA_ST_PEER_LOST or ACCDMA_ST_DMA_ERROR.
 * @staged: where staging slot @slot that our device @dev keeps for far
 *        device @src lies in this process (Q_STAGE_BYTES), or NULL.
 */
struct fw_link_ops {
	int (*send)(struct fw_link *l, const struct q_msg *m);
	int (*recv)(struct fw_link *l, uint32_t dev, struct q_msg *m);
	enum accdma_status (*write)(struct fw_link *l, uint32_t dev, uint32_t key, uint64_t off, uint64_t len,
				    const void *src, uint64_t *req);
	int (*write_done)(struct fw_link *l, uint64_t req, enum accdma_status *st);
	void (*idle)(struct fw_link *l);
	enum accdma_status (*stage)(struct fw_link *l, uint32_t slot, const void *src, uint64_t len,
				    const struct q_msg *m);
	void *(*staged)(struct fw_link *l, uint32_t dev, uint32_t src, uint32_t slot);
};

/**
 * struct fw_link - a link, and which devices a device reaches without it.
 * @ops: its operations.
 * @near_lo/@near_n: the devices this process reaches in memory (its own);
 *                   the others only through the link.
 * @solo: every device reaches only itself in memory (the test double).
 */
struct fw_link {
	const struct fw_link_ops *ops;
	uint32_t near_lo;
	uint32_t near_n;
	int solo;
};

#endif /* ACCDMA_FW_LINK_H */
