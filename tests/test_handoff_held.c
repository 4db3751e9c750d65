/* SPDX-License-Identifier: MIT */
/*
 * test_handoff_held.c - white-box: the handoff state held open. The receiver's
 * engine is kept busy (an exec that blocks) while a handoff waits for it; a
 * cancel, a reset or nothing happens meanwhile, and each ends as it must
 * (including a reset flushing a pending mailbox request).
 */
#include "handoff_th.h"

/* ---- 9. the handoff state held open: the receiver's engine kept busy --------------- */

/*
 * Device 1 has one engine serving two queues: its recv waits (stage PEER) on
 * queue 0, then an exec on queue 1 keeps the engine busy until released. A
 * send arriving now finds the recv waiting: below 2 KiB it copies and
 * completes both on its own engine (device 1's engine is not needed); from
 * 2 KiB it hands the copy over and waits (stage PEER, nothing landed) until
 * device 1's engine runs again. While it is held there: nothing, a cancel of
 * the send, a cancel of the recv, a reset of the sender, a reset of the
 * receiver (from a thread: the mailbox is served by the busy engine).
 */
struct blocker {
	atomic_int started;
	atomic_int release;
};
static struct blocker blk;

static int block_fn(void *arg)
{
	struct blocker *b = arg;

	atomic_store(&b->started, 1);
	while (!atomic_load(&b->release))
		sched_yield();
	return 0;
}

static int teardown_blocked(void **state)
{
	atomic_store(&blk.release, 1); /* never leave an engine spinning after a failure */
	return teardown_ctx(state);
}

enum held_action { HELD_NONE, HELD_CANCEL_SEND, HELD_CANCEL_RECV, HELD_RESET_SENDER,
		   HELD_RESET_RECEIVER, HELD__COUNT };
static const char *const held_names[] = { "nothing", "cancel send", "cancel recv",
					  "reset sender", "reset receiver" };

struct reset_arg {
	accdma_world *w;
	int dev, rc;
};

static void *reset_thread(void *arg)
{
	struct reset_arg *a = arg;

	a->rc = accdma_device_reset(a->w, a->dev);
	return NULL;
}

