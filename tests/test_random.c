/* SPDX-License-Identifier: MIT */
/*
 * test_random.c - randomized permutations and dependency DAGs.
 *
 * The seed is printed at the start and with every failure; set
 * ACCDMA_TEST_SEED to repeat a run and ACCDMA_TEST_ITERS to change its size.
 *
 *  - random permutations over N devices (fixed points are self-sends), each
 *    device posting its send and recv in random order, devices in random order;
 *  - random partial permutations through accdma_permute (non-targets get zeros);
 *  - random DAGs: execs that mix their inputs, transfers between random devices
 *    (on a few tags, so FIFO matching matters), extra random dependencies and
 *    fences, posted with the devices interleaved at random and waited in random
 *    order. Every value lives in its own slot (single assignment), so each
 *    slot's final value checks that every op ran after what it depends on.
 */
#include "helpers/th.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#define MAXN 8

static uint64_t seed;

static enum accdma_status rwait(accdma_world *w, accdma_token t, const char *what)
{
	enum accdma_status st = ACCDMA_ST__COUNT;
	int rc = accdma_wait(w, t, TH_HANG_MS, &st);

	if (rc != 0) {
		if (rc == -ETIMEDOUT)
			accdma_stall_report(w, stderr);
		th_rfail("%s: accdma_wait = %d\n", what, rc);
	}
	return st;
}

static void rwait_ok(accdma_world *w, accdma_token t, const char *what)
{
	enum accdma_status st = rwait(w, t, what);

	if (st != ACCDMA_OK)
		th_rfail("%s: status %s\n", what, accdma_status_str(st));
}

/* ---- permutations ----------------------------------------------------- */

static void test_random_permutations(void **state)
{
	(void)state;
	struct th_rng rng = { seed ^ 0x1111 };
	int iters = th_iters(60);

	for (int it = 0; it < iters; it++) {
		int n = 2 + (int)th_rand_below(&rng, MAXN - 1);
		int perm[MAXN], inv[MAXN], order[MAXN], send_first[MAXN];
		uint64_t len = 1 + th_rand_below(&rng, 3000);
		uint64_t off = th_rand_below(&rng, 64);
		uint64_t tag = th_rand_below(&rng, 1000);
		accdma_world *w = th_open(n);
		accdma_key sk[MAXN], rk[MAXN];
		uint8_t *sb[MAXN], *rb[MAXN];
		accdma_token st[MAXN], rt[MAXN];

		for (int i = 0; i < n; i++)
			perm[i] = order[i] = i;
		th_shuffle(perm, n, &rng);
		th_shuffle(order, n, &rng);
		for (int i = 0; i < n; i++) {
			inv[perm[i]] = i;
			send_first[i] = (int)th_rand_below(&rng, 2);
			sk[i] = th_alloc(w, i, len, (void **)&sb[i]);
			rk[i] = th_alloc(w, i, off + len + 16, (void **)&rb[i]);
			th_fill_pattern(sb[i], len, (uint32_t)(it * 100 + i));
			th_fill_u8(rb[i], off + len + 16, 0xEE);
		}
		for (int j = 0; j < n; j++) {
			int i = order[j];
			accdma_queue *q = th_q(w, i);

			for (int k = 0; k < 2; k++) {
				int rc;

				if ((k == 0) == send_first[i])
					rc = accdma_send(q, perm[i], tag, sk[i], 0, len, NULL, 0, &st[i]);
				else
					rc = accdma_recv(q, inv[i], tag, rk[i], off, len, NULL, 0, &rt[i]);
				if (rc)
					th_rfail("post on %d: %d\n", i, rc);
			}
		}
		th_shuffle(order, n, &rng);
		for (int j = 0; j < n; j++) {
			rwait_ok(w, rt[order[j]], "permutation recv");
			rwait_ok(w, st[order[j]], "permutation send");
		}
		for (int i = 0; i < n; i++) {
			uint8_t want[3000];

			th_fill_pattern(want, len, (uint32_t)(it * 100 + inv[i]));
			for (uint64_t b = 0; b < off; b++)
				if (rb[i][b] != 0xEE)
					th_rfail("it %d n %d dev %d: guard before byte %" PRIu64 "\n", it,
						 n, i, b);
			if (memcmp(rb[i] + off, want, len))
				th_rfail("it %d n %d dev %d: wrong data (want dev %d's, len %" PRIu64
					 ")\n",
					 it, n, i, inv[i], len);
			for (uint64_t b = 0; b < 16; b++)
				if (rb[i][off + len + b] != 0xEE)
					th_rfail("it %d dev %d: guard after byte %" PRIu64 "\n", it, i,
						 b);
		}
		th_close(w);
	}
}

