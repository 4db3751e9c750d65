/* SPDX-License-Identifier: MIT */
/*
 * test_slots.c - when a completion slot is used again.
 *
 * A slot is reused only once its op is done, its token consumed (or
 * released) and no dependent pins it; the engine holds nothing after DONE.
 * Each case runs with one queue per device (consuming is a plain store) and
 * two (a locked exchange), with engine threads and with polled devices:
 *  - a consumed token's slot stays taken while a pending dependent pins it,
 *    and that dependent still reads the status it pinned;
 *  - a done op whose token is not consumed keeps its slot and its status;
 *  - a released pending op keeps its slot until it completes, then frees it;
 *  - a full queue is whole again as soon as its tokens are consumed;
 *  - another queue's thread pins tokens while their owner consumes them and
 *    reuses the slots for failing ops: every pin that succeeds sees OK.
 */
#include "helpers/th.h"

#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#define DEPTH 4
#define RDV_LEN 4096 /* above eager_max: the send completes only once the data has moved */

struct cfg {
	int queues, engines;
	const char *name;
};

static const struct cfg cfgs[] = {
	{ 1, 1, "1 queue, engine thread" },
	{ 1, 0, "1 queue, polled" },
	{ 2, 1, "2 queues, engine thread" },
	{ 2, 0, "2 queues, polled" },
};

#define NCFG ((int)(sizeof(cfgs) / sizeof(cfgs[0])))

static accdma_world *open_cfg(const struct cfg *c, int depth)
{
	struct accdma_world_opts o;

	th_opts(&o, 2);
	o.queue_depth = depth;
	o.queues = c->queues;
	o.engines = c->engines;
	return th_open_opts(&o);
}

static int exec_ok(accdma_queue *q, accdma_token *t)
{
	static atomic_int flag;

	return accdma_exec(q, th_flag_fn, &flag, NULL, 0, t);
}

/* exec_ok(), once a slot is free: over a link (loop) a recv completes on
 * its sender's finish, just after the send does. Gives up after 5 s. */
static int exec_when_free(accdma_queue *q, accdma_token *t)
{
	int rc;

	for (int n = 0; (rc = exec_ok(q, t)) == -EAGAIN && n < 5000; n++)
		usleep(1000);
	return rc;
}

static int exec_fail(accdma_queue *q, accdma_token *t)
{
	return accdma_exec(q, th_fail_fn, NULL, NULL, 0, t);
}

/* X done and consumed, pinned by D (which also waits for a recv R): X's slot
 * is not reused, so a failing op can never take it and fail D. */
static void run_pin_holds(const struct cfg *c)
{
	accdma_world *w = open_cfg(c, DEPTH);
	accdma_queue *q = th_q(w, 0);
	void *p0, *p1;
	accdma_key k0 = th_alloc(w, 0, RDV_LEN, &p0), k1 = th_alloc(w, 1, RDV_LEN, &p1);
	accdma_token r, x, d, e1, e2, s, deps[2];

	print_message("  %s\n", c->name);
	assert_int_equal(accdma_recv(q, 1, 7, k0, 0, RDV_LEN, NULL, 0, &r), 0);
	assert_int_equal(exec_ok(q, &x), 0);
	deps[0] = x;
	deps[1] = r;
	assert_int_equal(accdma_after_all(q, deps, 2, &d), 0);
	th_wait_ok(w, x); /* consumed: only D's pin holds its slot now */
	th_pending(w, d);
	/* R, X and D hold three of the four slots: one more op fits, and no more */
	assert_int_equal(exec_fail(q, &e1), 0);
	th_wait_st(w, e1, ACCDMA_ST_EXEC_FAILED); /* e1's slot is free again */
	assert_int_equal(exec_fail(q, &e1), 0);
	assert_int_equal(exec_fail(q, &e2), -EAGAIN);
	th_pending(w, d);
	/* the recv lands: D reads X's status (OK), not a failing op's */
	th_fill_u8(p1, RDV_LEN, 0x5a);
	assert_int_equal(accdma_send(th_q(w, 1), 0, 7, k1, 0, RDV_LEN, NULL, 0, &s), 0);
	th_wait_ok(w, s);
	th_wait_ok(w, r);
	th_check_u8(p0, RDV_LEN, 0x5a, "recv behind the pinned slot");
	th_wait_ok(w, d);
	th_wait_st(w, e1, ACCDMA_ST_EXEC_FAILED);
	/* every token consumed, no pin left: the whole queue is free */
	{
		accdma_token t[DEPTH];

		for (int i = 0; i < DEPTH; i++)
			assert_int_equal(exec_ok(q, &t[i]), 0);
		th_wait_all_ok(w, t, DEPTH);
	}
	th_close(w);
}

/* One case per configuration: *state is its struct cfg. */
static void test_pin_holds_consumed_slot(void **state)
{
	run_pin_holds(*state);
}

/* E is done (a fence after it completed) but its token is live: its slot and
 * status stay, however many ops the queue sees meanwhile. */
static void run_done_unconsumed(const struct cfg *c)
{
	accdma_world *w = open_cfg(c, DEPTH);
	accdma_queue *q = th_q(w, 0);
	accdma_token e, f, t[DEPTH];

	print_message("  %s\n", c->name);
	assert_int_equal(exec_ok(q, &e), 0);
	assert_int_equal(accdma_fence(q, NULL, 0, &f), 0);
	th_wait_ok(w, f); /* e is done now */
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < DEPTH - 1; i++)
			assert_int_equal(exec_fail(q, &t[i]), 0);
		assert_int_equal(exec_fail(q, &t[DEPTH - 1]), -EAGAIN);
		th_wait_all_st(w, t, DEPTH - 1, ACCDMA_ST_EXEC_FAILED);
	}
	th_wait_ok(w, e);
	for (int i = 0; i < DEPTH; i++)
		assert_int_equal(exec_fail(q, &t[i]), 0);
	th_wait_all_st(w, t, DEPTH, ACCDMA_ST_EXEC_FAILED);
	th_close(w);
}

