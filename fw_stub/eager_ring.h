/* SPDX-License-Identifier: MIT */
/*
 * eager_ring.h - how a message lies in an eager ring (queue/queue.h,
 * struct q_eager_slot), for the side that writes it (the peer seam's ring
 * put) and the side that reads it (eager.c).
 */
#ifndef ACCDMA_FW_EAGER_RING_H
#define ACCDMA_FW_EAGER_RING_H

#include "queue/queue.h"

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

struct fw_device;

void fw_ring_write(const struct fw_device *fd, struct q_eager_ring *ring, uint32_t pos, uint32_t done,
		   uint64_t tag, uint64_t seq, const void *src, uint32_t len);

#endif /* ACCDMA_FW_EAGER_RING_H */
