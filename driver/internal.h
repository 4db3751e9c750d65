/* SPDX-License-Identifier: MIT */
/*
 * internal.h - the host driver's own structures.
 */
#ifndef ACCDMA_DRIVER_INTERNAL_H
#define ACCDMA_DRIVER_INTERNAL_H

#include <errno.h>
#include <pthread.h>

#include "include/accdma.h"
#include "dma/dma.h"
#include "fw_stub/fw.h"
#include "queue/queue.h"
#include "queue/trace.h"
#include "driver/transport.h"

#define DRV_WORLD_MAGIC 0x574f524cu /* "WORL" */
#define DRV_QUEUE_MAGIC 0x51554555u /* "QUEU" */
#define DRV_DEAD_MAGIC 0xdeadbeefu

/* Post flags for library-internal ops. */
#define DRV_POST_INTERNAL 0x1 /* reserved tags and empty transfers allowed */

/** struct drv_seq_ent - the next sequence number of one (peer, tag, direction). */
struct drv_seq_ent {
	uint64_t tag;
	int32_t peer;
	uint32_t dir; /* 0 empty, ACCDMA_OP_SEND or ACCDMA_OP_RECV */
	_Atomic uint64_t next; /* atomic: drv_seq_peek() may read it while a post numbers */
};

/* drv_seq_number()'s mark on a recv the engine numbers (its place in its
 * tag's order of deferred recvs below it): an any-source recv, or a recv
 * posted behind one that has not matched yet. */
#define DRV_SEQ_DEFER (1ull << 63)

/**
 * struct drv_seq_any - a tag that has seen an any-source recv on this device.
 * @posted: deferred recvs posted (each took the next place).
 * @numbered: places settled, in order (numbered by the engine, or skipped);
 *            while < @posted, new recvs with the tag are deferred too.
 * @skips/@nskip/@cap: places given up out of turn (a recv that ended before
 *            its turn), settled when the turn reaches them.
 */
struct drv_seq_any {
	struct drv_seq_any *next;
	uint64_t tag;
	uint64_t posted;
	uint64_t numbered;
	uint64_t *skips;
	uint32_t nskip, cap;
};

/** struct drv_seq_table - per-device numbering of sends and recvs (shared by its queues). */
struct drv_seq_table {
	atomic_flag lock;
	/* The device has one queue, so one posting thread: numbering takes the
	 * lock only to add an entry (drv_seq_peek() must not see a half-grown table). */
	int single;
	struct drv_seq_ent *ents;
	uint32_t cap;
	uint32_t count;
	/* The entry each direction used last: a queue that sends to one peer
	 * and receives from one numbers without hashing. NULL after a grow. */
	struct drv_seq_ent *last[2];
	/* Tags with any-source recvs (few: a list). Once there is one, every
	 * numbering takes the lock: the engines number deferred recvs too. */
	struct drv_seq_any *any;
};

/** struct drv_dev - host-side state of one local device. */
struct drv_dev {
	struct drv_seq_table seqs;
	pthread_mutex_t mb_lock;  /* one mailbox request at a time */
	pthread_mutex_t mem_lock; /* region table updates */
	uint32_t region_gen[Q_MAX_REGIONS];
	/* Bytes allocated: the budget is checked against this private count
	 * (a peer can scribble on the arena's copy, which the mailbox reports). */
	_Atomic uint64_t mem_used;
	/* The regions as this process made them: what it frees and reports,
	 * never the shared table's copy, which a peer process can scribble on. */
	struct drv_region {
		void *addr;
		uint64_t offset, size;
		uint32_t key; /* 0: free */
		int registered;
	} regions[Q_MAX_REGIONS];
	struct fw_device *fw;
};

struct accdma_queue {
	uint32_t magic;
	struct accdma_world *world;
	uint32_t dev;
	uint32_t index;
	struct q_queue_sh *sh;
	struct q_desc *desc;
	struct q_cpl *cpl;
	_Atomic uint32_t *sq;
	uint32_t mask;
	uint32_t cursor;
	uint32_t tail;
	uint64_t order;
	uint32_t waits_at_submit; /* world's waits when a post of ours was last read inline */
	/* By slot, the exec posted there: its descriptor carries only a handle
	 * (slot and generation), which drv_exec_run() resolves. Local queues only. */
	struct drv_exec {
		accdma_exec_fn fn;
		void *arg;
		uint32_t gen;
	} *exec;
};

