/* SPDX-License-Identifier: MIT */
/*
 * test_eager.c - eager (inline) sends: opts.eager_max / ACCDMA_EAGER_MAX.
 *
 * A send of at most eager_max bytes is copied into the receiver's
 * per-(src, dst) inline ring and completes OK at once, whether or not its recv
 * is posted; larger sends, and small ones that find the ring full, wait for
 * their recv (rendezvous). Matching is unchanged: the k-th send A->B with tag
 * T lands in the k-th recv on B from A with tag T, whichever path each took.
 *
 *  - send first: a small send completes before its recv exists, its source may
 *    be reused at once, nothing lands before the recv is posted, then the recv
 *    gets the data (exactly the send's bytes; the rest of the recv range
 *    untouched); engines 0, 1, 2 x queues 1, 2;
 *  - recv first, also with the send posted late by a second thread;
 *  - a parked recv looked at again and again: with nothing landed, with
 *    another tag's message from its sender held ahead of it, then its own;
 *    two parked recvs, the later one's message first (held by the first's look);
 *  - eager_max = 0: a small send waits for its recv; eager_max = 16: 16 bytes
 *    go eagerly, 17 do not;
 *  - boundaries with the default (1024): 1-5, 7-9, 15-17, 39, 40 (one slot), 41, 100, 1023
 *    and 1024 bytes (several slots) eager, 1025 not; a zero-length send is
 *    still BAD_LENGTH (its recv PEER_ERROR);
 *  - ring overflow, queues of 256: 256 small sends complete with no recv
 *    posted and are consumed (the ring of a 2-device world is full), the
 *    next 200 complete after their recvs, every recv gets its own send in
 *    order; a partial drain with a new eager send behind pending rendezvous
 *    sends; the ring is usable again afterwards;
 *  - ring depth, in bytes: at least 16 KiB, at least a cache line per op of
 *    a queue (1024 40-byte sends posted before any recv all complete
 *    eagerly, the last filling the ring exactly, then land in FIFO order), at
 *    most 16384 positions, at most 16 MiB of rings in a world (32 KiB a ring
 *    at 16 devices with queues of 4096), 4 KiB above 16 devices; checked for
 *    a build with 64-byte positions too (-DQ_EAGER_SLOT_BYTES=64);
 *  - messages of several positions: 1 KiB messages fill the ring at 15 (33
 *    positions each), the 16th waits for its recv; sizes of 1 to 4 positions
 *    cycling through the ring many times, so messages wrap at its end, each
 *    landing whole; in a 17-device world (128-position rings) eager_max is
 *    488 bytes and device info says so;
 *  - stale payload: a message's payload forges the head the ring's next lap
 *    expects at its position; the recv it names still waits for its send;
 *    a forged head longer than eager_max, with the arena's eager_max raised
 *    behind the engines' backs: its recv fails PEER_ERROR, nothing copied;
 *  - tags share a pair's ring: a recv on tag B takes B's messages from
 *    behind A's; with the ring full of tag A a small tag-B send waits for its
 *    recv and gets it; once the oldest message is asked for, the consumed
 *    ones behind it are room again; an empty ring takes 256 again;
 *  - issue order is not post order: a send (or recv) held back by a
 *    dependency keeps its FIFO position while the next one goes eagerly;
 *  - self-send, and two sources into one device on one tag;
 *  - 8-byte and 4096-byte sends alternating on one tag: sends first, recvs
 *    first, half and half; FIFO and data;
 *  - a small recv that waits for its message in no table (parked) still meets
 *    a send that comes by rendezvous: one too large for it (TRUNCATED), and
 *    small ones sent while the ring is full; the recv's engine may sleep
 *    meanwhile (the waiting send kicks it), host polling or not;
 *  - truncation: a 32-byte eager send into a 16-byte recv: recv TRUNCATED and
 *    untouched, send OK; the next pair on the tag works;
 *  - cancel: a recv canceled before its eager send arrives; the next recv gets
 *    the next send; a recv failing on its own side skips one eager message,
 *    also when the message lands after the failure (dropped then, so the
 *    ring keeps all its room);
 *  - a full queue of eager sends, waited and consumed, and a full queue
 *    posted right after: every slot is free as soon as its token is
 *    consumed (polled devices, engine threads, host polling or not);
 *  - failed small sends (bad key, out of bounds): recv PEER_ERROR, both orders;
 *  - permutation stress on 2, 4, 8 devices, lock-step and windowed (the
 *    window of 100 overflows the ring: both paths mixed on one tag);
 *  - 64 devices (rings) and 65 devices (no rings: small sends rendezvous);
 *  - shm: two processes, an eager send that completes before its recv is
 *    posted in the other process, 1000 ping rounds both ways of 8, 100 and
 *    1024 bytes, and a burst of 100 3-slot sends each way that overflows the ring;
 *  - ACCDMA_EAGER_MAX from the environment, and out-of-range options.
 *
 * The seed of the randomized stress is printed; repeat with ACCDMA_TEST_SEED.
 */
#include "helpers/th.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "driver/internal.h" /* the world's arena (run_forged_length) */
#include "queue/queue.h"     /* the ring geometry */
#include "shm_th.h"

#define GUARD 0xC7
#define GUARD_I32 ((int32_t)0xC7C7C7C7)
#define SRC_SIZE 8192
#define DST_SIZE 16384
/* The queue depth of the worlds that count on a full ring. Their rings have
 * POS positions (a line per op of a queue; deeper queues get deeper rings:
 * test_ring_geometry), so it takes POS messages of one position (up to
 * Q_EAGER_HEAD_BYTES) to fill one, posted a queue's worth at a time. */
#define RING 256
#define POS (RING * Q_EAGER_SLOTS_PER_OP)
/* Only turns "the eager send never completed" into a quick failure: an eager
 * send needs no peer, so a bounded wait on it is a deadlock check, not a timing one. */
#define EAGER_HANG_MS 15000

/* What the running test is doing, printed by the teardown if the test failed. */
static char ctx[192];

#define CTX(...) snprintf(ctx, sizeof(ctx), __VA_ARGS__)

static int teardown_ctx(void **state)
{
	(void)state;
	if (ctx[0])
		fprintf(stderr, "test_eager: failed in: %s\n", ctx);
	ctx[0] = 0;
	return 0;
}

