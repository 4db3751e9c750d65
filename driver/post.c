// SPDX-License-Identifier: MIT
/*
 * post.c - posting descriptors: the only thing a send or recv does on the host.
 *
 * Posting never waits for anything: it takes free completion slots, pins the
 * dependency slots, numbers sends/recvs for matching, writes the descriptors,
 * publishes them on the submission ring and rings the doorbell once.
 */
#include <stdlib.h>
#include <string.h>

#include "driver/internal.h"

#define POST_STACK_BATCH 64

/* -EBADF unless @q is a queue of an open world. */
static int queue_check(const struct accdma_queue *q)
{
	if (!q || q->magic != DRV_QUEUE_MAGIC || drv_world_check(q->world))
		return -EBADF;
	return 0;
}

/* The checks that need no memory: kind, peer, tag, exec function, dependency count. */
static int op_check(const struct accdma_world *w, const struct accdma_op *op, unsigned int flags)
{
	switch (op->kind) {
	case ACCDMA_OP_SEND:
	case ACCDMA_OP_RECV:
		if ((op->tag & ACCDMA_TAG_RESERVED) && !(flags & DRV_POST_INTERNAL))
			return -EINVAL;
		if (op->kind == ACCDMA_OP_RECV && op->peer == ACCDMA_ANY_SOURCE)
			break;
		/* fall through */
	case ACCDMA_OP_WRITE:
		if (op->peer < 0 || op->peer >= w->opts.num_devices)
			return -EINVAL;
		break;
	case ACCDMA_OP_EXEC:
		if (!op->fn)
			return -EINVAL;
		break;
	case ACCDMA_OP_FENCE:
	case ACCDMA_OP_AFTER_ALL:
	case ACCDMA_OP_ZERO:
		break;
	default:
		return -EINVAL;
	}
	if (op->num_deps < 0 || (op->num_deps > 0 && !op->deps))
		return -EINVAL;
	if (op->num_deps > ACCDMA_MAX_DEPS)
		return -E2BIG;
	return 0;
}

/* Take @n reusable slots; -> RESERVED only happens here (one producer per queue). */
static int reserve_slots(struct accdma_queue *q, uint32_t *slots, int n)
{
	uint32_t depth = q->mask + 1, got = 0, i;

	for (i = 0; i < depth && got < (uint32_t)n; i++) {
		uint32_t s = (q->cursor + i) & q->mask;

		if (q_slot_reusable(&q->cpl[s])) {
			atomic_store_explicit(&q->cpl[s].state, Q_SLOT_RESERVED, memory_order_relaxed);
			slots[got++] = s;
		}
	}
	if (got < (uint32_t)n) {
		while (got--)
			atomic_store_explicit(&q->cpl[slots[got]].state, Q_SLOT_FREE, memory_order_relaxed);
		return -EAGAIN;
	}
	q->cursor = (slots[n - 1] + 1) & q->mask;
	return 0;
}

/* Undo pin_deps() for the first @n dependencies. */
static void unpin(struct accdma_world *w, const accdma_token *deps, int n)
{
	for (int i = 0; i < n; i++) {
		q_slot_put(&q_cpls(&w->a, q_token_dev(deps[i]), q_token_queue(deps[i]))[q_token_slot(deps[i])]);
	}
}

/* Pin each dependency's slot so it is not reused before the engine reads it. */
static int pin_deps(struct accdma_queue *q, const struct accdma_op *op)
{
	struct accdma_world *w = q->world;

	for (int i = 0; i < op->num_deps; i++) {
		accdma_token t = op->deps[i];
		int rc = 0;

		if (t == 0 || q_token_gen(t) == 0 || q_token_queue(t) >= (uint32_t)w->opts.queues ||
		    q_token_slot(t) > q->mask || q_token_dev(t) >= (uint32_t)w->opts.num_devices)
			rc = -EINVAL;
		else if (q_token_dev(t) != q->dev)
			rc = -EXDEV;
		else {
			if (!q_slot_tryget(&q_cpls(&w->a, q->dev, q_token_queue(t))[q_token_slot(t)], q_token_gen(t)))
				rc = -ESTALE;
		}
		if (rc) {
			unpin(w, op->deps, i);
			return rc;
		}
	}
	return 0;
}

