/* SPDX-License-Identifier: MIT */
/*
 * test_stage.c - medium sends to far devices staged in their receiver's
 * slots (fw_stub/stage.c), over the loop transport.
 *
 *  - what crosses: one write and one message out, one finish back; send
 *    first and recv first; data, byte counts and the bytes around checked;
 *  - FIFO by sequence number across the eager, staged and rendezvous paths;
 *  - slots run out: the sends past them go by rendezvous, in order, and
 *    the finishes give the slots back for the next batch;
 *  - a recv smaller than its staged send: both TRUNCATED, nothing written;
 *  - a recv canceled before its staged send lands: the send fails
 *    PEER_ERROR, and its slot comes back;
 *  - a staged send canceled while it waits: withdrawn, its recv PEER_ERROR;
 *  - a hostile peer: staged messages naming no slot, too long, empty, or a
 *    slot still full are dropped; the world goes on working;
 *  - a receiver's table full: staged messages wait unfiled until recvs
 *    make room, and every recv completes.
 */
#include "loop_th.h"

#include <unistd.h>

#include "queue/queue.h"

#define MED 3000 /* above eager_max, within a slot */
#define SLOTS (q_stage_slots(2))

/* Device 0 sends @len bytes from the start of @ka on @tag, device 1 takes
 * them into the start of @kb (room for @cap) with the recv posted after:
 * both complete OK. */
static void pair_ok(accdma_world *w, uint64_t tag, accdma_key ka, uint64_t len, accdma_key kb, uint64_t cap)
{
	accdma_token s, r;

	assert_int_equal(accdma_send(th_q(w, 0), 1, tag, ka, 0, len, NULL, 0, &s), 0);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, tag, kb, 0, cap, NULL, 0, &r), 0);
	th_wait_ok(w, r);
	th_wait_ok(w, s);
}

static void test_what_crosses(void **state)
{
	(void)state;
	accdma_world *w = loop_open(2, 1);
	uint8_t *a, *b;
	accdma_key ka = th_alloc(w, 0, 2 * Q_STAGE_BYTES, (void **)&a);
	accdma_key kb = th_alloc(w, 1, 2 * Q_STAGE_BYTES, (void **)&b);
	uint64_t base[DRV_LOOP__COUNT], c[DRV_LOOP__COUNT];
	accdma_token s, r;
	uint64_t sizes[] = { ACCDMA_EAGER_MAX_DEFAULT + 1, MED, Q_STAGE_BYTES };

	assert_true(SLOTS >= 4);
	th_fill_pattern(a, 2 * Q_STAGE_BYTES, 1);
	for (int k = 0; k < 6; k++) {
		uint64_t len = sizes[k % 3];
		int recv_first = k >= 3;

		th_fill_u8(b, 2 * Q_STAGE_BYTES, 0xEE);
		loop_counts(w, base, NULL);
		if (recv_first) {
			assert_int_equal(accdma_recv(th_q(w, 1), 0, 6, kb, 16, Q_STAGE_BYTES, NULL, 0, &r), 0);
			th_kick(w, 1, 1);
		}
		assert_int_equal(accdma_send(th_q(w, 0), 1, 6, ka, 0, len, NULL, 0, &s), 0);
		if (!recv_first) {
			th_kick(w, 0, 1);
			th_kick(w, 1, 1);
			th_pending(w, s); /* a staged send waits for its recv, as a rendezvous does */
			assert_int_equal(accdma_recv(th_q(w, 1), 0, 6, kb, 16, Q_STAGE_BYTES, NULL, 0, &r), 0);
		}
		th_wait_ok(w, r);
		th_wait_ok(w, s);
		th_check_u8(b, 16, 0xEE, "before the recv range");
		th_check_pattern(b + 16, len, 1, "staged data");
		th_check_u8(b + 16 + len, 2 * Q_STAGE_BYTES - 16 - len, 0xEE, "after the data");
		loop_counts(w, c, base);
		assert_int_equal(c[Q_MSG_STAGED], 1);
		assert_int_equal(c[DRV_LOOP_WRITES], 1);
		assert_int_equal(c[Q_MSG_FIN], 1);
		assert_int_equal(c[Q_MSG_RTS] + c[Q_MSG_CTS] + c[Q_MSG_EAGER], 0);
	}
	/* one byte past a slot goes by rendezvous */
	loop_counts(w, base, NULL);
	pair_ok(w, 7, ka, Q_STAGE_BYTES + 1, kb, 2 * Q_STAGE_BYTES);
	th_check_pattern(b, Q_STAGE_BYTES + 1, 1, "rendezvous data");
	loop_counts(w, c, base);
	assert_int_equal(c[Q_MSG_STAGED], 0);
	assert_int_equal(c[Q_MSG_RTS], 1);
	assert_int_equal(c[Q_MSG_CTS], 1);
	th_close(w);
}

