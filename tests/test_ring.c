/* SPDX-License-Identifier: MIT */
/*
 * test_ring.c - ring exchange of int32 [rank] x 100.
 *
 *  - every rank r sends [r] x 100 to r+1 and receives from r-1: rank r ends
 *    with [r-1] x 100 and rank 0 with [N-1] x 100 (N = 2, 3, 4, 8, 16), posted
 *    recv-first on odd ranks and send-first on even ranks.
 *  - a baton travels around the ring N times through chained recv -> send
 *    dependencies with no host wait; every hop lands in its own slot, so the
 *    order of the hops is visible in the data.
 */
#include "helpers/th.h"

#include <errno.h>

#define COUNT 100
#define MAXN 16

static void test_ring_exchange(void **state)
{
	int n = *(int *)*state;
	accdma_world *w = th_open(n);
	accdma_key sk[MAXN], rk[MAXN];
	int32_t *sb[MAXN], *rb[MAXN];
	accdma_token st[MAXN], rt[MAXN];
	uint64_t len = COUNT * sizeof(int32_t);

	for (int r = 0; r < n; r++) {
		sk[r] = th_alloc(w, r, len, (void **)&sb[r]);
		rk[r] = th_alloc(w, r, len + 64, (void **)&rb[r]);
		th_fill_i32(sb[r], COUNT, r);
		th_fill_i32(rb[r], COUNT + 16, -7);
	}
	for (int r = 0; r < n; r++) {
		accdma_queue *q = th_q(w, r);
		int next = (r + 1) % n, prev = (r + n - 1) % n;

		if (r % 2) {
			assert_int_equal(accdma_recv(q, prev, 1, rk[r], 0, len, NULL, 0, &rt[r]), 0);
			assert_int_equal(accdma_send(q, next, 1, sk[r], 0, len, NULL, 0, &st[r]), 0);
		} else {
			assert_int_equal(accdma_send(q, next, 1, sk[r], 0, len, NULL, 0, &st[r]), 0);
			assert_int_equal(accdma_recv(q, prev, 1, rk[r], 0, len, NULL, 0, &rt[r]), 0);
		}
	}
	for (int r = 0; r < n; r++) {
		th_wait_ok(w, rt[r]);
		th_wait_ok(w, st[r]);
	}
	for (int r = 0; r < n; r++) {
		th_check_i32(rb[r], COUNT, (r + n - 1) % n, "ring value");
		th_check_i32(rb[r] + COUNT, 16, -7, "bytes after the recv range");
		th_check_i32(sb[r], COUNT, r, "send buffer unchanged");
	}
	th_close(w);
}

/* The baton: int32 slot per hop. Rank 0 starts with [12345]; hop h goes from
 * rank h % N to (h+1) % N and lands in slot h of the receiver; the sender
 * forwards slot h-1 (what it received on the previous hop), depending on that
 * recv's token. After LAPS*N hops rank 0's last slot holds the baton and
 * every slot written holds it too; slots never written stay -1. */
static void test_ring_baton(void **state)
{
	int n = *(int *)*state;
	enum { LAPS = 3 };
	int hops = LAPS * n;
	accdma_world *w = th_open(n);
	accdma_key k[MAXN];
	int32_t *b[MAXN];
	accdma_token recv_tok[LAPS * MAXN], send_tok[LAPS * MAXN];
	uint64_t slot = COUNT * sizeof(int32_t);

	for (int r = 0; r < n; r++) {
		k[r] = th_alloc(w, r, slot * (uint64_t)(hops + 1), (void **)&b[r]);
		th_fill_i32(b[r], (size_t)COUNT * (size_t)(hops + 1), -1);
	}
	/* rank 0 keeps the initial baton in the extra last slot */
	th_fill_i32(b[0] + (size_t)COUNT * (size_t)hops, COUNT, 12345);

	/* post every rank's program, last rank first; nothing is waited on */
	for (int r = n - 1; r >= 0; r--) {
		accdma_queue *q = th_q(w, r);

		for (int h = 0; h < hops; h++) {
			int from = h % n, to = (h + 1) % n;

			if (to == r)
				assert_int_equal(accdma_recv(q, from, 2, k[r], slot * (uint64_t)h, slot,
							     NULL, 0, &recv_tok[h]),
						 0);
			if (from == r) {
				/* forward what arrived on hop h-1 (rank 0's first hop: the baton) */
				uint64_t src = h == 0 ? slot * (uint64_t)hops : slot * (uint64_t)(h - 1);
				const accdma_token *dep = h == 0 ? NULL : &recv_tok[h - 1];

				/* on hop h, rank r's recv for hop h-1 was posted before (h-1 < h) */
				assert_int_equal(accdma_send(q, to, 2, k[r], src, slot, dep, h ? 1 : 0,
							     &send_tok[h]),
						 0);
			}
		}
	}
	th_wait_ok(w, recv_tok[hops - 1]);
	for (int h = 0; h < hops; h++) {
		if (h != hops - 1)
			th_wait_ok(w, recv_tok[h]);
		th_wait_ok(w, send_tok[h]);
	}
	for (int r = 0; r < n; r++)
		for (int h = 0; h < hops; h++) {
			int32_t want = ((h + 1) % n == r) ? 12345 : -1;

			th_check_i32(b[r] + (size_t)COUNT * (size_t)h, COUNT, want, "baton slot");
		}
	th_close(w);
}

int main(void)
{
	static int n2 = 2, n3 = 3, n4 = 4, n8 = 8, n16 = 16;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(test_ring_exchange, &n2),
		cmocka_unit_test_prestate(test_ring_exchange, &n3),
		cmocka_unit_test_prestate(test_ring_exchange, &n4),
		cmocka_unit_test_prestate(test_ring_exchange, &n8),
		cmocka_unit_test_prestate(test_ring_exchange, &n16),
		cmocka_unit_test_prestate(test_ring_baton, &n2),
		cmocka_unit_test_prestate(test_ring_baton, &n3),
		cmocka_unit_test_prestate(test_ring_baton, &n8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
