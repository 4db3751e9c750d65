/* SPDX-License-Identifier: MIT */
/*
 * test_permute.c - the permutation that deadlocks blocking collectives, N = 2, 4, 8.
 *
 * Sending buffer [i], receiving buffer [-1]. Three programs:
 *  - split:      even ranks send to (i+1)%N then recv from (i-1)%N; odd ranks
 *                the reverse (the program that deadlocks with blocking ops);
 *  - send first: every rank posts its send, then its recv;
 *  - recv first: every rank posts its recv, then its send.
 * Each is run with the devices posting in rank order, in reverse order, and
 * one op per device at a time (round robin). Every rank's receiving buffer
 * ends as [(i-1) mod N], the sending buffer is unchanged, and no recv
 * completes before the send that feeds it is posted.
 */
#include "helpers/th.h"

#include <errno.h>

#define COUNT 64
#define MAXN 8
#define TAG 0x5157

enum program { SPLIT, SEND_FIRST, RECV_FIRST };
enum interleave { BY_RANK, BY_REVERSE_RANK, ROUND_ROBIN };

struct ctx {
	accdma_world *w;
	int n;
	accdma_key skey[MAXN], rkey[MAXN];
	float *sbuf[MAXN], *rbuf[MAXN];
	accdma_token stok[MAXN], rtok[MAXN];
	int posted_send[MAXN];
};

static int send_is_first(enum program p, int i)
{
	switch (p) {
	case SPLIT:
		return i % 2 == 0;
	case SEND_FIRST:
		return 1;
	case RECV_FIRST:
		return 0;
	}
	return 1;
}

/* Post op number @k (0 or 1) of rank @i's program. */
static void post_op(struct ctx *c, enum program p, int i, int k)
{
	accdma_queue *q = th_q(c->w, i);
	int n = c->n;
	uint64_t len = COUNT * sizeof(float);
	int do_send = (k == 0) == send_is_first(p, i);

	if (do_send) {
		assert_int_equal(accdma_send(q, (i + 1) % n, TAG, c->skey[i], 0, len, NULL, 0,
					     &c->stok[i]),
				 0);
		c->posted_send[i] = 1;
	} else {
		assert_int_equal(accdma_recv(q, (i - 1 + n) % n, TAG, c->rkey[i], 0, len, NULL, 0,
					     &c->rtok[i]),
				 0);
	}
}

/* The recv of rank i cannot be complete unless rank i-1's send was posted. */
static void check_not_early(struct ctx *c, int i)
{
	int n = c->n, prev = (i - 1 + n) % n;

	if (c->rtok[i] && !c->posted_send[prev]) {
		th_kick(c->w, i, 1);
		th_pending(c->w, c->rtok[i]);
		th_check_f32(c->rbuf[i], COUNT, -1.0f, "recv buffer before its send");
	}
}

static void run(int n, enum program p, enum interleave il)
{
	struct ctx c;

	memset(&c, 0, sizeof(c));
	c.n = n;
	c.w = th_open(n);
	for (int i = 0; i < n; i++) {
		c.skey[i] = th_alloc(c.w, i, COUNT * sizeof(float), (void **)&c.sbuf[i]);
		c.rkey[i] = th_alloc(c.w, i, COUNT * sizeof(float), (void **)&c.rbuf[i]);
		th_fill_f32(c.sbuf[i], COUNT, (float)i);
		th_fill_f32(c.rbuf[i], COUNT, -1.0f);
	}

	if (il == ROUND_ROBIN) {
		for (int k = 0; k < 2; k++)
			for (int i = 0; i < n; i++) {
				post_op(&c, p, i, k);
				check_not_early(&c, i);
			}
	} else {
		for (int j = 0; j < n; j++) {
			int i = il == BY_RANK ? j : n - 1 - j;

			post_op(&c, p, i, 0);
			post_op(&c, p, i, 1);
			check_not_early(&c, i);
		}
	}

	/* wait in an order unrelated to the posting order */
	for (int i = n - 1; i >= 0; i--)
		th_wait_ok(c.w, c.rtok[i]);
	for (int i = 0; i < n; i++)
		th_wait_ok(c.w, c.stok[i]);

	for (int i = 0; i < n; i++) {
		th_check_f32(c.rbuf[i], COUNT, (float)((i - 1 + n) % n), "permuted value");
		th_check_f32(c.sbuf[i], COUNT, (float)i, "send buffer unchanged");
	}
	th_close(c.w);
}

