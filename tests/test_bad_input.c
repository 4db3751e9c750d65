/* SPDX-License-Identifier: MIT */
/*
 * test_bad_input.c - bad input gets a clear error and touches no memory.
 *
 * Post errors (returned by the call, nothing posted): NULL or closed queue,
 * bad peer rank, reserved tag, bad kind, NULL exec function, too many deps,
 * a dep of another device, a consumed or forged dep, a full queue (-EAGAIN,
 * all or nothing for batches). Token errors: 0, forged, one field wrong (not
 * even a valid token beside it is consumed), consumed, released.
 * Memory errors are op statuses: bad or freed key, out of bounds (including
 * offset overflow), zero length; the partner of a bad op gets PEER_ERROR.
 * World errors: bad options, calls after close.
 */
#include "helpers/th.h"

#include <errno.h>

#include "queue/queue.h" /* the token layout, to forge tokens one field wrong */

#define LEN 2048 /* above eager_max (1 KiB): sends wait for their recvs */

static void test_post_errors(void **state)
{
	(void)state;
	accdma_world *w = th_open(3);
	accdma_queue *q0 = th_q(w, 0), *q1 = th_q(w, 1);
	accdma_key k0 = th_alloc(w, 0, LEN, NULL);
	accdma_token t = 0, dep1, deps[ACCDMA_MAX_DEPS + 1];
	struct accdma_queue_stats before, after;

	assert_int_equal(accdma_queue_stats(q0, &before), 0);
	/* NULL queue */
	assert_int_equal(accdma_send(NULL, 1, 0, k0, 0, LEN, NULL, 0, &t), -EBADF);
	assert_int_equal(accdma_recv(NULL, 1, 0, k0, 0, LEN, NULL, 0, &t), -EBADF);
	assert_int_equal(accdma_fence(NULL, NULL, 0, &t), -EBADF);
	assert_int_equal(accdma_exec(NULL, th_flag_fn, NULL, NULL, 0, &t), -EBADF);
	assert_int_equal(accdma_after_all(NULL, NULL, 0, &t), -EBADF);
	assert_int_equal(accdma_barrier(NULL, NULL, 0, &t), -EBADF);
	assert_int_equal(accdma_post(NULL, NULL, 1, &t), -EBADF);
	/* bad peer */
	assert_int_equal(accdma_send(q0, -1, 0, k0, 0, LEN, NULL, 0, &t), -EINVAL);
	assert_int_equal(accdma_send(q0, 3, 0, k0, 0, LEN, NULL, 0, &t), -EINVAL);
	assert_int_equal(accdma_recv(q0, 3, 0, k0, 0, LEN, NULL, 0, &t), -EINVAL);
	assert_int_equal(accdma_recv(q0, -5, 0, k0, 0, LEN, NULL, 0, &t), -EINVAL);
	assert_int_equal(accdma_write(q0, 3, k0, 0, LEN, k0, 0, NULL, 0, &t), -EINVAL);
	/* reserved tag */
	assert_int_equal(accdma_send(q0, 1, ACCDMA_TAG_RESERVED, k0, 0, LEN, NULL, 0, &t), -EINVAL);
	assert_int_equal(accdma_recv(q0, 1, ACCDMA_TAG_RESERVED | 5, k0, 0, LEN, NULL, 0, &t),
			 -EINVAL);
	/* NULL exec function, bad kind, NULL ops, bad count */
	assert_int_equal(accdma_exec(q0, NULL, NULL, NULL, 0, &t), -EINVAL);
	{
		struct accdma_op op;

		memset(&op, 0, sizeof(op));
		op.kind = (enum accdma_op_kind)0;
		assert_int_equal(accdma_post(q0, &op, 1, &t), -EINVAL);
		op.kind = ACCDMA_OP__COUNT;
		assert_int_equal(accdma_post(q0, &op, 1, &t), -EINVAL);
		assert_int_equal(accdma_post(q0, NULL, 1, &t), -EINVAL);
		op.kind = ACCDMA_OP_FENCE;
		assert_true(accdma_post(q0, &op, 0, &t) < 0);
		assert_true(accdma_post(q0, &op, -1, &t) < 0);
	}
	/* too many deps */
	{
		static atomic_int flag;

		atomic_init(&flag, 0);
		assert_int_equal(accdma_exec(q0, th_flag_fn, &flag, NULL, 0, &dep1), 0);
	}
	th_wait_ok(w, dep1); /* consumed now */
	for (int i = 0; i <= ACCDMA_MAX_DEPS; i++)
		assert_int_equal(accdma_fence(q0, NULL, 0, &deps[i]), 0);
	assert_int_equal(accdma_after_all(q0, deps, ACCDMA_MAX_DEPS + 1, &t), -E2BIG);
	/* exactly the maximum is fine */
	assert_int_equal(accdma_after_all(q0, deps, ACCDMA_MAX_DEPS, &t), 0);
	th_wait_ok(w, t);
	th_wait_all_ok(w, deps, ACCDMA_MAX_DEPS + 1);
	/* a dep on a consumed token */
	assert_int_equal(accdma_fence(q0, &dep1, 1, &t), -ESTALE);
	/* a dep of another device */
	{
		accdma_token other;

		assert_int_equal(accdma_fence(q1, NULL, 0, &other), 0);
		assert_int_equal(accdma_fence(q0, &other, 1, &t), -EXDEV);
		assert_int_equal(accdma_send(q0, 1, 0, k0, 0, LEN, &other, 1, &t), -EXDEV);
		th_wait_ok(w, other);
	}
	/* a forged dep */
	{
		accdma_token forged = 0xdeadbeefcafef00dull;
		int rc = accdma_fence(q0, &forged, 1, &t);

		assert_true(rc == -ESTALE || rc == -EINVAL || rc == -EXDEV);
	}
	/* the rejected posts posted nothing (the stats count only the fences,
	 * exec and after_all that succeeded: 1 + 17 + 1) */
	assert_int_equal(accdma_queue_stats(q0, &after), 0);
	assert_true(after.submitted - before.submitted == 1 + ACCDMA_MAX_DEPS + 1 + 1);
	th_close(w);
}

