// SPDX-License-Identifier: MIT
/*
 * copy.c - the host's copies into and out of staging buffers. From 1 MiB up
 * they stream past the cache (SSE2 non-temporal stores, any x86-64): glibc
 * keeps its streaming for copies near the size of the L3, so a 16 MiB
 * staging copy would otherwise read every destination line first.
 */
#include <stdint.h>
#include <string.h>

#include "atc.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define ATC_NT_THRESHOLD (1u << 20)

void atc_copy(void *dst, const void *src, uint64_t len)
{
	char *d = dst;
	const char *s = src;
	uint64_t head;

	if (len < ATC_NT_THRESHOLD) {
		memcpy(d, s, len);
		return;
	}
	head = (64 - ((uintptr_t)d & 63)) & 63;
	memcpy(d, s, head);
	d += head;
	s += head;
	len -= head;
	for (; len >= 64; len -= 64, d += 64, s += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)s);
		__m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
		__m128i e = _mm_loadu_si128((const __m128i *)(s + 48));

		_mm_stream_si128((__m128i *)d, a);
		_mm_stream_si128((__m128i *)(d + 16), b);
		_mm_stream_si128((__m128i *)(d + 32), c);
		_mm_stream_si128((__m128i *)(d + 48), e);
	}
	memcpy(d, s, len);
	_mm_sfence(); /* the streamed lines are visible before any op names them */
}
#else
void atc_copy(void *dst, const void *src, uint64_t len)
{
	memcpy(dst, src, len);
}
#endif
