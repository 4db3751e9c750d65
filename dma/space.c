// SPDX-License-Identifier: MIT
/*
 * space.c - resolving (device, key, offset, length) to an address.
 *
 * This is where every descriptor's memory is validated: the key must name a
 * live region of that device and the range must lie inside it, before any
 * byte moves.
 */
#include <errno.h>
#include <stdlib.h>

#include "dma/dma.h"

int dma_space_init(struct dma_space *s, uint32_t ndev)
{
	s->ndev = ndev;
	s->base = calloc((size_t)ndev * Q_MAX_REGIONS, sizeof(void *));
	return s->base ? 0 : -ENOMEM;
}

void dma_space_fini(struct dma_space *s)
{
	free(s->base);
	s->base = NULL;
}

enum accdma_status dma_resolve(const struct dma_space *s, const struct q_world_sh *w, uint32_t dev,
			       uint32_t key, uint64_t off, uint64_t len, int allow_empty, void **addr)
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
	size = r->size;
	base = s->base[(size_t)dev * Q_MAX_REGIONS + q_key_index(key)];
	if (!base)
		return ACCDMA_ST_BAD_KEY;
	/* Written so that off + len cannot overflow. */
	if (off > size || len > size - off)
		return ACCDMA_ST_OUT_OF_BOUNDS;
	*addr = base + off;
	return ACCDMA_OK;
}