/* Eager, staged and rendezvous sends on one tag, recvs posted after: each
 * recv gets its own send's bytes, whichever path each took. */
static void test_fifo_across_paths(void **state)
{
	(void)state;
	enum { N = 30, STRIDE = 2 * Q_STAGE_BYTES };
	accdma_world *w = loop_open(2, 1);
	uint8_t *a, *b;
	accdma_key ka = th_alloc(w, 0, (uint64_t)N * STRIDE, (void **)&a);
	accdma_key kb = th_alloc(w, 1, (uint64_t)N * STRIDE, (void **)&b);
	uint64_t base[DRV_LOOP__COUNT], c[DRV_LOOP__COUNT];
	uint64_t len[3] = { 16, MED, Q_STAGE_BYTES + 100 };
	accdma_token s[N], r[N];

	th_fill_pattern(a, (uint64_t)N * STRIDE, 9);
	th_fill_u8(b, (uint64_t)N * STRIDE, 0xEE);
	loop_counts(w, base, NULL);
	for (int k = 0; k < N; k++)
		assert_int_equal(accdma_send(th_q(w, 0), 1, 3, ka, (uint64_t)k * STRIDE, len[k % 3], NULL, 0, &s[k]),
				 0);
	th_kick(w, 0, 1);
	for (int k = 0; k < N; k++)
		assert_int_equal(accdma_recv(th_q(w, 1), 0, 3, kb, (uint64_t)k * STRIDE, STRIDE, NULL, 0, &r[k]), 0);
	th_wait_all_ok(w, r, N);
	th_wait_all_ok(w, s, N);
	for (int k = 0; k < N; k++) {
		assert_memory_equal(b + (size_t)k * STRIDE, a + (size_t)k * STRIDE, len[k % 3]);
		th_check_u8(b + (size_t)k * STRIDE + len[k % 3], 8, 0xEE, "after a recv's data");
	}
	loop_counts(w, c, base);
	assert_int_equal(c[Q_MSG_EAGER], N / 3);
	assert_int_equal(c[Q_MSG_STAGED], N / 3);
	assert_int_equal(c[Q_MSG_RTS], N / 3);
	th_close(w);
}

/* More medium sends than slots before any recv: the first SLOTS are staged,
 * the rest announced; all land in order; their finishes give the slots back,
 * so the next batch is staged again. */
