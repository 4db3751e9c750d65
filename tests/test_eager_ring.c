/* SPDX-License-Identifier: MIT */
/*
 * test_eager_ring.c - white-box: the inline rings' geometry and contents.
 *
 *  - ring overflow, queues of 256: a full ring's worth of small sends complete
 *    with no recv posted, the next 200 after their recvs, in order; a partial
 *    drain with a new eager send behind pending rendezvous sends;
 *  - stale credit: after one message taken (less than a far receiver's
 *    credit step), a full ring's worth of new sends all go eagerly;
 *  - messages of several positions: 1 KiB messages fill the ring at 15, sizes
 *    of 1 to 4 positions wrap at the ring's end whole; in a 17-device world
 *    eager_max is 488 bytes and device info says so;
 *  - ring depth, in bytes (also with -DQ_EAGER_SLOT_BYTES=64): at least 16 KiB,
 *    a cache line per op of a queue, at most 16384 positions and 16 MiB of
 *    rings a world, 4 KiB above 16 devices; a queue's window of 40-byte sends
 *    fills the ring exactly;
 *  - stale payload: a payload that forges the next lap's head is not taken for
 *    a message; a forged head longer than eager_max fails its recv PEER_ERROR.
 */
#include "eager_th.h"

/* ---- 5. ring overflow ------------------------------------------------------ */

#define EXTRA 200 /* sends posted once the ring is full: they wait for their recvs */
#define OVF (POS + EXTRA)

/* Post recvs k in [from, to) for payloads k (int32 k + 1000 each), recv
 * range 8 bytes, so the 4 bytes past each payload must stay guard. */
static void ovf_recv(accdma_queue *q, accdma_key kd, int from, int to,
		     accdma_token *r)
{
	for (int k = from; k < to; k++)
		assert_int_equal(accdma_recv(q, 0, 11, kd, (uint64_t)k * 8, 8, NULL, 0, &r[k]), 0);
}

static void ovf_check(const int32_t *d, int from, int to)
{
	ovf_check_base(d, from, to, 1000);
}

static void run_overflow(const struct cfg *c)
{
	accdma_world *w;
	int32_t *src, *dst;
	accdma_key ks, kd;
	accdma_queue *qs[2], *qr;
	struct accdma_device_info info;
	static accdma_token s[OVF + 1], r[OVF + 1];

	CTX("overflow engines=%d queues=%d", c->engines, c->queues);
	w = open_w(2, c->engines, c->queues, ACCDMA_EAGER_MAX_DEFAULT, RING, 1u << 20);
	assert_int_equal(accdma_device_info(w, 1, &info), 0);
	assert_int_equal(info.eager_slots, POS);
	ks = th_alloc(w, 0, (OVF + 1) * 4, (void **)&src);
	kd = th_alloc(w, 1, (OVF + 1) * 8, (void **)&dst);
	th_fill_u8(dst, (OVF + 1) * 8, GUARD);
	for (int i = 0; i < c->queues; i++)
		qs[i] = th_qi(w, 0, i);
	qr = th_qi(w, 1, c->queues - 1);
	for (int k = 0; k < OVF + 1; k++)
		src[k] = k + 1000;
	/* sends alternate over the queues: FIFO is by posting order. The first
	 * POS fill the ring exactly */
	fill_sends(w, qs, c->queues, 11, ks, 0, POS, s);
	/* the ring is full: every later send waits for its recv (rendezvous) */
	for (int k = POS; k < OVF; k++)
		assert_int_equal(accdma_send(qs[k % c->queues], 1, 11, ks, (uint64_t)k * 4, 4, NULL,
					     0, &s[k]),
				 0);
	for (int i = 0; i < c->queues; i++)
		th_kick_q(w, 0, i, 2);
	th_kick(w, 1, 1);
	for (int k = POS; k < OVF; k++)
		th_pending(w, s[k]);
	th_check_u8(dst, (OVF + 1) * 8, GUARD, "receiver memory before any recv");

	/* drain 10: they come from the ring; the rendezvous sends still wait
	 * (over a link, up to 10 of them may take the room instead if their
	 * question about it was answered after the drain: not the last one) */
	ovf_recv(qr, kd, 0, 10, r);
	for (int k = 0; k < 10; k++)
		th_wait_ok(w, r[k]);
	ovf_check(dst, 0, 10);
	th_kick(w, 0, 1);
	th_pending(w, s[OVF - 1]);
	/* a new small send behind EXTRA pending rendezvous sends: whether it goes
	 * eagerly or not, it is message OVF and lands in recv OVF */
	assert_int_equal(accdma_send(qs[0], 1, 11, ks, (uint64_t)OVF * 4, 4, NULL, 0, &s[OVF]), 0);
	/* the other recvs, a chunk at a time (the recv queue holds RING ops),
	 * each chunk waited newest first */
	for (int from = 10; from < OVF + 1; from += CHUNK) {
		int to = from + CHUNK < OVF + 1 ? from + CHUNK : OVF + 1;

		ovf_recv(qr, kd, from, to, r);
		for (int k = to - 1; k >= from; k--)
			th_wait_ok(w, r[k]);
	}
	for (int k = POS; k < OVF + 1; k++)
		th_wait_ok(w, s[k]);
	ovf_check(dst, 0, OVF + 1);

	/* every position of the ring was given back: POS more go eagerly again */
	for (int k = 0; k < POS; k++)
		src[k] = k + 1000;
	fill_sends(w, qs, 1, 11, ks, 0, POS, s);
	th_fill_u8(dst, (OVF + 1) * 8, GUARD);
	recv_all(w, qr, 11, kd, 0, POS, r);
	ovf_check(dst, 0, POS);
	th_check_u8(dst + 2 * POS, (OVF + 1 - POS) * 8, GUARD, "past the last recv");
	th_close(w);
	ctx[0] = 0;
}

