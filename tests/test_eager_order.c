/* SPDX-License-Identifier: MIT */
/*
 * test_eager_order.c - eager and rendezvous sends in FIFO order, and truncation.
 *
 *  - tags share a pair's ring: a recv on tag B takes B's messages from behind
 *    A's; with the ring full of tag A a small tag-B send waits for its recv;
 *  - issue order is not post order: a send or recv held back by a dependency
 *    keeps its FIFO position while the next one goes eagerly;
 *  - self-send, and two sources into one device on one tag;
 *  - 8-byte and 4096-byte sends alternating on one tag (sends first, recvs
 *    first, half and half);
 *  - truncation: a 32-byte eager send into a 16-byte recv (TRUNCATED,
 *    untouched); a parked small recv meeting a rendezvous send.
 */
#include "eager_th.h"

/* ---- ordering: tags share a pair's ring; issue order is not post order ---- */

/* Wait for an op that must complete now (bounded: a hang is a failure, fast). */
static void must_complete_(accdma_world *w, accdma_token t, enum accdma_status want,
			   const char *what, const char *file, int line)
{
	th_assert_st_(th_wait_within_(w, t, EAGER_HANG_MS, what, file, line), want, file, line);
}
#define must_complete(w, t, what) must_complete_((w), (t), ACCDMA_OK, (what), __FILE__, __LINE__)

