// SPDX-License-Identifier: MIT
/*
 * kworld.c - a world whose devices all live in the kernel, and the host side
 * that posts to it: the same steps as driver/ takes in user space (reserve a
 * slot, pin dependencies, number sends and recvs, write the descriptor,
 * publish it, ring the doorbell; wait on the device's completion word), kept
 * small, since the engines and everything they share are the core's own.
 */
#include <linux/kernel.h>
#include <linux/minmax.h>

#include "kmod/kworld.h"

/* Regions start on a line of their own. */
#define KW_REGION_ALIGN 64

/* The engines' one call into the host: run the exec a descriptor's handle
 * names, if it is the one posted on that slot with that generation. */
static int kw_exec_run(void *ctx, uint32_t dev, uint32_t queue, uint64_t handle)
{
	struct kw_world *w = ctx;
	uint32_t slot = (uint32_t)handle;
	const struct kw_exec *e;
	struct kw_queue *q;

	if (dev >= w->a.g.ndev || queue >= w->a.g.nq)
		return -EINVAL;
	q = &w->queues[dev * w->a.g.nq + queue];
	if (slot > q->mask)
		return -EINVAL;
	e = &q->exec[slot];
	if (e->gen != (uint32_t)(handle >> 32) || !e->fn)
		return -EINVAL;
	return e->fn(e->arg) != 0;
}

/**
 * kw_open() - lay out a world's arena and boot its devices' engines as
 * kernel threads.
 * @w: the world, zeroed by the caller.
 * @s: its shape.
 *
 * Return: 0, -EINVAL for a shape out of range, -ENOMEM, or the error
 * starting an engine thread gave. On failure nothing is left to close.
 */
int kw_open(struct kw_world *w, const struct kw_shape *s)
{
	int nodes = os_numa_nodes(), rc;
	uint32_t d, i;

	rc = q_geom_init(&w->a.g, s->ndev, s->nq, s->engines, s->depth, s->eager_max, 0);
	if (rc)
		return rc;
	w->spin_ns = s->spin_ns;
	rc = -ENOMEM;
	w->a.sh = os_mem_alloc(w->a.g.size, -1);
	w->devs = os_zalloc(s->ndev, sizeof(*w->devs));
	w->queues = os_zalloc((size_t)s->ndev * s->nq, sizeof(*w->queues));
	if (!w->a.sh || !w->devs || !w->queues || dma_space_init(&w->space, s->ndev))
		goto fail;
	q_layout_init(&w->a);
	w->host = s->exec ? (struct fw_host){ s->exec, s->exec_ctx } : (struct fw_host){ kw_exec_run, w };
	for (i = 0; i < s->ndev * s->nq; i++) {
		struct kw_queue *q = &w->queues[i];

		q->dev = i / s->nq;
		q->index = i % s->nq;
		q->mask = s->depth - 1;
		q->sh = q_queue(&w->a, q->dev, q->index);
		q->desc = q_descs(&w->a, q->dev, q->index);
		q->cpl = q_cpls(&w->a, q->dev, q->index);
		q->sq = q_sq(&w->a, q->dev, q->index);
		q->exec = os_zalloc(s->depth, sizeof(*q->exec));
		if (!q->exec)
			goto fail;
	}
	for (d = 0; d < s->ndev; d++) {
		struct q_dev_sh *ds = q_dev(&w->a, d);
		struct kw_dev *kd = &w->devs[d];

		ds->numa_node = (int32_t)(d % (uint32_t)nodes);
		ds->mem_size = s->mem_size;
		kd->seg = dma_mem_alloc(s->mem_size, ds->numa_node);
		if (!kd->seg)
			goto fail;
		kd->seg_size = s->mem_size;
		/* what a region table says is checked against this reach */
		dma_space_set_segment(&w->space, d, kd->seg, s->mem_size);
	}
	for (d = 0; d < s->ndev; d++) {
		rc = fw_device_start(&w->a, &w->space, d, s->spin_ns, 1, 0, &w->host,
				     &w->devs[d].fw);
		if (rc)
			goto fail;
	}
	return 0;
fail:
	kw_close(w);
	return rc;
}