static void test_ring_overflow(void **state)
{
	run_overflow(*state);
}

/* ---- 5a. a ring drained by less than a credit's worth ------------------ */

/* A far receiver credits its ring back a quarter at a time (or on reverse
 * traffic), so after one message taken the sender's view is one position
 * short. A full ring's worth of new sends must still all go eagerly: the
 * last one, short of credit, learns the receiver's room instead of waiting
 * for its recv. */
static void run_stale_credit(const struct cfg *c)
{
	static accdma_token s[POS + 1], r[POS + 1];
	accdma_world *w;
	int32_t *src, *dst;
	accdma_key ks, kd;
	accdma_queue *qs[2], *qr;

	CTX("stale credit engines=%d queues=%d", c->engines, c->queues);
	w = open_w(2, c->engines, c->queues, ACCDMA_EAGER_MAX_DEFAULT, RING, 1u << 20);
	ks = th_alloc(w, 0, (POS + 1) * 4, (void **)&src);
	kd = th_alloc(w, 1, (POS + 1) * 8, (void **)&dst);
	for (int i = 0; i < c->queues; i++)
		qs[i] = th_qi(w, 0, i);
	qr = th_qi(w, 1, c->queues - 1);
	for (int round = 0; round < 2; round++) {
		/* one message, taken: the receiver has a full ring free again */
		th_fill_u8(dst, (POS + 1) * 8, GUARD);
		src[POS] = 7 + round;
		assert_int_equal(accdma_send(qs[0], 1, 11, ks, (uint64_t)POS * 4, 4, NULL, 0, &s[POS]), 0);
		eager_done(w, s[POS]);
		assert_int_equal(accdma_recv(qr, 0, 11, kd, (uint64_t)POS * 8, 8, NULL, 0, &r[POS]), 0);
		th_wait_ok(w, r[POS]);
		assert_int_equal(dst[2 * POS], 7 + round);
		/* a full ring's worth, every one complete before any recv */
		for (int k = 0; k < POS; k++)
			src[k] = k + 2000 * (round + 1);
		fill_sends(w, qs, c->queues, 11, ks, 0, POS, s);
		th_check_u8(dst, POS * 8, GUARD, "receiver memory before any recv");
		recv_all(w, qr, 11, kd, 0, POS, r);
		ovf_check_base(dst, 0, POS, 2000 * (round + 1));
	}
	th_close(w);
	ctx[0] = 0;
}

static void test_stale_credit(void **state)
{
	run_stale_credit(*state);
}

/* ---- 5b. messages of several slots --------------------------------------- */

/* Positions a message of @len > Q_EAGER_HEAD_BYTES bytes takes (q_eager_span(), as a constant). */
#define SPAN(len) (1 + ((len) - Q_EAGER_HEAD_BYTES + Q_EAGER_CONT_BYTES - 1) / Q_EAGER_CONT_BYTES)

