/* SPDX-License-Identifier: MIT */
/*
 * eager_ring.h - how a message lies in an eager ring (queue/queue.h,
 * struct q_eager_slot), for the side that writes it (the peer seam's ring
 * put) and the side that reads it (eager.c).
 */
#ifndef ACCDMA_FW_EAGER_RING_H
#define ACCDMA_FW_EAGER_RING_H

#include "queue/queue.h"
#include "queue/trace.h"

/* The rest of a message's payload after its head's share: raw, in the
 * positions after the head at slot @idx, wrapping at the ring's end. */
static inline uint8_t *fw_ring_cont(struct q_eager_ring *ring, uint32_t idx)
{
	return (uint8_t *)&ring->slots[idx];
}

/* Bytes of the rest (@rest) of a message that fit before the ring's end, its
 * head being at slot @idx of a ring of @mask + 1 positions (the remainder
 * continues at slot 0). */
static inline uint64_t fw_ring_cont_first(uint32_t mask, uint32_t idx, uint64_t rest)
{
	uint64_t room = (uint64_t)(mask - idx) * Q_EAGER_CONT_BYTES;

	return rest < room ? rest : room;
}

/* Copy the @n <= Q_EAGER_HEAD_BYTES bytes of a message head. Up to 16 bytes
 * (a scalar, a flag, a small index: most small messages) as two overlapping
 * loads and stores, inline, where a memcpy() call cost more than the copy. */
static inline void fw_ring_copy_head(void *dst, const void *src, uint64_t n)
{
	uint64_t a8, b8;
	uint32_t a4, b4;

	if (n > 16) {
		memcpy(dst, src, n);
	} else if (n >= 8) {
		memcpy(&a8, src, 8);
		memcpy(&b8, (const uint8_t *)src + n - 8, 8);
		memcpy(dst, &a8, 8);
		memcpy((uint8_t *)dst + n - 8, &b8, 8);
	} else if (n >= 4) {
		memcpy(&a4, src, 4);
		memcpy(&b4, (const uint8_t *)src + n - 4, 4);
		memcpy(dst, &a4, 4);
		memcpy((uint8_t *)dst + n - 4, &b4, 4);
	} else {
		for (uint64_t i = 0; i < n; i++)
			((uint8_t *)dst)[i] = ((const uint8_t *)src)[i];
	}
}

/* Write @len payload bytes of the message whose head is at slot @idx: the
 * head's share, then the rest after it (wrapping). */
static inline void fw_ring_copy_in(uint32_t mask, struct q_eager_ring *ring, uint32_t idx,
				   const uint8_t *src, uint64_t len)
{
	uint64_t n = len < Q_EAGER_HEAD_BYTES ? len : Q_EAGER_HEAD_BYTES, k;

	if (n) /* a barrier's zero-length send has no address */
		fw_ring_copy_head(ring->slots[idx].data, src, n);
	if (len == n)
		return;
	k = fw_ring_cont_first(mask, idx, len - n);
	if (k)
		memcpy(fw_ring_cont(ring, idx + 1), src + n, k);
	if (n + k < len)
		memcpy(fw_ring_cont(ring, 0), src + n + k, len - n - k);
}

/**
 * fw_ring_write() - write a message into an eager ring at position @pos and
 * stamp it (struct q_eager_slot says in which order, and why).
 * @mask: the ring's positions less one. @ring: the ring. @done: the
 * receiver's consumed mark as the writer knows it (no later than the real one).
 * @tag/@seq/@src/@len: the message.
 */
static inline void fw_ring_write(uint32_t mask, struct q_eager_ring *ring, uint32_t pos, uint32_t done,
				 uint64_t tag, uint64_t seq, const void *src, uint32_t len)
{
	uint32_t span = q_eager_span(len);
	struct q_eager_slot *s = &ring->slots[pos & mask];

	fw_ring_copy_in(mask, ring, pos & mask, src, len);
	s->len = len;
	s->tag = tag;
	s->seq = seq;
	/* The next head's position: raw payload of an earlier lap may lie there,
	 * so it reads 0 before this stamp can be seen (q_eager_slot). Unless it
	 * is the oldest message not consumed: that head's stamp stays. */
	if (pos + span - done <= mask)
		os_store(&ring->slots[(pos + span) & mask].stamp, 0, OS_RELAXED);
	os_store(&s->stamp, q_eager_stamp(pos), OS_RELEASE);
	q_trace(Q_TRACE_STAMP);
}

#endif /* ACCDMA_FW_EAGER_RING_H */
