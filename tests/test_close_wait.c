/* SPDX-License-Identifier: MIT */
/*
 * test_close_wait.c - closing a world while other threads are blocked in its
 * waits: each waiter returns -ESHUTDOWN, close returns 0, and later calls
 * with the handle return -EBADF. Before, close unmapped the arena under the
 * sleeping waiter, which crashed on its next look.
 *
 * No timing: a waiter is known to be blocked when the race-injection point
 * drv_wait_race_set() runs in it (just before it sleeps), or, on a polled
 * device (which a waiter polls for its whole wait), when an exec function
 * runs inside its poll. The waits' own timeouts (TH_HANG_MS) only turn a hang
 * into a failure.
 */
#include "helpers/th.h"

#include <pthread.h>
#include <semaphore.h>

#include "driver/internal.h"

enum { W_ONE, W_ALL, W_ANY, W_BYTES, W_KINDS };

struct waiter {
	accdma_world *w;
	int kind;
	accdma_token t[2];
	int rc;
	pthread_t thread;
};

static sem_t asleep;
static _Thread_local int said_asleep;

/* The race point: runs in a waiter about to sleep; each says so once. */
static void note_asleep(void *arg)
{
	(void)arg;
	if (!said_asleep) {
		said_asleep = 1;
		sem_post(&asleep);
	}
}

static void *waiter_main(void *arg)
{
	struct waiter *wt = arg;
	enum accdma_status st = ACCDMA_OK;
	uint64_t bytes = 7;

	switch (wt->kind) {
	case W_ONE:
		wt->rc = accdma_wait(wt->w, wt->t[0], TH_HANG_MS, &st);
		break;
	case W_BYTES:
		wt->rc = accdma_wait_bytes(wt->w, wt->t[0], TH_HANG_MS, &st, &bytes);
		if (bytes != 7) /* written only on success */
			wt->rc = -1000;
		break;
	case W_ALL:
		wt->rc = accdma_wait_all(wt->w, wt->t, 2, TH_HANG_MS, NULL);
		break;
	case W_ANY:
		wt->rc = accdma_wait_any(wt->w, wt->t, 2, TH_HANG_MS, &st);
		break;
	}
	return NULL;
}

/* Recvs that never match: from device 0 on a tag nobody sends. */
static accdma_token stuck_recv(accdma_world *w, int dev, accdma_key k, uint64_t tag)
{
	accdma_token t;

	assert_int_equal(accdma_recv(th_q(w, dev), 0, tag, k, 0, 64, NULL, 0, &t), 0);
	return t;
}

/* Every kind of wait at once, on devices with engine threads, all asleep. */
static void test_close_wakes_sleepers(void **state)
{
	(void)state;
	accdma_world *w = th_open(3);
	accdma_key k1 = th_alloc(w, 1, 4096, NULL), k2 = th_alloc(w, 2, 4096, NULL);
	struct waiter wt[W_KINDS];
	accdma_token other;

	assert_int_equal(sem_init(&asleep, 0, 0), 0);
	for (int i = 0; i < W_KINDS; i++) {
		wt[i].w = w;
		wt[i].kind = i;
		wt[i].rc = 1;
		wt[i].t[0] = stuck_recv(w, 1, k1, 100 + (uint64_t)i);
		/* wait_all and wait_any: the second token on another device
		 * (wait_any then sleeps on the world's counter, not a device's) */
		wt[i].t[1] = stuck_recv(w, 2, k2, 200 + (uint64_t)i);
	}
	drv_wait_race_set(note_asleep, NULL);
	for (int i = 0; i < W_KINDS; i++)
		assert_int_equal(pthread_create(&wt[i].thread, NULL, waiter_main, &wt[i]), 0);
	for (int i = 0; i < W_KINDS; i++)
		assert_int_equal(sem_wait(&asleep), 0);
	assert_int_equal(accdma_world_close(w), 0);
	for (int i = 0; i < W_KINDS; i++) {
		assert_int_equal(pthread_join(wt[i].thread, NULL), 0);
		if (wt[i].rc != -ESHUTDOWN)
			print_error("waiter %d returned %d\n", i, wt[i].rc);
		assert_int_equal(wt[i].rc, -ESHUTDOWN);
	}
	drv_wait_race_set(NULL, NULL);
	/* the handle is dead: every later call says so */
	assert_int_equal(accdma_wait(w, wt[0].t[0], 0, NULL), -EBADF);
	assert_int_equal(accdma_wait_all(w, wt[1].t, 2, 0, NULL), -EBADF);
	assert_int_equal(accdma_wait_any(w, wt[2].t, 2, 0, NULL), -EBADF);
	assert_int_equal(accdma_world_close(w), -EBADF);
	/* and a world opened next works as usual */
	w = th_open(2);
	k1 = th_alloc(w, 1, 64, NULL);
	assert_int_equal(accdma_fence(th_q(w, 1), NULL, 0, &other), 0);
	th_wait_ok(w, other);
	th_close(w);
	sem_destroy(&asleep);
}

