/* SPDX-License-Identifier: MIT */
/*
 * run.c - the posting loop.
 *
 * One host thread drives every device of the world that this process owns:
 * all of them for the local transport, its own for shm (accdma-run starts one
 * process per device; the others' devices are left out here, their processes
 * post their parts, and bw_sync_ranks() lines the runs up). Each device keeps up to `win` iterations
 * in flight; iteration k uses buffer slot k % win, so a slot is reused only
 * after the iteration that used it before has been waited on: no two ops in
 * flight touch the same bytes. An iteration's ops go out with one doorbell
 * (accdma_post) unless an op depends on one in the same batch (tokens only
 * exist once posted), and --post-list batches several iterations per doorbell.
 * Before posting iteration k on a device the host waits (accdma_wait_all) on
 * that device's iteration k - win. Iteration k is posted on every device
 * before any device waits on it, so matching peers are always posted. Sync
 * mode, one iteration at a time with a sync after each send and recv, is
 * sync.c's; the context and its buffers are ctx.c's.
 *
 * Verification: when the last iteration is posted, each device first stamps
 * its source slot with a fresh pattern and zeroes its destination slot (both
 * free at that point), and after the drain the destinations are compared with
 * what the senders stamped. The time spent stamping is not counted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

int bw_sync_ranks(accdma_world *w, int64_t timeout_ms)
{
	accdma_token tok[64];
	accdma_queue *q;
	int first, n = accdma_world_local_devices(w, &first), d, rc;

	if (n < 0)
		return n;
	if (n >= accdma_world_size(w))
		return 0;
	if (n > 64)
		return -E2BIG;
	for (d = 0; d < n; d++) {
		rc = accdma_queue_get(w, first + d, 0, &q);
		if (!rc)
			rc = accdma_barrier(q, NULL, 0, &tok[d]);
		if (rc) {
			fprintf(stderr, "accdma-bw: barrier on device %d: %s\n", first + d,
				strerror(-rc));
			return rc;
		}
	}
	rc = accdma_wait_all(w, tok, n, timeout_ms, NULL);
	if (rc)
		fprintf(stderr, "accdma-bw: waiting for the other ranks: %s\n", strerror(-rc));
	return rc;
}

int bw_fail_status(struct bw_ctx *c, int d, long iter, int j, enum accdma_status st)
{
	const struct bw_opdesc *od = &c->dev[d].dp->ops[j];

	fprintf(stderr,
		"accdma-bw: device %d iteration %ld: %s (peer %d, %llu bytes) completed %s\n", d,
		iter, accdma_op_kind_str(od->kind), od->peer, (unsigned long long)c->bytes,
		accdma_status_str(st));
	return -1;
}

/* Report a failed wait on @n iterations of device @d from @first. Return: -1. */
static int wait_failed(const struct bw_ctx *c, int d, long first, long n, int rc)
{
	fprintf(stderr, "accdma-bw: device %d: waiting on iterations %ld..%ld (%llu bytes): %s\n", d,
		first, first + n - 1, (unsigned long long)c->bytes, strerror(-rc));
	if (rc == -ETIMEDOUT)
		accdma_stall_report(c->w, stderr);
	return -1;
}

/*
 * Wait on device @d's @count oldest iterations in flight. A device's tokens
 * are laid out densely (its own ops per iteration), so consecutive iterations
 * are one accdma_wait_all call (two where the ring wraps).
 */
static int wait_iters(struct bw_ctx *c, int d, long count)
{
	struct bw_devstate *ds = &c->dev[d];
	int per = ds->dp->nops, j, rc;

	if (count > ds->head - ds->tail)
		count = ds->head - ds->tail;
	while (count > 0) {
		int slot = slot_of(c, ds->tail);
		long n = count < c->win - slot ? count : c->win - slot;
		accdma_token *t = &ds->tok[(size_t)slot * per];

		rc = accdma_wait_all(c->w, t, (int)(n * per), c->o->timeout_ms, ds->st);
		if (rc)
			return wait_failed(c, d, ds->tail, n, rc);
		for (j = 0; j < n * per; j++)
			if (ds->st[j] != ACCDMA_OK)
				return bw_fail_status(c, d, ds->tail + j / per, j % per, ds->st[j]);
		for (j = 0; j < n; j++)
			ds->ntok[slot + j] = 0;
		ds->tail += n;
		count -= n;
	}
	return 0;
}

/* wait_iters() of one iteration of a device with no dependencies: the
 * latency loop's and a one-iteration doorbell's path, which is all on the
 * measured round (the general one costs ~100 instructions a round more). */
