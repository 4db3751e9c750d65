/* SPDX-License-Identifier: MIT */
/*
 * test_eager_fail.c - eager sends that fail or are canceled.
 *
 *  - cancel: a recv canceled before its eager send arrives; a recv failing on
 *    its own side skips one eager message, also one that lands later;
 *  - a full queue of eager sends posted again as soon as its tokens are
 *    consumed;
 *  - failed small sends (bad key, out of bounds): recv PEER_ERROR, both orders.
 */
#include "eager_th.h"

/* ---- 8. cancel ------------------------------------------------------------------- */

static void run_cancel(const struct cfg *c)
{
	struct pr p;
	accdma_token r1, r2, r3, s1, s2, s3;

	CTX("cancel engines=%d queues=%d", c->engines, c->queues);
	pr_open(&p, c->engines, c->queues, ACCDMA_EAGER_MAX_DEFAULT);
	r1 = pr_recv(&p, 8, 0, 64);
	still_pending(p.w, 1, p.qri, r1);
	assert_int_equal(accdma_cancel(p.w, r1), 0);
	th_wait_st(p.w, r1, ACCDMA_ST_CANCELED);
	/* the first send was for the canceled recv: dropped (its own status may
	 * be OK, copied eagerly, or PEER_ERROR, as before) */
	s1 = pr_send(&p, 8, 0, 8, 61);
	s2 = pr_send(&p, 8, 64, 8, 62);
	wait_either(p.w, s1, ACCDMA_OK, ACCDMA_ST_PEER_ERROR);
	eager_done(p.w, s2); /* its recv is not posted yet */
	r2 = pr_recv(&p, 8, 128, 64);
	th_wait_ok(p.w, r2);
	th_check_u8(p.dst, 128, GUARD, "the canceled recv's range");
	check_landed(p.dst, 128, 64, 8, 62);
	/* and the one after that, recv first */
	r3 = pr_recv(&p, 8, 256, 64);
	s3 = pr_send(&p, 8, 128, 20, 63);
	th_wait_ok(p.w, r3);
	th_wait_ok(p.w, s3);
	check_landed(p.dst, 256, 64, 20, 63);
	th_check_u8(p.dst + 192, 64, GUARD, "between the recvs");
	th_close(p.w);
	ctx[0] = 0;
}

/* A recv that fails on its own side (bad key) takes its FIFO position: the
 * eager message it matched is dropped; the next recv gets the next send. */
static void run_bad_recv(const struct cfg *c)
{
	struct pr p;
	accdma_token r1, r2, s1, s2;

	CTX("bad recv engines=%d", c->engines);
	pr_open(&p, c->engines, c->queues, ACCDMA_EAGER_MAX_DEFAULT);
	s1 = pr_send(&p, 12, 0, 8, 71);
	s2 = pr_send(&p, 12, 64, 8, 72);
	eager_done(p.w, s1);
	eager_done(p.w, s2);
	assert_int_equal(accdma_recv(p.qr, 0, 12, p.kd + 100, 0, 64, NULL, 0, &r1), 0);
	th_wait_st(p.w, r1, ACCDMA_ST_BAD_KEY);
	r2 = pr_recv(&p, 12, 64, 64);
	th_wait_ok(p.w, r2);
	th_check_u8(p.dst, 64, GUARD, "before the good recv");
	check_landed(p.dst, 64, 64, 8, 72);
	th_close(p.w);
	ctx[0] = 0;
}

/* A recv that fails before its eager message lands: the message is dropped
 * when it lands, not held for good; the ring keeps all its room (256 small
 * sends with no recv posted still go eagerly), and FIFO goes on. */
static void run_bad_recv_first(const struct cfg *c)
{
	static accdma_token s[RING + 1], r[RING + 1];
	accdma_token r1, s1;
	int32_t *src32, *dst32;
	struct pr p;

	CTX("bad recv before its message engines=%d queues=%d", c->engines, c->queues);
	pr_open(&p, c->engines, c->queues, ACCDMA_EAGER_MAX_DEFAULT);
	src32 = (int32_t *)(void *)p.src;
	dst32 = (int32_t *)(void *)p.dst;
	assert_int_equal(accdma_recv(p.qr, 0, 13, p.kd + 100, 0, 64, NULL, 0, &r1), 0);
	th_wait_st(p.w, r1, ACCDMA_ST_BAD_KEY);
	s1 = pr_send(&p, 13, 0, 8, 73); /* the failed recv's message: dropped on landing */
	eager_done(p.w, s1);
	th_kick_q(p.w, 1, p.qri, 2);
	for (int k = 0; k < RING; k++) {
		src32[k] = 9000 + k;
		assert_int_equal(accdma_send(p.qs, 1, 13, p.ks, (uint64_t)k * 4, 4, NULL, 0, &s[k]), 0);
	}
	for (int k = 0; k < RING; k++)
		eager_done(p.w, s[k]);
	th_fill_u8(p.dst, DST_SIZE, GUARD);
	for (int k = 0; k < RING; k++)
		assert_int_equal(accdma_recv(p.qr, 0, 13, p.kd, (uint64_t)k * 8, 8, NULL, 0, &r[k]), 0);
	for (int k = 0; k < RING; k++)
		th_wait_ok(p.w, r[k]);
	ovf_check_base(dst32, 0, RING, 9000);
	th_close(p.w);
	ctx[0] = 0;
}

/* An eager send's engine keeps nothing of its slot once the send is done: a
 * host that consumed every token gets a whole queue at once. Depth 64: two
 * full batches of 64 sends, the second posted right after the first's tokens
 * are consumed. */
