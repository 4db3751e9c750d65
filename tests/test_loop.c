/* SPDX-License-Identifier: MIT */
/*
 * test_loop.c - the cross-host protocol over the loop transport, where every
 * device is a host of its own and reaches the others only through messages
 * and one-sided writes (driver/loop/loop.c).
 *
 *  - what crosses the link for each kind of transfer: an eager send is one
 *    message, a rendezvous is an announcement, a clearance, a write and a
 *    finish, a one-sided write one write; data, status and byte counts checked;
 *  - FIFO across paths: small and large sends on one tag, recvs posted after;
 *  - credit for one message at a time: once a quarter of the ring is free;
 *  - a sender short of credit asks once, goes eagerly on the answer when the
 *    ring has room, and by rendezvous without asking again when it has not;
 *  - an engine going to sleep tells the link (its idle op);
 *  - a waiting send canceled: withdrawn by message, its recv PEER_ERROR;
 *  - a link with no room for a write: the cleared send and a one-sided
 *    write wait for room, then land;
 *  - forged clearances: one asking for more than the send, one naming a
 *    bad key: only that send fails, nothing is written;
 *  - a hostile peer: forged, stale and malformed messages are dropped or
 *    fail only the ops they name, and the world goes on working;
 *  - finishes, clearances and "no room" only from an op's partner: not for a send
 *    whose write is in flight, not from another device, never for more
 *    bytes than the recv holds.
 *
 * The rest of the suite runs over loop too (`make check`'s check-loop).
 */
#include "loop_th.h"

#include <unistd.h>

#include "queue/queue.h"

#define BIG (2 * Q_STAGE_BYTES) /* past a staging slot: these sends go by rendezvous */

/* Wait for @t and check what it moved (looked at before the wait consumes it). */
static void wait_moved(accdma_world *w, accdma_token t, uint64_t moved)
{
	struct accdma_op_info info;
	int tries = 0;

	do {
		assert_int_equal(accdma_op_info(w, t, &info), 0);
		if (info.stage != ACCDMA_STAGE_DONE)
			usleep(1000);
	} while (info.stage != ACCDMA_STAGE_DONE && ++tries < 20000);
	th_assert_st(info.status, ACCDMA_OK);
	assert_int_equal(info.moved, moved);
	th_wait_ok(w, t);
}

static void test_what_crosses(void **state)
{
	(void)state;
	accdma_world *w = loop_open(2, 1);
	uint8_t *a, *b;
	accdma_key ka = th_alloc(w, 0, 2 * BIG, (void **)&a);
	accdma_key kb = th_alloc(w, 1, 2 * BIG, (void **)&b);
	uint64_t base[DRV_LOOP__COUNT], c[DRV_LOOP__COUNT];
	accdma_token s, r;

	th_fill_pattern(a, 2 * BIG, 1);
	th_fill_u8(b, 2 * BIG, 0xEE);
	loop_counts(w, base, NULL);

	/* eager: one message, the send done before its recv is posted */
	assert_int_equal(accdma_send(th_q(w, 0), 1, 5, ka, 0, 8, NULL, 0, &s), 0);
	th_wait_ok(w, s);
	loop_counts(w, c, base);
	assert_int_equal(c[Q_MSG_EAGER], 1);
	assert_int_equal(c[Q_MSG_RTS], 0);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 5, kb, 0, 64, NULL, 0, &r), 0);
	wait_moved(w, r, 8);
	th_check_pattern(b, 8, 1, "eager payload");
	th_check_u8(b + 8, 56, 0xEE, "after the eager payload");

	/* rendezvous, send first then recv first: announce, clear, write, finish */
	for (int recv_first = 0; recv_first < 2; recv_first++) {
		loop_counts(w, base, NULL);
		th_fill_u8(b, 2 * BIG, 0xEE);
		if (recv_first)
			assert_int_equal(accdma_recv(th_q(w, 1), 0, 6, kb, 16, BIG, NULL, 0, &r), 0);
		assert_int_equal(accdma_send(th_q(w, 0), 1, 6, ka, 0, BIG, NULL, 0, &s), 0);
		if (!recv_first) {
			th_kick(w, 0, 1);
			th_pending(w, s);
			assert_int_equal(accdma_recv(th_q(w, 1), 0, 6, kb, 16, BIG, NULL, 0, &r), 0);
		}
		wait_moved(w, r, BIG);
		wait_moved(w, s, BIG);
		th_check_u8(b, 16, 0xEE, "before the written range");
		th_check_pattern(b + 16, BIG, 1, "written data");
		th_check_u8(b + 16 + BIG, BIG - 16, 0xEE, "after the written range");
		loop_counts(w, c, base);
		assert_int_equal(c[Q_MSG_RTS], 1);
		assert_int_equal(c[Q_MSG_CTS], 1);
		assert_int_equal(c[Q_MSG_FIN], 1);
		assert_int_equal(c[DRV_LOOP_WRITES], 1);
	}

	/* a one-sided write: one write, nothing for the target's engine to do */
	loop_counts(w, base, NULL);
	assert_int_equal(accdma_write(th_q(w, 0), 1, ka, 100, 1000, kb, 7, NULL, 0, &s), 0);
	th_wait_ok(w, s);
	assert_memory_equal(b + 7, a + 100, 1000);
	loop_counts(w, c, base);
	assert_int_equal(c[DRV_LOOP_WRITES], 1);
	assert_int_equal(c[Q_MSG_RTS] + c[Q_MSG_EAGER] + c[Q_MSG_FIN], 0);
	/* ... checked against the target's bounds */
	assert_int_equal(accdma_write(th_q(w, 0), 1, ka, 0, 16, kb, 2 * BIG - 8, NULL, 0, &s), 0);
	th_wait_st(w, s, ACCDMA_ST_OUT_OF_BOUNDS);
	th_close(w);
}

