// SPDX-License-Identifier: MIT
/*
 * layout.c - where each shared structure lives in the arena.
 *
 * The geometry is fixed at open: every device block has the same size, so a
 * process that maps the arena finds device d at dev_off + d * dev_stride.
 */
#include <errno.h>
#include <string.h>

#include "queue/queue.h"

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* The rendezvous table holds unmatched sends to and recvs on one device.
 * Sized for every local slot plus a share of peers' slots; when it is full an
 * arriving op simply retries later, so the size bounds memory, not correctness. */
static uint32_t rdv_capacity(uint32_t ndev, uint32_t nq, uint32_t depth)
{
	uint64_t want = 2ull * nq * depth * (ndev < 8 ? ndev : 8);
	uint32_t cap = 64;
	while (cap < want && cap < (1u << 20))
		cap <<= 1;
	return cap;
}

/* Positions per eager ring (0: no rings). Up to 16 devices a ring holds at
 * least 16 KiB and at least a cache line's worth of positions (two) for each
 * op a queue holds (@depth), so that a poster's whole window of small sends
 * (up to 40 bytes each) to one peer can be in the ring
 * before the receiver catches up: a shallower ring turns the rest to
 * rendezvous, which costs a lock and a hand-off per message. The rings of a world take
 * at most Q_EAGER_RINGS_BUDGET bytes in all (a deep ring stops short of
 * @depth there); worlds of 17 to 64 devices get shallow rings. */
static uint32_t eager_slots_for(uint32_t ndev, uint32_t depth)
{
	uint32_t slots = Q_EAGER_SLOTS_SMALL_WORLD;

	if (ndev > ACCDMA_EAGER_MAX_DEVICES)
		return 0;
	if (ndev > Q_EAGER_DEEP_MAX_DEVICES)
		return Q_EAGER_SLOTS_LARGE_WORLD;
	while (slots / Q_EAGER_SLOTS_PER_OP < depth && slots < Q_EAGER_SLOTS_MAX &&
	       (uint64_t)ndev * ndev * q_eager_ring_bytes(slots * 2) <= Q_EAGER_RINGS_BUDGET)
		slots *= 2;
	return slots;
}

/* The incoming rings of one device: a header line and the positions per sender. 16 KiB a
 * pair up to 16 devices with the default queue depth (4 MiB in all at 16),
 * more with deep queues (Q_EAGER_RINGS_BUDGET in all at most), 4 KiB a pair beyond 16
 * devices (16 MiB at 64); above 64 devices, small sends rendezvous. */
static uint64_t eager_rings_size(uint32_t ndev, uint32_t depth)
{
	uint32_t slots = eager_slots_for(ndev, depth);

	return slots ? (uint64_t)ndev * q_eager_ring_bytes(slots) : 0;
}

uint32_t q_eager_cap(uint32_t slots)
{
	uint32_t cap = Q_EAGER_HEAD_BYTES + (slots / 8 - 1) * Q_EAGER_CONT_BYTES;

	return cap < ACCDMA_EAGER_MAX ? cap : ACCDMA_EAGER_MAX;
}

uint32_t q_eager_max_for(uint32_t ndev, uint32_t depth, uint32_t eager_max)
{
	uint32_t slots = eager_slots_for(ndev, depth), cap;

	if (!slots || eager_max > ACCDMA_EAGER_MAX)
		return 0;
	cap = q_eager_cap(slots);
	return eager_max < cap ? eager_max : cap;
}

/* Bytes of one device block: the device header, queue controls, then per
 * queue its descriptor table, completion records and ring, then the rdv
 * table, then the eager rings into the device. */
