/* SPDX-License-Identifier: MIT */
/*
 * test_handoff_fail.c - handoffs that do not complete: truncation (a send longer
 * than its recv: TRUNCATED both sides, nothing written), cancels racing the
 * handoff, and device resets racing it (FLUSHED and PEER_ERROR, never a hang
 * or a torn copy).
 */
#include "handoff_th.h"

/* ---- 5. truncation ------------------------------------------------------------ */

static void run_truncation(const struct cfg *c, uint64_t slen, int recv_first)
{
	const uint64_t rlen = MIB, len2 = 2 * MIB;
	/* slot A: the truncated recv; slot B: the next pair */
	uint64_t offa = G, offb = G + rlen + G, dsize = offb + len2 + G;
	accdma_world *w = open_cfg(2, c, 8 * MIB, 0);
	int polled = c->engines == 0;
	uint8_t *src, *dst;
	accdma_key ks = ALLOC(w, 0, 2 * len2, &src);
	accdma_key kd = ALLOC(w, 1, dsize, &dst);
	accdma_queue *qs = th_qi(w, 0, c->queues - 1), *qr = th_q(w, 1);
	accdma_token s, r, s2, r2;

	CTX("truncation engines=%d queues=%d nopoll=%d send %llu into recv %llu %s", c->engines,
	    c->queues, c->nopoll, (unsigned long long)slen, (unsigned long long)rlen,
	    recv_first ? "recv first" : "send first");
	pat_fill(src, slen, 51);
	pat_fill(src + len2, len2, 52);
	memset(dst, GB, dsize);
	if (recv_first) {
		r = RECV(qr, 0, 5, kd, offa, rlen);
		until_stage(w, polled, r, ACCDMA_STAGE_PEER);
		s = SEND(qs, 1, 5, ks, 0, slen);
	} else {
		s = SEND(qs, 1, 5, ks, 0, slen);
		until_stage(w, polled, s, ACCDMA_STAGE_PEER);
		r = RECV(qr, 0, 5, kd, offa, rlen);
	}
	done_is(w, polled, s, 0, c->queues - 1, ACCDMA_OP_SEND, ACCDMA_ST_TRUNCATED, slen, 0);
	done_is(w, polled, r, 1, 0, ACCDMA_OP_RECV, ACCDMA_ST_TRUNCATED, rlen, 0);
	wait_st(w, r, ACCDMA_ST_TRUNCATED);
	wait_st(w, s, ACCDMA_ST_TRUNCATED);
	guard_check(dst, dsize, "receiver memory after a truncated transfer");
	pat_check(src, slen, 51, "source of the truncated send");
	/* the next pair on the tag matches normally (recv first: the handoff again) */
	r2 = RECV(qr, 0, 5, kd, offb, len2);
	until_stage(w, polled, r2, ACCDMA_STAGE_PEER);
	s2 = SEND(qs, 1, 5, ks, len2, len2);
	wait_st(w, s2, ACCDMA_OK);
	wait_st(w, r2, ACCDMA_OK);
	guard_check(dst, offb, "truncated recv range and guards, after the next pair");
	landed_check(dst + offb, len2, len2, 52, G);
	th_close(w);
	ctx[0] = 0;
}

static void test_truncation(void **state)
{
	static const struct cfg tc[] = { { 0, 1, 0 }, { 1, 1, 0 }, { 2, 2, 0 }, { 1, 1, 1 } };

	(void)state;
	for (int i = 0; i < 4; i++) {
		run_truncation(&tc[i], 2 * MIB, 1);
		run_truncation(&tc[i], MIB + 1, 1);
		run_truncation(&tc[i], 2 * MIB, 0);
	}
}

/* ---- 6. cancel races ------------------------------------------------------------ */