static void test_random_permute_helper(void **state)
{
	(void)state;
	struct th_rng rng = { seed ^ 0x2222 };
	int iters = th_iters(40);

	for (int it = 0; it < iters; it++) {
		int n = 1 + (int)th_rand_below(&rng, MAXN);
		int src[MAXN], dst[MAXN], np = (int)th_rand_below(&rng, (uint64_t)n + 1);
		int from[MAXN];
		struct accdma_pair pairs[MAXN];
		uint64_t len = 8 + 8 * th_rand_below(&rng, 64);
		accdma_world *w = th_open(n);
		accdma_key sk[MAXN], rk[MAXN];
		uint8_t *sb[MAXN], *rb[MAXN];
		accdma_token t[MAXN];
		int order[MAXN];

		for (int i = 0; i < n; i++) {
			src[i] = dst[i] = order[i] = i;
			from[i] = -1;
		}
		th_shuffle(src, n, &rng);
		th_shuffle(dst, n, &rng);
		th_shuffle(order, n, &rng);
		for (int p = 0; p < np; p++) {
			pairs[p] = (struct accdma_pair){ src[p], dst[p] };
			from[dst[p]] = src[p];
		}
		for (int i = 0; i < n; i++) {
			sk[i] = th_alloc(w, i, len, (void **)&sb[i]);
			rk[i] = th_alloc(w, i, len, (void **)&rb[i]);
			th_fill_pattern(sb[i], len, (uint32_t)(7000 + i));
			th_fill_u8(rb[i], len, 0xAB);
		}
		for (int j = 0; j < n; j++) {
			int i = order[j];
			int rc = accdma_permute(th_q(w, i), pairs, np, 77, sk[i], 0, rk[i], 0, len,
						NULL, 0, &t[i]);

			if (rc)
				th_rfail("permute on %d: %d\n", i, rc);
		}
		for (int i = 0; i < n; i++)
			rwait_ok(w, t[i], "permute");
		for (int i = 0; i < n; i++) {
			uint8_t want[8 * 64 + 8];

			if (from[i] < 0)
				memset(want, 0, len);
			else
				th_fill_pattern(want, len, (uint32_t)(7000 + from[i]));
			if (memcmp(rb[i], want, len))
				th_rfail("it %d n %d pairs %d dev %d: wrong data (want %s %d)\n", it, n, np,
					 i, from[i] < 0 ? "zeros, source" : "source", from[i]);
			th_fill_pattern(want, len, (uint32_t)(7000 + i));
			if (memcmp(sb[i], want, len))
				th_rfail("it %d dev %d: send buffer changed\n", it, i);
		}
		th_close(w);
	}
}

/* ---- DAGs ------------------------------------------------------------- */

enum node_kind { N_EXEC, N_SEND, N_RECV, N_FENCE };

#define MAXNODES 1024
#define MAXIN 3
#define MAXDEP 5

struct node {
	enum node_kind kind;
	int dev;
	int slot;          /* value slot (EXEC, RECV), else -1 */
	int in[MAXIN];     /* EXEC: input nodes (same device, value nodes) */
	int nin;
	int src;           /* SEND: value node sent; RECV: the matching SEND node */
	int peer;
	uint64_t tag;
	int deps[MAXDEP];  /* nodes (same device) this one depends on */
	int ndeps;
	uint64_t expect;   /* value nodes: the expected value */
	accdma_token tok;
};

struct exec_arg {
	uint64_t *out;
	const uint64_t *in[MAXIN];
	int nin;
	uint64_t id;
};

static uint64_t mix(uint64_t id, const uint64_t *vals, int n)
{
	uint64_t h = (id + 1) * 0x9e3779b97f4a7c15ull;

	for (int i = 0; i < n; i++)
		h = (h ^ vals[i]) * 0x100000001b3ull + (uint64_t)i;
	return h ^ (h >> 29);
}