struct cfg {
	int engines;
	int queues;
};

static const struct cfg cfgs[] = {
	{ 1, 1 }, { 0, 1 }, { 2, 1 }, { 1, 2 }, { 0, 2 }, { 2, 2 },
};
#define NCFG ((int)(sizeof(cfgs) / sizeof(cfgs[0])))

static accdma_world *open_w(int n, int engines, int queues, int eager, uint32_t depth,
			    uint64_t mem)
{
	struct accdma_world_opts o;

	th_opts(&o, n);
	o.engines = engines;
	o.queues = queues;
	o.eager_max = eager;
	if (depth)
		o.queue_depth = depth;
	if (mem)
		o.mem_size = mem;
	return th_open_opts(&o);
}

/* Wait for a send that must complete without its recv (the eager path). */
static void eager_done_(accdma_world *w, accdma_token t, const char *file, int line)
{
	th_assert_st_(th_wait_within_(w, t, EAGER_HANG_MS,
				      "a send of at most eager_max bytes did not complete before its "
				      "recv was posted",
				      file, line),
		      ACCDMA_OK, file, line);
}
#define eager_done(w, t) eager_done_((w), (t), __FILE__, __LINE__)

/* Wait and accept either of two statuses (where the contract allows both). */
static enum accdma_status wait_either_(accdma_world *w, accdma_token t, enum accdma_status a,
				       enum accdma_status b, const char *file, int line)
{
	enum accdma_status st = th_wait_(w, t, file, line);

	if (st != a && st != b) {
		print_error("status %s, want %s or %s\n", accdma_status_str(st), accdma_status_str(a),
			    accdma_status_str(b));
		_fail(file, line);
	}
	return st;
}
#define wait_either(w, t, a, b) wait_either_((w), (t), (a), (b), __FILE__, __LINE__)

/* The op still waits, after its device's engine issued it; a short timed
 * wait says -ETIMEDOUT and leaves the token valid. */
static void still_pending_(accdma_world *w, int dev, int qi, accdma_token t, const char *file,
			   int line)
{
	enum accdma_status st = ACCDMA_ST__COUNT;
	int rc;

	th_kick_(w, dev, qi, 2, file, line);
	th_pending_(w, t, file, line);
	rc = accdma_wait(w, t, 5, &st);
	if (rc != -ETIMEDOUT) {
		print_error("accdma_wait(5 ms) = %d (status %s): expected -ETIMEDOUT\n", rc,
			    rc == 0 ? accdma_status_str(st) : "-");
		_fail(file, line);
	}
	th_pending_(w, t, file, line);
}
#define still_pending(w, dev, qi, t) still_pending_((w), (dev), (qi), (t), __FILE__, __LINE__)

/* ---- a sender (device 0) and a receiver (device 1) ---------------------- */

struct pr {
	accdma_world *w;
	accdma_queue *qs, *qr;
	int qsi, qri;
	uint8_t *src, *dst;
	accdma_key ks, kd;
};

static void pr_open(struct pr *p, int engines, int queues, int eager)
{
	p->w = open_w(2, engines, queues, eager, RING, 1u << 20);
	p->qsi = queues - 1; /* with two queues, sends and recvs use different ones */
	p->qri = 0;
	p->qs = th_qi(p->w, 0, p->qsi);
	p->qr = th_qi(p->w, 1, p->qri);
	p->ks = th_alloc(p->w, 0, SRC_SIZE, (void **)&p->src);
	p->kd = th_alloc(p->w, 1, DST_SIZE, (void **)&p->dst);
	th_fill_u8(p->dst, DST_SIZE, GUARD);
}

static accdma_token pr_send(struct pr *p, uint64_t tag, uint64_t off, uint64_t len, uint32_t seed)
{
	accdma_token t = 0;

	th_fill_pattern(p->src + off, len, seed);
	assert_int_equal(accdma_send(p->qs, 1, tag, p->ks, off, len, NULL, 0, &t), 0);
	return t;
}

static accdma_token pr_recv(struct pr *p, uint64_t tag, uint64_t off, uint64_t len)
{
	accdma_token t = 0;

	assert_int_equal(accdma_recv(p->qr, 0, tag, p->kd, off, len, NULL, 0, &t), 0);
	return t;
}

/* The recv range [off, off + rlen) holds exactly @len bytes of pattern @seed,
 * then guard bytes: what landed is the send's length, no more. */
static void check_landed_(const uint8_t *dst, uint64_t off, uint64_t rlen, uint64_t len,
			  uint32_t seed, const char *file, int line)
{
	th_check_pattern_(dst + off, len, seed, "received bytes", file, line);
	th_check_u8_(dst + off + len, rlen - len, GUARD, "recv range past the send's length", file,
		     line);
}
#define check_landed(d, o, r, l, s) check_landed_((d), (o), (r), (l), (s), __FILE__, __LINE__)

/* ---- 1. send first -------------------------------------------------------- */

static void run_send_first(const struct cfg *c, uint64_t len)
{
	enum { K = 3, SLOT = 1088 }; /* a 1 KiB message, 8 bytes before it, guard after */
	struct pr p;
	accdma_token s[K], r[K];

	CTX("send_first engines=%d queues=%d len=%llu", c->engines, c->queues,
	    (unsigned long long)len);
	pr_open(&p, c->engines, c->queues, ACCDMA_EAGER_MAX_DEFAULT);
	for (int k = 0; k < K; k++) {
		s[k] = pr_send(&p, 7, (uint64_t)k * SLOT, len, 100u + (uint32_t)k);
		eager_done(p.w, s[k]);
		/* the source may be reused as soon as the send completed */
		th_fill_u8(p.src + k * SLOT, SLOT, 0xAB);
	}
	th_kick_q(p.w, 1, p.qri, 2);
	th_check_u8(p.dst, DST_SIZE, GUARD, "receiver memory before any recv is posted");
	/* recv k lands in slot K-1-k, at an offset inside the slot */
	for (int k = 0; k < K; k++)
		r[k] = pr_recv(&p, 7, (uint64_t)(K - 1 - k) * SLOT + 8, SLOT - 8);
	for (int k = K - 1; k >= 0; k--)
		th_wait_ok(p.w, r[k]);
	for (int k = 0; k < K; k++) {
		uint64_t off = (uint64_t)(K - 1 - k) * SLOT;

		th_check_u8(p.dst + off, 8, GUARD, "before the recv range");
		check_landed(p.dst, off + 8, SLOT - 8, len, 100u + (uint32_t)k);
	}
	th_check_u8(p.dst + K * SLOT, DST_SIZE - K * SLOT, GUARD, "past the recv slots");
	th_close(p.w);
	ctx[0] = 0;
}

