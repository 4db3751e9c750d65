// SPDX-License-Identifier: MIT
/*
 * collective.c - barrier and permute, built on send/recv and tokens.
 *
 * Both post a small dependency graph on the calling device and hand back one
 * token that joins it, so they compose with everything else and never block.
 */
#include <stdlib.h>
#include <string.h>

#include "driver/internal.h"

#define BARRIER_TAG (ACCDMA_TAG_RESERVED | 0x42415252ull << 8) /* "BARR" */

/* Release intermediate tokens: the joining op holds its own references. */
static void release_all(struct accdma_world *w, const accdma_token *t, int n)
{
	for (int i = 0; i < n; i++)
		accdma_release(w, t[i]);
}

/*
 * Dissemination barrier: in round k every device sends an empty message to
 * rank + 2^k and receives from rank - 2^k; after ceil(log2 N) rounds each
 * device has heard, transitively, from every other. Round k+1 depends on the
 * recv of round k. Tags are reserved, and the k-th barrier's messages match
 * the k-th barrier's on every device by FIFO order.
 */
int accdma_barrier(accdma_queue *q, const accdma_token *deps, int num_deps, accdma_token *token)
{
	struct accdma_world *w;
	accdma_token held[2 * 11 + 1] = { 0 }, prev = 0; /* zeroed: gcc -flto cannot see nheld bounds its reads */
	int n, me, nheld = 0, rc = 0;

	if (!q || q->magic != DRV_QUEUE_MAGIC || drv_world_check(q->world))
		return -EBADF;
	if (!token || num_deps < 0 || num_deps > ACCDMA_MAX_DEPS || (num_deps && !deps))
		return num_deps > ACCDMA_MAX_DEPS ? -E2BIG : -EINVAL;
	w = q->world;
	n = w->opts.num_devices;
	me = (int)q->dev;
	if (n == 1)
		return accdma_after_all(q, deps, num_deps, token);
	/* All rounds or none: a half-posted barrier would shift the next one's matching. */
	for (int dist = 1; dist < n; dist <<= 1)
		nheld += 2;
	if ((uint32_t)nheld + 1 > q->mask + 1)
		return -E2BIG; /* this queue can never hold a whole barrier */
	if (drv_free_slots(q) < nheld + 1)
		return -EAGAIN;
	nheld = 0;
	for (int k = 0, dist = 1; dist < n; k++, dist <<= 1) {
		struct accdma_op ops[2] = {
			{ .kind = ACCDMA_OP_SEND, .peer = (me + dist) % n, .tag = BARRIER_TAG | (uint64_t)k },
			{ .kind = ACCDMA_OP_RECV, .peer = (me - dist + n) % n, .tag = BARRIER_TAG | (uint64_t)k },
		};
		accdma_token t[2];

		if (k == 0) {
			ops[0].deps = ops[1].deps = deps;
			ops[0].num_deps = ops[1].num_deps = num_deps;
		} else {
			ops[0].deps = ops[1].deps = &prev;
			ops[0].num_deps = ops[1].num_deps = 1;
		}
		rc = drv_post(q, ops, 2, t, DRV_POST_INTERNAL);
		if (rc < 0)
			break;
		rc = 0;
		held[nheld++] = t[0];
		held[nheld++] = t[1];
		prev = t[1];
	}
	if (rc == 0)
		rc = nheld <= ACCDMA_MAX_DEPS ? accdma_after_all(q, held, nheld, token)
					      : accdma_after_all(q, &held[nheld - ACCDMA_MAX_DEPS],
								 ACCDMA_MAX_DEPS, token);
	/* On failure the posted rounds still complete (or time out for peers): nothing leaks. */
	release_all(w, held, nheld);
	return rc;
}

/* Sources unique, targets unique, ranks in range (XLA collective-permute). */
static int pairs_valid(const struct accdma_pair *pairs, int num, int n)
{
	uint8_t *seen = calloc((size_t)n * 2, 1);
	int ok = seen != NULL;

	for (int i = 0; ok && i < num; i++) {
		int s = pairs[i].source, t = pairs[i].target;

		if (s < 0 || s >= n || t < 0 || t >= n || seen[s] || seen[n + t])
			ok = 0;
		else
			seen[s] = seen[n + t] = 1;
	}
	free(seen);
	return ok;
}

int accdma_permute(accdma_queue *q, const struct accdma_pair *pairs, int num_pairs, uint64_t tag,
		   accdma_key send_key, uint64_t send_offset, accdma_key recv_key, uint64_t recv_offset,
		   uint64_t length, const accdma_token *deps, int num_deps, accdma_token *token)
{
	struct accdma_op ops[2];
	accdma_token t[2];
	int me, nops = 0, is_target = 0, rc;

	if (!q || q->magic != DRV_QUEUE_MAGIC || drv_world_check(q->world))
		return -EBADF;
	if (!token || num_pairs < 0 || (num_pairs && !pairs) ||
	    !pairs_valid(pairs, num_pairs, q->world->opts.num_devices))
		return -EINVAL;
	me = (int)q->dev;
	memset(ops, 0, sizeof(ops));
	for (int i = 0; i < num_pairs; i++) {
		if (pairs[i].source == me)
			ops[nops++] = (struct accdma_op){ .kind = ACCDMA_OP_SEND, .peer = pairs[i].target,
							  .tag = tag, .key = send_key,
							  .offset = send_offset, .length = length };
		if (pairs[i].target == me) {
			ops[nops++] = (struct accdma_op){ .kind = ACCDMA_OP_RECV, .peer = pairs[i].source,
							  .tag = tag, .key = recv_key,
							  .offset = recv_offset, .length = length };
			is_target = 1;
		}
	}
	if (!is_target)
		ops[nops++] = (struct accdma_op){ .kind = ACCDMA_OP_ZERO, .key = recv_key,
						  .offset = recv_offset, .length = length };
	for (int i = 0; i < nops; i++) {
		ops[i].deps = deps;
		ops[i].num_deps = num_deps;
	}
	if (nops == 1) {
		rc = accdma_post(q, ops, 1, token);
		return rc < 0 ? rc : 0;
	}
	if ((uint32_t)nops + 1 > q->mask + 1)
		return -E2BIG;
	if (drv_free_slots(q) < nops + 1)
		return -EAGAIN;
	rc = accdma_post(q, ops, nops, t);
	if (rc < 0)
		return rc;
	rc = accdma_after_all(q, t, nops, token);
	release_all(q->world, t, nops);
	return rc;
}
