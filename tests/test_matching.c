/* SPDX-License-Identifier: MIT */
/*
 * test_matching.c - sends match recvs by (source, destination, tag) in FIFO order.
 *
 *  - two tags between one pair at once, posted in opposite orders on the two sides;
 *  - k sends on one tag land in the k recvs in FIFO order (sends first, recvs
 *    first, interleaved);
 *  - a skip connection: rank 2 receives from 0 and from 1; rank 1 sends to 2
 *    only after its own recv from 0, through a token dependency;
 *  - a recv posted long before its send, with much unrelated traffic between;
 *  - one tag, two sources: a recv from 1 never takes 0's data;
 *  - self-send: a device sends to itself;
 *  - tags are compared in full (0, 1, 2^62, 2^63 - 1 are all distinct);
 *  - numbering in batches: one post of 300 ops over 150 tags (the numbering
 *    table grows mid-batch), tags alternating so the last-used entry of each
 *    direction keeps changing, and a second round on the same tags whose
 *    recvs must take the second sends, not the first.
 */
#include "helpers/th.h"

#include <errno.h>

#define LEN 256

static void test_two_tags_opposite_order(void **state)
{
	(void)state;
	accdma_world *w = th_open(2);
	accdma_queue *q0 = th_q(w, 0), *q1 = th_q(w, 1);
	uint8_t *s, *r;
	accdma_key ks = th_alloc(w, 0, 2 * LEN, (void **)&s);
	accdma_key kr = th_alloc(w, 1, 2 * LEN, (void **)&r);
	accdma_token sa, sb, ra, rb;

	th_fill_u8(s, LEN, 0xAA);
	th_fill_u8(s + LEN, LEN, 0xBB);
	/* device 0: tag A then tag B; device 1: tag B then tag A */
	assert_int_equal(accdma_send(q0, 1, 100, ks, 0, LEN, NULL, 0, &sa), 0);
	assert_int_equal(accdma_send(q0, 1, 200, ks, LEN, LEN, NULL, 0, &sb), 0);
	assert_int_equal(accdma_recv(q1, 0, 200, kr, LEN, LEN, NULL, 0, &rb), 0);
	assert_int_equal(accdma_recv(q1, 0, 100, kr, 0, LEN, NULL, 0, &ra), 0);
	th_wait_ok(w, rb);
	th_wait_ok(w, ra);
	th_wait_ok(w, sa);
	th_wait_ok(w, sb);
	th_check_u8(r, LEN, 0xAA, "tag A");
	th_check_u8(r + LEN, LEN, 0xBB, "tag B");

	/* and the other way round: recvs posted first, sends in the opposite order */
	th_fill_u8(r, 2 * LEN, 0);
	th_fill_u8(s, LEN, 0x11);
	th_fill_u8(s + LEN, LEN, 0x22);
	assert_int_equal(accdma_recv(q1, 0, 100, kr, 0, LEN, NULL, 0, &ra), 0);
	assert_int_equal(accdma_recv(q1, 0, 200, kr, LEN, LEN, NULL, 0, &rb), 0);
	assert_int_equal(accdma_send(q0, 1, 200, ks, LEN, LEN, NULL, 0, &sb), 0);
	th_wait_ok(w, rb);
	th_kick(w, 1, 1);
	th_pending(w, ra); /* tag A's send is not posted: tag B's data must not land there */
	th_check_u8(r, LEN, 0, "tag A slot before its send");
	assert_int_equal(accdma_send(q0, 1, 100, ks, 0, LEN, NULL, 0, &sa), 0);
	th_wait_ok(w, ra);
	th_wait_ok(w, sa);
	th_wait_ok(w, sb);
	th_check_u8(r, LEN, 0x11, "tag A");
	th_check_u8(r + LEN, LEN, 0x22, "tag B");
	th_close(w);
}

enum fifo_mode { SENDS_FIRST, RECVS_FIRST, INTERLEAVED };

