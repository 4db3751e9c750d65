// SPDX-License-Identifier: MIT
/*
 * mem.c - memory regions: device memory and registered host memory.
 *
 * A region's key carries a generation, so a key kept after free never names
 * the region that reuses its slot. The address goes into this process's
 * address space before the key is published, and the engines validate every
 * descriptor against the region table.
 */
#include <string.h>

#include "driver/internal.h"

/* Take a free region slot, map it in this process, then publish its key
 * (release: engines read the address after checking the key). */
static int region_add(struct accdma_world *w, int dev, void *addr, uint64_t offset, uint64_t size,
		      int registered, accdma_key *key)
{
	struct drv_dev *dd = &w->devs[dev];
	struct q_dev_sh *ds = q_dev(&w->a, (uint32_t)dev);
	int rc = -ENOMEM;

	pthread_mutex_lock(&dd->mem_lock);
	for (uint32_t i = 0; i < Q_MAX_REGIONS; i++) {
		struct q_region *r = &ds->regions[i];
		uint32_t gen;

		if (dd->regions[i].key)
			continue;
		gen = (dd->region_gen[i] + 1) & 0xffffff;
		dd->region_gen[i] = gen ? gen : 1;
		r->size = size;
		r->offset = offset;
		r->registered = (uint32_t)registered;
		*key = q_key_make(i, dd->region_gen[i]);
		/* Our own engines take the range from our private record, never
		 * from the shared table, which peers can write. */
		if (registered == Q_REGION_CMA &&
		    dma_space_set_reg(&w->space, (uint32_t)dev, *key, addr, size))
			break;
		/* A transport across hosts registers it and tells every peer first. */
		rc = w->tp->region_added ? w->tp->region_added(w, dev, *key, addr, size) : 0;
		if (rc)
			break;
		dd->regions[i] = (struct drv_region){ addr, offset, size, *key, registered };
		atomic_store_explicit(&r->key, *key, memory_order_release);
		break;
	}
	pthread_mutex_unlock(&dd->mem_lock);
	return rc;
}

int accdma_mem_alloc(accdma_world *w, int dev, uint64_t size, accdma_key *key)
{
	struct q_dev_sh *ds;
	struct drv_dev *dd;
	uint64_t off = 0;
	void *p = NULL;
	int rc = drv_dev_check(w, dev);

	if (rc)
		return rc;
	if (!key || size == 0)
		return -EINVAL;
	ds = q_dev(&w->a, (uint32_t)dev);
	dd = &w->devs[dev];
	if (size > w->opts.mem_size) /* more than the whole device */
		return -ENOMEM;
	if (atomic_fetch_add(&dd->mem_used, size) + size > w->opts.mem_size) {
		atomic_fetch_sub(&dd->mem_used, size);
		return -ENOMEM;
	}
	rc = w->tp->mem_alloc(w, dev, size, &off, &p);
	if (!rc) {
		rc = region_add(w, dev, p, off, size, 0, key);
		if (rc)
			w->tp->mem_free(w, dev, off, p, size);
	}
	if (rc)
		atomic_fetch_sub(&dd->mem_used, size);
	atomic_store(&ds->mem_used, atomic_load(&dd->mem_used));
	return rc;
}

int accdma_mem_register(accdma_world *w, int dev, void *addr, uint64_t size, accdma_key *key)
{
	uint64_t off = 0;
	int rc = drv_dev_check(w, dev);

	if (rc)
		return rc;
	/* The engines address the region as addr + offset with offset + length
	 * checked against size: a range that wraps the address space would pass
	 * that check and point at address 0 onwards. */
	if (!key || !addr || size == 0 || size - 1 > UINTPTR_MAX - (uintptr_t)addr)
		return -EINVAL;
	if (!w->tp->mem_register)
		return -EOPNOTSUPP;
	rc = w->tp->mem_register(w, dev, addr, size, &off);
	/* Over a shared arena the memory stays private to this process; the
	 * others reach it by cross-memory attach (docs/transports.md). */
	return rc ? rc : region_add(w, dev, addr, off, size,
				    w->tp->shared_arena ? Q_REGION_CMA : Q_REGION_HOST, key);
}

/* Does a posted, unfinished op name (@dev, @key)? Its own device's ops by
 * key, any device's writes as their target. Every queue is in the arena, so
 * this sees other processes' ops too. */
static int region_in_use(struct accdma_world *w, int dev, accdma_key key)
{
	for (uint32_t d = 0; d < (uint32_t)w->opts.num_devices; d++)
		for (uint32_t qi = 0; qi < (uint32_t)w->opts.queues; qi++) {
			const struct q_cpl *c = q_cpls(&w->a, d, qi);
			const struct q_desc *desc = q_descs(&w->a, d, qi);

			for (uint32_t s = 0; s < w->opts.queue_depth; s++) {
				if (atomic_load_explicit(&c[s].state, memory_order_acquire) != Q_SLOT_POSTED)
					continue;
				if ((d == (uint32_t)dev && desc[s].key == key) ||
				    (desc[s].kind == ACCDMA_OP_WRITE && desc[s].peer == dev &&
				     desc[s].remote_key == key))
					return 1;
			}
		}
	return 0;
}

int accdma_mem_free(accdma_world *w, int dev, accdma_key key)
{
	struct drv_dev *dd;
	struct drv_region *mine;
	struct q_region *r;
	int rc = drv_dev_check(w, dev);

	if (rc)
		return rc;
	if (key == 0)
		return -ENOENT;
	dd = &w->devs[dev];
	r = &q_dev(&w->a, (uint32_t)dev)->regions[q_key_index(key)];
	mine = &dd->regions[q_key_index(key)];
	pthread_mutex_lock(&dd->mem_lock);
	if (mine->key != key) {
		pthread_mutex_unlock(&dd->mem_lock);
		return -ENOENT;
	}
	/* The engines hold resolved addresses of pending ops: never pull the
	 * memory from under them. */
	if (region_in_use(w, dev, key)) {
		pthread_mutex_unlock(&dd->mem_lock);
		return -EBUSY;
	}
	if (w->tp->region_removed)
		w->tp->region_removed(w, dev, key); /* revoked at every peer before it goes */
	atomic_store_explicit(&r->key, 0, memory_order_release);
	if (mine->registered == Q_REGION_CMA)
		dma_space_drop_reg(&w->space, (uint32_t)dev, key);
	if (!mine->registered) {
		w->tp->mem_free(w, dev, mine->offset, mine->addr, mine->size);
		atomic_fetch_sub(&dd->mem_used, mine->size);
		atomic_store(&q_dev(&w->a, (uint32_t)dev)->mem_used, atomic_load(&dd->mem_used));
	}
	mine->key = 0;
	pthread_mutex_unlock(&dd->mem_lock);
	return 0;
}

void *accdma_mem_ptr(accdma_world *w, int dev, accdma_key key, uint64_t *size)
{
	struct q_region *r;

	if (drv_dev_check(w, dev) || key == 0)
		return NULL;
	r = &q_dev(&w->a, (uint32_t)dev)->regions[q_key_index(key)];
	if (atomic_load_explicit(&r->key, memory_order_acquire) != key)
		return NULL;
	if (size)
		*size = w->devs[dev].regions[q_key_index(key)].size;
	return w->devs[dev].regions[q_key_index(key)].addr;
}
