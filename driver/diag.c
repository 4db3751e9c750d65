// SPDX-License-Identifier: MIT
/*
 * diag.c - what is stuck, and why: pending-op listings, one-line
 * descriptions and wait-for cycles between devices.
 *
 * Everything here reads descriptors (fixed while their slot is in use) and
 * the stage each engine publishes; it never stops the engines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver/internal.h"

/* How long accdma_stall_report() watches the engines' heartbeats. */
#define DRV_STALL_SAMPLE_MS 10

/* Fill @info from a slot in use; returns 0, or -ESTALE if the slot is free. */
static int slot_info(struct accdma_world *w, uint32_t dev, uint32_t qi, uint32_t slot,
		     struct accdma_op_info *info)
{
	struct q_cpl *c = &q_cpls(&w->a, dev, qi)[slot];
	struct q_desc *d = &q_descs(&w->a, dev, qi)[slot];
	uint32_t state = atomic_load_explicit(&c->state, memory_order_acquire);
	uint32_t gen = atomic_load_explicit(&c->gen, memory_order_acquire);

	/* The descriptor may be another process's (and scribbled): each field
	 * that decides where to look is read once and checked. */
	uint16_t kind = d->kind;
	int32_t peer = d->peer;
	uint64_t tag = d->tag, seq = d->seq;

	if (state < Q_SLOT_POSTED)
		return -ESTALE;
	memset(info, 0, sizeof(*info));
	info->token = q_token_make(dev, qi, slot, gen);
	info->kind = kind;
	info->device = (int)dev;
	info->queue = (int)qi;
	info->peer = -1;
	info->tag = 0;
	info->seq = seq;
	info->bytes = d->length;
	info->stage = state == Q_SLOT_DONE ? ACCDMA_STAGE_DONE : atomic_load(&c->stage);
	/* The engine writes the stage DONE just before the state: not done yet. */
	if (state != Q_SLOT_DONE && info->stage == ACCDMA_STAGE_DONE)
		info->stage = ACCDMA_STAGE_RUNNING;
	info->status = state == Q_SLOT_DONE ? atomic_load(&c->status) : ACCDMA_OK;
	info->moved = state == Q_SLOT_DONE ? atomic_load(&c->bytes) : 0;
	info->peer_posted = -1;
	if (kind == ACCDMA_OP_SEND || kind == ACCDMA_OP_RECV || kind == ACCDMA_OP_WRITE) {
		info->peer = peer;
		info->tag = tag;
	}
	/* The matching op is posted once the peer numbered that many ops the other way. */
	if ((kind == ACCDMA_OP_SEND || kind == ACCDMA_OP_RECV) && peer >= w->first_local &&
	    peer < w->first_local + w->nlocal) {
		uint32_t other = kind == ACCDMA_OP_SEND ? ACCDMA_OP_RECV : ACCDMA_OP_SEND;

		info->peer_posted = drv_seq_peek(&w->devs[peer].seqs, (int32_t)dev, tag, other) > seq;
	}
	for (uint16_t i = 0; i < d->num_deps && i < ACCDMA_MAX_DEPS; i++) {
		uint64_t t = d->deps[i];
		struct q_cpl *dc;

		if (q_token_queue(t) >= (uint32_t)w->opts.queues || q_token_slot(t) >= w->opts.queue_depth)
			continue;
		dc = &q_cpls(&w->a, dev, q_token_queue(t))[q_token_slot(t)];
		if (atomic_load(&dc->state) != Q_SLOT_DONE || atomic_load(&dc->gen) != q_token_gen(t))
			info->deps[info->num_deps++] = t;
	}
	return 0;
}

int accdma_op_info(accdma_world *w, accdma_token t, struct accdma_op_info *info)
{
	struct q_queue_sh *qs;
	struct q_cpl *c;
	int rc;

	if (!info)
		return drv_world_check(w) ? -EBADF : -EINVAL;
	rc = drv_token_cpl(w, t, &qs, &c);
	if (rc)
		return rc;
	return slot_info(w, q_token_dev(t), q_token_queue(t), q_token_slot(t), info);
}

static int by_order(const void *a, const void *b, void *arg)
{
	const struct accdma_op_info *x = a, *y = b;
	struct accdma_world *w = arg;
	uint64_t ox = q_descs(&w->a, (uint32_t)x->device, (uint32_t)x->queue)[q_token_slot(x->token)].order;
	uint64_t oy = q_descs(&w->a, (uint32_t)y->device, (uint32_t)y->queue)[q_token_slot(y->token)].order;

	if (x->queue != y->queue)
		return x->queue - y->queue;
	return ox < oy ? -1 : ox > oy;
}