static void run_fifo(enum fifo_mode mode)
{
	enum { K = 32, SLOT = 64 };
	accdma_world *w = th_open(2);
	accdma_queue *q0 = th_q(w, 0), *q1 = th_q(w, 1);
	uint8_t *s, *r;
	accdma_key ks = th_alloc(w, 0, K * SLOT, (void **)&s);
	accdma_key kr = th_alloc(w, 1, K * SLOT, (void **)&r);
	accdma_token st[K], rt[K];

	for (int i = 0; i < K; i++)
		th_fill_u8(s + i * SLOT, SLOT, (uint8_t)(i + 1));
	/* recv i lands in slot K-1-i, so a position-independent bug shows */
	for (int i = 0; i < K; i++) {
		if (mode == SENDS_FIRST || (mode == INTERLEAVED && i % 3 != 1))
			assert_int_equal(accdma_send(q0, 1, 5, ks, (uint64_t)i * SLOT, SLOT, NULL, 0,
						     &st[i]),
					 0);
		else
			st[i] = 0;
	}
	for (int i = 0; i < K; i++)
		assert_int_equal(accdma_recv(q1, 0, 5, kr, (uint64_t)(K - 1 - i) * SLOT, SLOT, NULL,
					     0, &rt[i]),
				 0);
	if (mode != SENDS_FIRST) {
		/* the k-th recv matches the k-th posted send: the first recv past
		 * the sends posted so far cannot complete */
		int first_missing = 0;

		for (int i = 0; i < K; i++)
			if (st[i])
				first_missing++;

		th_kick(w, 1, 1);
		th_pending(w, rt[first_missing]);
		th_check_u8(r + (K - 1 - first_missing) * SLOT, SLOT, 0, "slot of an unsent message");
		for (int i = 0; i < K; i++)
			if (!st[i])
				assert_int_equal(accdma_send(q0, 1, 5, ks, (uint64_t)i * SLOT, SLOT,
							     NULL, 0, &st[i]),
						 0);
	}
	/* complete in reverse so the last recv is waited on first */
	for (int i = K - 1; i >= 0; i--)
		th_wait_ok(w, rt[i]);
	for (int i = 0; i < K; i++)
		th_wait_ok(w, st[i]);
	if (mode == INTERLEAVED) {
		/* sends were posted out of FIFO order relative to their index: the
		 * k-th posted send matches the k-th posted recv */
		int order[K], n = 0;

		for (int i = 0; i < K; i++)
			if (i % 3 != 1)
				order[n++] = i;
		for (int i = 0; i < K; i++)
			if (i % 3 == 1)
				order[n++] = i;
		for (int k = 0; k < K; k++)
			th_check_u8(r + (K - 1 - k) * SLOT, SLOT, (uint8_t)(order[k] + 1),
				    "k-th send in k-th recv");
	} else {
		for (int k = 0; k < K; k++)
			th_check_u8(r + (K - 1 - k) * SLOT, SLOT, (uint8_t)(k + 1),
				    "k-th send in k-th recv");
	}
	th_close(w);
}

static void test_fifo_sends_first(void **state)
{
	(void)state;
	run_fifo(SENDS_FIRST);
}

static void test_fifo_recvs_first(void **state)
{
	(void)state;
	run_fifo(RECVS_FIRST);
}

static void test_fifo_interleaved(void **state)
{
	(void)state;
	run_fifo(INTERLEAVED);
}

/* Skip connection: 0 -> 1 -> 2 and 0 -> 2. Rank 1 forwards what it received
 * (plus nothing): its send depends on its recv's token, so rank 2 can only
 * see 0's data in the slot from 1. Posted 2, 1, 0; rank 0 last. */