static void test_slots_run_out(void **state)
{
	(void)state;
	enum { N = Q_STAGE_SLOTS_MAX + 8 };
	accdma_world *w = loop_open(2, 1);
	uint8_t *a, *b;
	accdma_key ka = th_alloc(w, 0, (uint64_t)N * 4096, (void **)&a);
	accdma_key kb = th_alloc(w, 1, (uint64_t)N * 4096, (void **)&b);
	uint64_t base[DRV_LOOP__COUNT], c[DRV_LOOP__COUNT];
	accdma_token s[N], r[N];

	assert_true(SLOTS < N);
	for (int round = 0; round < 2; round++) {
		th_fill_pattern(a, (uint64_t)N * 4096, 20 + round);
		th_fill_u8(b, (uint64_t)N * 4096, 0xEE);
		loop_counts(w, base, NULL);
		for (int k = 0; k < N; k++)
			assert_int_equal(accdma_send(th_q(w, 0), 1, 4, ka, (uint64_t)k * 4096, 4096, NULL, 0, &s[k]), 0);
		th_kick(w, 0, 1);
		loop_counts(w, c, base);
		assert_int_equal(c[Q_MSG_STAGED], SLOTS);
		assert_int_equal(c[Q_MSG_RTS], N - SLOTS);
		for (int k = 0; k < N; k++)
			assert_int_equal(accdma_recv(th_q(w, 1), 0, 4, kb, (uint64_t)k * 4096, 4096, NULL, 0, &r[k]), 0);
		th_wait_all_ok(w, r, N);
		th_wait_all_ok(w, s, N);
		assert_memory_equal(b, a, (size_t)N * 4096);
	}
	th_close(w);
}

/* A staged send longer than its recv: both TRUNCATED, the recv's range
 * untouched; its slot comes back, and the next pair is staged and lands. */
static void test_truncated(void **state)
{
	(void)state;
	accdma_world *w = loop_open(2, 1);
	uint8_t *a, *b;
	accdma_key ka = th_alloc(w, 0, Q_STAGE_BYTES, (void **)&a);
	accdma_key kb = th_alloc(w, 1, Q_STAGE_BYTES, (void **)&b);
	uint64_t base[DRV_LOOP__COUNT], c[DRV_LOOP__COUNT];
	accdma_token s, r;

	th_fill_pattern(a, Q_STAGE_BYTES, 5);
	th_fill_u8(b, Q_STAGE_BYTES, 0xEE);
	for (uint32_t k = 0; k < SLOTS + 1; k++) { /* more than the slots: each came back */
		for (int recv_first = 0; recv_first < 2; recv_first++) {
			loop_counts(w, base, NULL);
			if (recv_first)
				assert_int_equal(accdma_recv(th_q(w, 1), 0, 2, kb, 0, MED - 1, NULL, 0, &r), 0);
			assert_int_equal(accdma_send(th_q(w, 0), 1, 2, ka, 0, MED, NULL, 0, &s), 0);
			if (!recv_first)
				assert_int_equal(accdma_recv(th_q(w, 1), 0, 2, kb, 0, MED - 1, NULL, 0, &r), 0);
			th_wait_st(w, r, ACCDMA_ST_TRUNCATED);
			th_wait_st(w, s, ACCDMA_ST_TRUNCATED);
			loop_counts(w, c, base);
			assert_int_equal(c[Q_MSG_STAGED], 1);
		}
	}
	th_check_u8(b, Q_STAGE_BYTES, 0xEE, "recv range after truncations");
	pair_ok(w, 2, ka, MED, kb, MED);
	assert_memory_equal(b, a, MED);
	th_close(w);
}

/* Cancel on either side. A recv canceled before its staged send lands: the
 * send fails PEER_ERROR (its finish gives the slot back). A staged send
 * canceled while it waits: the receiver gives it back (CANCELED), and the
 * recv that comes for it fails PEER_ERROR. Either way the slots all come
 * back: a full batch is staged again after. */