static inline int wait_one_direct(struct bw_ctx *c, int d)
{
	struct bw_devstate *ds = &c->dev[d];
	int per = ds->dp->nops, slot = slot_of(c, ds->tail), j, rc;

	rc = accdma_wait_all(c->w, &ds->tok[(size_t)slot * per], per, c->o->timeout_ms, ds->st);
	if (rc)
		return wait_failed(c, d, ds->tail, 1, rc);
	for (j = 0; j < per; j++)
		if (ds->st[j] != ACCDMA_OK)
			return bw_fail_status(c, d, ds->tail, j, ds->st[j]);
	ds->tail++;
	return 0;
}

static int wait_oldest(struct bw_ctx *c, int d)
{
	return c->dev[d].nodeps ? wait_one_direct(c, d) : wait_iters(c, d, 1);
}

/* Post @n ops of device @d with one doorbell, their tokens into @out; a full
 * queue waits on the oldest iteration not being posted now. */
static int post_ops(struct bw_ctx *c, int d, const struct accdma_op *ops, int n, accdma_token *out)
{
	struct bw_devstate *ds = &c->dev[d];
	int rc;

	while ((rc = accdma_post(ds->q, ops, n, out)) == -EAGAIN) {
		/* queue full: wait on the oldest iteration not being posted now */
		if (ds->tail >= c->first_iter) {
			fprintf(stderr, "accdma-bw: queue of device %d full with only the current "
					"batch in flight; raise --queue-depth\n", d);
			return -1;
		}
		if (wait_oldest(c, d))
			return -1;
	}
	if (rc < 0) {
		fprintf(stderr, "accdma-bw: device %d: accdma_post of %d ops: %s\n", d, n, strerror(-rc));
		return -1;
	}
	return 0;
}

/* Post the ops gathered so far with one doorbell. */
int bw_flush(struct bw_ctx *c, int d)
{
	struct bw_devstate *ds = &c->dev[d];
	int i;

	if (!c->nb)
		return 0;
	if (post_ops(c, d, c->ops, c->nb, c->out))
		return -1;
	for (i = 0; i < c->nb; i++) {
		int slot = c->slot_of[i];
		ds->tok[(size_t)slot * ds->dp->nops + ds->ntok[slot]++] = c->out[i];
	}
	c->nb = 0;
	return 0;
}

/* Add ops [@j0, @j1) of iteration @it of device @d to the batch; an op that
 * depends on one not posted yet flushes the batch first. */
int bw_add_ops(struct bw_ctx *c, int d, long it, int j0, int j1)
{
	struct bw_devstate *ds = &c->dev[d];
	const struct bw_devplan *dp = ds->dp;
	int slot = slot_of(c, it), j;
	size_t base = (size_t)slot * dp->nops;

	for (j = j0; j < j1; j++) {
		const struct bw_opdesc *od = &dp->ops[j];
		struct accdma_op *op;

		if (od->dep >= 0 && od->dep >= ds->ntok[slot] && bw_flush(c, d))
			return -1;
		op = &c->ops[c->nb];
		*op = ds->tmpl[base + (size_t)j];
		if (od->dep >= 0) {
			c->deps[c->nb] = ds->tok[base + (size_t)od->dep];
			op->deps = &c->deps[c->nb];
			op->num_deps = 1;
		}
		c->slot_of[c->nb++] = slot;
	}
	return 0;
}

/* Iterations with no dependencies: their ops are the templates as they are,
 * posted from where they lie, tokens written straight into place (consecutive
 * iterations are consecutive slots: one post, two where the window wraps). */
static int post_direct(struct bw_ctx *c, int d, long k, int b)
{
	struct bw_devstate *ds = &c->dev[d];
	int per = ds->dp->nops;

	c->first_iter = k;
	while (b > 0) {
		int slot = slot_of(c, k), n = b < c->win - slot ? b : c->win - slot;
		size_t base = (size_t)slot * (size_t)per;

		ds->head = k + n;
		if (post_ops(c, d, &ds->tmpl[base], n * per, &ds->tok[base]))
			return -1;
		for (int j = 0; j < n; j++)
			ds->ntok[slot + j] = per;
		k += n;
		b -= n;
	}
	return 0;
}

/* post_direct() of one iteration: all there is between a wait's return and
 * the next post in the latency loop. */
static inline int post_one_direct(struct bw_ctx *c, int d, long k)
{
	struct bw_devstate *ds = &c->dev[d];
	int per = ds->dp->nops;
	size_t base = (size_t)slot_of(c, k) * (size_t)per;

	c->first_iter = k;
	ds->head = k + 1;
	if (accdma_post(ds->q, &ds->tmpl[base], per, &ds->tok[base]) == per)
		return 0;
	/* nothing was posted: post_ops() waits if the queue is full, or says why */
	return post_ops(c, d, &ds->tmpl[base], per, &ds->tok[base]);
}