static void run_tags_share_ring(const struct cfg *c)
{
	struct pr p;
	static accdma_token s[POS + 4], r[POS + 4];
	int32_t *src32, *dst32;

	CTX("tags share the ring engines=%d queues=%d", c->engines, c->queues);
	pr_open(&p, c->engines, c->queues, ACCDMA_EAGER_MAX_DEFAULT);
	src32 = (int32_t *)(void *)p.src;
	dst32 = (int32_t *)(void *)p.dst;

	/* A0 B0 A1 B1 A2 in the ring; the B recvs, posted first, take B's */
	for (int k = 0; k < 5; k++)
		s[k] = pr_send(&p, k % 2 ? 101 : 100, (uint64_t)k * 64, 8, 200u + (uint32_t)k);
	for (int k = 0; k < 5; k++)
		eager_done(p.w, s[k]);
	r[0] = pr_recv(&p, 101, 0, 64);
	r[1] = pr_recv(&p, 101, 64, 64);
	must_complete(p.w, r[0], "recv of the 1st tag-B message, behind a tag-A one");
	must_complete(p.w, r[1], "recv of the 2nd tag-B message");
	check_landed(p.dst, 0, 64, 8, 201);
	check_landed(p.dst, 64, 64, 8, 203);
	for (int k = 0; k < 3; k++)
		r[2 + k] = pr_recv(&p, 100, (uint64_t)(2 + k) * 64, 64);
	for (int k = 0; k < 3; k++)
		th_wait_ok(p.w, r[2 + k]);
	for (int k = 0; k < 3; k++)
		check_landed(p.dst, (uint64_t)(2 + k) * 64, 64, 8, 200u + 2u * (uint32_t)k);

	/* the ring full of tag A: a small tag-B send waits for its recv, which
	 * gets it past the POS tag-A messages */
	th_fill_u8(p.dst, DST_SIZE, GUARD);
	for (int k = 0; k < POS; k++)
		src32[k] = 3000 + k;
	fill_sends(p.w, &p.qs, 1, 100, p.ks, 0, POS, s);
	src32[POS] = 4444;
	assert_int_equal(accdma_send(p.qs, 1, 101, p.ks, POS * 4, 4, NULL, 0, &s[POS]), 0);
	still_pending(p.w, 0, p.qsi, s[POS]);
	assert_int_equal(accdma_recv(p.qr, 0, 101, p.kd, POS * 8, 8, NULL, 0, &r[POS]), 0);
	must_complete(p.w, r[POS], "tag-B recv while the ring is full of tag A");
	th_wait_ok(p.w, s[POS]);
	assert_int_equal(dst32[2 * POS], 4444);
	assert_int_equal(dst32[2 * POS + 1], GUARD_I32);
	recv_all(p.w, p.qr, 100, p.kd, 0, POS, r);
	ovf_check_base(dst32, 0, POS, 3000);

	/* holes: A and B interleaved filling the ring, the B's consumed first */
	th_fill_u8(p.dst, DST_SIZE, GUARD);
	for (int at = 0; at < POS; at += RING) {
		for (int k = at; k < at + RING; k++) {
			src32[k] = 5000 + k;
			assert_int_equal(accdma_send(p.qs, 1, k % 2 ? 101 : 100, p.ks, (uint64_t)k * 4, 4,
						     NULL, 0, &s[k]),
					 0);
		}
		for (int k = at; k < at + RING; k++)
			eager_done(p.w, s[k]);
	}
	for (int at = 1; at < POS; at += 2 * CHUNK) {
		for (int k = at; k < at + 2 * CHUNK; k += 2)
			assert_int_equal(accdma_recv(p.qr, 0, 101, p.kd, (uint64_t)k * 8, 8, NULL, 0, &r[k]),
					 0);
		for (int k = at; k < at + 2 * CHUNK; k += 2)
			th_wait_ok(p.w, r[k]);
	}
	/* c0: the oldest message (A0) is still unasked-for, and the ring is
	 * full but for the holes: holes do not count as room (fw_stub/eager.c
	 * counts the positions past the oldest message not yet asked for), so
	 * c0 waits for its recv */
	src32[POS + 1] = 6000;
	assert_int_equal(accdma_send(p.qs, 1, 102, p.ks, (uint64_t)(POS + 1) * 4, 4, NULL, 0,
				     &s[0]),
			 0);
	th_kick_q(p.w, 0, p.qsi, 1);
	still_pending(p.w, 0, p.qsi, s[0]);
	/* A0 asked for: the oldest message and the consumed B0 behind it are
	 * both free now, so two more small sends fit */
	assert_int_equal(accdma_recv(p.qr, 0, 100, p.kd, 0, 8, NULL, 0, &r[0]), 0);
	th_wait_ok(p.w, r[0]);
	for (int j = 1; j < 3; j++) {
		src32[POS + 1 + j] = 6000 + j;
		assert_int_equal(accdma_send(p.qs, 1, 102, p.ks, (uint64_t)(POS + 1 + j) * 4, 4,
					     NULL, 0, &s[j]),
				 0);
	}
	for (int j = 1; j < 3; j++)
		must_complete(p.w, s[j], "a small send after the oldest message and the consumed "
					 "one behind it were freed");
	for (int j = 0; j < 3; j++)
		assert_int_equal(accdma_recv(p.qr, 0, 102, p.kd, (uint64_t)(POS + 1 + j) * 8, 8,
					     NULL, 0, &r[POS + 1 + j]),
				 0);
	for (int j = 0; j < 3; j++)
		th_wait_ok(p.w, r[POS + 1 + j]);
	th_wait_ok(p.w, s[0]);
	for (int at = 2; at < POS; at += 2 * CHUNK) {
		int end = at + 2 * CHUNK < POS ? at + 2 * CHUNK : POS;

		for (int k = at; k < end; k += 2)
			assert_int_equal(accdma_recv(p.qr, 0, 100, p.kd, (uint64_t)k * 8, 8, NULL, 0, &r[k]),
					 0);
		for (int k = at; k < end; k += 2)
			th_wait_ok(p.w, r[k]);
	}
	ovf_check_base(dst32, 0, POS, 5000);
	th_check_u8(p.dst + POS * 8, 8, GUARD, "between the slots");
	ovf_check_base(dst32, POS + 1, POS + 4, 6000 - (POS + 1));

	/* everything asked for: the whole ring is room again */
	th_fill_u8(p.dst, DST_SIZE, GUARD);
	for (int k = 0; k < POS; k++)
		src32[k] = 7000 + k;
	fill_sends(p.w, &p.qs, 1, 103, p.ks, 0, POS, s);
	recv_all(p.w, p.qr, 103, p.kd, 0, POS, r);
	ovf_check_base(dst32, 0, POS, 7000);
	th_close(p.w);
	ctx[0] = 0;
}

static void test_tags_share_ring(void **state)
{
	run_tags_share_ring(*state);
}