/* One case per configuration: *state is its struct cfg. */
static void test_done_unconsumed_keeps_slot(void **state)
{
	run_done_unconsumed(*state);
}

/* A recv whose token was released while pending keeps its slot until it
 * completes (its engine still writes the record), then gives it back. */
static void run_released_pending(const struct cfg *c)
{
	accdma_world *w = open_cfg(c, DEPTH);
	accdma_queue *q = th_q(w, 0);
	void *p0, *p1;
	accdma_key k0 = th_alloc(w, 0, RDV_LEN, &p0), k1 = th_alloc(w, 1, RDV_LEN, &p1);
	accdma_token r, s, e[DEPTH], extra;

	print_message("  %s\n", c->name);
	assert_int_equal(accdma_recv(q, 1, 9, k0, 0, RDV_LEN, NULL, 0, &r), 0);
	assert_int_equal(accdma_release(w, r), 0);
	for (int i = 0; i < DEPTH - 1; i++)
		assert_int_equal(exec_ok(q, &e[i]), 0);
	assert_int_equal(exec_ok(q, &extra), -EAGAIN);
	th_wait_all_ok(w, e, DEPTH - 1);
	/* the execs' slots are free, the recv's is not */
	for (int i = 0; i < DEPTH - 1; i++)
		assert_int_equal(exec_ok(q, &e[i]), 0);
	assert_int_equal(exec_ok(q, &extra), -EAGAIN);
	th_wait_all_ok(w, e, DEPTH - 1);
	th_fill_u8(p1, RDV_LEN, 0x3c);
	assert_int_equal(accdma_send(th_q(w, 1), 0, 9, k1, 0, RDV_LEN, NULL, 0, &s), 0);
	th_wait_ok(w, s); /* a rendezvous send completes once its data landed */
	th_check_u8(p0, RDV_LEN, 0x3c, "released recv delivered");
	for (int i = 0; i < DEPTH; i++)
		assert_int_equal(exec_when_free(q, &e[i]), 0);
	th_wait_all_ok(w, e, DEPTH);
	th_close(w);
}

/* One case per configuration: *state is its struct cfg. */
static void test_released_pending_keeps_slot(void **state)
{
	run_released_pending(*state);
}

/* Another queue's producer pins the tokens its owner consumes meanwhile. */
struct race {
	accdma_world *w;
	_Atomic accdma_token pub; /* the owner's latest OK token, 0 at the end */
	atomic_int stop;
	int iters;
	int pinned, stale; /* by the pinning thread */
};

static void *owner(void *arg)
{
	struct race *rc = arg;
	accdma_queue *q = th_qi(rc->w, 0, 0);

	for (int i = 0; i < rc->iters; i++) {
		accdma_token ok, bad;

		assert_int_equal(exec_ok(q, &ok), 0);
		atomic_store(&rc->pub, ok);
		th_wait_ok(rc->w, ok);
		/* the slot comes back for an op that fails: a pin that outlived
		 * the consume must keep it from this one */
		assert_int_equal(exec_fail(q, &bad), 0);
		th_wait_st(rc->w, bad, ACCDMA_ST_EXEC_FAILED);
	}
	atomic_store(&rc->stop, 1);
	return NULL;
}

static void *pinner(void *arg)
{
	struct race *rc = arg;
	accdma_queue *q = th_qi(rc->w, 0, 1);

	while (!atomic_load(&rc->stop)) {
		accdma_token t = atomic_load(&rc->pub), d;
		int r;

		if (!t)
			continue;
		r = accdma_after_all(q, &t, 1, &d);
		if (r == -ESTALE) {
			rc->stale++;
			continue;
		}
		assert_int_equal(r, 0);
		rc->pinned++;
		th_wait_ok(rc->w, d); /* NOT_ATTEMPTED would mean it read a failing op */
	}
	return NULL;
}

/* Configurations with two queues only (*state). */
static void test_pin_races_consume(void **state)
{
	const struct cfg *c = *state;

	{
		struct race rc = { .w = open_cfg(c, DEPTH), .iters = th_iters(3000) };
		pthread_t a, b;

		atomic_init(&rc.pub, 0);
		atomic_init(&rc.stop, 0);
		assert_int_equal(pthread_create(&b, NULL, pinner, &rc), 0);
		assert_int_equal(pthread_create(&a, NULL, owner, &rc), 0);
		pthread_join(a, NULL);
		pthread_join(b, NULL);
		print_message("  %s: %d pins held, %d found consumed\n", c->name, rc.pinned,
			      rc.stale);
		th_close(rc.w);
	}
}

int main(void)
{
	struct th_cases cases = { 0 };

	for (int i = 0; i < NCFG; i++) {
		void *c = (void *)&cfgs[i];

		th_case(&cases, test_pin_holds_consumed_slot, c, "test_pin_holds_consumed_slot/%s",
			cfgs[i].name);
		th_case(&cases, test_done_unconsumed_keeps_slot, c,
			"test_done_unconsumed_keeps_slot/%s", cfgs[i].name);
		th_case(&cases, test_released_pending_keeps_slot, c,
			"test_released_pending_keeps_slot/%s", cfgs[i].name);
	}
	for (int i = 0; i < NCFG; i++)
		if (cfgs[i].queues >= 2)
			th_case(&cases, test_pin_races_consume, (void *)&cfgs[i],
				"test_pin_races_consume/%s", cfgs[i].name);
	return th_run_cases("test_slots", &cases, NULL, NULL);
}
