/* SPDX-License-Identifier: MIT */
/*
 * test_far_busy.c - a far receiver whose rendezvous table has no room
 * answers "busy" (fw_stub/msg.c), over the loop transport:
 *
 *  - the send announces itself again, the receiver sees the same send and
 *    keeps its entry, and the pair completes with its data;
 *  - the answer carries the receiver's own credit, not the one the
 *    announcement carried: a table filled by a forging peer must not let an
 *    honest sender write over messages its receiver has not read.
 */
#include "loop_th.h"

#include "driver/internal.h"

#define BIG (2 * Q_STAGE_BYTES) /* past a staging slot: these sends go by rendezvous */

/* The table never fills in a world this small (it holds every op that can
 * wait), so the answer is forged here. */
static void test_busy_answer(void **state)
{
	(void)state;
	accdma_world *w = loop_open(2, 1);
	uint64_t base[DRV_LOOP__COUNT], c[DRV_LOOP__COUNT];
	uint8_t *a, *b;
	accdma_key ka = th_alloc(w, 0, BIG, (void **)&a);
	accdma_key kb = th_alloc(w, 1, BIG, (void **)&b);
	accdma_token s, r;
	struct q_msg m;

	th_fill_pattern(a, BIG, 6);
	loop_counts(w, base, NULL);
	assert_int_equal(accdma_send(th_q(w, 0), 1, 4, ka, 0, BIG, NULL, 0, &s), 0);
	th_kick(w, 0, 1);
	th_kick(w, 1, 1);
	m = loop_msg_about(Q_MSG_BUSY, s);
	assert_int_equal(drv_loop_inject(w, &m), 0);
	th_kick(w, 0, 2);
	th_kick(w, 1, 2);
	loop_counts(w, c, base);
	assert_int_equal(c[Q_MSG_RTS], 2);
	th_pending(w, s);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 4, kb, 0, BIG, NULL, 0, &r), 0);
	th_wait_ok(w, r);
	th_wait_ok(w, s);
	assert_memory_equal(b, a, BIG);
	loop_counts(w, c, base);
	assert_int_equal(c[Q_MSG_CTS], 1);
	assert_int_equal(c[Q_MSG_FIN], 1);
	assert_int_equal(c[DRV_LOOP_WRITES], 1);
	th_close(w);
}

enum { DEPTH = 8, SMALL_TAG = 5, BACK_TAG = 6, BIG_TAG = 9, FORGED_TAG = 1000 };

/* @n 4-byte sends from @src to @dst on @tag out of @k[first..first+n)
 * (@recv 0), or the recvs on @dst that take them into @k (@recv 1), a
 * queue's worth at a time, each ending @st. */
static void smalls(accdma_world *w, int recv, int src, int dst, uint64_t tag, accdma_key k, int first, int n,
		   enum accdma_status st)
{
	accdma_token t[DEPTH];

	for (int at = first; at < first + n; at += DEPTH) {
		int m = first + n - at < DEPTH ? first + n - at : DEPTH;

		for (int i = 0; i < m; i++) {
			uint64_t off = (uint64_t)(at + i) * 4;

			if (recv)
				assert_int_equal(accdma_recv(th_q(w, dst), (uint32_t)src, tag, k, off, 4, NULL, 0, &t[i]), 0);
			else
				assert_int_equal(accdma_send(th_q(w, src), (uint32_t)dst, tag, k, off, 4, NULL, 0, &t[i]), 0);
		}
		th_wait_all_st(w, t, m, st);
	}
}

/* Device 0 has filled its ring at device 1, which read none of it, and has
 * itself read half a ring of device 1's messages: every message of device 0
 * says "half a ring" in its credit field. Device 2 then fills device 1's
 * table with forged announcements, and device 0's large send is answered
 * busy. Taking the announcement's own field back as credit, device 0 would
 * see room and write its next small message over the first one device 1
 * has not read. It must go by rendezvous, and every message must land. */