/* 1 KiB messages take SPAN(1024) positions (33): FIT (15) fill the ring of
 * POS (512), the next one waits. */
static void run_multi_slot_fill(const struct cfg *c)
{
	enum { BIG = ACCDMA_EAGER_MAX_DEFAULT, FIT = POS / SPAN(BIG), RSLOT = BIG + 64 };
	accdma_token s[FIT + 1], r[FIT + 1];
	accdma_world *w;
	uint8_t *src, *dst;
	accdma_key ks, kd;
	accdma_queue *qs, *qr;

	CTX("multi-slot fill engines=%d queues=%d", c->engines, c->queues);
	w = open_w(2, c->engines, c->queues, ACCDMA_EAGER_MAX_DEFAULT, RING, 1u << 20);
	ks = th_alloc(w, 0, (FIT + 1) * BIG, (void **)&src);
	kd = th_alloc(w, 1, (FIT + 1) * RSLOT, (void **)&dst);
	th_fill_u8(dst, (FIT + 1) * RSLOT, GUARD);
	qs = th_qi(w, 0, 0);
	qr = th_qi(w, 1, c->queues - 1);
	for (int k = 0; k <= FIT; k++) {
		th_fill_pattern(src + (size_t)k * BIG, BIG, 500u + (uint32_t)k);
		assert_int_equal(accdma_send(qs, 1, 21, ks, (uint64_t)k * BIG, BIG, NULL, 0, &s[k]), 0);
	}
	for (int k = 0; k < FIT; k++)
		eager_done(w, s[k]);
	still_pending(w, 0, 0, s[FIT]); /* 15 x 33 = 495 positions taken: 33 more do not fit */
	th_check_u8(dst, (FIT + 1) * RSLOT, GUARD, "receiver memory before any recv");
	for (int k = 0; k <= FIT; k++)
		assert_int_equal(accdma_recv(qr, 0, 21, kd, (uint64_t)k * RSLOT, RSLOT, NULL, 0, &r[k]),
				 0);
	for (int k = FIT; k >= 0; k--)
		th_wait_ok(w, r[k]);
	th_wait_ok(w, s[FIT]);
	for (int k = 0; k <= FIT; k++)
		check_landed(dst, (uint64_t)k * RSLOT, RSLOT, BIG, 500u + (uint32_t)k);
	th_close(w);
	ctx[0] = 0;
}

/* One byte from the receiver back to the sender. Over memory it changes
 * nothing; over a link its message carries the receiver's consumed mark,
 * which a far sender otherwise learns only once a quarter of its ring is
 * free again (docs/transports.md): the sender then knows the whole ring. */
static void credit_back(struct pr *p)
{
	enum { BACK = 62, TO = SRC_SIZE - 64, FROM = DST_SIZE - 64 };
	accdma_token s, r;

	p->dst[FROM] = 0x5A;
	p->src[TO] = 0;
	assert_int_equal(accdma_recv(p->qs, 1, BACK, p->ks, TO, 1, NULL, 0, &r), 0);
	assert_int_equal(accdma_send(p->qr, 0, BACK, p->kd, FROM, 1, NULL, 0, &s), 0);
	th_wait_ok(p->w, s);
	th_wait_ok(p->w, r);
	assert_int_equal(p->src[TO], 0x5A);
}

/* Sizes of 1 to 8 positions on two tags, batch after batch, until the ring has
 * wrapped many times with messages across its end; the tag-B recvs of each
 * batch are posted first, so messages are taken out of order too. */
