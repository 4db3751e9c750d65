// SPDX-License-Identifier: MIT
/*
 * test_polled.c - devices with no engine threads (engines = 0).
 *
 * A polled device moves only while a host thread waits on it (or on any
 * device of the world), and when a post with a small send finds its queue
 * idle (test_submit.c: the send leaves in the post, the rest waits). Everything must still work: the same permutation
 * program on every device in either order, exec chains, fences, the mailbox,
 * reset, and a wait that can never finish still times out and names its op.
 * And with engine threads, which nap while a host polls, work posted with
 * nobody waiting must still complete.
 */
#include <errno.h>
#include <sched.h>

#include "helpers/th.h"

static accdma_world *open_polled(int n)
{
	struct accdma_world_opts o;

	th_opts(&o, n);
	o.engines = 0;
	return th_open_opts(&o);
}

struct add {
	float *p;
	float v;
};

static int add_fn(void *arg)
{
	struct add *a = arg;

	for (int i = 0; i < 64; i++)
		a->p[i] += a->v;
	return 0;
}

/* Permutation, even ranks send first, odd ranks recv first, then +1.0 on each device. */
static void test_polled_permute(void **state)
{
	enum { N = 4, E = 64 };
	accdma_world *w = open_polled(N);
	accdma_key s[N], r[N];
	float *sp[N], *rp[N];
	accdma_token done[N];
	struct add args[N];

	(void)state;
	for (int d = 0; d < N; d++) {
		s[d] = th_alloc(w, d, E * sizeof(float), (void **)&sp[d]);
		r[d] = th_alloc(w, d, E * sizeof(float), (void **)&rp[d]);
		th_fill_f32(sp[d], E, (float)d);
		th_fill_f32(rp[d], E, -1.0f);
	}
	for (int d = N - 1; d >= 0; d--) {
		accdma_queue *q = th_q(w, d);
		accdma_token ts, tr;
		uint64_t len = E * sizeof(float);

		if (d % 2 == 0) {
			assert_int_equal(accdma_send(q, (d + 1) % N, 1, s[d], 0, len, NULL, 0, &ts), 0);
			assert_int_equal(accdma_recv(q, (d + N - 1) % N, 1, r[d], 0, len, NULL, 0, &tr), 0);
		} else {
			assert_int_equal(accdma_recv(q, (d + N - 1) % N, 1, r[d], 0, len, NULL, 0, &tr), 0);
			assert_int_equal(accdma_send(q, (d + 1) % N, 1, s[d], 0, len, NULL, 0, &ts), 0);
		}
		/* Nothing has moved yet: nobody has waited. */
		th_check_f32(rp[d], E, -1.0f, "recv buffer before any wait");
		args[d] = (struct add){ rp[d], 1.0f };
		assert_int_equal(accdma_exec(q, add_fn, &args[d], &tr, 1, &done[d]), 0);
		assert_int_equal(accdma_release(w, ts), 0);
		assert_int_equal(accdma_release(w, tr), 0);
	}
	th_wait_all_ok(w, done, N);
	for (int d = 0; d < N; d++)
		th_check_f32(rp[d], E, (float)((d + N - 1) % N) + 1.0f, "recv buffer + 1.0");
	th_close(w);
}

