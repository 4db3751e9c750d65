/* SPDX-License-Identifier: MIT */
/*
 * test_tokens.c - waiting on tokens: test, wait_all, wait_any, after_all,
 * release, batched posting.
 *
 *  - accdma_test() says -EAGAIN until the op is done, then consumes it;
 *  - wait_any returns ops in the order they can complete (each recv completes
 *    only once its send is posted, and the sends are posted one by one);
 *  - wait_all consumes every token and reports every status;
 *  - after_all is OK when all deps are OK, NOT_ATTEMPTED otherwise;
 *  - a batch is issued in array order and each op gets its own token; deps
 *    inside a batch may only name earlier batches' tokens.
 */
#include "helpers/th.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

#define LEN 64

static void test_test_then_done(void **state)
{
	(void)state;
	accdma_world *w = th_open(2);
	accdma_key k0 = th_alloc(w, 0, LEN, NULL), k1 = th_alloc(w, 1, LEN, NULL);
	accdma_token r, s;
	enum accdma_status st = ACCDMA_ST__COUNT;
	int rc;

	assert_int_equal(accdma_recv(th_q(w, 1), 0, 1, k1, 0, LEN, NULL, 0, &r), 0);
	assert_int_equal(accdma_test(w, r, &st), -EAGAIN);
	assert_int_equal(accdma_send(th_q(w, 0), 1, 1, k0, 0, LEN, NULL, 0, &s), 0);
	th_wait_ok(w, s); /* the data landed: the recv is done too */
	while ((rc = accdma_test(w, r, &st)) == -EAGAIN)
		th_kick(w, 1, 1);
	assert_int_equal(rc, 0);
	th_assert_st(st, ACCDMA_OK);
	assert_int_equal(accdma_test(w, r, &st), -ESTALE);
	th_close(w);
}

static void test_wait_any_order(void **state)
{
	(void)state;
	enum { K = 6 };
	accdma_world *w = th_open(2);
	uint8_t *b1;
	accdma_key k0 = th_alloc(w, 0, LEN, NULL), k1 = th_alloc(w, 1, K * LEN, (void **)&b1);
	accdma_token r[K], s[K];
	static const int feed[K] = { 3, 0, 5, 1, 4, 2 };

	for (int i = 0; i < K; i++)
		assert_int_equal(accdma_recv(th_q(w, 1), 0, (uint64_t)i, k1, (uint64_t)i * LEN, LEN,
					     NULL, 0, &r[i]),
				 0);
	for (int j = 0; j < K; j++) {
		enum accdma_status st = ACCDMA_ST__COUNT;
		int idx;

		assert_int_equal(accdma_send(th_q(w, 0), 1, (uint64_t)feed[j], k0, 0, LEN, NULL, 0,
					     &s[j]),
				 0);
		idx = accdma_wait_any(w, r, K, TH_HANG_MS, &st);
		assert_int_equal(idx, feed[j]);
		assert_true(r[idx] == 0);
		th_assert_st(st, ACCDMA_OK);
	}
	th_wait_all_ok(w, s, K);
	th_close(w);
}

struct late_send {
	accdma_world *w;
	accdma_key key;
	accdma_token tok;
	int rc;
};

/* Posts device 0's send to device 2 after 20 ms: long after the waiter spun
 * and went to sleep. */
static void *late_send_main(void *arg)
{
	struct late_send *ls = arg;
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	ls->rc = accdma_send(th_q(ls->w, 0), 2, 7, ls->key, 0, LEN, NULL, 0, &ls->tok);
	return NULL;
}

/* wait_any over tokens of several devices sleeps on the world's counter of
 * any completion, and a completion on a device other than the first token's
 * wakes it. Asserted: which token, its status and data, the other untouched.
 * A lost wake-up shows only as this test taking its whole timeout (60 s; a
 * wait checks its tokens once more at the deadline), as no test here times
 * anything. */
static void test_wait_any_devices_sleeping(void **state)
{
	(void)state;
	struct accdma_world_opts o;
	accdma_world *w;
	uint8_t *src, *d1, *d2;
	accdma_token t[2];
	enum accdma_status st = ACCDMA_ST__COUNT;
	struct late_send ls;
	pthread_t th;

	th_opts(&o, 3);
	o.engines = 1;
	w = th_open_opts(&o);
	ls = (struct late_send){ .w = w, .key = th_alloc(w, 0, LEN, (void **)&src) };
	accdma_key k1 = th_alloc(w, 1, LEN, (void **)&d1), k2 = th_alloc(w, 2, LEN, (void **)&d2);

	th_fill_u8(src, LEN, 0x5a);
	th_fill_u8(d1, LEN, 0);
	th_fill_u8(d2, LEN, 0);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 7, k1, 0, LEN, NULL, 0, &t[0]), 0);
	assert_int_equal(accdma_recv(th_q(w, 2), 0, 7, k2, 0, LEN, NULL, 0, &t[1]), 0);
	assert_int_equal(pthread_create(&th, NULL, late_send_main, &ls), 0);
	assert_int_equal(accdma_wait_any(w, t, 2, TH_HANG_MS, &st), 1);
	th_assert_st(st, ACCDMA_OK);
	assert_true(t[1] == 0 && t[0] != 0);
	th_check_u8(d2, LEN, 0x5a, "recv on device 2");
	th_check_u8(d1, LEN, 0, "recv on device 1, still waiting");
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(ls.rc, 0);
	th_wait_ok(w, ls.tok);
	assert_int_equal(accdma_cancel(w, t[0]), 0);
	th_wait_st(w, t[0], ACCDMA_ST_CANCELED);
	th_close(w);
}

