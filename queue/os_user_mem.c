// SPDX-License-Identifier: MIT
/*
 * os_user_mem.c - queue/os.h's device memory in a user process: anonymous
 * pages placed on a NUMA node with libnuma.
 */
#include <numa.h>
#include <string.h>
#include <sys/mman.h>

#include "queue/os.h"

int os_numa_nodes(void)
{
	int n;

	if (numa_available() < 0)
		return 1;
	n = numa_num_configured_nodes();
	return n > 0 ? n : 1;
}

void *os_mem_alloc(uint64_t size, int node)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	/* Placement is a preference: pages are bound before first touch. */
	if (node >= 0 && numa_available() >= 0)
		numa_tonode_memory(p, size, node);
	return p;
}

void os_mem_free(void *p, uint64_t size)
{
	if (p)
		munmap(p, size);
}

void os_mem_bind(void *p, uint64_t size, int node)
{
	if (p && size && node >= 0 && numa_available() >= 0)
		numa_tonode_memory(p, size, node);
}

void os_mem_release(void *p, uint64_t size)
{
	/* Frees the backing pages of a shared (memfd) mapping; later reads see zeros. */
	if (p && size && madvise(p, size, MADV_REMOVE))
		memset(p, 0, size);
}
