/* SPDX-License-Identifier: MIT */
/*
 * test_racing_wake.c - a completion's wake-up lost as it races a host
 * waiter's sleep costs the waiter its first short sleep, not a slice.
 *
 * The host side of test_racing_kick. A waiter announces it sleeps (on its
 * device's completion counter), looks, and sleeps; a completer stores DONE,
 * then reads whether anyone sleeps. Over shm the kernel's membarrier can miss
 * the completer's CPU (queue/queue.h): its DONE is not yet visible to the
 * look, and it reads no sleeper, so nobody wakes the waiter. The waiter then
 * looks again after its first, short sleep (Q_SLEEP_RECHECK_NS), uncounted;
 * only ops found done after a full 10 ms slice count as waits never woken.
 *
 * Here the race is made to happen: the race-injection point
 * drv_wait_race_set() stops the waiter (this thread) after its look found
 * its recv not done, just before it sleeps; there it sends the recv's
 * message from device 0 and lets device 1's engine complete the recv with
 * the wake-up of host waiters dropped (the fault point "wake"), and goes to
 * sleep only once the recv is DONE. Each wait must return the recv done with
 * its data, and no wait may be counted as never woken. A waiter without the
 * short first sleep (a full slice first) fails here. ACCDMA_POLL=0: the
 * waiter never does the engines' work. The 5 s bounds are hang guards.
 */
#include "helpers/th.h"

#include <stdlib.h>
#include <time.h>

#include "driver/internal.h"
#include "fw_stub/fw.h"

#define ROUNDS 3
#define GUARD_MS 5000

struct race {
	accdma_world *w;
	accdma_queue *sq;
	accdma_key ks;
	accdma_token recv, send;
	int armed;  /* only this thread reads and writes it: the point runs in the waiter */
	int fired;
	int landed; /* the recv was DONE before the waiter slept */
};

static void complete_unwoken(void *arg)
{
	struct race *r = arg;
	struct accdma_op_info info;

	if (!r->armed)
		return;
	r->armed = 0;
	r->fired++;
	fw_fault_arm(FW_FAULT_WAKE, 1);
	if (accdma_send(r->sq, 1, 7, r->ks, 0, 8, NULL, 0, &r->send))
		return; /* the test sees no send token and fails */
	/* Look at the record without consuming the token the waiter holds. */
	for (int i = 0; i < GUARD_MS * 10; i++) {
		if (accdma_op_info(r->w, r->recv, &info) == 0 && info.stage == ACCDMA_STAGE_DONE) {
			r->landed = 1;
			return;
		}
		nanosleep(&(struct timespec){ 0, 100 * 1000 }, NULL);
	}
}

static void test_racing_wake(void **state)
{
	(void)state;
	struct accdma_world_opts o;
	struct race race = { 0 };
	uint8_t *src, *dst;
	accdma_key kd;

	setenv("ACCDMA_POLL", "0", 1);
	th_opts(&o, 2);
	o.engines = 1;
	race.w = th_open_opts(&o);
	unsetenv("ACCDMA_POLL");
	race.sq = th_q(race.w, 0);
	race.ks = th_alloc(race.w, 0, 64, (void **)&src);
	kd = th_alloc(race.w, 1, 64, (void **)&dst);
	drv_wait_race_set(complete_unwoken, &race);
	for (int round = 0; round < ROUNDS; round++) {
		enum accdma_status st;

		memset(src, 0x30 + round, 8);
		memset(dst, 0xee, 64);
		race.send = 0;
		race.landed = 0;
		assert_int_equal(accdma_recv(th_q(race.w, 1), 0, 7, kd, 0, 8, NULL, 0, &race.recv), 0);
		race.armed = 1;
		assert_int_equal(accdma_wait(race.w, race.recv, GUARD_MS, &st), 0);
		th_assert_st(st, ACCDMA_OK);
		assert_int_equal(race.fired, round + 1);
		assert_true(race.landed); /* it slept with its recv done and unannounced */
		assert_true(race.send != 0);
		th_wait_ok(race.w, race.send);
		th_check_u8(dst, 8, (uint8_t)(0x30 + round), "the recv's bytes");
		th_check_u8(dst + 8, 56, 0xee, "past them");
	}
	drv_wait_race_set(NULL, NULL);
	fw_fault_arm(FW_FAULT_WAKE, 0);
	/* Found by the first look each time: never counted as a wait never woken. */
	assert_int_equal(atomic_load(&race.w->late_waits), 0);
	th_close(race.w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_racing_wake),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