/* One small message at a time, each received before the next: the ring
 * drains every time, yet credit goes back only once a quarter of it is
 * free again (a message back per send would double what a stream costs). */
static void test_credit_pace(void **state)
{
	(void)state;
	accdma_world *w = loop_open(2, 1);
	struct accdma_device_info info;
	uint8_t *a, *b;
	accdma_key ka = th_alloc(w, 0, 4096, (void **)&a);
	accdma_key kb = th_alloc(w, 1, 4096, (void **)&b);
	uint64_t base[DRV_LOOP__COUNT], c[DRV_LOOP__COUNT];
	accdma_token s, r;
	uint32_t quarter;

	assert_int_equal(accdma_device_info(w, 1, &info), 0);
	quarter = info.eager_slots / 4;
	assert_true(quarter > 1);
	loop_counts(w, base, NULL);
	for (uint32_t k = 1; k <= quarter; k++) {
		th_fill_pattern(a, 8, k);
		th_fill_u8(b, 16, 0xEE);
		assert_int_equal(accdma_send(th_q(w, 0), 1, 9, ka, 0, 8, NULL, 0, &s), 0);
		th_wait_ok(w, s);
		assert_int_equal(accdma_recv(th_q(w, 1), 0, 9, kb, 0, 16, NULL, 0, &r), 0);
		wait_moved(w, r, 8);
		th_check_pattern(b, 8, k, "message");
		th_check_u8(b + 8, 8, 0xEE, "after the message");
		loop_counts(w, c, base);
		assert_int_equal(c[Q_MSG_EAGER], k);
		assert_int_equal(c[Q_MSG_RTS], 0);
		/* one-position messages: the quarter's last one brings the credit */
		assert_int_equal(c[Q_MSG_CREDIT], k < quarter ? 0 : 1);
	}
	th_close(w);
}

/* After one message taken (less than a credit's step), a ring's worth of
 * small sends finds its credit one position short at the last: it asks
 * (CREDIT_ASK, answered by a CREDIT) and goes eagerly. With the ring then
 * really full, the next one goes by rendezvous without asking again. */
