// SPDX-License-Identifier: MIT
/*
 * region.c - device memory over verbs: a region is registered with the
 * device (ibv_reg_mr) when it is made, and its key, address, size and
 * remote key reach every peer process before accdma_mem_alloc() returns;
 * freeing revokes it at every peer first. Registering pins the pages, so it
 * is done per region, never for the whole device memory up front.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "driver/verbs/verbs.h"

/* Send @m, publication number v->pub_seq + 1, to every live peer and, if
 * @wait, wait until each has answered it (an ack names the publication it
 * answers, so a late one counts for nothing else). We read them off the
 * queue ourselves: the poller may be in a long nap (VB_POLLER_MAX_NAP_NS). */
static int tell_everyone(struct vb *v, struct q_msg *m, int wait)
{
	uint32_t seq = ++v->pub_seq;
	uint8_t *told = v->told;
	struct timespec t0, t;

	m->seq = seq;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int p = 0; p < v->nprocs; p++) {
		told[p] = 0;
		if (p == v->self || atomic_load(&v->proc_lost[p]))
			continue;
		m->dst = (int32_t)(p * v->L);
		told[p] = !vb_ctl_send(v, p, m);
	}
	for (int p = 0; wait && p < v->nprocs; p++) {
		while (told[p] && !atomic_load(&v->proc_lost[p]) && (int32_t)(atomic_load(&v->acked[p]) - seq) < 0) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >
			    v->w->opts.peer_timeout_ms)
				return -ETIMEDOUT;
			if (vb_link_poll(v) <= 0)
				usleep(50);
		}
	}
	return 0;
}

int vb_region_added(struct accdma_world *w, int dev, uint32_t key, void *addr, uint64_t size)
{
	struct vb *v = vb_of(w);
	struct vb_lregion *l = &v->lreg[(size_t)(dev - w->first_local) * Q_MAX_REGIONS + q_key_index(key)];
	struct q_msg m;
	int rc;

	struct ibv_mr *mr;

	pthread_mutex_lock(&v->pub_lock);
	mr = ibv_reg_mr(v->pd, addr, size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr) {
		rc = errno ? -errno : -ENOMEM;
		pthread_mutex_unlock(&v->pub_lock);
		fprintf(stderr, "accdma: verbs: registering %llu bytes with %s failed (%s): is "
				"RLIMIT_MEMLOCK (ulimit -l) large enough?\n",
			(unsigned long long)size, v->devname, strerror(-rc));
		return rc;
	}
	pthread_mutex_lock(&v->lreg_lock);
	*l = (struct vb_lregion){ addr, size, mr, key };
	pthread_mutex_unlock(&v->lreg_lock);
	memset(&m, 0, sizeof(m));
	m.type = VB_REGION;
	m.src = dev;
	m.key = key;
	m.offset = (uintptr_t)addr;
	m.length = size;
	m.gen = l->mr->rkey;
	rc = tell_everyone(v, &m, 1);
	if (rc) {
		/* The caller frees the memory now: the peers that took the key
		 * give it back, and it opens nothing once unregistered. */
		m.type = VB_REVOKE;
		tell_everyone(v, &m, 0);
		pthread_mutex_lock(&v->lreg_lock);
		memset(l, 0, sizeof(*l));
		pthread_mutex_unlock(&v->lreg_lock);
		ibv_dereg_mr(mr);
	}
	pthread_mutex_unlock(&v->pub_lock);
	if (rc)
		fprintf(stderr, "accdma: verbs: a peer did not acknowledge region %#x of device %d in time\n", key,
			dev);
	return rc;
}

void vb_region_removed(struct accdma_world *w, int dev, uint32_t key)
{
	struct vb *v = vb_of(w);
	struct vb_lregion *l = &v->lreg[(size_t)(dev - w->first_local) * Q_MAX_REGIONS + q_key_index(key)];
	struct ibv_mr *mr = NULL;
	struct q_msg m;

	pthread_mutex_lock(&v->pub_lock);
	if (l->key == key && l->mr) {
		memset(&m, 0, sizeof(m));
		m.type = VB_REVOKE;
		m.src = dev;
		m.key = key;
		tell_everyone(v, &m, 1); /* a peer that does not answer is gone, or will be */
		pthread_mutex_lock(&v->lreg_lock);
		mr = l->mr;
		memset(l, 0, sizeof(*l));
		pthread_mutex_unlock(&v->lreg_lock);
	}
	if (mr)
		ibv_dereg_mr(mr);
	pthread_mutex_unlock(&v->pub_lock);
}

/* A peer published or revoked a region of one of its devices; answered with an ack. */
void vb_region_serve(struct vb *v, const struct q_msg *m)
{
	uint32_t dev = (uint32_t)m->src;
	int proc = vb_proc_of(v, dev);
	struct vb_rregion *r;
	struct q_msg ack;

	if (dev >= v->w->a.g.ndev || !m->key)
		return;
	r = &v->rreg[(size_t)dev * Q_MAX_REGIONS + q_key_index(m->key)];
	if (m->type == VB_REGION) {
		atomic_store_explicit(&r->key, 0, memory_order_release);
		r->addr = m->offset;
		r->size = m->length;
		r->rkey = m->gen;
		atomic_store_explicit(&r->key, m->key, memory_order_release);
	} else if (atomic_load(&r->key) == m->key) {
		atomic_store_explicit(&r->key, 0, memory_order_release);
	}
	memset(&ack, 0, sizeof(ack));
	ack.type = VB_ACK;
	ack.seq = m->seq;
	ack.src = (int32_t)(v->self * v->L);
	ack.dst = m->src;
	vb_ctl_send(v, proc, &ack);
}

/* The local key of our registered memory holding [@addr, @addr + @len), or 0. */
uint32_t vb_lkey_of(struct vb *v, const void *addr, uint64_t len)
{
	uintptr_t a = (uintptr_t)addr;
	uint32_t lkey = 0;

	pthread_mutex_lock(&v->lreg_lock);
	for (int i = 0; i < v->L * Q_MAX_REGIONS && !lkey; i++) {
		const struct vb_lregion *l = &v->lreg[i];

		if (l->mr && a >= (uintptr_t)l->addr && a - (uintptr_t)l->addr <= l->size &&
		    len <= l->size - (a - (uintptr_t)l->addr))
			lkey = l->mr->lkey;
	}
	pthread_mutex_unlock(&v->lreg_lock);
	return lkey;
}
