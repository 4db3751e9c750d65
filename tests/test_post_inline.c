/* SPDX-License-Identifier: MIT */
/*
 * test_post_inline.c - a small send the posting thread runs to the end
 * rings no doorbell; one it leaves pending does.
 *
 * With host polling on, a post of a small send to an idle queue, after the
 * thread waited for an op, is read by the posting thread itself
 * (accdma_post(), fw_device_submit()). When that completes every op of the
 * queue's engine, waking the engine would only cost a system call and a
 * spin on a core the posting thread may need (over verbs, the core that
 * runs soft-RoCE's send path). The engine's doorbell word (wake_seq) moves
 * only when someone kicks it, so the test reads it around the post, with the
 * engine asleep: unchanged for a send that completed in the post, moved for
 * one posted with a recv that stays pending (its engine has work left).
 */
#include "helpers/th.h"

#include <stdlib.h>
#include <time.h>

#include "driver/internal.h"

/* Engine 0 of device @dev announced that it sleeps (the 5 s are a hang guard). */
static void wait_asleep(accdma_world *w, int dev)
{
	_Atomic uint32_t *sleeping = &q_dev(&w->a, (uint32_t)dev)->engines[0].sleeping;

	for (int i = 0; i < 5000 && !atomic_load(sleeping); i++)
		nanosleep(&(struct timespec){ 0, 1000 * 1000 }, NULL);
	assert_true(atomic_load(sleeping));
}

static void test_post_inline(void **state)
{
	(void)state;
	struct accdma_world_opts o;
	_Atomic uint32_t *seq;
	accdma_world *w;
	accdma_key ks, kd;
	uint8_t *src, *dst;
	accdma_token r, s, t2[2];
	enum accdma_status st;
	uint32_t before;

	setenv("ACCDMA_SPIN_US", "0", 1); /* an idle engine sleeps at once */
	th_opts(&o, 2);
	o.engines = 1;
	w = th_open_opts(&o);
	unsetenv("ACCDMA_SPIN_US");
	ks = th_alloc(w, 0, 8192, (void **)&src);
	kd = th_alloc(w, 1, 8192, (void **)&dst);
	seq = &q_dev(&w->a, 0)->engines[0].wake_seq;
	struct accdma_op ops[2] = {
		{ .kind = ACCDMA_OP_RECV, .peer = 1, .tag = 3, .key = ks, .offset = 4096, .length = 64 },
		{ .kind = ACCDMA_OP_SEND, .peer = 1, .tag = 1, .key = ks, .offset = 0, .length = 8 },
	};
	memset(src, 0x5c, 8192);
	memset(dst, 0xee, 8192);

	/* a look at an op not done yet, so that the next small send's post reads it inline */
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 1, kd, 0, 8, NULL, 0, &r), 0);
	assert_int_equal(accdma_test(w, r, &st), -EAGAIN);
	wait_asleep(w, 0);
	before = atomic_load(seq);
	assert_int_equal(accdma_send(th_q(w, 0), 1, 1, ks, 0, 8, NULL, 0, &s), 0);
	assert_int_equal(atomic_load(seq), before); /* ran to the end: no kick */
	th_wait_ok(w, s);
	th_wait_ok(w, r);
	th_check_u8(dst, 8, 0x5c, "the small send's bytes");

	/* a recv that waits for its peer, posted with a small send in one
	 * post: the poster reads both, the recv stays pending, so the engine
	 * is kicked (nothing else kicked it since it fell asleep: the waits
	 * above found their ops done) */
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 1, kd, 16, 8, NULL, 0, &r), 0);
	assert_int_equal(accdma_test(w, r, &st), -EAGAIN);
	wait_asleep(w, 0);
	before = atomic_load(seq);
	assert_int_equal(accdma_post(th_q(w, 0), ops, 2, t2), 2);
	assert_int_not_equal(atomic_load(seq), before);
	th_wait_ok(w, t2[1]);
	th_wait_ok(w, r);
	th_check_u8(dst + 16, 8, 0x5c, "the second small send's bytes");
	memset(dst + 1024, 0x77, 64);
	assert_int_equal(accdma_send(th_q(w, 1), 0, 3, kd, 1024, 64, NULL, 0, &s), 0);
	th_wait_ok(w, s);
	th_wait_ok(w, t2[0]);
	th_check_u8(src + 4096, 64, 0x77, "the recv's bytes");
	th_close(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_post_inline),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