/* A recv waiting (stage PEER) is canceled around its large send's arrival. */
static void run_cancel_recv(const struct cfg *c, int iters)
{
	struct race x;
	int n_ok = 0, n_canceled = 0;

	race_open(&x, c);
	for (int it = 0; it < iters; it++) {
		int mode = it % 6; /* 0: cancel, then post the send; else post, spin, cancel */
		uint32_t sd = 60000u + 2u * (uint32_t)it;
		enum accdma_status rs, ss;
		accdma_token s, r;

		CTX("cancel recv engines=%d queues=%d nopoll=%d it %d mode %d", c->engines, c->queues,
		    c->nopoll, it, mode);
		memset(x.dst, GB, x.dsize);
		pat_fill(x.src, RLEN, sd);
		r = RECV(x.qr, 0, 6, x.kd, x.offa, RLEN);
		until_stage(x.w, x.polled, r, ACCDMA_STAGE_PEER);
		if (mode == 0) {
			assert_int_equal(accdma_cancel(x.w, r), 0);
			s = SEND(x.qs, 1, 6, x.ks, 0, RLEN);
		} else {
			s = SEND(x.qs, 1, 6, x.ks, 0, RLEN);
			spin((mode - 1) * 100);
			assert_int_equal(accdma_cancel(x.w, r), 0);
		}
		if (it & 1) {
			ss = st_wait(x.w, s);
			rs = st_wait(x.w, r);
		} else {
			rs = st_wait(x.w, r);
			ss = st_wait(x.w, s);
		}
		if (rs == ACCDMA_OK && ss == ACCDMA_OK) {
			n_ok++;
		} else if (rs == ACCDMA_ST_CANCELED && ss == ACCDMA_ST_PEER_ERROR) {
			n_canceled++;
		} else {
			fail_msg("cancel race it %d mode %d: recv %s, send %s; want OK/OK or "
				 "CANCELED/PEER_ERROR",
				 it, mode, accdma_status_str(rs), accdma_status_str(ss));
		}
		slot_a_check(&x, rs == ACCDMA_OK, sd);
		pat_check(x.src, RLEN, sd, "source of the racing send");
		next_pair(&x, 6, it, rs == ACCDMA_OK, sd);
	}
	print_message("cancel recv engines=%d queues=%d nopoll=%d: %d iterations: %d transferred, "
		      "%d canceled\n",
		      c->engines, c->queues, c->nopoll, iters, n_ok, n_canceled);
	th_close(x.w);
	ctx[0] = 0;
}

/* The send is canceled while it may wait for its recv's engine to copy it. */
static void run_cancel_send(const struct cfg *c, int iters)
{
	struct race x;
	int n_ok = 0, n_canceled = 0;

	race_open(&x, c);
	for (int it = 0; it < iters; it++) {
		int mode = it % 4;
		uint32_t sd = 61000u + 2u * (uint32_t)it;
		enum accdma_status rs, ss;
		accdma_token s, r;

		CTX("cancel send engines=%d queues=%d nopoll=%d it %d mode %d", c->engines, c->queues,
		    c->nopoll, it, mode);
		memset(x.dst, GB, x.dsize);
		pat_fill(x.src, RLEN, sd);
		r = RECV(x.qr, 0, 7, x.kd, x.offa, RLEN);
		until_stage(x.w, x.polled, r, ACCDMA_STAGE_PEER);
		s = SEND(x.qs, 1, 7, x.ks, 0, RLEN);
		spin(mode * 100);
		assert_int_equal(accdma_cancel(x.w, s), 0);
		rs = st_wait(x.w, r);
		ss = st_wait(x.w, s);
		if (rs == ACCDMA_OK && ss == ACCDMA_OK)
			n_ok++;
		else if (rs == ACCDMA_ST_PEER_ERROR && ss == ACCDMA_ST_CANCELED)
			n_canceled++;
		else
			fail_msg("cancel send it %d: recv %s, send %s; want OK/OK or "
				 "PEER_ERROR/CANCELED",
				 it, accdma_status_str(rs), accdma_status_str(ss));
		slot_a_check(&x, rs == ACCDMA_OK, sd);
		next_pair(&x, 7, it, rs == ACCDMA_OK, sd);
	}
	print_message("cancel send engines=%d queues=%d nopoll=%d: %d iterations: %d transferred, "
		      "%d canceled\n",
		      c->engines, c->queues, c->nopoll, iters, n_ok, n_canceled);
	th_close(x.w);
	ctx[0] = 0;
}

static const struct cfg race_cfgs[] = {
	{ 0, 1, 0 }, { 1, 1, 0 }, { 2, 1, 0 }, { 2, 2, 0 }, { 1, 1, 1 },
};
#define NRACE ((int)(sizeof(race_cfgs) / sizeof(race_cfgs[0])))

