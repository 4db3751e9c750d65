/* SPDX-License-Identifier: MIT */
/*
 * test_fence.c - a fence completes after every earlier op of its queue, and
 * later ops of the queue do not start before it. It is local: other queues
 * and other devices are not held up.
 */
#include "helpers/th.h"

#include <errno.h>

#define LEN 2048 /* above eager_max (1 KiB): sends wait for their recvs */

struct probe {
	const uint8_t *a, *b;
	uint8_t want_a, want_b;
	int saw_a, saw_b; /* 1 if every byte was the wanted value when the exec ran */
	atomic_int ran;
};

static int probe_fn(void *arg)
{
	struct probe *p = arg;

	p->saw_a = p->saw_b = 1;
	for (int i = 0; i < LEN; i++) {
		if (p->a[i] != p->want_a)
			p->saw_a = 0;
		if (p->b[i] != p->want_b)
			p->saw_b = 0;
	}
	atomic_store(&p->ran, 1);
	return 0;
}

/* dev 1: recv A (its send posted early), recv B (its send posted late), an
 * independent exec, fence, exec probe (no deps), send to 0. The probe must see
 * both recvs landed; the send after the fence must not reach dev 0 before B's
 * send is posted. */
static void test_fence_orders_queue(void **state)
{
	(void)state;
	accdma_world *w = th_open(2);
	accdma_queue *q0 = th_q(w, 0), *q1 = th_q(w, 1);
	uint8_t *b0, *b1;
	accdma_key k0 = th_alloc(w, 0, 4 * LEN, (void **)&b0);
	accdma_key k1 = th_alloc(w, 1, 4 * LEN, (void **)&b1);
	accdma_token sa, sb, ra, rb, pre, f, probe_t, s_after, r_after;
	static struct th_log log;
	static struct th_mark m_pre;
	static struct probe p;

	th_log_init(&log);
	m_pre = (struct th_mark){ &log, 1 };
	th_fill_u8(b0, LEN, 0xA1);
	th_fill_u8(b0 + LEN, LEN, 0xB2);
	th_fill_u8(b1 + 2 * LEN, LEN, 0xC3); /* what dev 1 sends after the fence */
	p = (struct probe){ .a = b1, .b = b1 + LEN, .want_a = 0xA1, .want_b = 0xB2 };
	atomic_init(&p.ran, 0);

	assert_int_equal(accdma_send(q0, 1, 1, k0, 0, LEN, NULL, 0, &sa), 0);
	assert_int_equal(accdma_recv(q0, 1, 3, k0, 3 * LEN, LEN, NULL, 0, &r_after), 0);
	assert_int_equal(accdma_recv(q1, 0, 1, k1, 0, LEN, NULL, 0, &ra), 0);
	assert_int_equal(accdma_recv(q1, 0, 2, k1, LEN, LEN, NULL, 0, &rb), 0);
	assert_int_equal(accdma_exec(q1, th_mark_fn, &m_pre, NULL, 0, &pre), 0);
	assert_int_equal(accdma_fence(q1, NULL, 0, &f), 0);
	assert_int_equal(accdma_exec(q1, probe_fn, &p, NULL, 0, &probe_t), 0);
	assert_int_equal(accdma_send(q1, 0, 3, k1, 2 * LEN, LEN, NULL, 0, &s_after), 0);

	/* ops before the fence run: recv A and the independent exec complete */
	th_wait_ok(w, ra);
	th_wait_ok(w, pre);
	assert_int_equal(atomic_load(&log.n), 1);
	th_check_u8(b1, LEN, 0xA1, "recv A before the fence");
	/* the fence and everything after it wait for recv B */
	th_kick(w, 0, 2);
	th_pending(w, rb);
	th_pending(w, f);
	th_pending(w, probe_t);
	th_pending(w, s_after);
	th_pending(w, r_after);
	assert_int_equal(atomic_load(&p.ran), 0);
	th_check_u8(b0 + 3 * LEN, LEN, 0, "dev 0 buffer of the send after the fence");

	assert_int_equal(accdma_send(q0, 1, 2, k0, LEN, LEN, NULL, 0, &sb), 0);
	th_wait_ok(w, probe_t);
	assert_int_equal(p.saw_a, 1);
	assert_int_equal(p.saw_b, 1);
	th_wait_ok(w, r_after);
	th_check_u8(b0 + 3 * LEN, LEN, 0xC3, "send after the fence landed");
	th_wait_ok(w, f);
	th_wait_ok(w, rb);
	th_wait_ok(w, sa);
	th_wait_ok(w, sb);
	th_wait_ok(w, s_after);
	th_close(w);
}

/* A recv after a fence does not complete before the fence, even though its
 * send is posted and the data could move. */
