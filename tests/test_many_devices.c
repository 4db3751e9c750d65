/* SPDX-License-Identifier: MIT */
/*
 * test_many_devices.c - 64 devices on a 2-core machine.
 *
 *  - the ring permutation: rank r sends int32 [r] x 256 to r+1 and receives
 *    from r-1 (even ranks send first, odd ranks receive first);
 *  - a value relayed around the whole ring through chained recv -> send
 *    dependencies, with no host wait between hops;
 *  - a barrier across all 64 devices, twice in a row.
 * One engine per device and small memory keep it light.
 */
#include "helpers/th.h"

#include <errno.h>

#define N 64
#define COUNT 256

static accdma_world *open64(void)
{
	struct accdma_world_opts o;

	th_opts(&o, N);
	o.engines = 1;
	o.queues = 1;
	o.mem_size = 1u << 20;
	o.queue_depth = 64;
	return th_open_opts(&o);
}

static void test_ring_permutation_64(void **state)
{
	(void)state;
	accdma_world *w = open64();
	static accdma_key sk[N], rk[N];
	static int32_t *sb[N], *rb[N];
	static accdma_token st[N], rt[N];
	uint64_t len = COUNT * sizeof(int32_t);

	for (int r = 0; r < N; r++) {
		sk[r] = th_alloc(w, r, len, (void **)&sb[r]);
		rk[r] = th_alloc(w, r, len, (void **)&rb[r]);
		th_fill_i32(sb[r], COUNT, r);
		th_fill_i32(rb[r], COUNT, -1);
	}
	for (int r = 0; r < N; r++) {
		accdma_queue *q = th_q(w, r);
		int next = (r + 1) % N, prev = (r + N - 1) % N;

		if (r % 2 == 0) {
			assert_int_equal(accdma_send(q, next, 1, sk[r], 0, len, NULL, 0, &st[r]), 0);
			assert_int_equal(accdma_recv(q, prev, 1, rk[r], 0, len, NULL, 0, &rt[r]), 0);
		} else {
			assert_int_equal(accdma_recv(q, prev, 1, rk[r], 0, len, NULL, 0, &rt[r]), 0);
			assert_int_equal(accdma_send(q, next, 1, sk[r], 0, len, NULL, 0, &st[r]), 0);
		}
	}
	for (int r = N - 1; r >= 0; r--) {
		th_wait_ok(w, rt[r]);
		th_wait_ok(w, st[r]);
	}
	for (int r = 0; r < N; r++) {
		th_check_i32(rb[r], COUNT, (r + N - 1) % N, "ring value");
		th_check_i32(sb[r], COUNT, r, "send buffer unchanged");
	}
	th_close(w);
}

/* Rank 0 sends [4242] to 1; each rank forwards what it received to the next
 * (send depending on its recv); rank 0 receives it back from 63. Posted from
 * rank 63 down to 0, so every recv waits for its send. */
static void test_relay_64(void **state)
{
	(void)state;
	accdma_world *w = open64();
	static accdma_key k[N];
	static int32_t *b[N];
	static accdma_token rt[N], st[N];
	uint64_t len = COUNT * sizeof(int32_t);

	for (int r = 0; r < N; r++) {
		k[r] = th_alloc(w, r, 2 * len, (void **)&b[r]);
		th_fill_i32(b[r], 2 * COUNT, -1);
	}
	th_fill_i32(b[0], COUNT, 4242);
	for (int r = N - 1; r >= 0; r--) {
		accdma_queue *q = th_q(w, r);

		if (r == 0) {
			assert_int_equal(accdma_send(q, 1, 2, k[0], 0, len, NULL, 0, &st[0]), 0);
			assert_int_equal(accdma_recv(q, N - 1, 2, k[0], len, len, NULL, 0, &rt[0]), 0);
		} else {
			assert_int_equal(accdma_recv(q, r - 1, 2, k[r], 0, len, NULL, 0, &rt[r]), 0);
			assert_int_equal(accdma_send(q, (r + 1) % N, 2, k[r], 0, len, &rt[r], 1, &st[r]),
					 0);
		}
	}
	th_wait_ok(w, rt[0]);
	for (int r = 0; r < N; r++) {
		if (r)
			th_wait_ok(w, rt[r]);
		th_wait_ok(w, st[r]);
	}
	for (int r = 0; r < N; r++)
		th_check_i32(b[r], COUNT, 4242, "relayed value");
	th_check_i32(b[0] + COUNT, COUNT, 4242, "back at rank 0");
	for (int r = 1; r < N; r++)
		th_check_i32(b[r] + COUNT, COUNT, -1, "second half untouched");
	th_close(w);
}

static void test_barrier_64(void **state)
{
	(void)state;
	accdma_world *w = open64();
	static accdma_token t[2][N];

	for (int round = 0; round < 2; round++) {
		for (int r = 0; r < N - 1; r++)
			assert_int_equal(accdma_barrier(th_q(w, r), NULL, 0, &t[round][r]), 0);
		/* one device has not arrived: nobody passes */
		th_kick(w, 0, 1);
		th_kick(w, N - 2, 1);
		for (int r = 0; r < N - 1; r++)
			th_pending(w, t[round][r]);
		assert_int_equal(accdma_barrier(th_q(w, N - 1), NULL, 0, &t[round][N - 1]), 0);
		for (int r = 0; r < N; r++)
			th_wait_ok(w, t[round][r]);
	}
	th_close(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_permutation_64),
		cmocka_unit_test(test_relay_64),
		cmocka_unit_test(test_barrier_64),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
