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

/* One case per store width (*state): a width the CPU lacks is skipped. */
static void test_copy_width(void **state)
{
	unsigned int width = *(const unsigned int *)*state;
	int rc = dma_copy_set_width(width);

	if (rc == -ENOTSUP) {
		print_message("no %u-byte streaming store here: skipped\n", width);
		skip();
	}
	assert_int_equal(rc, 0);
	copy_all(width);
	assert_int_equal(dma_copy_set_width(0), 0);
}

/* The default: wherever the build streams (x86-64 without sanitizers) the
 * 16-byte store exists (SSE2 is part of x86-64) and the widest one is chosen;
 * elsewhere every copy is memcpy. */
static void test_copy_default(void **state)
{
	(void)state;
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
	assert_int_equal(dma_copy_set_width(16), 0);
	assert_int_equal(dma_copy_set_width(0), 0);
	copy_all(0);
#else
	assert_int_equal(dma_copy_set_width(16), -ENOTSUP);
	assert_int_equal(dma_copy_set_width(0), -ENOTSUP);
	copy_all(0); /* memcpy throughout */
#endif
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
	static const unsigned int widths[] = { 16, 32, 64 };
	struct th_cases cases = { 0 };

	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++)
		th_case(&cases, test_copy_width, (void *)&widths[i], "test_copy_width/%u-byte stores",
			widths[i]);
	th_case(&cases, test_copy_default, NULL, "test_copy_default");
	th_case(&cases, test_copy_bad_width, NULL, "test_copy_bad_width");
	return th_run_cases("test_copy", &cases, NULL, NULL);
}
