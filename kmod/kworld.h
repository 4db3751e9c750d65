/* SPDX-License-Identifier: MIT */
/*
 * kworld.h - a world whose devices all live in the kernel, each with its
 * device memory in one segment (as over shm: a region is an offset into its
 * device's segment, so a scribbled region table reaches no further than the
 * segment, the model /dev/accdma's mappings need), and a minimal
 * host side that posts descriptors and waits for their completion records
 * through the queue layout, as driver/post.c and driver/token.c do in user
 * space. The self-test drives the engines through it; /dev/accdma will lay
 * out its arena the same way.
 */
#ifndef ACCDMA_KMOD_KWORLD_H
#define ACCDMA_KMOD_KWORLD_H

#include "fw_stub/fw.h"

/* (peer, tag, direction) counters a device numbers its sends and recvs by. */
#define KW_SEQS 64

/**
 * struct kw_shape - the shape of a world.
 * @ndev: devices.
 * @nq: queues per device.
 * @engines: engine threads per device.
 * @depth: slots per queue (a power of two).
 * @eager_max: largest eager send.
 * @mem_size: bytes of each device's memory segment.
 * @spin_ns: how long an idle engine spins before it sleeps.
 * @exec: the engines' host call, if not kw_post_exec()'s (processes' worlds).
 * @exec_ctx: its context.
 */
struct kw_shape {
	uint32_t ndev;
	uint32_t nq;
	uint32_t engines;
	uint32_t depth;
	uint32_t eager_max;
	uint64_t mem_size;
	uint64_t spin_ns;
	int (*exec)(void *ctx, uint32_t dev, uint32_t queue, uint64_t handle);
	void *exec_ctx;
};

/* One (peer, tag, direction) counter: the k-th send meets the k-th recv. */
struct kw_seq {
	int32_t peer;
	uint32_t dir;
	uint64_t tag;
	uint64_t next;
};

/* An exec posted on a queue: what its descriptor's handle names. */
struct kw_exec {
	int (*fn)(void *arg);
	void *arg;
	uint32_t gen;
};

/* The host's private view of one queue: it alone produces on it. */
struct kw_queue {
	uint32_t dev;
	uint32_t index;
	uint32_t mask;
	uint32_t cursor;
	uint32_t tail;
	uint64_t order;
	struct q_queue_sh *sh;
	struct q_desc *desc;
	struct q_cpl *cpl;
	uint32_t *sq;
	struct kw_exec *exec;
};

/* One device: its booted engines, numbering and memory (allocated upwards
 * in its segment; a world is short-lived, so nothing is freed before it). */
struct kw_dev {
	struct fw_device *fw;
	struct kw_seq seqs[KW_SEQS];
	uint32_t nseqs;
	char *seg;
	uint64_t seg_size;
	uint64_t seg_used;
	uint32_t nregions;
};

/**
 * struct kw_world - a world in the kernel.
 * @a: the arena and the module's own geometry of it.
 * @space: each device reaches its own segment.
 * @host: the engines' call back into the host (exec).
 * @devs: per device.
 * @queues: per device, per queue.
 * @spin_ns: how long a waiting host spins before it sleeps.
 */
struct kw_world {
	struct q_arena a;
	struct dma_space space;
	struct fw_host host;
	uint64_t spin_ns;
	struct kw_dev *devs;
	struct kw_queue *queues;
};

int kw_open(struct kw_world *w, const struct kw_shape *s);
void kw_close(struct kw_world *w);
int kw_mem_alloc(struct kw_world *w, uint32_t dev, uint64_t size, uint32_t *key, void **addr);
int kw_post(struct kw_world *w, uint32_t dev, uint32_t queue, struct q_desc *d,
	    uint64_t *token);
int kw_post_exec(struct kw_world *w, uint32_t dev, uint32_t queue, int (*fn)(void *),
		 void *arg, const uint64_t *deps, uint16_t ndeps, uint64_t *token);
int kw_wait(struct kw_world *w, uint64_t token, uint64_t timeout_ns,
	    enum accdma_status *st, uint64_t *bytes);
int kw_release(struct kw_world *w, uint64_t token);

#endif /* ACCDMA_KMOD_KWORLD_H */