/* A send held back by a dependency keeps its FIFO position: the next send,
 * issued first, goes eagerly into the ring, yet lands in the second recv.
 * The same for recvs: a recv behind a dependency keeps the first message. */
static void run_dep_order(const struct cfg *c)
{
	struct pr p;
	accdma_key g0k, g1k;
	accdma_token gate, open, s1, s2, r1, r2;

	CTX("dependency order engines=%d queues=%d", c->engines, c->queues);
	pr_open(&p, c->engines, c->queues, ACCDMA_EAGER_MAX_DEFAULT);
	g0k = th_alloc(p.w, 0, 64, NULL);
	g1k = th_alloc(p.w, 1, 64, NULL);

	/* sends: s1 waits for a gate (a recv on device 0), s2 does not */
	assert_int_equal(accdma_recv(p.qs, 1, 99, g0k, 0, 64, NULL, 0, &gate), 0);
	th_fill_pattern(p.src, 8, 301);
	assert_int_equal(accdma_send(p.qs, 1, 14, p.ks, 0, 8, &gate, 1, &s1), 0);
	s2 = pr_send(&p, 14, 64, 8, 302);
	eager_done(p.w, s2);
	still_pending(p.w, 0, p.qsi, s1);
	r1 = pr_recv(&p, 14, 0, 64);
	r2 = pr_recv(&p, 14, 64, 64);
	must_complete(p.w, r2, "the 2nd recv, whose send is in the ring");
	check_landed(p.dst, 64, 64, 8, 302);
	still_pending(p.w, 1, p.qri, r1);
	th_check_u8(p.dst, 64, GUARD, "the 1st recv's range while its send waits for a dep");
	assert_int_equal(accdma_send(th_qi(p.w, 1, p.qri), 0, 99, g1k, 0, 8, NULL, 0, &open), 0);
	th_wait_ok(p.w, open);
	th_wait_ok(p.w, gate);
	th_wait_ok(p.w, s1);
	th_wait_ok(p.w, r1);
	check_landed(p.dst, 0, 64, 8, 301);

	/* recvs: r1 waits for a gate (a recv on device 1), r2 does not */
	th_fill_u8(p.dst, DST_SIZE, GUARD);
	assert_int_equal(accdma_recv(p.qr, 0, 98, g1k, 0, 64, NULL, 0, &gate), 0);
	assert_int_equal(accdma_recv(p.qr, 0, 15, p.kd, 0, 64, &gate, 1, &r1), 0);
	r2 = pr_recv(&p, 15, 64, 64);
	s1 = pr_send(&p, 15, 0, 8, 311);
	s2 = pr_send(&p, 15, 64, 8, 312);
	eager_done(p.w, s1);
	eager_done(p.w, s2);
	must_complete(p.w, r2, "the 2nd recv, with the 1st held by a dep");
	check_landed(p.dst, 64, 64, 8, 312);
	still_pending(p.w, 1, p.qri, r1);
	th_check_u8(p.dst, 64, GUARD, "the 1st recv's range while it waits for a dep");
	assert_int_equal(accdma_send(p.qs, 1, 98, g0k, 0, 8, NULL, 0, &open), 0);
	th_wait_ok(p.w, open);
	th_wait_ok(p.w, gate);
	th_wait_ok(p.w, r1);
	check_landed(p.dst, 0, 64, 8, 311);
	th_close(p.w);
	ctx[0] = 0;
}

static void test_dep_order(void **state)
{
	run_dep_order(*state);
}

