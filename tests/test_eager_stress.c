/* SPDX-License-Identifier: MIT */
/*
 * test_eager_stress.c - eager sends at scale: a randomized permutation stress on
 * 2, 4 and 8 devices (lock-step and windowed, the window overflowing the ring:
 * both paths on one tag), and worlds of 64 devices (rings) and 65 (none).
 * The seed is printed; repeat with ACCDMA_TEST_SEED.
 */
#include "eager_th.h"

/* ---- 10. permutation stress ----------------------------------------------------------- */

#define PMAX 8

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

int main(int argc, char **argv)
{
	struct th_cases t = { 0 };

	(void)argc;
	(void)argv;
	seed = th_seed();
	CASE(&t, test_permute_stress, NULL, "test_permute_stress");
	CASE(&t, test_many_devices, NULL, "test_many_devices");
	return th_run_cases("test_eager_stress", &t, NULL, NULL);
}