/* A dep on a token of the same device but another queue is fine. */
static void test_dep_other_queue(void **state)
{
	(void)state;
	struct accdma_world_opts o;
	accdma_world *w;
	accdma_token a, b;
	static struct th_log log;
	static struct th_mark m[2];

	th_opts(&o, 1);
	o.queues = 2;
	w = th_open_opts(&o);
	th_log_init(&log);
	m[0] = (struct th_mark){ &log, 0 };
	m[1] = (struct th_mark){ &log, 1 };
	assert_int_equal(accdma_exec(th_qi(w, 0, 1), th_mark_fn, &m[0], NULL, 0, &a), 0);
	assert_int_equal(accdma_exec(th_qi(w, 0, 0), th_mark_fn, &m[1], &a, 1, &b), 0);
	th_wait_ok(w, b);
	th_wait_ok(w, a);
	th_log_expect(&log, ((int[]){ 0, 1 }), 2);
	assert_int_equal(accdma_queue_get(w, 0, 2, &(accdma_queue *){ NULL }), -EINVAL);
	assert_int_equal(accdma_queue_get(w, 0, -1, &(accdma_queue *){ NULL }), -EINVAL);
	assert_int_equal(accdma_queue_get(w, 1, 0, &(accdma_queue *){ NULL }), -EINVAL);
	th_close(w);
}