/* The tests below that take a configuration run once for each (main()): *state. */
static void test_send_first(void **state)
{
	run_send_first(*state, 8);
	run_send_first(*state, 100); /* two slots */
	run_send_first(*state, ACCDMA_EAGER_MAX_DEFAULT);
}

static void test_send_first_one_byte(void **state)
{
	(void)state;
	run_send_first(&cfgs[0], 1);
}

/* ---- 2. recv first, and a late sender thread ----------------------------- */

static void run_recv_first(const struct cfg *c)
{
	struct pr p;
	accdma_token s, r;

	CTX("recv_first engines=%d queues=%d", c->engines, c->queues);
	pr_open(&p, c->engines, c->queues, ACCDMA_EAGER_MAX_DEFAULT);
	r = pr_recv(&p, 3, 16, 64);
	still_pending(p.w, 1, p.qri, r);
	th_check_u8(p.dst, DST_SIZE, GUARD, "recv range before its send");
	s = pr_send(&p, 3, 0, 24, 31);
	th_wait_ok(p.w, r);
	th_wait_ok(p.w, s);
	th_check_u8(p.dst, 16, GUARD, "before the recv range");
	check_landed(p.dst, 16, 64, 24, 31);
	th_close(p.w);
	ctx[0] = 0;
}

struct late {
	accdma_world *w;
	accdma_queue *q;
	accdma_key k;
	uint64_t len;
	int rc_post, rc_wait;
	enum accdma_status st;
};

static void *late_sender(void *arg)
{
	struct late *l = arg;
	struct timespec ts = { 0, 5 * 1000 * 1000 };
	accdma_token t = 0;

	nanosleep(&ts, NULL);
	l->rc_post = accdma_send(l->q, 1, 4, l->k, 0, l->len, NULL, 0, &t);
	if (l->rc_post == 0)
		l->rc_wait = accdma_wait(l->w, t, TH_HANG_MS, &l->st);
	return NULL;
}

static void run_late_sender(const struct cfg *c, uint64_t len)
{
	struct pr p;
	struct late l;
	pthread_t th;
	accdma_token r;

	CTX("late_sender engines=%d queues=%d len=%llu", c->engines, c->queues,
	    (unsigned long long)len);
	pr_open(&p, c->engines, c->queues, ACCDMA_EAGER_MAX_DEFAULT);
	th_fill_pattern(p.src, len, 77);
	r = pr_recv(&p, 4, 0, 4096);
	memset(&l, 0, sizeof(l));
	l.w = p.w;
	l.q = p.qs;
	l.k = p.ks;
	l.len = len;
	l.rc_wait = -1;
	l.st = ACCDMA_ST__COUNT;
	assert_int_equal(pthread_create(&th, NULL, late_sender, &l), 0);
	th_wait_ok(p.w, r); /* blocks until the other thread's send lands */
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(l.rc_post, 0);
	assert_int_equal(l.rc_wait, 0);
	th_assert_st(l.st, ACCDMA_OK);
	check_landed(p.dst, 0, 4096, len, 77);
	th_close(p.w);
	ctx[0] = 0;
}

static void test_recv_first(void **state)
{
	run_recv_first(*state);
}

/* The first three configurations (main()). */
static void test_late_sender(void **state)
{
	run_late_sender(*state, 8);
	run_late_sender(*state, 100);  /* two slots */
	run_late_sender(*state, 2000); /* rendezvous, same program */
}

/* A parked recv is looked at in every pass of its device: before its message,
 * while another tag's message from the same sender lands ahead of it (held),
 * while that one stays held, and then its own message lands behind it. Each
 * look leaves it parked until its own message is there; the held one then
 * goes to its own recv. */
static void run_parked_looks(const struct cfg *c)
{
	struct pr p;
	accdma_token r5, r6, s6, s5, r7, r8, s7, s8;

	CTX("parked_looks engines=%d queues=%d", c->engines, c->queues);
	pr_open(&p, c->engines, c->queues, ACCDMA_EAGER_MAX_DEFAULT);
	r5 = pr_recv(&p, 5, 0, 64);
	still_pending(p.w, 1, p.qri, r5); /* looks with nothing in the ring */
	s6 = pr_send(&p, 6, 0, 24, 61);
	eager_done(p.w, s6);
	still_pending(p.w, 1, p.qri, r5); /* a look takes in tag 6 and holds it */
	th_check_u8(p.dst, DST_SIZE, GUARD, "receiver memory with tag 6 held");
	still_pending(p.w, 1, p.qri, r5); /* looks with a message held */
	s5 = pr_send(&p, 5, 64, 40, 51);
	eager_done(p.w, s5);
	th_wait_ok(p.w, r5);
	check_landed(p.dst, 0, 64, 40, 51);
	th_check_u8(p.dst + 64, DST_SIZE - 64, GUARD, "past tag 5's recv before tag 6's");
	r6 = pr_recv(&p, 6, 64, 64);
	th_wait_ok(p.w, r6);
	check_landed(p.dst, 64, 64, 24, 61);
	/* Two parked recvs, the later one's message first: the earlier recv's
	 * look takes it in and holds it, and the later recv's own look must
	 * find it held (its sender's ring has nothing new by then). */
	r8 = pr_recv(&p, 8, 128, 64);
	r7 = pr_recv(&p, 7, 192, 64);
	still_pending(p.w, 1, p.qri, r7);
	s7 = pr_send(&p, 7, 128, 16, 71);
	eager_done(p.w, s7);
	th_wait_ok(p.w, r7);
	check_landed(p.dst, 192, 64, 16, 71);
	th_pending(p.w, r8);
	s8 = pr_send(&p, 8, 192, 32, 81);
	eager_done(p.w, s8);
	th_wait_ok(p.w, r8);
	check_landed(p.dst, 128, 64, 32, 81);
	th_check_u8(p.dst + 256, DST_SIZE - 256, GUARD, "past the recv ranges");
	th_close(p.w);
	ctx[0] = 0;
}