/* Write the descriptor, then reset the completion record and publish it
 * POSTED with a new generation (release: the engine reads after it). The
 * pins (refs) are left alone: a stale pin attempt may be backing out.
 * Return: the new generation. */
static uint32_t fill(struct accdma_queue *q, uint32_t slot, const struct accdma_op *op, uint64_t seq,
		     unsigned int flags)
{
	struct q_desc *d = &q->desc[slot];
	struct q_cpl *c = &q->cpl[slot];
	uint32_t gen = atomic_load_explicit(&c->gen, memory_order_relaxed) + 1;

	gen = gen ? gen : 1;
	d->kind = (uint16_t)op->kind;
	d->flags = (flags & DRV_POST_INTERNAL) ? Q_DF_INTERNAL : 0;
	if (seq & DRV_SEQ_DEFER) { /* the engine numbers it (seq.c, "any source") */
		d->flags |= Q_DF_DEFER;
		seq &= ~DRV_SEQ_DEFER;
	}
	d->num_deps = (uint16_t)op->num_deps;
	d->peer = op->peer;
	d->key = op->key;
	d->tag = op->tag;
	d->seq = seq;
	d->offset = op->offset;
	d->length = op->length;
	d->remote_key = op->remote_key;
	d->remote_offset = op->remote_offset;
	d->order = q->order++;
	d->exec = 0;
	if (op->kind == ACCDMA_OP_EXEC) { /* published with the slot (release, below) */
		q->exec[slot] = (struct drv_exec){ op->fn, op->arg, gen };
		d->exec = (uint64_t)gen << 32 | slot;
	}
	if (op->num_deps)
		memcpy(d->deps, op->deps, (size_t)op->num_deps * sizeof(*d->deps));

	atomic_store_explicit(&c->gen, gen, memory_order_relaxed);
	atomic_store_explicit(&c->status, ACCDMA_OK, memory_order_relaxed);
	atomic_store_explicit(&c->stage, ACCDMA_STAGE_POSTED, memory_order_relaxed);
	atomic_store_explicit(&c->cancel, 0, memory_order_relaxed);
	atomic_store_explicit(&c->handoff, 0, memory_order_relaxed);
	atomic_store_explicit(&c->src, op->peer, memory_order_relaxed);
	atomic_store_explicit(&c->bytes, 0, memory_order_relaxed);
	/* after the generation: q_slot_tryget() reads the token first */
	atomic_store_explicit(&c->token, 1, memory_order_release);
	atomic_store_explicit(&c->state, Q_SLOT_POSTED, memory_order_release);
	return gen;
}

/**
 * drv_post() - accdma_post() with library-internal @flags (DRV_POST_INTERNAL).
 */
