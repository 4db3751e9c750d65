// SPDX-License-Identifier: MIT
/*
 * copy.c - the memory-copy data mover.
 *
 * Small copies go through memcpy. Large ones are copied in chunks with
 * non-temporal stores where the CPU has them: the destination is a buffer a
 * peer will read later, so pulling it through this core's cache only evicts
 * useful lines. The stores are the widest the CPU has (AVX-512, AVX2, SSE2,
 * os_copy_stream()), chosen at the first large copy.
 */
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
		os_store(&fault_countdown[site], nth, OS_SEQ_CST);
}

/* Fault-injection point: true when this call is the armed one. */
static int fault_hit(enum dma_fault_site site)
{
	return dma_fault_countdown(&fault_countdown[site]);
}

/* The bytes before @dst's next 64-byte boundary (a line is streamed whole). */
static uint64_t to_line(const char *dst)
{
	return (64 - ((uintptr_t)dst & 63)) & 63;
}

/* The store width in use (0: none, memcpy): chosen at the first large copy,
 * the widest the CPU has up to DMA_NT_WIDTH bytes (a build may ask for less). */
static _Atomic unsigned int copy_width = UINT32_MAX;

/* The widest width in @have of at most @max bytes, or 0. */
static unsigned int widest(unsigned int have, unsigned int max)
{
	for (unsigned int w = 64; w >= 16; w /= 2)
		if (w <= max && (have & w))
			return w;
	return 0;
}

static unsigned int width_in_use(void)
{
	unsigned int w = os_load(&copy_width, OS_RELAXED);

	if (w == UINT32_MAX) {
		w = widest(os_copy_stream_widths(), DMA_NT_WIDTH);
		os_store(&copy_width, w, OS_RELAXED);
	}
	return w;
}

/* Stream whole lines past the cache; the head up to the first line boundary
 * of @dst and the tail go through memcpy. */
static void copy_nt(char *dst, const char *src, uint64_t len, unsigned int width)
{
	uint64_t head = to_line(dst), body;

	if (head) {
		memcpy(dst, src, head);
		dst += head, src += head, len -= head;
	}
	body = len & ~63ull;
	os_copy_stream(dst, src, body, width);
	if (len > body)
		memcpy(dst + body, src + body, len - body);
}

int dma_copy_set_width(unsigned int width)
{
	unsigned int have = os_copy_stream_widths();

	if (width != 0 && width != 16 && width != 32 && width != 64)
		return -EINVAL;
	if (!have || (width && !(have & width)))
		return -EOPNOTSUPP; /* the CPU or the build has no such store */
	os_store(&copy_width, width ? width : widest(have, DMA_NT_WIDTH), OS_RELAXED);
	return 0;
}

void dma_copy_range(void *dst, const void *src, uint64_t len)
{
	unsigned int width;

	if (dst == src || len == 0)
		return;
	if (len >= DMA_NT_THRESHOLD && (width = width_in_use()) != 0) {
		copy_nt(dst, src, len, width);
		return;
	}
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