static void run_multi_slot_wrap(const struct cfg *c)
{
	static const uint64_t lens[] = { 8, 41, 100, 160, 220, 1, 40, 101, 221 };
	enum { NLEN = sizeof(lens) / sizeof(lens[0]), BATCH = 20, ROUNDS = 50, MSLOT = 256 };
	accdma_token s[BATCH], r[BATCH];
	struct pr p;
	uint32_t n = 0;

	CTX("multi-slot wrap engines=%d queues=%d", c->engines, c->queues);
	pr_open(&p, c->engines, c->queues, ACCDMA_EAGER_MAX_DEFAULT);
	for (int round = 0; round < ROUNDS; round++) {
		th_fill_u8(p.dst, BATCH * MSLOT, GUARD);
		for (int j = 0; j < BATCH; j++)
			s[j] = pr_send(&p, 30 + (uint64_t)(j % 2), (uint64_t)j * MSLOT,
				       lens[(n + (uint32_t)j) % NLEN], 7000u + n + (uint32_t)j);
		for (int j = 0; j < BATCH; j++)
			eager_done(p.w, s[j]); /* ~80 positions a batch: all of it fits */
		for (int j = 1; j < BATCH; j += 2)
			r[j] = pr_recv(&p, 31, (uint64_t)j * MSLOT, MSLOT);
		for (int j = 0; j < BATCH; j += 2)
			r[j] = pr_recv(&p, 30, (uint64_t)j * MSLOT, MSLOT);
		for (int j = 0; j < BATCH; j++)
			th_wait_ok(p.w, r[j]);
		credit_back(&p); /* a far sender's room is only what it has heard */
		for (int j = 0; j < BATCH; j++)
			check_landed(p.dst, (uint64_t)j * MSLOT, MSLOT, lens[(n + (uint32_t)j) % NLEN],
				     7000u + n + (uint32_t)j);
		n += BATCH;
	}
	th_close(p.w);
	ctx[0] = 0;
}

/* Above 16 devices the rings are shallow (128 positions), and a message may take an eighth (16). */
static void run_multi_slot_small_rings(void)
{
	enum { N = 17, MAX = Q_EAGER_HEAD_BYTES + (Q_EAGER_SLOTS_LARGE_WORLD / 8 - 1) * Q_EAGER_CONT_BYTES };
	struct accdma_device_info info;
	accdma_world *w;
	uint8_t *src, *dst;
	accdma_key ks, kd;
	accdma_token s1, s2, r1, r2;

	CTX("multi-slot, 17 devices");
	w = open_w(N, 0, 1, ACCDMA_EAGER_MAX_DEFAULT, 16, 64u << 10);
	assert_int_equal(accdma_device_info(w, 1, &info), 0);
	assert_int_equal(info.eager_max, MAX);
	assert_int_equal(MAX, 488);
	assert_int_equal(info.eager_slots, Q_EAGER_SLOTS_LARGE_WORLD);
	ks = th_alloc(w, 0, 2048, (void **)&src);
	kd = th_alloc(w, 1, 2048, (void **)&dst);
	th_fill_u8(dst, 2048, GUARD);
	th_fill_pattern(src, MAX, 41);
	th_fill_pattern(src + 1024, MAX + 1, 42);
	assert_int_equal(accdma_send(th_q(w, 0), 1, 5, ks, 0, MAX, NULL, 0, &s1), 0);
	eager_done(w, s1);
	assert_int_equal(accdma_send(th_q(w, 0), 1, 5, ks, 1024, MAX + 1, NULL, 0, &s2), 0);
	still_pending(w, 0, 0, s2);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 5, kd, 0, 1024, NULL, 0, &r1), 0);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 5, kd, 1024, 1024, NULL, 0, &r2), 0);
	th_wait_ok(w, r1);
	th_wait_ok(w, r2);
	th_wait_ok(w, s2);
	check_landed(dst, 0, 1024, MAX, 41);
	check_landed(dst, 1024, 1024, MAX + 1, 42);
	th_close(w);
	ctx[0] = 0;
}

static void test_multi_slot(void **state)
{
	run_multi_slot_fill(*state);
	run_multi_slot_wrap(*state);
}

static void test_multi_slot_small(void **state)
{
	(void)state;
	run_multi_slot_small_rings();
}

/* ---- 5c. ring depth follows the queue depth ------------------------------ */

/* The ring of (@n devices, queues of @depth) has @slots positions and takes @max bytes. */
static void ring_geometry(int n, uint32_t depth, uint32_t slots, uint32_t max)
{
	struct accdma_device_info info;
	accdma_world *w;

	CTX("ring geometry: %d devices, depth %u", n, depth);
	w = open_w(n, 1, 1, ACCDMA_EAGER_MAX_DEFAULT, depth, 64u << 10);
	assert_int_equal(accdma_device_info(w, n - 1, &info), 0);
	assert_int_equal(info.eager_slots, slots);
	assert_int_equal(info.eager_max, max);
	th_close(w);
}

/* A queue's worth of small sends of 40 bytes (the largest that a cache line
 * of positions holds), all posted before any recv, all complete eagerly: the
 * last one fills the ring exactly (a ring shallower than the queue would turn
 * the rest to rendezvous: they would wait for their recvs, and eager_done()
 * fail); then the recvs, posted newest-first wait, get them in FIFO order. */
