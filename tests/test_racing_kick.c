/* SPDX-License-Identifier: MIT */
/*
 * test_racing_kick.c - a kick lost as it races an engine's sleep costs the
 * first short sleep, not a check period.
 *
 * A kick can be lost at the moment its engine goes to sleep: the engine has
 * announced it sleeps and looked, but the kicker's store was not yet visible
 * to the look, and the kicker read `sleeping` before the announcement (over
 * shm, when the kernel's membarrier misses the kicker's CPU: queue/queue.h).
 * The engine then looks again after its first, short sleep
 * (Q_SLEEP_RECHECK_NS), and that look is not counted as a late wake-up; only
 * work found by a later backstop look is (test_lost_kick covers that one).
 *
 * Here the race is made to happen, each time: the race-injection point
 * fw_race_set(FW_RACE_SLEEP) stops device 1's engine after its last look before
 * sleeping, with its recv parked and no message yet; while it stands there,
 * device 0 sends with its kick dropped (the fault point "kick") and the send
 * completes, so the message is in device 1's ring, unseen and unannounced.
 * Then the engine goes to sleep. Each recv must complete with its data, and
 * no late wake-up may have been counted: the first look found the message.
 * An engine without that look (a counted check period only) fails here.
 * ACCDMA_SPIN_US=0 and ACCDMA_POLL=0: idle engines sleep at once, and a
 * waiting host never does their work. The 5 s waits are hang guards, not
 * timing checks.
 */
#include "helpers/th.h"

#include <errno.h>
#include <semaphore.h>
#include <stdlib.h>
#include <time.h>

#include "driver/internal.h"
#include "fw_stub/fw.h"

#define ROUNDS 3
#define GUARD_S 5

/* What the engine standing at the race point and the test hand each other. */
struct race {
	_Atomic int armed; /* 1: stop device 1's engine at its next race point */
	_Atomic int fired;
	sem_t at_point;    /* the engine stands there */
	sem_t landed;      /* the message is in its ring: go to sleep */
};

static int sem_wait_guarded(sem_t *s)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += GUARD_S;
	while (sem_timedwait(s, &ts))
		if (errno != EINTR)
			return -1;
	return 0;
}

static void stop_at_race_point(uint32_t dev, uint32_t engine, void *arg)
{
	struct race *r = arg;

	(void)engine;
	if (dev != 1 || !atomic_exchange(&r->armed, 0))
		return;
	atomic_fetch_add(&r->fired, 1);
	sem_post(&r->at_point);
	sem_wait_guarded(&r->landed); /* the test fails on its own guard if it never comes */
}

/* Wait until device 1's engine has looked for the recv's message and parked it. */
static void wait_parked(accdma_world *w, accdma_token t)
{
	struct accdma_op_info info;

	for (int i = 0; i < GUARD_S * 1000; i++) {
		assert_int_equal(accdma_op_info(w, t, &info), 0);
		if (info.stage == ACCDMA_STAGE_PEER)
			return;
		nanosleep(&(struct timespec){ 0, 1000 * 1000 }, NULL);
	}
	fail_msg("the recv was never parked");
}

static void test_racing_kick(void **state)
{
	(void)state;
	struct accdma_world_opts o;
	struct race race = { 0 };
	accdma_world *w;
	accdma_key ks, kd;
	uint8_t *src, *dst;

	assert_int_equal(sem_init(&race.at_point, 0, 0), 0);
	assert_int_equal(sem_init(&race.landed, 0, 0), 0);
	setenv("ACCDMA_SPIN_US", "0", 1);
	setenv("ACCDMA_POLL", "0", 1);
	th_opts(&o, 2);
	o.engines = 1;
	w = th_open_opts(&o);
	unsetenv("ACCDMA_SPIN_US");
	unsetenv("ACCDMA_POLL");
	fw_race_set(FW_RACE_SLEEP, stop_at_race_point, &race);
	ks = th_alloc(w, 0, 64, (void **)&src);
	kd = th_alloc(w, 1, 64, (void **)&dst);
	for (int round = 0; round < ROUNDS; round++) {
		accdma_token r, s;
		enum accdma_status st;

		memset(src, 0x20 + round, 8);
		memset(dst, 0xee, 64);
		assert_int_equal(accdma_recv(th_q(w, 1), 0, 5, kd, 0, 8, NULL, 0, &r), 0);
		wait_parked(w, r);
		atomic_store(&race.armed, 1);
		/* It may be asleep past its race point already (an idle engine
		 * sleeps on until kicked): a kick with no work sends it round,
		 * through the point, once more. */
		q_engine_kick(q_dev(&w->a, 1), 0);
		assert_int_equal(sem_wait_guarded(&race.at_point), 0);
		/* The engine has looked and found nothing; now the message lands unannounced. */
		fw_fault_arm(FW_FAULT_KICK, 1);
		assert_int_equal(accdma_send(th_q(w, 0), 1, 5, ks, 0, 8, NULL, 0, &s), 0);
		th_wait_ok(w, s);
		th_pending(w, r);
		sem_post(&race.landed);
		assert_int_equal(accdma_wait(w, r, GUARD_S * 1000, &st), 0);
		th_assert_st(st, ACCDMA_OK);
		th_check_u8(dst, 8, (uint8_t)(0x20 + round), "the recv's bytes");
		th_check_u8(dst + 8, 56, 0xee, "past them");
	}
	fw_fault_arm(FW_FAULT_KICK, 0);
	fw_race_set(FW_RACE_SLEEP, NULL, NULL);
	assert_int_equal(atomic_load(&race.fired), ROUNDS);
	/* Found by the first look each time, so never counted as a wake-up that never came. */
	assert_int_equal(atomic_load(&q_dev(&w->a, 1)->engines[0].late_wakes), 0);
	th_close(w);
	sem_destroy(&race.at_point);
	sem_destroy(&race.landed);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_racing_kick),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