static void test_recv_after_fence_waits(void **state)
{
	(void)state;
	accdma_world *w = th_open(2);
	accdma_queue *q0 = th_q(w, 0), *q1 = th_q(w, 1);
	uint8_t *b0, *b1;
	accdma_key k0 = th_alloc(w, 0, 2 * LEN, (void **)&b0);
	accdma_key k1 = th_alloc(w, 1, 2 * LEN, (void **)&b1);
	accdma_token r_block, f, r_after, s5, s2;

	th_fill_u8(b0, LEN, 0x22);
	th_fill_u8(b0 + LEN, LEN, 0x55);
	assert_int_equal(accdma_recv(q1, 0, 2, k1, 0, LEN, NULL, 0, &r_block), 0);
	assert_int_equal(accdma_fence(q1, NULL, 0, &f), 0);
	assert_int_equal(accdma_recv(q1, 0, 5, k1, LEN, LEN, NULL, 0, &r_after), 0);
	assert_int_equal(accdma_send(q0, 1, 5, k0, LEN, LEN, NULL, 0, &s5), 0);
	th_kick(w, 0, 2);
	th_pending(w, f);
	th_pending(w, r_after);
	th_pending(w, s5);
	th_check_u8(b1 + LEN, LEN, 0, "recv after the fence untouched");
	assert_int_equal(accdma_send(q0, 1, 2, k0, 0, LEN, NULL, 0, &s2), 0);
	th_wait_ok(w, r_after);
	th_wait_ok(w, f);
	th_wait_ok(w, r_block);
	th_wait_ok(w, s5);
	th_wait_ok(w, s2);
	th_check_u8(b1, LEN, 0x22, "recv before the fence");
	th_check_u8(b1 + LEN, LEN, 0x55, "recv after the fence");
	th_close(w);
}

/* Execs separated by fences run in fence order even without deps. */
static void test_fences_serialize(void **state)
{
	(void)state;
	enum { K = 8 };
	accdma_world *w = th_open(1);
	accdma_queue *q = th_q(w, 0);
	static struct th_log log;
	static struct th_mark m[K];
	accdma_token e[K], f[K];
	int want[K];

	th_log_init(&log);
	for (int i = 0; i < K; i++) {
		m[i] = (struct th_mark){ &log, i };
		want[i] = i;
		assert_int_equal(accdma_exec(q, th_mark_fn, &m[i], NULL, 0, &e[i]), 0);
		assert_int_equal(accdma_fence(q, NULL, 0, &f[i]), 0);
	}
	for (int i = K - 1; i >= 0; i--) {
		th_wait_ok(w, f[i]);
		th_wait_ok(w, e[i]);
	}
	th_log_expect(&log, want, K);
	th_close(w);
}

/* A fence completes OK whatever the status of earlier ops, and later ops run. */
static void test_fence_after_failures(void **state)
{
	(void)state;
	accdma_world *w = th_open(2);
	accdma_queue *q = th_q(w, 0);
	uint8_t *b0, *b1;
	accdma_key k0 = th_alloc(w, 0, LEN, (void **)&b0);
	accdma_key k1 = th_alloc(w, 1, LEN, (void **)&b1);
	accdma_token bad_write, bad_exec, f, good;
	static atomic_int failed_ran;

	atomic_init(&failed_ran, 0);
	th_fill_u8(b0, LEN, 0x3C);
	assert_int_equal(accdma_write(q, 1, k0, 0, LEN, k1 + 1000, 0, NULL, 0, &bad_write), 0);
	assert_int_equal(accdma_exec(q, th_fail_fn, &failed_ran, NULL, 0, &bad_exec), 0);
	assert_int_equal(accdma_fence(q, NULL, 0, &f), 0);
	assert_int_equal(accdma_write(q, 1, k0, 0, LEN, k1, 0, NULL, 0, &good), 0);
	th_wait_ok(w, good);
	th_wait_ok(w, f);
	th_wait_st(w, bad_write, ACCDMA_ST_BAD_KEY);
	th_wait_st(w, bad_exec, ACCDMA_ST_EXEC_FAILED);
	assert_int_equal(atomic_load(&failed_ran), 1);
	th_check_u8(b1, LEN, 0x3C, "write after the fence");
	th_close(w);
}

/* The fence is local: a fence on dev 0 does not wait for dev 1's pending ops,
 * nor for a pending op on dev 0's other queue. */
static void test_fence_is_local(void **state)
{
	(void)state;
	struct accdma_world_opts o;
	accdma_world *w;
	accdma_key k0, k1;
	accdma_token r1, r0q1, f, s1, s0;

	th_opts(&o, 2);
	o.queues = 2;
	w = th_open_opts(&o);
	k0 = th_alloc(w, 0, LEN, NULL);
	k1 = th_alloc(w, 1, LEN, NULL);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 1, k1, 0, LEN, NULL, 0, &r1), 0);
	assert_int_equal(accdma_recv(th_qi(w, 0, 1), 1, 1, k0, 0, LEN, NULL, 0, &r0q1), 0);
	assert_int_equal(accdma_fence(th_q(w, 0), NULL, 0, &f), 0);
	th_wait_ok(w, f);
	th_pending(w, r1);
	th_pending(w, r0q1);
	/* a fence with an extra dep on the other queue's pending recv waits for it */
	assert_int_equal(accdma_fence(th_q(w, 0), &r0q1, 1, &f), 0);
	th_kick_q(w, 0, 1, 1); /* queue 0 is behind the fence: kick the other queue */
	th_pending(w, f);
	assert_int_equal(accdma_send(th_q(w, 1), 0, 1, k1, 0, LEN, NULL, 0, &s1), 0);
	th_wait_ok(w, f);
	th_wait_ok(w, r0q1);
	th_wait_ok(w, s1);
	assert_int_equal(accdma_send(th_q(w, 0), 1, 1, k0, 0, LEN, NULL, 0, &s0), 0);
	th_wait_ok(w, r1);
	th_wait_ok(w, s0);
	th_close(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fence_orders_queue),
		cmocka_unit_test(test_recv_after_fence_waits),
		cmocka_unit_test(test_fences_serialize),
		cmocka_unit_test(test_fence_after_failures),
		cmocka_unit_test(test_fence_is_local),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