static int exec_mix(void *arg)
{
	struct exec_arg *a = arg;
	uint64_t v[MAXIN];

	for (int i = 0; i < a->nin; i++)
		v[i] = *a->in[i];
	*a->out = mix(a->id, v, a->nin);
	return 0;
}

struct dag {
	int n, nn;
	struct node nodes[MAXNODES];
	struct exec_arg args[MAXNODES];
	int per_dev[MAXN][MAXNODES]; /* node ids of each device, in generation order */
	int count[MAXN];
	int slots[MAXN];
	int values[MAXN][MAXNODES]; /* value nodes of each device */
	int nvalues[MAXN];
};

static int add_node(struct dag *g, enum node_kind kind, int dev)
{
	int id = g->nn++;
	struct node *nd = &g->nodes[id];

	memset(nd, 0, sizeof(*nd));
	nd->kind = kind;
	nd->dev = dev;
	nd->slot = -1;
	nd->src = -1;
	nd->peer = -1;
	g->per_dev[dev][g->count[dev]++] = id;
	return id;
}

static void add_value(struct dag *g, int id)
{
	struct node *nd = &g->nodes[id];

	nd->slot = g->slots[nd->dev]++;
	g->values[nd->dev][g->nvalues[nd->dev]++] = id;
}

static void add_dep(struct node *nd, int dep)
{
	for (int i = 0; i < nd->ndeps; i++)
		if (nd->deps[i] == dep)
			return;
	if (nd->ndeps < MAXDEP)
		nd->deps[nd->ndeps++] = dep;
}

static void random_extra_deps(struct dag *g, struct node *nd, int self, struct th_rng *rng)
{
	int d = nd->dev, have = g->count[d] - 1; /* nodes of the device before this one */
	int extra = (int)th_rand_below(rng, 3);

	for (int i = 0; i < extra && have > 0; i++) {
		int pick = g->per_dev[d][th_rand_below(rng, (uint64_t)have)];

		/* never depend on itself, nor (a recv) on its own matching self-send */
		if (pick != self && pick != nd->src)
			add_dep(nd, pick);
	}
}

static void build_dag(struct dag *g, int n, int steps, struct th_rng *rng)
{
	memset(g, 0, sizeof(*g));
	g->n = n;
	/* a seed value on every device */
	for (int d = 0; d < n; d++) {
		int id = add_node(g, N_EXEC, d);

		add_value(g, id);
		g->nodes[id].expect = mix((uint64_t)id, NULL, 0);
	}
	for (int s = 0; s < steps; s++) {
		int r = (int)th_rand_below(rng, 10);

		if (r < 4) { /* exec mixing up to 3 inputs */
			int d = (int)th_rand_below(rng, (uint64_t)n);
			int id = add_node(g, N_EXEC, d);
			struct node *nd = &g->nodes[id];
			uint64_t v[MAXIN];

			nd->nin = 1 + (int)th_rand_below(rng, MAXIN);
			for (int i = 0; i < nd->nin; i++) {
				nd->in[i] = g->values[d][th_rand_below(rng, (uint64_t)g->nvalues[d])];
				add_dep(nd, nd->in[i]);
				v[i] = g->nodes[nd->in[i]].expect;
			}
			random_extra_deps(g, nd, id, rng);
			add_value(g, id);
			nd->expect = mix((uint64_t)id, v, nd->nin);
		} else if (r < 9) { /* transfer a -> b (a == b: self-send) */
			int a = (int)th_rand_below(rng, (uint64_t)n);
			int b = th_rand_below(rng, 8) == 0 ? a : (int)th_rand_below(rng, (uint64_t)n);
			uint64_t tag = th_rand_below(rng, 3);
			int sid = add_node(g, N_SEND, a);
			struct node *sn = &g->nodes[sid];
			int rid;
			struct node *rn;

			sn->src = g->values[a][th_rand_below(rng, (uint64_t)g->nvalues[a])];
			sn->peer = b;
			sn->tag = tag;
			add_dep(sn, sn->src);
			random_extra_deps(g, sn, sid, rng);
			rid = add_node(g, N_RECV, b);
			rn = &g->nodes[rid];
			rn->src = sid; /* set before random_extra_deps: excluded from them */
			rn->peer = a;
			rn->tag = tag;
			random_extra_deps(g, rn, rid, rng);
			add_value(g, rid);
			rn->expect = g->nodes[sn->src].expect;
		} else { /* fence */
			int d = (int)th_rand_below(rng, (uint64_t)n);
			int id = add_node(g, N_FENCE, d);

			random_extra_deps(g, &g->nodes[id], id, rng);
		}
	}
}