static void test_parked_looks(void **state)
{
	run_parked_looks(*state);
}

/* ---- 3. eager_max = 0, and a smaller eager_max ---------------------------- */

static void run_rendezvous_small(const struct cfg *c, int eager, uint64_t len)
{
	struct pr p;
	accdma_token s, r;

	CTX("rendezvous engines=%d queues=%d eager_max=%d len=%llu", c->engines, c->queues, eager,
	    (unsigned long long)len);
	pr_open(&p, c->engines, c->queues, eager);
	s = pr_send(&p, 9, 0, len, 5);
	still_pending(p.w, 0, p.qsi, s);
	th_kick_q(p.w, 1, p.qri, 1);
	th_check_u8(p.dst, DST_SIZE, GUARD, "receiver memory before the recv");
	r = pr_recv(&p, 9, 0, 64);
	th_wait_ok(p.w, r);
	th_wait_ok(p.w, s);
	check_landed(p.dst, 0, 64, len, 5);
	th_close(p.w);
	ctx[0] = 0;
}

static void test_eager_off(void **state)
{
	run_rendezvous_small(*state, 0, 8);
	run_rendezvous_small(*state, 0, 1);
}

static void test_eager_max_16(void **state)
{
	(void)state;
	struct pr p;
	accdma_token s1, s2, r1, r2;

	for (int i = 0; i < 3; i++) {
		CTX("eager_max=16 engines=%d", cfgs[i].engines);
		pr_open(&p, cfgs[i].engines, 1, 16);
		s1 = pr_send(&p, 2, 0, 16, 1);
		eager_done(p.w, s1);
		s2 = pr_send(&p, 2, 64, 17, 2);
		still_pending(p.w, 0, p.qsi, s2);
		r1 = pr_recv(&p, 2, 0, 64);
		r2 = pr_recv(&p, 2, 64, 64);
		th_wait_ok(p.w, r2);
		th_wait_ok(p.w, r1);
		th_wait_ok(p.w, s2);
		check_landed(p.dst, 0, 64, 16, 1);
		check_landed(p.dst, 64, 64, 17, 2);
		th_close(p.w);
	}
	ctx[0] = 0;
}

/* ---- 4. boundaries with the default ---------------------------------------- */

static void test_boundaries(void **state)
{
	(void)state;
	/* 1..17: each way a message head is copied (bytes, 4 + 4, 8 + 8 overlapping, memcpy) */
	static const uint64_t eager_lens[] = { 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 39, 40, 41, 100, 1023,
					       ACCDMA_EAGER_MAX_DEFAULT };
	enum { NL = sizeof(eager_lens) / sizeof(eager_lens[0]), RANGE = 2048 };
	struct accdma_device_info info;
	struct pr p;
	accdma_token s, r;
	struct accdma_world_opts o;

	assert_int_equal(accdma_world_opts_init(&o), 0);
	if (!getenv("ACCDMA_EAGER_MAX"))
		assert_int_equal(o.eager_max, ACCDMA_EAGER_MAX_DEFAULT); /* the default */
	assert_int_equal(ACCDMA_EAGER_MAX_DEFAULT, 1024);
	assert_int_equal(ACCDMA_EAGER_MAX, 1024);

	for (int i = 0; i < 3; i++) {
		CTX("boundaries engines=%d", cfgs[i].engines);
		pr_open(&p, cfgs[i].engines, 1, ACCDMA_EAGER_MAX_DEFAULT);
		assert_int_equal(accdma_device_info(p.w, 1, &info), 0);
		assert_int_equal(info.eager_max, ACCDMA_EAGER_MAX_DEFAULT);
		assert_int_equal(info.eager_slots, POS);
		/* one tag throughout: each pair takes the next FIFO position */
		for (int k = 0; k < NL; k++) {
			th_fill_u8(p.dst, RANGE, GUARD);
			s = pr_send(&p, 1, 0, eager_lens[k], 10u + (uint32_t)k);
			eager_done(p.w, s);
			r = pr_recv(&p, 1, 0, RANGE);
			th_wait_ok(p.w, r);
			check_landed(p.dst, 0, RANGE, eager_lens[k], 10u + (uint32_t)k);
		}
		/* one byte more: rendezvous */
		th_fill_u8(p.dst, RANGE, GUARD);
		s = pr_send(&p, 1, 0, ACCDMA_EAGER_MAX_DEFAULT + 1, 20);
		still_pending(p.w, 0, 0, s);
		th_check_u8(p.dst, RANGE, GUARD, "recv range before the 1025-byte send's recv");
		r = pr_recv(&p, 1, 0, RANGE);
		th_wait_ok(p.w, r);
		th_wait_ok(p.w, s);
		check_landed(p.dst, 0, RANGE, ACCDMA_EAGER_MAX_DEFAULT + 1, 20);

		/* zero length is still a bad descriptor, not an empty eager message;
		 * send first and recv first; it takes one FIFO position */
		th_fill_u8(p.dst, 128, GUARD);
		assert_int_equal(accdma_send(p.qs, 1, 1, p.ks, 0, 0, NULL, 0, &s), 0);
		th_wait_st(p.w, s, ACCDMA_ST_BAD_LENGTH);
		r = pr_recv(&p, 1, 0, 128);
		th_wait_st(p.w, r, ACCDMA_ST_PEER_ERROR);
		r = pr_recv(&p, 1, 0, 128);
		still_pending(p.w, 1, 0, r);
		assert_int_equal(accdma_send(p.qs, 1, 1, p.ks, 0, 0, NULL, 0, &s), 0);
		th_wait_st(p.w, s, ACCDMA_ST_BAD_LENGTH);
		th_wait_st(p.w, r, ACCDMA_ST_PEER_ERROR);
		th_check_u8(p.dst, 128, GUARD, "recv range of zero-length sends");
		/* the tag still works, eagerly */
		s = pr_send(&p, 1, 0, 12, 21);
		eager_done(p.w, s);
		r = pr_recv(&p, 1, 0, 128);
		th_wait_ok(p.w, r);
		check_landed(p.dst, 0, 128, 12, 21);
		th_close(p.w);
	}
	ctx[0] = 0;
}