/* Post iterations [k, k + b) of device @d. */
static int post_iters(struct bw_ctx *c, int d, long k, int b)
{
	struct bw_devstate *ds = &c->dev[d];
	long it;

	if (ds->nodeps)
		return post_direct(c, d, k, b);
	c->nb = 0;
	c->first_iter = k;
	for (it = k; it < k + b; it++) {
		ds->ntok[slot_of(c, it)] = 0;
		ds->head = it + 1;
		if (bw_add_ops(c, d, it, 0, ds->dp->nops))
			return -1;
	}
	return bw_flush(c, d);
}

/* Stamp device @d's source slot and clear its destination slot for the verified iteration. */
static void prep_last(struct bw_ctx *c, int d, int slot)
{
	struct bw_devstate *ds = &c->dev[d];
	const struct bw_devplan *dp = ds->dp;
	double t0 = bw_now();
	int j, stamped = 0;

	for (j = 0; j < dp->nops; j++) {
		const struct bw_opdesc *od = &dp->ops[j];
		if (od->kind == ACCDMA_OP_SEND && od->buf == BW_BUF_SRC && !stamped) {
			bw_pattern_fill(ds->src + (uint64_t)slot * c->stride, c->bytes, d, c->seed);
			stamped = 1;
		} else if (od->kind == ACCDMA_OP_RECV) {
			memset(ds->dst + dst_off(c, slot, od->sub), 0, c->bytes);
		}
	}
	c->excluded += bw_now() - t0;
}

static int drain(struct bw_ctx *c)
{
	int d;

	for (d = 0; d < c->ndev; d++)
		if (wait_iters(c, d, c->dev[d].head - c->dev[d].tail))
			return -1;
	return 0;
}

static void reset_counters(struct bw_ctx *c)
{
	int d;

	for (d = 0; d < c->ndev; d++)
		c->dev[d].tail = c->dev[d].head = 0;
}

/* loop_bw() with one iteration per doorbell on devices without dependencies:
 * wait for the oldest iteration once the window is full, post the next one. */
static int loop_direct(struct bw_ctx *c, long n, int stamp)
{
	reset_counters(c);
	for (long k = 0; k < n; k++)
		for (int i = 0; i < c->nactive; i++) {
			int d = c->active[i];

			/* (a full queue may have made post_ops() wait already) */
			if (c->dev[d].head - c->dev[d].tail >= c->win && wait_one_direct(c, d))
				return -1;
			if (stamp && k + 1 == n)
				prep_last(c, d, slot_of(c, k));
			if (post_one_direct(c, d, k))
				return -1;
		}
	return drain(c);
}

/* Throughput loop: @n iterations with up to win in flight per device. */
static int loop_bw(struct bw_ctx *c, long n, int stamp)
{
	int B = c->o->post_list < c->win ? c->o->post_list : c->win;
	long k;
	int d;

	if (B == 1 && c->all_direct)
		return loop_direct(c, n, stamp);
	reset_counters(c);
	for (k = 0; k < n; k += B) {
		int b = (int)(n - k < B ? n - k : B);
		for (d = 0; d < c->ndev; d++) {
			struct bw_devstate *ds = &c->dev[d];
			if (!ds->dp->nops)
				continue;
			if (ds->head - ds->tail + b > c->win &&
			    wait_iters(c, d, ds->head - ds->tail + b - c->win))
				return -1;
			if (stamp && k + b == n)
				prep_last(c, d, slot_of(c, n - 1));
			if (post_iters(c, d, k, b))
				return -1;
		}
	}
	return drain(c);
}

/* Latency mode's iteration @k: post it on every device, then wait for it. */
static int lat_iter(struct bw_ctx *c, long k)
{
	int d, i;

	if (c->all_direct) {
		for (i = 0; i < c->nactive; i++)
			if (post_one_direct(c, c->active[i], k))
				return -1;
		for (i = 0; i < c->nactive; i++)
			if (wait_one_direct(c, c->active[i]))
				return -1;
		return 0;
	}
	for (d = 0; d < c->ndev; d++)
		if (c->dev[d].dp->nops && post_iters(c, d, k, 1))
			return -1;
	for (d = 0; d < c->ndev; d++)
		if (c->dev[d].dp->nops && wait_oldest(c, d))
			return -1;
	return 0;
}

/* One iteration in flight at a time (latency and sync modes): @n runs of
 * @iter; @lat (if not NULL) gets each one's time. */