int drv_post(struct accdma_queue *q, const struct accdma_op *ops, int count, accdma_token *tokens,
	     unsigned int flags)
{
	uint32_t stack_slots[POST_STACK_BATCH], *slots = stack_slots;
	uint64_t stack_seqs[POST_STACK_BATCH], *seqs = stack_seqs;
	struct accdma_world *w;
	int rc, i, pinned = 0, small_send = 0, other_send = 0, any_deps = 0, idle = 0;
	uint32_t waits;

	rc = queue_check(q);
	if (rc)
		return rc;
	w = q->world;
	if (!ops || count <= 0 || (uint32_t)count > q->mask + 1)
		return -EINVAL;
	for (i = 0; i < count; i++) {
		rc = op_check(w, &ops[i], flags);
		if (rc)
			return rc;
		any_deps |= ops[i].num_deps;
		if (ops[i].kind != ACCDMA_OP_SEND)
			continue;
		if (!ops[i].num_deps && ops[i].length <= w->a.g.eager_max)
			small_send = 1;
		else
			other_send = 1; /* rules out reading the post inline */
	}
	if (count > POST_STACK_BATCH) {
		slots = malloc((size_t)count * sizeof(*slots));
		seqs = malloc((size_t)count * sizeof(*seqs));
		rc = -ENOMEM;
		if (!slots || !seqs)
			goto out;
	}
	rc = reserve_slots(q, slots, count);
	if (rc && !w->threaded && drv_poll(w))
		rc = reserve_slots(q, slots, count); /* a polled world's slots free only while polled */
	if (rc)
		goto out;
	for (pinned = 0; any_deps && pinned < count; pinned++) { /* most posts have none */
		rc = pin_deps(q, &ops[pinned]);
		if (rc)
			goto unwind;
	}
	/* Numbered last: nothing after this fails, so no number is taken for an op never posted. */
	rc = drv_seq_number(&w->devs[q->dev].seqs, ops, count, seqs);
	if (rc)
		goto unwind;
	for (i = 0; i < count; i++) {
		uint32_t gen = fill(q, slots[i], &ops[i], seqs[i], flags);

		atomic_store_explicit(&q->sq[q->tail++ & q->mask], slots[i], memory_order_relaxed);
		if (tokens)
			tokens[i] = q_token_make(q->dev, q->index, slots[i], gen);
		else
			accdma_release(w, q_token_make(q->dev, q->index, slots[i], gen));
	}
	/* One producer per queue: a plain add, no locked instruction. */
	q_single_writer_add(&q->sh->submitted, (uint64_t)count);
	atomic_store_explicit(&q->sh->sq_tail, q->tail, memory_order_release);
	/* Where waiters run engine passes, the poster reads an idle queue's new
	 * ops itself when they carry a small send and no other send (a large
	 * copy is an engine's work, and a rendezvous round got slower read so),
	 * so the small send reaches its peer now, not at the next pass: when
	 * someone had to wait for an op since the last post read so.
	 * A thread that posts and then waits for it has its send on the critical
	 * path; one whose waits find their ops done streams, and a pass reading
	 * its posts as a batch serves it better (one message at a time hands the
	 * peer one line at a time). */
	waits = atomic_load_explicit(&w->waits, memory_order_relaxed);
	if (small_send && !other_send && (w->host_poll || !w->threaded) && waits != q->waits_at_submit &&
	    fw_device_submit(w->devs[q->dev].fw, q->index, (uint32_t)count, &idle) > 0)
		q->waits_at_submit = waits;
	/* Polled devices have no engine thread to wake; nor need one whose ops
	 * this thread just ran to the end (a wake-up and a spin for nothing). */
	if (w->threaded && !idle)
		q_engine_kick(q_dev(&w->a, q->dev), q_queue_engine(&w->a.g, q->index));
	rc = count;
	goto out;
unwind:
	for (i = 0; any_deps && i < pinned; i++)
		unpin(w, ops[i].deps, ops[i].num_deps);
	for (i = 0; i < count; i++)
		atomic_store_explicit(&q->cpl[slots[i]].state, Q_SLOT_FREE, memory_order_relaxed);
out:
	if (slots != stack_slots)
		free(slots);
	if (seqs != stack_seqs)
		free(seqs);
	return rc;
}

/**
 * drv_free_slots() - how many ops @q can take now (posting from this thread
 * can only see it grow).
 */
int drv_free_slots(struct accdma_queue *q)
{
	int n = 0;

	for (uint32_t s = 0; s <= q->mask; s++)
		n += q_slot_reusable(&q->cpl[s]);
	return n;
}

int accdma_post(accdma_queue *q, const struct accdma_op *ops, int count, accdma_token *tokens)
{
	int rc;

	q_trace(Q_TRACE_POST);
	rc = drv_post(q, ops, count, tokens, 0);
	q_trace(Q_TRACE_POSTED);
	return rc;
}