static void test_permute_split(void **state)
{
	int n = *(int *)*state;

	run(n, SPLIT, BY_RANK);
	run(n, SPLIT, BY_REVERSE_RANK);
	run(n, SPLIT, ROUND_ROBIN);
}

static void test_permute_send_first(void **state)
{
	int n = *(int *)*state;

	run(n, SEND_FIRST, BY_RANK);
	run(n, SEND_FIRST, BY_REVERSE_RANK);
	run(n, SEND_FIRST, ROUND_ROBIN);
}

static void test_permute_recv_first(void **state)
{
	int n = *(int *)*state;

	run(n, RECV_FIRST, BY_RANK);
	run(n, RECV_FIRST, BY_REVERSE_RANK);
	run(n, RECV_FIRST, ROUND_ROBIN);
}

/* The same permutation several times in a row without any host wait between
 * rounds: round r sends [i + 100 r] into slot r. FIFO matching on one tag
 * keeps rounds apart. */
static void test_permute_rounds(void **state)
{
	int n = *(int *)*state;
	enum { ROUNDS = 5 };
	accdma_world *w = th_open(n);
	accdma_key sk[MAXN], rk[MAXN];
	float *sb[MAXN], *rb[MAXN];
	accdma_token st[MAXN][ROUNDS], rt[MAXN][ROUNDS];
	uint64_t len = COUNT * sizeof(float);

	for (int i = 0; i < n; i++) {
		sk[i] = th_alloc(w, i, len * ROUNDS, (void **)&sb[i]);
		rk[i] = th_alloc(w, i, len * ROUNDS, (void **)&rb[i]);
		for (int r = 0; r < ROUNDS; r++) {
			th_fill_f32(sb[i] + r * COUNT, COUNT, (float)(i + 100 * r));
			th_fill_f32(rb[i] + r * COUNT, COUNT, -1.0f);
		}
	}
	for (int r = 0; r < ROUNDS; r++)
		for (int i = 0; i < n; i++) {
			accdma_queue *q = th_q(w, i);
			int next = (i + 1) % n, prev = (i - 1 + n) % n;

			if ((i + r) % 2) {
				assert_int_equal(accdma_recv(q, prev, TAG, rk[i], r * len, len, NULL,
							     0, &rt[i][r]),
						 0);
				assert_int_equal(accdma_send(q, next, TAG, sk[i], r * len, len, NULL,
							     0, &st[i][r]),
						 0);
			} else {
				assert_int_equal(accdma_send(q, next, TAG, sk[i], r * len, len, NULL,
							     0, &st[i][r]),
						 0);
				assert_int_equal(accdma_recv(q, prev, TAG, rk[i], r * len, len, NULL,
							     0, &rt[i][r]),
						 0);
			}
		}
	for (int i = 0; i < n; i++)
		for (int r = ROUNDS - 1; r >= 0; r--) {
			th_wait_ok(w, rt[i][r]);
			th_wait_ok(w, st[i][r]);
		}
	for (int i = 0; i < n; i++)
		for (int r = 0; r < ROUNDS; r++)
			th_check_f32(rb[i] + r * COUNT, COUNT, (float)((i - 1 + n) % n + 100 * r),
				     "round value");
	th_close(w);
}

int main(void)
{
	static int n2 = 2, n4 = 4, n8 = 8;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(test_permute_split, &n2),
		cmocka_unit_test_prestate(test_permute_split, &n4),
		cmocka_unit_test_prestate(test_permute_split, &n8),
		cmocka_unit_test_prestate(test_permute_send_first, &n2),
		cmocka_unit_test_prestate(test_permute_send_first, &n4),
		cmocka_unit_test_prestate(test_permute_send_first, &n8),
		cmocka_unit_test_prestate(test_permute_recv_first, &n2),
		cmocka_unit_test_prestate(test_permute_recv_first, &n4),
		cmocka_unit_test_prestate(test_permute_recv_first, &n8),
		cmocka_unit_test_prestate(test_permute_rounds, &n2),
		cmocka_unit_test_prestate(test_permute_rounds, &n8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
