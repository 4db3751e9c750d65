/* SPDX-License-Identifier: MIT */
/*
 * test_exec_thread.c - the thread an exec function runs on (accdma_exec()).
 *
 * On a polled device (engines = 0) it runs inside the host's wait, on the
 * waiting thread, even when the wait is for another op: a lock that thread
 * holds is taken by its own thread (an error-checking mutex says EDEADLK
 * instead of hanging). It never runs inside accdma_post(). With engine
 * threads and host_poll = 0 it runs only on an engine thread, so a function
 * that takes a lock the waiter holds blocks until the waiter lets go, and
 * does not deadlock: the waiter's wait for an earlier op returns, it releases
 * the lock, and the function runs and sees what the waiter wrote under it.
 */
#include "helpers/th.h"

#include <errno.h>
#include <pthread.h>

struct locker {
	pthread_mutex_t lock; /* error-checking: a relock by its owner fails, not hangs */
	pthread_t holder;     /* the thread that holds @lock while it waits */
	atomic_int ran;
	atomic_int on_holder; /* 1: ran on @holder, -1: on another thread */
	atomic_int lock_rc;
	int phase;            /* written by the holder under @lock */
	int seen_phase;
};

static void locker_init(struct locker *l)
{
	pthread_mutexattr_t a;

	assert_int_equal(pthread_mutexattr_init(&a), 0);
	assert_int_equal(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK), 0);
	assert_int_equal(pthread_mutex_init(&l->lock, &a), 0);
	pthread_mutexattr_destroy(&a);
	atomic_init(&l->ran, 0);
	atomic_init(&l->on_holder, 0);
	atomic_init(&l->lock_rc, -1);
	l->phase = 0;
	l->seen_phase = -1;
}

/* The exec function: take the lock the waiter may hold, note where it ran. */
static int take_lock_fn(void *arg)
{
	struct locker *l = arg;
	int rc = pthread_mutex_lock(&l->lock);

	atomic_store(&l->on_holder, pthread_equal(pthread_self(), l->holder) ? 1 : -1);
	atomic_store(&l->lock_rc, rc);
	if (rc == 0) {
		l->seen_phase = l->phase;
		pthread_mutex_unlock(&l->lock);
	}
	atomic_store(&l->ran, 1);
	return rc;
}

struct polled_waiter {
	accdma_world *w;
	struct locker *l;
	accdma_token fence;
	int rc;
	enum accdma_status st;
};

static void *hold_and_wait(void *arg)
{
	struct polled_waiter *pw = arg;

	pw->l->holder = pthread_self(); /* before the wait whose poll runs the exec */
	pthread_mutex_lock(&pw->l->lock);
	pw->rc = accdma_wait(pw->w, pw->fence, TH_HANG_MS, &pw->st);
	pthread_mutex_unlock(&pw->l->lock);
	return NULL;
}

static void test_polled_runs_in_waiter(void **state)
{
	(void)state;
	struct accdma_world_opts o;
	struct polled_waiter pw;
	struct locker l;
	accdma_token e;
	pthread_t t;
	enum accdma_status st;

	th_opts(&o, 1);
	o.engines = 0;
	pw.w = th_open_opts(&o);
	pw.l = &l;
	locker_init(&l);
	assert_int_equal(accdma_exec(th_q(pw.w, 0), take_lock_fn, &l, NULL, 0, &e), 0);
	/* the fence waits for the exec: waiting for it makes its waiter run the exec */
	assert_int_equal(accdma_fence(th_q(pw.w, 0), NULL, 0, &pw.fence), 0);
	assert_int_equal(atomic_load(&l.ran), 0); /* a post runs no exec */
	assert_int_equal(pthread_create(&t, NULL, hold_and_wait, &pw), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(pw.rc, 0);
	th_assert_st(pw.st, ACCDMA_OK);
	assert_int_equal(atomic_load(&l.ran), 1);
	/* the waiting thread itself ran it, holding the lock: relocking it is EDEADLK */
	assert_int_equal(atomic_load(&l.on_holder), 1);
	assert_int_equal(atomic_load(&l.lock_rc), EDEADLK);
	assert_int_equal(accdma_wait(pw.w, e, TH_HANG_MS, &st), 0);
	th_assert_st(st, ACCDMA_ST_EXEC_FAILED);
	pthread_mutex_destroy(&l.lock);
	th_close(pw.w);
}

static void test_engine_only_no_deadlock(void **state)
{
	(void)state;
	struct accdma_world_opts o;
	struct locker l;
	accdma_world *w;
	accdma_token x, e;
	enum accdma_status st;
	int rounds = th_iters(20);

	th_opts(&o, 1);
	o.engines = 1;
	o.host_poll = 0;
	w = th_open_opts(&o);
	for (int r = 0; r < rounds; r++) {
		locker_init(&l);
		l.holder = pthread_self();
		assert_int_equal(pthread_mutex_lock(&l.lock), 0);
		/* x first, then the exec after it: waiting for x with the lock held
		 * is fine, the exec (behind it) runs on the engine and waits for us */
		assert_int_equal(accdma_fence(th_q(w, 0), NULL, 0, &x), 0);
		assert_int_equal(accdma_exec(th_q(w, 0), take_lock_fn, &l, &x, 1, &e), 0);
		assert_int_equal(accdma_wait(w, x, TH_HANG_MS, &st), 0);
		th_assert_st(st, ACCDMA_OK);
		l.phase = 1;
		assert_int_equal(pthread_mutex_unlock(&l.lock), 0);
		assert_int_equal(accdma_wait(w, e, TH_HANG_MS, &st), 0);
		th_assert_st(st, ACCDMA_OK);
		assert_int_equal(atomic_load(&l.lock_rc), 0);
		assert_int_equal(atomic_load(&l.on_holder), -1); /* an engine thread */
		assert_int_equal(l.seen_phase, 1);              /* after the waiter let go */
		pthread_mutex_destroy(&l.lock);
	}
	th_close(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_polled_runs_in_waiter),
		cmocka_unit_test(test_engine_only_no_deadlock),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