static void test_skip_connection(void **state)
{
	(void)state;
	accdma_world *w = th_open(3);
	uint8_t *b0, *b1, *b2;
	accdma_key k0 = th_alloc(w, 0, 2 * LEN, (void **)&b0);
	accdma_key k1 = th_alloc(w, 1, LEN, (void **)&b1);
	accdma_key k2 = th_alloc(w, 2, 2 * LEN, (void **)&b2);
	accdma_token r2a, r2b, r1, s1, s0a, s0b;

	th_fill_u8(b0, LEN, 0x0A);       /* 0 -> 1 (forwarded to 2) */
	th_fill_u8(b0 + LEN, LEN, 0x0B); /* 0 -> 2 directly */
	th_fill_u8(b1, LEN, 0xEE);       /* rank 1's buffer before the recv */
	/* rank 2: from 1 first, then from 0 (the reverse of the data's arrival) */
	assert_int_equal(accdma_recv(th_q(w, 2), 1, 9, k2, 0, LEN, NULL, 0, &r2a), 0);
	assert_int_equal(accdma_recv(th_q(w, 2), 0, 9, k2, LEN, LEN, NULL, 0, &r2b), 0);
	/* rank 1: recv from 0, send to 2 after it */
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 9, k1, 0, LEN, NULL, 0, &r1), 0);
	assert_int_equal(accdma_send(th_q(w, 1), 2, 9, k1, 0, LEN, &r1, 1, &s1), 0);
	th_kick(w, 1, 2);
	th_kick(w, 2, 2);
	th_pending(w, s1);
	th_pending(w, r2a);
	th_pending(w, r2b);
	/* rank 0: the direct send first, then the one to 1 */
	assert_int_equal(accdma_send(th_q(w, 0), 2, 9, k0, LEN, LEN, NULL, 0, &s0b), 0);
	th_wait_ok(w, r2b);
	th_check_u8(b2 + LEN, LEN, 0x0B, "direct 0 -> 2");
	th_kick(w, 1, 1);
	th_pending(w, s1);
	th_pending(w, r2a);
	th_check_u8(b2, LEN, 0, "slot from 1 before 1 got its data");
	assert_int_equal(accdma_send(th_q(w, 0), 1, 9, k0, 0, LEN, NULL, 0, &s0a), 0);
	th_wait_ok(w, r2a);
	th_wait_ok(w, r1);
	th_wait_ok(w, s1);
	th_wait_ok(w, s0a);
	th_wait_ok(w, s0b);
	th_check_u8(b1, LEN, 0x0A, "rank 1 got 0's data");
	th_check_u8(b2, LEN, 0x0A, "rank 2 got 0's data through 1");
	th_close(w);
}

/* A recv posted long before its send: hundreds of transfers on the same pair
 * with other tags, on the same tag between other pairs, and the reverse
 * direction, complete in between; the early recv stays pending and untouched. */
static void test_recv_long_before_send(void **state)
{
	(void)state;
	enum { ROUNDS = 200 };
	accdma_world *w = th_open(4);
	uint8_t *b[4];
	accdma_key k[4];
	accdma_token early, late, t[6];

	for (int d = 0; d < 4; d++) {
		k[d] = th_alloc(w, d, 4 * LEN, (void **)&b[d]);
		th_fill_u8(b[d], 4 * LEN, (uint8_t)(0x10 + d));
	}
	th_fill_u8(b[1] + 3 * LEN, LEN, 0x77); /* the early recv's destination */
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 42, k[1], 3 * LEN, LEN, NULL, 0, &early), 0);
	for (int i = 0; i < ROUNDS; i++) {
		/* same pair, other tag */
		assert_int_equal(accdma_send(th_q(w, 0), 1, 43, k[0], 0, LEN, NULL, 0, &t[0]), 0);
		assert_int_equal(accdma_recv(th_q(w, 1), 0, 43, k[1], 0, LEN, NULL, 0, &t[1]), 0);
		/* same tag, other pairs (including other sources into device 1) */
		assert_int_equal(accdma_send(th_q(w, 2), 1, 42, k[2], 0, LEN, NULL, 0, &t[2]), 0);
		assert_int_equal(accdma_recv(th_q(w, 1), 2, 42, k[1], LEN, LEN, NULL, 0, &t[3]), 0);
		/* same tag, reverse direction */
		assert_int_equal(accdma_recv(th_q(w, 0), 1, 42, k[0], 2 * LEN, LEN, NULL, 0, &t[4]),
				 0);
		assert_int_equal(accdma_send(th_q(w, 1), 0, 42, k[1], 2 * LEN, LEN, NULL, 0, &t[5]),
				 0);
		th_wait_all_ok(w, t, 6);
		if (i % 50 == 0)
			th_pending(w, early);
	}
	th_pending(w, early);
	th_check_u8(b[1] + 3 * LEN, LEN, 0x77, "early recv untouched");
	th_check_u8(b[1], LEN, 0x10, "tag 43 data from 0");
	th_check_u8(b[1] + LEN, LEN, 0x12, "tag 42 data from 2");
	th_check_u8(b[0] + 2 * LEN, LEN, 0x11, "reverse direction data");
	/* now the send */
	th_fill_u8(b[0] + 3 * LEN, LEN, 0xC3);
	assert_int_equal(accdma_send(th_q(w, 0), 1, 42, k[0], 3 * LEN, LEN, NULL, 0, &late), 0);
	th_wait_ok(w, early);
	th_wait_ok(w, late);
	th_check_u8(b[1] + 3 * LEN, LEN, 0xC3, "early recv got the late send");
	th_close(w);
}

