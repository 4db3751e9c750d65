// SPDX-License-Identifier: MIT
/*
 * heap.c - the shm transport's device memory: each local device's part of
 * this process's segment, handed out first fit in whole pages, sorted
 * extents merged on free. The extents are this process's own.
 */
#include <stdlib.h>
#include <string.h>

#include "driver/internal.h"
#include "driver/shm/shm.h"

#define SHM_PAGE 4096ull

static uint64_t page_up(uint64_t v)
{
	return (v + SHM_PAGE - 1) & ~(SHM_PAGE - 1);
}


static struct drv_heap *heap_of(struct accdma_world *w, int dev)
{
	return &drv_shm(w)->heaps[dev - w->first_local];
}

/* Each local device's allocator starts as one free extent: all its memory. */
int drv_shm_heaps_init(struct accdma_world *w)
{
	struct drv_shm *s = drv_shm(w);

	s->heaps = calloc((size_t)(unsigned)w->nlocal, sizeof(*s->heaps));
	if (!s->heaps)
		return -ENOMEM;
	for (int i = 0; i < w->nlocal; i++) {
		pthread_mutex_init(&s->heaps[i].lock, NULL);
		s->heaps[i].n = 1;
		s->heaps[i].fr[0].off = 0;
		s->heaps[i].fr[0].len = s->stride;
	}
	return 0;
}

/**
 * drv_shm_alloc() - carve @size zeroed bytes out of a local device's memory.
 * @w: the world. @dev: a local device. @size: bytes (> 0).
 * @off: the offset in the device's memory (for the region table). @addr: its address here.
 * Return: 0, or -ENOMEM.
 */
int drv_shm_alloc(struct accdma_world *w, int dev, uint64_t size, uint64_t *off, void **addr)
{
	struct drv_heap *h;
	uint64_t len = page_up(size);
	int rc = -ENOMEM;

	if (len < size)
		return -ENOMEM;
	h = heap_of(w, dev);
	pthread_mutex_lock(&h->lock);
	for (uint32_t i = 0; i < h->n; i++) {
		if (h->fr[i].len < len)
			continue;
		*off = h->fr[i].off;
		h->fr[i].off += len;
		h->fr[i].len -= len;
		if (!h->fr[i].len) {
			memmove(&h->fr[i], &h->fr[i + 1], (h->n - i - 1) * sizeof(h->fr[0]));
			h->n--;
		}
		*addr = (char *)w->space.seg[dev] + *off;
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&h->lock);
	return rc;
}

/**
 * drv_shm_free() - give a range from drv_shm_alloc() back; its pages are released.
 * @w: the world. @dev: a local device. @off/@addr/@size: as allocated.
 */
void drv_shm_free(struct accdma_world *w, int dev, uint64_t off, void *addr, uint64_t size)
{
	struct drv_heap *h = heap_of(w, dev);
	uint64_t len = page_up(size);
	uint32_t i;

	(void)addr;
	dma_mem_release((char *)w->space.seg[dev] + off, len);
	pthread_mutex_lock(&h->lock);
	for (i = 0; i < h->n && h->fr[i].off < off; i++)
		;
	/* Merge with the previous and/or next extent, else insert (at most one
	 * extent per region plus one, so the array never overflows). */
	if (i > 0 && h->fr[i - 1].off + h->fr[i - 1].len == off) {
		h->fr[i - 1].len += len;
		if (i < h->n && h->fr[i - 1].off + h->fr[i - 1].len == h->fr[i].off) {
			h->fr[i - 1].len += h->fr[i].len;
			memmove(&h->fr[i], &h->fr[i + 1], (h->n - i - 1) * sizeof(h->fr[0]));
			h->n--;
		}
	} else if (i < h->n && off + len == h->fr[i].off) {
		h->fr[i].off = off;
		h->fr[i].len += len;
	} else if (h->n < sizeof(h->fr) / sizeof(h->fr[0])) {
		memmove(&h->fr[i + 1], &h->fr[i], (h->n - i) * sizeof(h->fr[0]));
		h->fr[i].off = off;
		h->fr[i].len = len;
		h->n++;
	}
	pthread_mutex_unlock(&h->lock);
}
