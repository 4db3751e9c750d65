// SPDX-License-Identifier: MIT
/*
 * coll.c - collective plans: each posts one member's whole part of a
 * collective at once, every step chained on the tokens it needs (a ring
 * reduction on the recv that brought its operand, the next send on that
 * reduction), so the host only waits at the end.
 */
#include <errno.h>

#include "atc.h"

static int xfer(const struct atc_group *g, struct atc_oplist *ol, enum accdma_op_kind kind,
		int peer, const struct atc_buf *b, uint64_t off, uint64_t len,
		const accdma_token *deps, int nd, accdma_token *tok)
{
	struct accdma_op op = { .kind = kind, .peer = g->devs[peer], .tag = g->tag, .key = b->key,
				.offset = off, .length = len, .deps = deps, .num_deps = nd };
	struct atc_opdesc d = { .kind = kind, .peer = peer, .tag = g->tag, .bytes = len,
				.what = g->what };

	return atc_post(g->aw, ol, &op, &d, g->timeout_ms, tok);
}

int atc_plan_barrier(const struct atc_group *g, struct atc_oplist *ol, const struct atc_buf *buf)
{
	accdma_token prev = 0;
	int rc;

	for (int k = 1; k < g->n; k <<= 1) {
		int to = (g->me + k) % g->n, from = (g->me - k + g->n) % g->n;

		rc = xfer(g, ol, ACCDMA_OP_SEND, to, buf, 0, 1, &prev, prev ? 1 : 0, NULL);
		if (!rc)
			rc = xfer(g, ol, ACCDMA_OP_RECV, from, buf, 64, 1, NULL, 0, &prev);
		if (rc)
			return rc;
	}
	return 0;
}

int atc_plan_bcast(const struct atc_group *g, struct atc_oplist *ol, const struct atc_buf *buf,
		   uint64_t bytes, int root)
{
	int v = (g->me - root + g->n) % g->n, mask = 1, rc;
	accdma_token got = 0;

	if (!bytes)
		return 0;
	while (mask < g->n) {
		if (v & mask) {
			rc = xfer(g, ol, ACCDMA_OP_RECV, (g->me - mask + g->n) % g->n, buf, 0, bytes,
				  NULL, 0, &got);
			if (rc)
				return rc;
			break;
		}
		mask <<= 1;
	}
	for (mask >>= 1; mask > 0; mask >>= 1) {
		if (v + mask >= g->n)
			continue;
		rc = xfer(g, ol, ACCDMA_OP_SEND, (g->me + mask) % g->n, buf, 0, bytes, &got,
			  got ? 1 : 0, NULL);
		if (rc)
			return rc;
	}
	return 0;
}

static int mod(int a, int n)
{
	return ((a % n) + n) % n;
}

/* The ring's reduce-scatter, keeping each step's send token (for an
 * all-gather that later overwrites what it sent) in @sent if not NULL. */
static int ring_rs(const struct atc_group *g, struct atc_oplist *ol, const struct atc_buf *data,
		   const struct atc_buf *tmp, uint64_t chunk, uint64_t esize, int dtype, int op,
		   accdma_token *last, accdma_token *sent)
{
	uint64_t cb = chunk * esize;
	int next = mod(g->me + 1, g->n), prev = mod(g->me - 1, g->n), rc;
	accdma_token dep = 0, r;

	for (int s = 0; s < g->n - 1; s++) {
		int sc = mod(g->me - 1 - s, g->n), rcv = mod(g->me - 2 - s, g->n);
		struct atc_red *red = atc_add_red(ol);
		struct atc_opdesc d = { .kind = ACCDMA_OP_EXEC, .peer = -1, .bytes = chunk,
					.what = g->what };

		if (!red)
			return -ENOMEM;
		rc = xfer(g, ol, ACCDMA_OP_SEND, next, data, sc * cb, cb, &dep, dep ? 1 : 0,
			  sent ? &sent[s] : NULL);
		if (!rc)
			rc = xfer(g, ol, ACCDMA_OP_RECV, prev, tmp, s * cb, cb, NULL, 0, &r);
		if (rc)
			return rc;
		red->dst = (char *)data->ptr + rcv * cb;
		red->src = (char *)tmp->ptr + s * cb;
		red->count = chunk;
		red->dtype = dtype;
		red->op = op;
		rc = atc_post(g->aw, ol,
			      &(struct accdma_op){ .kind = ACCDMA_OP_EXEC, .fn = atc_red_exec,
						   .arg = red, .deps = &r, .num_deps = 1 },
			      &d, g->timeout_ms, &dep);
		if (rc)
			return rc;
	}
	if (last)
		*last = dep;
	return 0;
}

int atc_plan_ring_rs(const struct atc_group *g, struct atc_oplist *ol, const struct atc_buf *data,
		     const struct atc_buf *tmp, uint64_t chunk, uint64_t esize, int dtype, int op,
		     accdma_token *last)
{
	return ring_rs(g, ol, data, tmp, chunk, esize, dtype, op, last, NULL);
}

static int ring_ag(const struct atc_group *g, struct atc_oplist *ol, const struct atc_buf *data,
		   uint64_t cb, accdma_token dep, const accdma_token *sent)
{
	int next = mod(g->me + 1, g->n), prev = mod(g->me - 1, g->n), rc;

	for (int s = 0; s < g->n - 1; s++) {
		int sc = mod(g->me - s, g->n), rcv = mod(g->me - s - 1, g->n);

		rc = xfer(g, ol, ACCDMA_OP_SEND, next, data, sc * cb, cb, &dep, dep ? 1 : 0, NULL);
		/* The chunk that lands here left in the reduce-scatter's step s. */
		if (!rc)
			rc = xfer(g, ol, ACCDMA_OP_RECV, prev, data, rcv * cb, cb, sent ? &sent[s] : NULL,
				  sent ? 1 : 0, &dep);
		if (rc)
			return rc;
	}
	return 0;
}

int atc_plan_ring_ag(const struct atc_group *g, struct atc_oplist *ol, const struct atc_buf *data,
		     uint64_t chunk_bytes, accdma_token dep)
{
	return ring_ag(g, ol, data, chunk_bytes, dep, NULL);
}

int atc_plan_ring_allreduce(const struct atc_group *g, struct atc_oplist *ol,
			    const struct atc_buf *data, const struct atc_buf *tmp, uint64_t chunk,
			    uint64_t esize, int dtype, int op)
{
	accdma_token sent[ATC_MAX_RING], last = 0;
	int rc;

	if (g->n > ATC_MAX_RING)
		return -E2BIG;
	rc = ring_rs(g, ol, data, tmp, chunk, esize, dtype, op, &last, sent);
	return rc ? rc : ring_ag(g, ol, data, chunk * esize, last, sent);
}

int atc_plan_alltoall(const struct atc_group *g, struct atc_oplist *ol, const struct atc_buf *in,
		      const struct atc_buf *out, const uint64_t *in_off, const uint64_t *in_len,
		      const uint64_t *out_off, const uint64_t *out_len)
{
	int rc;

	for (int i = 1; i < g->n; i++) {
		int from = mod(g->me - i, g->n);

		if (out_len[from] &&
		    (rc = xfer(g, ol, ACCDMA_OP_RECV, from, out, out_off[from], out_len[from], NULL, 0,
			       NULL)))
			return rc;
	}
	for (int i = 1; i < g->n; i++) {
		int to = mod(g->me + i, g->n);

		if (in_len[to] &&
		    (rc = xfer(g, ol, ACCDMA_OP_SEND, to, in, in_off[to], in_len[to], NULL, 0, NULL)))
			return rc;
	}
	return 0;
}
