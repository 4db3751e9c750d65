// SPDX-License-Identifier: MIT
/*
 * seq.c - numbering sends and recvs for matching.
 *
 * The k-th send from A to B with tag T must meet the k-th recv on B from A
 * with tag T, whatever the timing. Numbering both at post time makes matching
 * a lookup of (A, T, k) instead of a race. The counters are per device
 * (shared by its queues) under that device's lock; a device with one queue
 * has one posting thread, which takes the lock only to add an entry.
 */
#include <sched.h>
#include <stdlib.h>

#include "driver/internal.h"

static uint64_t seq_hash(int32_t peer, uint64_t tag, uint32_t dir)
{
	uint64_t h = ((uint64_t)(uint32_t)peer << 2 | dir) * 0x9e3779b97f4a7c15ull;

	h ^= tag * 0xff51afd7ed558ccdull;
	return h ^ (h >> 29);
}

int drv_seq_init(struct drv_seq_table *t, int single)
{
	t->single = single;
	t->cap = 256;
	t->count = 0;
	t->last[0] = t->last[1] = NULL;
	t->ents = calloc(t->cap, sizeof(*t->ents));
	if (!t->ents)
		return -ENOMEM;
	atomic_flag_clear(&t->lock);
	return 0;
}

void drv_seq_fini(struct drv_seq_table *t)
{
	if (!t->ents)
		return;
	free(t->ents);
	t->ents = NULL;
}

/* A spinlock: held for a few dozen instructions, contended only by threads
 * posting on different queues of one device. */
static void seq_lock(struct drv_seq_table *t)
{
	while (atomic_flag_test_and_set_explicit(&t->lock, memory_order_acquire))
		sched_yield();
}

static void seq_unlock(struct drv_seq_table *t)
{
	atomic_flag_clear_explicit(&t->lock, memory_order_release);
}

static struct drv_seq_ent *seq_slot(struct drv_seq_ent *ents, uint32_t cap, int32_t peer, uint64_t tag,
				    uint32_t dir)
{
	uint32_t i = (uint32_t)seq_hash(peer, tag, dir) & (cap - 1);

	while (ents[i].dir && !(ents[i].peer == peer && ents[i].tag == tag && ents[i].dir == dir))
		i = (i + 1) & (cap - 1);
	return &ents[i];
}

/* Grow at half load; the only allocation on the post path, once per new (peer, tag). */
static int seq_grow(struct drv_seq_table *t)
{
	uint32_t cap = t->cap * 2;
	struct drv_seq_ent *ents = calloc(cap, sizeof(*ents));

	if (!ents)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->cap; i++)
		if (t->ents[i].dir)
			*seq_slot(ents, cap, t->ents[i].peer, t->ents[i].tag, t->ents[i].dir) = t->ents[i];
	free(t->ents);
	t->ents = ents;
	t->cap = cap;
	return 0;
}

/* Add the entry of (@peer, @tag, @dir) at @e, its free slot; NULL on -ENOMEM. Under the lock. */
static struct drv_seq_ent *seq_add(struct drv_seq_table *t, struct drv_seq_ent *e, int32_t peer,
				   uint64_t tag, uint32_t dir)
{
	if ((t->count + 1) * 2 > t->cap) {
		if (seq_grow(t))
			return NULL;
		t->last[0] = t->last[1] = NULL; /* they pointed into the old array */
		e = seq_slot(t->ents, t->cap, peer, tag, dir);
	}
	e->tag = tag;
	e->peer = peer;
	e->dir = dir;
	atomic_store_explicit(&e->next, 0, memory_order_relaxed);
	t->count++;
	return e;
}

/* The entry of (@peer, @tag, @dir), added if new; NULL on -ENOMEM. Under the
 * lock if @locked; else by the device's one posting thread, locking to add. */
static struct drv_seq_ent *seq_entry(struct drv_seq_table *t, int32_t peer, uint64_t tag, uint32_t dir,
				     int locked)
{
	struct drv_seq_ent **last = &t->last[dir == ACCDMA_OP_RECV];
	struct drv_seq_ent *e = *last;

	if (e && e->peer == peer && e->tag == tag && e->dir == dir)
		return e;
	e = seq_slot(t->ents, t->cap, peer, tag, dir);
	if (!e->dir) {
		if (!locked)
			seq_lock(t);
		e = seq_add(t, e, peer, tag, dir);
		if (!locked)
			seq_unlock(t);
		if (!e)
			return NULL;
	}
	*last = e;
	return e;
}

/* Move the next number of @e by @d: only the numbering thread (or lock holder) writes it. */
static uint64_t seq_take(struct drv_seq_ent *e, int64_t d)
{
	uint64_t n = atomic_load_explicit(&e->next, memory_order_relaxed);

	atomic_store_explicit(&e->next, n + (uint64_t)d, memory_order_relaxed);
	return n;
}

/**
 * drv_seq_number() - number the sends and recvs of a batch about to be posted.
 * @t: the device's table. @ops/@count: the batch. @seqs: out, one per op
 * (0 for ops that are neither sends nor recvs).
 *
 * One lock for the batch (none with one queue: see struct drv_seq_table); on
 * failure the numbers already taken are given back, so the next send of the
 * same (peer, tag) still meets the right recv.
 * Return: 0, or -ENOMEM.
 */
int drv_seq_number(struct drv_seq_table *t, const struct accdma_op *ops, int count, uint64_t *seqs)
{
	int i, locked = !t->single;

	if (locked)
		seq_lock(t);
	for (i = 0; i < count; i++) {
		struct drv_seq_ent *e;

		seqs[i] = 0;
		if (ops[i].kind != ACCDMA_OP_SEND && ops[i].kind != ACCDMA_OP_RECV)
			continue;
		e = seq_entry(t, ops[i].peer, ops[i].tag, ops[i].kind, locked);
		if (!e)
			goto undo;
		seqs[i] = seq_take(e, 1);
	}
	if (locked)
		seq_unlock(t);
	return 0;
undo:
	while (i--)
		if (ops[i].kind == ACCDMA_OP_SEND || ops[i].kind == ACCDMA_OP_RECV)
			seq_take(seq_slot(t->ents, t->cap, ops[i].peer, ops[i].tag, ops[i].kind), -1);
	if (locked)
		seq_unlock(t);
	return -ENOMEM;
}

/**
 * drv_seq_peek() - how many ops of (@peer, @tag, @dir) were numbered so far.
 */
uint64_t drv_seq_peek(struct drv_seq_table *t, int32_t peer, uint64_t tag, uint32_t dir)
{
	uint64_t n;

	seq_lock(t);
	n = atomic_load_explicit(&seq_slot(t->ents, t->cap, peer, tag, dir)->next, memory_order_relaxed);
	seq_unlock(t);
	return n;
}