int accdma_pending(accdma_world *w, int dev, struct accdma_op_info *infos, int max)
{
	struct accdma_op_info info;
	int n = 0, rc = drv_dev_check(w, dev);

	if (rc)
		return rc;
	if (max < 0 || (max > 0 && !infos))
		return -EINVAL;
	for (uint32_t qi = 0; qi < (uint32_t)w->opts.queues; qi++)
		for (uint32_t s = 0; s < w->opts.queue_depth; s++) {
			if (slot_info(w, (uint32_t)dev, qi, s, &info) || info.stage == ACCDMA_STAGE_DONE)
				continue;
			if (n < max)
				infos[n] = info;
			n++;
		}
	if (n > 1 && max > 1) /* qsort_r's array must not be NULL, even for 0 elements */
		qsort_r(infos, (size_t)(n < max ? n : max), sizeof(*infos), by_order, w);
	/* Ops the engine has not read yet, behind a pending fence of their queue, are blocked by it. */
	for (int k = 1; k < n && k < max; k++) {
		struct accdma_op_info *p = &infos[k - 1], *i = &infos[k];

		if (i->stage == ACCDMA_STAGE_POSTED && p->queue == i->queue &&
		    (p->stage == ACCDMA_STAGE_BLOCKED ||
		     (p->kind == ACCDMA_OP_FENCE && p->stage != ACCDMA_STAGE_POSTED)))
			i->stage = ACCDMA_STAGE_BLOCKED;
	}
	return n;
}

int accdma_op_describe(const struct accdma_op_info *i, char *buf, size_t size)
{
	char deps[256] = "";
	size_t used = 0;
	const char *dir = i->kind == ACCDMA_OP_RECV ? "<-" : "->";

	for (int k = 0; k < i->num_deps && used < sizeof(deps); k++)
		used += (size_t)snprintf(deps + used, sizeof(deps) - used, "%s%#llx", k ? "," : " on [",
					 (unsigned long long)i->deps[k]);
	if (i->num_deps && used < sizeof(deps))
		snprintf(deps + used, sizeof(deps) - used, "]");
	if (i->kind == ACCDMA_OP_RECV && i->peer == ACCDMA_ANY_SOURCE)
		return snprintf(buf, size,
				"%s dev %d from any source tag %llu %llu bytes (queue %d, token %#llx): %s%s",
				accdma_op_kind_str(i->kind), i->device,
				(unsigned long long)(i->tag & ~ACCDMA_TAG_RESERVED), (unsigned long long)i->bytes,
				i->queue, (unsigned long long)i->token,
				i->stage == ACCDMA_STAGE_DONE ? accdma_status_str(i->status)
							      : accdma_op_stage_str(i->stage),
				deps);
	if (i->kind == ACCDMA_OP_SEND || i->kind == ACCDMA_OP_RECV || i->kind == ACCDMA_OP_WRITE)
		return snprintf(buf, size,
				"%s dev %d %s dev %d tag %llu seq %llu %llu bytes (queue %d, token %#llx): %s%s%s%s",
				accdma_op_kind_str(i->kind), i->device, dir, i->peer,
				(unsigned long long)(i->tag & ~ACCDMA_TAG_RESERVED),
				(unsigned long long)i->seq, (unsigned long long)i->bytes, i->queue,
				(unsigned long long)i->token,
				i->stage == ACCDMA_STAGE_DONE ? accdma_status_str(i->status)
							      : accdma_op_stage_str(i->stage),
				deps,
				i->stage != ACCDMA_STAGE_PEER ? ""
				: i->peer_posted == 0 ? " (the peer has not posted it)"
				: i->peer_posted == 1 ? " (posted on the peer, not ready there)" : "",
				(i->tag & ACCDMA_TAG_RESERVED) ? " [barrier]" : "");
	return snprintf(buf, size, "%s dev %d %llu bytes (queue %d, token %#llx): %s%s",
			accdma_op_kind_str(i->kind), i->device, (unsigned long long)i->bytes, i->queue,
			(unsigned long long)i->token,
			i->stage == ACCDMA_STAGE_DONE ? accdma_status_str(i->status)
						      : accdma_op_stage_str(i->stage),
			deps);
}

/*
 * Wait-for graph between devices: A -> B when A has a send/recv with peer B
 * that is ready and waiting for its match. The match is then missing on B:
 * not posted, or held back by B's own dependencies. A cycle is a set of
 * devices none of which can move first. Every device's queues are in the
 * arena, so over shm the graph takes in the other processes' ops too; what
 * their descriptors say is read once and checked (slot_info()), and a peer
 * out of range draws no edge.
 */
