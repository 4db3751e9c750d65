/* SPDX-License-Identifier: MIT */
/*
 * atc.h - the torch backend's core, in C over the public accdma API only:
 * one shm world per set of processes, a pool of device-memory staging
 * buffers, op lists (posted ops with what is needed to describe a failure),
 * the reductions run as exec ops, and the collective plans.
 *
 * The C++ process group (torch/csrc) calls these; nothing here knows torch.
 * Every function returns 0 or a negative errno; a message for the user is
 * written into an error buffer where one is taken.
 */
#ifndef ATC_H
#define ATC_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "accdma.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Tag layout: bit 63 is the library's; bits 62..47 the group's id (agreed
 * by its members so that no two groups sharing a pair of devices collide);
 * bit 46 marks the backend's collectives; bits 45..0 the user's tag. */
#define ATC_GID_SHIFT 47
#define ATC_GID_MAX 0xffffu
#define ATC_TAG_COLL (1ull << 46)
#define ATC_USER_TAG_MAX ((1ull << 46) - 1)

/** struct atc_buf - a staging buffer: a region of this process's device. */
struct atc_buf {
	accdma_key key;
	uint64_t size; /* the region's size (a power of two, >= 4 KiB) */
	void *ptr;
};

#define ATC_POOL_CLASSES 40

/** struct atc_devreg - a region that backs tensors made in device memory. */
struct atc_devreg {
	void *ptr;
	uint64_t size;
	accdma_key key;
};

/**
 * struct atc_world - one accdma world of this process and what it shares.
 * @w/@q: the world and the one queue every group of it posts on.
 * @dev/@ndev: this process's device and the world's size.
 * @lock: serialises posting (a queue is single-producer) and the pool.
 * @free/@nfree/@capfree: cached regions per size class (2^(12+i) bytes).
 * @regs/@nregs/@capregs: the regions of device-memory tensors (atc_dev_alloc()).
 * @next_gid: the lowest group id this process has not used in this world.
 * @port_fd: the TCP port whose number names the rendezvous, held bound for
 *           the world's life so no other job on this host picks the same.
 */
struct atc_world {
	accdma_world *w;
	accdma_queue *q;
	int dev, ndev;
	pthread_mutex_t lock;
	struct atc_buf *free[ATC_POOL_CLASSES];
	int nfree[ATC_POOL_CLASSES], capfree[ATC_POOL_CLASSES];
	struct atc_devreg *regs;
	int nregs, capregs;
	uint32_t next_gid;
	int port_fd;
	int engines;
};

/**
 * atc_pick_port() - bind a free loopback TCP port and keep it bound.
 * @fd: on success, the bound socket (close it when the world closes).
 * Return: the port number, or a negative errno.
 */
int atc_pick_port(int *fd);

/**
 * atc_world_open() - open a shm world of @ndev processes, this one device @dev.
 * @dev/@ndev: this process's device and the world's size.
 * @port: the rendezvous number every member was given (rank 0's atc_pick_port()).
 * @port_fd: rank 0's bound socket (-1 elsewhere); owned by the world on success.
 * @out: the world. @err/@errlen: the reason on failure.
 * Return: 0 or a negative errno from accdma_world_open().
 */
int atc_world_open(int dev, int ndev, int port, int port_fd, struct atc_world **out, char *err,
		   size_t errlen);

/**
 * atc_world_close() - free the cached buffers and close the world.
 * @aw: the world (NULL is ignored).
 */
void atc_world_close(struct atc_world *aw);

/**
 * atc_buf_get() - a staging buffer of at least @bytes (from the pool, else allocated).
 * @aw: the world. @bytes: the size needed (0 is taken as 1). @out: the buffer.
 * Return: 0; -ENOMEM with the device memory exhausted (ACCDMA_MEM_SIZE).
 */
int atc_buf_get(struct atc_world *aw, uint64_t bytes, struct atc_buf *out);

/**
 * atc_buf_put() - return a buffer to the pool (no op may still name it).
 * @aw: the world. @b: the buffer (its key is cleared).
 */
void atc_buf_put(struct atc_world *aw, struct atc_buf *b);

/**
 * atc_dev_alloc() - device memory for a tensor, found again by atc_dev_find().
 * @aw: the world. @bytes: its size (0 is taken as 1). @ptr: its host address.
 * Return: 0; -ENOMEM (device memory or host memory exhausted).
 */
int atc_dev_alloc(struct atc_world *aw, uint64_t bytes, void **ptr);

/**
 * atc_dev_free() - release what atc_dev_alloc() gave.
 * @aw: the world. @ptr: the address it returned.
 * Return: 0; -ENOENT if it is not one; -EBUSY while an op names the region.
 */
int atc_dev_free(struct atc_world *aw, void *ptr);

