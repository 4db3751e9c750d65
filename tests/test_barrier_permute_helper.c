/* SPDX-License-Identifier: MIT */
/*
 * test_barrier_permute_helper.c - the explicit cross-device barrier and the
 * collective-permute helper.
 *
 * barrier: no device passes before every device posted its k-th barrier;
 * work before a barrier (chained into it) is visible to work after it on every
 * device; barriers can take deps.
 * permute: XLA collective-permute semantics: each target gets its source's
 * data, a device that is no target gets zeros, sources' buffers are unchanged,
 * nothing outside the ranges is written; bad pair lists are -EINVAL; the
 * helper chains on deps and its token like any op.
 */
#include "helpers/th.h"

#include <errno.h>

#define MAXN 8
#define LEN 256

/* ---- barrier ---------------------------------------------------------- */

struct bar_ctx {
	int n;
	int round;
	int written[MAXN];     /* written by device d's "before" exec */
	int seen_all[MAXN];    /* set by device d's "after" exec */
	struct bar_arg {
		struct bar_ctx *c;
		int dev;
	} args[MAXN];
};

static int before_fn(void *arg)
{
	struct bar_arg *a = arg;

	a->c->written[a->dev] = a->c->round + 1;
	return 0;
}

static int after_fn(void *arg)
{
	struct bar_arg *a = arg;
	int all = 1;

	for (int d = 0; d < a->c->n; d++)
		if (a->c->written[d] != a->c->round + 1)
			all = 0;
	a->c->seen_all[a->dev] = all;
	return 0;
}

static void test_barrier(void **state)
{
	int n = *(int *)*state;
	accdma_world *w = th_open(n);
	static struct bar_ctx c;
	accdma_token before[MAXN], bar[MAXN], after[MAXN];

	memset(&c, 0, sizeof(c));
	c.n = n;
	for (int d = 0; d < n; d++)
		c.args[d] = (struct bar_arg){ &c, d };
	for (int round = 0; round < 3; round++) {
		c.round = round; /* read by execs only after the host posts them */
		for (int d = 0; d < n; d++) {
			accdma_queue *q = th_q(w, d);

			assert_int_equal(accdma_exec(q, before_fn, &c.args[d], NULL, 0, &before[d]), 0);
			assert_int_equal(accdma_barrier(q, &before[d], 1, &bar[d]), 0);
			assert_int_equal(accdma_exec(q, after_fn, &c.args[d], &bar[d], 1, &after[d]),
					 0);
			if (d < n - 1) {
				th_kick(w, d, 1);
				th_pending(w, bar[d]);
				th_pending(w, after[d]);
			}
		}
		for (int d = n - 1; d >= 0; d--) {
			th_wait_ok(w, after[d]);
			th_wait_ok(w, bar[d]);
			th_wait_ok(w, before[d]);
		}
		for (int d = 0; d < n; d++)
			assert_int_equal(c.seen_all[d], 1);
		memset(c.seen_all, 0, sizeof(c.seen_all));
	}
	th_close(w);
}

/* A barrier with a dep: device 0's barrier waits for a recv; nobody passes
 * until that recv's send is posted. */
static void test_barrier_with_dep(void **state)
{
	(void)state;
	enum { NB = 4 };
	accdma_world *w = th_open(NB);
	accdma_key k0 = th_alloc(w, 0, LEN, NULL), k3 = th_alloc(w, 3, LEN, NULL);
	accdma_token r, s, bar[NB];

	assert_int_equal(accdma_recv(th_q(w, 0), 3, 1, k0, 0, LEN, NULL, 0, &r), 0);
	assert_int_equal(accdma_barrier(th_q(w, 0), &r, 1, &bar[0]), 0);
	for (int d = 1; d < NB; d++)
		assert_int_equal(accdma_barrier(th_q(w, d), NULL, 0, &bar[d]), 0);
	for (int d = 1; d < NB; d++)
		th_kick(w, d, 1);
	for (int d = 0; d < NB; d++)
		th_pending(w, bar[d]);
	/* device 3 sends on another queue-free path: its queue holds the barrier,
	 * which does not block later ops */
	assert_int_equal(accdma_send(th_q(w, 3), 0, 1, k3, 0, LEN, NULL, 0, &s), 0);
	th_wait_ok(w, r);
	th_wait_ok(w, s);
	for (int d = 0; d < NB; d++)
		th_wait_ok(w, bar[d]);
	th_close(w);
}