static void test_busy_carries_own_credit(void **state)
{
	struct accdma_world_opts o;
	struct accdma_device_info info;
	uint64_t base[DRV_LOOP__COUNT], c[DRV_LOOP__COUNT];
	accdma_token s, s2, r;
	int32_t *a, *b, *back;
	uint8_t *big_a, *big_b;
	accdma_world *w;
	accdma_key ka, kb, kback, kbig_a, kbig_b;
	struct q_msg m;
	uint32_t cap;
	int n;

	(void)state;
	th_opts(&o, 3);
	o.transport = ACCDMA_TRANSPORT_LOOP;
	o.queues = 1;
	o.queue_depth = DEPTH;
	w = th_open_opts(&o);
	assert_int_equal(accdma_device_info(w, 1, &info), 0);
	n = (int)info.eager_slots;
	cap = w->a.g.rdv_cap;
	ka = th_alloc(w, 0, (size_t)(n + 1) * 4, (void **)&a);
	kb = th_alloc(w, 1, (size_t)(n + 1) * 4, (void **)&b);
	kback = th_alloc(w, 0, (size_t)n * 4, (void **)&back);
	kbig_a = th_alloc(w, 0, BIG, (void **)&big_a);
	kbig_b = th_alloc(w, 1, BIG, (void **)&big_b);
	for (int k = 0; k <= n; k++) {
		a[k] = 3000 + k;
		b[k] = -1;
	}
	th_fill_pattern(big_a, BIG, 8);

	/* half a ring from device 1 to device 0, read there */
	smalls(w, 0, 1, 0, BACK_TAG, kb, 0, n / 2, ACCDMA_OK);
	smalls(w, 1, 1, 0, BACK_TAG, kback, 0, n / 2, ACCDMA_OK);
	/* a full ring from device 0 to device 1, nothing read */
	loop_counts(w, base, NULL);
	smalls(w, 0, 0, 1, SMALL_TAG, ka, 0, n, ACCDMA_OK);
	loop_counts(w, c, base);
	assert_int_equal(c[Q_MSG_EAGER], n);

	/* device 2's forged announcements fill device 1's table; the last one
	 * finds it full already */
	for (uint32_t i = 0; i < cap; i++) {
		m = loop_msg(Q_MSG_RTS, 2, 1);
		m.tag = FORGED_TAG + i;
		m.length = BIG;
		m.gen = 0x7ffe;
		assert_int_equal(drv_loop_inject(w, &m), 0);
	}
	/* device 0's large send is answered busy, which device 0 has taken
	 * once it announces the send again */
	loop_counts(w, base, NULL);
	assert_int_equal(accdma_send(th_q(w, 0), 1, BIG_TAG, kbig_a, 0, BIG, NULL, 0, &s), 0);
	loop_wait_counted(w, base, Q_MSG_RTS, Q_MSG_RTS, 2);
	th_pending(w, s);

	/* the next small send finds no room, asks, and is told the truth */
	loop_counts(w, base, NULL);
	assert_int_equal(accdma_send(th_q(w, 0), 1, SMALL_TAG, ka, (uint64_t)n * 4, 4, NULL, 0, &s2), 0);
	loop_wait_counted(w, base, Q_MSG_EAGER, Q_MSG_CREDIT_ASK, 1);
	loop_counts(w, c, base);
	assert_int_equal(c[Q_MSG_EAGER], 0);
	assert_int_equal(c[Q_MSG_CREDIT_ASK], 1);
	th_pending(w, s2);

	/* the forged sends' recvs empty the table (device 2 has no such
	 * sends: each recv fails), and every honest message lands in order */
	for (uint32_t at = 0; at < cap - 1; at += DEPTH) {
		accdma_token t[DEPTH];
		int k = cap - 1 - at < DEPTH ? (int)(cap - 1 - at) : DEPTH;

		for (int i = 0; i < k; i++)
			assert_int_equal(accdma_recv(th_q(w, 1), 2, FORGED_TAG + at + (uint32_t)i, kbig_b, 0, BIG, NULL,
						     0, &t[i]), 0);
		th_wait_all_st(w, t, k, ACCDMA_ST_PEER_ERROR);
	}
	smalls(w, 1, 0, 1, SMALL_TAG, kb, 0, n + 1, ACCDMA_OK);
	th_wait_ok(w, s2);
	for (int k = 0; k <= n; k++)
		assert_int_equal(b[k], 3000 + k);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, BIG_TAG, kbig_b, 0, BIG, NULL, 0, &r), 0);
	th_wait_ok(w, r);
	th_wait_ok(w, s);
	assert_memory_equal(big_b, big_a, BIG);
	th_close(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_busy_answer),
		cmocka_unit_test(test_busy_carries_own_credit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