static void test_credit_ask(void **state)
{
	enum { DEPTH = 256 };
	static accdma_token s[DEPTH * Q_EAGER_SLOTS_PER_OP + 2], r[DEPTH * Q_EAGER_SLOTS_PER_OP + 2];
	uint64_t base[DRV_LOOP__COUNT], c[DRV_LOOP__COUNT];
	struct accdma_world_opts o;
	struct accdma_device_info info;
	int32_t *a, *b;
	accdma_world *w;
	accdma_key ka, kb;
	int n;

	(void)state;
	th_opts(&o, 2);
	o.transport = ACCDMA_TRANSPORT_LOOP;
	o.queue_depth = DEPTH;
	w = th_open_opts(&o);
	assert_int_equal(accdma_device_info(w, 1, &info), 0);
	n = (int)info.eager_slots;
	assert_int_equal(n, DEPTH * Q_EAGER_SLOTS_PER_OP);
	ka = th_alloc(w, 0, (size_t)(n + 2) * 4, (void **)&a);
	kb = th_alloc(w, 1, (size_t)(n + 2) * 4, (void **)&b);
	for (int k = 0; k < n + 2; k++)
		a[k] = 3000 + k;
	assert_int_equal(accdma_send(th_q(w, 0), 1, 5, ka, 0, 4, NULL, 0, &s[0]), 0);
	th_wait_ok(w, s[0]);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 5, kb, 0, 4, NULL, 0, &r[0]), 0);
	th_wait_ok(w, r[0]);
	assert_int_equal(b[0], 3000);
	loop_counts(w, base, NULL);
	/* n more, a queue's worth at a time: all eager, one question asked */
	for (int at = 1; at <= n; at += DEPTH) {
		for (int k = at; k < at + DEPTH && k <= n; k++)
			assert_int_equal(accdma_send(th_q(w, 0), 1, 5, ka, (uint64_t)k * 4, 4, NULL, 0, &s[k]), 0);
		for (int k = at; k < at + DEPTH && k <= n; k++)
			th_wait_ok(w, s[k]);
	}
	loop_counts(w, c, base);
	assert_int_equal(c[Q_MSG_EAGER], n);
	assert_int_equal(c[Q_MSG_CREDIT_ASK], 1);
	assert_int_equal(c[Q_MSG_CREDIT], 1);
	assert_int_equal(c[Q_MSG_RTS] + c[Q_MSG_STAGED], 0);
	/* the ring is full: the next send waits for its recv, and asks nothing */
	assert_int_equal(accdma_send(th_q(w, 0), 1, 5, ka, (uint64_t)(n + 1) * 4, 4, NULL, 0, &s[n + 1]), 0);
	th_kick(w, 0, 2);
	th_pending(w, s[n + 1]);
	loop_counts(w, c, base);
	assert_int_equal(c[Q_MSG_CREDIT_ASK], 1);
	assert_int_equal(c[Q_MSG_RTS] + c[Q_MSG_STAGED], 1);
	/* every message lands in its recv, in order */
	th_fill_u8(b, (size_t)(n + 2) * 4, 0xEE);
	for (int at = 1; at <= n + 1; at += DEPTH) {
		for (int k = at; k < at + DEPTH && k <= n + 1; k++)
			assert_int_equal(accdma_recv(th_q(w, 1), 0, 5, kb, (uint64_t)k * 4, 4, NULL, 0, &r[k]), 0);
		for (int k = at; k < at + DEPTH && k <= n + 1; k++)
			th_wait_ok(w, r[k]);
	}
	th_wait_ok(w, s[n + 1]);
	for (int k = 1; k <= n + 1; k++)
		assert_int_equal(b[k], 3000 + k);
	th_close(w);
}

/* An engine with nothing to do tells the link before it sleeps, so that
 * whatever watches the link for it (verbs: the poller thread) takes over. */
static void test_idle_told(void **state)
{
	(void)state;
	accdma_world *w = loop_open(2, 1);

	loop_wait_counted(w, NULL, DRV_LOOP_IDLES, DRV_LOOP_IDLES, 1);
	th_close(w);
}