/**
 * kw_close() - stop every engine, then free device memory and the arena.
 * @w: the world (a failed or partial kw_open() is fine).
 */
void kw_close(struct kw_world *w)
{
	uint32_t d, i;

	if (w->a.sh)
		os_store(&w->a.sh->stop, 1, OS_SEQ_CST); /* every engine at once */
	for (d = 0; w->devs && d < w->a.g.ndev; d++)
		fw_device_stop(w->devs[d].fw);
	for (d = 0; w->devs && d < w->a.g.ndev; d++)
		dma_mem_free(w->devs[d].seg, w->devs[d].seg_size);
	for (i = 0; w->queues && i < w->a.g.ndev * w->a.g.nq; i++)
		os_free(w->queues[i].exec);
	dma_space_fini(&w->space);
	os_free(w->queues);
	os_free(w->devs);
	if (w->a.sh)
		os_mem_free(w->a.sh, w->a.g.size);
	memset(w, 0, sizeof(*w));
}

/**
 * kw_mem_alloc() - allocate zeroed device memory, as a region of @dev's segment.
 * @w: the world.
 * @dev: the device.
 * @size: bytes.
 * @key: the region's key.
 * @addr: its kernel address.
 *
 * The address goes into the region table before the key is published
 * (release): an engine reads the address only after checking the key.
 *
 * Return: 0, -EINVAL, or -ENOMEM (the segment or the region table is full).
 */
int kw_mem_alloc(struct kw_world *w, uint32_t dev, uint64_t size, uint32_t *key, void **addr)
{
	struct q_dev_sh *ds;
	struct kw_dev *kd;
	uint64_t off;
	uint32_t i;

	if (dev >= w->a.g.ndev || !size)
		return -EINVAL;
	ds = q_dev(&w->a, dev);
	kd = &w->devs[dev];
	off = ALIGN(kd->seg_used, KW_REGION_ALIGN);
	if (kd->nregions == Q_MAX_REGIONS || off > kd->seg_size || size > kd->seg_size - off)
		return -ENOMEM;
	i = kd->nregions++;
	kd->seg_used = off + size;
	ds->regions[i].size = size;
	ds->regions[i].offset = off;
	ds->regions[i].registered = 0;
	os_store(&ds->mem_used, kd->seg_used, OS_RELAXED);
	*key = q_key_make(i, 1);
	*addr = kd->seg + off;
	os_store(&ds->regions[i].key, *key, OS_RELEASE);
	return 0;
}

/* The next number of (@peer, @tag) in direction @dir on device @dev. */
static int kw_seq_take(struct kw_dev *kd, int32_t peer, uint64_t tag, uint32_t dir,
		       uint64_t *seq)
{
	uint32_t i;

	for (i = 0; i < kd->nseqs; i++) {
		struct kw_seq *s = &kd->seqs[i];

		if (s->peer == peer && s->tag == tag && s->dir == dir) {
			*seq = s->next++;
			return 0;
		}
	}
	if (kd->nseqs == KW_SEQS)
		return -ENOSPC;
	kd->seqs[kd->nseqs++] = (struct kw_seq){ peer, dir, tag, 1 };
	*seq = 0;
	return 0;
}

/* Pin each dependency's slot so that it is not reused before the engine reads it. */
static int kw_pin_deps(struct kw_world *w, uint32_t dev, const struct q_desc *d)
{
	uint16_t i;

	for (i = 0; i < d->num_deps; i++) {
		uint64_t t = d->deps[i];
		int rc = 0;

		if (!q_token_gen(t) || q_token_dev(t) != dev || q_token_queue(t) >= w->a.g.nq ||
		    q_token_slot(t) >= w->a.g.depth)
			rc = -EINVAL;
		else if (!q_slot_tryget(&q_cpls(&w->a, dev, q_token_queue(t))[q_token_slot(t)],
					q_token_gen(t)))
			rc = -ESTALE;
		if (rc) {
			while (i--)
				q_slot_put(&q_cpls(&w->a, dev, q_token_queue(d->deps[i]))
					   [q_token_slot(d->deps[i])]);
			return rc;
		}
	}
	return 0;
}