/* ---- 5. ring overflow ------------------------------------------------------ */

#define EXTRA 200 /* sends posted once the ring is full: they wait for their recvs */
#define OVF (POS + EXTRA)
#define CHUNK 128 /* recvs posted at a time: what a queue of RING slots takes with room to spare */

/* Post recvs k in [from, to) for payloads k (int32 k + 1000 each), recv
 * range 8 bytes, so the 4 bytes past each payload must stay guard. */
static void ovf_recv(accdma_queue *q, accdma_key kd, int from, int to,
		     accdma_token *r)
{
	for (int k = from; k < to; k++)
		assert_int_equal(accdma_recv(q, 0, 11, kd, (uint64_t)k * 8, 8, NULL, 0, &r[k]), 0);
}

static void ovf_check_base(const int32_t *d, int from, int to, int base)
{
	for (int k = from; k < to; k++) {
		if (d[2 * k] != k + base || d[2 * k + 1] != GUARD_I32) {
			print_error("recv %d holds %d (then %#x), want payload %d\n", k, d[2 * k],
				    (unsigned)d[2 * k + 1], k + base);
			fail();
		}
	}
}

static void ovf_check(const int32_t *d, int from, int to)
{
	ovf_check_base(d, from, to, 1000);
}

/* Post the 4-byte sends k in [from, to) (source offset 4k) on tag @tag, over
 * @nq queues in turn, a queue's worth at a time: each completes at once,
 * with no recv posted, and is consumed, which gives its queue slot back but
 * not its ring position. */
static void fill_sends(accdma_world *w, accdma_queue **qs, int nq, uint64_t tag, accdma_key ks,
		       int from, int to, accdma_token *s)
{
	for (int at = from; at < to; at += RING) {
		int end = at + RING < to ? at + RING : to;

		for (int k = at; k < end; k++)
			assert_int_equal(accdma_send(qs[k % nq], 1, tag, ks, (uint64_t)k * 4, 4, NULL, 0,
						     &s[k]),
					 0);
		for (int k = at; k < end; k++)
			eager_done(w, s[k]);
	}
}

/* Post the 8-byte recvs k in [from, to) (offset 8k) on tag @tag, CHUNK at a
 * time, and wait for each. */
static void recv_all(accdma_world *w, accdma_queue *q, uint64_t tag, accdma_key kd, int from,
		     int to, accdma_token *r)
{
	for (int at = from; at < to; at += CHUNK) {
		int end = at + CHUNK < to ? at + CHUNK : to;

		for (int k = at; k < end; k++)
			assert_int_equal(accdma_recv(q, 0, tag, kd, (uint64_t)k * 8, 8, NULL, 0, &r[k]), 0);
		for (int k = at; k < end; k++)
			th_wait_ok(w, r[k]);
	}
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

	/* drain 10: they come from the ring; the rendezvous sends still wait */
	ovf_recv(qr, kd, 0, 10, r);
	for (int k = 0; k < 10; k++)
		th_wait_ok(w, r[k]);
	ovf_check(dst, 0, 10);
	th_kick(w, 0, 1);
	th_pending(w, s[POS]);
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
}

static void test_window_fits_ring(void **state)
{
	run_window_fits_ring(*state);
}

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

/* ---- 10. permutation stress ----------------------------------------------------------- */

#define PMAX 8

static uint64_t seed;

/* Every device sends {round, self} (8 bytes) to next and receives from prev
 * into a 16-byte slot; @window rounds are posted before any is waited on. */
static void run_permute(int n, int engines, int rounds, int window, uint32_t depth,
			struct th_rng *rng)
{
	accdma_world *w = open_w(n, engines, 1, ACCDMA_EAGER_MAX, depth, 1u << 20);
	accdma_key sk[PMAX], rk[PMAX];
	int32_t *sb[PMAX], *rb[PMAX];
	int order[PMAX];
	accdma_token *t = calloc((size_t)(2 * n * window), sizeof(*t));

	CTX("permute n=%d engines=%d window=%d seed=%llu", n, engines, window,
	    (unsigned long long)seed);
	assert_non_null(t);
	for (int d = 0; d < n; d++) {
		sk[d] = th_alloc(w, d, (uint64_t)window * 8, (void **)&sb[d]);
		rk[d] = th_alloc(w, d, (uint64_t)window * 16, (void **)&rb[d]);
		order[d] = d;
	}
	for (int base = 0; base < rounds; base += window) {
		int wn = rounds - base < window ? rounds - base : window, nt = 0;

		for (int d = 0; d < n; d++) {
			th_fill_u8(rb[d], (size_t)window * 16, GUARD);
			for (int i = 0; i < wn; i++) {
				sb[d][2 * i] = base + i;
				sb[d][2 * i + 1] = d;
			}
		}
		for (int i = 0; i < wn; i++) {
			th_shuffle(order, n, rng);
			for (int j = 0; j < n; j++) {
				int d = order[j], next = (d + 1) % n, prev = (d + n - 1) % n;
				accdma_queue *q = th_q(w, d);
				int send_first = (int)th_rand_below(rng, 2);

				for (int h = 0; h < 2; h++) {
					int rc;

					if (h == !send_first)
						rc = accdma_send(q, next, 21, sk[d], (uint64_t)i * 8, 8,
								 NULL, 0, &t[nt++]);
					else
						rc = accdma_recv(q, prev, 21, rk[d], (uint64_t)i * 16,
								 16, NULL, 0, &t[nt++]);
					if (rc != 0)
						th_rfail("round %d dev %d: post = %d\n", base + i, d, rc);
				}
			}
		}
		for (int k = nt - 1; k >= 0; k--) {
			enum accdma_status st = ACCDMA_ST__COUNT;
			int rc = accdma_wait(w, t[k], TH_HANG_MS, &st);

			if (rc != 0) {
				accdma_stall_report(w, stderr);
				th_rfail("rounds %d..: accdma_wait = %d\n", base, rc);
			}
			if (st != ACCDMA_OK)
				th_rfail("rounds %d..: token %d status %s\n", base, k,
					 accdma_status_str(st));
		}
		for (int d = 0; d < n; d++) {
			int prev = (d + n - 1) % n;

			for (int i = 0; i < wn; i++) {
				const int32_t *g = rb[d] + 4 * i;

				if (g[0] != base + i || g[1] != prev || g[2] != GUARD_I32 ||
				    g[3] != GUARD_I32)
					th_rfail("n=%d window=%d round %d dev %d: got {%d, %d, %#x, "
						 "%#x}, want {%d, %d, guard, guard}\n",
						 n, window, base + i, d, g[0], g[1], (unsigned)g[2],
						 (unsigned)g[3], base + i, prev);
			}
		}
	}
	free(t);
	th_close(w);
	ctx[0] = 0;
}