static int build_edges(struct accdma_world *w, uint8_t *edge, int n)
{
	struct accdma_op_info i;
	int any = 0;

	for (int d = 0; d < n; d++)
		for (uint32_t qi = 0; qi < (uint32_t)w->opts.queues; qi++)
			for (uint32_t s = 0; s < w->opts.queue_depth; s++) {
				if (slot_info(w, (uint32_t)d, qi, s, &i) || i.stage != ACCDMA_STAGE_PEER)
					continue;
				if ((i.kind == ACCDMA_OP_SEND || i.kind == ACCDMA_OP_RECV) && i.peer >= 0 &&
				    i.peer < n && i.peer != d) {
					edge[(size_t)d * (size_t)n + (size_t)i.peer] = 1;
					any = 1;
				}
			}
	return any;
}

static int dfs(const uint8_t *edge, int n, int v, uint8_t *color, int *stack, int depth, int *out,
	       int max)
{
	color[v] = 1;
	stack[depth] = v;
	for (int u = 0; u < n; u++) {
		if (!edge[(size_t)v * (size_t)n + (size_t)u])
			continue;
		if (color[u] == 1) {
			int start = depth, len;

			while (stack[start] != u)
				start--;
			len = depth - start + 1;
			for (int k = 0; k < len && k < max; k++)
				out[k] = stack[start + k];
			return len;
		}
		if (color[u] == 0) {
			int len = dfs(edge, n, u, color, stack, depth + 1, out, max);

			if (len)
				return len;
		}
	}
	color[v] = 2;
	return 0;
}

int accdma_find_cycle(accdma_world *w, int *devs, int max)
{
	int n, len = 0;
	uint8_t *edge, *color;
	int *stack;

	if (drv_world_check(w))
		return -EBADF;
	if (!devs || max <= 0)
		return -EINVAL;
	n = w->opts.num_devices;
	edge = calloc((size_t)n * (size_t)n, 1);
	color = calloc((size_t)n, 1);
	stack = calloc((size_t)n, sizeof(int));
	if (!edge || !color || !stack) {
		len = -ENOMEM;
		goto out;
	}
	if (build_edges(w, edge, n) > 0)
		for (int v = 0; v < n && !len; v++)
			if (!color[v])
				len = dfs(edge, n, v, color, stack, 0, devs, max);
out:
	free(edge);
	free(color);
	free(stack);
	return len;
}

/* Each engine of local device @dev: asleep or not, how many passes it (or a
 * host polling for it) ran between @before and now, and its late wake-ups
 * and naps beside polling hosts. */
static void engines_report(struct accdma_world *w, uint32_t dev, const uint64_t *before, FILE *f)
{
	struct q_dev_sh *ds = q_dev(&w->a, dev);

	for (uint32_t e = 0; e < w->a.g.engines; e++) {
		uint64_t hb = atomic_load_explicit(&ds->engines[e].heartbeats, memory_order_relaxed);
		uint64_t late = atomic_load(&ds->engines[e].late_wakes);
		uint64_t naps = atomic_load(&ds->engines[e].naps);

		fprintf(f, "  engine %u: %s, %llu passes in all, %llu in the last %d ms, %llu late wake-up%s, "
			   "%llu nap%s\n",
			e,
			!atomic_load(&ds->engines[e].running)  ? "not running"
			: atomic_load(&ds->engines[e].sleeping) ? "asleep on its doorbell"
								 : "awake",
			(unsigned long long)hb, (unsigned long long)(hb - before[e]),
			DRV_STALL_SAMPLE_MS,
			(unsigned long long)late, late == 1 ? "" : "s", (unsigned long long)naps,
			naps == 1 ? "" : "s");
	}
}

/* The oldest message each sender put in local device @dev's eager rings that
 * no recv has taken yet, if it has landed: a recv waiting for it means the
 * receiver's engine has not looked (the ring's consumed mark stops at it). */
