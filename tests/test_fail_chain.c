/* SPDX-License-Identifier: MIT */
/*
 * test_fail_chain.c - failure inside a dependency chain.
 *
 * A bad descriptor in the middle of a chain fails with its own status;
 * everything chained after it (transitively, also through after_all and
 * across devices through the send's partner) is NOT_ATTEMPTED or
 * PEER_ERROR and does nothing; ops before it and unrelated ops succeed.
 * The bad op is varied: bad key, out of bounds, zero length, failing exec,
 * truncated recv.
 */
#include "helpers/th.h"

#include <errno.h>

#define LEN 2048 /* above eager_max (1 KiB): sends wait for their recvs */

enum bad_kind { BAD_KEY, BAD_BOUNDS, BAD_ZERO, BAD_EXEC, BAD_TRUNC };

static const enum accdma_status bad_status[] = {
	[BAD_KEY] = ACCDMA_ST_BAD_KEY,
	[BAD_BOUNDS] = ACCDMA_ST_OUT_OF_BOUNDS,
	[BAD_ZERO] = ACCDMA_ST_BAD_LENGTH,
	[BAD_EXEC] = ACCDMA_ST_EXEC_FAILED,
	[BAD_TRUNC] = ACCDMA_ST_TRUNCATED,
};

/*
 * dev 0:  e1 -> BAD -> e3 -> e4 ; j = after_all(e1, e4) -> e6 ; send to 1 (dep e6)
 *         unrelated: u_exec (no deps), u_send to 2
 * dev 1:  recv from 0 (fed by the send after e6) -> e7 (dep recv)
 * dev 2:  u_recv from 0
 * For BAD_TRUNC the bad op is a recv on dev 0 from dev 2 shorter than dev 2's send.
 */