/* One tag, two sources into device 2: the recv from 1 (posted first) must
 * wait for 1's send even though 0's send on the same tag arrives earlier. */
static void test_same_tag_two_sources(void **state)
{
	(void)state;
	accdma_world *w = th_open(3);
	uint8_t *b0, *b1, *b2;
	accdma_key k0 = th_alloc(w, 0, LEN, (void **)&b0);
	accdma_key k1 = th_alloc(w, 1, LEN, (void **)&b1);
	accdma_key k2 = th_alloc(w, 2, 2 * LEN, (void **)&b2);
	accdma_token rf1, rf0, s0, s1;

	th_fill_u8(b0, LEN, 0xA0);
	th_fill_u8(b1, LEN, 0xA1);
	assert_int_equal(accdma_recv(th_q(w, 2), 1, 3, k2, 0, LEN, NULL, 0, &rf1), 0);
	assert_int_equal(accdma_recv(th_q(w, 2), 0, 3, k2, LEN, LEN, NULL, 0, &rf0), 0);
	assert_int_equal(accdma_send(th_q(w, 0), 2, 3, k0, 0, LEN, NULL, 0, &s0), 0);
	th_wait_ok(w, rf0);
	th_wait_ok(w, s0);
	th_kick(w, 2, 1);
	th_pending(w, rf1);
	th_check_u8(b2, LEN, 0, "recv from 1 before 1 sent");
	assert_int_equal(accdma_send(th_q(w, 1), 2, 3, k1, 0, LEN, NULL, 0, &s1), 0);
	th_wait_ok(w, rf1);
	th_wait_ok(w, s1);
	th_check_u8(b2, LEN, 0xA1, "from 1");
	th_check_u8(b2 + LEN, LEN, 0xA0, "from 0");
	th_close(w);
}

/* Self-send: peer == own rank matches a recv on the same device from itself,
 * in FIFO order, whichever is posted first. */
static void test_self_send(void **state)
{
	(void)state;
	accdma_world *w = th_open(2);
	accdma_queue *q = th_q(w, 1);
	uint8_t *b;
	accdma_key k = th_alloc(w, 1, 4 * LEN, (void **)&b);
	accdma_token s1, s2, r1, r2;

	th_fill_u8(b, LEN, 0x51);
	th_fill_u8(b + LEN, LEN, 0x52);
	/* send first */
	assert_int_equal(accdma_send(q, 1, 8, k, 0, LEN, NULL, 0, &s1), 0);
	assert_int_equal(accdma_recv(q, 1, 8, k, 2 * LEN, LEN, NULL, 0, &r1), 0);
	/* recv first */
	assert_int_equal(accdma_recv(q, 1, 8, k, 3 * LEN, LEN, NULL, 0, &r2), 0);
	th_kick(w, 1, 1);
	th_pending(w, r2);
	assert_int_equal(accdma_send(q, 1, 8, k, LEN, LEN, NULL, 0, &s2), 0);
	th_wait_ok(w, r2);
	th_wait_ok(w, r1);
	th_wait_ok(w, s1);
	th_wait_ok(w, s2);
	th_check_u8(b + 2 * LEN, LEN, 0x51, "first self message");
	th_check_u8(b + 3 * LEN, LEN, 0x52, "second self message");
	th_close(w);
}