/* A polled device: the waiter polls for its whole wait and never sleeps. An
 * exec function run by its poll says it is inside the wait; the close then
 * comes while the waiter runs passes, and from the exec function itself it
 * is refused (the thread is blocked in the world it would close). */
static accdma_world *polled_w;
static pthread_t polled_waiter;
static atomic_int ran_on_waiter, close_from_exec_rc;

static int inside_wait_fn(void *arg)
{
	(void)arg;
	atomic_store(&ran_on_waiter, pthread_equal(pthread_self(), polled_waiter) ? 1 : -1);
	atomic_store(&close_from_exec_rc, accdma_world_close(polled_w));
	sem_post(&asleep);
	return 0;
}

static void test_close_stops_poller(void **state)
{
	(void)state;
	struct accdma_world_opts o;
	struct waiter wt;
	accdma_key k;
	accdma_token e;

	th_opts(&o, 2);
	o.engines = 0;
	polled_w = th_open_opts(&o);
	k = th_alloc(polled_w, 1, 4096, NULL);
	assert_int_equal(sem_init(&asleep, 0, 0), 0);
	atomic_store(&ran_on_waiter, 0);
	atomic_store(&close_from_exec_rc, 1);
	wt.w = polled_w;
	wt.kind = W_ONE;
	wt.rc = 1;
	wt.t[0] = stuck_recv(polled_w, 1, k, 5);
	assert_int_equal(pthread_create(&wt.thread, NULL, waiter_main, &wt), 0);
	polled_waiter = wt.thread;
	/* nothing runs it but the waiter's poll (a post never runs an exec) */
	assert_int_equal(accdma_exec(th_q(polled_w, 0), inside_wait_fn, NULL, NULL, 0, &e), 0);
	assert_int_equal(sem_wait(&asleep), 0);
	assert_int_equal(atomic_load(&ran_on_waiter), 1);
	assert_int_equal(atomic_load(&close_from_exec_rc), -EDEADLK);
	assert_int_equal(accdma_world_close(polled_w), 0);
	assert_int_equal(pthread_join(wt.thread, NULL), 0);
	assert_int_equal(wt.rc, -ESHUTDOWN);
	assert_int_equal(accdma_world_close(polled_w), -EBADF);
	sem_destroy(&asleep);
}

/* A waiter whose op completes is not disturbed by a close that follows. */
static void test_done_before_close(void **state)
{
	(void)state;
	accdma_world *w = th_open(2);
	accdma_key k0 = th_alloc(w, 0, 4096, NULL), k1 = th_alloc(w, 1, 4096, NULL);
	struct waiter wt = { w, W_ONE, { 0, 0 }, 1, 0 };
	accdma_token s;

	wt.t[0] = stuck_recv(w, 1, k1, 9);
	assert_int_equal(sem_init(&asleep, 0, 0), 0);
	drv_wait_race_set(note_asleep, NULL);
	assert_int_equal(pthread_create(&wt.thread, NULL, waiter_main, &wt), 0);
	assert_int_equal(sem_wait(&asleep), 0);
	assert_int_equal(accdma_send(th_q(w, 0), 1, 9, k0, 0, 64, NULL, 0, &s), 0);
	assert_int_equal(pthread_join(wt.thread, NULL), 0);
	drv_wait_race_set(NULL, NULL);
	assert_int_equal(wt.rc, 0);
	th_wait_ok(w, s);
	th_close(w);
	sem_destroy(&asleep);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_close_wakes_sleepers),
		cmocka_unit_test(test_close_stops_poller),
		cmocka_unit_test(test_done_before_close),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