/* A fence still orders its queue; the mailbox answers; reset flushes. */
static void test_polled_fence_mailbox_reset(void **state)
{
	accdma_world *w = open_polled(2);
	accdma_key k0 = th_alloc(w, 0, 256, NULL), k1 = th_alloc(w, 1, 256, NULL);
	struct accdma_device_info info;
	struct accdma_device_health h;
	atomic_int flag = 0;
	accdma_token r, f, e, s;

	(void)state;
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 2, k1, 0, 64, NULL, 0, &r), 0);
	assert_int_equal(accdma_fence(th_q(w, 1), NULL, 0, &f), 0);
	assert_int_equal(accdma_exec(th_q(w, 1), th_flag_fn, &flag, NULL, 0, &e), 0);
	assert_int_equal(accdma_device_info(w, 1, &info), 0);
	assert_int_equal(info.id, 1);
	assert_int_equal(info.engines, 1);
	th_pending(w, f); /* the recv has no send: the fence holds */
	assert_int_equal(atomic_load(&flag), 0);
	assert_int_equal(accdma_send(th_q(w, 0), 1, 2, k0, 0, 64, NULL, 0, &s), 0);
	th_wait_ok(w, r);
	th_wait_ok(w, f);
	th_wait_ok(w, e);
	th_wait_ok(w, s);
	assert_int_equal(atomic_load(&flag), 1);

	assert_int_equal(accdma_recv(th_q(w, 1), 0, 3, k1, 0, 64, NULL, 0, &r), 0);
	assert_int_equal(accdma_device_reset(w, 1), 0);
	th_wait_st(w, r, ACCDMA_ST_FLUSHED);
	assert_int_equal(accdma_device_health(w, 1, &h), 0);
	assert_int_equal(h.alive, 1);
	assert_true(h.heartbeats > 0);
	assert_int_equal(h.resets, 1);
	th_close(w);
}

/* A recv with no send: the wait polls until its deadline, then names the op. */
static void test_polled_timeout(void **state)
{
	accdma_world *w = open_polled(2);
	accdma_key k = th_alloc(w, 1, 64, NULL);
	struct accdma_op_info info;
	accdma_token r;

	(void)state;
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 9, k, 0, 64, NULL, 0, &r), 0);
	assert_int_equal(accdma_wait(w, r, 100, NULL), -ETIMEDOUT);
	assert_int_equal(accdma_op_info(w, r, &info), 0);
	assert_int_equal(info.kind, ACCDMA_OP_RECV);
	assert_int_equal(info.peer, 0);
	assert_int_equal(info.tag, 9);
	assert_int_equal(info.stage, ACCDMA_STAGE_PEER);
	assert_int_equal(accdma_cancel(w, r), 0);
	th_wait_st(w, r, ACCDMA_ST_CANCELED);
	th_close(w);
}

/*
 * With engine threads, a waiting host polls and the engines nap meanwhile.
 * Once nobody waits, the engines must carry the work alone: after a few
 * polled waits (and one that gives up), a chain posted with no waiter
 * completes while the host only tests (which never drives the engines).
 */
static void test_engines_resume_after_polling(void **state)
{
	accdma_world *w = th_open(2);
	accdma_key k0 = th_alloc(w, 0, 256, NULL), k1 = th_alloc(w, 1, 256, NULL);
	atomic_int flag = 0;
	accdma_token s, r, e;
	enum accdma_status st;
	int rc;

	(void)state;
	for (int i = 0; i < 20; i++) {
		assert_int_equal(accdma_send(th_q(w, 0), 1, 1, k0, 0, 64, NULL, 0, &s), 0);
		assert_int_equal(accdma_recv(th_q(w, 1), 0, 1, k1, 0, 64, NULL, 0, &r), 0);
		th_wait_ok(w, r);
		th_wait_ok(w, s);
	}
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 2, k1, 0, 64, NULL, 0, &r), 0);
	assert_int_equal(accdma_wait(w, r, 10, NULL), -ETIMEDOUT); /* the poller gives up */
	assert_int_equal(accdma_exec(th_q(w, 1), th_flag_fn, &flag, &r, 1, &e), 0);
	assert_int_equal(accdma_send(th_q(w, 0), 1, 2, k0, 0, 64, NULL, 0, &s), 0);
	while ((rc = accdma_test(w, e, &st)) == -EAGAIN)
		sched_yield(); /* make check's per-test limit turns a hang into a failure */
	assert_int_equal(rc, 0);
	th_assert_st(st, ACCDMA_OK);
	assert_int_equal(atomic_load(&flag), 1);
	th_wait_ok(w, r);
	th_wait_ok(w, s);
	th_close(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_polled_permute),
		cmocka_unit_test(test_polled_fence_mailbox_reset),
		cmocka_unit_test(test_polled_timeout),
		cmocka_unit_test(test_engines_resume_after_polling),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
