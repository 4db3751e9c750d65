/* SPDX-License-Identifier: MIT */
/*
 * dma.h - the data movers behind one interface.
 *
 * An address space (struct dma_space) turns (device, region key) into an
 * address in this process; the movers copy or fill between such addresses.
 */
#ifndef ACCDMA_DMA_H
#define ACCDMA_DMA_H

#include "queue/queue.h"

/**
 * struct dma_space - where each device's regions are mapped in this process.
 * @ndev: devices.
 * @seg/@seg_size: per device, the base its regions' offsets count from, and
 * how far from it a region may reach. The transport sets them when the world
 * opens: a device whose memory is a segment mapped here (shm) has its
 * segment's address and size; where regions are plain addresses in this
 * process (local), the base is 0 and the reach the whole address space; a
 * device mapped nowhere here reaches nothing. So one check resolves every
 * region of every transport: the offset and size come from the shared region
 * table, which another process may write, and are kept inside the reach.
 */
struct dma_space {
	uint32_t ndev;
	uintptr_t *seg;
	uint64_t *seg_size;
	struct dma_reg **reg; /* per device (NULL until it registers memory here) */
	int32_t *pid;         /* per device: its process, from the kernel (shm) */
};

/**
 * struct dma_reg - caller memory registered here, over a shared arena
 * (Q_REGION_CMA): the owner's private record of the range. The shared
 * region table names the range too, for other processes, but the owner
 * never takes an address from it.
 */
struct dma_reg {
	Q_ATOMIC(uint32_t) key;
	uintptr_t addr;
	uint64_t size;
};

/**
 * dma_space_init() - allocate an address space in which no device is mapped.
 * @s: the space. @ndev: devices.
 * Return: 0 or -ENOMEM.
 */
int dma_space_init(struct dma_space *s, uint32_t ndev);

/**
 * dma_space_set_segment() - say where device @dev's regions are in this process.
 * @s: the space. @dev: the device (< ndev). @base: what region offsets count
 * from (NULL: they are addresses). @size: how far a region may reach from @base.
 */
void dma_space_set_segment(struct dma_space *s, uint32_t dev, void *base, uint64_t size);

/**
 * dma_space_set_pid() - say which process drives device @dev (shm: from
 * SO_PEERCRED, so a peer cannot point cross-memory attach at a third process).
 */
void dma_space_set_pid(struct dma_space *s, uint32_t dev, int32_t pid);

/**
 * dma_space_set_reg() - record caller memory registered on device @dev of
 * this process under @key (before the key is published in the arena).
 * @addr/@size: the range. Return: 0, or -ENOMEM.
 */
int dma_space_set_reg(struct dma_space *s, uint32_t dev, uint32_t key, void *addr, uint64_t size);

/** dma_space_drop_reg() - forget what dma_space_set_reg() recorded under @key. */
void dma_space_drop_reg(struct dma_space *s, uint32_t dev, uint32_t key);

/**
 * dma_resolve_own() - dma_resolve() of a Q_REGION_CMA region: from this
 * process's own record if it registered it, else BAD_KEY (another
 * process's memory: dma_resolve_cma()).
 */
enum accdma_status dma_resolve_own(const struct dma_space *s, uint32_t dev, uint32_t key, uint64_t off,
				   uint64_t len, void **addr);

/**
 * dma_resolve_cma() - the range (@key, @off, @len) of another process's
 * registered memory (Q_REGION_CMA), for cross-memory attach.
 * @s/@w/@dev: as dma_resolve(). @raddr: the address in that process.
 * @pid: the process (0: unknown: the range is unusable).
 * The address comes from shared memory: a lie reaches only that process's
 * own memory (the kernel checks it there), never ours.
 * Return: ACCDMA_OK, BAD_KEY or OUT_OF_BOUNDS.
 */
enum accdma_status dma_resolve_cma(const struct dma_space *s, const struct q_arena *w, uint32_t dev,
				   uint32_t key, uint64_t off, uint64_t len, uint64_t *raddr, int32_t *pid);

/** dma_space_fini() - free an address space (not the memory it points to). */
void dma_space_fini(struct dma_space *s);

/**
 * dma_resolve() - check (key, offset, length) against a device's region table and map it.
 * @s: the space. @w: the arena. @dev: the device. @key/@off/@len: the range.
 * @allow_empty: accept a zero length (library-internal ops).
 * @addr: on success, the address of the range (NULL for an empty range).
 * This is where every descriptor's memory is validated: the key must name a
 * live region of that device, the region must lie inside what the device
 * reaches in this process, and the range inside the region, before any byte
 * moves. The region's offset and size are read once each. Inline: an engine
 * resolves every descriptor it reads.
 * Return: ACCDMA_OK, ACCDMA_ST_BAD_LENGTH, ACCDMA_ST_BAD_KEY or ACCDMA_ST_OUT_OF_BOUNDS.
 */
static inline enum accdma_status dma_resolve(const struct dma_space *s, const struct q_arena *w,
					     uint32_t dev, uint32_t key, uint64_t off, uint64_t len,
					     int allow_empty, void **addr)
{
	const struct q_region *r;
	uint64_t size, roff, reach;

	*addr = NULL;
	if (len == 0) {
		if (allow_empty)
			return ACCDMA_OK;
		return ACCDMA_ST_BAD_LENGTH;
	}
	if (dev >= s->ndev || key == 0)
		return ACCDMA_ST_BAD_KEY;
	r = &q_dev(w, dev)->regions[q_key_index(key)];
	if (os_load(&r->key, OS_ACQUIRE) != key)
		return ACCDMA_ST_BAD_KEY;
	if (os_load_plain(&r->registered, OS_RELAXED) == Q_REGION_CMA)
		return dma_resolve_own(s, dev, key, off, len, addr);
	roff = os_load_plain(&r->offset, OS_RELAXED);
	size = os_load_plain(&r->size, OS_RELAXED);
	reach = s->seg_size[dev];
	if (roff > reach || size > reach - roff)
		return ACCDMA_ST_BAD_KEY;
	/* Written so that off + len cannot overflow. */
	if (off > size || len > size - off)
		return ACCDMA_ST_OUT_OF_BOUNDS;
	*addr = (void *)(s->seg[dev] + roff + off);
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
	uint32_t n = os_load(c, OS_RELAXED);

	while (n) {
		if (os_cas_weak(c, &n, n - 1, OS_SEQ_CST, OS_SEQ_CST))
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