/* A device sending to itself, and two sources into one device on one tag. */
static void test_self_and_two_sources(void **state)
{
	(void)state;
	for (int i = 0; i < 3; i++) {
		accdma_world *w = open_w(3, cfgs[i].engines, 1, ACCDMA_EAGER_MAX_DEFAULT, 0, 1u << 20);
		uint8_t *b0, *b1, *b2;
		accdma_key k0 = th_alloc(w, 0, 64, (void **)&b0);
		accdma_key k1 = th_alloc(w, 1, 256, (void **)&b1);
		accdma_key k2 = th_alloc(w, 2, 64, (void **)&b2);
		accdma_token s0, s1, s2, ra, rb, rc;

		CTX("self and two sources engines=%d", cfgs[i].engines);
		th_fill_u8(b1, 256, GUARD);
		th_fill_pattern(b0, 16, 400);
		th_fill_pattern(b1 + 192, 16, 401);
		th_fill_pattern(b2, 16, 402);
		assert_int_equal(accdma_send(th_q(w, 1), 1, 5, k1, 192, 16, NULL, 0, &s1), 0);
		eager_done(w, s1);
		assert_int_equal(accdma_send(th_q(w, 0), 1, 5, k0, 0, 16, NULL, 0, &s0), 0);
		assert_int_equal(accdma_send(th_q(w, 2), 1, 5, k2, 0, 16, NULL, 0, &s2), 0);
		eager_done(w, s0);
		eager_done(w, s2);
		/* from 2 first, then from itself, then from 0 */
		assert_int_equal(accdma_recv(th_q(w, 1), 2, 5, k1, 0, 64, NULL, 0, &ra), 0);
		assert_int_equal(accdma_recv(th_q(w, 1), 1, 5, k1, 64, 64, NULL, 0, &rb), 0);
		assert_int_equal(accdma_recv(th_q(w, 1), 0, 5, k1, 128, 64, NULL, 0, &rc), 0);
		th_wait_ok(w, rc);
		th_wait_ok(w, rb);
		th_wait_ok(w, ra);
		check_landed(b1, 0, 64, 16, 402);
		check_landed(b1, 64, 64, 16, 401);
		check_landed(b1, 128, 64, 16, 400);
		th_close(w);
	}
	ctx[0] = 0;
}

/* ---- 6. mixed sizes on one tag ---------------------------------------------- */

enum mix_mode { MIX_SENDS_FIRST, MIX_RECVS_FIRST, MIX_HALF };

#define MIXK 24
#define BIGLEN 4096
#define MIXSLOT (BIGLEN + 64)

static uint64_t mix_len(int k)
{
	return k % 2 ? BIGLEN : 8;
}

static void run_mixed(const struct cfg *c, enum mix_mode mode)
{
	static const char *const names[] = { "sends first", "recvs first", "half and half" };
	accdma_world *w;
	uint8_t *src, *dst;
	accdma_key ks, kd;
	accdma_token s[MIXK], r[MIXK];
	int nq = c->queues;

	CTX("mixed %s engines=%d queues=%d", names[mode], c->engines, c->queues);
	w = open_w(2, c->engines, nq, ACCDMA_EAGER_MAX_DEFAULT, 0, 1u << 20);
	ks = th_alloc(w, 0, MIXK * (uint64_t)BIGLEN, (void **)&src);
	kd = th_alloc(w, 1, MIXK * (uint64_t)MIXSLOT, (void **)&dst);
	th_fill_u8(dst, MIXK * (size_t)MIXSLOT, GUARD);
	for (int k = 0; k < MIXK; k++)
		th_fill_pattern(src + (size_t)k * BIGLEN, mix_len(k), 500u + (uint32_t)k);

#define POST_SEND(k)                                                                             \
	assert_int_equal(accdma_send(th_qi(w, 0, (k) % nq), 1, 6, ks, (uint64_t)(k) * BIGLEN,     \
				     mix_len(k), NULL, 0, &s[k]),                                 \
			 0)
	/* recv k lands in slot MIXK-1-k; every recv is big enough for either size */
#define POST_RECV(k)                                                                             \
	assert_int_equal(accdma_recv(th_qi(w, 1, ((k) + 1) % nq), 0, 6, kd,                      \
				     (uint64_t)(MIXK - 1 - (k)) * MIXSLOT, MIXSLOT, NULL, 0,      \
				     &r[k]),                                                      \
			 0)

	switch (mode) {
	case MIX_SENDS_FIRST:
		for (int k = 0; k < MIXK; k++)
			POST_SEND(k);
		/* the small ones complete with no recv, past pending big ones */
		for (int k = 0; k < MIXK; k += 2)
			eager_done(w, s[k]);
		for (int q = 0; q < nq; q++)
			th_kick_q(w, 0, q, 1);
		for (int k = 1; k < MIXK; k += 2)
			th_pending(w, s[k]);
		th_check_u8(dst, MIXK * (size_t)MIXSLOT, GUARD, "receiver memory before recvs");
		for (int k = 0; k < MIXK; k++)
			POST_RECV(k);
		break;
	case MIX_RECVS_FIRST:
		for (int k = 0; k < MIXK; k++)
			POST_RECV(k);
		for (int q = 0; q < nq; q++)
			th_kick_q(w, 1, q, 1);
		th_pending(w, r[0]);
		for (int k = 0; k < MIXK; k++)
			POST_SEND(k);
		break;
	case MIX_HALF:
		/* sends 0..11, then all recvs, then sends 12..23 */
		for (int k = 0; k < MIXK / 2; k++)
			POST_SEND(k);
		for (int k = 0; k < MIXK; k++)
			POST_RECV(k);
		for (int q = 0; q < nq; q++)
			th_kick_q(w, 1, q, 1);
		th_pending(w, r[MIXK / 2]);
		for (int k = MIXK / 2; k < MIXK; k++)
			POST_SEND(k);
		break;
	}
#undef POST_SEND
#undef POST_RECV
	for (int k = MIXK - 1; k >= 0; k--)
		th_wait_ok(w, r[k]);
	for (int k = 0; k < MIXK; k++)
		if (mode != MIX_SENDS_FIRST || k % 2)
			th_wait_ok(w, s[k]);
	for (int k = 0; k < MIXK; k++)
		check_landed(dst, (uint64_t)(MIXK - 1 - k) * MIXSLOT, MIXSLOT, mix_len(k),
			     500u + (uint32_t)k);
	for (int k = 0; k < MIXK; k++)
		th_check_pattern(src + (size_t)k * BIGLEN, mix_len(k), 500u + (uint32_t)k,
				 "source unchanged");
	th_close(w);
	ctx[0] = 0;
}

