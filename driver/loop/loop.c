// SPDX-License-Identifier: MIT
/*
 * loop.c - the message-level test double of a transport across hosts.
 *
 * Every device of the world lives in this process, as with `local`, but each
 * counts as a host of its own: its engines reach no other device in memory
 * (fw_link.solo), and everything they do to another device goes through
 * this link, as the verbs transport's does through RDMA: messages into the
 * receiver's inbox, and one-sided writes checked against the target's
 * region table, and staged sends into slots the receiver keeps. So the
 * whole cross-host protocol (eager, staged, rendezvous,
 * truncation, failure, cancel, reset, writes) runs in `make check`, under the
 * sanitizers, with no RDMA device.
 */
#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>

#include "driver/inbox.h"
#include "driver/internal.h"
#include "driver/loop/loop.h"
#include "fw_stub/link.h"

struct loop_link {
	struct fw_link link; /* first: the engines' handle is this */
	struct accdma_world *w;
	struct drv_inbox *inbox; /* by device */
	_Atomic uint64_t counts[DRV_LOOP__COUNT]; /* what crossed the link, for the tests */
	_Atomic uint32_t refuse; /* writes still to refuse (drv_loop_refuse_writes()) */
	_Atomic uint32_t hold;   /* writes stay in flight (drv_loop_hold_writes()) */
	uint8_t *stage;          /* staging slots: [dev][src][q_stage_slots()], Q_STAGE_BYTES each */
	size_t stage_bytes;
};

static struct loop_link *loop_of(struct fw_link *l)
{
	return (struct loop_link *)l;
}

static int loop_send(struct fw_link *l, const struct q_msg *m)
{
	struct loop_link *ll = loop_of(l);
	struct accdma_world *w = ll->w;
	uint32_t dst = (uint32_t)m->dst;

	if (dst >= w->a.g.ndev)
		return -EPIPE;
	if (drv_inbox_put(&ll->inbox[dst], m))
		return -EPIPE; /* out of memory: as good as a link that broke */
	if (m->type < Q_MSG__COUNT)
		atomic_fetch_add_explicit(&ll->counts[m->type], 1, memory_order_relaxed);
	/* The message is the doorbell: the receiver's engine 0 serves its inbox. */
	q_engine_kick(q_dev(&w->a, dst), 0);
	return 0;
}

static int loop_recv(struct fw_link *l, uint32_t dev, struct q_msg *m)
{
	return drv_inbox_take(&loop_of(l)->inbox[dev], m);
}

/* Where (@dev, @key, @off, @len) is, checked as the target's NIC would. */
static enum accdma_status loop_range(struct fw_link *l, uint32_t dev, uint32_t key, uint64_t off, uint64_t len,
				     void **addr)
{
	struct accdma_world *w = loop_of(l)->w;

	if (dev >= w->a.g.ndev)
		return ACCDMA_ST_BAD_KEY;
	return dma_resolve(&w->space, &w->a, dev, key, off, len, 0, addr);
}

/* Is this write one of those drv_loop_refuse_writes() asked to refuse? (takes it off the count) */
static int refused(struct loop_link *ll)
{
	uint32_t refuse = atomic_load_explicit(&ll->refuse, memory_order_relaxed);

	while (refuse && !atomic_compare_exchange_weak(&ll->refuse, &refuse, refuse - 1))
		;
	return refuse != 0;
}

/* A write moves its data as it starts (done then, unless held): its handle is its outcome (plus one). */
static enum accdma_status loop_write(struct fw_link *l, uint32_t dev, uint32_t key, uint64_t off, uint64_t len,
				     const void *src, uint64_t *req)
{
	struct loop_link *ll = loop_of(l);
	void *dst;
	enum accdma_status st;

	if (refused(ll))
		return ACCDMA_ST_NOT_ATTEMPTED;
	st = loop_range(l, dev, key, off, len, &dst);
	atomic_fetch_add_explicit(&ll->counts[DRV_LOOP_WRITES], 1, memory_order_relaxed);
	if (st != ACCDMA_OK)
		return st;
	if (dma_copy(dst, src, len))
		st = ACCDMA_ST_DMA_ERROR; /* the data mover's fault point */
	*req = (uint64_t)st + 1;
	return ACCDMA_OK;
}

/* Staging slot @slot that device @dev keeps for device @src. */
static void *loop_staged(struct fw_link *l, uint32_t dev, uint32_t src, uint32_t slot)
{
	struct loop_link *ll = loop_of(l);
	uint32_t n = ll->w->a.g.ndev, slots = q_stage_slots(n);

	if (!ll->stage || dev >= n || src >= n || slot >= slots)
		return NULL;
	return ll->stage + (((size_t)dev * n + src) * slots + slot) * Q_STAGE_BYTES;
}