/* ---- permute ---------------------------------------------------------- */

struct perm_world {
	accdma_world *w;
	int n;
	accdma_key sk[MAXN], rk[MAXN];
	uint8_t *sb[MAXN], *rb[MAXN];
};

#define ROFF 64
#define RSIZE (ROFF + LEN + 64)

static void perm_open(struct perm_world *p, int n)
{
	p->n = n;
	p->w = th_open(n);
	for (int d = 0; d < n; d++) {
		p->sk[d] = th_alloc(p->w, d, LEN, (void **)&p->sb[d]);
		p->rk[d] = th_alloc(p->w, d, RSIZE, (void **)&p->rb[d]);
		th_fill_u8(p->sb[d], LEN, (uint8_t)(0x30 + d));
		th_fill_u8(p->rb[d], RSIZE, 0xFF);
	}
}

/* Run one permute on every device (posted in reverse rank order) and check. */
static void perm_run(struct perm_world *p, const struct accdma_pair *pairs, int np)
{
	int from[MAXN];
	accdma_token t[MAXN];

	for (int d = 0; d < p->n; d++)
		from[d] = -1;
	for (int i = 0; i < np; i++)
		from[pairs[i].target] = pairs[i].source;
	for (int d = 0; d < p->n; d++)
		th_fill_u8(p->rb[d], RSIZE, 0xFF);
	for (int d = p->n - 1; d >= 0; d--)
		assert_int_equal(accdma_permute(th_q(p->w, d), pairs, np, 5, p->sk[d], 0, p->rk[d],
						ROFF, LEN, NULL, 0, &t[d]),
				 0);
	for (int d = 0; d < p->n; d++)
		th_wait_ok(p->w, t[d]);
	for (int d = 0; d < p->n; d++) {
		th_check_u8(p->rb[d], ROFF, 0xFF, "before the recv range");
		th_check_u8(p->rb[d] + ROFF, LEN, from[d] < 0 ? 0 : (uint8_t)(0x30 + from[d]),
			    from[d] < 0 ? "non-target zero-filled" : "target got its source");
		th_check_u8(p->rb[d] + ROFF + LEN, RSIZE - ROFF - LEN, 0xFF, "after the recv range");
		th_check_u8(p->sb[d], LEN, (uint8_t)(0x30 + d), "source unchanged");
	}
}

static void test_permute_cyclic(void **state)
{
	int n = *(int *)*state;
	struct perm_world p;
	struct accdma_pair pairs[MAXN] = { { 0, 0 } };

	perm_open(&p, n);
	for (int i = 0; i < n; i++)
		pairs[i] = (struct accdma_pair){ i, (i + 1) % n };
	perm_run(&p, pairs, n);
	/* reverse shift, pairs listed in another order */
	for (int i = 0; i < n; i++)
		pairs[i] = (struct accdma_pair){ n - 1 - i, (2 * n - 2 - i) % n };
	perm_run(&p, pairs, n);
	th_close(p.w);
}

static void test_permute_partial(void **state)
{
	(void)state;
	struct perm_world p;

	perm_open(&p, 5);
	/* 0 -> 2, 3 -> 0; 1, 3 and 4 are no targets (zeros); 1, 2, 4 send nothing */
	perm_run(&p, (struct accdma_pair[]){ { 0, 2 }, { 3, 0 } }, 2);
	/* a self pair and a swap */
	perm_run(&p, (struct accdma_pair[]){ { 4, 4 }, { 1, 2 }, { 2, 1 } }, 3);
	/* empty: everybody gets zeros */
	perm_run(&p, NULL, 0);
	/* identity */
	perm_run(&p, (struct accdma_pair[]){ { 0, 0 }, { 1, 1 }, { 2, 2 }, { 3, 3 }, { 4, 4 } }, 5);
	th_close(p.w);
}