/* kw_post() with an exec's function, written before the op is published. */
static int kw_post_fn(struct kw_world *w, uint32_t dev, uint32_t queue, struct q_desc *d,
		      int (*fn)(void *), void *arg, uint64_t *token)
{
	struct kw_queue *q;
	struct q_cpl *c;
	uint32_t slot, gen, i;
	uint64_t seq = 0;
	int rc;

	if (dev >= w->a.g.ndev || queue >= w->a.g.nq || d->num_deps > Q_MAX_DEPS)
		return -EINVAL;
	q = &w->queues[dev * w->a.g.nq + queue];
	for (i = 0; i <= q->mask; i++)
		if (q_slot_reusable(&q->cpl[(q->cursor + i) & q->mask]))
			break;
	if (i > q->mask)
		return -EAGAIN;
	slot = (q->cursor + i) & q->mask;
	c = &q->cpl[slot];
	os_store(&c->state, Q_SLOT_RESERVED, OS_RELAXED);
	rc = kw_pin_deps(w, dev, d);
	if (!rc && (d->kind == ACCDMA_OP_SEND || d->kind == ACCDMA_OP_RECV))
		rc = kw_seq_take(&w->devs[dev], d->peer, d->tag, d->kind, &seq);
	if (rc) {
		os_store(&c->state, Q_SLOT_FREE, OS_RELAXED);
		return rc;
	}
	q->cursor = (slot + 1) & q->mask;
	gen = (os_load(&c->gen, OS_RELAXED) + 1) ?: 1;
	d->seq = seq;
	d->order = q->order++;
	if (d->kind == ACCDMA_OP_EXEC) {
		q->exec[slot] = (struct kw_exec){ fn, arg, gen };
		d->exec = (uint64_t)gen << 32 | slot;
	}
	q->desc[slot] = *d;
	os_store(&c->gen, gen, OS_RELAXED);
	os_store(&c->status, ACCDMA_OK, OS_RELAXED);
	os_store(&c->stage, ACCDMA_STAGE_POSTED, OS_RELAXED);
	os_store(&c->cancel, 0, OS_RELAXED);
	os_store(&c->handoff, 0, OS_RELAXED);
	os_store(&c->bytes, 0, OS_RELAXED);
	os_store(&c->token, 1, OS_RELEASE); /* after the generation: q_slot_tryget() */
	os_store(&c->state, Q_SLOT_POSTED, OS_RELEASE);
	os_store(&q->sq[q->tail++ & q->mask], slot, OS_RELAXED);
	q_single_writer_add(&q->sh->submitted, 1);
	os_store(&q->sh->sq_tail, q->tail, OS_RELEASE);
	q_engine_kick(q_dev(&w->a, dev), q_queue_engine(&w->a.g, queue));
	*token = q_token_make(dev, queue, slot, gen);
	return 0;
}

/**
 * kw_post() - post one descriptor on a queue, as driver/post.c does.
 * @w: the world.
 * @dev: the queue's device.
 * @queue: the queue (one posting thread at a time).
 * @d: the descriptor: kind, peer, key, tag, offset, length, remote key and
 *     offset, deps; its seq and order are filled here.
 * @token: the op's token.
 *
 * Return: 0, -EINVAL (also for an exec: kw_post_exec()), -EAGAIN (the queue
 * is full), -ESTALE (a dependency's token was consumed), or -ENOSPC (too
 * many (peer, tag) pairs).
 */
int kw_post(struct kw_world *w, uint32_t dev, uint32_t queue, struct q_desc *d,
	    uint64_t *token)
{
	if (d->kind == ACCDMA_OP_EXEC)
		return -EINVAL;
	return kw_post_fn(w, dev, queue, d, NULL, NULL, token);
}

/**
 * kw_post_exec() - post an exec: @fn(@arg) runs on an engine thread once
 * @deps complete (a compute step in the device's timeline).
 * @w: the world.
 * @dev: the queue's device.
 * @queue: the queue.
 * @fn: the function.
 * @arg: its argument.
 * @deps: the tokens it waits for.
 * @ndeps: how many.
 * @token: the op's token.
 *
 * Return: as kw_post().
 */
