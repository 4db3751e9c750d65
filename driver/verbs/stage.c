// SPDX-License-Identifier: MIT
/*
 * stage.c - the staging slots of the verbs link (fw_stub/stage.c): where a
 * medium send from another host lands. Its sender writes the message that
 * names it (VB_SLOT_HEAD bytes) and the data behind it into the slot with
 * one RDMA WRITE with immediate; the immediate names the slot, and its
 * completion at the receiver is the message's arrival. So a staged send
 * costs one request, one acknowledgement and one completion on each side.
 *
 * Each process keeps q_stage_slots() slots of VB_SLOT_BYTES for each pair
 * (far device, device of ours), laid out by the sending process: the block
 * of process p holds its devices' slots, and is registered on its own, so
 * the remote key p gets reaches p's slots and nothing else. Each process
 * tells each peer its block's address and key (VB_STAGE) before the ping
 * that checks their path, so every key is known before the world opens.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "driver/verbs/verbs.h"

_Static_assert(VB_SLOT_HEAD >= Q_MSG_HEAD_BYTES && VB_SLOT_HEAD <= VB_MSG_BYTES,
	       "a slot's message fits its head, which a send buffer holds");

/* Bytes of the slots one process keeps for one peer process. */
static size_t block_bytes(const struct vb *v)
{
	return (size_t)v->L * (size_t)v->L * q_stage_slots(v->w->a.g.ndev) * VB_SLOT_BYTES;
}

/* The slots of a block, in the order the immediate counts them. */
static uint32_t block_slots(const struct vb *v)
{
	return (uint32_t)v->L * (uint32_t)v->L * q_stage_slots(v->w->a.g.ndev);
}

/**
 * vb_stage_index() - which slot of its sending process's block slot @slot is,
 * that device @dlocal (the index among its process's devices) keeps for
 * device @src: the immediate of the write into it.
 */
uint32_t vb_stage_index(const struct vb *v, uint32_t src, uint32_t dlocal, uint32_t slot)
{
	return ((src % (uint32_t)v->L) * (uint32_t)v->L + dlocal) * q_stage_slots(v->w->a.g.ndev) + slot;
}

/* Where the slots process @proc writes into start, in our memory. */
static uint8_t *block_of(const struct vb *v, int proc)
{
	return v->stage + (size_t)proc * block_bytes(v);
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
		v->stage_mr[q] = ibv_reg_mr(v->pd, block_of(v, q), block_bytes(v),
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
	m.offset = (uintptr_t)block_of(v, proc);
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
	return block_of(v, vb_proc_of(v, src)) + (size_t)vb_stage_index(v, src, dlocal, slot) * VB_SLOT_BYTES +
	       VB_SLOT_HEAD;
}

/**
 * vb_stage_arrived() - process @proc wrote slot @index of its block (the
 * immediate of its write), @bytes in all: read the message ahead of the data
 * into @m, if it names that slot and its own devices.
 * Return: 0, or -1 if the write is not a staged send (it is dropped).
 */
int vb_stage_arrived(const struct vb *v, int proc, uint32_t index, uint32_t bytes, struct q_msg *m)
{
	uint32_t nslots = q_stage_slots(v->w->a.g.ndev), slot, dlocal, srel;

	if (!v->stage || proc < 0 || proc >= v->nprocs || proc == v->self || index >= block_slots(v))
		return -1;
	slot = index % nslots;
	dlocal = index / nslots % (uint32_t)v->L;
	srel = index / nslots / (uint32_t)v->L;
	/* once: the peer may write the slot again while we check it */
	memcpy(m, block_of(v, proc) + (size_t)index * VB_SLOT_BYTES, Q_MSG_HEAD_BYTES);
	if (m->type != Q_MSG_STAGED || m->src != (int32_t)((uint32_t)proc * (uint32_t)v->L + srel) ||
	    m->dst != (int32_t)((uint32_t)v->w->first_local + dlocal) || m->pos != slot || !m->length ||
	    m->length > Q_STAGE_BYTES || bytes != VB_SLOT_HEAD + m->length)
		return -1;
	return 0;
}

/**
 * vb_stage_landed() - process @proc's write with immediate @index (@bytes in
 * all) completed here: the message in that slot goes to its device's inbox,
 * unless vb_stage_arrived() drops it.
 */
void vb_stage_landed(struct vb *v, int proc, uint32_t index, uint32_t bytes)
{
	struct q_msg m;

	if (!vb_stage_arrived(v, proc, index, bytes, &m))
		vb_deliver(v, &m);
}

/* Our device @m->src's send into slot @slot of far device @m->dst: one RDMA
 * WRITE with immediate, @m ahead of the data. A write that fails breaks the
 * queue pair, which loses the peer: the op then completes PEER_LOST. */
enum accdma_status vb_link_stage(struct fw_link *l, uint32_t slot, const void *src, uint64_t len,
				 const struct q_msg *m)
{
	struct vb *v = (struct vb *)l;
	uint32_t dst = (uint32_t)m->dst, lkey, index;
	struct vb_rstage *r;
	struct ibv_sge data;
	struct ibv_send_wr wr = { 0 };
	int proc;

	if (dst >= v->w->a.g.ndev || (uint32_t)m->src >= v->w->a.g.ndev || slot >= q_stage_slots(v->w->a.g.ndev) ||
	    !len || len > Q_STAGE_BYTES || m->pos != slot)
		return ACCDMA_ST_OUT_OF_BOUNDS;
	proc = vb_proc_of(v, dst);
	r = &v->rstage[proc];
	if (proc == v->self || !atomic_load_explicit(&r->known, memory_order_acquire) ||
	    q_msg_bytes(m) > VB_SLOT_HEAD)
		return ACCDMA_ST_NOT_ATTEMPTED; /* the rendezvous carries it */
	if (atomic_load(&v->proc_lost[proc]))
		return ACCDMA_ST_PEER_LOST;
	lkey = vb_lkey_of(v, src, len);
	if (!lkey)
		return ACCDMA_ST_DMA_ERROR; /* our side is not registered memory */
	data = (struct ibv_sge){ (uintptr_t)src, (uint32_t)len, lkey };
	index = vb_stage_index(v, (uint32_t)m->src, dst % (uint32_t)v->L, slot);
	wr.imm_data = htonl(index);
	wr.wr.rdma.remote_addr = r->addr + (uint64_t)index * VB_SLOT_BYTES; /* r->addr: our block of its slots */
	wr.wr.rdma.rkey = r->rkey;
	return vb_post_headed(v, proc, &wr, &data, m) ? ACCDMA_ST_PEER_LOST : ACCDMA_OK;
}