static void test_token_errors(void **state)
{
	(void)state;
	accdma_world *w = th_open(2);
	accdma_queue *q = th_q(w, 0);
	accdma_token t, r;
	enum accdma_status st;

	assert_int_equal(accdma_wait(w, 0, 0, &st), -EINVAL);
	assert_int_equal(accdma_test(w, 0, &st), -EINVAL);
	assert_int_equal(accdma_release(w, 0), -EINVAL);
	assert_int_equal(accdma_cancel(w, 0), -EINVAL);
	assert_int_equal(accdma_wait(NULL, 1, 0, &st), -EBADF);
	{
		accdma_token forged = 0xdeadbeefcafef00dull;
		int rc = accdma_wait(w, forged, 0, &st);

		assert_true(rc == -ESTALE || rc == -EINVAL);
		rc = accdma_test(w, forged, &st);
		assert_true(rc == -ESTALE || rc == -EINVAL);
	}
	/* consumed twice */
	assert_int_equal(accdma_fence(q, NULL, 0, &t), 0);
	{
		/* a live token with one field wrong: generation 0, a device outside
		 * the world, a queue or slot past the end; none is waited, all -EINVAL */
		uint32_t dev = q_token_dev(t), qi = q_token_queue(t), slot = q_token_slot(t);
		accdma_token bad[] = { q_token_make(dev, qi, slot, 0), q_token_make(5, qi, slot, q_token_gen(t)),
				       q_token_make(dev, 7, slot, q_token_gen(t)),
				       q_token_make(dev, qi, 60000, q_token_gen(t)) };

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			accdma_token two[2] = { t, bad[i] };

			assert_int_equal(accdma_wait(w, bad[i], 0, &st), -EINVAL);
			assert_int_equal(accdma_test(w, bad[i], &st), -EINVAL);
			/* checked before anything is consumed: t is still live after */
			assert_int_equal(accdma_wait_all(w, two, 2, 0, NULL), -EINVAL);
			assert_true(two[0] == t);
		}
	}
	th_wait_ok(w, t);
	assert_int_equal(accdma_wait(w, t, 0, &st), -ESTALE);
	assert_int_equal(accdma_test(w, t, &st), -ESTALE);
	assert_int_equal(accdma_release(w, t), -ESTALE);
	assert_int_equal(accdma_cancel(w, t), -ESTALE);
	/* released: cannot be waited; a pending op released still completes */
	{
		accdma_key k0 = th_alloc(w, 0, LEN, NULL), k1 = th_alloc(w, 1, LEN, NULL);
		uint8_t *p0 = accdma_mem_ptr(w, 0, k0, NULL), *p1 = accdma_mem_ptr(w, 1, k1, NULL);
		accdma_token s;

		th_fill_u8(p0, LEN, 0x42);
		assert_int_equal(accdma_recv(th_q(w, 1), 0, 1, k1, 0, LEN, NULL, 0, &r), 0);
		assert_int_equal(accdma_send(q, 1, 1, k0, 0, LEN, NULL, 0, &s), 0);
		assert_int_equal(accdma_release(w, s), 0);
		assert_int_equal(accdma_wait(w, s, 0, &st), -ESTALE);
		th_wait_ok(w, r);
		th_check_u8(p1, LEN, 0x42, "released send delivered");
	}
	th_close(w);
}

/* A stale token never aliases a newer op in the same slot. */
static void test_stale_token_not_aliased(void **state)
{
	(void)state;
	struct accdma_world_opts o;
	accdma_world *w;
	accdma_queue *q;
	accdma_token old[8], t, blocked;
	accdma_key k;
	enum accdma_status st;

	th_opts(&o, 2);
	o.queue_depth = 2;
	w = th_open_opts(&o);
	q = th_q(w, 0);
	k = th_alloc(w, 0, LEN, NULL);
	for (int i = 0; i < 8; i++) {
		assert_int_equal(accdma_fence(q, NULL, 0, &old[i]), 0);
		th_wait_ok(w, old[i]);
	}
	/* a pending op now occupies a recycled slot */
	assert_int_equal(accdma_recv(q, 1, 1, k, 0, LEN, NULL, 0, &blocked), 0);
	for (int i = 0; i < 8; i++) {
		assert_true(old[i] != blocked);
		assert_int_equal(accdma_wait(w, old[i], 0, &st), -ESTALE);
		assert_int_equal(accdma_cancel(w, old[i]), -ESTALE);
	}
	th_pending(w, blocked);
	assert_int_equal(accdma_fence(q, old, 1, &t), -ESTALE);
	assert_int_equal(accdma_cancel(w, blocked), 0);
	th_wait_st(w, blocked, ACCDMA_ST_CANCELED);
	th_close(w);
}

