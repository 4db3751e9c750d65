/* SPDX-License-Identifier: MIT */
/*
 * test_bw_plan.c - what accdma-bw posts per iteration (tools/accdma-bw/pattern.c).
 *
 *  - chain mode runs the same program on every device: in a ring, a pair
 *    exchanging and an all-to-all step, each device posts its send before
 *    its recv, and nothing else;
 *  - fence and sync modes order those exchanges even/odd (the lower rank
 *    sends first) and put a fence after every send and every recv;
 *  - the chained pipeline keeps its recv -> exec -> send dependencies, and
 *    the ping-pong's return send waits on its recv and sends what came in;
 *  - every recv names the device that sends to it.
 */
#include "helpers/th.h"

#include "../tools/accdma-bw/opts.c"
#include "../tools/accdma-bw/pattern.c"

static struct bw_plan build(enum bw_pattern pat, enum bw_mode mode, int ndev)
{
	struct bw_plan p;
	char err[128] = "";

	assert_int_equal(bw_plan_build(&p, pat, mode, ndev, err, sizeof(err)), 0);
	assert_int_equal(p.ndev, ndev);
	return p;
}

/* The kinds of device @d's ops, as a string: S send, R recv, F fence, X exec. */
static const char *kinds(const struct bw_plan *p, int d)
{
	static char s[64];
	int i;

	for (i = 0; i < p->dev[d].nops && i < 63; i++)
		switch (p->dev[d].ops[i].kind) {
		case ACCDMA_OP_SEND: s[i] = 'S'; break;
		case ACCDMA_OP_RECV: s[i] = 'R'; break;
		case ACCDMA_OP_FENCE: s[i] = 'F'; break;
		case ACCDMA_OP_EXEC: s[i] = 'X'; break;
		default: s[i] = '?'; break;
		}
	s[i] = 0;
	return s;
}

/* Every recv of the plan is matched by a send of its peer toward it, and the counts agree. */
static void assert_sends_meet_recvs(const struct bw_plan *p)
{
	for (int d = 0; d < p->ndev; d++)
		for (int i = 0; i < p->dev[d].nops; i++) {
			const struct bw_opdesc *r = &p->dev[d].ops[i];
			int found = 0;

			if (r->kind != ACCDMA_OP_RECV)
				continue;
			for (int j = 0; j < p->dev[r->peer].nops; j++)
				found += p->dev[r->peer].ops[j].kind == ACCDMA_OP_SEND &&
					 p->dev[r->peer].ops[j].peer == d;
			assert_int_equal(found, 1);
		}
}

static void test_permute(void **state)
{
	(void)state;
	for (int n = 2; n <= 5; n++) {
		struct bw_plan c = build(BW_PAT_PERMUTE, BW_MODE_CHAIN, n);
		struct bw_plan f = build(BW_PAT_PERMUTE, BW_MODE_FENCE, n);
		struct bw_plan s = build(BW_PAT_PERMUTE, BW_MODE_SYNC, n);

		for (int d = 0; d < n; d++) {
			assert_string_equal(kinds(&c, d), "SR");
			assert_int_equal(c.dev[d].ops[0].peer, (d + 1) % n);
			assert_int_equal(c.dev[d].ops[1].peer, (d + n - 1) % n);
			assert_int_equal(c.dev[d].ops[0].dep, -1);
			assert_int_equal(c.dev[d].ops[1].dep, -1);
			assert_string_equal(kinds(&f, d), d % 2 ? "RFSF" : "SFRF");
			assert_string_equal(kinds(&s, d), d % 2 ? "RFSF" : "SFRF");
		}
		assert_sends_meet_recvs(&c);
		assert_sends_meet_recvs(&f);
		bw_plan_free(&c);
		bw_plan_free(&f);
		bw_plan_free(&s);
	}
}

static void test_bidir(void **state)
{
	(void)state;
	struct bw_plan c = build(BW_PAT_BIDIR, BW_MODE_CHAIN, 2);
	struct bw_plan f = build(BW_PAT_BIDIR, BW_MODE_FENCE, 2);

	assert_string_equal(kinds(&c, 0), "SR");
	assert_string_equal(kinds(&c, 1), "SR");
	assert_string_equal(kinds(&f, 0), "SFRF");
	assert_string_equal(kinds(&f, 1), "RFSF");
	assert_sends_meet_recvs(&c);
	assert_sends_meet_recvs(&f);
	bw_plan_free(&c);
	bw_plan_free(&f);
}