static void test_permute_stress(void **state)
{
	(void)state;
	struct th_rng rng = { seed ^ 0xea9e };
	int rounds = th_iters(2000);

	for (int n = 2; n <= PMAX; n *= 2)
		run_permute(n, 1, rounds, 1, 0, &rng);
	run_permute(4, 0, rounds / 4, 1, 0, &rng);
	for (int n = 2; n <= PMAX; n *= 2)
		run_permute(n, 1, rounds, 32, 0, &rng);
	/* 100 messages in flight per pair: past the ring's 64, both paths mix */
	run_permute(2, 1, rounds, 100, 256, &rng);
	run_permute(4, 2, rounds / 2, 100, 256, &rng);
}

/* ---- 11. many devices ------------------------------------------------------------------- */

static void run_many(int n)
{
	accdma_world *w = open_w(n, 0, 1, ACCDMA_EAGER_MAX, 16, 64u << 10);
	static accdma_key sk[ACCDMA_EAGER_MAX_DEVICES + 1], rk[ACCDMA_EAGER_MAX_DEVICES + 1];
	static int32_t *sb[ACCDMA_EAGER_MAX_DEVICES + 1], *rb[ACCDMA_EAGER_MAX_DEVICES + 1];
	static accdma_token st[ACCDMA_EAGER_MAX_DEVICES + 1], rt[ACCDMA_EAGER_MAX_DEVICES + 1];
	int rings = n <= ACCDMA_EAGER_MAX_DEVICES;

	CTX("many devices n=%d", n);
	for (int d = 0; d < n; d++) {
		sk[d] = th_alloc(w, d, 8, (void **)&sb[d]);
		rk[d] = th_alloc(w, d, 16, (void **)&rb[d]);
	}
	for (int round = 0; round < 3; round++) {
		for (int d = 0; d < n; d++) {
			sb[d][0] = round;
			sb[d][1] = d;
			th_fill_u8(rb[d], 16, GUARD);
		}
		/* every send first, then every recv */
		for (int d = 0; d < n; d++)
			assert_int_equal(accdma_send(th_q(w, d), (d + 1) % n, 2, sk[d], 0, 8, NULL, 0,
						     &st[d]),
					 0);
		if (rings) {
			for (int d = 0; d < n; d++)
				eager_done(w, st[d]);
		} else {
			/* no rings: a small send waits for its recv */
			still_pending(w, 0, 0, st[0]);
			still_pending(w, n - 1, 0, st[n - 1]);
		}
		for (int d = 0; d < n; d++)
			assert_int_equal(accdma_recv(th_q(w, d), (d + n - 1) % n, 2, rk[d], 0, 16,
						     NULL, 0, &rt[d]),
					 0);
		for (int d = n - 1; d >= 0; d--)
			th_wait_ok(w, rt[d]);
		if (!rings)
			for (int d = 0; d < n; d++)
				th_wait_ok(w, st[d]);
		for (int d = 0; d < n; d++) {
			int prev = (d + n - 1) % n;

			if (rb[d][0] != round || rb[d][1] != prev || rb[d][2] != GUARD_I32 ||
			    rb[d][3] != GUARD_I32) {
				print_error("n=%d round %d dev %d: got {%d, %d, %#x, %#x}, want {%d, "
					    "%d, guard, guard}\n",
					    n, round, d, rb[d][0], rb[d][1], (unsigned)rb[d][2],
					    (unsigned)rb[d][3], round, prev);
				fail();
			}
		}
	}
	th_close(w);
	ctx[0] = 0;
}

static void test_many_devices(void **state)
{
	(void)state;
	run_many(ACCDMA_EAGER_MAX_DEVICES);
	run_many(ACCDMA_EAGER_MAX_DEVICES + 1);
}

/* ---- 12. shm: two processes ------------------------------------------------------------ */

#define PING_ROUNDS 1000
#define BURST 100
#define BURST_LEN 100  /* 3 ring slots: 100 of them overflow the 256-slot ring */
#define BURST_SLOT 128 /* recv range of each: the 28 bytes past the message stay guard */

/* Bytes [8, len) of a message: (k + 8 * rank + i) for the i-th byte. */
static void msg_fill(uint8_t *p, uint64_t len, int k, int rank)
{
	for (uint64_t i = 8; i < len; i++)
		p[i] = (uint8_t)((uint64_t)k + 8u * (uint64_t)rank + i);
}

static int msg_ok(const uint8_t *p, uint64_t len, uint64_t range, int k, int rank)
{
	for (uint64_t i = 8; i < len; i++)
		if (p[i] != (uint8_t)((uint64_t)k + 8u * (uint64_t)rank + i))
			return 0;
	for (uint64_t i = len; i < range; i++)
		if (p[i] != GUARD)
			return 0;
	return 1;
}