/**
 * atc_dev_find() - the region and offset of [@p, @p + @len) if it lies in device memory.
 * @aw: the world. @key/@off: filled when found.
 * Return: 1 when found, else 0.
 */
int atc_dev_find(struct atc_world *aw, const void *p, uint64_t len, accdma_key *key,
		 uint64_t *off);

/**
 * atc_copy() - copy @len bytes into or out of a staging buffer; large copies
 * stream past the cache.
 */
void atc_copy(void *dst, const void *src, uint64_t len);

/** struct atc_opdesc - what a posted op was, to name it in an error. */
struct atc_opdesc {
	enum accdma_op_kind kind;
	int peer;       /* the group rank, -1 for none */
	uint64_t tag;   /* the accdma tag */
	uint64_t bytes;
	const char *what; /* the torch call it belongs to, e.g. "all_reduce" */
	int guard_of;     /* an after_all guarding recv @guard_of: -1 for none */
	int guarded;      /* a recv consumed by its guard, which checks its length */
	uint64_t expect;  /* a guarded recv: the bytes it must receive */
	int src_dev;      /* a guarded recv, once consumed: the device whose message it took */
};

/** struct atc_red - the argument of one reduction exec op. */
struct atc_red {
	void *dst;
	const void *src;
	uint64_t count;
	int dtype, op;
};

/**
 * struct atc_oplist - the ops of one torch call, in posting order.
 * @tok: their tokens (0 once consumed). @st: their statuses once consumed.
 * @desc: what each was. @n/@cap: how many, room.
 * @reds/@nred: exec arguments, freed with the list.
 * @done: how many leading ops are consumed.
 * @short1/@got: 1 + the first recv that got fewer bytes than expected, and how many.
 */
struct atc_oplist {
	accdma_token *tok;
	enum accdma_status *st;
	struct atc_opdesc *desc;
	int n, cap;
	struct atc_red **reds;
	int nred, capred;
	int done;
	int short1;
	uint64_t got;
};

/**
 * atc_post_recv() - post a recv and an after_all guarding it, so that the
 * bytes that landed can be read before the recv's token is consumed.
 * @aw/@ol/@timeout_ms: as atc_post(). @op: the recv. @desc: what it is.
 * @expect: the bytes it must receive. @tok: if not NULL, the recv's token.
 * Return: as atc_post().
 */
int atc_post_recv(struct atc_world *aw, struct atc_oplist *ol, const struct accdma_op *op,
		  const struct atc_opdesc *desc, uint64_t expect, int64_t timeout_ms,
		  accdma_token *tok);

/** atc_ops_free() - free an op list's memory (its tokens must be consumed). */
void atc_ops_free(struct atc_oplist *ol);

/**
 * atc_post() - post one op, waiting out a full queue (back-pressure).
 * @aw: the world. @ol: the list it joins. @op: the descriptor (deps are tokens of @ol).
 * @desc: what it is. @timeout_ms: how long a full queue may hold it up.
 * @tok: if not NULL, its token (also kept in @ol).
 * Return: 0; -ETIMEDOUT if the queue stayed full; other errors of accdma_post().
 */
int atc_post(struct atc_world *aw, struct atc_oplist *ol, const struct accdma_op *op,
	     const struct atc_opdesc *desc, int64_t timeout_ms, accdma_token *tok);

/**
 * atc_add_red() - keep a reduction's argument alive with the list.
 * @ol: the list. Return: a zeroed argument, or NULL when out of memory.
 */
struct atc_red *atc_add_red(struct atc_oplist *ol);

/**
 * atc_wait() - wait for every op of a list, in order, and consume them.
 * @aw: the world. @ol: the list. @timeout_ms: for the whole call.
 * @err/@errlen: on failure, the op that failed (or is stuck) and why.
 * @failed: on failure, the status of the op named (ACCDMA_OK for a timeout).
 * Return: 0 when all completed ACCDMA_OK; -ETIMEDOUT (ops stay pending);
 * -EIO when an op failed, -EMSGSIZE when a recv got fewer bytes than its
 * tensor holds (all are consumed then).
 */
int atc_wait(struct atc_world *aw, struct atc_oplist *ol, int64_t timeout_ms, char *err,
	     size_t errlen, enum accdma_status *failed);

/**
 * atc_stuck() - the op of a list a timed-out atc_wait() stopped at (a guard
 * stands for its recv). @ol: the list. Return: its index, or -1 if none is pending.
 */
int atc_stuck(const struct atc_oplist *ol);

/**
 * atc_test() - consume what is complete of a list without blocking.
 * @aw: the world. @ol: the list.
 * Return: 1 when every op is consumed, 0 when some are pending.
 */
int atc_test(struct atc_world *aw, struct atc_oplist *ol);