static void run_chain(enum bad_kind kind)
{
	accdma_world *w = th_open(3);
	accdma_queue *q0 = th_q(w, 0), *q1 = th_q(w, 1), *q2 = th_q(w, 2);
	uint8_t *b0, *b1, *b2;
	accdma_key k0 = th_alloc(w, 0, 4 * LEN, (void **)&b0);
	accdma_key k1 = th_alloc(w, 1, 4 * LEN, (void **)&b1);
	accdma_key k2 = th_alloc(w, 2, 4 * LEN, (void **)&b2);
	accdma_token e1, bad, e3, e4, j, e6, s_chain, r1, e7, u_exec, u_send, u_recv;
	accdma_token bad_partner = 0, bad_partner2 = 0;
	accdma_token jd[2];
	static struct th_log log;
	static struct th_mark m[8];
	static atomic_int bad_exec_ran;

	th_log_init(&log);
	for (int i = 0; i < 8; i++)
		m[i] = (struct th_mark){ &log, i };
	atomic_init(&bad_exec_ran, 0);
	th_fill_u8(b0, 4 * LEN, 0x0F);
	th_fill_u8(b1, 4 * LEN, 0x1F);
	th_fill_u8(b2, 4 * LEN, 0x2F);

	assert_int_equal(accdma_exec(q0, th_mark_fn, &m[1], NULL, 0, &e1), 0);
	switch (kind) {
	case BAD_KEY:
		/* a send to 1 naming a key that does not exist; dev 1 posts the recv */
		assert_int_equal(accdma_send(q0, 1, 50, k0 + 777, 0, LEN, &e1, 1, &bad), 0);
		assert_int_equal(accdma_recv(q1, 0, 50, k1, 2 * LEN, LEN, NULL, 0, &bad_partner), 0);
		break;
	case BAD_BOUNDS:
		assert_int_equal(accdma_send(q0, 1, 50, k0, 3 * LEN + 1, LEN, &e1, 1, &bad), 0);
		assert_int_equal(accdma_recv(q1, 0, 50, k1, 2 * LEN, LEN, NULL, 0, &bad_partner), 0);
		break;
	case BAD_ZERO:
		/* a zero-length recv: its partner send completes PEER_ERROR */
		assert_int_equal(accdma_recv(q0, 1, 50, k0, 2 * LEN, 0, &e1, 1, &bad), 0);
		assert_int_equal(accdma_send(q1, 0, 50, k1, 0, LEN, NULL, 0, &bad_partner), 0);
		break;
	case BAD_EXEC:
		assert_int_equal(accdma_exec(q0, th_fail_fn, &bad_exec_ran, &e1, 1, &bad), 0);
		break;
	case BAD_TRUNC:
		assert_int_equal(accdma_recv(q0, 2, 50, k0, 2 * LEN, LEN / 2, &e1, 1, &bad), 0);
		assert_int_equal(accdma_send(q2, 0, 50, k2, 0, LEN, NULL, 0, &bad_partner2), 0);
		break;
	}
	assert_int_equal(accdma_exec(q0, th_mark_fn, &m[3], &bad, 1, &e3), 0);
	assert_int_equal(accdma_exec(q0, th_mark_fn, &m[4], &e3, 1, &e4), 0);
	jd[0] = e1;
	jd[1] = e4;
	assert_int_equal(accdma_after_all(q0, jd, 2, &j), 0);
	assert_int_equal(accdma_exec(q0, th_mark_fn, &m[6], &j, 1, &e6), 0);
	assert_int_equal(accdma_send(q0, 1, 60, k0, 0, LEN, &e6, 1, &s_chain), 0);
	assert_int_equal(accdma_recv(q1, 0, 60, k1, 0, LEN, NULL, 0, &r1), 0);
	assert_int_equal(accdma_exec(q1, th_mark_fn, &m[7], &r1, 1, &e7), 0);
	/* unrelated work on the same queues */
	assert_int_equal(accdma_exec(q0, th_mark_fn, &m[0], NULL, 0, &u_exec), 0);
	th_fill_u8(b0 + LEN, LEN, 0x5A);
	assert_int_equal(accdma_send(q0, 2, 70, k0, LEN, LEN, NULL, 0, &u_send), 0);
	assert_int_equal(accdma_recv(q2, 0, 70, k2, LEN, LEN, NULL, 0, &u_recv), 0);

	/* statuses, waited from the end of the chain backwards */
	th_wait_st(w, e7, ACCDMA_ST_NOT_ATTEMPTED);
	th_wait_st(w, r1, ACCDMA_ST_PEER_ERROR);
	th_wait_st(w, s_chain, ACCDMA_ST_NOT_ATTEMPTED);
	th_wait_st(w, e6, ACCDMA_ST_NOT_ATTEMPTED);
	th_wait_st(w, j, ACCDMA_ST_NOT_ATTEMPTED);
	th_wait_st(w, e4, ACCDMA_ST_NOT_ATTEMPTED);
	th_wait_st(w, e3, ACCDMA_ST_NOT_ATTEMPTED);
	th_wait_st(w, bad, bad_status[kind]);
	th_wait_ok(w, e1);
	if (bad_partner)
		th_wait_st(w, bad_partner, ACCDMA_ST_PEER_ERROR);
	if (bad_partner2)
		th_wait_st(w, bad_partner2, ACCDMA_ST_TRUNCATED);
	th_wait_ok(w, u_exec);
	th_wait_ok(w, u_send);
	th_wait_ok(w, u_recv);

	/* only e1 and the unrelated exec ran */
	assert_int_equal(atomic_load(&log.n), 2);
	assert_true(th_log_pos(&log, 1) >= 0);
	assert_true(th_log_pos(&log, 0) >= 0);
	assert_int_equal(atomic_load(&bad_exec_ran), kind == BAD_EXEC ? 1 : 0);

	/* data: no failed op touched memory; the unrelated transfer landed */
	th_check_u8(b0, LEN, 0x0F, "dev 0 chain source");
	th_check_u8(b0 + 2 * LEN, 2 * LEN, 0x0F, "dev 0 bad recv range");
	th_check_u8(b1, 4 * LEN, 0x1F, "dev 1 (recv ranges untouched)");
	th_check_u8(b2, LEN, 0x2F, "dev 2 source");
	th_check_u8(b2 + LEN, LEN, 0x5A, "unrelated transfer");
	th_check_u8(b2 + 2 * LEN, 2 * LEN, 0x2F, "dev 2 rest");
	th_close(w);
}

static void test_chain_bad_key(void **state)
{
	(void)state;
	run_chain(BAD_KEY);
}

static void test_chain_bad_bounds(void **state)
{
	(void)state;
	run_chain(BAD_BOUNDS);
}

static void test_chain_zero_length(void **state)
{
	(void)state;
	run_chain(BAD_ZERO);
}

static void test_chain_exec_failed(void **state)
{
	(void)state;
	run_chain(BAD_EXEC);
}

static void test_chain_truncated(void **state)
{
	(void)state;
	run_chain(BAD_TRUNC);
}

