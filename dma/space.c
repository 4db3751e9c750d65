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
	if (s->seg && s->seg_size)
		return 0;
	dma_space_fini(s);
	return -ENOMEM;
}

void dma_space_set_segment(struct dma_space *s, uint32_t dev, void *base, uint64_t size)
{
	s->seg[dev] = (uintptr_t)base;
	s->seg_size[dev] = size;
}

void dma_space_fini(struct dma_space *s)
{
	os_free(s->seg);
	os_free(s->seg_size);
	s->seg = NULL;
	s->seg_size = NULL;
}