/* A full queue: -EAGAIN, all or nothing; waiting frees slots. */
static void test_full_queue(void **state)
{
	(void)state;
	struct accdma_world_opts o;
	accdma_world *w;
	accdma_queue *q;
	accdma_key k0, k1;
	accdma_token r[4], s[4], t, batch[3];
	struct accdma_op ops[3];
	struct accdma_queue_stats st0, st1;

	th_opts(&o, 2);
	o.queue_depth = 4;
	w = th_open_opts(&o);
	q = th_q(w, 0);
	k0 = th_alloc(w, 0, 4 * LEN, NULL);
	k1 = th_alloc(w, 1, 4 * LEN, NULL);
	for (int i = 0; i < 4; i++)
		assert_int_equal(accdma_recv(q, 1, 1, k0, (uint64_t)i * LEN, LEN, NULL, 0, &r[i]), 0);
	assert_int_equal(accdma_recv(q, 1, 1, k0, 0, LEN, NULL, 0, &t), -EAGAIN);
	assert_int_equal(accdma_fence(q, NULL, 0, &t), -EAGAIN);
	/* free two slots: send two, wait their recvs */
	for (int i = 0; i < 2; i++)
		assert_int_equal(accdma_send(th_q(w, 1), 0, 1, k1, (uint64_t)i * LEN, LEN, NULL, 0,
					     &s[i]),
				 0);
	th_wait_ok(w, r[0]);
	th_wait_ok(w, r[1]);
	/* a batch of 3 does not fit in 2 free slots: nothing is posted */
	memset(ops, 0, sizeof(ops));
	for (int i = 0; i < 3; i++)
		ops[i].kind = ACCDMA_OP_FENCE;
	assert_int_equal(accdma_queue_stats(q, &st0), 0);
	assert_int_equal(accdma_post(q, ops, 3, batch), -EAGAIN);
	assert_int_equal(accdma_queue_stats(q, &st1), 0);
	assert_true(st1.submitted == st0.submitted);
	/* a batch of 2 fits: exec then after_all on a recv still pending */
	ops[0].kind = ACCDMA_OP_EXEC;
	ops[0].fn = th_flag_fn;
	ops[1].kind = ACCDMA_OP_AFTER_ALL;
	ops[1].deps = &r[2];
	ops[1].num_deps = 1;
	{
		static atomic_int flag;

		atomic_init(&flag, 0);
		ops[0].arg = &flag;
		assert_int_equal(accdma_post(q, ops, 2, batch), 2);
		assert_int_equal(accdma_fence(q, NULL, 0, &t), -EAGAIN);
		th_wait_ok(w, batch[0]);
		assert_int_equal(atomic_load(&flag), 1);
	}
	/* feed the remaining recvs */
	for (int i = 2; i < 4; i++)
		assert_int_equal(accdma_send(th_q(w, 1), 0, 1, k1, (uint64_t)i * LEN, LEN, NULL, 0,
					     &s[i]),
				 0);
	th_wait_ok(w, batch[1]);
	th_wait_ok(w, r[2]);
	th_wait_ok(w, r[3]);
	th_wait_all_ok(w, s, 4);
	/* everything waited: the queue takes depth ops again */
	for (int i = 0; i < 4; i++)
		assert_int_equal(accdma_fence(q, NULL, 0, &r[i]), 0);
	th_wait_all_ok(w, r, 4);
	th_close(w);
}