static void test_mixed_sizes(void **state)
{
	run_mixed(*state, MIX_SENDS_FIRST);
	run_mixed(*state, MIX_RECVS_FIRST);
	run_mixed(*state, MIX_HALF);
}

/* ---- 7. truncation ------------------------------------------------------------ */

static void run_truncation(const struct cfg *c, int recv_first)
{
	struct pr p;
	accdma_token s, r;

	CTX("truncation %s engines=%d", recv_first ? "recv first" : "send first", c->engines);
	pr_open(&p, c->engines, c->queues, ACCDMA_EAGER_MAX_DEFAULT);
	if (recv_first) {
		r = pr_recv(&p, 5, 16, 16);
		still_pending(p.w, 1, p.qri, r);
		s = pr_send(&p, 5, 0, 32, 40);
		th_wait_st(p.w, r, ACCDMA_ST_TRUNCATED);
		/* the recv was there first: the send may have been matched
		 * directly (TRUNCATED, as before) or gone eagerly (OK) */
		wait_either(p.w, s, ACCDMA_OK, ACCDMA_ST_TRUNCATED);
	} else {
		s = pr_send(&p, 5, 0, 32, 40);
		eager_done(p.w, s); /* OK: it completed before any recv existed */
		r = pr_recv(&p, 5, 16, 16);
		th_wait_st(p.w, r, ACCDMA_ST_TRUNCATED);
	}
	th_check_u8(p.dst, DST_SIZE, GUARD, "memory around and in a truncated recv");
	th_check_pattern(p.src, 32, 40, "source unchanged");
	/* the next pair on the tag, both orders */
	s = pr_send(&p, 5, 64, 16, 41);
	eager_done(p.w, s);
	r = pr_recv(&p, 5, 16, 16);
	th_wait_ok(p.w, r);
	check_landed(p.dst, 16, 16, 16, 41);
	th_check_u8(p.dst, 16, GUARD, "before the recv");
	th_check_u8(p.dst + 32, 64, GUARD, "after the recv");
	r = pr_recv(&p, 5, 128, 40);
	s = pr_send(&p, 5, 128, 40, 42);
	th_wait_ok(p.w, r);
	th_wait_ok(p.w, s);
	check_landed(p.dst, 128, 40, 40, 42);
	th_close(p.w);
	ctx[0] = 0;
}