static int loop_one_at_a_time(struct bw_ctx *c, long n, int stamp, double *lat,
			      int (*iter)(struct bw_ctx *c, long k))
{
	long k;
	int d;
	uint64_t k0, k1, kstart;
	double w0;

	reset_counters(c);
	/* One tick read per iteration, as perftest does: its end is the next
	 * one's start. Ticks become seconds at the end, by the ratio of the
	 * wall clock to the ticks over the whole loop. */
	w0 = bw_now();
	kstart = k0 = bw_ticks();
	for (k = 0; k < n; k++) {
		if (stamp && k == n - 1) {
			for (d = 0; d < c->ndev; d++)
				if (c->dev[d].dp->nops)
					prep_last(c, d, slot_of(c, k));
			k0 = bw_ticks(); /* the stamping is not the iteration's */
		}
		if (iter(c, k))
			return -1;
		if (lat) {
			k1 = bw_ticks();
			lat[k] = (double)(k1 - k0);
			k0 = k1;
		}
	}
	if (lat) {
		double secs = bw_now() - w0;
		uint64_t ticks = bw_ticks() - kstart;
		double per_tick = ticks ? secs / (double)ticks : 0;

		for (k = 0; k < n; k++)
			lat[k] *= per_tick;
	}
	return 0;
}

static int verify(struct bw_ctx *c, long n)
{
	int slot = slot_of(c, n - 1), d, j;

	for (d = 0; d < c->ndev; d++) {
		const struct bw_devplan *dp = c->dev[d].dp;
		for (j = 0; j < dp->nops; j++) {
			const struct bw_opdesc *od = &dp->ops[j];
			uint8_t got, want;
			int64_t bad;

			if (od->kind != ACCDMA_OP_RECV)
				continue;
			bad = bw_pattern_check(c->plan, c->o->pattern, d, od,
					       c->dev[d].dst + dst_off(c, slot, od->sub), c->bytes,
					       c->seed, &got, &want);
			if (bad >= 0) {
				fprintf(stderr,
					"accdma-bw: DATA MISMATCH: %s %s, %llu bytes, device %d "
					"recv from %d, byte %lld: got 0x%02x, want 0x%02x\n",
					bw_pattern_name(c->o->pattern), bw_mode_name(c->plan->mode),
					(unsigned long long)c->bytes, d, od->peer, (long long)bad, got,
					want);
				return -1;
			}
		}
	}
	return 0;
}

int bw_ctx_run(struct bw_ctx *c, long warmup, long iters, struct bw_sample *s)
{
	int lat = c->o->latency, stamp = c->o->verify, sync = c->plan->mode == BW_MODE_SYNC;
	double t0, t1;

	memset(s, 0, sizeof(*s));
	s->iters = iters;
	if (bw_sync_ranks(c->w, c->o->timeout_ms))
		return -1;
	if (warmup > 0 && (sync ? loop_one_at_a_time(c, warmup, 0, NULL, bw_sync_iter)
			    : lat ? loop_one_at_a_time(c, warmup, 0, NULL, lat_iter) : loop_bw(c, warmup, 0)))
		return -1;
	if (bw_sync_ranks(c->w, c->o->timeout_ms))
		return -1;
	if (lat) {
		int (*iter)(struct bw_ctx *c, long k) = sync ? bw_sync_iter : lat_iter;
		double *v = calloc((size_t)iters, sizeof(*v));

		if (!v)
			return -1;
		/* The mean from rounds with no clock read among them, as OpenMPI's
		 * and OSU's loops time theirs (a TSC read would be part of the mean); then
		 * the same number of rounds again, each timed, for p50 and p99. */
		t0 = bw_now();
		if (loop_one_at_a_time(c, iters, 0, NULL, iter)) {
			free(v);
			return -1;
		}
		s->secs = bw_now() - t0;
		if (bw_sync_ranks(c->w, c->o->timeout_ms) ||
		    loop_one_at_a_time(c, iters, stamp, v, iter)) {
			free(v);
			return -1;
		}
		bw_sort(v, iters);
		s->p50_us = bw_percentile(v, iters, 50) * 1e6;
		s->p99_us = bw_percentile(v, iters, 99) * 1e6;
		s->p999_us = bw_percentile(v, iters, 99.9) * 1e6;
		s->max_us = v[iters - 1] * 1e6;
		free(v);
	} else {
		c->excluded = 0;
		t0 = bw_now();
		if (sync ? loop_one_at_a_time(c, iters, stamp, NULL, bw_sync_iter) : loop_bw(c, iters, stamp))
			return -1;
		t1 = bw_now();
		s->secs = t1 - t0 - c->excluded;
	}
	if (stamp) {
		if (verify(c, iters))
			return -1;
		s->verified = 1;
	}
	return 0;
}