/* Memory errors are op statuses and touch no memory. */
static void test_memory_errors(void **state)
{
	(void)state;
	accdma_world *w = th_open(2);
	accdma_queue *q0 = th_q(w, 0), *q1 = th_q(w, 1);
	uint8_t *b0, *b1;
	accdma_key k0 = th_alloc(w, 0, 4 * LEN, (void **)&b0);
	accdma_key k1 = th_alloc(w, 1, 4 * LEN, (void **)&b1);
	accdma_key kfree = th_alloc(w, 1, LEN, NULL);
	accdma_token t, p;

	th_fill_u8(b0, 4 * LEN, 0xD0);
	th_fill_u8(b1, 4 * LEN, 0xD1);

	/* write: bad local key, bad remote key, freed remote key, bounds, zero, overflow */
	assert_int_equal(accdma_write(q0, 1, k0 + 100, 0, LEN, k1, 0, NULL, 0, &t), 0);
	th_wait_st(w, t, ACCDMA_ST_BAD_KEY);
	assert_int_equal(accdma_write(q0, 1, k0, 0, LEN, k1 + 100, 0, NULL, 0, &t), 0);
	th_wait_st(w, t, ACCDMA_ST_BAD_KEY);
	assert_int_equal(accdma_mem_free(w, 1, kfree), 0);
	assert_int_equal(accdma_mem_free(w, 1, kfree), -ENOENT);
	assert_null(accdma_mem_ptr(w, 1, kfree, NULL));
	assert_int_equal(accdma_write(q0, 1, k0, 0, LEN, kfree, 0, NULL, 0, &t), 0);
	th_wait_st(w, t, ACCDMA_ST_BAD_KEY);
	assert_int_equal(accdma_write(q0, 1, k0, 3 * LEN + 1, LEN, k1, 0, NULL, 0, &t), 0);
	th_wait_st(w, t, ACCDMA_ST_OUT_OF_BOUNDS);
	assert_int_equal(accdma_write(q0, 1, k0, 0, LEN, k1, 4 * LEN, NULL, 0, &t), 0);
	th_wait_st(w, t, ACCDMA_ST_OUT_OF_BOUNDS);
	assert_int_equal(accdma_write(q0, 1, k0, 0, 0, k1, 0, NULL, 0, &t), 0);
	th_wait_st(w, t, ACCDMA_ST_BAD_LENGTH);
	assert_int_equal(accdma_write(q0, 1, k0, UINT64_MAX - 8, LEN, k1, 0, NULL, 0, &t), 0);
	th_wait_st(w, t, ACCDMA_ST_OUT_OF_BOUNDS);
	assert_int_equal(accdma_write(q0, 1, k0, 0, LEN, k1, UINT64_MAX - 8, NULL, 0, &t), 0);
	th_wait_st(w, t, ACCDMA_ST_OUT_OF_BOUNDS);
	assert_int_equal(accdma_write(q0, 1, k0, 0, UINT64_MAX, k1, 0, NULL, 0, &t), 0);
	th_wait_st(w, t, ACCDMA_ST_OUT_OF_BOUNDS);

	/* send/recv: the bad side fails with its status, the partner PEER_ERROR */
	assert_int_equal(accdma_send(q0, 1, 1, k0, UINT64_MAX - 8, LEN, NULL, 0, &t), 0);
	assert_int_equal(accdma_recv(q1, 0, 1, k1, 0, LEN, NULL, 0, &p), 0);
	th_wait_st(w, t, ACCDMA_ST_OUT_OF_BOUNDS);
	th_wait_st(w, p, ACCDMA_ST_PEER_ERROR);
	assert_int_equal(accdma_recv(q1, 0, 1, k1, 4 * LEN - 10, LEN, NULL, 0, &p), 0);
	assert_int_equal(accdma_send(q0, 1, 1, k0, 0, LEN, NULL, 0, &t), 0);
	th_wait_st(w, p, ACCDMA_ST_OUT_OF_BOUNDS);
	th_wait_st(w, t, ACCDMA_ST_PEER_ERROR);
	assert_int_equal(accdma_recv(q1, 0, 1, kfree, 0, LEN, NULL, 0, &p), 0);
	assert_int_equal(accdma_send(q0, 1, 1, k0, 0, LEN, NULL, 0, &t), 0);
	th_wait_st(w, p, ACCDMA_ST_BAD_KEY);
	th_wait_st(w, t, ACCDMA_ST_PEER_ERROR);
	assert_int_equal(accdma_send(q0, 1, 1, k0, 0, 0, NULL, 0, &t), 0);
	assert_int_equal(accdma_recv(q1, 0, 1, k1, 0, LEN, NULL, 0, &p), 0);
	th_wait_st(w, t, ACCDMA_ST_BAD_LENGTH);
	th_wait_st(w, p, ACCDMA_ST_PEER_ERROR);

	th_check_u8(b0, 4 * LEN, 0xD0, "dev 0 memory");
	th_check_u8(b1, 4 * LEN, 0xD1, "dev 1 memory");

	/* after all that, a good pair on the same tag works */
	assert_int_equal(accdma_send(q0, 1, 1, k0, 0, LEN, NULL, 0, &t), 0);
	assert_int_equal(accdma_recv(q1, 0, 1, k1, LEN, LEN, NULL, 0, &p), 0);
	th_wait_ok(w, t);
	th_wait_ok(w, p);
	th_check_u8(b1 + LEN, LEN, 0xD0, "good pair");
	th_close(w);
}

static void test_world_errors(void **state)
{
	(void)state;
	struct accdma_world_opts o;
	accdma_world *w = NULL;
	accdma_key k = 0;

	assert_int_equal(accdma_world_opts_init(NULL), -EINVAL);
	th_opts(&o, 0);
	assert_int_equal(accdma_world_open(&o, &w), -EINVAL);
	th_opts(&o, 2000);
	assert_int_equal(accdma_world_open(&o, &w), -EINVAL);
	th_opts(&o, 2);
	o.queue_depth = 3;
	assert_int_equal(accdma_world_open(&o, &w), -EINVAL);
	th_opts(&o, 2);
	o.engines = -1; /* 0 is valid: polled devices (test_polled) */
	assert_int_equal(accdma_world_open(&o, &w), -EINVAL);
	th_opts(&o, 2);
	o.engines = 17;
	assert_int_equal(accdma_world_open(&o, &w), -EINVAL);
	th_opts(&o, 2);
	o.queues = 65;
	assert_int_equal(accdma_world_open(&o, &w), -EINVAL);
	th_opts(&o, 2);
	assert_int_equal(accdma_world_open(&o, NULL), -EINVAL);
	assert_int_equal(accdma_world_close(NULL), -EBADF);
	assert_int_equal(accdma_world_size(NULL), -EBADF);

	w = th_open(2);
	assert_int_equal(accdma_world_size(w), 2);
	{
		int first = -1;

		assert_int_equal(accdma_world_local_devices(w, &first), 2);
		assert_int_equal(first, 0);
	}
	assert_int_equal(accdma_mem_alloc(w, 0, 0, &k), -EINVAL);
	assert_int_equal(accdma_mem_alloc(w, 2, 64, &k), -EINVAL);
	assert_int_equal(accdma_mem_alloc(w, 0, 1ull << 60, &k), -ENOMEM);
	assert_null(accdma_mem_ptr(w, 0, 12345, NULL));
	assert_null(accdma_mem_ptr(w, 5, 1, NULL));
	assert_int_equal(accdma_mem_free(w, 0, 12345), -ENOENT);
	{
		static uint8_t host[256];
		accdma_key hk = 0;

		assert_int_equal(accdma_mem_register(w, 0, NULL, 64, &hk), -EINVAL);
		assert_int_equal(accdma_mem_register(w, 0, host, 0, &hk), -EINVAL);
		assert_int_equal(accdma_mem_register(w, 0, host, sizeof(host), &hk), 0);
		assert_ptr_equal(accdma_mem_ptr(w, 0, hk, NULL), host);
		assert_int_equal(accdma_mem_free(w, 0, hk), 0);
	}
	th_close(w);
}