static int shm_child(int rank, int n, int port)
{
	struct accdma_world_opts o;
	accdma_world *w = NULL;
	accdma_queue *q;
	accdma_key ks, kd;
	int32_t *sb, *rb;
	accdma_token t[2 * BURST];
	enum accdma_status st;
	int peer = 1 - rank, rc;

	sc_rank = rank;
	sc_opts(&o, rank, n, port, 20000);
	o.eager_max = ACCDMA_EAGER_MAX_DEFAULT;
	rc = accdma_world_open(&o, &w);
	SC_CHECK(rc == 0 && w, "accdma_world_open = %d", rc);
	SC_CHECK(accdma_queue_get(w, rank, 0, &q) == 0, "queue_get");
	SC_CHECK(accdma_mem_alloc(w, rank, BURST * BURST_SLOT, &ks) == 0, "alloc");
	SC_CHECK(accdma_mem_alloc(w, rank, BURST * BURST_SLOT, &kd) == 0, "alloc");
	sb = accdma_mem_ptr(w, rank, ks, NULL);
	rb = accdma_mem_ptr(w, rank, kd, NULL);
	SC_CHECK(sb && rb, "mem_ptr");

	/* rank 0's send completes before rank 1 posts its recv: rank 1 posts
	 * it only after rank 0 tells it (tag 4) that the send completed */
	memset(rb, GUARD, 16);
	if (rank == 0) {
		sb[0] = 0x5eed;
		sb[1] = 0x0e;
		SC_CHECK(accdma_send(q, 1, 3, ks, 0, 8, NULL, 0, &t[0]) == 0, "send");
		rc = accdma_wait(w, t[0], EAGER_HANG_MS, &st);
		SC_CHECK(rc == 0, "the eager send did not complete before its recv was posted: "
				  "accdma_wait = %d", rc);
		SC_CHECK(st == ACCDMA_OK, "eager send status %s", accdma_status_str(st));
		sb[0] = -1; /* reused at once: the message was copied */
		sb[2] = 0x60;
		SC_CHECK(accdma_send(q, 1, 4, ks, 8, 4, NULL, 0, &t[1]) == 0, "send go");
		sc_wait_ok(w, t[1]);
	} else {
		SC_CHECK(accdma_recv(q, 0, 4, kd, 0, 16, NULL, 0, &t[1]) == 0, "recv go");
		sc_wait_ok(w, t[1]);
		SC_CHECK(rb[0] == 0x60 && rb[1] == GUARD_I32, "go message {%#x, %#x}", (unsigned)rb[0],
			 (unsigned)rb[1]);
		memset(rb, GUARD, 16);
		SC_CHECK(accdma_recv(q, 0, 3, kd, 0, 16, NULL, 0, &t[0]) == 0, "recv");
		sc_wait_ok(w, t[0]);
		SC_CHECK(rb[0] == 0x5eed && rb[1] == 0x0e && rb[2] == GUARD_I32 && rb[3] == GUARD_I32,
			 "eager message {%#x, %#x, %#x, %#x}", (unsigned)rb[0], (unsigned)rb[1],
			 (unsigned)rb[2], (unsigned)rb[3]);
	}

	/* ping both ways: rank 0 sends first, rank 1 receives first; 8, 100 and
	 * 1024 bytes (1, 4 and 33 positions), so the ring wraps under every size */
	for (int round = 0; round < PING_ROUNDS; round++) {
		static const uint64_t lens[] = { 8, 100, 1024 };
		uint64_t len = lens[round % 3];

		sb[0] = round;
		sb[1] = rank;
		msg_fill((uint8_t *)sb, len, round, rank);
		memset(rb, GUARD, 2048);
		for (int h = 0; h < 2; h++) {
			if ((h == 0) == (rank == 0))
				rc = accdma_send(q, peer, 1, ks, 0, len, NULL, 0, &t[0]);
			else
				rc = accdma_recv(q, peer, 1, kd, 0, 2048, NULL, 0, &t[1]);
			SC_CHECK(rc == 0, "round %d: post = %d", round, rc);
		}
		sc_wait_ok(w, t[1]);
		sc_wait_ok(w, t[0]);
		SC_CHECK(rb[0] == round && rb[1] == peer && msg_ok((uint8_t *)rb, len, 2048, round, peer),
			 "round %d (%llu bytes): got {%d, %d, ...} or wrong bytes after them", round,
			 (unsigned long long)len, rb[0], rb[1]);
	}

	/* a burst past the ring: 100 sends of 3 slots each way, then 100 recvs */
	memset(rb, GUARD, BURST * BURST_SLOT);
	for (int k = 0; k < BURST; k++) {
		int32_t *m = (int32_t *)(void *)((uint8_t *)sb + (size_t)k * BURST_SLOT);

		m[0] = 7000 + k;
		m[1] = rank;
		msg_fill((uint8_t *)m, BURST_LEN, k, rank);
		SC_CHECK(accdma_send(q, peer, 2, ks, (uint64_t)k * BURST_SLOT, BURST_LEN, NULL, 0,
				     &t[k]) == 0,
			 "send");
	}
	for (int k = 0; k < BURST; k++)
		SC_CHECK(accdma_recv(q, peer, 2, kd, (uint64_t)k * BURST_SLOT, BURST_SLOT, NULL, 0,
				     &t[BURST + k]) == 0,
			 "recv");
	for (int k = 2 * BURST - 1; k >= 0; k--)
		sc_wait_ok(w, t[k]);
	for (int k = 0; k < BURST; k++) {
		const int32_t *g = (const int32_t *)(const void *)((uint8_t *)rb + (size_t)k * BURST_SLOT);

		SC_CHECK(g[0] == 7000 + k && g[1] == peer &&
				 msg_ok((const uint8_t *)g, BURST_LEN, BURST_SLOT, k, peer),
			 "burst recv %d: got {%d, %d, ...} or wrong bytes after them", k, g[0], g[1]);
	}
	SC_CHECK(accdma_world_close(w) == 0, "close");
	return 0;
}

static void test_shm_ping(void **state)
{
	(void)state;
	struct shm_run r;

	CTX("shm ping, 2 processes");
	shm_run_init(&r, 2);
	shm_spawn(&r, "eager", 0, 0);
	shm_spawn(&r, "eager", 1, 0);
	shm_run_end(&r);
	for (int i = 0; i < 2; i++)
		if (shm_code(&r, i) != 0) {
			print_error("shm eager: rank %d exited %d\n", i, shm_code(&r, i));
			fail();
		}
	ctx[0] = 0;
}

/* ---- 13. options and environment -------------------------------------------------------- */

