// SPDX-License-Identifier: MIT
/*
 * write.c - the link's data moves over libibverbs: an RDMA WRITE (a
 * one-sided write, or a large send into the recv that cleared it), checked
 * against the target region's published key and bounds first; the engine
 * waits for its completion as it would for a memory copy.
 */
#include <errno.h>
#include <stdio.h>

#include "driver/verbs/verbs.h"

/* A free write slot, or -1 if all are in flight: never waits, since only
 * their owners' vb_link_write_done() frees them, and the caller may be one. */
static int take_write(struct vb *v)
{
	int i = -1;

	pthread_mutex_lock(&v->slock);
	if (v->nwfree)
		i = (int)v->wfree[--v->nwfree];
	pthread_mutex_unlock(&v->slock);
	return i;
}

static void put_write(struct vb *v, uint32_t i)
{
	pthread_mutex_lock(&v->slock);
	v->wfree[v->nwfree++] = i;
	pthread_mutex_unlock(&v->slock);
}

/* Start an RDMA WRITE of @len bytes from our @local into device @dev's
 * region (@key, @off), as published; *@req names it for vb_link_write_done(). */
enum accdma_status vb_link_write(struct fw_link *l, uint32_t dev, uint32_t key, uint64_t off, uint64_t len,
			       const void *local, uint64_t *req)
{
	struct vb *v = vb_link(l);
	struct vb_rregion *r;
	struct vb_write *wr;
	struct ibv_send_wr *bad;
	uint32_t lkey, rkey;
	uint64_t addr, size;
	int proc, i;

	if (dev >= v->w->a.g.ndev || !key)
		return ACCDMA_ST_BAD_KEY;
	proc = vb_proc_of(v, dev);
	r = &v->rreg[(size_t)dev * Q_MAX_REGIONS + q_key_index(key)];
	if (atomic_load_explicit(&r->key, memory_order_acquire) != key)
		return ACCDMA_ST_BAD_KEY;
	addr = r->addr;
	size = r->size;
	rkey = r->rkey;
	if (atomic_load_explicit(&r->key, memory_order_acquire) != key)
		return ACCDMA_ST_BAD_KEY; /* revoked while we read it */
	if (off > size || len > size - off)
		return ACCDMA_ST_OUT_OF_BOUNDS;
	if (atomic_load(&v->proc_lost[proc]))
		return ACCDMA_ST_PEER_LOST;
	lkey = vb_lkey_of(v, local, len);
	if (!lkey)
		return ACCDMA_ST_DMA_ERROR; /* our side is not registered memory */
	/* At most VB_CHUNKS work requests, chained; only the last is signaled:
	 * a failed one puts the queue pair in error, which flushes the last. */
	uint64_t chunk = len / VB_CHUNKS + 1 > VB_CHUNK_MIN ? len / VB_CHUNKS + 1 : VB_CHUNK_MIN;
	struct ibv_sge sges[VB_CHUNKS];
	struct ibv_send_wr wrs[VB_CHUNKS];
	int n = 0;

	if (chunk > UINT32_MAX)
		return ACCDMA_ST_DMA_ERROR; /* past 64 GiB in one op */
	i = take_write(v);
	if (i < 0)
		return ACCDMA_ST_NOT_ATTEMPTED;
	wr = &v->writes[i];
	wr->gen++;
	wr->proc = proc;
	wr->len = len;
	atomic_store_explicit(&wr->status, IBV_WC_SUCCESS, memory_order_relaxed);
	atomic_store_explicit(&wr->done, 0, memory_order_relaxed);
	for (uint64_t at = 0; at < len || n == 0; at += chunk, n++) {
		uint64_t k = len - at < chunk ? len - at : chunk;

		sges[n] = (struct ibv_sge){ (uintptr_t)local + at, (uint32_t)k, lkey };
		wrs[n] = (struct ibv_send_wr){ .wr_id = WR_PART, .sg_list = &sges[n], .num_sge = 1,
					       .opcode = IBV_WR_RDMA_WRITE };
		wrs[n].wr.rdma.remote_addr = addr + off + at;
		wrs[n].wr.rdma.rkey = rkey;
		if (n)
			wrs[n - 1].next = &wrs[n];
	}
	wrs[n - 1].wr_id = ((uint64_t)i << 2) | WR_WRITE;
	wrs[n - 1].send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(v->qp[proc], &wrs[0], &bad)) {
		put_write(v, (uint32_t)i);
		vb_mark_lost(v, proc, Q_DEV_LOST_DIED);
		return ACCDMA_ST_PEER_LOST;
	}
	*req = ((uint64_t)wr->gen << 32) | (uint32_t)i;
	return ACCDMA_OK;
}

/* Has write @req completed? Then its outcome, and its slot is free again. A
 * lost peer's queue pair is flushed, so every write completes. */
int vb_link_write_done(struct fw_link *l, uint64_t req, enum accdma_status *st)
{
	struct vb *v = vb_link(l);
	uint32_t i = (uint32_t)req;
	struct vb_write *wr;
	enum ibv_wc_status status;

	if (i >= VB_WRITES || v->writes[i].gen != (uint32_t)(req >> 32)) {
		*st = ACCDMA_ST_DMA_ERROR; /* not a handle of ours */
		return 1;
	}
	wr = &v->writes[i];
	if (!atomic_load_explicit(&wr->done, memory_order_acquire) &&
	    (vb_link_poll(v) < 0 || !atomic_load_explicit(&wr->done, memory_order_acquire)))
		return 0;
	status = (enum ibv_wc_status)atomic_load_explicit(&wr->status, memory_order_relaxed);
	*st = ACCDMA_OK;
	if (status != IBV_WC_SUCCESS) {
		if (!atomic_load(&v->proc_lost[wr->proc])) {
			if (v->w->opts.log_level >= 1)
				fprintf(stderr, "accdma: verbs: an RDMA WRITE of %llu bytes to rank %d (%s) failed: %s\n",
					(unsigned long long)wr->len, wr->proc, v->hellos[wr->proc].dev,
					ibv_wc_status_str(status));
			vb_mark_lost(v, wr->proc, Q_DEV_LOST_DIED); /* the queue pair is in error now */
		}
		*st = status == IBV_WC_WR_FLUSH_ERR ? ACCDMA_ST_PEER_LOST : ACCDMA_ST_DMA_ERROR;
	}
	put_write(v, i);
	return 1;
}