/* Once per race configuration (*state; the first three in quick mode). */
static void test_cancel_race(void **state)
{
	run_cancel_recv(*state, quick ? 12 : 50);
	run_cancel_send(*state, quick ? 4 : 20);
}

/* ---- 7. reset races --------------------------------------------------------------- */

/* Reset device @victim (1: the receiver, 0: the sender) while the large send
 * may be waiting for the recv's engine. */
static void run_reset_race(const struct cfg *c, int victim, int iters)
{
	struct race x;
	struct accdma_device_health h;
	int n_ok = 0, n_flushed = 0, n_done_after = 0;

	race_open(&x, c);
	for (int it = 0; it < iters; it++) {
		int mode = it % 5;
		uint32_t sd = 62000u + 2u * (uint32_t)it;
		enum accdma_status rs, ss, mine, theirs;
		struct accdma_op_info ri;
		accdma_token s, r;
		int rc;

		CTX("reset %s engines=%d queues=%d nopoll=%d it %d mode %d",
		    victim ? "receiver" : "sender", c->engines, c->queues, c->nopoll, it, mode);
		memset(x.dst, GB, x.dsize);
		pat_fill(x.src, RLEN, sd);
		r = RECV(x.qr, 0, 8, x.kd, x.offa, RLEN);
		until_stage(x.w, x.polled, r, ACCDMA_STAGE_PEER);
		s = SEND(x.qs, 1, 8, x.ks, 0, RLEN);
		spin(mode * 100);
		rc = accdma_device_reset(x.w, victim);
		if (rc) {
			accdma_stall_report(x.w, stderr);
			fail_msg("accdma_device_reset(%d) = %d", victim, rc);
		}
		/* for the report: was the recv still pending when the reset returned? */
		assert_int_equal(accdma_op_info(x.w, r, &ri), 0);
		rs = st_wait(x.w, r);
		ss = st_wait(x.w, s);
		mine = victim ? rs : ss;
		theirs = victim ? ss : rs;
		if (rs == ACCDMA_OK && ss == ACCDMA_OK) {
			n_ok++;
			if (ri.stage != ACCDMA_STAGE_DONE)
				n_done_after++;
		} else if (mine == ACCDMA_ST_FLUSHED && theirs == ACCDMA_ST_PEER_ERROR) {
			n_flushed++;
		} else {
			fail_msg("reset %s, it %d: recv %s, send %s; want OK/OK or the reset "
				 "device's op FLUSHED and its partner PEER_ERROR",
				 victim ? "receiver" : "sender", it, accdma_status_str(rs),
				 accdma_status_str(ss));
		}
		slot_a_check(&x, rs == ACCDMA_OK, sd);
		assert_int_equal(accdma_device_health(x.w, victim, &h), 0);
		assert_true(h.resets == (uint64_t)it + 1);
		/* the tag still pairs, and so does a fresh one */
		next_pair(&x, 8, it, rs == ACCDMA_OK, sd);
		next_pair(&x, 1000 + (uint64_t)it, it + 2, rs == ACCDMA_OK, sd);
	}
	assert_int_equal(accdma_device_health(x.w, victim, &h), 0);
	assert_true(h.ops_pending == 0);
	print_message("reset %s engines=%d queues=%d nopoll=%d: %d iterations: %d transferred "
		      "(%d of them completed after the reset returned), %d flushed\n",
		      victim ? "receiver" : "sender", c->engines, c->queues, c->nopoll, iters, n_ok,
		      n_done_after, n_flushed);
	th_close(x.w);
	ctx[0] = 0;
}

/* Once per race configuration, as test_cancel_race. */
static void test_reset_race(void **state)
{
	run_reset_race(*state, 1, quick ? 5 : 20);
	run_reset_race(*state, 0, quick ? 3 : 10);
}

static void add_cases(struct th_cases *t)
{
	int nrace = quick ? 3 : NRACE;

	CASE(t, test_truncation, NULL, "test_truncation");
	for (int i = 0; i < nrace; i++)
		CASE(t, test_cancel_race, &race_cfgs[i], "test_cancel_race/%s", cfg_name(&race_cfgs[i]));
	for (int i = 0; i < nrace; i++)
		CASE(t, test_reset_race, &race_cfgs[i], "test_reset_race/%s", cfg_name(&race_cfgs[i]));
}

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return handoff_main("test_handoff_fail", add_cases);
}