static void test_cancel(void **state)
{
	(void)state;
	accdma_world *w = loop_open(2, 1);
	uint8_t *a, *b;
	accdma_key ka = th_alloc(w, 0, (uint64_t)SLOTS * 4096, (void **)&a);
	accdma_key kb = th_alloc(w, 1, (uint64_t)SLOTS * 4096, (void **)&b);
	uint64_t base[DRV_LOOP__COUNT], c[DRV_LOOP__COUNT];
	accdma_token s[Q_STAGE_SLOTS_MAX], r[Q_STAGE_SLOTS_MAX];

	th_fill_pattern(a, (uint64_t)SLOTS * 4096, 7);
	th_fill_u8(b, (uint64_t)SLOTS * 4096, 0x11);
	for (uint32_t k = 0; k < SLOTS; k++) {
		assert_int_equal(accdma_recv(th_q(w, 1), 0, 5, kb, 0, 4096, NULL, 0, &r[0]), 0);
		th_kick(w, 1, 1);
		assert_int_equal(accdma_cancel(w, r[0]), 0);
		th_wait_st(w, r[0], ACCDMA_ST_CANCELED);
		assert_int_equal(accdma_send(th_q(w, 0), 1, 5, ka, 0, MED, NULL, 0, &s[0]), 0);
		th_wait_st(w, s[0], ACCDMA_ST_PEER_ERROR);

		loop_counts(w, base, NULL);
		assert_int_equal(accdma_send(th_q(w, 0), 1, 5, ka, 0, MED, NULL, 0, &s[0]), 0);
		th_kick(w, 0, 1);
		th_kick(w, 1, 1);
		assert_int_equal(accdma_cancel(w, s[0]), 0);
		th_wait_st(w, s[0], ACCDMA_ST_CANCELED);
		assert_int_equal(accdma_recv(th_q(w, 1), 0, 5, kb, 0, 4096, NULL, 0, &r[0]), 0);
		th_wait_st(w, r[0], ACCDMA_ST_PEER_ERROR);
		loop_counts(w, c, base);
		assert_int_equal(c[Q_MSG_STAGED], 1);
		assert_int_equal(c[Q_MSG_WITHDRAW], 1);
	}
	th_check_u8(b, (uint64_t)SLOTS * 4096, 0x11, "recv ranges of canceled pairs");
	loop_counts(w, base, NULL);
	for (uint32_t k = 0; k < SLOTS; k++)
		assert_int_equal(accdma_send(th_q(w, 0), 1, 5, ka, (uint64_t)k * 4096, 4096, NULL, 0, &s[k]), 0);
	for (uint32_t k = 0; k < SLOTS; k++)
		assert_int_equal(accdma_recv(th_q(w, 1), 0, 5, kb, (uint64_t)k * 4096, 4096, NULL, 0, &r[k]), 0);
	th_wait_all_ok(w, r, (int)SLOTS);
	th_wait_all_ok(w, s, (int)SLOTS);
	assert_memory_equal(b, a, (size_t)SLOTS * 4096);
	loop_counts(w, c, base);
	assert_int_equal(c[Q_MSG_STAGED], SLOTS);
	th_close(w);
}

/* A staged message as far device 0 would send it to device 1. */
static struct q_msg staged_msg(uint64_t tag, uint64_t seq, uint32_t slot, uint64_t length)
{
	struct q_msg m = loop_msg(Q_MSG_STAGED, 0, 1);

	m.tag = tag;
	m.seq = seq;
	m.pos = slot;
	m.length = length;
	return m;
}

/* Staged messages from a hostile device 0: a slot out of range, a length
 * past a slot or of zero, a slot named again while it is full. None
 * completes the recv they name with data, and the world goes on. */