static void test_alltoall(void **state)
{
	(void)state;
	struct bw_plan c = build(BW_PAT_ALLTOALL, BW_MODE_CHAIN, 4);
	struct bw_plan f = build(BW_PAT_ALLTOALL, BW_MODE_FENCE, 4);

	for (int d = 0; d < 4; d++) {
		/* step s (1..3) exchanges with d ^ s: chain sends first in every step */
		assert_string_equal(kinds(&c, d), "SRSRSR");
		for (int s = 1; s < 4; s++) {
			assert_int_equal(c.dev[d].ops[2 * (s - 1)].peer, d ^ s);
			assert_int_equal(c.dev[d].ops[2 * (s - 1) + 1].peer, d ^ s);
			/* fenced: the lower rank of the pair sends first */
			assert_int_equal(f.dev[d].ops[4 * (s - 1)].kind,
					 d < (d ^ s) ? ACCDMA_OP_SEND : ACCDMA_OP_RECV);
		}
	}
	assert_sends_meet_recvs(&c);
	assert_sends_meet_recvs(&f);
	bw_plan_free(&c);
	bw_plan_free(&f);
}

static void test_chained_pipeline(void **state)
{
	(void)state;
	struct bw_plan c = build(BW_PAT_CHAIN, BW_MODE_CHAIN, 3);

	assert_string_equal(kinds(&c, 0), "S");
	assert_string_equal(kinds(&c, 1), "RXS");
	assert_string_equal(kinds(&c, 2), "RX");
	assert_int_equal(c.dev[1].ops[1].dep, 0); /* exec after the recv */
	assert_int_equal(c.dev[1].ops[2].dep, 1); /* send after the exec */
	assert_sends_meet_recvs(&c);
	bw_plan_free(&c);
}

/* 0 sends and then receives; 1 receives, then sends back the buffer it
 * received into once its recv is done; the data 0 gets back is its own. */
static void test_pingpong(void **state)
{
	(void)state;
	struct bw_plan c = build(BW_PAT_PINGPONG, BW_MODE_CHAIN, 2);
	struct bw_plan f = build(BW_PAT_PINGPONG, BW_MODE_FENCE, 4);
	uint8_t got, want, buf[16];

	assert_string_equal(kinds(&c, 0), "SR");
	assert_string_equal(kinds(&c, 1), "RS");
	assert_int_equal(c.dev[0].ops[0].dep, -1);
	assert_int_equal(c.dev[1].ops[1].dep, 0); /* the send after the recv */
	assert_int_equal(c.dev[1].ops[1].buf, BW_BUF_DST);
	assert_int_equal(c.dev[1].ops[1].peer, 0);
	assert_sends_meet_recvs(&c);
	/* fenced, the order stays and a fence follows each; devices 2 and 3 idle */
	assert_string_equal(kinds(&f, 0), "SFRF");
	assert_string_equal(kinds(&f, 1), "RFSF");
	assert_int_equal(f.dev[1].ops[2].dep, 0);
	assert_int_equal(f.dev[2].nops, 0);
	assert_int_equal(f.dev[3].nops, 0);
	assert_sends_meet_recvs(&f);
	/* both recvs hold device 0's bytes; device 1's would be wrong */
	bw_pattern_fill(buf, sizeof(buf), 0, 7);
	assert_int_equal(bw_pattern_check(&c, BW_PAT_PINGPONG, 0, &c.dev[0].ops[1], buf, sizeof(buf), 7, &got,
					  &want), -1);
	assert_int_equal(bw_pattern_check(&c, BW_PAT_PINGPONG, 1, &c.dev[1].ops[0], buf, sizeof(buf), 7, &got,
					  &want), -1);
	bw_pattern_fill(buf, sizeof(buf), 1, 7);
	assert_int_not_equal(bw_pattern_check(&c, BW_PAT_PINGPONG, 0, &c.dev[0].ops[1], buf, sizeof(buf), 7,
					      &got, &want), -1);
	bw_plan_free(&c);
	bw_plan_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_permute),
		cmocka_unit_test(test_bidir),
		cmocka_unit_test(test_alltoall),
		cmocka_unit_test(test_chained_pipeline),
		cmocka_unit_test(test_pingpong),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
