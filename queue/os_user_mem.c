// SPDX-License-Identifier: MIT
/*
 * os_user_mem.c - queue/os.h's device memory in a user process: anonymous
 * pages placed on a NUMA node with libnuma; another process's registered
 * memory through cross-memory attach.
 */
#include <errno.h>
#include <numa.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>

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

int os_vm_copy(int32_t pid, void *local, uint64_t remote, uint64_t len, int to_remote)
{
	/* A call moves at most what the kernel takes at once (MAX_RW_COUNT, just
	 * under 2 GiB): go on from where it stopped; 0 bytes moved means the rest
	 * of the remote range is not mapped. */
	while (len) {
		struct iovec l = { local, len }, r = { (void *)(uintptr_t)remote, len };
		ssize_t n = to_remote ? process_vm_writev(pid, &l, 1, &r, 1, 0) :
					process_vm_readv(pid, &l, 1, &r, 1, 0);

		if (n < 0)
			return errno == EINTR ? -EAGAIN : -errno;
		if (n == 0)
			return -EFAULT;
		local = (char *)local + n;
		remote += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}
