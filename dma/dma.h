/* SPDX-License-Identifier: MIT */
/*
 * dma.h - the data movers behind one interface.
 *
 * An address space (struct dma_space) turns (device, region key) into an
 * address in this process; the movers copy or fill between such addresses.
 * The local transport fills the table directly; a transport whose peers live
 * in other processes fills it by mapping their segments.
 */
#ifndef ACCDMA_DMA_H
#define ACCDMA_DMA_H

#include <stdint.h>

#include "queue/queue.h"

/**
 * struct dma_space - where each device's regions are mapped in this process.
 * @ndev: devices. @base: ndev * Q_MAX_REGIONS addresses (NULL: not mapped here).
 * A base is written before the region's key is published (release) and read
 * after the key is checked (acquire).
 * @seg/@seg_size: NULL, or (shm) per device the address and size of its
 * memory segment as mapped in this process. A device with a segment has its
 * regions at seg + region offset; the offset and size come from the shared
 * region table, which another process writes, so they are checked against
 * this process's own @seg_size before use.
 */
struct dma_space {
	uint32_t ndev;
	void **base;
	char **seg;
	uint64_t *seg_size;
};

/**
 * dma_space_set_segments() - give an address space per-device memory segments (shm).
 * @s: the space. @seg/@seg_size: ndev entries each; the space takes ownership
 * of both arrays (freed by dma_space_fini(), not the segments themselves).
 */
void dma_space_set_segments(struct dma_space *s, char **seg, uint64_t *seg_size);

/**
 * dma_space_init() - allocate an empty address space.
 * @s: the space. @ndev: devices.
 * Return: 0 or -ENOMEM.
 */
int dma_space_init(struct dma_space *s, uint32_t ndev);

/** dma_space_fini() - free an address space (not the memory it points to). */
void dma_space_fini(struct dma_space *s);

/* shm: the region lives in its device's segment. Offset and size were written
 * by the device's process: read each once and keep the range inside what this
 * process mapped, whatever they say. */
static inline char *dma_segment_base(const struct dma_space *s, const struct q_region *r,
				     uint32_t dev, uint64_t *size)
{
	uint64_t seg_size = s->seg_size[dev];
	uint64_t roff = __atomic_load_n(&r->offset, __ATOMIC_RELAXED);

	*size = __atomic_load_n(&r->size, __ATOMIC_RELAXED);
	if (!s->seg[dev] || roff > seg_size || *size > seg_size - roff)
		return NULL;
	return s->seg[dev] + roff;
}

/**
 * dma_resolve() - check (key, offset, length) against a device's region table and map it.
 * @s: the space. @w: the arena. @dev: the device. @key/@off/@len: the range.
 * @allow_empty: accept a zero length (library-internal ops).
 * @addr: on success, the address of the range (NULL for an empty range).
 * This is where every descriptor's memory is validated: the key must name a
 * live region of that device and the range must lie inside it, before any
 * byte moves. Inline: an engine resolves every descriptor it reads, and the
 * call (eight arguments, one on the stack) cost a third of the check.
 * Return: ACCDMA_OK, ACCDMA_ST_BAD_LENGTH, ACCDMA_ST_BAD_KEY or ACCDMA_ST_OUT_OF_BOUNDS.
 */
static inline enum accdma_status dma_resolve(const struct dma_space *s, const struct q_arena *w,
					     uint32_t dev, uint32_t key, uint64_t off, uint64_t len,
					     int allow_empty, void **addr)
{
	const struct q_region *r;
	uint64_t size;
	char *base;

	*addr = NULL;
	if (len == 0) {
		if (allow_empty)
			return ACCDMA_OK;
		return ACCDMA_ST_BAD_LENGTH;
	}
	if (dev >= s->ndev || key == 0)
		return ACCDMA_ST_BAD_KEY;
	r = &q_dev(w, dev)->regions[q_key_index(key)];
	if (atomic_load_explicit(&r->key, memory_order_acquire) != key)
		return ACCDMA_ST_BAD_KEY;
	if (s->seg) {
		base = dma_segment_base(s, r, dev, &size);
	} else {
		size = r->size;
		base = s->base[(size_t)dev * Q_MAX_REGIONS + q_key_index(key)];
	}
	if (!base)
		return ACCDMA_ST_BAD_KEY;
	/* Written so that off + len cannot overflow. */
	if (off > size || len > size - off)
		return ACCDMA_ST_OUT_OF_BOUNDS;
	*addr = base + off;
	return ACCDMA_OK;
}