static void post_node(struct dag *g, accdma_world *w, accdma_key *key, uint64_t **base, int id)
{
	struct node *nd = &g->nodes[id];
	accdma_queue *q = th_q(w, nd->dev);
	accdma_token deps[MAXDEP];
	int rc = -1;

	for (int i = 0; i < nd->ndeps; i++)
		deps[i] = g->nodes[nd->deps[i]].tok;
	switch (nd->kind) {
	case N_EXEC: {
		struct exec_arg *a = &g->args[id];

		a->out = base[nd->dev] + nd->slot;
		a->nin = nd->nin;
		a->id = (uint64_t)id;
		for (int i = 0; i < nd->nin; i++)
			a->in[i] = base[nd->dev] + g->nodes[nd->in[i]].slot;
		rc = accdma_exec(q, exec_mix, a, deps, nd->ndeps, &nd->tok);
		break;
	}
	case N_SEND:
		rc = accdma_send(q, nd->peer, nd->tag, key[nd->dev],
				 (uint64_t)g->nodes[nd->src].slot * 8, 8, deps, nd->ndeps, &nd->tok);
		break;
	case N_RECV:
		rc = accdma_recv(q, nd->peer, nd->tag, key[nd->dev], (uint64_t)nd->slot * 8, 8, deps,
				 nd->ndeps, &nd->tok);
		break;
	case N_FENCE:
		rc = accdma_fence(q, deps, nd->ndeps, &nd->tok);
		break;
	}
	if (rc)
		th_rfail("post node %d (kind %d, dev %d): %d\n", id, nd->kind, nd->dev, rc);
}

static void test_random_dags(void **state)
{
	(void)state;
	static struct dag g;
	struct th_rng rng = { seed ^ 0x3333 };
	int iters = th_iters(40);

	for (int it = 0; it < iters; it++) {
		int n = 1 + (int)th_rand_below(&rng, MAXN);
		int steps = 20 + (int)th_rand_below(&rng, 100);
		accdma_world *w;
		accdma_key key[MAXN];
		uint64_t *base[MAXN];
		int next[MAXN] = { 0 }, left;
		int *order;

		struct accdma_world_opts o;

		build_dag(&g, n, steps, &rng);
		th_opts(&o, n);
		o.queue_depth = 1024;
		w = th_open_opts(&o);
		for (int d = 0; d < n; d++)
			key[d] = th_alloc(w, d, (uint64_t)(g.slots[d] + 1) * 8, (void **)&base[d]);
		/* post: each device in its own order, devices interleaved at random */
		left = g.nn;
		while (left > 0) {
			int d = (int)th_rand_below(&rng, (uint64_t)n);

			if (next[d] == g.count[d])
				continue;
			post_node(&g, w, key, base, g.per_dev[d][next[d]++]);
			left--;
		}
		/* wait in random order */
		order = malloc(sizeof(int) * (size_t)g.nn);
		assert_non_null(order);
		for (int i = 0; i < g.nn; i++)
			order[i] = i;
		th_shuffle(order, g.nn, &rng);
		for (int i = 0; i < g.nn; i++) {
			char what[64];

			snprintf(what, sizeof(what), "it %d node %d kind %d dev %d", it, order[i],
				 g.nodes[order[i]].kind, g.nodes[order[i]].dev);
			rwait_ok(w, g.nodes[order[i]].tok, what);
		}
		free(order);
		for (int id = 0; id < g.nn; id++) {
			struct node *nd = &g.nodes[id];

			if (nd->slot < 0)
				continue;
			if (base[nd->dev][nd->slot] != nd->expect)
				th_rfail("it %d (n %d, %d nodes): node %d (kind %d, dev %d) has %#" PRIx64
					 ", want %#" PRIx64 "\n",
					 it, n, g.nn, id, nd->kind, nd->dev, base[nd->dev][nd->slot],
					 nd->expect);
		}
		th_close(w);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_permutations),
		cmocka_unit_test(test_random_permute_helper),
		cmocka_unit_test(test_random_dags),
	};

	seed = th_seed();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
