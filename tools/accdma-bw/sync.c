/* SPDX-License-Identifier: MIT */
/*
 * sync.c - sync mode, the old workaround (a full sync after each send and
 * each recv): it posts fence mode's ops, one iteration at a time, and the
 * host waits on every fence before it posts anything more on that device: each device
 * posts its ops up to and including its next fence (one doorbell) and is
 * then blocked on that fence. Once every device is blocked or through the
 * iteration, the thread waits for any blocked fence (accdma_wait_any, or
 * accdma_wait for one), tests the others, and lets the devices whose fence
 * is done post their next stretch. Waiting for all the blocked fences at once
 * (lock step by op position) would deadlock wherever a fence waits for a
 * peer's op behind that peer's own fence (an odd ring, the chained pipeline,
 * sends too big to go eagerly): a device blocks exactly as if it had its own
 * host thread. A device that reaches the end of the iteration collects its
 * remaining tokens (ops behind its last fence: an exec at most, local), and
 * the next iteration starts once every device has (one iteration in flight).
 * Under shm each process does this for its own devices, with no lock step.
 */
#include <errno.h>
#include <string.h>

#include "run.h"

/* Sync mode: device @d is through iteration @k; collect its tokens not waited on yet. */
static int sync_done(struct bw_ctx *c, int d, long k)
{
	struct bw_devstate *ds = &c->dev[d];
	int slot = slot_of(c, k), j, rc;
	accdma_token *t = &ds->tok[(size_t)slot * ds->dp->nops];
	enum accdma_status st;

	/* every op was posted in order, so token j is op j's; waited fences are 0 */
	for (j = 0; j < ds->ntok[slot]; j++) {
		if (!t[j])
			continue;
		rc = accdma_wait(c->w, t[j], c->o->timeout_ms, &st);
		if (rc) {
			fprintf(stderr, "accdma-bw: device %d iteration %ld: waiting on its %s: %s\n",
				d, k, accdma_op_kind_str(ds->dp->ops[j].kind), strerror(-rc));
			if (rc == -ETIMEDOUT)
				accdma_stall_report(c->w, stderr);
			return -1;
		}
		t[j] = 0;
		if (st != ACCDMA_OK)
			return bw_fail_status(c, d, k, j, st);
	}
	ds->ntok[slot] = 0;
	ds->tail = ds->head;
	ds->busy = 0;
	return 0;
}

/* Sync mode: device @d's fence is done with @st. */
static int sync_unblock(struct bw_ctx *c, int d, long k, enum accdma_status st)
{
	struct bw_devstate *ds = &c->dev[d];
	int j = ds->fence_j;

	ds->tok[(size_t)slot_of(c, k) * ds->dp->nops + (size_t)j] = 0; /* consumed */
	ds->fence_j = -1;
	if (st != ACCDMA_OK)
		return bw_fail_status(c, d, k, j, st);
	return ds->pc == ds->dp->nops ? sync_done(c, d, k) : 0;
}

/*
 * Sync mode: iteration @k on every device of this process. Each device posts
 * its ops up to and including its next fence, then the host waits until that
 * fence is done before the device posts more; see the top of this file.
 */
int bw_sync_iter(struct bw_ctx *c, long k)
{
	int slot = slot_of(c, k), busy = 0, d, i, n, rc;
	enum accdma_status st;

	for (d = 0; d < c->ndev; d++) {
		struct bw_devstate *ds = &c->dev[d];
		ds->busy = ds->dp->nops > 0;
		if (!ds->busy)
			continue;
		ds->pc = 0;
		ds->fence_j = -1;
		ds->ntok[slot] = 0;
		ds->head = k + 1;
		busy++;
	}
	while (busy) {
		/* every device not blocked on a fence posts its next stretch */
		for (d = 0; d < c->ndev; d++) {
			struct bw_devstate *ds = &c->dev[d];
			const struct bw_devplan *dp = ds->dp;
			int j1 = ds->pc;

			if (!ds->busy || ds->fence_j >= 0)
				continue;
			while (j1 < dp->nops && dp->ops[j1].kind != ACCDMA_OP_FENCE)
				j1++;
			if (j1 < dp->nops)
				j1++; /* the fence itself */
			if (j1 > ds->pc) {
				c->nb = 0;
				c->first_iter = k;
				if (bw_add_ops(c, d, k, ds->pc, j1) || bw_flush(c, d))
					return -1;
				ds->pc = j1;
				if (dp->ops[j1 - 1].kind == ACCDMA_OP_FENCE) {
					ds->fence_j = j1 - 1;
					continue;
				}
			}
			if (sync_done(c, d, k))
				return -1;
			busy--;
		}
		/* the host waits: for any blocked fence, then takes every other one that is done */
		for (n = 0, d = 0; d < c->ndev; d++)
			if (c->dev[d].busy && c->dev[d].fence_j >= 0) {
				c->anyv[n] = c->dev[d].tok[(size_t)slot * c->dev[d].dp->nops +
							   (size_t)c->dev[d].fence_j];
				c->anyd[n++] = d;
			}
		if (!n)
			continue;
		if (n == 1) {
			rc = accdma_wait(c->w, c->anyv[0], c->o->timeout_ms, &st);
			i = rc ? rc : 0;
		} else {
			i = accdma_wait_any(c->w, c->anyv, n, c->o->timeout_ms, &st);
		}
		if (i < 0) {
			fprintf(stderr, "accdma-bw: iteration %ld (%llu bytes): waiting on the fence of "
					"device", k, (unsigned long long)c->bytes);
			for (d = 0; d < n; d++)
				fprintf(stderr, "%s %d", d ? "," : "", c->anyd[d]);
			fprintf(stderr, ": %s\n", strerror(-i));
			if (i == -ETIMEDOUT)
				accdma_stall_report(c->w, stderr);
			return -1;
		}
		if (sync_unblock(c, c->anyd[i], k, st))
			return -1;
		busy -= !c->dev[c->anyd[i]].busy;
		for (d = 0; d < n; d++) {
			if (d == i)
				continue;
			rc = accdma_test(c->w, c->anyv[d], &st);
			if (rc == -EAGAIN)
				continue;
			if (rc) {
				fprintf(stderr, "accdma-bw: device %d: testing its fence: %s\n",
					c->anyd[d], strerror(-rc));
				return -1;
			}
			if (sync_unblock(c, c->anyd[d], k, st))
				return -1;
			busy -= !c->dev[c->anyd[d]].busy;
		}
	}
	return 0;
}
