/* SPDX-License-Identifier: MIT */
/*
 * test_lost_kick.c - a wake-up that never comes costs a check period, not a hang.
 *
 * Wake-ups across processes rely on fences (queue/doorbell.c), and one was
 * seen to go missing over shm (docs/perf/2026-12-01.md, "Library problems seen"): the
 * receiver's engine slept with its recv parked and the message in its ring.
 * (The kernel's membarrier can skip the kicker's CPU; the engine's look after
 * 50 us covers a kick that raced its sleep: test_racing_kick. This test drops
 * a kick long after the engine fell asleep, which only the backstop look
 * covers: first after 10 ms, then backing off.)
 * Here the fault point "kick" drops the doorbell an eager send rings at its
 * receiver, with ACCDMA_SPIN_US=0 (an idle engine sleeps at once) and
 * ACCDMA_POLL=0 (a waiting host never does the engine's work), in five
 * rounds: recv posted on device 1, a pause so its engine parks it and
 * sleeps, then the send on device 0 with its kick dropped. Each recv must
 * complete with its data (the sleeping engine looks on its own), and the
 * engine must have counted the late wake-ups. The 5 s wait is a hang guard,
 * not a timing check.
 */
#include "helpers/th.h"

#include <stdlib.h>
#include <time.h>

#include "driver/internal.h"
#include "fw_stub/fw.h"

#define ROUNDS 5

static void test_lost_kick(void **state)
{
	(void)state;
	struct accdma_world_opts o;
	accdma_world *w;
	accdma_key ks, kd;
	uint8_t *src, *dst;
	uint64_t late;

	setenv("ACCDMA_SPIN_US", "0", 1);
	setenv("ACCDMA_POLL", "0", 1);
	th_opts(&o, 2);
	o.engines = 1;
	w = th_open_opts(&o);
	unsetenv("ACCDMA_SPIN_US");
	unsetenv("ACCDMA_POLL");
	ks = th_alloc(w, 0, 64, (void **)&src);
	kd = th_alloc(w, 1, 64, (void **)&dst);
	for (int round = 0; round < ROUNDS; round++) {
		accdma_token r, s;
		enum accdma_status st;

		memset(src, 0x10 + round, 8);
		memset(dst, 0xee, 64);
		assert_int_equal(accdma_recv(th_q(w, 1), 0, 3, kd, 0, 8, NULL, 0, &r), 0);
		nanosleep(&(struct timespec){ 0, 20 * 1000 * 1000 }, NULL); /* parked, engine asleep */
		fw_fault_arm(FW_FAULT_KICK, 1);
		assert_int_equal(accdma_send(th_q(w, 0), 1, 3, ks, 0, 8, NULL, 0, &s), 0);
		assert_int_equal(accdma_wait(w, r, 5000, &st), 0);
		th_assert_st(st, ACCDMA_OK);
		th_wait_ok(w, s);
		th_check_u8(dst, 8, (uint8_t)(0x10 + round), "the recv's bytes");
		th_check_u8(dst + 8, 56, 0xee, "past them");
	}
	fw_fault_arm(FW_FAULT_KICK, 0);
	late = atomic_load(&q_dev(&w->a, 1)->engines[0].late_wakes);
	assert_true(late >= 1 && late <= ROUNDS);
	th_close(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lost_kick),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
