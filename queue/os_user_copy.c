// SPDX-License-Identifier: MIT
/*
 * os_user_copy.c - queue/os.h's streaming copy: whole cache lines stored past
 * the cache with the widest store the CPU has (AVX-512, AVX2, SSE2), asked
 * of the CPU at run time, so the same build runs on any x86-64. Sanitizer
 * builds and other CPUs have none (dma/copy.c then copies with memcpy).
 */
#include "queue/os.h"

/* Sanitizers check each byte a copy touches: give them plain memcpy. */
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#include <immintrin.h>

/* Stream 64-byte blocks past the cache, a line in four 16-byte stores (any
 * x86-64); head and tail go through memcpy. */
static void copy_nt_sse2(char *dst, const char *src, uint64_t len)
{
	for (; len >= 64; len -= 64, dst += 64, src += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)src);
		__m128i b = _mm_loadu_si128((const __m128i *)(src + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(src + 32));
		__m128i d = _mm_loadu_si128((const __m128i *)(src + 48));
		_mm_stream_si128((__m128i *)dst, a);
		_mm_stream_si128((__m128i *)(dst + 16), b);
		_mm_stream_si128((__m128i *)(dst + 32), c);
		_mm_stream_si128((__m128i *)(dst + 48), d);
	}
}

/* The same in two 32-byte stores a line. */
__attribute__((target("avx2"))) static void copy_nt_avx2(char *dst, const char *src, uint64_t len)
{
	for (; len >= 64; len -= 64, dst += 64, src += 64) {
		__m256i a = _mm256_loadu_si256((const __m256i *)src);
		__m256i b = _mm256_loadu_si256((const __m256i *)(src + 32));
		_mm256_stream_si256((__m256i *)dst, a);
		_mm256_stream_si256((__m256i *)(dst + 32), b);
	}
}

/* The same with one store a line, four lines a step: the write-combining
 * buffer gets each line whole at once, so fewer partial lines reach memory
 * than with narrower stores. */
__attribute__((target("avx512f"))) static void copy_nt_avx512(char *dst, const char *src, uint64_t len)
{
	for (; len >= 256; len -= 256, dst += 256, src += 256) {
		__m512i a = _mm512_loadu_si512(src);
		__m512i b = _mm512_loadu_si512(src + 64);
		__m512i c = _mm512_loadu_si512(src + 128);
		__m512i d = _mm512_loadu_si512(src + 192);
		_mm512_stream_si512((void *)dst, a);
		_mm512_stream_si512((void *)(dst + 64), b);
		_mm512_stream_si512((void *)(dst + 128), c);
		_mm512_stream_si512((void *)(dst + 192), d);
	}
	for (; len >= 64; len -= 64, dst += 64, src += 64)
		_mm512_stream_si512((void *)dst, _mm512_loadu_si512(src));
}

unsigned int os_copy_stream_widths(void)
{
	unsigned int w = 16;

	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2"))
		w |= 32;
	if (__builtin_cpu_supports("avx512f"))
		w |= 64;
	return w;
}

void os_copy_stream(void *dst, const void *src, uint64_t len, unsigned int width)
{
	if (width == 64)
		copy_nt_avx512(dst, src, len);
	else if (width == 32)
		copy_nt_avx2(dst, src, len);
	else
		copy_nt_sse2(dst, src, len);
	_mm_sfence();
}
#else
unsigned int os_copy_stream_widths(void)
{
	return 0;
}

void os_copy_stream(void *dst, const void *src, uint64_t len, unsigned int width)
{
	(void)width;
	memcpy(dst, src, len);
}
#endif
