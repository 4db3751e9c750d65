/* SPDX-License-Identifier: MIT */
/*
 * test_handoff_ring.c - many large sends at once: permute rings of 2 to 4
 * devices, and a window of rounds posted at once, every byte checked.
 */
#include "handoff_th.h"

/* ---- 3. permute rings ------------------------------------------------------- */

static uint32_t ring_seed(int round, int dev)
{
	return 30000u + (uint32_t)round * 16u + (uint32_t)dev;
}

static void run_ring(const struct cfg *c, int n, int rounds, uint64_t len, struct th_rng *rng)
{
	accdma_world *w = open_cfg(n, c, 2 * len + 4 * G + MIB, 0);
	uint8_t *src[4], *dst[4];
	accdma_key ks[4], kd[4];
	accdma_token t[8];

	for (int d = 0; d < n; d++) {
		ks[d] = ALLOC(w, d, len, &src[d]);
		kd[d] = ALLOC(w, d, len + 2 * G, &dst[d]);
		memset(dst[d], GB, len + 2 * G);
	}
	for (int round = 0; round < rounds; round++) {
		int order[8];

		CTX("ring n=%d engines=%d queues=%d nopoll=%d len %llu round %d", n, c->engines,
		    c->queues, c->nopoll, (unsigned long long)len, round);
		for (int d = 0; d < n; d++)
			pat_fill(src[d], len, ring_seed(round, d));
		for (int i = 0; i < 2 * n; i++)
			order[i] = i;
		th_shuffle(order, 2 * n, rng);
		for (int i = 0; i < 2 * n; i++) {
			int d = order[i] / 2;
			accdma_queue *q = th_qi(w, d, (int)th_rand_below(rng, (uint64_t)c->queues));

			if (order[i] % 2 == 0)
				t[i] = SEND(q, (d + 1) % n, 3, ks[d], 0, len);
			else
				t[i] = RECV(q, (d + n - 1) % n, 3, kd[d], G, len);
		}
		wait_all_ok(w, t, 2 * n);
		for (int d = 0; d < n; d++)
			landed_check(dst[d] + G, len, len, ring_seed(round, (d + n - 1) % n), G);
	}
	th_close(w);
	ctx[0] = 0;
}

static const struct cfg ring_cfgs[] = {
	{ 0, 1, 0 }, { 1, 1, 0 }, { 2, 2, 0 }, { 1, 2, 1 },
};
#define NRING ((int)(sizeof(ring_cfgs) / sizeof(ring_cfgs[0])))
/* A ring of @n devices in configuration @c: one case each (main()). */
struct ring_case {
	int n;
	const struct cfg *c;
};

static void test_permute_ring(void **state)
{
	const struct ring_case *rc = *state;
	struct th_rng rng = { seed ^ 0x3333 ^ ((uint64_t)rc->n << 8) ^ (uint64_t)(rc->c - ring_cfgs) };

	run_ring(rc->c, rc->n, quick ? 3 : 20, 2 * MIB, &rng);
}

/* ---- 4. a window of rounds posted at once ----------------------------------- */

#define WIN 8

static uint32_t win_seed(int k, int dev)
{
	return 40000u + (uint32_t)k * 4u + (uint32_t)dev;
}

static void run_window(const struct cfg *c, uint64_t len, struct th_rng *rng)
{
	uint64_t slot = len + G, dsize = G + WIN * slot;
	accdma_world *w = open_cfg(2, c, WIN * len + dsize + MIB, 64);
	uint8_t *src[2], *dst[2];
	accdma_key ks[2], kd[2];
	accdma_token t[4 * WIN];
	int kinds[4 * WIN], next[4] = { 0, 0, 0, 0 };

	CTX("window engines=%d queues=%d nopoll=%d len %llu", c->engines, c->queues, c->nopoll,
	    (unsigned long long)len);
	for (int d = 0; d < 2; d++) {
		ks[d] = ALLOC(w, d, WIN * len, &src[d]);
		kd[d] = ALLOC(w, d, dsize, &dst[d]);
		memset(dst[d], GB, dsize);
		for (int k = 0; k < WIN; k++)
			pat_fill(src[d] + k * len, len, win_seed(k, d));
	}
	/* every (device, kind) WIN times, randomly interleaved; the k-th of a
	 * (device, kind) in this order is its round k */
	for (int i = 0; i < 4 * WIN; i++)
		kinds[i] = i % 4;
	th_shuffle(kinds, 4 * WIN, rng);
	for (int i = 0; i < 4 * WIN; i++) {
		int d = kinds[i] / 2, k = next[kinds[i]]++;
		accdma_queue *q = th_qi(w, d, (int)th_rand_below(rng, (uint64_t)c->queues));

		if (kinds[i] % 2 == 0)
			t[i] = SEND(q, 1 - d, 4, ks[d], (uint64_t)k * len, len);
		else
			t[i] = RECV(q, 1 - d, 4, kd[d], G + (uint64_t)k * slot, len);
	}
	wait_all_ok(w, t, 4 * WIN);
	for (int d = 0; d < 2; d++) {
		guard_check(dst[d], G, "guard before the first window slot");
		for (int k = 0; k < WIN; k++) {
			CTX("window engines=%d queues=%d nopoll=%d len %llu: device %d slot %d",
			    c->engines, c->queues, c->nopoll, (unsigned long long)len, d, k);
			pat_check(dst[d] + G + k * slot, len, win_seed(k, 1 - d), "window slot");
			guard_check(dst[d] + G + k * slot + len, G, "guard after a window slot");
		}
	}
	th_close(w);
	ctx[0] = 0;
}

static void test_window(void **state)
{
	const struct cfg *c = *state;
	struct th_rng rng = { seed ^ 0x4444 ^ ((uint64_t)c->engines << 8) ^ ((uint64_t)c->queues << 4) ^
			      (uint64_t)c->nopoll };

	run_window(c, quick ? HANDOFF_MIN : 2 * MIB, &rng);
}

static void add_cases(struct th_cases *t)
{
	int n;
	const struct cfg *c = cfgs(&n);

	static struct ring_case rings[3 * NRING];
	int nr = 0;

	for (int d = 2; d <= 4; d++)
		for (int i = 0; i < (quick ? 3 : NRING); i++, nr++) {
			rings[nr] = (struct ring_case){ d, &ring_cfgs[i] };
			CASE(t, test_permute_ring, &rings[nr], "test_permute_ring/%d devices, %s", d,
			     cfg_name(&ring_cfgs[i]));
		}
	for (int i = 0; i < n; i++)
		CASE(t, test_window, &c[i], "test_window/%s", cfg_name(&c[i]));
}

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return handoff_main("test_handoff_ring", add_cases);
}
