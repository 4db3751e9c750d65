// SPDX-License-Identifier: MIT
/*
 * rdv.c - a device's rendezvous table: where a send and its recv meet.
 *
 * Open addressing with linear probing and backward-shift deletion, under the
 * receiving device's lock (never a lock of all devices). Every bound
 * (capacity, probe lengths) is this process's own: the table and its count
 * are in shared memory. match.c runs the protocol of this process's ops on
 * it, msg.c that of a far sender's messages.
 */

#include "fw_stub/rdv.h"

static uint64_t rdv_hash(int32_t src, uint64_t tag, uint64_t seq)
{
	uint64_t h = (uint64_t)(uint32_t)src * 0x9e3779b97f4a7c15ull;

	h ^= tag + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
	h ^= seq * 0xbf58476d1ce4e5b9ull;
	h ^= h >> 31;
	return h;
}

void fw_rdv_unlock(const struct fw_rdv *r)
{
	os_store(&r->sh->rdv_lock, 0, OS_RELEASE);
}

/* May the lock word's holder @v be passed over? A value that names no
 * device is a peer's scribble, and a device that is lost died with the lock
 * (its process's updates to the table are each complete before its unlock
 * is reachable, so the table is consistent). */
static int holder_gone(const struct fw_device *fd, uint32_t v)
{
	return v > fd->w->g.ndev || fw_peer_lost(fd, v - 1);
}

/* Take table @r's lock. Held for a hash lookup: spin, yielding the core to
 * a holder that may have been descheduled (more threads than cores is common
 * here), and every so often look whether the holder is gone, or whether
 * this device is stopping or the thread is being killed (then give up: the
 * caller treats the table as unavailable, so that no peer can hold up a
 * close or an exit).
 * Return: 0 with the lock held, -1 if not taken. */
int fw_rdv_lock(struct fw_device *fd, const struct fw_rdv *r)
{
	uint32_t me = fd->id + 1, v = 0;

	for (uint32_t n = 1;; n++) {
		if (os_cas_weak(&r->sh->rdv_lock, &v, me, OS_ACQUIRE, OS_RELAXED))
			return 0;
		if (v == 0)
			continue;
		if (!(n & 255)) {
			/* a process's thread lent to the pass (the kernel's POLL)
			 * that is being killed must get out, as a stopping device */
			if (os_load(&fd->stop, OS_ACQUIRE) || os_thread_dying())
				return -1;
			if (holder_gone(fd, v))
				continue; /* the CAS from v takes it over */
		}
		os_yield();
		v = 0;
	}
}

/* The entry for (src, tag, seq), or NULL. Under the table's lock. */
struct q_rdv *fw_rdv_find(const struct fw_rdv *r, int32_t src, uint64_t tag, uint64_t seq)
{
	struct q_rdv *t = r->t;
	uint32_t cap = r->cap, i = (uint32_t)rdv_hash(src, tag, seq) & (cap - 1);

	for (uint32_t n = 0; n < cap; n++, i = (i + 1) & (cap - 1)) {
		struct q_rdv *e = &t[i];

		if (!e->used)
			return NULL;
		if (e->src == src && e->tag == tag && e->seq == seq)
			return e;
	}
	return NULL;
}

/* A new entry for (src, tag, seq), or NULL when the table is full (the op
 * retries later). Under the table's lock. */
struct q_rdv *fw_rdv_insert(const struct fw_rdv *r, int32_t src, uint64_t tag, uint64_t seq)
{
	struct q_rdv *t = r->t;
	uint32_t cap = r->cap, i = (uint32_t)rdv_hash(src, tag, seq) & (cap - 1), n;

	if (r->sh->rdv_count + 1 >= cap)
		return NULL;
	/* Bounded: the count is in shared memory, and a scribbled table may have no free entry. */
	for (n = 0; n < cap && t[i].used; n++)
		i = (i + 1) & (cap - 1);
	if (n == cap)
		return NULL;
	r->sh->rdv_count++;
	t[i] = (struct q_rdv){ .used = 1, .src = src, .tag = tag, .seq = seq };
	return &t[i];
}

/* Set whose entry @e is, keeping the count of send entries (under the lock). */
void fw_rdv_set_side(const struct fw_rdv *r, struct q_rdv *e, uint16_t side)
{
	uint32_t n = os_load(&r->sh->rdv_sends, OS_RELAXED);

	n -= e->side == ACCDMA_OP_SEND;
	n += side == ACCDMA_OP_SEND;
	e->side = side;
	os_store(&r->sh->rdv_sends, n, OS_RELEASE);
}

/* Backward-shift deletion keeps probe chains unbroken without tombstones. */
void fw_rdv_remove(const struct fw_rdv *r, struct q_rdv *e)
{
	struct q_rdv *t = r->t;
	uint32_t cap = r->cap, i = (uint32_t)(e - t), j = i;

	fw_rdv_set_side(r, e, 0);

	for (uint32_t n = 0; n < cap; n++) {
		j = (j + 1) & (cap - 1);
		if (!t[j].used)
			break;
		uint32_t home = (uint32_t)rdv_hash(t[j].src, t[j].tag, t[j].seq) & (cap - 1);
		/* Move t[j] into the hole at i unless its home lies cyclically in (i, j]. */
		int in_range = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
		if (!in_range) {
			t[i] = t[j];
			i = j;
		}
	}
	t[i].used = 0;
	r->sh->rdv_count--;
}