/* A failure propagates down a pipeline of devices: 0 -> 1 -> 2 -> 3, each
 * hop recv -> send(dep recv). Dev 0's send has a bad key; every later hop's
 * recv is PEER_ERROR and its send NOT_ATTEMPTED. A parallel healthy pipeline
 * on another tag delivers its data. */
static void test_failure_propagates_across_devices(void **state)
{
	(void)state;
	enum { N = 4 };
	accdma_world *w = th_open(N);
	accdma_key k[N];
	uint8_t *b[N];
	accdma_token s[N], r[N], hs[N], hr[N];

	for (int d = 0; d < N; d++) {
		k[d] = th_alloc(w, d, 2 * LEN, (void **)&b[d]);
		th_fill_u8(b[d], 2 * LEN, (uint8_t)(0x80 + d));
	}
	for (int d = N - 1; d >= 0; d--) {
		accdma_queue *q = th_q(w, d);

		if (d > 0) {
			assert_int_equal(accdma_recv(q, d - 1, 1, k[d], 0, LEN, NULL, 0, &r[d]), 0);
			assert_int_equal(accdma_recv(q, d - 1, 2, k[d], LEN, LEN, NULL, 0, &hr[d]), 0);
		}
		if (d < N - 1) {
			accdma_key key = d == 0 ? k[d] + 999 : k[d];

			assert_int_equal(accdma_send(q, d + 1, 1, key, 0, LEN, d ? &r[d] : NULL,
						     d ? 1 : 0, &s[d]),
					 0);
			assert_int_equal(accdma_send(q, d + 1, 2, k[d], LEN, LEN, d ? &hr[d] : NULL,
						     d ? 1 : 0, &hs[d]),
					 0);
		}
	}
	th_wait_st(w, s[0], ACCDMA_ST_BAD_KEY);
	for (int d = 1; d < N; d++) {
		th_wait_st(w, r[d], ACCDMA_ST_PEER_ERROR);
		if (d < N - 1)
			th_wait_st(w, s[d], ACCDMA_ST_NOT_ATTEMPTED);
	}
	for (int d = 0; d < N; d++) {
		if (d > 0)
			th_wait_ok(w, hr[d]);
		if (d < N - 1)
			th_wait_ok(w, hs[d]);
	}
	for (int d = 0; d < N; d++) {
		th_check_u8(b[d], LEN, (uint8_t)(0x80 + d), "failed pipeline left data alone");
		th_check_u8(b[d] + LEN, LEN, 0x80, "healthy pipeline carried dev 0's data");
	}
	th_close(w);
}

/* The failed send's partner recv is posted after the failure completed; it
 * still gets PEER_ERROR (the failed send consumed its FIFO position) and the
 * next pair on the tag works. */
static void test_partner_posted_late(void **state)
{
	(void)state;
	accdma_world *w = th_open(2);
	uint8_t *b0, *b1;
	accdma_key k0 = th_alloc(w, 0, LEN, (void **)&b0);
	accdma_key k1 = th_alloc(w, 1, 2 * LEN, (void **)&b1);
	accdma_token bad, r_bad, s2, r2;

	th_fill_u8(b0, LEN, 0x99);
	assert_int_equal(accdma_send(th_q(w, 0), 1, 4, k0, 0, LEN + 1, NULL, 0, &bad), 0);
	assert_int_equal(accdma_send(th_q(w, 0), 1, 4, k0, 0, LEN, NULL, 0, &s2), 0);
	th_wait_st(w, bad, ACCDMA_ST_OUT_OF_BOUNDS);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 4, k1, 0, LEN, NULL, 0, &r_bad), 0);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 4, k1, LEN, LEN, NULL, 0, &r2), 0);
	th_wait_st(w, r_bad, ACCDMA_ST_PEER_ERROR);
	th_wait_ok(w, r2);
	th_wait_ok(w, s2);
	th_check_u8(b1, LEN, 0, "recv of the failed send untouched");
	th_check_u8(b1 + LEN, LEN, 0x99, "next pair on the tag");
	th_close(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chain_bad_key),
		cmocka_unit_test(test_chain_bad_bounds),
		cmocka_unit_test(test_chain_zero_length),
		cmocka_unit_test(test_chain_exec_failed),
		cmocka_unit_test(test_chain_truncated),
		cmocka_unit_test(test_failure_propagates_across_devices),
		cmocka_unit_test(test_partner_posted_late),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
