/* SPDX-License-Identifier: MIT */
/*
 * test_cancel.c - accdma_cancel().
 *
 *  - a recv waiting for its peer completes CANCELED, its dependents
 *    NOT_ATTEMPTED, the send posted later for that FIFO position PEER_ERROR,
 *    and the next pair on the tag matches normally;
 *  - a send waiting for its peer: CANCELED, its recv (posted before or after)
 *    PEER_ERROR;
 *  - an exec waiting on deps: CANCELED, its function never runs;
 *  - canceling a completed op changes nothing; canceling a consumed token is
 *    -ESTALE; nothing canceled touches memory.
 */
#include "helpers/th.h"

#include <errno.h>

#define LEN 2048 /* above eager_max (1 KiB): sends wait for their recvs */

static void test_cancel_recv(void **state)
{
	(void)state;
	accdma_world *w = th_open(2);
	uint8_t *b0, *b1;
	accdma_key k0 = th_alloc(w, 0, 2 * LEN, (void **)&b0);
	accdma_key k1 = th_alloc(w, 1, 2 * LEN, (void **)&b1);
	accdma_token r, e, r2, s, s2;
	static atomic_int ran;

	atomic_init(&ran, 0);
	th_fill_u8(b0, LEN, 0x01);
	th_fill_u8(b0 + LEN, LEN, 0x02);
	th_fill_u8(b1, 2 * LEN, 0xEE);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 6, k1, 0, LEN, NULL, 0, &r), 0);
	assert_int_equal(accdma_exec(th_q(w, 1), th_flag_fn, &ran, &r, 1, &e), 0);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 6, k1, LEN, LEN, NULL, 0, &r2), 0);
	th_kick(w, 1, 1);
	assert_int_equal(accdma_cancel(w, r), 0);
	th_wait_st(w, r, ACCDMA_ST_CANCELED);
	th_wait_st(w, e, ACCDMA_ST_NOT_ATTEMPTED);
	assert_int_equal(atomic_load(&ran), 0);
	th_pending(w, r2);
	/* the first send on the tag was destined for the canceled recv */
	assert_int_equal(accdma_send(th_q(w, 0), 1, 6, k0, 0, LEN, NULL, 0, &s), 0);
	assert_int_equal(accdma_send(th_q(w, 0), 1, 6, k0, LEN, LEN, NULL, 0, &s2), 0);
	th_wait_st(w, s, ACCDMA_ST_PEER_ERROR);
	th_wait_ok(w, s2);
	th_wait_ok(w, r2);
	th_check_u8(b1, LEN, 0xEE, "canceled recv untouched");
	th_check_u8(b1 + LEN, LEN, 0x02, "next pair on the tag");
	th_close(w);
}