/* The single-op calls: 0 rather than the count. */
static int post_one(accdma_queue *q, const struct accdma_op *op, accdma_token *token)
{
	int rc = drv_post(q, op, 1, token, 0);

	return rc < 0 ? rc : 0;
}

int accdma_send(accdma_queue *q, int peer, uint64_t tag, accdma_key key, uint64_t offset,
		uint64_t length, const accdma_token *deps, int num_deps, accdma_token *token)
{
	struct accdma_op op = { .kind = ACCDMA_OP_SEND, .peer = peer, .tag = tag, .key = key,
				.offset = offset, .length = length, .deps = deps, .num_deps = num_deps };

	return post_one(q, &op, token);
}

int accdma_recv(accdma_queue *q, int peer, uint64_t tag, accdma_key key, uint64_t offset,
		uint64_t length, const accdma_token *deps, int num_deps, accdma_token *token)
{
	struct accdma_op op = { .kind = ACCDMA_OP_RECV, .peer = peer, .tag = tag, .key = key,
				.offset = offset, .length = length, .deps = deps, .num_deps = num_deps };

	return post_one(q, &op, token);
}

int accdma_write(accdma_queue *q, int peer, accdma_key key, uint64_t offset, uint64_t length,
		 accdma_key remote_key, uint64_t remote_offset, const accdma_token *deps, int num_deps,
		 accdma_token *token)
{
	struct accdma_op op = { .kind = ACCDMA_OP_WRITE, .peer = peer, .key = key, .offset = offset,
				.length = length, .remote_key = remote_key,
				.remote_offset = remote_offset, .deps = deps, .num_deps = num_deps };

	return post_one(q, &op, token);
}

int accdma_fence(accdma_queue *q, const accdma_token *deps, int num_deps, accdma_token *token)
{
	struct accdma_op op = { .kind = ACCDMA_OP_FENCE, .deps = deps, .num_deps = num_deps };

	return post_one(q, &op, token);
}

int accdma_exec(accdma_queue *q, accdma_exec_fn fn, void *arg, const accdma_token *deps,
		int num_deps, accdma_token *token)
{
	struct accdma_op op = { .kind = ACCDMA_OP_EXEC, .fn = fn, .arg = arg, .deps = deps,
				.num_deps = num_deps };

	return post_one(q, &op, token);
}

int accdma_after_all(accdma_queue *q, const accdma_token *deps, int num_deps, accdma_token *token)
{
	struct accdma_op op = { .kind = ACCDMA_OP_AFTER_ALL, .deps = deps, .num_deps = num_deps };

	return post_one(q, &op, token);
}

/**
 * drv_exec_run() - the engines' host call (struct fw_host): run the exec
 * that @handle names on queue @queue of device @dev.
 * @ctx: the world. The handle came from a descriptor in the arena, which a
 * peer process may have written: it names a slot of this queue and the
 * generation it was posted with, or nothing runs.
 * Return: 0 if the function returned 0, 1 if it failed, -EINVAL for a
 * handle that names no exec posted here.
 */
int drv_exec_run(void *ctx, uint32_t dev, uint32_t queue, uint64_t handle)
{
	struct accdma_world *w = ctx;
	struct accdma_queue *q;
	const struct drv_exec *e;
	uint32_t slot = (uint32_t)handle;

	if (dev >= (uint32_t)w->opts.num_devices || queue >= (uint32_t)w->opts.queues)
		return -EINVAL;
	q = &w->queues[dev * (uint32_t)w->opts.queues + queue];
	if (!q->exec || slot > q->mask)
		return -EINVAL;
	e = &q->exec[slot];
	if (e->gen != (uint32_t)(handle >> 32) || !e->fn)
		return -EINVAL;
	return e->fn(e->arg) != 0;
}