/* Tags are full 63-bit values: near-identical tags never match each other. */
static void test_tag_values(void **state)
{
	(void)state;
	static const uint64_t tags[] = { 0, 1, 1ull << 62, ACCDMA_TAG_RESERVED - 1,
					 (1ull << 32) | 1, 1ull << 32 };
	enum { NT = sizeof(tags) / sizeof(tags[0]) };
	accdma_world *w = th_open(2);
	uint8_t *s, *r;
	accdma_key ks = th_alloc(w, 0, NT * 16, (void **)&s);
	accdma_key kr = th_alloc(w, 1, NT * 16, (void **)&r);
	accdma_token st[NT], rt[NT];

	for (int i = 0; i < NT; i++) {
		th_fill_u8(s + i * 16, 16, (uint8_t)(0x40 + i));
		assert_int_equal(accdma_recv(th_q(w, 1), 0, tags[NT - 1 - i], kr,
					     (uint64_t)(NT - 1 - i) * 16, 16, NULL, 0, &rt[i]),
				 0);
	}
	for (int i = 0; i < NT; i++)
		assert_int_equal(accdma_send(th_q(w, 0), 1, tags[i], ks, (uint64_t)i * 16, 16, NULL,
					     0, &st[i]),
				 0);
	th_wait_all_ok(w, rt, NT);
	th_wait_all_ok(w, st, NT);
	for (int i = 0; i < NT; i++)
		th_check_u8(r + i * 16, 16, (uint8_t)(0x40 + i), "tag slot");
	th_close(w);
}

/* 150 tags, 2 messages each. Device 1 posts all recvs for round r of tag t
 * in one batch, in an order that mixes tags; device 0 posts its sends in
 * another. Round 1's recv of tag t must hold round 1's payload. */
#define NTAGS 150
#define MSG 8

static void test_batched_numbering(void **state)
{
	(void)state;
	struct accdma_world_opts o;
	accdma_world *w;
	uint8_t *s, *r;

	th_opts(&o, 2);
	o.queue_depth = 512; /* all 300 recvs in one post */
	w = th_open_opts(&o);
	accdma_key ks = th_alloc(w, 0, 2 * NTAGS * MSG, (void **)&s);
	accdma_key kr = th_alloc(w, 1, 2 * NTAGS * MSG, (void **)&r);
	struct accdma_op sends[2 * NTAGS], recvs[2 * NTAGS];
	accdma_token st[2 * NTAGS], rt[2 * NTAGS];

	for (int i = 0; i < 2 * NTAGS; i++) {
		int round = i / NTAGS, tag = i % NTAGS;
		/* sends: tag order; recvs: reversed tags, each tag's two rounds in order */
		int rtag = NTAGS - 1 - tag;
		uint64_t off = ((uint64_t)round * NTAGS + (uint64_t)rtag) * MSG;

		th_fill_u8(s + ((size_t)round * NTAGS + (size_t)tag) * MSG, MSG,
			   (uint8_t)(tag + 100 * round));
		sends[i] = (struct accdma_op){ .kind = ACCDMA_OP_SEND, .peer = 1, .tag = (uint64_t)tag,
					       .key = ks,
					       .offset = ((uint64_t)round * NTAGS + (uint64_t)tag) * MSG,
					       .length = MSG };
		recvs[i] = (struct accdma_op){ .kind = ACCDMA_OP_RECV, .peer = 0, .tag = (uint64_t)rtag,
					       .key = kr, .offset = off, .length = MSG };
	}
	assert_int_equal(accdma_post(th_q(w, 1), recvs, 2 * NTAGS, rt), 2 * NTAGS);
	for (int b = 0; b < 2 * NTAGS; b += 60) /* batches that cut across rounds */
		assert_int_equal(accdma_post(th_q(w, 0), &sends[b], 60, &st[b]), 60);
	th_wait_all_ok(w, rt, 2 * NTAGS);
	th_wait_all_ok(w, st, 2 * NTAGS);
	for (int round = 0; round < 2; round++)
		for (int tag = 0; tag < NTAGS; tag++)
			th_check_u8(r + ((size_t)round * NTAGS + (size_t)tag) * MSG, MSG,
				    (uint8_t)(tag + 100 * round), "round's payload for its tag");
	th_close(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_tags_opposite_order),
		cmocka_unit_test(test_fifo_sends_first),
		cmocka_unit_test(test_fifo_recvs_first),
		cmocka_unit_test(test_fifo_interleaved),
		cmocka_unit_test(test_skip_connection),
		cmocka_unit_test(test_recv_long_before_send),
		cmocka_unit_test(test_same_tag_two_sources),
		cmocka_unit_test(test_self_send),
		cmocka_unit_test(test_tag_values),
		cmocka_unit_test(test_batched_numbering),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