/* Small (eager) and large (rendezvous) sends on one tag land in FIFO order. */
static void test_fifo_across_paths(void **state)
{
	(void)state;
	enum { N = 40 };
	accdma_world *w = loop_open(2, 1);
	uint8_t *a, *b;
	accdma_key ka = th_alloc(w, 0, N * 4096, (void **)&a);
	accdma_key kb = th_alloc(w, 1, N * 4096, (void **)&b);
	accdma_token s[N], r[N];

	th_fill_pattern(a, N * 4096, 9);
	for (int k = 0; k < N; k++)
		assert_int_equal(accdma_send(th_q(w, 0), 1, 3, ka, (uint64_t)k * 4096, k % 3 ? 16 : 3000,
					     NULL, 0, &s[k]),
				 0);
	for (int k = 0; k < N; k++)
		assert_int_equal(accdma_recv(th_q(w, 1), 0, 3, kb, (uint64_t)k * 4096, 4096, NULL, 0, &r[k]), 0);
	th_wait_all_ok(w, r, N);
	th_wait_all_ok(w, s, N);
	for (int k = 0; k < N; k++)
		assert_memory_equal(b + k * 4096, a + k * 4096, k % 3 ? 16 : 3000);
	th_close(w);
}

/* A large send waiting at its far receiver is canceled: the receiver gives
 * it back (CANCELED), and the recv that comes later fails PEER_ERROR. */
static void test_cancel_waiting_send(void **state)
{
	(void)state;
	accdma_world *w = loop_open(2, 1);
	uint64_t base[DRV_LOOP__COUNT], c[DRV_LOOP__COUNT];
	uint8_t *b;
	accdma_key ka = th_alloc(w, 0, BIG, NULL);
	accdma_key kb = th_alloc(w, 1, BIG, (void **)&b);
	accdma_token s, r, s2, r2;

	th_fill_u8(b, BIG, 0x11);
	loop_counts(w, base, NULL);
	assert_int_equal(accdma_send(th_q(w, 0), 1, 2, ka, 0, BIG, NULL, 0, &s), 0);
	th_kick(w, 0, 1);
	th_kick(w, 1, 1); /* the receiver has the announcement */
	assert_int_equal(accdma_cancel(w, s), 0);
	th_wait_st(w, s, ACCDMA_ST_CANCELED);
	loop_counts(w, c, base);
	assert_int_equal(c[Q_MSG_WITHDRAW], 1);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 2, kb, 0, BIG, NULL, 0, &r), 0);
	th_wait_st(w, r, ACCDMA_ST_PEER_ERROR);
	th_check_u8(b, BIG, 0x11, "recv range of a canceled send");
	/* the next pair on the tag matches as usual */
	assert_int_equal(accdma_send(th_q(w, 0), 1, 2, ka, 0, BIG, NULL, 0, &s2), 0);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 2, kb, 0, BIG, NULL, 0, &r2), 0);
	th_wait_ok(w, r2);
	th_wait_ok(w, s2);
	th_close(w);
}

/* A link with no room for another write (every one in flight) starts
 * nothing: the engine tries again, and the cleared send and a one-sided
 * write both land once it has room. */
static void test_writes_refused(void **state)
{
	(void)state;
	accdma_world *w = loop_open(2, 1);
	uint64_t base[DRV_LOOP__COUNT], c[DRV_LOOP__COUNT];
	uint8_t *a, *b;
	accdma_key ka = th_alloc(w, 0, 2 * BIG, (void **)&a);
	accdma_key kb = th_alloc(w, 1, 2 * BIG, (void **)&b);
	accdma_token s, r, x;

	th_fill_pattern(a, 2 * BIG, 8);
	th_fill_u8(b, 2 * BIG, 0x44);
	loop_counts(w, base, NULL);
	assert_int_equal(drv_loop_refuse_writes(w, 3), 0);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 13, kb, 0, BIG, NULL, 0, &r), 0);
	assert_int_equal(accdma_send(th_q(w, 0), 1, 13, ka, 0, BIG, NULL, 0, &s), 0);
	wait_moved(w, s, BIG);
	wait_moved(w, r, BIG);
	assert_memory_equal(b, a, BIG);
	assert_int_equal(drv_loop_refuse_writes(w, 2), 0);
	assert_int_equal(accdma_write(th_q(w, 0), 1, ka, BIG, 4096, kb, BIG, NULL, 0, &x), 0);
	wait_moved(w, x, 4096);
	assert_memory_equal(b + BIG, a + BIG, 4096);
	th_check_u8(b + BIG + 4096, BIG - 4096, 0x44, "after the written range");
	loop_counts(w, c, base);
	assert_int_equal(c[DRV_LOOP_WRITES], 2); /* refused ones are not counted */
	th_close(w);
}

