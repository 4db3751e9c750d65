/* SPDX-License-Identifier: MIT */
/*
 * test_exec_chain.c - compute on the device timeline, chained on tokens.
 *
 *  - pipeline with computation, N = 2, 4, 8: each receiver chains an exec
 *    that adds 3.0 to the received value, depending only on the recv's token
 *    (no host wait in between); result [i - N/2 + 3.0]. The exec also records
 *    what it saw, proving it ran after the data landed.
 *  - recv -> compute -> send -> recv -> compute chains across devices, posted
 *    all at once, back to front.
 *  - an exec whose dependency is not complete does not run.
 *  - after_all joins tokens; an exec depending on it runs after all of them.
 *  - multiple deps: exec ordering follows the dependency DAG.
 */
#include "helpers/th.h"

#include <errno.h>

#define COUNT 128
#define MAXN 8

struct add_arg {
	float *buf;
	int count;
	float add;
	float seen;        /* the first element before the add */
	int consistent;    /* every element equal before the add */
	atomic_int ran;
};

static int add_fn(void *arg)
{
	struct add_arg *a = arg;

	a->seen = a->buf[0];
	a->consistent = 1;
	for (int k = 0; k < a->count; k++) {
		if (a->buf[k] != a->seen)
			a->consistent = 0;
		a->buf[k] += a->add;
	}
	atomic_fetch_add(&a->ran, 1);
	return 0;
}

static void add_init(struct add_arg *a, float *buf, int count, float add)
{
	a->buf = buf;
	a->count = count;
	a->add = add;
	a->seen = -1000.0f;
	a->consistent = 0;
	atomic_init(&a->ran, 0);
}

static void test_pipeline_exec(void **state)
{
	int n = *(int *)*state;
	accdma_world *w = th_open(n);
	accdma_key key[MAXN];
	float *buf[MAXN];
	accdma_token tok[MAXN], etok[MAXN] = { 0 };
	static struct add_arg args[MAXN];
	uint64_t len = COUNT * sizeof(float);

	for (int i = 0; i < n; i++) {
		key[i] = th_alloc(w, i, len, (void **)&buf[i]);
		th_fill_f32(buf[i], COUNT, (float)i);
		add_init(&args[i], buf[i], COUNT, 3.0f);
	}
	/* receivers first: recv then exec(dep recv); the exec must not run yet */
	for (int i = n / 2; i < n; i++) {
		accdma_queue *q = th_q(w, i);

		assert_int_equal(accdma_recv(q, i - n / 2, 9, key[i], 0, len, NULL, 0, &tok[i]), 0);
		assert_int_equal(accdma_exec(q, add_fn, &args[i], &tok[i], 1, &etok[i]), 0);
	}
	for (int i = n / 2; i < n; i++) {
		th_kick(w, i, 2);
		th_pending(w, etok[i]);
		assert_int_equal(atomic_load(&args[i].ran), 0);
	}
	for (int i = 0; i < n / 2; i++)
		assert_int_equal(accdma_send(th_q(w, i), i + n / 2, 9, key[i], 0, len, NULL, 0,
					     &tok[i]),
				 0);
	/* wait on the exec only, then the recv: the exec completing implies the recv did */
	for (int i = n / 2; i < n; i++) {
		th_wait_ok(w, etok[i]);
		th_wait_ok(w, tok[i]);
	}
	for (int i = 0; i < n / 2; i++)
		th_wait_ok(w, tok[i]);
	for (int i = 0; i < n; i++) {
		if (i < n / 2) {
			th_check_f32(buf[i], COUNT, (float)i, "sender unchanged");
		} else {
			th_check_f32(buf[i], COUNT, (float)(i - n / 2) + 3.0f, "recv + 3");
			assert_int_equal(atomic_load(&args[i].ran), 1);
			assert_true(args[i].seen == (float)(i - n / 2));
			assert_int_equal(args[i].consistent, 1);
		}
	}
	th_close(w);
}

/* A value travels 0 -> 1 -> ... -> N-1, each hop recv -> exec(+hop+1) -> send,
 * all chained on tokens, posted from the last device back to the first. */