static void test_truncation(void **state)
{
	run_truncation(*state, 0);
	run_truncation(*state, 1);
}

/* A parked recv (small, before its message) meets rendezvous sends: a 4 KiB
 * send into a 16-byte recv, and 8-byte sends that find the ring full. */
static void run_parked_rendezvous(const struct cfg *c, int poll)
{
	enum { FILL = RING }; /* exactly a full ring of one-slot messages */
	struct pr p;
	accdma_token s, r, fill[FILL], rs[3], ss[3];
	int32_t *src32, *dst32;

	CTX("parked recv meets rendezvous engines=%d queues=%d poll=%d", c->engines, c->queues, poll);
	if (!poll) /* engine threads only: only the waiting send's kick wakes the recv's engine */
		setenv("ACCDMA_POLL", "0", 1);
	pr_open(&p, c->engines, c->queues, ACCDMA_EAGER_MAX_DEFAULT);
	unsetenv("ACCDMA_POLL");
	/* too large for the recv: both end TRUNCATED, nothing lands */
	r = pr_recv(&p, 21, 16, 16);
	still_pending(p.w, 1, p.qri, r); /* its engine may be asleep by now */
	s = pr_send(&p, 21, 0, 4096, 70);
	th_wait_st(p.w, s, ACCDMA_ST_TRUNCATED);
	th_wait_st(p.w, r, ACCDMA_ST_TRUNCATED);
	th_check_u8(p.dst, DST_SIZE, GUARD, "memory around and in the truncated recv");
	/* fill the ring with tag 22 (nobody asks yet), then recvs on tag 23
	 * first: their sends find no room and go by rendezvous */
	src32 = (int32_t *)p.src;
	dst32 = (int32_t *)p.dst;
	for (int k = 0; k < FILL; k++) {
		src32[k] = 5000 + k;
		assert_int_equal(accdma_send(p.qs, 1, 22, p.ks, (uint64_t)k * 4, 4, NULL, 0, &fill[k]), 0);
	}
	for (int k = 0; k < FILL; k++)
		eager_done(p.w, fill[k]);
	for (int k = 0; k < 3; k++)
		rs[k] = pr_recv(&p, 23, 4096 + (uint64_t)k * 64, 64);
	still_pending(p.w, 1, p.qri, rs[0]);
	for (int k = 0; k < 3; k++)
		ss[k] = pr_send(&p, 23, 2048 + (uint64_t)k * 64, 8 + (uint64_t)k, 80u + (uint32_t)k);
	for (int k = 0; k < 3; k++) {
		th_wait_ok(p.w, rs[k]);
		th_wait_ok(p.w, ss[k]);
		check_landed(p.dst, 4096 + (uint64_t)k * 64, 64, 8 + (uint64_t)k, 80u + (uint32_t)k);
	}
	/* the ring's messages are all still there, in order */
	for (int k = 0; k < FILL; k++)
		assert_int_equal(accdma_recv(p.qr, 0, 22, p.kd, 8192 + (uint64_t)k * 4, 4, NULL, 0, &fill[k]), 0);
	for (int k = 0; k < FILL; k++)
		th_wait_ok(p.w, fill[k]);
	for (int k = 0; k < FILL; k++)
		assert_int_equal(dst32[2048 + k], 5000 + k);
	th_close(p.w);
	ctx[0] = 0;
}

static void test_parked_rendezvous(void **state)
{
	run_parked_rendezvous(*state, 1);
	run_parked_rendezvous(*state, 0);
}

int main(int argc, char **argv)
{
	struct th_cases t = { 0 };

	(void)argc;
	(void)argv;
	seed = th_seed();
	PER_CFG(&t, test_tags_share_ring, NCFG);
	PER_CFG(&t, test_dep_order, NCFG);
	CASE(&t, test_self_and_two_sources, NULL, "test_self_and_two_sources");
	PER_CFG(&t, test_mixed_sizes, NCFG);
	PER_CFG(&t, test_truncation, NCFG);
	PER_CFG(&t, test_parked_rendezvous, NCFG);
	return th_run_cases("test_eager_order", &t, NULL, NULL);
}