static void test_hostile_peer(void **state)
{
	(void)state;
	accdma_world *w = loop_open(2, 1);
	uint8_t *a, *b;
	accdma_key ka = th_alloc(w, 0, BIG, (void **)&a);
	accdma_key kb = th_alloc(w, 1, BIG, (void **)&b);
	accdma_token r, s, s2, r2;
	struct q_msg m;

	th_fill_pattern(a, BIG, 4);
	th_fill_u8(b, BIG, 0x22);
	/* a recv waits on device 1 for (0, tag 8, seq 0) */
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 8, kb, 0, 4096, NULL, 0, &r), 0);
	th_kick(w, 1, 1);
	/* garbage: unknown type, wrong destination, a source out of range, a
	 * device talking to itself, an eager message past eager_max or out of
	 * position, a finish of a slot out of range, a credit past what was sent */
	m = loop_msg(200, 0, 1);
	assert_int_equal(drv_loop_inject(w, &m), 0);
	m = loop_msg(Q_MSG_FIN, 0, 1);
	m.dst = 0;
	m.src = 1;
	m.queue = 0;
	m.slot = 0;
	m.gen = 12345;
	m.status = ACCDMA_ST_DMA_ERROR;
	assert_int_equal(drv_loop_inject(w, &m), 0);
	m = loop_msg(Q_MSG_RTS, 0, 1);
	m.src = 77;
	assert_int_equal(drv_loop_inject(w, &m), 0);
	m = loop_msg(Q_MSG_RTS, 0, 1);
	m.src = 1;
	assert_int_equal(drv_loop_inject(w, &m), 0);
	m = loop_msg(Q_MSG_EAGER, 0, 1);
	m.len = ACCDMA_EAGER_MAX;
	m.pos = 999;
	assert_int_equal(drv_loop_inject(w, &m), 0);
	m = loop_msg(Q_MSG_FIN, 0, 1);
	m.queue = 9;
	m.slot = 1u << 30;
	assert_int_equal(drv_loop_inject(w, &m), 0);
	m = loop_msg(Q_MSG_CREDIT, 0, 1);
	m.src = 1;
	m.dst = 0;
	m.credit = 1u << 31;
	assert_int_equal(drv_loop_inject(w, &m), 0);
	th_kick(w, 1, 2);
	th_kick(w, 0, 2);
	th_pending(w, r); /* none of it completed the recv */
	th_check_u8(b, BIG, 0x22, "recv range after garbage");

	/* a forged announcement for the recv, naming an op device 0 does not
	 * have: device 0 answers the clearance with a failure, and only the
	 * recv it names fails */
	m = loop_msg(Q_MSG_RTS, 0, 1);
	m.tag = 8;
	m.seq = 0;
	m.key = 0xdead;
	m.length = 64;
	m.queue = 0;
	m.slot = 3;
	m.gen = 1;
	assert_int_equal(drv_loop_inject(w, &m), 0);
	th_wait_st(w, r, ACCDMA_ST_PEER_ERROR);
	th_check_u8(b, BIG, 0x22, "recv range after a forged announcement");

	/* ... and one naming a real key past its bounds */
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 8, kb, 0, 4096, NULL, 0, &r), 0);
	m.seq = 1;
	m.key = ka;
	m.offset = BIG - 16;
	m.length = 64;
	assert_int_equal(drv_loop_inject(w, &m), 0);
	th_wait_st(w, r, ACCDMA_ST_PEER_ERROR);
	th_check_u8(b, BIG, 0x22, "recv range after an out-of-bounds announcement");

	/* the world goes on: a real pair on another tag, eager and rendezvous */
	for (uint64_t len = 8; len <= 8192; len *= 1024) {
		assert_int_equal(accdma_send(th_q(w, 0), 1, 9, ka, 0, len, NULL, 0, &s2), 0);
		assert_int_equal(accdma_recv(th_q(w, 1), 0, 9, kb, 0, len, NULL, 0, &r2), 0);
		th_wait_ok(w, r2);
		th_wait_ok(w, s2);
		assert_memory_equal(b, a, len);
	}
	(void)s;
	th_close(w);
}

