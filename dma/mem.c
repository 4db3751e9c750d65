// SPDX-License-Identifier: MIT
/*
 * mem.c - device memory: host pages placed on the device's NUMA node, from
 * the OS layer (queue/os.h).
 */
#include "dma/dma.h"

int dma_numa_nodes(void)
{
	return os_numa_nodes();
}

void *dma_mem_alloc(uint64_t size, int node)
{
	return os_mem_alloc(size, node);
}

void dma_mem_free(void *p, uint64_t size)
{
	os_mem_free(p, size);
}

void dma_mem_bind(void *p, uint64_t size, int node)
{
	os_mem_bind(p, size, node);
}

void dma_mem_release(void *p, uint64_t size)
{
	os_mem_release(p, size);
}