static void run_held(const struct cfg *c, uint64_t len, enum held_action act, int *outcome_ok)
{
	struct race x;
	struct accdma_op_info si, ri;
	accdma_token s, r, e;
	enum accdma_status rs, ss;
	uint32_t sd = 90000u + (uint32_t)act * 4u + (len >= HANDOFF_MIN ? 2u : 0u);
	struct reset_arg ra = { 0 };
	pthread_t th;

	CTX("held engines=%d queues=%d nopoll=%d len %llu action %s", c->engines, c->queues,
	    c->nopoll, (unsigned long long)len, held_names[act]);
	race_open(&x, c);
	x.alen = len;
	memset(x.dst, GB, x.dsize);
	pat_fill(x.src, len, sd);
	atomic_store(&blk.started, 0);
	atomic_store(&blk.release, 0);
	r = RECV(x.qr, 0, 9, x.kd, x.offa, len);
	until_stage(x.w, 0, r, ACCDMA_STAGE_PEER);
	assert_int_equal(accdma_exec(th_qi(x.w, 1, 1), block_fn, &blk, NULL, 0, &e), 0);
	while (!atomic_load(&blk.started))
		sched_yield();
	s = SEND(x.qs, 1, 9, x.ks, 0, len);
	th_kick_q(x.w, 0, x.qsi, 1); /* device 0's engine has issued the send */
	if (len < HANDOFF_MIN) {
		/* no handoff: the sender's engine completes both, device 1 stays busy */
		wait_st(x.w, s, ACCDMA_OK);
		done_is(x.w, 0, r, 0, x.qsi, ACCDMA_OP_RECV, ACCDMA_OK, len, len);
		landed_check(x.dst + x.offa, len, len, sd, x.dsize - x.offa - len);
		atomic_store(&blk.release, 1);
		wait_st(x.w, e, ACCDMA_OK);
		wait_st(x.w, r, ACCDMA_OK);
		th_close(x.w);
		ctx[0] = 0;
		return;
	}
	/* handed off: the send waits for device 1's engine, nothing has landed */
	assert_int_equal(accdma_op_info(x.w, s, &si), 0);
	assert_int_equal(si.stage, ACCDMA_STAGE_PEER);
	assert_int_equal(si.peer_posted, 1);
	assert_int_equal(accdma_op_info(x.w, r, &ri), 0);
	assert_int_equal(ri.stage, ACCDMA_STAGE_PEER);
	guard_check(x.dst, x.dsize, "recv range while the copy is handed to a busy engine");
	switch (act) {
	case HELD_NONE:
		break;
	case HELD_CANCEL_SEND:
		/* the send has not started moving data: CANCELED, without device 1 */
		assert_int_equal(accdma_cancel(x.w, s), 0);
		wait_st(x.w, s, ACCDMA_ST_CANCELED);
		break;
	case HELD_CANCEL_RECV:
		assert_int_equal(accdma_cancel(x.w, r), 0);
		break;
	case HELD_RESET_SENDER:
		/* every op pending on the sender completes FLUSHED, without device 1 */
		assert_int_equal(accdma_device_reset(x.w, 0), 0);
		wait_st(x.w, s, ACCDMA_ST_FLUSHED);
		break;
	case HELD_RESET_RECEIVER:
		ra.w = x.w;
		ra.dev = 1;
		ra.rc = 1;
		assert_int_equal(pthread_create(&th, NULL, reset_thread, &ra), 0);
		break;
	default:
		break;
	}
	atomic_store(&blk.release, 1);
	wait_st(x.w, e, ACCDMA_OK);
	if (act == HELD_RESET_RECEIVER) {
		assert_int_equal(pthread_join(th, NULL), 0);
		assert_int_equal(ra.rc, 0);
	}
	rs = st_wait(x.w, r);
	ss = (act == HELD_CANCEL_SEND) ? ACCDMA_ST_CANCELED
	     : (act == HELD_RESET_SENDER) ? ACCDMA_ST_FLUSHED
					  : st_wait(x.w, s);
	switch (act) {
	case HELD_NONE:
		th_assert_st(rs, ACCDMA_OK);
		th_assert_st(ss, ACCDMA_OK);
		break;
	case HELD_CANCEL_SEND:
	case HELD_RESET_SENDER:
		th_assert_st(rs, ACCDMA_ST_PEER_ERROR);
		break;
	case HELD_CANCEL_RECV:
		if (!((rs == ACCDMA_OK && ss == ACCDMA_OK) ||
		      (rs == ACCDMA_ST_CANCELED && ss == ACCDMA_ST_PEER_ERROR)))
			fail_msg("cancel of a handed-off recv: recv %s, send %s", accdma_status_str(rs),
				 accdma_status_str(ss));
		break;
	case HELD_RESET_RECEIVER:
		if (!((rs == ACCDMA_OK && ss == ACCDMA_OK) ||
		      (rs == ACCDMA_ST_FLUSHED && ss == ACCDMA_ST_PEER_ERROR)))
			fail_msg("reset of a receiver with a handed-off recv: recv %s, send %s",
				 accdma_status_str(rs), accdma_status_str(ss));
		break;
	default:
		break;
	}
	if (outcome_ok)
		*outcome_ok = rs == ACCDMA_OK;
	if (rs == ACCDMA_OK)
		landed_check(x.dst + x.offa, len, len, sd, x.dsize - x.offa - len);
	else
		guard_check(x.dst, x.dsize, "recv range of a pair that did not happen");
	/* the tag pairs on (the next pair's send is 2 MiB: the handoff again) */
	next_pair(&x, 9, (int)act, rs == ACCDMA_OK, sd);
	th_close(x.w);
	ctx[0] = 0;
}

/*
 * The receiver's reset is flushed while the handoff is pending: the
 * receiver's one engine runs its mailbox (the epoch is bumped), then its recv
 * queue, where an exec behind the waiting recv holds it; only now does the
 * large send arrive and hand the copy over. The next pass of that engine
 * flushes its queues with the handoff pending, acknowledges the reset, and the
 * reset returns.
 */
static struct blocker blk2;

static int teardown_blocked2(void **state)
{
	atomic_store(&blk2.release, 1);
	return teardown_blocked(state);
}

static void run_reset_flush_pending(const struct cfg *c, enum accdma_status *rs_out,
				    enum accdma_status *ss_out)
{
	struct race x;
	struct accdma_op_info si;
	accdma_token s, r, e1, e2;
	enum accdma_status rs, ss;
	uint32_t sd = 91000u;
	struct reset_arg ra = { 0 };
	uint32_t req;
	pthread_t th;

