// SPDX-License-Identifier: MIT
/*
 * stage.c - the staging slots of the verbs link (fw_stub/stage.c): where a
 * medium send from another host lands, written by its sender with RDMA
 * WRITE and followed on the same queue pair by the message that names it.
 *
 * Each process keeps q_stage_slots() slots of Q_STAGE_BYTES for each pair
 * (far device, device of ours), laid out by the sending process: the block
 * of process p holds its devices' slots, and is registered on its own, so
 * the remote key p gets reaches p's slots and nothing else. Each process
 * tells each peer its block's address and key (VB_STAGE) before the ping
 * that checks their path, so every key is known before the world opens.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>

#include "driver/verbs/verbs.h"

/* Bytes of the slots one process keeps for one peer process. */
static size_t block_bytes(const struct vb *v)
{
	return (size_t)v->L * (size_t)v->L * q_stage_slots(v->w->a.g.ndev) * Q_STAGE_BYTES;
}

/* Offset of slot @slot that our (or a peer's) local device @dlocal keeps for device @src. */
static size_t slot_offset(const struct vb *v, uint32_t src, uint32_t dlocal, uint32_t slot)
{
	return (((size_t)src * (size_t)v->L + dlocal) * q_stage_slots(v->w->a.g.ndev) + slot) * Q_STAGE_BYTES;
}

/** vb_stage_bytes() - the slots' memory in one process (pinned). */
uint64_t vb_stage_bytes(const struct vb *v)
{
	return (uint64_t)block_bytes(v) * (uint64_t)v->nprocs;
}

/**
 * vb_stage_open() - map the slots and register each peer's block.
 * Return: 0 (no slots in a world too large for them), or -ENOMEM.
 */
int vb_stage_open(struct vb *v)
{
	size_t bytes = (size_t)vb_stage_bytes(v);
	void *p;

	if (!bytes)
		return 0;
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	v->stage = p;
	v->stage_len = bytes;
	for (int q = 0; q < v->nprocs; q++) {
		if (q == v->self)
			continue;
		v->stage_mr[q] = ibv_reg_mr(v->pd, v->stage + (size_t)q * block_bytes(v), block_bytes(v),
					    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (!v->stage_mr[q]) {
			fprintf(stderr, "accdma: verbs: registering %zu bytes of staging slots with %s failed: is "
					"RLIMIT_MEMLOCK (ulimit -l) large enough?\n", block_bytes(v), v->devname);
			return -ENOMEM;
		}
	}
	return 0;
}

/** vb_stage_close() - deregister and unmap the slots. */
void vb_stage_close(struct vb *v)
{
	for (int q = 0; v->stage_mr && q < v->nprocs; q++)
		if (v->stage_mr[q])
			ibv_dereg_mr(v->stage_mr[q]);
	if (v->stage)
		munmap(v->stage, v->stage_len);
	v->stage = NULL;
}

/** vb_stage_tell() - tell process @proc where its block of our slots is (before the ping). */
int vb_stage_tell(struct vb *v, int proc)
{
	struct q_msg m = { .type = VB_STAGE };

	if (!v->stage)
		return 0;
	m.src = (int32_t)(v->self * v->L);
	m.dst = (int32_t)(proc * v->L);
	m.offset = (uintptr_t)(v->stage + (size_t)proc * block_bytes(v));
	m.length = block_bytes(v);
	m.key = v->stage_mr[proc]->rkey;
	return vb_ctl_send(v, proc, &m);
}

/** vb_stage_serve() - a peer told us where its slots for us are (a VB_STAGE from @proc). */
void vb_stage_serve(struct vb *v, int proc, const struct q_msg *m)
{
	struct vb_rstage *r = &v->rstage[proc];

	if (m->length != block_bytes(v) || atomic_load_explicit(&r->known, memory_order_relaxed))
		return; /* a peer of another shape, or told twice */
	r->addr = m->offset;
	r->rkey = m->key;
	atomic_store_explicit(&r->known, 1, memory_order_release);
}

void *vb_link_staged(struct fw_link *l, uint32_t dev, uint32_t src, uint32_t slot)
{
	struct vb *v = (struct vb *)l;
	uint32_t dlocal = dev - (uint32_t)v->w->first_local;

	if (!v->stage || dlocal >= (uint32_t)v->L || src >= v->w->a.g.ndev ||
	    slot >= q_stage_slots(v->w->a.g.ndev) || vb_proc_of(v, src) == v->self)
		return NULL;
	return v->stage + slot_offset(v, src, dlocal, slot);
}

/* Our device @m->src's send into slot @slot of far device @m->dst: an
 * unsignaled RDMA WRITE and the message behind it, in one post. A write
 * that fails breaks the queue pair, which flushes the message and loses the
 * peer: the op then completes PEER_LOST. */
enum accdma_status vb_link_stage(struct fw_link *l, uint32_t slot, const void *src, uint64_t len,
				     const struct q_msg *m)
{
	struct vb *v = (struct vb *)l;
	uint32_t dst = (uint32_t)m->dst, lkey;
	struct vb_rstage *r;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { 0 };
	int proc;

	if (dst >= v->w->a.g.ndev || (uint32_t)m->src >= v->w->a.g.ndev || slot >= q_stage_slots(v->w->a.g.ndev) ||
	    len > Q_STAGE_BYTES)
		return ACCDMA_ST_OUT_OF_BOUNDS;
	proc = vb_proc_of(v, dst);
	r = &v->rstage[proc];
	if (proc == v->self || !atomic_load_explicit(&r->known, memory_order_acquire) || q_msg_bytes(m) > v->max_inline)
		return ACCDMA_ST_NOT_ATTEMPTED; /* the rendezvous carries it */
	if (atomic_load(&v->proc_lost[proc]))
		return ACCDMA_ST_PEER_LOST;
	lkey = vb_lkey_of(v, src, len);
	if (!lkey)
		return ACCDMA_ST_DMA_ERROR; /* our side is not registered memory */
	sge = (struct ibv_sge){ (uintptr_t)src, (uint32_t)len, lkey };
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	/* r->addr is our block of its slots: our devices' slots start it */
	wr.wr.rdma.remote_addr = r->addr + slot_offset(v, (uint32_t)m->src, dst - (uint32_t)(proc * v->L), slot) -
				 (size_t)v->self * block_bytes(v);
	wr.wr.rdma.rkey = r->rkey;
	return vb_post_then_msg(v, proc, &wr, m) ? ACCDMA_ST_PEER_LOST : ACCDMA_OK;
}