/* A clearance from a hostile receiver (device 1) for a waiting send of
 * device 0: one asking for more than the send holds would have the sender
 * hand over its memory past the send, one naming a key the receiver does
 * not have cannot be written; each fails only that send, PEER_ERROR, and
 * nothing is written. */
static void test_hostile_clearance(void **state)
{
	(void)state;
	accdma_world *w = loop_open(2, 1);
	uint64_t base[DRV_LOOP__COUNT], c[DRV_LOOP__COUNT];
	uint8_t *a, *b;
	accdma_key ka = th_alloc(w, 0, 2 * BIG, (void **)&a);
	accdma_key kb = th_alloc(w, 1, 2 * BIG, (void **)&b);
	struct q_msg_cts r = { .queue = 0, .slot = 7, .gen = 99 };
	accdma_token s, s2, r2;
	struct q_msg m;

	th_fill_pattern(a, 2 * BIG, 3);
	th_fill_u8(b, 2 * BIG, 0x33);
	for (int bad_key = 0; bad_key < 2; bad_key++) {
		assert_int_equal(accdma_send(th_q(w, 0), 1, 11, ka, 0, BIG, NULL, 0, &s), 0);
		th_kick(w, 0, 1);
		th_pending(w, s);
		loop_counts(w, base, NULL);
		m = loop_msg_about(Q_MSG_CTS, s);
		m.key = bad_key ? 0xdead : kb;
		m.length = bad_key ? BIG : 2 * BIG;
		m.len = sizeof(r);
		memcpy(m.data, &r, sizeof(r));
		assert_int_equal(drv_loop_inject(w, &m), 0);
		th_wait_st(w, s, ACCDMA_ST_PEER_ERROR);
		loop_counts(w, c, base);
		assert_int_equal(c[DRV_LOOP_WRITES], (uint64_t)bad_key); /* the bad key fails at the write */
		assert_int_equal(c[Q_MSG_FIN], 1); /* the named recv is told */
		th_check_u8(b, 2 * BIG, 0x33, "recv memory after a forged clearance");
		/* the receiver's real recv for that send fails: the send is gone */
		assert_int_equal(accdma_recv(th_q(w, 1), 0, 11, kb, 0, BIG, NULL, 0, &r2), 0);
		th_wait_st(w, r2, ACCDMA_ST_PEER_ERROR);
	}
	/* the world goes on */
	assert_int_equal(accdma_send(th_q(w, 0), 1, 12, ka, 0, BIG, NULL, 0, &s2), 0);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 12, kb, 0, BIG, NULL, 0, &r2), 0);
	th_wait_ok(w, r2);
	th_wait_ok(w, s2);
	assert_memory_equal(b, a, BIG);
	th_close(w);
}

/* Finishes and clearances that only an op's partner may send, in a world of
 * three: a finish for a send whose write is in flight (it ends with its
 * write: finished early, its memory would be read after it completed), one
 * from a device that is not the op's partner, one claiming more bytes than
 * the recv holds, and a clearance and a "no room" from a device that is not
 * the send's receiver. None may complete or fail what it names; each op
 * then ends as its real partner says. */