int kw_post_exec(struct kw_world *w, uint32_t dev, uint32_t queue, int (*fn)(void *),
		 void *arg, const uint64_t *deps, uint16_t ndeps, uint64_t *token)
{
	struct q_desc d = { .kind = ACCDMA_OP_EXEC, .num_deps = ndeps };

	if (!fn || ndeps > Q_MAX_DEPS)
		return -EINVAL;
	memcpy(d.deps, deps, ndeps * sizeof(*deps));
	return kw_post_fn(w, dev, queue, &d, fn, arg, token);
}

/* Has @token's op completed (its slot DONE with the token's generation)? */
static struct q_cpl *kw_cpl(struct kw_world *w, uint64_t token)
{
	if (!q_token_gen(token) || q_token_dev(token) >= w->a.g.ndev ||
	    q_token_queue(token) >= w->a.g.nq || q_token_slot(token) >= w->a.g.depth)
		return NULL;
	return &q_cpls(&w->a, q_token_dev(token), q_token_queue(token))[q_token_slot(token)];
}

static int kw_done(struct q_cpl *c, uint64_t token)
{
	return os_load(&c->state, OS_ACQUIRE) == Q_SLOT_DONE &&
	       os_load(&c->gen, OS_RELAXED) == q_token_gen(token);
}

/**
 * kw_wait() - wait for an op, then consume its token.
 * @w: the world.
 * @token: the op's token.
 * @timeout_ns: the longest wait.
 * @st: the op's status.
 * @bytes: the bytes it moved.
 *
 * Sleeps on the device's completion word as driver/token.c does: count
 * itself a waiter, fence, then look and sleep until the op is done. A
 * timed-out op keeps its token (wait again, or kw_release() it).
 *
 * Return: 0, -EINVAL or -ESTALE for a bad token, -ETIMEDOUT, -EINTR.
 */
int kw_wait(struct kw_world *w, uint64_t token, uint64_t timeout_ns,
	    enum accdma_status *st, uint64_t *bytes)
{
	struct q_cpl *c = kw_cpl(w, token);
	uint64_t start = os_now_ns(), deadline = start + timeout_ns;
	struct q_dev_sh *ds;
	int rc = 0;

	if (!c)
		return -EINVAL;
	if (os_load(&c->gen, OS_RELAXED) != q_token_gen(token) || !os_load(&c->token, OS_RELAXED))
		return -ESTALE;
	ds = q_dev(&w->a, q_token_dev(token));
	/* Spin first, as driver/token.c does: an op that completes within an
	 * engine's own spin then costs no sleep and wake-up. */
	while (!kw_done(c, token) && os_now_ns() - start < w->spin_ns)
		os_cpu_relax();
	if (!kw_done(c, token)) {
		os_fetch_add(&ds->cq_waiters, 1, OS_SEQ_CST);
		q_sleep_fence(ds);
		for (;;) {
			uint32_t seq = os_load(&ds->cq_seq, OS_SEQ_CST);
			uint64_t now;

			os_fence(OS_SEQ_CST);
			if (kw_done(c, token))
				break;
			now = os_now_ns();
			if (now >= deadline) {
				rc = -ETIMEDOUT;
				break;
			}
			/* a slice at a time: no wake-up is relied on for good */
			rc = os_wait32(&ds->cq_seq, seq, min(deadline - now, 1000000ull));
			if (rc == -EINTR)
				break;
			rc = 0;
		}
		os_fetch_sub(&ds->cq_waiters, 1, OS_RELAXED);
	}
	if (rc)
		return rc;
	*st = os_load(&c->status, OS_RELAXED);
	*bytes = os_load(&c->bytes, OS_RELAXED);
	return q_slot_consume_token(c, w->a.g.nq > 1);
}

/**
 * kw_release() - give back a token without waiting: its slot is reused once
 * the op is done.
 * @w: the world.
 * @token: the op's token.
 *
 * Return: 0, -EINVAL, or -ESTALE if it was given back already.
 */
int kw_release(struct kw_world *w, uint64_t token)
{
	struct q_cpl *c = kw_cpl(w, token);

	if (!c)
		return -EINVAL;
	if (os_load(&c->gen, OS_RELAXED) != q_token_gen(token))
		return -ESTALE;
	return q_slot_consume_token(c, w->a.g.nq > 1);
}
