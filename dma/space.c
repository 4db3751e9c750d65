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

/* shm: the region lives in its device's segment. Offset and size were written
 * by the device's process: read each once and keep the range inside what this
 * process mapped, whatever they say. */
static char *segment_base(const struct dma_space *s, const struct q_region *r, uint32_t dev,
			  uint64_t *size)
{
	uint64_t seg_size = s->seg_size[dev];
	uint64_t roff = __atomic_load_n(&r->offset, __ATOMIC_RELAXED);

	*size = __atomic_load_n(&r->size, __ATOMIC_RELAXED);
	if (!s->seg[dev] || roff > seg_size || *size > seg_size - roff)
		return NULL;
	return s->seg[dev] + roff;
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
	if (s->seg) {
		base = segment_base(s, r, dev, &size);
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
