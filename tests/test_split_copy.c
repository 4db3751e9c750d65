// SPDX-License-Identifier: MIT
/*
 * test_split_copy.c - large copies shared between a device's engines.
 *
 * With two engines per device, a transfer of 4 MiB or more is cut into 1 MiB
 * chunks that both engines copy. Every byte must land once, in place, for
 * sizes that are not a multiple of the chunk, for two large transfers of one
 * device at once (one copies alone), for both directions at once, and for
 * one-sided writes; bytes around the target must stay untouched.
 */
#include <stdlib.h>

#include "helpers/th.h"

#define GUARD 4096

static void fill_pattern(uint8_t *p, uint64_t len, uint32_t seed)
{
	for (uint64_t i = 0; i < len; i++)
		p[i] = (uint8_t)((i * 2654435761u + seed) >> 13);
}

static void check_pattern(const uint8_t *p, uint64_t len, uint32_t seed)
{
	for (uint64_t i = 0; i < len; i++)
		if (p[i] != (uint8_t)((i * 2654435761u + seed) >> 13))
			fail_msg("byte %llu of %llu differs (seed %u)", (unsigned long long)i,
				 (unsigned long long)len, seed);
}

static void check_guard(const uint8_t *p, uint64_t len)
{
	for (uint64_t i = 0; i < len; i++)
		if (p[i] != 0xee)
			fail_msg("guard byte %llu was overwritten", (unsigned long long)i);
}

static accdma_world *open_two_engines(void)
{
	struct accdma_world_opts o;

	th_opts(&o, 2);
	o.mem_size = 256u << 20;
	o.engines = 2;
	o.queues = 2;
	return th_open_opts(&o);
}

/* Each size crosses the split threshold or a chunk boundary differently. */
static void test_split_sizes(void **state)
{
	static const uint64_t sizes[] = { (4u << 20) - 1, 4u << 20, (4u << 20) + 1,
					  (16u << 20) + 4097, 33u << 20 };
	accdma_world *w = open_two_engines();
	uint64_t max = 33u << 20;
	uint8_t *src, *dst;
	accdma_key ks = th_alloc(w, 0, max, (void **)&src);
	accdma_key kd = th_alloc(w, 1, max + 2 * GUARD, (void **)&dst);

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t len = sizes[i];
		accdma_token s, r;

		fill_pattern(src, len, (uint32_t)i);
		memset(dst, 0xee, max + 2 * GUARD);
		assert_int_equal(accdma_send(th_q(w, 0), 1, 9, ks, 0, len, NULL, 0, &s), 0);
		assert_int_equal(accdma_recv(th_q(w, 1), 0, 9, kd, GUARD, len, NULL, 0, &r), 0);
		th_wait_ok(w, r);
		th_wait_ok(w, s);
		check_guard(dst, GUARD);
		check_pattern(dst + GUARD, len, (uint32_t)i);
		check_guard(dst + GUARD + len, max + GUARD - len);
	}
	th_close(w);
}

/* Both directions and both queues at once: four large transfers, two per device. */
static void test_split_concurrent(void **state)
{
	enum { LEN = 12u << 20 };
	accdma_world *w = open_two_engines();
	uint8_t *src[2], *dst[2];
	accdma_key ks[2], kd[2];
	accdma_token t[8];
	int n = 0;

	(void)state;
	for (int d = 0; d < 2; d++) {
		ks[d] = th_alloc(w, d, 2 * LEN, (void **)&src[d]);
		kd[d] = th_alloc(w, d, 2 * LEN, (void **)&dst[d]);
		fill_pattern(src[d], 2 * LEN, 100u + (uint32_t)d);
	}
	for (int d = 0; d < 2; d++)
		for (int qi = 0; qi < 2; qi++) {
			accdma_queue *q = th_qi(w, d, qi);
			uint64_t off = (uint64_t)qi * LEN;

			assert_int_equal(accdma_send(q, 1 - d, (uint64_t)qi, ks[d], off, LEN, NULL, 0, &t[n++]), 0);
			assert_int_equal(accdma_recv(q, 1 - d, (uint64_t)qi, kd[d], off, LEN, NULL, 0, &t[n++]), 0);
		}
	th_wait_all_ok(w, t, n);
	for (int d = 0; d < 2; d++)
		for (uint64_t i = 0; i < 2ull * LEN; i++)
			if (dst[d][i] != src[1 - d][i])
				fail_msg("device %d byte %llu differs", d, (unsigned long long)i);
	th_close(w);
}

/* One-sided writes take the same path. */
static void test_split_write(void **state)
{
	enum { LEN = (8u << 20) + 123 };
	accdma_world *w = open_two_engines();
	uint8_t *src, *dst;
	accdma_key ks = th_alloc(w, 0, LEN, (void **)&src);
	accdma_key kd = th_alloc(w, 1, LEN + 2 * GUARD, (void **)&dst);
	accdma_token t;

	(void)state;
	fill_pattern(src, LEN, 7);
	memset(dst, 0xee, LEN + 2 * GUARD);
	assert_int_equal(accdma_write(th_q(w, 0), 1, ks, 0, LEN, kd, GUARD, NULL, 0, &t), 0);
	th_wait_ok(w, t);
	check_guard(dst, GUARD);
	check_pattern(dst + GUARD, LEN, 7);
	check_guard(dst + GUARD + LEN, GUARD);
	th_close(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_sizes),
		cmocka_unit_test(test_split_concurrent),
		cmocka_unit_test(test_split_write),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