/**
 * atc_cancel() - cancel the pending ops of a list, then wait up to @ms for them.
 * @aw: the world. @ol: the list. @ms: how long to wait for them to finish.
 * Return: 1 when none is left pending (its buffers may be reused), else 0.
 */
int atc_cancel(struct atc_world *aw, struct atc_oplist *ol, int64_t ms);

/**
 * atc_describe() - one line naming a list's op @i: kind, peer, tag, bytes, @what.
 * @ol: the list. @i: the op. @buf/@size: where to write. Return: @buf.
 */
char *atc_describe(const struct atc_oplist *ol, int i, char *buf, size_t size);

/* ---- reductions ------------------------------------------------------- */

enum atc_dtype {
	ATC_F32, ATC_F64, ATC_F16, ATC_BF16, ATC_I8, ATC_U8, ATC_I16, ATC_I32, ATC_I64,
	ATC_BOOL, ATC_C64, ATC_C128, ATC__NDTYPES
};
enum atc_redop { ATC_SUM, ATC_PROD, ATC_MIN, ATC_MAX, ATC__NREDOPS };

/**
 * atc_reduce() - dst[i] = op(dst[i], src[i]) for @count elements of @dtype.
 * Return: 0; -EINVAL for an unknown dtype or op, or min/max of complex numbers.
 */
int atc_reduce(void *dst, const void *src, uint64_t count, int dtype, int op);

/** atc_reduce_supported() - 1 if atc_reduce() takes (@dtype, @op). */
int atc_reduce_supported(int dtype, int op);

/** atc_red_exec() - the exec function of a reduction: runs atc_reduce() on an atc_red. */
int atc_red_exec(void *arg);

/* ---- collective plans --------------------------------------------------
 * Each posts this device's part of a collective of the group whose members
 * are the world devices @devs[0..n-1] (this one is @devs[me]), every op on
 * @tag, chained on tokens so that nothing waits on the host between steps.
 * The caller waits on @ol. Buffers are staging buffers of this device.
 */

/** struct atc_group - who a collective runs among. */
struct atc_group {
	struct atc_world *aw;
	const int *devs;
	int n, me;
	uint64_t tag;
	int64_t timeout_ms;
	const char *what;
};

/** atc_plan_barrier() - a dissemination barrier of 1-byte messages through @buf. */
int atc_plan_barrier(const struct atc_group *g, struct atc_oplist *ol, const struct atc_buf *buf);

/** atc_plan_bcast() - binomial-tree broadcast of @bytes of @buf from group rank @root. */
int atc_plan_bcast(const struct atc_group *g, struct atc_oplist *ol, const struct atc_buf *buf,
		   uint64_t bytes, int root);

/**
 * atc_plan_ring_rs() - ring reduce-scatter: @data holds n chunks of @chunk
 * elements of @esize bytes; afterwards chunk @me is the reduction of every
 * member's chunk @me. @tmp has room for n-1 chunks. @last: the token of the
 * final reduction (0 if none).
 */
int atc_plan_ring_rs(const struct atc_group *g, struct atc_oplist *ol, const struct atc_buf *data,
		     const struct atc_buf *tmp, uint64_t chunk, uint64_t esize, int dtype, int op,
		     accdma_token *last);

/**
 * atc_plan_ring_ag() - ring all-gather: chunk @me of @data (@chunk_bytes each)
 * is this member's; afterwards every chunk is filled. @dep: a token the first
 * send waits for (0: none).
 */
int atc_plan_ring_ag(const struct atc_group *g, struct atc_oplist *ol, const struct atc_buf *data,
		     uint64_t chunk_bytes, accdma_token dep);

/** Largest group a ring all-reduce runs on (its send tokens are kept on the stack). */
#define ATC_MAX_RING 1024

/**
 * atc_plan_ring_allreduce() - ring all-reduce: the reduce-scatter of
 * atc_plan_ring_rs(), then the all-gather of atc_plan_ring_ag() chained on its
 * last reduction; every chunk of @data ends as the reduction of all members'.
 * Return: 0; -E2BIG beyond ATC_MAX_RING members; errors of atc_post().
 */
int atc_plan_ring_allreduce(const struct atc_group *g, struct atc_oplist *ol,
			    const struct atc_buf *data, const struct atc_buf *tmp, uint64_t chunk,
			    uint64_t esize, int dtype, int op);

/**
 * atc_plan_alltoall() - chunk p of @in goes to member p, member p's lands in
 * chunk p of @out; @in_off/@out_off/@len give each chunk (n entries each).
 * This member's own chunk is copied by the host (not here).
 */
int atc_plan_alltoall(const struct atc_group *g, struct atc_oplist *ol, const struct atc_buf *in,
		      const struct atc_buf *out, const uint64_t *in_off, const uint64_t *in_len,
		      const uint64_t *out_off, const uint64_t *out_len);

#ifdef __cplusplus
}
#endif
#endif /* ATC_H */