	CTX("reset flushed with the handoff pending engines=%d queues=%d nopoll=%d", c->engines,
	    c->queues, c->nopoll);
	race_open(&x, c);
	memset(x.dst, GB, x.dsize);
	pat_fill(x.src, RLEN, sd);
	atomic_store(&blk.started, 0);
	atomic_store(&blk.release, 0);
	atomic_store(&blk2.started, 0);
	atomic_store(&blk2.release, 0);
	r = RECV(x.qr, 0, 10, x.kd, x.offa, RLEN);
	until_stage(x.w, 0, r, ACCDMA_STAGE_PEER);
	/* hold the engine in queue 1, then queue the second blocker behind the recv */
	assert_int_equal(accdma_exec(th_qi(x.w, 1, 1), block_fn, &blk, NULL, 0, &e1), 0);
	while (!atomic_load(&blk.started))
		sched_yield();
	assert_int_equal(accdma_exec(th_qi(x.w, 1, 0), block_fn, &blk2, NULL, 0, &e2), 0);
	ra.w = x.w;
	ra.dev = 1;
	ra.rc = 1;
	req = atomic_load(&q_dev(&x.w->a, 1)->mb.req_seq);
	assert_int_equal(pthread_create(&th, NULL, reset_thread, &ra), 0);
	/* The reset request must be in the mailbox before the engine's next pass
	 * (which looks at the mailbox first): a sleep made that only likely, and
	 * with the cores busy the engine ran the copy before it saw the reset. */
	while (atomic_load(&q_dev(&x.w->a, 1)->mb.req_seq) == req)
		sched_yield();
	atomic_store(&blk.release, 1);
	while (!atomic_load(&blk2.started))
		sched_yield();
	s = SEND(x.qs, 1, 10, x.ks, 0, RLEN);
	th_kick_q(x.w, 0, x.qsi, 1);
	assert_int_equal(accdma_op_info(x.w, s, &si), 0);
	assert_int_equal(si.stage, ACCDMA_STAGE_PEER); /* handed off, or flushed-recv pending */
	atomic_store(&blk2.release, 1);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(ra.rc, 0);
	rs = st_wait(x.w, r);
	ss = st_wait(x.w, s);
	st_wait(x.w, e1); /* the blockers: done before the flush, or running through it */
	st_wait(x.w, e2);
	*rs_out = rs;
	*ss_out = ss;
	/* The flush ran while the recv was pending with nothing moved: by
	 * accdma_device_reset()'s contract the recv is FLUSHED, and its send,
	 * which had handed it the copy, PEER_ERROR (fw_queue_flush refuses the
	 * handoff; before, the reset device moved the data after the reset). */
	if (rs != ACCDMA_ST_FLUSHED || ss != ACCDMA_ST_PEER_ERROR)
		fail_msg("reset flushed with a pending handoff: recv %s, send %s; want FLUSHED, "
			 "PEER_ERROR", accdma_status_str(rs), accdma_status_str(ss));
	x.alen = RLEN;
	guard_check(x.dst, x.dsize, "recv range of a flushed recv");
	next_pair(&x, 10, 0, 0, sd);
	th_close(x.w);
	ctx[0] = 0;
}

static void test_held_handoff(void **state)
{
	static const struct cfg hc[] = { { 1, 2, 0 }, { 1, 2, 1 } };
	int ok_cancel_recv = 0, ok_reset_recv = 0, ok;

	(void)state;
	for (int i = 0; i < 2; i++) {
		run_held(&hc[i], HANDOFF_MIN - 1, HELD_NONE, NULL);
		for (int a = 0; a < HELD__COUNT; a++) {
			ok = 0;
			run_held(&hc[i], HANDOFF_MIN, (enum held_action)a, &ok);
			if (a == HELD_CANCEL_RECV)
				ok_cancel_recv += ok;
			if (a == HELD_RESET_RECEIVER)
				ok_reset_recv += ok;
			run_held(&hc[i], 2 * MIB, (enum held_action)a, &ok);
			if (a == HELD_CANCEL_RECV)
				ok_cancel_recv += ok;
			if (a == HELD_RESET_RECEIVER)
				ok_reset_recv += ok;
		}
	}
	print_message("held handoff: recv canceled while handed off: %d of 4 transferred; "
		      "receiver reset while handed off: %d of 4 transferred\n",
		      ok_cancel_recv, ok_reset_recv);
	for (int i = 0; i < 2; i++) {
		enum accdma_status rs, ss;

		run_reset_flush_pending(&hc[i], &rs, &ss);
		print_message("receiver flushed with the handoff pending (nopoll=%d): recv %s, send %s\n",
			      hc[i].nopoll, accdma_status_str(rs), accdma_status_str(ss));
	}
}

static void add_cases(struct th_cases *t)
{
	th_case(t, test_held_handoff, NULL, "test_held_handoff");
	t->t[t->n - 1].teardown_func = teardown_blocked2;
}

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return handoff_main("test_handoff_held", add_cases);
}