static void test_hostile_finish(void **state)
{
	(void)state;
	accdma_world *w = loop_open(3, 1);
	uint64_t base[DRV_LOOP__COUNT], cnt[DRV_LOOP__COUNT];
	uint8_t *a, *b, *c;
	accdma_key ka = th_alloc(w, 0, BIG, (void **)&a);
	accdma_key kb = th_alloc(w, 1, BIG, (void **)&b);
	accdma_key kc = th_alloc(w, 2, BIG, (void **)&c);
	struct q_msg_cts named = { .queue = 0, .slot = 0, .gen = 1 };
	struct accdma_op_info info;
	accdma_token s, r;
	struct q_msg m;

	th_fill_pattern(a, BIG, 5);
	th_fill_u8(b, BIG, 0x55);
	th_fill_u8(c, BIG, 0x66);
	/* a send whose write is in flight: a finish for it is dropped */
	assert_int_equal(drv_loop_hold_writes(w, 1), 0);
	loop_counts(w, base, NULL);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 21, kb, 0, BIG, NULL, 0, &r), 0);
	assert_int_equal(accdma_send(th_q(w, 0), 1, 21, ka, 0, BIG, NULL, 0, &s), 0);
	loop_wait_counted(w, base, DRV_LOOP_WRITES, DRV_LOOP_WRITES, 1);
	wait_moved(w, r, BIG); /* its finish went right behind the data */
	m = loop_msg_about(Q_MSG_FIN, s);
	m.length = BIG;
	assert_int_equal(drv_loop_inject(w, &m), 0);
	th_kick(w, 0, 2);
	th_pending(w, s);
	assert_int_equal(drv_loop_hold_writes(w, 0), 0);
	wait_moved(w, s, BIG);
	assert_memory_equal(b, a, BIG);

	/* a recv from device 1: device 2's finish for it, and device 1's
	 * claiming more than it holds */
	th_fill_u8(b, BIG, 0x55);
	assert_int_equal(accdma_recv(th_q(w, 0), 1, 22, ka, 0, 4096, NULL, 0, &r), 0);
	th_kick(w, 0, 1);
	m = loop_msg_about(Q_MSG_FIN, r);
	m.src = 2;
	m.status = ACCDMA_ST_PEER_ERROR;
	assert_int_equal(drv_loop_inject(w, &m), 0);
	th_kick(w, 0, 2);
	th_pending(w, r);
	m.src = 1;
	m.status = ACCDMA_OK;
	m.length = 1ull << 40;
	assert_int_equal(drv_loop_inject(w, &m), 0);
	th_kick(w, 0, 2);
	assert_int_equal(accdma_op_info(w, r, &info), 0);
	assert_int_equal(info.stage, ACCDMA_STAGE_DONE);
	th_assert_st(info.status, ACCDMA_ST_PEER_ERROR);
	assert_int_equal(info.moved, 0);
	th_wait_st(w, r, ACCDMA_ST_PEER_ERROR);

	/* a send to device 1 waiting for its recv: device 2 clears it */
	assert_int_equal(accdma_send(th_q(w, 0), 1, 23, ka, 0, BIG, NULL, 0, &s), 0);
	th_kick(w, 0, 1);
	m = loop_msg_about(Q_MSG_CTS, s);
	m.src = 2;
	m.key = kc;
	m.length = BIG;
	m.len = sizeof(named);
	memcpy(m.data, &named, sizeof(named));
	assert_int_equal(drv_loop_inject(w, &m), 0);
	th_kick(w, 0, 2);
	th_pending(w, s);
	th_check_u8(c, BIG, 0x66, "device 2's memory after its clearance");
	/* ... and says device 1's table had no room for it: not announced again */
	loop_counts(w, base, NULL);
	m = loop_msg_about(Q_MSG_BUSY, s);
	m.src = 2;
	assert_int_equal(drv_loop_inject(w, &m), 0);
	th_kick(w, 0, 2);
	loop_counts(w, cnt, base);
	assert_int_equal(cnt[Q_MSG_RTS], 0);
	th_pending(w, s);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 23, kb, 0, BIG, NULL, 0, &r), 0);
	wait_moved(w, r, BIG);
	wait_moved(w, s, BIG);
	assert_memory_equal(b, a, BIG);
	th_close(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_what_crosses),
		cmocka_unit_test(test_fifo_across_paths),
		cmocka_unit_test(test_credit_pace),
		cmocka_unit_test(test_credit_ask),
		cmocka_unit_test(test_idle_told),
		cmocka_unit_test(test_cancel_waiting_send),
		cmocka_unit_test(test_hostile_clearance),
		cmocka_unit_test(test_writes_refused),
		cmocka_unit_test(test_hostile_peer),
		cmocka_unit_test(test_hostile_finish),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