/* The data into its slot, then the message. */
static enum accdma_status loop_stage(struct fw_link *l, uint32_t slot, const void *src, uint64_t len,
				     const struct q_msg *m)
{
	struct loop_link *ll = loop_of(l);
	void *dst = loop_staged(l, (uint32_t)m->dst, (uint32_t)m->src, slot);

	if (refused(ll))
		return ACCDMA_ST_NOT_ATTEMPTED;
	if (!dst || len > Q_STAGE_BYTES)
		return ACCDMA_ST_OUT_OF_BOUNDS;
	atomic_fetch_add_explicit(&ll->counts[DRV_LOOP_WRITES], 1, memory_order_relaxed);
	/* No fault point here: the receiver's copy out of the slot has it, and a
	 * fault there fails the pair as a failed write would. */
	dma_copy_range(dst, src, len);
	return loop_send(l, m) ? ACCDMA_ST_PEER_LOST : ACCDMA_OK;
}

static int loop_write_done(struct fw_link *l, uint64_t req, enum accdma_status *st)
{
	if (atomic_load_explicit(&loop_of(l)->hold, memory_order_acquire))
		return 0;
	*st = req && req <= ACCDMA_ST__COUNT ? (enum accdma_status)(req - 1) : ACCDMA_ST_DMA_ERROR;
	return 1;
}

static void loop_idle(struct fw_link *l)
{
	atomic_fetch_add_explicit(&loop_of(l)->counts[DRV_LOOP_IDLES], 1, memory_order_relaxed);
}

static const struct fw_link_ops loop_ops = {
	.send = loop_send,
	.recv = loop_recv,
	.write = loop_write,
	.write_done = loop_write_done,
	.idle = loop_idle,
	.stage = loop_stage,
	.staged = loop_staged,
};

static void loop_close(struct accdma_world *w)
{
	struct loop_link *ll = w->tp_state;

	drv_transport_local.close(w);
	if (!ll)
		return;
	for (uint32_t d = 0; ll->inbox && d < w->a.g.ndev; d++)
		drv_inbox_fini(&ll->inbox[d]);
	free(ll->inbox);
	if (ll->stage)
		munmap(ll->stage, ll->stage_bytes);
	free(ll);
	w->tp_state = NULL;
	w->host.link = NULL;
}

static int loop_open(struct accdma_world *w)
{
	struct loop_link *ll = calloc(1, sizeof(*ll));
	int rc;

	if (!ll)
		return -ENOMEM;
	w->tp_state = ll;
	ll->w = w;
	ll->link = (struct fw_link){ .ops = &loop_ops, .solo = 1 };
	ll->inbox = calloc(w->a.g.ndev, sizeof(*ll->inbox));
	if (!ll->inbox)
		return -ENOMEM;
	for (uint32_t d = 0; d < w->a.g.ndev; d++)
		drv_inbox_init(&ll->inbox[d]);
	/* Every device's slots for every other: only the pages used are ever touched. */
	ll->stage_bytes = (size_t)w->a.g.ndev * w->a.g.ndev * q_stage_slots(w->a.g.ndev) * Q_STAGE_BYTES;
	if (ll->stage_bytes) {
		void *p = mmap(NULL, ll->stage_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			       -1, 0);

		if (p == MAP_FAILED)
			return -ENOMEM;
		ll->stage = p;
	}
	rc = drv_transport_local.open(w);
	if (rc)
		return rc;
	w->host.link = &ll->link;
	return 0;
}

int drv_loop_counts(accdma_world *w, uint64_t *counts)
{
	struct loop_link *ll;

	if (drv_world_check(w) || w->tp != &drv_transport_loop)
		return -EINVAL;
	ll = w->tp_state;
	for (int i = 0; i < DRV_LOOP__COUNT; i++)
		counts[i] = atomic_load_explicit(&ll->counts[i], memory_order_relaxed);
	return 0;
}

int drv_loop_inject(accdma_world *w, const struct q_msg *m)
{
	struct loop_link *ll;

	if (drv_world_check(w) || w->tp != &drv_transport_loop || !m)
		return -EINVAL;
	ll = w->tp_state;
	return loop_send(&ll->link, m);
}

int drv_loop_refuse_writes(accdma_world *w, uint32_t n)
{
	if (drv_world_check(w) || w->tp != &drv_transport_loop)
		return -EINVAL;
	atomic_store(&((struct loop_link *)w->tp_state)->refuse, n);
	return 0;
}

int drv_loop_hold_writes(accdma_world *w, int hold)
{
	if (drv_world_check(w) || w->tp != &drv_transport_loop)
		return -EINVAL;
	atomic_store(&((struct loop_link *)w->tp_state)->hold, hold ? 1u : 0u);
	return 0;
}

const struct drv_transport drv_transport_loop = {
	.name = "loop",
	.shared_arena = 0,
	.nap_max_us = DRV_FAR_NAP_MAX_US, /* as verbs: its long naps run under the sanitizers */
	.open = loop_open,
	.stop = drv_local_stop, /* the arena and device memory are in this process, as local's */
	.close = loop_close,
	.mem_alloc = drv_local_mem_alloc,
	.mem_free = drv_local_mem_free,
	.mem_register = drv_local_mem_register,
};
