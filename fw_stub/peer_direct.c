// SPDX-License-Identifier: MIT
/*
 * peer_direct.c - the peer seam (peer.h) over memory every engine maps: the
 * devices of one process (local), or of one host's processes (shm arena and
 * segments). Each operation is a few loads and stores into the other
 * device's block, located by this process's own geometry, with every index
 * that came from shared memory checked first. (peer_far.c is the other side:
 * devices reached through a link.)
 */

#include "fw_stub/eager_ring.h"
#include "fw_stub/peer.h"

int fw_peer_init(struct fw_device *fd)
{
	uint32_t n = fd->w->g.ndev;

	if (!fd->w->g.eager_rel)
		return 0;
	fd->eager_tx = os_zalloc(n, sizeof(*fd->eager_tx));
	if (!fd->eager_tx)
		return -ENOMEM;
	for (uint32_t p = 0; p < n; p++) /* a far receiver's ring is its own: we send it messages */
		fd->eager_tx[p].ring = fw_peer_near(fd, p) ? q_eager_ring(fd->w, p, fd->id) : NULL;
	return 0;
}

void fw_peer_fini(struct fw_device *fd)
{
	os_free(fd->eager_tx);
	fd->eager_tx = NULL;
}

void fw_peer_rdv(const struct fw_device *fd, uint32_t dev, struct fw_rdv *r)
{
	r->sh = q_dev(fd->w, dev);
	r->t = q_rdv_table(fd->w, dev);
	r->cap = fd->w->g.rdv_cap;
	r->dev = dev;
}

int fw_peer_lost(const struct fw_device *fd, uint32_t dev)
{
	return os_load(&q_dev(fd->w, dev)->lost, OS_ACQUIRE) != Q_DEV_ALIVE;
}

int fw_direct_polled(const struct fw_device *fd, uint32_t dev)
{
	return q_dev(fd->w, dev)->polled != 0;
}

void fw_direct_kick(const struct fw_device *fd, uint32_t dev)
{
	q_device_kick(q_dev(fd->w, dev), 0, fd->w->g.engines);
}

int fw_direct_op_posted(const struct fw_device *fd, int32_t dev, uint32_t queue, uint32_t slot)
{
	const struct q_geom *g = &fd->w->g;
	const struct q_cpl *c;

	if (dev < 0 || (uint32_t)dev >= g->ndev || queue >= g->nq || slot >= g->depth)
		return 0;
	c = &q_cpls(fd->w, (uint32_t)dev, queue)[slot];
	return os_load(&c->state, OS_ACQUIRE) == Q_SLOT_POSTED;
}

void fw_direct_complete(const struct fw_device *fd, uint32_t dev, uint32_t queue, uint32_t slot,
		      enum accdma_status st, uint64_t bytes)
{
	const struct q_arena *w = fd->w;

	/* The op's owner holds nothing by then (dependencies were released when
	 * it became ready), so the slot may be reused as soon as the host
	 * consumes the token: a host that waits and posts again never finds its
	 * queue full. */
	fw_complete_record(w, q_dev(w, dev), q_queue(w, dev, queue), &q_cpls(w, dev, queue)[slot], st, bytes,
			   0, 1);
}

void fw_peer_handoff(const struct fw_device *fd, uint32_t dev, uint32_t queue, uint32_t slot)
{
	os_store(&q_cpls(fd->w, dev, queue)[slot].handoff, 1, OS_RELEASE);
}

enum accdma_status fw_peer_range(const struct fw_device *fd, uint32_t dev, uint32_t key, uint64_t off,
				 uint64_t len, int allow_empty, void **addr)
{
	return dma_resolve(fd->space, fd->w, dev, key, off, len, allow_empty, addr);
}

/* Cross-memory attach to another process's registered range. Its address
 * comes from shared memory, its pid from the kernel (SO_PEERCRED): a range
 * that lies reaches only that process's memory, and fails its op. */