static void test_hostile_peer(void **state)
{
	(void)state;
	accdma_world *w = loop_open(2, 1);
	uint8_t *a, *b;
	accdma_key ka = th_alloc(w, 0, Q_STAGE_BYTES, (void **)&a);
	accdma_key kb = th_alloc(w, 1, Q_STAGE_BYTES, (void **)&b);
	accdma_token r;
	struct q_msg m;

	th_fill_pattern(a, Q_STAGE_BYTES, 4);
	th_fill_u8(b, Q_STAGE_BYTES, 0x22);
	/* a recv waits on device 1 for (0, tag 8, seq 0) */
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 8, kb, 0, 4096, NULL, 0, &r), 0);
	th_kick(w, 1, 1);
	m = staged_msg(8, 0, SLOTS, 100);
	assert_int_equal(drv_loop_inject(w, &m), 0);
	m = staged_msg(8, 0, 0, Q_STAGE_BYTES + 1);
	assert_int_equal(drv_loop_inject(w, &m), 0);
	m = staged_msg(8, 0, 0, 0);
	assert_int_equal(drv_loop_inject(w, &m), 0);
	m = staged_msg(8, 0, 0, 100);
	m.queue = 1000; /* names no op a finish could reach */
	assert_int_equal(drv_loop_inject(w, &m), 0);
	th_kick(w, 1, 2);
	th_pending(w, r);
	/* a well-formed one for a recv of a tag nobody sends on: it meets the
	 * recv (whatever the slot holds, 100 bytes), and its finish names no
	 * op of device 0 */
	m = staged_msg(8, 0, 3, 100);
	m.gen = 77;
	assert_int_equal(drv_loop_inject(w, &m), 0);
	th_wait_ok(w, r);
	th_check_u8(b + 100, 4096 - 100, 0x22, "past the forged message");
	/* the same slot named twice before the first is taken: the second is dropped */
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 9, kb, 0, 4096, NULL, 0, &r), 0);
	th_kick(w, 1, 1);
	m = staged_msg(10, 0, 5, 64);
	assert_int_equal(drv_loop_inject(w, &m), 0); /* waits: no recv on tag 10 */
	m = staged_msg(9, 0, 5, 64);
	assert_int_equal(drv_loop_inject(w, &m), 0);
	th_kick(w, 1, 2);
	th_pending(w, r);
	assert_int_equal(accdma_cancel(w, r), 0);
	th_wait_st(w, r, ACCDMA_ST_CANCELED);

	/* the world goes on: real pairs on another tag, every path */
	for (uint64_t len = 8; len <= Q_STAGE_BYTES; len *= 16) {
		th_fill_u8(b, Q_STAGE_BYTES, 0x22);
		pair_ok(w, 11, ka, len, kb, Q_STAGE_BYTES);
		assert_memory_equal(b, a, len);
	}
	th_close(w);
}

/* A receiver whose table is full when staged messages come keeps them
 * (unfiled) and files them as recvs take entries out: with a table of 63
 * entries (a queue of 8 ops), 64 staged messages on 64 tags, nobody
 * receiving yet, leave one unfiled; every recv then completes, with the
 * length its message names. */
static void test_table_full(void **state)
{
	(void)state;
	enum { N = 64 };
	struct accdma_world_opts o;
	accdma_world *w;
	accdma_key kb;
	accdma_token r[8];
	uint64_t bytes = 0; /* set by each wait; LTO cannot see that through the asserts */

	th_opts(&o, 2);
	o.transport = ACCDMA_TRANSPORT_LOOP;
	o.queues = 1;
	o.queue_depth = 8;
	w = th_open_opts(&o);
	kb = th_alloc(w, 1, 4096, NULL);
	assert_true(SLOTS >= N);
	for (int k = 0; k < N; k++) {
		struct q_msg m = staged_msg(100 + (uint64_t)k, 0, (uint32_t)k, 16 + (uint64_t)k % 32);

		assert_int_equal(drv_loop_inject(w, &m), 0);
	}
	th_kick(w, 1, 2);
	for (int k = 0; k < N; k += 8) {
		for (int j = 0; j < 8; j++)
			assert_int_equal(accdma_recv(th_q(w, 1), 0, 100 + (uint64_t)(k + j), kb, 64 * (uint64_t)j, 64,
						     NULL, 0, &r[j]), 0);
		for (int j = 0; j < 8; j++) {
			enum accdma_status st = ACCDMA_ST__COUNT;

			assert_int_equal(accdma_wait_bytes(w, r[j], TH_HANG_MS, &st, &bytes), 0);
			th_assert_st(st, ACCDMA_OK);
			assert_int_equal(bytes, 16 + (uint64_t)(k + j) % 32);
		}
	}
	th_close(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_what_crosses),
		cmocka_unit_test(test_fifo_across_paths),
		cmocka_unit_test(test_slots_run_out),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_hostile_peer),
		cmocka_unit_test(test_table_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