static void test_chain_across_devices(void **state)
{
	int n = *(int *)*state;
	accdma_world *w = th_open(n);
	accdma_key key[MAXN];
	float *buf[MAXN];
	static struct add_arg args[MAXN];
	accdma_token rt[MAXN] = { 0 }, et[MAXN], st[MAXN] = { 0 };
	uint64_t len = COUNT * sizeof(float);
	float want;

	for (int i = 0; i < n; i++) {
		key[i] = th_alloc(w, i, len, (void **)&buf[i]);
		add_init(&args[i], buf[i], COUNT, (float)(i + 1));
	}
	th_fill_f32(buf[0], COUNT, 1000.0f);
	for (int i = n - 1; i >= 0; i--) {
		accdma_queue *q = th_q(w, i);
		int nd = 0;

		if (i > 0) {
			assert_int_equal(accdma_recv(q, i - 1, 3, key[i], 0, len, NULL, 0, &rt[i]), 0);
			nd = 1;
		}
		assert_int_equal(accdma_exec(q, add_fn, &args[i], nd ? &rt[i] : NULL, nd, &et[i]), 0);
		if (i < n - 1)
			assert_int_equal(accdma_send(q, i + 1, 3, key[i], 0, len, &et[i], 1, &st[i]), 0);
	}
	/* the last exec completing means the whole chain ran */
	th_wait_ok(w, et[n - 1]);
	for (int i = 0; i < n; i++) {
		if (rt[i])
			th_wait_ok(w, rt[i]);
		if (i < n - 1) {
			th_wait_ok(w, et[i]);
			th_wait_ok(w, st[i]);
		}
	}
	want = 1000.0f;
	for (int i = 0; i < n; i++) {
		assert_true(args[i].seen == want);
		assert_int_equal(args[i].consistent, 1);
		want += (float)(i + 1);
		th_check_f32(buf[i], COUNT, want, "value after hop");
	}
	th_close(w);
}

/* Exec ordering follows dependencies, not posting order: a diamond
 * a -> (b, c) -> d posted as d-last, and a second exec posted earlier than
 * a but depending on d. */
static void test_exec_dag_order(void **state)
{
	(void)state;
	accdma_world *w = th_open(1);
	accdma_queue *q = th_q(w, 0);
	static struct th_log log;
	static struct th_mark m[6];
	accdma_token a, b, c, d, j, e;
	accdma_token bc[2];

	th_log_init(&log);
	for (int i = 0; i < 6; i++)
		m[i] = (struct th_mark){ &log, i };

	/* a waits on a recv that is posted last, so nothing can run early */
	accdma_key k = th_alloc(w, 0, 128, NULL);
	accdma_token r, s;

	assert_int_equal(accdma_recv(q, 0, 11, k, 0, 64, NULL, 0, &r), 0);
	assert_int_equal(accdma_exec(q, th_mark_fn, &m[0], &r, 1, &a), 0);
	assert_int_equal(accdma_exec(q, th_mark_fn, &m[1], &a, 1, &b), 0);
	assert_int_equal(accdma_exec(q, th_mark_fn, &m[2], &a, 1, &c), 0);
	bc[0] = b;
	bc[1] = c;
	assert_int_equal(accdma_after_all(q, bc, 2, &j), 0);
	assert_int_equal(accdma_exec(q, th_mark_fn, &m[3], &j, 1, &d), 0);
	assert_int_equal(accdma_exec(q, th_mark_fn, &m[4], &d, 1, &e), 0);
	th_kick(w, 0, 2);
	th_pending(w, a);
	th_pending(w, j);
	assert_int_equal(atomic_load(&log.n), 0);

	assert_int_equal(accdma_send(q, 0, 11, k, 64, 64, NULL, 0, &s), 0);
	th_wait_ok(w, e);
	assert_int_equal(atomic_load(&log.n), 5);
	assert_int_equal(th_log_pos(&log, 0), 0);
	assert_true(th_log_pos(&log, 1) == 1 || th_log_pos(&log, 1) == 2);
	assert_true(th_log_pos(&log, 2) == 1 || th_log_pos(&log, 2) == 2);
	assert_int_equal(th_log_pos(&log, 3), 3);
	assert_int_equal(th_log_pos(&log, 4), 4);
	th_wait_ok(w, r);
	th_wait_ok(w, s);
	th_wait_ok(w, a);
	th_wait_ok(w, b);
	th_wait_ok(w, c);
	th_wait_ok(w, j);
	th_wait_ok(w, d);
	th_close(w);
}