struct accdma_world {
	uint32_t magic;
	struct accdma_world_opts opts;
	int *numa_map;
	uint64_t spin_ns;
	int host_poll; /* waiters run engine passes themselves (ACCDMA_POLL) */
	int threaded;  /* engine threads run; 0: polled devices, waiters do all the work */
	_Atomic uint32_t waits; /* bumped by waits and tests that find an op not done (a hint) */
	/* Host waits that found their ops done only after a full sleep slice: a
	 * completion's wake-up that never came (the stall report and close say so). */
	_Atomic uint64_t late_waits;
	struct q_arena a; /* the mapped arena (a.sh) and this process's geometry of it */
	struct dma_space space;
	struct drv_dev *devs; /* indexed by rank; only local ones are set up */
	struct accdma_queue *queues; /* ndev * queues */
	int first_local;
	int nlocal;
	const struct drv_transport *tp; /* the transport (driver/transport.h) */
	struct fw_host host;            /* what the engines may ask of us (exec) */
	void *tp_state;                 /* and its own state, NULL if none */
	/* Host threads blocked in a call on the world (a wait or a mailbox call),
	 * and whether close has begun: close wakes them and waits for them to
	 * leave before it frees what they read (drv_block_enter()). */
	_Atomic uint32_t blocked;
	_Atomic uint32_t closing;
	struct accdma_world *next_closed;
};

/**
 * drv_note_wait() - a host thread waits for (or tests) an op of @w that is not
 * done yet: it posts and then waits for what it posted, so its next post is
 * read inline (drv_post). A wait that finds its ops done (a stream refilling
 * its window) does not count. A plain load and store: two threads bumping at
 * once lose one, which only says "someone waited" once instead of twice.
 */
static inline void drv_note_wait(struct accdma_world *w)
{
	atomic_store_explicit(&w->waits, atomic_load_explicit(&w->waits, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

/* token.c */
/**
 * drv_wait_race_set() - the race-injection point of the host's sleep path:
 * run @fn(@arg) in every waiter that has announced it sleeps and whose look
 * found its ops not done, just before it sleeps: where a completion's wake-up
 * that races the sleep is lost (queue/queue.h). A test completes an op there
 * with its wake-up dropped (fw_stub's fault point WAKE). NULL clears it.
 */
void drv_wait_race_set(void (*fn)(void *arg), void *arg);

/* world.c */
/** drv_world_check() - 0 if @w is an open world, else -EBADF (every call's first check). */
static inline int drv_world_check(const struct accdma_world *w)
{
	return w && w->magic == DRV_WORLD_MAGIC ? 0 : -EBADF;
}
int drv_dev_check(const struct accdma_world *w, int dev);

/* seq.c */
int drv_seq_init(struct drv_seq_table *t, int single);
void drv_seq_fini(struct drv_seq_table *t);
int drv_seq_number(struct drv_seq_table *t, const struct accdma_op *ops, int count, uint64_t *seqs);
uint64_t drv_seq_peek(struct drv_seq_table *t, int32_t peer, uint64_t tag, uint32_t dir);
int drv_seq_order(void *ctx, uint32_t dev, uint64_t tag, uint64_t place, int32_t src, int how, uint64_t *seq);

/* post.c */
int drv_exec_run(void *ctx, uint32_t dev, uint32_t queue, uint64_t handle);
int drv_post(struct accdma_queue *q, const struct accdma_op *ops, int count, accdma_token *tokens,
	     unsigned int flags);
int drv_free_slots(struct accdma_queue *q);

/* token.c */
int drv_poll(struct accdma_world *w);

/* token_dup.c */
int drv_tokens_repeat(const accdma_token *tokens, int count);

/* block.c */
int drv_block_enter(struct accdma_world *w);
void drv_block_leave(struct accdma_world *w);
int drv_block_shutdown(struct accdma_world *w);
/** drv_closing() - has accdma_world_close() begun on @w? (relaxed: a blocked
 * thread looks again and again, and the closer waits for it either way) */
static inline int drv_closing(const struct accdma_world *w)
{
	return atomic_load_explicit(&w->closing, memory_order_relaxed) != 0;
}
uint64_t drv_wait_spin_ns(struct accdma_world *w, accdma_token t);
int drv_token_cpl(struct accdma_world *w, accdma_token t, struct q_queue_sh **qs, struct q_cpl **c);

/* diag.c */
/* Shortest timed-out wait that is described on stderr (accdma_wait()). */
#define DRV_LOG_TIMEOUT_MIN_MS 1000
void drv_log_timeout(struct accdma_world *w, accdma_token t, int64_t ms);

/* mailbox.c */
int drv_mailbox_call(struct accdma_world *w, int dev, uint32_t cmd);

/* opts.c */
int drv_parse_numa_map(const char *s, int *map, int n);
const char *drv_env(const char *name);

#endif /* ACCDMA_DRIVER_INTERNAL_H */