static enum accdma_status cma_move(struct fw_device *fd, uint32_t dev, uint32_t key, uint64_t off,
				   uint64_t rlen, void *local, uint64_t len, int to_peer)
{
	static Q_ATOMIC(uint32_t) said;
	uint64_t raddr;
	int32_t pid;
	int rc;

	if (dma_resolve_cma(fd->space, fd->w, dev, key, off, rlen, &raddr, &pid) != ACCDMA_OK)
		return ACCDMA_ST_PEER_ERROR;
	rc = fw_copy_vm(fd, pid, local, raddr, len, to_peer);
	if (!rc)
		return ACCDMA_OK;
	if (rc == -ESRCH)
		return ACCDMA_ST_PEER_LOST;
	if ((rc == -EPERM || rc == -EOPNOTSUPP) && !os_exchange(&said, 1, OS_RELAXED))
		os_log("accdma: cross-memory attach to process %d refused (%d): registered memory "
		       "cannot be reached over shm (kernel.yama.ptrace_scope, seccomp?)", (int)pid, rc);
	return ACCDMA_ST_PEER_ERROR;
}

enum accdma_status fw_peer_move(struct fw_device *fd, uint32_t dev, uint32_t key, uint64_t off,
				uint64_t rlen, void *local, uint64_t len, int to_peer)
{
	void *other;
	enum accdma_status st = dma_resolve(fd->space, fd->w, dev, key, off, rlen, 1, &other);

	if (st == ACCDMA_ST_BAD_KEY)
		return cma_move(fd, dev, key, off, rlen, local, len, to_peer);
	if (st != ACCDMA_OK)
		return ACCDMA_ST_PEER_ERROR;
	if (fw_copy(fd, to_peer ? other : local, to_peer ? local : other, len))
		return ACCDMA_ST_DMA_ERROR;
	return ACCDMA_OK;
}

enum accdma_status fw_direct_write(struct fw_device *fd, const struct fw_op *op, uint64_t *bytes)
{
	void *dst;
	enum accdma_status st = dma_resolve(fd->space, fd->w, (uint32_t)op->d.peer, op->d.remote_key,
					    op->d.remote_offset, op->d.length, 0, &dst);

	uint64_t raddr;
	int32_t pid;

	*bytes = 0;
	/* Another process's registered memory (shm): by cross-memory attach;
	 * what its table says is checked as for any target first. */
	if (st == ACCDMA_ST_BAD_KEY)
		st = dma_resolve_cma(fd->space, fd->w, (uint32_t)op->d.peer, op->d.remote_key,
				     op->d.remote_offset, op->d.length, &raddr, &pid);
	else
		pid = 0;
	if (st != ACCDMA_OK)
		return st;
	if (pid)
		st = cma_move(fd, (uint32_t)op->d.peer, op->d.remote_key, op->d.remote_offset,
			      op->d.length, op->addr, op->d.length, 1);
	else if (fw_copy(fd, dst, op->addr, op->d.length))
		st = ACCDMA_ST_DMA_ERROR;
	if (st == ACCDMA_OK)
		*bytes = op->d.length;
	return st;
}

int fw_direct_eager_put(struct fw_device *fd, const struct fw_op *op)
{
	uint32_t dst = (uint32_t)op->d.peer, mask = fd->eager_mask, span = q_eager_span(op->d.length);
	struct fw_eager_tx *tx = &fd->eager_tx[dst];

	fw_eager_lock(fd, &fd->eager_tx_lock);
	if (tx->pos + span - tx->done > mask + 1) {
		tx->done = os_load(&tx->ring->done, OS_ACQUIRE);
		if (tx->pos + span - tx->done > mask + 1) {
			fw_eager_unlock(fd, &fd->eager_tx_lock);
			return 0; /* no room before the receiver's oldest held message */
		}
	}
	fw_ring_write(fd->eager_mask, tx->ring, tx->pos, tx->done, op->d.tag, op->d.seq, op->addr, (uint32_t)op->d.length);
	tx->pos += span;
	fw_eager_unlock(fd, &fd->eager_tx_lock);

	/* The receiver's engines may sleep with its recv waiting: the kick's fence
	 * orders the stamp before reading their `sleeping` (pairs with their sleep path). */
	if (!fw_direct_polled(fd, dst) && !fw_fault_hit(FW_FAULT_KICK))
		fw_direct_kick(fd, dst);
	return 1;
}