static void test_wait_all_statuses(void **state)
{
	(void)state;
	accdma_world *w = th_open(2);
	accdma_queue *q = th_q(w, 0);
	accdma_key k0 = th_alloc(w, 0, LEN, NULL), k1 = th_alloc(w, 1, LEN, NULL);
	accdma_token t[5], j_ok, j_bad;
	enum accdma_status sts[5];

	assert_int_equal(accdma_fence(q, NULL, 0, &t[0]), 0);
	assert_int_equal(accdma_write(q, 1, k0, 0, LEN, k1, 0, NULL, 0, &t[1]), 0);
	assert_int_equal(accdma_write(q, 1, k0, 0, LEN, k1 + 9, 0, NULL, 0, &t[2]), 0);
	assert_int_equal(accdma_exec(q, th_fail_fn, NULL, NULL, 0, &t[3]), 0);
	assert_int_equal(accdma_after_all(q, t, 2, &j_ok), 0);
	assert_int_equal(accdma_after_all(q, t, 3, &j_bad), 0);
	assert_int_equal(accdma_write(q, 1, k0, 0, 0, k1, 0, NULL, 0, &t[4]), 0);
	assert_int_equal(accdma_wait_all(w, t, 5, TH_HANG_MS, sts), 0);
	th_assert_st(sts[0], ACCDMA_OK);
	th_assert_st(sts[1], ACCDMA_OK);
	th_assert_st(sts[2], ACCDMA_ST_BAD_KEY);
	th_assert_st(sts[3], ACCDMA_ST_EXEC_FAILED);
	th_assert_st(sts[4], ACCDMA_ST_BAD_LENGTH);
	/* consumed (the library may also zero the entries, as on timeout) */
	for (int i = 0; i < 5; i++)
		if (t[i])
			assert_int_equal(accdma_wait(w, t[i], 0, NULL), -ESTALE);
	th_wait_ok(w, j_ok);
	th_wait_st(w, j_bad, ACCDMA_ST_NOT_ATTEMPTED);
	/* wait_all with a bad token consumes nothing */
	{
		accdma_token two[2];

		assert_int_equal(accdma_fence(q, NULL, 0, &two[0]), 0);
		two[1] = j_ok; /* consumed */
		assert_int_equal(accdma_wait_all(w, two, 2, TH_HANG_MS, NULL), -ESTALE);
		th_wait_ok(w, two[0]);
	}
	th_close(w);
}

static void test_batch(void **state)
{
	(void)state;
	accdma_world *w = th_open(2);
	uint8_t *b0, *b1;
	accdma_key k0 = th_alloc(w, 0, 4 * LEN, (void **)&b0);
	accdma_key k1 = th_alloc(w, 1, 4 * LEN, (void **)&b1);
	static struct th_log log;
	static struct th_mark m[3];
	struct accdma_op ops[5];
	accdma_token t[5], r[3];

	th_log_init(&log);
	for (int i = 0; i < 3; i++)
		m[i] = (struct th_mark){ &log, i };
	for (int i = 0; i < 3; i++) {
		th_fill_u8(b0 + i * LEN, LEN, (uint8_t)(0x60 + i));
		assert_int_equal(accdma_recv(th_q(w, 1), 0, 4, k1, (uint64_t)i * LEN, LEN, NULL, 0,
					     &r[i]),
				 0);
	}
	/* one doorbell: send, send, fence, exec, send; FIFO by array order */
	memset(ops, 0, sizeof(ops));
	for (int i = 0; i < 5; i++) {
		ops[i].peer = 1;
		ops[i].tag = 4;
		ops[i].key = k0;
		ops[i].length = LEN;
	}
	ops[0].kind = ACCDMA_OP_SEND;
	ops[0].offset = 0;
	ops[1].kind = ACCDMA_OP_SEND;
	ops[1].offset = LEN;
	ops[2].kind = ACCDMA_OP_FENCE;
	ops[3].kind = ACCDMA_OP_EXEC;
	ops[3].fn = th_mark_fn;
	ops[3].arg = &m[0];
	ops[4].kind = ACCDMA_OP_SEND;
	ops[4].offset = 2 * LEN;
	assert_int_equal(accdma_post(th_q(w, 0), ops, 5, t), 5);
	for (int i = 0; i < 5; i++) {
		assert_true(t[i] != 0);
		for (int j = 0; j < i; j++)
			assert_true(t[i] != t[j]);
	}
	th_wait_all_ok(w, t, 5);
	th_wait_all_ok(w, r, 3);
	for (int i = 0; i < 3; i++)
		th_check_u8(b1 + i * LEN, LEN, (uint8_t)(0x60 + i), "batched send in order");
	assert_int_equal(atomic_load(&log.n), 1);
	th_close(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_test_then_done),
		cmocka_unit_test(test_wait_any_order),
		cmocka_unit_test(test_wait_any_devices_sleeping),
		cmocka_unit_test(test_wait_all_statuses),
		cmocka_unit_test(test_batch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