static void run_window_fits_ring(const struct cfg *c)
{
	enum { DEPTH = 1024, LEN = 40, RSLOT = 64 };
	static accdma_token s[DEPTH], r[DEPTH];
	struct accdma_device_info info;
	accdma_world *w;
	uint8_t *src, *dst;
	accdma_key ks, kd;
	accdma_queue *qs, *qr;

	CTX("window fits the ring engines=%d queues=%d", c->engines, c->queues);
	assert_int_equal(q_eager_span(LEN) * DEPTH, DEPTH * Q_EAGER_SLOTS_PER_OP);
	w = open_w(2, c->engines, c->queues, ACCDMA_EAGER_MAX_DEFAULT, DEPTH, 1u << 20);
	assert_int_equal(accdma_device_info(w, 1, &info), 0);
	assert_int_equal(info.eager_slots, DEPTH * Q_EAGER_SLOTS_PER_OP);
	ks = th_alloc(w, 0, DEPTH * LEN, (void **)&src);
	kd = th_alloc(w, 1, DEPTH * RSLOT, (void **)&dst);
	th_fill_u8(dst, DEPTH * RSLOT, GUARD);
	qs = th_qi(w, 0, c->queues - 1);
	qr = th_qi(w, 1, 0);
	for (int k = 0; k < DEPTH; k++) {
		th_fill_pattern(src + (size_t)k * LEN, LEN, 9000 + (uint32_t)k);
		assert_int_equal(accdma_send(qs, 1, 12, ks, (uint64_t)k * LEN, LEN, NULL, 0, &s[k]), 0);
	}
	for (int k = 0; k < DEPTH; k++)
		eager_done(w, s[k]);
	th_check_u8(dst, DEPTH * RSLOT, GUARD, "receiver memory before any recv");
	for (int k = 0; k < DEPTH; k++)
		assert_int_equal(accdma_recv(qr, 0, 12, kd, (uint64_t)k * RSLOT, RSLOT, NULL, 0, &r[k]), 0);
	for (int k = DEPTH - 1; k >= 0; k--)
		th_wait_ok(w, r[k]);
	for (int k = 0; k < DEPTH; k++)
		check_landed(dst, (uint64_t)k * RSLOT, RSLOT, LEN, 9000 + (uint32_t)k);
	th_close(w);
	ctx[0] = 0;
}

static void test_ring_geometry(void **state)
{
	(void)state;
	/* in bytes, so that a build with other positions (-DQ_EAGER_SLOT_BYTES=64) is checked too */
	enum { S = Q_EAGER_SLOT_BYTES, LINE = 64 };

	ring_geometry(2, 2, 16384 / S, ACCDMA_EAGER_MAX_DEFAULT);    /* never below 16 KiB */
	ring_geometry(2, 256, 16384 / S, ACCDMA_EAGER_MAX_DEFAULT);  /* the default depth */
	ring_geometry(2, 1024, 1024 * LINE / S, ACCDMA_EAGER_MAX_DEFAULT); /* a line per op */
	ring_geometry(2, 65536, 16384, ACCDMA_EAGER_MAX_DEFAULT); /* the most positions a ring has */
	/* 16 devices: 256 rings of 32 KiB; of 64 KiB they would pass the 16 MiB budget */
	ring_geometry(16, 4096, 32768 / S, ACCDMA_EAGER_MAX_DEFAULT);
	/* large worlds stay shallow (4 KiB); a message takes an eighth, less the 24-byte header */
	ring_geometry(17, 4096, 4096 / S, 4096 / 8 - 24);
	ctx[0] = 0;
}

static void test_window_fits_ring(void **state)
{
	run_window_fits_ring(*state);
}

/* Raw payload of an earlier lap at the position of the next head: a message
 * whose payload, where the ring's next lap expects a head, is a whole forged
 * head (the stamp of that position, 8 bytes, the tag and sequence of the
 * next recv). The sender zeroes that stamp before the message ending there
 * can be seen (queue/queue.h, q_eager_slot), so the recv waits for its real
 * send and gets its bytes. */
