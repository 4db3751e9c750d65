// SPDX-License-Identifier: MIT
/*
 * split.c - large copies shared between a device's engines: in memory, or
 * by cross-memory attach to another process (fw_copy_vm()).
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
	int rc;

	do {
		if (word_idx(w) >= word_nchunks(w))
			return 0;
	} while (!os_cas_weak(&j->next, &w, w + 1, OS_ACQ_REL, OS_ACQUIRE));
	idx = word_idx(w);
	off = idx * SPLIT_CHUNK;
	len = j->len - off < SPLIT_CHUNK ? j->len - off : SPLIT_CHUNK;
	if (j->pid) {
		rc = os_vm_copy(j->pid, j->dst + off, j->remote + off, len, j->to_remote);
		if (rc) {
			int32_t none = 0;

			(void)os_cas(&j->err, &none, rc, OS_RELAXED, OS_RELAXED);
		}
	} else {
		dma_copy_range(j->dst + off, j->src + off, len);
	}
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

/* May @len bytes be shared out? One job at a time per device: the caller
 * that gets it publishes one (fills @fd->split and calls split_run()). */
static int split_claim(struct fw_device *fd, uint64_t len)
{
	return fd->nengines >= 2 && len >= SPLIT_MIN && len / SPLIT_CHUNK < (1u << SPLIT_IDX_BITS) - 1 &&
	       !os_exchange(&fd->split.busy, 1, OS_SEQ_CST);
}

/* Publish the claimed job, copy chunks alongside the siblings until all are
 * done. Return: its first chunk's failure (-errno), or 0. */
static int split_run(struct fw_device *fd)
{
	struct fw_split *j = &fd->split;
	uint64_t nchunks = (j->len + SPLIT_CHUNK - 1) / SPLIT_CHUNK;
	int rc;

	os_store(&j->done, 0, OS_RELAXED);
	os_store(&j->err, 0, OS_RELAXED);
	j->gen++;
	os_store(&j->next, word(j->gen & 0xffffff, nchunks, 0), OS_SEQ_CST);
	/* Siblings may sleep, or nap while a host thread polls: both must help now. */
	q_device_kick(fd->sh, 0, fd->nengines);
	fw_wake_nappers(fd);
	while (take_chunk(j))
		;
	while (os_load(&j->done, OS_ACQUIRE) < nchunks)
		os_yield();
	rc = os_load(&j->err, OS_RELAXED);
	os_store(&j->busy, 0, OS_RELEASE);
	return rc;
}

/**
 * fw_copy() - copy a transfer's data, sharing large copies with sibling engines.
 * @fd: the device whose engine runs the op. @dst/@src/@len: the transfer.
 * Return: 0, or -EIO if the data mover failed (injected fault) before any byte moved.
 */
int fw_copy(struct fw_device *fd, void *dst, const void *src, uint64_t len)
{
	struct fw_split *j = &fd->split;

	if (dma_copy(dst, src, 0)) /* the transfer's fault-injection point */
		return -EIO;
	if (!split_claim(fd, len)) {
		dma_copy_range(dst, src, len);
		return 0;
	}
	j->dst = dst;
	j->src = src;
	j->len = len;
	j->pid = 0;
	return split_run(fd);
}

/**
 * fw_copy_vm() - cross-memory attach (os_vm_copy()), large copies shared
 * with sibling engines: one core's system call moves well under what the
 * memory system can, so two engines copying halves finish sooner.
 * @fd: the device whose engine runs the op. @pid: the other process.
 * @local/@remote/@len: the ranges. @to_remote: write the other process's memory.
 * Return: 0, or os_vm_copy()'s -errno (of the first chunk that failed).
 */
int fw_copy_vm(struct fw_device *fd, int32_t pid, void *local, uint64_t remote, uint64_t len, int to_remote)
{
	struct fw_split *j = &fd->split;

	if (!pid || !split_claim(fd, len))
		return os_vm_copy(pid, local, remote, len, to_remote);
	j->dst = local;
	j->src = NULL;
	j->remote = remote;
	j->len = len;
	j->pid = pid;
	j->to_remote = to_remote;
	return split_run(fd);
}
