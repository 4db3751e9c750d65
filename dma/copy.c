// SPDX-License-Identifier: MIT
/*
 * copy.c - the memory-copy data mover.
 *
 * Small copies go through memcpy. Large ones are copied in chunks with
 * non-temporal stores where the CPU has them: the destination is a buffer a
 * peer will read later, so pulling it through this core's cache only evicts
 * useful lines.
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
 * (-DDMA_NT_THRESHOLD=...; BENCHMARKS.md measures with it out of reach). */
#ifndef DMA_NT_THRESHOLD
#define DMA_NT_THRESHOLD (1u << 20)
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
/* Stream 64-byte blocks past the cache; head and tail go through memcpy. */
static void copy_nt(char *dst, const char *src, uint64_t len)
{
	uint64_t head = (64 - ((uintptr_t)dst & 63)) & 63;

	if (head) {
		memcpy(dst, src, head);
		dst += head, src += head, len -= head;
	}
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
	_mm_sfence();
	if (len)
		memcpy(dst, src, len);
}
#endif

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