static void test_env_and_opts(void **state)
{
	(void)state;
	struct accdma_world_opts o;
	accdma_world *w = NULL;
	const char *old = getenv("ACCDMA_EAGER_MAX");
	char *saved = old ? strdup(old) : NULL;
	static const char *const bad[] = { "1025", "-1", "100000", "abc", "4x" };
	struct pr p;
	accdma_token s, r;

	CTX("env and options");
	unsetenv("ACCDMA_EAGER_MAX");
	assert_int_equal(accdma_world_opts_init(&o), 0);
	assert_int_equal(o.eager_max, ACCDMA_EAGER_MAX_DEFAULT);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("ACCDMA_EAGER_MAX", bad[i], 1);
		assert_int_equal(accdma_world_opts_init(&o), -EINVAL);
		/* the field keeps its default (as every malformed variable does) */
		assert_int_equal(o.eager_max, ACCDMA_EAGER_MAX_DEFAULT);
	}
	setenv("ACCDMA_EAGER_MAX", "40", 1);
	assert_int_equal(accdma_world_opts_init(&o), 0);
	assert_int_equal(o.eager_max, 40);
	setenv("ACCDMA_EAGER_MAX", "7", 1);
	assert_int_equal(accdma_world_opts_init(&o), 0);
	assert_int_equal(o.eager_max, 7);

	/* ACCDMA_EAGER_MAX=0 is honored: a small send waits for its recv */
	setenv("ACCDMA_EAGER_MAX", "0", 1);
	assert_int_equal(accdma_world_opts_init(&o), 0);
	assert_int_equal(o.eager_max, 0);
	o.num_devices = 2;
	o.mem_size = 1u << 20;
	o.log_level = 0;
	w = th_open_opts(&o);
	memset(&p, 0, sizeof(p));
	p.w = w;
	p.qs = th_q(w, 0);
	p.qr = th_q(w, 1);
	p.ks = th_alloc(w, 0, SRC_SIZE, (void **)&p.src);
	p.kd = th_alloc(w, 1, DST_SIZE, (void **)&p.dst);
	th_fill_u8(p.dst, DST_SIZE, GUARD);
	s = pr_send(&p, 1, 0, 8, 90);
	still_pending(w, 0, 0, s);
	r = pr_recv(&p, 1, 0, 64);
	th_wait_ok(w, r);
	th_wait_ok(w, s);
	check_landed(p.dst, 0, 64, 8, 90);
	th_close(w);

	/* restore the environment before anything else can fail */
	if (saved) {
		setenv("ACCDMA_EAGER_MAX", saved, 1);
		free(saved);
	} else {
		unsetenv("ACCDMA_EAGER_MAX");
	}

	/* out-of-range options */
	th_opts(&o, 2);
	o.eager_max = ACCDMA_EAGER_MAX + 1;
	w = NULL;
	assert_int_equal(accdma_world_open(&o, &w), -EINVAL);
	assert_null(w);
	o.eager_max = -1;
	assert_int_equal(accdma_world_open(&o, &w), -EINVAL);
	assert_null(w);
	/* in range at both ends */
	o.eager_max = 0;
	w = th_open_opts(&o);
	th_close(w);
	o.eager_max = ACCDMA_EAGER_MAX;
	w = th_open_opts(&o);
	th_close(w);
	/* more devices than get rings: eager is off silently, not an error */
	th_opts(&o, ACCDMA_EAGER_MAX_DEVICES + 1);
	o.engines = 0;
	o.mem_size = 64u << 10;
	o.queue_depth = 16;
	o.eager_max = ACCDMA_EAGER_MAX;
	w = th_open_opts(&o);
	th_close(w);
	ctx[0] = 0;
}

/* A configuration's name in case names. */
static const char *cfg_name(const struct cfg *c)
{
	static char names[NCFG][32];
	char *b = names[c - cfgs];

	snprintf(b, sizeof(names[0]), "engines %d, queues %d", c->engines, c->queues);
	return b;
}

/* One case with teardown_ctx; PER_CFG: one case per configuration (the first @n). */
#define CASE(L, fn, arg, ...)                                                                \
	do {                                                                                   \
		th_case((L), (fn), (void *)(arg), __VA_ARGS__);                                \
		(L)->t[(L)->n - 1].teardown_func = teardown_ctx;                               \
	} while (0)
#define PER_CFG(L, fn, n)                                                                    \
	for (int i_ = 0; i_ < (n); i_++)                                                       \
	CASE((L), fn, &cfgs[i_], #fn "/%s", cfg_name(&cfgs[i_]))

int main(int argc, char **argv)
{
	struct th_cases t = { 0 };

	if (argc == 7 && !strcmp(argv[1], "--shm-child"))
		return shm_child(atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
	seed = th_seed();
	PER_CFG(&t, test_send_first, NCFG);
	CASE(&t, test_send_first_one_byte, NULL, "test_send_first_one_byte");
	PER_CFG(&t, test_recv_first, NCFG);
	PER_CFG(&t, test_late_sender, 3);
	PER_CFG(&t, test_parked_looks, NCFG);
	PER_CFG(&t, test_eager_off, NCFG);
	CASE(&t, test_eager_max_16, NULL, "test_eager_max_16");
	CASE(&t, test_boundaries, NULL, "test_boundaries");
	PER_CFG(&t, test_ring_overflow, NCFG);
	PER_CFG(&t, test_multi_slot, NCFG);
	CASE(&t, test_multi_slot_small, NULL, "test_multi_slot_small");
	CASE(&t, test_ring_geometry, NULL, "test_ring_geometry");
	PER_CFG(&t, test_window_fits_ring, NCFG);
	PER_CFG(&t, test_tags_share_ring, NCFG);
	PER_CFG(&t, test_stale_payload, NCFG);
	PER_CFG(&t, test_dep_order, NCFG);
	CASE(&t, test_self_and_two_sources, NULL, "test_self_and_two_sources");
	PER_CFG(&t, test_mixed_sizes, NCFG);
	PER_CFG(&t, test_truncation, NCFG);
	PER_CFG(&t, test_parked_rendezvous, NCFG);
	PER_CFG(&t, test_cancel, NCFG);
	PER_CFG(&t, test_bad_recv, 3);
	PER_CFG(&t, test_bad_recv_first, NCFG);
	PER_CFG(&t, test_full_queue_again, NCFG);
	PER_CFG(&t, test_failed_send, NCFG);
	CASE(&t, test_permute_stress, NULL, "test_permute_stress");
	CASE(&t, test_many_devices, NULL, "test_many_devices");
	CASE(&t, test_shm_ping, NULL, "test_shm_ping");
	CASE(&t, test_env_and_opts, NULL, "test_env_and_opts");
	return th_run_cases("test_eager", &t, NULL, NULL);
}