static uint64_t dev_block_size(uint32_t ndev, uint32_t nq, uint32_t depth)
{
	uint64_t sz = align_up(sizeof(struct q_dev_sh), Q_CACHELINE);
	sz += align_up((uint64_t)nq * sizeof(struct q_queue_sh), Q_CACHELINE);
	sz += (uint64_t)nq * align_up((uint64_t)depth * sizeof(struct q_desc), Q_CACHELINE);
	sz += (uint64_t)nq * align_up((uint64_t)depth * sizeof(struct q_cpl), Q_CACHELINE);
	sz += (uint64_t)nq * align_up((uint64_t)depth * sizeof(uint32_t), Q_CACHELINE);
	sz += align_up((uint64_t)rdv_capacity(ndev, nq, depth) * sizeof(struct q_rdv), Q_CACHELINE);
	sz += eager_rings_size(ndev, depth);
	return align_up(sz, 4096);
}

uint64_t q_layout_size(uint32_t ndev, uint32_t nq, uint32_t depth)
{
	return align_up(sizeof(struct q_world_sh), 4096) + (uint64_t)ndev * dev_block_size(ndev, nq, depth);
}

int q_layout_init(struct q_world_sh *w, uint32_t ndev, uint32_t nq, uint32_t engines,
		  uint32_t depth, int pshared, uint32_t eager_max)
{
	pthread_mutexattr_t attr;
	uint32_t d, q;

	w->magic = Q_WORLD_MAGIC;
	w->fw_version = Q_FW_VERSION;
	w->num_devices = ndev;
	w->queues = nq;
	w->engines = engines;
	w->depth = depth;
	w->rdv_cap = rdv_capacity(ndev, nq, depth);
	w->eager_max = q_eager_max_for(ndev, depth, eager_max);
	w->eager_slots = eager_slots_for(ndev, depth);
	w->dev_off = align_up(sizeof(struct q_world_sh), 4096);
	w->dev_stride = dev_block_size(ndev, nq, depth);
	w->size = q_layout_size(ndev, nq, depth);

	if (pthread_mutexattr_init(&attr))
		return -ENOMEM;
	if (pshared) {
		/* A peer process may die holding the lock: robust lets the next owner recover. */
		pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
		pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
	}
	for (d = 0; d < ndev; d++) {
		uint64_t base = w->dev_off + (uint64_t)d * w->dev_stride;
		uint64_t off = base + align_up(sizeof(struct q_dev_sh), Q_CACHELINE);
		struct q_dev_sh *dev = q_dev(w, d);

		dev->id = (int32_t)d;
		dev->queue_off = off;
		off += align_up((uint64_t)nq * sizeof(struct q_queue_sh), Q_CACHELINE);
		for (q = 0; q < nq; q++) {
			struct q_queue_sh *qs = q_queue(w, d, q);

			qs->depth = depth;
			qs->engine = q % engines;
			qs->desc_off = off;
			off += align_up((uint64_t)depth * sizeof(struct q_desc), Q_CACHELINE);
			qs->cpl_off = off;
			off += align_up((uint64_t)depth * sizeof(struct q_cpl), Q_CACHELINE);
			qs->sq_off = off;
			off += align_up((uint64_t)depth * sizeof(uint32_t), Q_CACHELINE);
		}
		dev->rdv_off = off;
		dev->rdv_cap = w->rdv_cap;
		off += align_up((uint64_t)w->rdv_cap * sizeof(struct q_rdv), Q_CACHELINE);
		dev->eager_off = w->eager_slots ? off : 0;
		dev->rdv_robust = (uint32_t)pshared;
		if (pthread_mutex_init(&dev->rdv_lock, &attr)) {
			while (d--)
				pthread_mutex_destroy(&q_dev(w, d)->rdv_lock);
			pthread_mutexattr_destroy(&attr);
			return -ENOMEM;
		}
	}
	pthread_mutexattr_destroy(&attr);
	return 0;
}

void q_layout_fini(struct q_world_sh *w)
{
	for (uint32_t d = 0; d < w->num_devices; d++)
		pthread_mutex_destroy(&q_dev(w, d)->rdv_lock);
}
