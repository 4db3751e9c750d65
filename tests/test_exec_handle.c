/* SPDX-License-Identifier: MIT */
/*
 * test_exec_handle.c - an exec descriptor names its function by a handle
 * that the host resolves (queue/abi.h: no function address crosses the
 * hardware interface), so a descriptor that another process scribbled on
 * cannot make an engine call anything:
 *  - an exec runs its function once, with its argument, and completes OK;
 *  - a handle whose generation is not the one posted in that slot, or whose
 *    slot is out of the queue, or 0, runs nothing and completes
 *    NOT_ATTEMPTED, and what is chained behind it NOT_ATTEMPTED too.
 * The device is polled (no engine thread), so the descriptor can be changed
 * between the post and the wait that runs it.
 */
#include <stdlib.h>
#include <string.h>

#include "helpers/th.h"

#include "driver/internal.h"

static int calls;

static int count_call(void *arg)
{
	calls += *(int *)arg;
	return 0;
}

static accdma_world *open_polled(void)
{
	struct accdma_world_opts o;

	th_opts(&o, 1);
	o.engines = 0;
	return th_open_opts(&o);
}

/* Post an exec, change its handle with @forge, run it: its status. */
static enum accdma_status run_forged(uint64_t (*forge)(uint64_t handle), enum accdma_status *chained)
{
	accdma_world *w = open_polled();
	accdma_queue *q = th_q(w, 0);
	accdma_token t, after;
	enum accdma_status st = ACCDMA_ST__COUNT;
	int one = 1;
	struct q_desc *d;

	calls = 0;
	assert_int_equal(accdma_exec(q, count_call, &one, NULL, 0, &t), 0);
	assert_int_equal(accdma_after_all(q, &t, 1, &after), 0);
	d = &q->desc[q_token_slot(t)];
	assert_int_not_equal(d->exec, 0);
	d->exec = forge(d->exec);
	assert_int_equal(accdma_wait(w, t, 10000, &st), 0);
	assert_int_equal(accdma_wait(w, after, 10000, chained), 0);
	th_close(w);
	return st;
}

static uint64_t keep(uint64_t h) { return h; }
static uint64_t next_gen(uint64_t h) { return h + (1ull << 32); }
static uint64_t slot_out(uint64_t h) { return (h & ~0xffffffffull) | 0x7fffffff; }
static uint64_t zero(uint64_t h) { (void)h; return 0; }

static void test_exec_runs_once(void **state)
{
	enum accdma_status chained;

	(void)state;
	assert_int_equal(run_forged(keep, &chained), ACCDMA_OK);
	assert_int_equal(calls, 1);
	assert_int_equal(chained, ACCDMA_OK);
}

static void test_forged_handles_run_nothing(void **state)
{
	uint64_t (*forges[])(uint64_t) = { next_gen, slot_out, zero };
	enum accdma_status chained;

	(void)state;
	for (size_t i = 0; i < sizeof(forges) / sizeof(forges[0]); i++) {
		assert_int_equal(run_forged(forges[i], &chained), ACCDMA_ST_NOT_ATTEMPTED);
		assert_int_equal(calls, 0);
		assert_int_equal(chained, ACCDMA_ST_NOT_ATTEMPTED);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec_runs_once),
		cmocka_unit_test(test_forged_handles_run_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
