/* SPDX-License-Identifier: MIT */
/*
 * test_stats.c - per-queue counters: submitted, completed, errors.
 *
 *  - a fresh queue counts zero; every posted op (single or batched) counts
 *    once as submitted on its own queue only; rejected posts count nothing;
 *  - once every op is waited, completed == submitted;
 *  - errors count ops that completed with a non-OK status; ops that are
 *    still pending are not completed.
 */
#include "helpers/th.h"

#include <errno.h>

#define LEN 2048 /* above eager_max (1 KiB): sends wait for their recvs */

static struct accdma_queue_stats stats(accdma_queue *q)
{
	struct accdma_queue_stats s;

	memset(&s, 0xff, sizeof(s));
	assert_int_equal(accdma_queue_stats(q, &s), 0);
	return s;
}

static void test_counts(void **state)
{
	(void)state;
	struct accdma_world_opts o;
	accdma_world *w;
	accdma_queue *q0, *q0b, *q1;
	accdma_key k0, k1;
	accdma_token t[8], r, s;
	struct accdma_queue_stats a;
	struct accdma_op ops[3];

	th_opts(&o, 2);
	o.queues = 2;
	w = th_open_opts(&o);
	q0 = th_q(w, 0);
	q0b = th_qi(w, 0, 1);
	q1 = th_q(w, 1);
	k0 = th_alloc(w, 0, 4 * LEN, NULL);
	k1 = th_alloc(w, 1, 4 * LEN, NULL);

	a = stats(q0);
	assert_true(a.submitted == 0 && a.completed == 0 && a.errors == 0);

	/* 3 single posts and a batch of 3 on q0 */
	assert_int_equal(accdma_fence(q0, NULL, 0, &t[0]), 0);
	assert_int_equal(accdma_exec(q0, th_flag_fn, &(atomic_int){ 0 }, NULL, 0, &t[1]), 0);
	assert_int_equal(accdma_write(q0, 1, k0, 0, LEN, k1, 0, NULL, 0, &t[2]), 0);
	memset(ops, 0, sizeof(ops));
	for (int i = 0; i < 3; i++)
		ops[i].kind = ACCDMA_OP_FENCE;
	assert_int_equal(accdma_post(q0, ops, 3, &t[3]), 3);
	/* rejected posts */
	assert_int_equal(accdma_send(q0, 5, 0, k0, 0, LEN, NULL, 0, &t[6]), -EINVAL);
	assert_int_equal(accdma_exec(q0, NULL, NULL, NULL, 0, &t[6]), -EINVAL);
	th_wait_all_ok(w, t, 6);
	a = stats(q0);
	assert_true(a.submitted == 6);
	assert_true(a.completed == 6);
	assert_true(a.errors == 0);
	/* other queues untouched */
	a = stats(q0b);
	assert_true(a.submitted == 0 && a.completed == 0 && a.errors == 0);
	a = stats(q1);
	assert_true(a.submitted == 0 && a.completed == 0 && a.errors == 0);

	/* errors: a bad-key write and a failing exec on q0b */
	assert_int_equal(accdma_write(q0b, 1, k0 + 50, 0, LEN, k1, 0, NULL, 0, &t[0]), 0);
	assert_int_equal(accdma_exec(q0b, th_fail_fn, NULL, NULL, 0, &t[1]), 0);
	th_wait_st(w, t[0], ACCDMA_ST_BAD_KEY);
	th_wait_st(w, t[1], ACCDMA_ST_EXEC_FAILED);
	a = stats(q0b);
	assert_true(a.submitted == 2);
	assert_true(a.completed == 2);
	assert_true(a.errors == 2);

	/* a pending op is submitted but not completed */
	assert_int_equal(accdma_recv(q1, 0, 3, k1, 0, LEN, NULL, 0, &r), 0);
	th_kick(w, 1, 1); /* adds one submitted+completed exec */
	a = stats(q1);
	assert_true(a.submitted == 2);
	assert_true(a.completed == 1);
	assert_true(a.errors == 0);
	assert_int_equal(accdma_send(q0, 1, 3, k0, 0, LEN, NULL, 0, &s), 0);
	th_wait_ok(w, r);
	th_wait_ok(w, s);
	a = stats(q1);
	assert_true(a.submitted == 2 && a.completed == 2 && a.errors == 0);
	a = stats(q0);
	assert_true(a.submitted == 7 && a.completed == 7 && a.errors == 0);

	assert_int_equal(accdma_queue_stats(NULL, &a), -EBADF);
	assert_int_equal(accdma_queue_stats(q0, NULL), -EINVAL);
	th_close(w);
}

/* Many ops through a small queue: the counters stay exact. */
static void test_counts_many(void **state)
{
	(void)state;
	enum { ROUNDS = 500 };
	struct accdma_world_opts o;
	accdma_world *w;
	accdma_key k0, k1;
	struct accdma_queue_stats a, b;

	th_opts(&o, 2);
	o.queue_depth = 8;
	w = th_open_opts(&o);
	k0 = th_alloc(w, 0, LEN, NULL);
	k1 = th_alloc(w, 1, LEN, NULL);
	for (int i = 0; i < ROUNDS; i++) {
		accdma_token s, r;

		assert_int_equal(accdma_send(th_q(w, 0), 1, 1, k0, 0, LEN, NULL, 0, &s), 0);
		assert_int_equal(accdma_recv(th_q(w, 1), 0, 1, k1, 0, i % 10 ? LEN : LEN / 2, NULL, 0,
					     &r),
				 0);
		th_wait_st(w, s, i % 10 ? ACCDMA_OK : ACCDMA_ST_TRUNCATED);
		th_wait_st(w, r, i % 10 ? ACCDMA_OK : ACCDMA_ST_TRUNCATED);
	}
	a = stats(th_q(w, 0));
	b = stats(th_q(w, 1));
	assert_true(a.submitted == ROUNDS && a.completed == ROUNDS && a.errors == ROUNDS / 10);
	assert_true(b.submitted == ROUNDS && b.completed == ROUNDS && b.errors == ROUNDS / 10);
	th_close(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_counts_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