/* A chain of 16 execs each depending on the previous, plus independent execs:
 * the chain runs in order; tokens are waited in reverse. */
static void test_exec_long_chain(void **state)
{
	(void)state;
	enum { L = 16 };
	accdma_world *w = th_open(2);
	accdma_queue *q = th_q(w, 1);
	static struct th_log log;
	static struct th_mark m[L];
	accdma_token t[L];

	th_log_init(&log);
	for (int i = 0; i < L; i++) {
		m[i] = (struct th_mark){ &log, i };
		assert_int_equal(accdma_exec(q, th_mark_fn, &m[i], i ? &t[i - 1] : NULL, i ? 1 : 0,
					     &t[i]),
				 0);
	}
	for (int i = L - 1; i >= 0; i--)
		th_wait_ok(w, t[i]);
	{
		int want[L];

		for (int i = 0; i < L; i++)
			want[i] = i;
		th_log_expect(&log, want, L);
	}
	th_close(w);
}

/* An exec may take up to ACCDMA_MAX_DEPS deps, from sends, recvs and execs. */
static void test_exec_max_deps(void **state)
{
	(void)state;
	accdma_world *w = th_open(2);
	accdma_queue *q0 = th_q(w, 0), *q1 = th_q(w, 1);
	accdma_key k0, k1;
	uint8_t *b0, *b1;
	accdma_token r[ACCDMA_MAX_DEPS], s[ACCDMA_MAX_DEPS], e;
	static struct th_log log;
	static struct th_mark m = { &log, 77 };

	th_log_init(&log);
	k0 = th_alloc(w, 0, ACCDMA_MAX_DEPS * 16, (void **)&b0);
	k1 = th_alloc(w, 1, ACCDMA_MAX_DEPS * 16, (void **)&b1);
	for (int i = 0; i < ACCDMA_MAX_DEPS; i++) {
		th_fill_u8(b0 + i * 16, 16, (uint8_t)(i + 1));
		assert_int_equal(accdma_recv(q1, 0, (uint64_t)i, k1, (uint64_t)i * 16, 16, NULL, 0,
					     &r[i]),
				 0);
	}
	assert_int_equal(accdma_exec(q1, th_mark_fn, &m, r, ACCDMA_MAX_DEPS, &e), 0);
	/* feed the recvs in reverse tag order; the exec waits for the last one */
	for (int i = ACCDMA_MAX_DEPS - 1; i >= 0; i--) {
		th_kick(w, 1, 1);
		th_pending(w, e);
		assert_int_equal(atomic_load(&log.n), 0);
		assert_int_equal(accdma_send(q0, 1, (uint64_t)i, k0, (uint64_t)i * 16, 16, NULL, 0,
					     &s[i]),
				 0);
	}
	th_wait_ok(w, e);
	assert_int_equal(atomic_load(&log.n), 1);
	th_wait_all_ok(w, r, ACCDMA_MAX_DEPS);
	th_wait_all_ok(w, s, ACCDMA_MAX_DEPS);
	for (int i = 0; i < ACCDMA_MAX_DEPS; i++)
		th_check_u8(b1 + i * 16, 16, (uint8_t)(i + 1), "recv by tag");
	th_close(w);
}

int main(void)
{
	static int n2 = 2, n4 = 4, n8 = 8;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(test_pipeline_exec, &n2),
		cmocka_unit_test_prestate(test_pipeline_exec, &n4),
		cmocka_unit_test_prestate(test_pipeline_exec, &n8),
		cmocka_unit_test_prestate(test_chain_across_devices, &n2),
		cmocka_unit_test_prestate(test_chain_across_devices, &n8),
		cmocka_unit_test(test_exec_dag_order),
		cmocka_unit_test(test_exec_long_chain),
		cmocka_unit_test(test_exec_max_deps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