static void run_full_queue_again(const struct cfg *c, int poll)
{
	enum { D = 64 };
	accdma_token s[2 * D], r[2 * D];
	int32_t *src32, *dst32;
	accdma_world *w;
	accdma_key ks, kd;
	accdma_queue *qs, *qr;

	CTX("full queue again engines=%d queues=%d poll=%d", c->engines, c->queues, poll);
	if (!poll)
		setenv("ACCDMA_POLL", "0", 1);
	w = open_w(2, c->engines, c->queues, ACCDMA_EAGER_MAX_DEFAULT, D, 1u << 20);
	unsetenv("ACCDMA_POLL");
	ks = th_alloc(w, 0, 2 * D * 4, (void **)&src32);
	kd = th_alloc(w, 1, 2 * D * 8, (void **)&dst32);
	th_fill_u8(dst32, 2 * D * 8, GUARD);
	qs = th_qi(w, 0, 0);
	qr = th_qi(w, 1, c->queues - 1);
	for (int round = 0; round < 2; round++) {
		struct accdma_op ops[D];

		for (int k = 0; k < D; k++) {
			int m = round * D + k;

			src32[m] = 4000 + m;
			ops[k] = (struct accdma_op){ .kind = ACCDMA_OP_SEND, .peer = 1, .tag = 40,
						     .key = ks, .offset = (uint64_t)m * 4, .length = 4 };
		}
		/* the second batch comes right after the first's tokens are consumed */
		assert_int_equal(accdma_post(qs, ops, D, &s[round * D]), D);
		for (int k = 0; k < D; k++)
			eager_done(w, s[round * D + k]);
	}
	for (int round = 0; round < 2; round++) {
		for (int k = 0; k < D; k++) {
			int m = round * D + k;

			assert_int_equal(accdma_recv(qr, 0, 40, kd, (uint64_t)m * 8, 8, NULL, 0, &r[m]), 0);
		}
		for (int k = 0; k < D; k++)
			th_wait_ok(w, r[round * D + k]);
	}
	ovf_check_base(dst32, 0, 2 * D, 4000);
	th_close(w);
	ctx[0] = 0;
}

static void test_cancel(void **state)
{
	run_cancel(*state);
}

/* The first three configurations (main()). */
static void test_bad_recv(void **state)
{
	run_bad_recv(*state);
}

static void test_bad_recv_first(void **state)
{
	run_bad_recv_first(*state);
}

static void test_full_queue_again(void **state)
{
	run_full_queue_again(*state, 1);
	run_full_queue_again(*state, 0);
}

/* ---- 9. failed small sends ---------------------------------------------------------- */

static void run_failed_send(const struct cfg *c)
{
	struct pr p;
	accdma_token s, r;

	CTX("failed send engines=%d queues=%d", c->engines, c->queues);
	pr_open(&p, c->engines, c->queues, ACCDMA_EAGER_MAX_DEFAULT);
	/* bad key, send first */
	assert_int_equal(accdma_send(p.qs, 1, 13, p.ks + 100, 0, 8, NULL, 0, &s), 0);
	th_wait_st(p.w, s, ACCDMA_ST_BAD_KEY);
	r = pr_recv(&p, 13, 0, 64);
	th_wait_st(p.w, r, ACCDMA_ST_PEER_ERROR);
	/* bad key, recv first */
	r = pr_recv(&p, 13, 0, 64);
	still_pending(p.w, 1, p.qri, r);
	assert_int_equal(accdma_send(p.qs, 1, 13, p.ks + 100, 0, 8, NULL, 0, &s), 0);
	th_wait_st(p.w, s, ACCDMA_ST_BAD_KEY);
	th_wait_st(p.w, r, ACCDMA_ST_PEER_ERROR);
	/* out of bounds, send first then recv first */
	assert_int_equal(accdma_send(p.qs, 1, 13, p.ks, SRC_SIZE - 4, 8, NULL, 0, &s), 0);
	th_wait_st(p.w, s, ACCDMA_ST_OUT_OF_BOUNDS);
	r = pr_recv(&p, 13, 0, 64);
	th_wait_st(p.w, r, ACCDMA_ST_PEER_ERROR);
	r = pr_recv(&p, 13, 0, 64);
	still_pending(p.w, 1, p.qri, r);
	assert_int_equal(accdma_send(p.qs, 1, 13, p.ks, SRC_SIZE - 4, 8, NULL, 0, &s), 0);
	th_wait_st(p.w, s, ACCDMA_ST_OUT_OF_BOUNDS);
	th_wait_st(p.w, r, ACCDMA_ST_PEER_ERROR);
	th_check_u8(p.dst, DST_SIZE, GUARD, "receiver memory after failed sends");
	/* each failure took exactly one FIFO position: the next pair matches */
	s = pr_send(&p, 13, 0, 8, 81);
	eager_done(p.w, s);
	r = pr_recv(&p, 13, 0, 64);
	th_wait_ok(p.w, r);
	check_landed(p.dst, 0, 64, 8, 81);
	th_close(p.w);
	ctx[0] = 0;
}

static void test_failed_send(void **state)
{
	run_failed_send(*state);
}

int main(int argc, char **argv)
{
	struct th_cases t = { 0 };

	(void)argc;
	(void)argv;
	seed = th_seed();
	PER_CFG(&t, test_cancel, NCFG);
	PER_CFG(&t, test_bad_recv, 3);
	PER_CFG(&t, test_bad_recv_first, NCFG);
	PER_CFG(&t, test_full_queue_again, NCFG);
	PER_CFG(&t, test_failed_send, NCFG);
	return th_run_cases("test_eager_fail", &t, NULL, NULL);
}
