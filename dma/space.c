// SPDX-License-Identifier: MIT
/*
 * space.c - the address space that resolves (device, key, offset, length)
 * to an address: its table's set-up and tear-down (the resolving itself,
 * on every descriptor's path, is inline in dma.h: dma_resolve()).
 */
#include <errno.h>
#include <stdlib.h>

#include "dma/dma.h"

int dma_space_init(struct dma_space *s, uint32_t ndev)
{
	s->ndev = ndev;
	s->seg = NULL;
	s->seg_size = NULL;
	s->base = calloc((size_t)ndev * Q_MAX_REGIONS, sizeof(void *));
	return s->base ? 0 : -ENOMEM;
}

void dma_space_set_segments(struct dma_space *s, char **seg, uint64_t *seg_size)
{
	s->seg = seg;
	s->seg_size = seg_size;
}

void dma_space_fini(struct dma_space *s)
{
	free(s->base);
	free(s->seg);
	free(s->seg_size);
	s->base = NULL;
	s->seg = NULL;
	s->seg_size = NULL;
}