static void rings_report(struct accdma_world *w, uint32_t dev, FILE *f)
{
	uint32_t slots = w->a.g.eager_slots;

	if (!slots)
		return;
	for (uint32_t src = 0; src < w->a.g.ndev; src++) {
		struct q_eager_ring *ring = q_eager_ring(&w->a, dev, src);
		uint32_t pos = atomic_load_explicit(&ring->done, memory_order_acquire), len;
		const struct q_eager_slot *sl = &ring->slots[pos & (slots - 1)];
		uint64_t tag, seq;

		if (atomic_load_explicit(&sl->stamp, memory_order_acquire) != q_eager_stamp(pos))
			continue;
		/* each read an acquire, so that the second look at the consumed
		 * mark comes after them: if the message was taken meanwhile, the
		 * sender may be writing a later lap's payload over the slot, and
		 * what was read says nothing */
		len = __atomic_load_n(&sl->len, __ATOMIC_ACQUIRE);
		tag = __atomic_load_n(&sl->tag, __ATOMIC_ACQUIRE);
		seq = __atomic_load_n(&sl->seq, __ATOMIC_ACQUIRE);
		if (atomic_load_explicit(&ring->done, memory_order_acquire) != pos)
			continue;
		fprintf(f, "  eager ring from dev %u: a message landed and not taken: tag %llu seq %llu, "
			   "%u bytes (position %u)\n",
			src, (unsigned long long)tag, (unsigned long long)seq, len, pos);
	}
}

int accdma_stall_report(accdma_world *w, void *out)
{
	FILE *f = out;
	int cap, total = 0, cyc[64], len;
	struct accdma_op_info *infos;
	uint64_t *before, late;
	char line[512];

	if (drv_world_check(w))
		return -EBADF;
	if (!f)
		return -EINVAL;
	cap = (int)((uint32_t)w->opts.queues * w->opts.queue_depth);
	infos = malloc((size_t)cap * sizeof(*infos));
	before = calloc((size_t)w->nlocal * Q_MAX_ENGINES, sizeof(*before));
	if (!infos || !before) {
		free(infos);
		free(before);
		return -ENOMEM;
	}
	/* Whether the engines still run passes: their heartbeats over a short while. */
	for (int d = 0; d < w->nlocal; d++)
		for (uint32_t e = 0; e < w->a.g.engines; e++)
			before[d * Q_MAX_ENGINES + e] = atomic_load_explicit(
				&q_dev(&w->a, (uint32_t)(w->first_local + d))->engines[e].heartbeats,
				memory_order_relaxed);
	nanosleep(&(struct timespec){ 0, DRV_STALL_SAMPLE_MS * 1000000L }, NULL);
	for (int d = w->first_local; d < w->first_local + w->nlocal; d++) {
		int cnt = accdma_pending(w, d, infos, cap);

		if (cnt <= 0)
			continue;
		fprintf(f, "device %d: %d pending op%s\n", d, cnt, cnt == 1 ? "" : "s");
		for (int k = 0; k < cnt && k < cap; k++) {
			accdma_op_describe(&infos[k], line, sizeof(line));
			fprintf(f, "  %s\n", line);
		}
		engines_report(w, (uint32_t)d, &before[(d - w->first_local) * Q_MAX_ENGINES], f);
		rings_report(w, (uint32_t)d, f);
		total += cnt;
	}
	late = atomic_load(&w->late_waits);
	if (late)
		fprintf(f, "host waits never woken (found done after a timed sleep): %llu\n",
			(unsigned long long)late);
	free(infos);
	free(before);
	len = accdma_find_cycle(w, cyc, 64);
	if (len > 0) {
		fprintf(f, "wait-for cycle:");
		for (int k = 0; k < len && k < 64; k++)
			fprintf(f, " dev %d ->", cyc[k]);
		fprintf(f, " dev %d\n", cyc[0]);
	}
	return total;
}

/**
 * drv_log_timeout() - a wait on @t timed out after @ms: with log_level >= 1,
 * name the stuck op and any wait-for cycle on stderr. Not for a wait shorter
 * than DRV_LOG_TIMEOUT_MIN_MS: that is a caller polling with a deadline of
 * its own (a progress loop, a grace period), and a line per look would bury
 * the ops that really are stuck.
 * @w: the world. @t: the token waited for. @ms: how long.
 */
void drv_log_timeout(struct accdma_world *w, accdma_token t, int64_t ms)
{
	struct accdma_op_info info;
	char line[512];
	int cycle[16], len;

	if (w->opts.log_level < 1 || ms < DRV_LOG_TIMEOUT_MIN_MS || accdma_op_info(w, t, &info))
		return;
	accdma_op_describe(&info, line, sizeof(line));
	fprintf(stderr, "accdma: wait timed out after %lld ms: %s\n", (long long)ms, line);
	len = accdma_find_cycle(w, cycle, 16);
	if (len > 0) {
		fprintf(stderr, "accdma: devices waiting on each other:");
		for (int i = 0; i < len && i < 16; i++)
			fprintf(stderr, " %d ->", cycle[i]);
		fprintf(stderr, " %d%s\n", cycle[0], len > 16 ? " (cycle shortened)" : "");
	}
}
