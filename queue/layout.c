// SPDX-License-Identifier: MIT
/*
 * layout.c - where each shared structure lives in the arena.
 *
 * The geometry is a function of the world's shape alone (q_geom_init()):
 * every process computes it for itself, and every device block has the same
 * layout, so device d is at dev_off + d * dev_stride in anyone's mapping.
 */

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

/* One device block: the device header, queue controls, then per queue its
 * descriptor table, completion records and ring, then the rendezvous table,
 * then the eager rings into the device. */
int q_geom_init(struct q_geom *g, uint32_t ndev, uint32_t nq, uint32_t engines, uint32_t depth,
		uint32_t eager_max, int pshared)
{
	uint64_t off;

	if (ndev < 1 || ndev > Q_MAX_DEVICES || nq < 1 || nq > Q_MAX_QUEUES || engines < 1 ||
	    engines > Q_MAX_ENGINES || depth < 2 || depth > 65536 || (depth & (depth - 1)))
		return -EINVAL;
	*g = (struct q_geom){ .ndev = ndev, .nq = nq, .engines = engines, .depth = depth };
	g->rdv_cap = rdv_capacity(ndev, nq, depth);
	g->eager_max = q_eager_max_for(ndev, depth, eager_max);
	g->eager_slots = eager_slots_for(ndev, depth);
	g->pshared = (uint32_t)!!pshared;
	off = align_up(sizeof(struct q_dev_sh), Q_CACHELINE);
	g->queue_rel = off;
	off += align_up((uint64_t)nq * sizeof(struct q_queue_sh), Q_CACHELINE);
	g->qmem_rel = off;
	g->cpl_rel = align_up((uint64_t)depth * sizeof(struct q_desc), Q_CACHELINE);
	g->sq_rel = g->cpl_rel + align_up((uint64_t)depth * sizeof(struct q_cpl), Q_CACHELINE);
	g->qmem_stride = g->sq_rel + align_up((uint64_t)depth * sizeof(uint32_t), Q_CACHELINE);
	off += (uint64_t)nq * g->qmem_stride;
	g->rdv_rel = off;
	off += align_up((uint64_t)g->rdv_cap * sizeof(struct q_rdv), Q_CACHELINE);
	g->eager_rel = g->eager_slots ? off : 0;
	off += eager_rings_size(ndev, depth);
	g->dev_off = align_up(sizeof(struct q_world_sh), 4096);
	g->dev_stride = align_up(off, 4096);
	g->size = g->dev_off + (uint64_t)ndev * g->dev_stride;
	return 0;
}

uint64_t q_layout_size(uint32_t ndev, uint32_t nq, uint32_t depth)
{
	struct q_geom g;

	return q_geom_init(&g, ndev, nq, 1, depth, 0, 0) ? 0 : g.size;
}

void q_layout_init(const struct q_arena *a)
{
	const struct q_geom *g = &a->g;
	struct q_world_sh *w = a->sh;

	w->magic = Q_WORLD_MAGIC;
	w->fw_version = Q_FW_VERSION;
	w->num_devices = g->ndev;
	w->queues = g->nq;
	w->engines = g->engines;
	w->depth = g->depth;
	w->rdv_cap = g->rdv_cap;
	w->eager_max = g->eager_max;
	w->eager_slots = g->eager_slots;
	w->size = g->size;
	for (uint32_t d = 0; d < g->ndev; d++)
		q_dev(a, d)->id = (int32_t)d;
}

int q_layout_matches(const struct q_world_sh *sh, const struct q_geom *g)
{
	return sh->magic == Q_WORLD_MAGIC && sh->fw_version == Q_FW_VERSION && sh->num_devices == g->ndev &&
	       sh->queues == g->nq && sh->engines == g->engines && sh->depth == g->depth &&
	       sh->rdv_cap == g->rdv_cap && sh->eager_max == g->eager_max &&
	       sh->eager_slots == g->eager_slots && sh->size == g->size;
}