static void run_stale_payload(const struct cfg *c)
{
	/* M0's payload after its head is one whole position: the forged head */
	enum { T = 60, FILL = 61, M0 = 4096, L = Q_EAGER_HEAD_BYTES + Q_EAGER_SLOT_BYTES, R = 128 };
	static accdma_token s[POS], r[POS];
	struct q_eager_slot fake = { .len = 8, .tag = T, .seq = 1 };
	accdma_token t;
	struct pr p;

	CTX("stale payload engines=%d queues=%d", c->engines, c->queues);
	pr_open(&p, c->engines, c->queues, ACCDMA_EAGER_MAX_DEFAULT);
	/* M0 (tag T, seq 0) at position 0; position 1, its payload, is the forgery */
	atomic_init(&fake.stamp, q_eager_stamp(POS + 1));
	memset(fake.data, 0xEE, sizeof(fake.data));
	th_fill_pattern(p.src + M0, L, 77);
	memcpy(p.src + M0 + Q_EAGER_HEAD_BYTES, &fake, sizeof(fake));
	assert_int_equal(q_eager_span(L), 2);
	assert_int_equal(accdma_send(p.qs, 1, T, p.ks, M0, L, NULL, 0, &s[0]), 0);
	eager_done(p.w, s[0]);
	t = pr_recv(&p, T, M0, R);
	th_wait_ok(p.w, t);
	assert_memory_equal(p.dst + M0, p.src + M0, L);
	credit_back(&p);
	/* one-position messages at 2 .. POS: the next head is expected at POS + 1 */
	fill_sends(p.w, &p.qs, 1, FILL, p.ks, 0, POS - 1, s);
	recv_all(p.w, p.qr, FILL, p.kd, 0, POS - 1, r);
	/* the recv M0's forgery names waits for its own send */
	th_fill_u8(p.dst + M0, R, GUARD);
	t = pr_recv(&p, T, M0, R);
	still_pending(p.w, 1, p.qri, t);
	th_check_u8(p.dst + M0, R, GUARD, "recv range before its send");
	s[0] = pr_send(&p, T, M0, 8, 78);
	eager_done(p.w, s[0]);
	th_wait_ok(p.w, t);
	check_landed(p.dst, M0, R, 8, 78);
	th_close(p.w);
	ctx[0] = 0;
}

/* A head longer than the world's eager_max (a corrupt or hostile peer wrote
 * it), with the arena's eager_max raised behind the engines' backs: each
 * engine checks against its own copy, taken at open, so the recv fails
 * PEER_ERROR and nothing is copied out of the ring (with the arena's value it
 * would copy LEN bytes of ring into the recv and complete OK). */
static void run_forged_length(const struct cfg *c)
{
	enum { T = 62, LEN = 4096, R = 8192 };
	struct q_eager_slot *h;
	accdma_token t;
	struct pr p;

	CTX("forged length engines=%d queues=%d", c->engines, c->queues);
	pr_open(&p, c->engines, c->queues, ACCDMA_EAGER_MAX_DEFAULT);
	p.w->a.sh->eager_max = UINT32_MAX; /* what a corrupt arena says */
	h = &q_eager_ring(&p.w->a, 1, 0)->slots[0];
	h->len = LEN;
	h->tag = T;
	h->seq = 0; /* the first message on T */
	memset(h->data, 0xEE, sizeof(h->data));
	atomic_store_explicit(&h->stamp, q_eager_stamp(0), memory_order_release);
	t = pr_recv(&p, T, 0, R);
	th_wait_st(p.w, t, ACCDMA_ST_PEER_ERROR);
	th_check_u8(p.dst, R, GUARD, "recv range of a forged message");
	p.w->a.sh->eager_max = ACCDMA_EAGER_MAX_DEFAULT;
	th_close(p.w);
	ctx[0] = 0;
}

static void test_stale_payload(void **state)
{
	run_stale_payload(*state);
	run_forged_length(*state);
}

int main(int argc, char **argv)
{
	struct th_cases t = { 0 };

	(void)argc;
	(void)argv;
	seed = th_seed();
	PER_CFG(&t, test_ring_overflow, NCFG);
	PER_CFG(&t, test_stale_credit, NCFG);
	PER_CFG(&t, test_multi_slot, NCFG);
	CASE(&t, test_multi_slot_small, NULL, "test_multi_slot_small");
	CASE(&t, test_ring_geometry, NULL, "test_ring_geometry");
	PER_CFG(&t, test_window_fits_ring, NCFG);
	PER_CFG(&t, test_stale_payload, NCFG);
	return th_run_cases("test_eager_ring", &t, NULL, NULL);
}
