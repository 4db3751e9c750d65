// SPDX-License-Identifier: MIT
/*
 * test_copy.c - the memory-copy data mover's large copies.
 *
 * Copies from 1 MiB up stream past the cache in whole 64-byte lines of the
 * destination, with the widest store the CPU has (AVX-512, AVX2 or SSE2);
 * the bytes before the first line boundary and after the last whole line go
 * through memcpy. Each store width the CPU has is tried on lengths and
 * alignments that leave a head, a tail, both or neither, and lengths that are
 * not a multiple of the AVX-512 copy's four-line step: every byte must land,
 * and no byte around the destination may change.
 */
#include <errno.h>
#include <stdlib.h>

#include "helpers/th.h"
#include "dma/dma.h"

#define MIB (1ull << 20)
#define GUARD 256

static void fill(uint8_t *p, uint64_t len, uint32_t seed)
{
	for (uint64_t i = 0; i < len; i++)
		p[i] = (uint8_t)((i * 2654435761u + seed) >> 11);
}

static void check(const uint8_t *p, uint64_t len, uint32_t seed, unsigned int width)
{
	for (uint64_t i = 0; i < len; i++)
		if (p[i] != (uint8_t)((i * 2654435761u + seed) >> 11))
			fail_msg("%u-byte stores: byte %llu of %llu differs", width,
				 (unsigned long long)i, (unsigned long long)len);
}

static void check_guard(const uint8_t *p, uint64_t len, const char *where, unsigned int width)
{
	for (uint64_t i = 0; i < len; i++)
		if (p[i] != 0xee)
			fail_msg("%u-byte stores: guard byte %llu %s the copy was written", width,
				 (unsigned long long)i, where);
}

/* Copy every length at every (source, destination) misalignment with the
 * chosen store width; checks data and guards each time. */
static void copy_all(unsigned int width)
{
	static const uint64_t lens[] = { MIB - 1, MIB, MIB + 1, MIB + 63, MIB + 64, MIB + 255,
					 MIB + 257, 3 * MIB + 17 };
	static const unsigned int offs[][2] = { { 0, 0 }, { 1, 63 }, { 63, 1 }, { 17, 40 } };
	uint64_t cap = (3 * MIB + 17 + 2 * GUARD + 127) & ~63ull; /* aligned_alloc: a multiple */
	uint8_t *src = aligned_alloc(64, cap), *dst = aligned_alloc(64, cap);
	uint32_t seed = width;

	assert_non_null(src);
	assert_non_null(dst);
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		for (size_t o = 0; o < sizeof(offs) / sizeof(offs[0]); o++) {
			uint8_t *s = src + offs[o][0], *d = dst + GUARD + offs[o][1];

			seed += 7919;
			fill(s, lens[l], seed);
			memset(dst, 0xee, cap);
			dma_copy_range(d, s, lens[l]);
			check(d, lens[l], seed, width);
			check_guard(dst, GUARD + offs[o][1], "before", width);
			check_guard(d + lens[l], cap - (uint64_t)(d + lens[l] - dst), "after", width);
		}
	}
	free(src);
	free(dst);
}

/* Each store width the CPU has: at least the 16-byte one wherever the build
 * streams (x86-64 without sanitizers); elsewhere the plain-memcpy path. */
static void test_copy_widths(void **state)
{
	static const unsigned int widths[] = { 16, 32, 64 };
	int tried = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++) {
		int rc = dma_copy_set_width(widths[i]);

		if (rc == -ENOTSUP) {
			print_message("no %u-byte streaming store here: skipped\n", widths[i]);
			continue;
		}
		assert_int_equal(rc, 0);
		copy_all(widths[i]);
		tried++;
	}
	if (!tried)
		copy_all(0); /* memcpy throughout */
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
	assert_true(tried >= 1); /* SSE2 is part of x86-64 */
#endif
	assert_int_equal(dma_copy_set_width(0), tried ? 0 : -ENOTSUP);
}

/* Only the widths there are. */
static void test_copy_bad_width(void **state)
{
	(void)state;
	assert_int_equal(dma_copy_set_width(8), -EINVAL);
	assert_int_equal(dma_copy_set_width(48), -EINVAL);
	assert_int_equal(dma_copy_set_width(128), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy_widths),
		cmocka_unit_test(test_copy_bad_width),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
