// SPDX-License-Identifier: MIT
/*
 * split.c - large copies shared between a device's engines.
 *
 * The engine that owns a large transfer publishes it as a job of 1 MiB
 * chunks and wakes its sibling engines; every engine, owner included, takes
 * chunks until none are left, and the owner completes the op once all chunks
 * are done. One atomic word holds (generation, chunk count, next chunk), so a
 * sibling can never take a chunk of a job that has already finished: its
 * compare-and-swap fails once the generation moves on, and the owner cannot
 * finish a job while a chunk it handed out is still being copied.
 */

#include "fw_stub/fw_internal.h"

#define SPLIT_CHUNK (1ull << 20)
#define SPLIT_MIN (4ull << 20)
#define SPLIT_IDX_BITS 20

static uint64_t word(uint64_t gen, uint64_t nchunks, uint64_t idx)
{
	return gen << (2 * SPLIT_IDX_BITS) | nchunks << SPLIT_IDX_BITS | idx;
}

static uint64_t word_nchunks(uint64_t w) { return (w >> SPLIT_IDX_BITS) & ((1u << SPLIT_IDX_BITS) - 1); }
static uint64_t word_idx(uint64_t w) { return w & ((1u << SPLIT_IDX_BITS) - 1); }

/* Take and copy one chunk of the current job; 1 if a chunk was copied. */
static int take_chunk(struct fw_split *j)
{
	uint64_t w = os_load(&j->next, OS_ACQUIRE), idx, off, len;

	do {
		if (word_idx(w) >= word_nchunks(w))
			return 0;
	} while (!os_cas_weak(&j->next, &w, w + 1, OS_ACQ_REL, OS_ACQUIRE));
	idx = word_idx(w);
	off = idx * SPLIT_CHUNK;
	len = j->len - off < SPLIT_CHUNK ? j->len - off : SPLIT_CHUNK;
	dma_copy_range(j->dst + off, j->src + off, len);
	os_fetch_add(&j->done, 1, OS_RELEASE);
	return 1;
}

/**
 * fw_split_help() - a sibling engine's share: take chunks of the device's current job.
 * @fd: the device.
 * Return: 1 if any chunk was copied.
 */
int fw_split_help(struct fw_device *fd)
{
	int any = 0;

	while (take_chunk(&fd->split))
		any = 1;
	return any;
}

/**
 * fw_copy() - copy a transfer's data, sharing large copies with sibling engines.
 * @fd: the device whose engine runs the op. @dst/@src/@len: the transfer.
 * Return: 0, or -EIO if the data mover failed (injected fault) before any byte moved.
 */
int fw_copy(struct fw_device *fd, void *dst, const void *src, uint64_t len)
{
	struct fw_split *j = &fd->split;
	uint64_t nchunks;

	if (dma_copy(dst, src, 0)) /* the transfer's fault-injection point */
		return -EIO;
	if (fd->nengines < 2 || len < SPLIT_MIN || len / SPLIT_CHUNK >= (1u << SPLIT_IDX_BITS) - 1 ||
	    os_exchange(&j->busy, 1, OS_SEQ_CST)) {
		dma_copy_range(dst, src, len);
		return 0;
	}
	nchunks = (len + SPLIT_CHUNK - 1) / SPLIT_CHUNK;
	j->dst = dst;
	j->src = src;
	j->len = len;
	os_store(&j->done, 0, OS_RELAXED);
	j->gen++;
	os_store(&j->next, word(j->gen & 0xffffff, nchunks, 0), OS_SEQ_CST);
	/* Siblings may sleep, or nap while a host thread polls: both must help now. */
	q_device_kick(fd->sh, 0, fd->nengines);
	fw_wake_nappers(fd);
	while (take_chunk(j))
		;
	while (os_load(&j->done, OS_ACQUIRE) < nchunks)
		os_yield();
	os_store(&j->busy, 0, OS_RELEASE);
	return 0;
}
