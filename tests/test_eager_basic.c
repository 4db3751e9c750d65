/* SPDX-License-Identifier: MIT */
/*
 * test_eager_basic.c - eager sends through the API: either side first, eager_max.
 *
 *  - send first: a small send completes before its recv exists, its source may
 *    be reused at once, nothing lands before the recv is posted, then the recv
 *    gets exactly the send's bytes; every configuration;
 *  - recv first, also with the send posted late by a second thread;
 *  - a parked recv looked at again and again (nothing landed, another tag's
 *    message held ahead of it, then its own; two parked recvs out of order);
 *  - eager_max = 0: a small send waits for its recv; eager_max = 16: 16 bytes
 *    go eagerly, 17 do not;
 *  - boundaries with the default (1024): 1-5, 7-9, 15-17, 39-41, 100, 1023 and
 *    1024 bytes eager, 1025 not; a zero-length send is BAD_LENGTH (its recv
 *    PEER_ERROR).
 */
#include "eager_th.h"

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

int main(int argc, char **argv)
{
	struct th_cases t = { 0 };

	(void)argc;
	(void)argv;
	seed = th_seed();
	PER_CFG(&t, test_send_first, NCFG);
	CASE(&t, test_send_first_one_byte, NULL, "test_send_first_one_byte");
	PER_CFG(&t, test_recv_first, NCFG);
	PER_CFG(&t, test_late_sender, 3);
	PER_CFG(&t, test_parked_looks, NCFG);
	PER_CFG(&t, test_eager_off, NCFG);
	CASE(&t, test_eager_max_16, NULL, "test_eager_max_16");
	CASE(&t, test_boundaries, NULL, "test_boundaries");
	return th_run_cases("test_eager_basic", &t, NULL, NULL);
}