static void test_cancel_send(void **state)
{
	(void)state;
	accdma_world *w = th_open(2);
	uint8_t *b0, *b1;
	accdma_key k0 = th_alloc(w, 0, 2 * LEN, (void **)&b0);
	accdma_key k1 = th_alloc(w, 1, 3 * LEN, (void **)&b1);
	accdma_token s, sb, rb, r, s2, r2, dep;

	th_fill_u8(b0, LEN, 0x0A);
	th_fill_u8(b0 + LEN, LEN, 0x0B);
	/* send canceled before its recv exists */
	assert_int_equal(accdma_send(th_q(w, 0), 1, 8, k0, 0, LEN, NULL, 0, &s), 0);
	assert_int_equal(accdma_after_all(th_q(w, 0), &s, 1, &dep), 0);
	assert_int_equal(accdma_cancel(w, s), 0);
	th_wait_st(w, s, ACCDMA_ST_CANCELED);
	th_wait_st(w, dep, ACCDMA_ST_NOT_ATTEMPTED);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 8, k1, 0, LEN, NULL, 0, &r), 0);
	th_wait_st(w, r, ACCDMA_ST_PEER_ERROR);
	/* a send whose recv was posted but is behind a dep that never completes
	 * (so no data can move): cancel the send, the recv is PEER_ERROR */
	{
		accdma_token never, rb_dep;
		accdma_key kx = th_alloc(w, 1, LEN, NULL);

		assert_int_equal(accdma_recv(th_q(w, 1), 1, 99, kx, 0, LEN, NULL, 0, &never), 0);
		assert_int_equal(accdma_recv(th_q(w, 1), 0, 9, k1, LEN, LEN, &never, 1, &rb), 0);
		assert_int_equal(accdma_send(th_q(w, 0), 1, 9, k0, LEN, LEN, NULL, 0, &sb), 0);
		th_kick(w, 0, 1);
		th_kick(w, 1, 1);
		th_pending(w, sb);
		assert_int_equal(accdma_cancel(w, sb), 0);
		th_wait_st(w, sb, ACCDMA_ST_CANCELED);
		/* rb still waits for its dep; cancel the dep to let it finish */
		assert_int_equal(accdma_cancel(w, never), 0);
		th_wait_st(w, never, ACCDMA_ST_CANCELED);
		rb_dep = rb;
		{
			enum accdma_status st = th_wait(w, rb_dep);

			assert_true(st == ACCDMA_ST_NOT_ATTEMPTED || st == ACCDMA_ST_PEER_ERROR);
		}
	}
	/* the tags still work */
	assert_int_equal(accdma_send(th_q(w, 0), 1, 8, k0, LEN, LEN, NULL, 0, &s2), 0);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 8, k1, 2 * LEN, LEN, NULL, 0, &r2), 0);
	th_wait_ok(w, s2);
	th_wait_ok(w, r2);
	th_check_u8(b1, 2 * LEN, 0, "recvs of canceled sends untouched");
	th_check_u8(b1 + 2 * LEN, LEN, 0x0B, "later pair");
	th_close(w);
}

static void test_cancel_exec_and_done(void **state)
{
	(void)state;
	accdma_world *w = th_open(2);
	accdma_key k = th_alloc(w, 0, LEN, NULL), k1 = th_alloc(w, 1, LEN, NULL);
	accdma_token r, e, e_after, f, s;
	static atomic_int ran, ran_after;

	atomic_init(&ran, 0);
	atomic_init(&ran_after, 0);
	assert_int_equal(accdma_recv(th_q(w, 0), 1, 1, k, 0, LEN, NULL, 0, &r), 0);
	assert_int_equal(accdma_exec(th_q(w, 0), th_flag_fn, &ran, &r, 1, &e), 0);
	assert_int_equal(accdma_exec(th_q(w, 0), th_flag_fn, &ran_after, &e, 1, &e_after), 0);
	assert_int_equal(accdma_cancel(w, e), 0);
	th_wait_st(w, e, ACCDMA_ST_CANCELED);
	th_wait_st(w, e_after, ACCDMA_ST_NOT_ATTEMPTED);
	/* the recv it depended on is unaffected */
	th_pending(w, r);
	assert_int_equal(accdma_send(th_q(w, 1), 0, 1, k1, 0, LEN, NULL, 0, &s), 0);
	th_wait_ok(w, r);
	th_wait_ok(w, s);
	assert_int_equal(atomic_load(&ran), 0);
	assert_int_equal(atomic_load(&ran_after), 0);

	/* cancel of a completed op: accepted, status unchanged */
	assert_int_equal(accdma_fence(th_q(w, 0), NULL, 0, &f), 0);
	{
		struct accdma_op_info i;

		while (accdma_op_info(w, f, &i) == 0 && i.stage != ACCDMA_STAGE_DONE)
			th_kick(w, 1, 1);
	}
	assert_int_equal(accdma_cancel(w, f), 0);
	th_wait_ok(w, f);
	assert_int_equal(accdma_cancel(w, f), -ESTALE);
	assert_int_equal(accdma_cancel(NULL, f), -EBADF);
	th_close(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cancel_recv),
		cmocka_unit_test(test_cancel_send),
		cmocka_unit_test(test_cancel_exec_and_done),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