/**
 * dma_copy() - move @len bytes from @src to @dst in chunks.
 * @dst/@src: the ranges (may not overlap unless equal). @len: bytes.
 * Large copies use non-temporal stores so they do not evict the caches of
 * the cores that will compute on the data.
 * Return: 0, or -EIO if an injected fault failed the transfer before any byte moved.
 */
int dma_copy(void *dst, const void *src, uint64_t len);

/**
 * dma_copy_range() - copy one chunk of a larger transfer, with no fault point
 * (the transfer's dma_copy() call is the fault point).
 * @dst/@src/@len: the chunk.
 */
void dma_copy_range(void *dst, const void *src, uint64_t len);

/**
 * dma_copy_set_width() - choose the streaming store large copies use (tests
 * and measurements; by default the widest the CPU has, up to DMA_NT_WIDTH).
 * @width: 16 (SSE2), 32 (AVX2) or 64 (AVX-512) bytes a store, 0 for the default.
 * Return: 0; -ENOTSUP if the CPU lacks that store or the build streams
 * nothing (sanitizers, not x86-64); -EINVAL for any other @width.
 */
int dma_copy_set_width(unsigned int width);

/**
 * dma_zero() - fill @len bytes at @dst with zeros.
 * Return: 0, or -EIO on an injected fault.
 */
int dma_zero(void *dst, uint64_t len);

/**
 * dma_mem_alloc() - allocate zeroed device memory on a NUMA node.
 * @size: bytes. @node: NUMA node, or -1 for no placement.
 * Return: the memory, or NULL.
 */
void *dma_mem_alloc(uint64_t size, int node);

/** dma_mem_free() - free memory from dma_mem_alloc(). */
void dma_mem_free(void *p, uint64_t size);

/**
 * dma_mem_bind() - place not yet touched memory (e.g. a shared segment) on a NUMA node.
 * @p/@size: page-aligned range. @node: NUMA node, or -1 for no placement.
 * For a shared mapping the policy belongs to the memory, whichever process touches it.
 */
void dma_mem_bind(void *p, uint64_t size, int node);

/**
 * dma_mem_release() - give back the pages of a range of a shared mapping; it reads as zeros again.
 * @p/@size: page-aligned range.
 */
void dma_mem_release(void *p, uint64_t size);

/**
 * dma_numa_nodes() - the number of NUMA nodes memory can be placed on.
 * Return: at least 1.
 */
int dma_numa_nodes(void);

/**
 * dma_fault_countdown() - the shared logic of every fault-injection point: a
 * countdown armed with n fires on the n-th pass after arming, once.
 * @c: the site's countdown (0: disarmed).
 * Return: 1 on the pass that fires.
 */
static inline int dma_fault_countdown(_Atomic uint32_t *c)
{
	uint32_t n = atomic_load_explicit(c, memory_order_relaxed);

	while (n) {
		if (atomic_compare_exchange_weak(c, &n, n - 1))
			return n == 1;
	}
	return 0;
}

/* Fault-injection sites of the data movers (the firmware's are in fw_stub/fw.h). */
enum dma_fault_site { DMA_FAULT_COPY = 0, DMA_FAULT_ZERO, DMA_FAULT__COUNT };

/**
 * dma_fault_arm() - make the @nth next call at @site fail (1 = the next one); 0 disarms.
 */
void dma_fault_arm(enum dma_fault_site site, uint32_t nth);

#endif /* ACCDMA_DMA_H */