static void test_permute_bad_pairs(void **state)
{
	(void)state;
	struct perm_world p;
	accdma_token t;
	accdma_queue *q;

	perm_open(&p, 3);
	q = th_q(p.w, 0);
#define BAD(...)                                                                                  \
	assert_int_equal(accdma_permute(q, (struct accdma_pair[]){ __VA_ARGS__ },                 \
					(int)(sizeof((struct accdma_pair[]){ __VA_ARGS__ }) /      \
					      sizeof(struct accdma_pair)),                         \
					5, p.sk[0], 0, p.rk[0], 0, LEN, NULL, 0, &t),              \
			 -EINVAL)
	BAD({ 0, 1 }, { 0, 2 });  /* duplicate source */
	BAD({ 0, 1 }, { 2, 1 });  /* duplicate target */
	BAD({ 0, 3 });            /* target out of range */
	BAD({ -1, 0 });           /* source out of range */
	BAD({ 0, 1 }, { 1, -2 }); /* target out of range */
#undef BAD
	assert_int_equal(accdma_permute(q, NULL, 1, 5, p.sk[0], 0, p.rk[0], 0, LEN, NULL, 0, &t),
			 -EINVAL);
	assert_int_equal(accdma_permute(q, (struct accdma_pair[]){ { 0, 1 } }, -1, 5, p.sk[0], 0,
					p.rk[0], 0, LEN, NULL, 0, &t),
			 -EINVAL);
	assert_int_equal(accdma_permute(NULL, (struct accdma_pair[]){ { 0, 1 } }, 1, 5, p.sk[0], 0,
					p.rk[0], 0, LEN, NULL, 0, &t),
			 -EBADF);
	/* nothing was posted: a good permute afterwards works on every device */
	perm_run(&p, (struct accdma_pair[]){ { 0, 1 }, { 1, 2 }, { 2, 0 } }, 3);
	th_close(p.w);
}

/* Two permutes back to back on the same tag without waiting (FIFO), chained
 * on deps: the second one's send buffer is what the first one received. */
static void test_permute_chained(void **state)
{
	(void)state;
	enum { NP = 4 };
	struct perm_world p;
	struct accdma_pair shift[NP];
	accdma_token t1[NP], t2[NP];
	accdma_key mid[NP];
	uint8_t *mb[NP];

	perm_open(&p, NP);
	for (int i = 0; i < NP; i++) {
		shift[i] = (struct accdma_pair){ i, (i + 1) % NP };
		mid[i] = th_alloc(p.w, i, LEN, (void **)&mb[i]);
	}
	for (int d = 0; d < NP; d++) {
		accdma_queue *q = th_q(p.w, d);

		assert_int_equal(accdma_permute(q, shift, NP, 9, p.sk[d], 0, mid[d], 0, LEN, NULL, 0,
						&t1[d]),
				 0);
		assert_int_equal(accdma_permute(q, shift, NP, 9, mid[d], 0, p.rk[d], ROFF, LEN,
						&t1[d], 1, &t2[d]),
				 0);
	}
	for (int d = 0; d < NP; d++) {
		th_wait_ok(p.w, t2[d]);
		th_wait_ok(p.w, t1[d]);
	}
	for (int d = 0; d < NP; d++) {
		th_check_u8(mb[d], LEN, (uint8_t)(0x30 + (d + NP - 1) % NP), "after one shift");
		th_check_u8(p.rb[d] + ROFF, LEN, (uint8_t)(0x30 + (d + NP - 2) % NP),
			    "after two shifts");
	}
	th_close(p.w);
}

int main(void)
{
	static int n2 = 2, n3 = 3, n4 = 4, n8 = 8;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(test_barrier, &n2),
		cmocka_unit_test_prestate(test_barrier, &n3),
		cmocka_unit_test_prestate(test_barrier, &n8),
		cmocka_unit_test(test_barrier_with_dep),
		cmocka_unit_test_prestate(test_permute_cyclic, &n2),
		cmocka_unit_test_prestate(test_permute_cyclic, &n4),
		cmocka_unit_test_prestate(test_permute_cyclic, &n8),
		cmocka_unit_test(test_permute_partial),
		cmocka_unit_test(test_permute_bad_pairs),
		cmocka_unit_test(test_permute_chained),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
