// SPDX-License-Identifier: MIT
/*
 * copy.c - the memory-copy data mover.
 *
 * Small copies go through memcpy. Large ones are copied in chunks with
 * non-temporal stores where the CPU has them: the destination is a buffer a
 * peer will read later, so pulling it through this core's cache only evicts
 * useful lines. The stores are the widest the CPU has (AVX-512, AVX2, SSE2),
 * chosen at run time: the same build runs on any x86-64.
 */
#include <stdatomic.h>
#include <string.h>
#include <errno.h>
/* Sanitizers check each byte a copy touches: give them plain memcpy. */
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define DMA_HAVE_NT 1
#include <immintrin.h>
#endif

#include "dma/dma.h"

/* Copies from this size up stream past the cache. A build may move it
 * (-DDMA_NT_THRESHOLD=...): below it a round over hot buffers gains more from
 * its destination staying in the cache than a cold stream gains from streaming. */
#ifndef DMA_NT_THRESHOLD
#define DMA_NT_THRESHOLD (1u << 20)
#endif
/* The widest streaming store used, in bytes: 64 (AVX-512), 32 (AVX2) or 16. */
#ifndef DMA_NT_WIDTH
#define DMA_NT_WIDTH 64
#endif

static _Atomic uint32_t fault_countdown[DMA_FAULT__COUNT];

void dma_fault_arm(enum dma_fault_site site, uint32_t nth)
{
	if (site < DMA_FAULT__COUNT)
		atomic_store(&fault_countdown[site], nth);
}

/* Fault-injection point: true when this call is the armed one. */
static int fault_hit(enum dma_fault_site site)
{
	return dma_fault_countdown(&fault_countdown[site]);
}

#ifdef DMA_HAVE_NT
/* The bytes before @dst's next 64-byte boundary (a line is streamed whole). */
static uint64_t to_line(const char *dst)
{
	return (64 - ((uintptr_t)dst & 63)) & 63;
}

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

typedef void (*copy_lines_fn)(char *dst, const char *src, uint64_t len);

static _Atomic(copy_lines_fn) copy_chosen;

/* The copy with the widest streaming store of at most @width bytes that this
 * CPU has, or NULL if it has none that narrow (width < 16). */
static copy_lines_fn copy_pick(unsigned int width)
{
	__builtin_cpu_init();
	if (width >= 64 && __builtin_cpu_supports("avx512f"))
		return copy_nt_avx512;
	if (width >= 32 && __builtin_cpu_supports("avx2"))
		return copy_nt_avx2;
	return width >= 16 ? copy_nt_sse2 : NULL;
}

/* The copy in use: chosen at the first large copy, up to DMA_NT_WIDTH bytes
 * a store (a build may ask for narrower ones). Only whole lines are copied;
 * the caller copies the rest. */
static copy_lines_fn copy_lines(void)
{
	copy_lines_fn fn = atomic_load_explicit(&copy_chosen, memory_order_relaxed);

	if (!fn) {
		fn = copy_pick(DMA_NT_WIDTH);
		atomic_store_explicit(&copy_chosen, fn, memory_order_relaxed);
	}
	return fn;
}

/* Stream whole lines past the cache; the head up to the first line boundary
 * of @dst and the tail go through memcpy. */
static void copy_nt(char *dst, const char *src, uint64_t len)
{
	uint64_t head = to_line(dst), body;

	if (head) {
		memcpy(dst, src, head);
		dst += head, src += head, len -= head;
	}
	body = len & ~63ull;
	copy_lines()(dst, src, body);
	_mm_sfence();
	if (len > body)
		memcpy(dst + body, src + body, len - body);
}
#endif

int dma_copy_set_width(unsigned int width)
{
#ifdef DMA_HAVE_NT
	copy_lines_fn fn;

	if (width != 0 && width != 16 && width != 32 && width != 64)
		return -EINVAL;
	fn = copy_pick(width ? width : DMA_NT_WIDTH);
	if ((width == 64 && fn != copy_nt_avx512) || (width == 32 && fn != copy_nt_avx2))
		return -ENOTSUP; /* the CPU has no such store */
	atomic_store_explicit(&copy_chosen, fn, memory_order_relaxed);
	return 0;
#else
	return width != 0 && width != 16 && width != 32 && width != 64 ? -EINVAL : -ENOTSUP;
#endif
}

void dma_copy_range(void *dst, const void *src, uint64_t len)
{
	if (dst == src || len == 0)
		return;
#ifdef DMA_HAVE_NT
	if (len >= DMA_NT_THRESHOLD) {
		copy_nt(dst, src, len);
		return;
	}
#endif
	memcpy(dst, src, len);
}

int dma_copy(void *dst, const void *src, uint64_t len)
{
	if (fault_hit(DMA_FAULT_COPY))
		return -EIO;
	dma_copy_range(dst, src, len);
	return 0;
}

int dma_zero(void *dst, uint64_t len)
{
	if (fault_hit(DMA_FAULT_ZERO))
		return -EIO;
	if (len)
		memset(dst, 0, len);
	return 0;
}
