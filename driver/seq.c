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
#include "fw_stub/fw.h"

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
	t->any = NULL;
	t->ents = calloc(t->cap, sizeof(*t->ents));
	if (!t->ents)
		return -ENOMEM;
	atomic_flag_clear(&t->lock);
	return 0;
}

void drv_seq_fini(struct drv_seq_table *t)
{
	while (t->any) {
		struct drv_seq_any *a = t->any;

		t->any = a->next;
		free(a->skips);
		free(a);
	}
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

/* The any-source state of @tag, or NULL. Under the lock. */
static struct drv_seq_any *any_find(struct drv_seq_table *t, uint64_t tag)
{
	struct drv_seq_any *a;

	for (a = t->any; a && a->tag != tag; a = a->next)
		;
	return a;
}

/*
 * Number recv @op with a tag that has any-source state, or defer it: an
 * any-source recv, and any recv with its tag while an earlier deferred one
 * is unsettled, takes the next place in the tag's order instead of a number
 * (the engine numbers it in that order, drv_seq_order()). Under the lock.
 * Return: 1 if deferred (*@seq set), 0 to number it as usual, -ENOMEM.
 */
static int any_defer(struct drv_seq_table *t, const struct accdma_op *op, uint64_t *seq)
{
	struct drv_seq_any *a = any_find(t, op->tag);

	if (!a && op->peer != ACCDMA_ANY_SOURCE)
		return 0;
	if (!a) {
		a = calloc(1, sizeof(*a));
		if (!a)
			return -ENOMEM;
		a->tag = op->tag;
		a->next = t->any;
		t->any = a;
	}
	if (op->peer != ACCDMA_ANY_SOURCE && a->numbered == a->posted)
		return 0;
	*seq = DRV_SEQ_DEFER | a->posted++;
	return 1;
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
	int i, locked = !t->single, any = 0;

	/* Once the device has an any-source recv, its engines number too. */
	for (i = 0; i < count && !any; i++)
		any = ops[i].kind == ACCDMA_OP_RECV && ops[i].peer == ACCDMA_ANY_SOURCE;
	if (!locked && (any || t->any)) /* single: only this thread sets t->any */
		locked = 1;
	if (locked)
		seq_lock(t);
	for (i = 0; i < count; i++) {
		struct drv_seq_ent *e;
		int r;

		seqs[i] = 0;
		if (ops[i].kind != ACCDMA_OP_SEND && ops[i].kind != ACCDMA_OP_RECV)
			continue;
		if (ops[i].kind == ACCDMA_OP_RECV && (any || t->any)) {
			r = any_defer(t, &ops[i], &seqs[i]);
			if (r < 0)
				goto undo;
			if (r)
				continue;
		}
		e = seq_entry(t, ops[i].peer, ops[i].tag, ops[i].kind, locked);
		if (!e)
			goto undo;
		seqs[i] = seq_take(e, 1);
	}
	if (locked)
		seq_unlock(t);
	return 0;
undo:
	while (i--) {
		if (seqs[i] & DRV_SEQ_DEFER)
			any_find(t, ops[i].tag)->posted--; /* places are taken last first */
		else if (ops[i].kind == ACCDMA_OP_SEND || ops[i].kind == ACCDMA_OP_RECV)
			seq_take(seq_slot(t->ents, t->cap, ops[i].peer, ops[i].tag, ops[i].kind), -1);
	}
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

/* Room for one more early skip. */
static int any_grow(struct drv_seq_any *a)
{
	uint32_t cap = a->cap ? a->cap * 2 : 16;
	uint64_t *n = realloc(a->skips, cap * sizeof(*n));

	if (!n)
		return -ENOMEM;
	a->skips = n;
	a->cap = cap;
	return 0;
}

/* The turn moves on from @a's settled places over those skipped early. */
static void any_settle(struct drv_seq_any *a)
{
	a->numbered++;
	for (uint32_t i = 0; i < a->nskip;) {
		if (a->skips[i] != a->numbered) {
			i++;
			continue;
		}
		a->skips[i] = a->skips[--a->nskip];
		a->numbered++;
		i = 0;
	}
}

/* The next recv number of (@src, @tag); the entry is added if @add. Under the lock. */
static struct drv_seq_ent *any_ent(struct drv_seq_table *t, int32_t src, uint64_t tag, int add)
{
	struct drv_seq_ent *e = seq_slot(t->ents, t->cap, src, tag, ACCDMA_OP_RECV);

	if (!e->dir && add)
		e = seq_add(t, e, src, tag, ACCDMA_OP_RECV);
	return e;
}

/**
 * drv_seq_order() - the engines' numbering of deferred recvs (struct
 * fw_host's recv_order; see enum fw_order_how).
 * @ctx: the world. @dev: the device. @tag: the recv's tag. @place: its
 * place in the tag's order. @src: the source to number it from (TAKE).
 * @how: FW_ORDER_*. @seq: out: one number (TAKE), or one per device (PEEK).
 *
 * Under the device's numbering lock, which every post takes once the
 * device has an any-source recv: while a tag has deferred recvs unsettled
 * nobody else numbers recvs with it, so the numbers peeked stay true until
 * the same place takes one.
 * Return: 0, -EAGAIN (not @place's turn), -EINVAL (no such tag), -ENOMEM.
 */
int drv_seq_order(void *ctx, uint32_t dev, uint64_t tag, uint64_t place, int32_t src, int how, uint64_t *seq)
{
	struct accdma_world *w = ctx;
	struct drv_seq_table *t = &w->devs[dev].seqs;
	struct drv_seq_any *a;
	struct drv_seq_ent *e;
	int rc = 0;

	seq_lock(t);
	a = any_find(t, tag);
	if (!a || place >= a->posted) {
		rc = -EINVAL;
	} else if (how == FW_ORDER_SKIP) {
		if (place == a->numbered) {
			any_settle(a);
		} else if (a->nskip < a->cap || !(rc = any_grow(a))) {
			a->skips[a->nskip++] = place;
		}
	} else if (place != a->numbered) {
		rc = -EAGAIN;
	} else if (how == FW_ORDER_PEEK) {
		for (int32_t p = 0; p < w->opts.num_devices; p++) {
			e = any_ent(t, p, tag, 0);
			seq[p] = e->dir ? atomic_load_explicit(&e->next, memory_order_relaxed) : 0;
		}
	} else if (src < 0 || src >= w->opts.num_devices || !(e = any_ent(t, src, tag, 1))) {
		rc = src < 0 || src >= w->opts.num_devices ? -EINVAL : -ENOMEM;
	} else {
		*seq = seq_take(e, 1);
		any_settle(a);
	}
	seq_unlock(t);
	return rc;
}
