// SPDX-License-Identifier: MIT
/*
 * local.c - the local transport: every device of the world in this process.
 *
 * The arena is private anonymous memory, and device memory comes from the
 * heap of the device's NUMA node (dma_mem_alloc()); a region's offset is its
 * address, so the address space reaches all of this process for every
 * device. Caller memory registers as it is.
 */
#include <stdint.h>
#include <sys/mman.h>

#include "driver/internal.h"

static int local_open(struct accdma_world *w)
{
	w->a.sh = mmap(NULL, w->a.g.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (w->a.sh == MAP_FAILED) {
		w->a.sh = NULL;
		return -ENOMEM;
	}
	q_layout_init(&w->a);
	w->first_local = 0;
	w->nlocal = w->opts.num_devices;
	for (uint32_t d = 0; d < w->a.g.ndev; d++)
		dma_space_set_segment(&w->space, d, NULL, UINT64_MAX);
	return 0;
}

/* The arena is ours alone: its stop flag stops every engine at once. */
void drv_local_stop(struct accdma_world *w)
{
	atomic_store(&w->a.sh->stop, 1);
}

/* Device memory still allocated goes back with the world. */
static void local_close(struct accdma_world *w)
{
	for (int d = 0; w->devs && d < w->opts.num_devices; d++)
		for (int r = 0; r < Q_MAX_REGIONS; r++) {
			struct drv_region *reg = &w->devs[d].regions[r];

			if (reg->key && !reg->registered)
				dma_mem_free(reg->addr, reg->size);
			reg->key = 0;
		}
	if (w->a.sh)
		munmap(w->a.sh, w->a.g.size);
	w->a.sh = NULL;
}

int drv_local_mem_alloc(struct accdma_world *w, int dev, uint64_t size, uint64_t *off, void **addr)
{
	*addr = dma_mem_alloc(size, w->numa_map[dev]);
	*off = (uintptr_t)*addr;
	return *addr ? 0 : -ENOMEM;
}

void drv_local_mem_free(struct accdma_world *w, int dev, uint64_t off, void *addr, uint64_t size)
{
	(void)w;
	(void)dev;
	(void)off;
	dma_mem_free(addr, size);
}

int drv_local_mem_register(struct accdma_world *w, int dev, void *addr, uint64_t size, uint64_t *off)
{
	(void)w;
	(void)dev;
	(void)size;
	*off = (uintptr_t)addr;
	return 0;
}

const struct drv_transport drv_transport_local = {
	.name = "local",
	.shared_arena = 0,
	.open = local_open,
	.stop = drv_local_stop,
	.close = local_close,
	.mem_alloc = drv_local_mem_alloc,
	.mem_free = drv_local_mem_free,
	.mem_register = drv_local_mem_register,
};
