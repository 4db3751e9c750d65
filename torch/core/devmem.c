// SPDX-License-Identifier: MIT
/*
 * devmem.c - tensors allocated in device memory (accdma_torch.empty): their
 * regions, so that a send or recv of such a tensor names its region instead
 * of staging a copy.
 */
#include <errno.h>
#include <stdlib.h>

#include "atc.h"

int atc_dev_alloc(struct atc_world *aw, uint64_t bytes, void **ptr)
{
	accdma_key key;
	int rc;

	pthread_mutex_lock(&aw->lock);
	if (aw->nregs == aw->capregs) {
		int cap = aw->capregs ? aw->capregs * 2 : 8;
		struct atc_devreg *n = realloc(aw->regs, (size_t)cap * sizeof(*n));

		if (!n) {
			pthread_mutex_unlock(&aw->lock);
			return -ENOMEM;
		}
		aw->regs = n;
		aw->capregs = cap;
	}
	rc = accdma_mem_alloc(aw->w, aw->dev, bytes ? bytes : 1, &key);
	if (!rc) {
		void *p = accdma_mem_ptr(aw->w, aw->dev, key, NULL);

		aw->regs[aw->nregs++] = (struct atc_devreg){ p, bytes ? bytes : 1, key };
		*ptr = p;
	}
	pthread_mutex_unlock(&aw->lock);
	return rc;
}

int atc_dev_free(struct atc_world *aw, void *ptr)
{
	int rc = -ENOENT;

	pthread_mutex_lock(&aw->lock);
	for (int i = 0; i < aw->nregs; i++) {
		if (aw->regs[i].ptr != ptr)
			continue;
		rc = accdma_mem_free(aw->w, aw->dev, aw->regs[i].key);
		aw->regs[i] = aw->regs[--aw->nregs];
		break;
	}
	pthread_mutex_unlock(&aw->lock);
	return rc;
}

int atc_dev_find(struct atc_world *aw, const void *p, uint64_t len, accdma_key *key,
		 uint64_t *off)
{
	const char *c = p;
	int found = 0;

	if (!aw->nregs) /* read without the lock: only a hint that there are none */
		return 0;
	pthread_mutex_lock(&aw->lock);
	for (int i = 0; i < aw->nregs && !found; i++) {
		const char *b = aw->regs[i].ptr;

		if (c >= b && c + len <= b + aw->regs[i].size) {
			*key = aw->regs[i].key;
			*off = (uint64_t)(c - b);
			found = 1;
		}
	}
	pthread_mutex_unlock(&aw->lock);
	return found;
}
