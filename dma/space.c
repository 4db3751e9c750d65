// SPDX-License-Identifier: MIT
/*
 * space.c - the address space that resolves (device, key, offset, length)
 * to an address: its table's set-up and tear-down (the resolving itself,
 * on every descriptor's path, is inline in dma.h: dma_resolve()).
 */

#include "dma/dma.h"

int dma_space_init(struct dma_space *s, uint32_t ndev)
{
	s->ndev = ndev;
	s->seg = os_zalloc(ndev, sizeof(*s->seg));
	s->seg_size = os_zalloc(ndev, sizeof(*s->seg_size));
	s->reg = os_zalloc(ndev, sizeof(*s->reg));
	s->pid = os_zalloc(ndev, sizeof(*s->pid));
	if (s->seg && s->seg_size && s->reg && s->pid)
		return 0;
	dma_space_fini(s);
	return -ENOMEM;
}

void dma_space_set_segment(struct dma_space *s, uint32_t dev, void *base, uint64_t size)
{
	s->seg[dev] = (uintptr_t)base;
	s->seg_size[dev] = size;
}

void dma_space_set_pid(struct dma_space *s, uint32_t dev, int32_t pid)
{
	s->pid[dev] = pid;
}

int dma_space_set_reg(struct dma_space *s, uint32_t dev, uint32_t key, void *addr, uint64_t size)
{
	struct dma_reg *g;

	if (!s->reg[dev] && !(s->reg[dev] = os_zalloc(Q_MAX_REGIONS, sizeof(struct dma_reg))))
		return -ENOMEM;
	g = &s->reg[dev][q_key_index(key)];
	g->addr = (uintptr_t)addr;
	g->size = size;
	/* before the shared key: an engine that sees that sees this */
	os_store(&g->key, key, OS_RELEASE);
	return 0;
}

void dma_space_drop_reg(struct dma_space *s, uint32_t dev, uint32_t key)
{
	if (s->reg[dev])
		os_store(&s->reg[dev][q_key_index(key)].key, 0, OS_RELEASE);
}

enum accdma_status dma_resolve_own(const struct dma_space *s, uint32_t dev, uint32_t key, uint64_t off,
				   uint64_t len, void **addr)
{
	const struct dma_reg *g;
	uint64_t size;

	if (!s->reg || !s->reg[dev])
		return ACCDMA_ST_BAD_KEY;
	g = &s->reg[dev][q_key_index(key)];
	if (os_load(&g->key, OS_ACQUIRE) != key)
		return ACCDMA_ST_BAD_KEY;
	size = g->size;
	if (off > size || len > size - off)
		return ACCDMA_ST_OUT_OF_BOUNDS;
	*addr = (void *)(g->addr + off);
	return ACCDMA_OK;
}

enum accdma_status dma_resolve_cma(const struct dma_space *s, const struct q_arena *w, uint32_t dev,
				   uint32_t key, uint64_t off, uint64_t len, uint64_t *raddr, int32_t *pid)
{
	const struct q_region *r;
	uint64_t roff, size;

	if (dev >= s->ndev || key == 0 || !s->pid || !s->pid[dev])
		return ACCDMA_ST_BAD_KEY;
	r = &q_dev(w, dev)->regions[q_key_index(key)];
	if (os_load(&r->key, OS_ACQUIRE) != key ||
	    os_load_plain(&r->registered, OS_RELAXED) != Q_REGION_CMA)
		return ACCDMA_ST_BAD_KEY;
	roff = os_load_plain(&r->offset, OS_RELAXED);
	size = os_load_plain(&r->size, OS_RELAXED);
	if (size > UINT64_MAX - roff)
		return ACCDMA_ST_BAD_KEY;
	if (off > size || len > size - off)
		return ACCDMA_ST_OUT_OF_BOUNDS;
	*raddr = roff + off;
	*pid = s->pid[dev];
	return ACCDMA_OK;
}

void dma_space_fini(struct dma_space *s)
{
	for (uint32_t d = 0; s->reg && d < s->ndev; d++)
		os_free(s->reg[d]);
	os_free(s->reg);
	os_free(s->pid);
	s->reg = NULL;
	s->pid = NULL;
	os_free(s->seg);
	os_free(s->seg_size);
	s->seg = NULL;
	s->seg_size = NULL;
}