/* Calls on a closed world return -EBADF instead of touching freed memory. */
static void test_use_after_close(void **state)
{
	(void)state;
	accdma_world *w = th_open(2);
	accdma_queue *q = th_q(w, 0);
	accdma_key k = th_alloc(w, 0, LEN, NULL), k2;
	accdma_token t, pend;
	enum accdma_status st;
	struct accdma_device_info info;
	struct accdma_queue_stats stats;

	assert_int_equal(accdma_fence(q, NULL, 0, &t), 0);
	th_wait_ok(w, t);
	/* close with an op pending: it is flushed, close does not hang */
	assert_int_equal(accdma_recv(q, 1, 1, k, 0, LEN, NULL, 0, &pend), 0);
	assert_int_equal(accdma_world_close(w), 0);
	assert_int_equal(accdma_world_close(w), -EBADF);
	assert_int_equal(accdma_world_size(w), -EBADF);
	assert_int_equal(accdma_mem_alloc(w, 0, LEN, &k2), -EBADF);
	assert_null(accdma_mem_ptr(w, 0, k, NULL));
	assert_int_equal(accdma_queue_get(w, 0, 0, &q), -EBADF);
	assert_int_equal(accdma_wait(w, pend, 0, &st), -EBADF);
	assert_int_equal(accdma_test(w, pend, &st), -EBADF);
	assert_int_equal(accdma_release(w, pend), -EBADF);
	assert_int_equal(accdma_device_info(w, 0, &info), -EBADF);
	assert_int_equal(accdma_find_cycle(w, NULL, 0), -EBADF);
	/* the queue handle of a closed world */
	assert_int_equal(accdma_fence(q, NULL, 0, &t), -EBADF);
	assert_int_equal(accdma_queue_stats(q, &stats), -EBADF);
}

static void test_names(void **state)
{
	(void)state;
	for (int s = 0; s < ACCDMA_ST__COUNT; s++) {
		assert_non_null(accdma_status_str((enum accdma_status)s));
		assert_string_not_equal(accdma_status_str((enum accdma_status)s), "UNKNOWN");
	}
	assert_string_equal(accdma_status_str(ACCDMA_ST_TRUNCATED), "TRUNCATED");
	assert_string_equal(accdma_status_str(ACCDMA_ST__COUNT), "UNKNOWN");
	assert_string_equal(accdma_status_str((enum accdma_status)-1), "UNKNOWN");
	assert_string_equal(accdma_op_kind_str((enum accdma_op_kind)0), "unknown");
	assert_string_equal(accdma_op_kind_str(ACCDMA_OP_SEND), "send");
	assert_string_equal(accdma_op_kind_str(ACCDMA_OP__COUNT), "unknown");
	assert_non_null(accdma_op_stage_str(ACCDMA_STAGE_PEER));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_post_errors),
		cmocka_unit_test(test_dep_other_queue),
		cmocka_unit_test(test_token_errors),
		cmocka_unit_test(test_stale_token_not_aliased),
		cmocka_unit_test(test_full_queue),
		cmocka_unit_test(test_memory_errors),
		cmocka_unit_test(test_world_errors),
		cmocka_unit_test(test_use_after_close),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
