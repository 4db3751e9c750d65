/* SPDX-License-Identifier: MIT */
/*
 * queue.h - the hardware interface in memory: the layout the host driver and
 * the device engines share (its structures in queue/abi.h), each process's
 * own geometry of it, and the ring, token, slot and doorbell helpers.
 *
 * Everything lives in one arena of plain memory (anonymous memory for the
 * local transport, a shared segment for shm). Records refer to each other by
 * offsets and indices, never by pointers, so any process or kernel that maps
 * the arena at any address sees the same thing.
 *
 * Per queue (virtio-like split ring):
 *   desc[depth]  descriptor table, written by the host before publishing;
 *   cpl[depth]   completion records (one per slot: state, generation, status);
 *   sq[depth]    submission ring of slot indices, host produces, engine consumes.
 * A token names (device, queue, slot, generation).
 */
#ifndef ACCDMA_QUEUE_H
#define ACCDMA_QUEUE_H

#include "queue/os.h"

#include "include/accdma.h"

#include "queue/abi.h"

_Static_assert(Q_MAX_DEPS == ACCDMA_MAX_DEPS, "a descriptor carries the API's dependencies");
_Static_assert(Q_MSG_DATA_MAX == ACCDMA_EAGER_MAX, "a message carries the largest eager send");
_Static_assert(offsetof(struct q_msg, data) == Q_MSG_HEAD_BYTES, "a message's header is what travels");

/** q_msg_bytes() - the bytes of @m that travel: its header, and an eager send's payload. */
static inline uint32_t q_msg_bytes(const struct q_msg *m)
{
	return Q_MSG_HEAD_BYTES +
	       ((m->type == Q_MSG_EAGER || m->type == Q_MSG_CTS) && m->len <= Q_MSG_DATA_MAX ? m->len : 0);
}

/** q_queue_completed() - ops of queue @qs completed so far, by any engine. */
static inline uint64_t q_queue_completed(struct q_queue_sh *qs)
{
	return os_load(&qs->completed_own, OS_SEQ_CST) + os_load(&qs->completed, OS_SEQ_CST);
}

/**
 * q_stage_slots() - staging slots a device keeps for each sender in a world of
 * @ndev devices (both ends compute it): 0 where the budget leaves none.
 */
static inline uint32_t q_stage_slots(uint32_t ndev)
{
	uint32_t n = ndev ? Q_STAGE_BUDGET / Q_STAGE_BYTES / ndev : 0;

	return n < Q_STAGE_SLOTS_MAX ? n : Q_STAGE_SLOTS_MAX;
}

/** q_eager_slots_ok() - 1 if @slots is a ring size the layout can make (a power of two in range). */
static inline int q_eager_slots_ok(uint32_t slots)
{
	return slots >= Q_EAGER_SLOTS_LARGE_WORLD && slots <= Q_EAGER_SLOTS_MAX && !(slots & (slots - 1));
}

/** q_eager_stamp() - the non-zero stamp of ring position @pos. */
static inline uint32_t q_eager_stamp(uint32_t pos)
{
	return pos | 0x80000000u;
}

/** q_eager_span() - ring positions a message of @len bytes takes (1 for 0..Q_EAGER_HEAD_BYTES bytes). */
static inline uint32_t q_eager_span(uint64_t len)
{
	if (len <= Q_EAGER_HEAD_BYTES)
		return 1;
	return 1 + (uint32_t)((len - Q_EAGER_HEAD_BYTES + Q_EAGER_CONT_BYTES - 1) / Q_EAGER_CONT_BYTES);
}

/** q_eager_ring_bytes() - bytes of one ring of @slots positions. */
static inline uint64_t q_eager_ring_bytes(uint32_t slots)
{
	return Q_CACHELINE + (uint64_t)slots * sizeof(struct q_eager_slot);
}

/* ---- tokens ------------------------------------------------------------ */

#define Q_TOK_SLOT_BITS 16
#define Q_TOK_QUEUE_BITS 6
#define Q_TOK_DEV_BITS 10
#define Q_TOK_GEN_BITS 32

/** q_token_make() - encode a token. gen is never 0, so neither is a token. */
static inline uint64_t q_token_make(uint32_t dev, uint32_t queue, uint32_t slot, uint32_t gen)
{
	return ((uint64_t)gen << 32) | ((uint64_t)dev << 22) | ((uint64_t)queue << 16) | slot;
}
static inline uint32_t q_token_gen(uint64_t t) { return (uint32_t)(t >> 32); }
static inline uint32_t q_token_dev(uint64_t t) { return (uint32_t)(t >> 22) & 0x3ff; }
static inline uint32_t q_token_queue(uint64_t t) { return (uint32_t)(t >> 16) & 0x3f; }
static inline uint32_t q_token_slot(uint64_t t) { return (uint32_t)t & 0xffff; }

/* ---- region keys ------------------------------------------------------- */

static inline uint32_t q_key_make(uint32_t index, uint32_t gen) { return (gen << 8) | index; }
static inline uint32_t q_key_index(uint32_t key) { return key & 0xff; }

/* ---- geometry and navigation ------------------------------------------- */

/**
 * struct q_geom - where everything lives in an arena. Every process (and a
 * kernel module) computes it from the world's shape with q_geom_init() and
 * keeps it in private memory: no offset, count or bound is ever read back
 * from shared memory, so a peer that scribbles on the arena cannot steer
 * anyone's loads or stores outside it. Every device block has the same
 * layout, so the offsets inside a block (_rel) hold for all of them.
 */
struct q_geom {
	uint32_t ndev, nq, engines, depth;
	uint32_t rdv_cap;     /* rendezvous entries per device, a power of two */
	uint32_t eager_max;   /* largest eager send (0: none) */
	uint32_t eager_slots; /* positions per eager ring (0: no rings) */
	uint32_t pshared;     /* the arena is shared between processes */
	uint64_t size;        /* bytes of the arena */
	uint64_t dev_off, dev_stride;
	uint64_t queue_rel;   /* struct q_queue_sh[nq], from a device block */
	uint64_t qmem_rel;    /* queue 0's descriptor table, from a device block */
	uint64_t qmem_stride; /* bytes of one queue's tables */
	uint64_t cpl_rel, sq_rel; /* a queue's records and ring, from its descriptor table */
	uint64_t rdv_rel;
	uint64_t eager_rel;   /* incoming eager rings, one per sender (0: none) */
};

/** struct q_arena - a mapped arena and this process's own geometry of it. */
struct q_arena {
	struct q_world_sh *sh;
	struct q_geom g;
};

/** q_at() - the address of arena offset @off (below g.size: the caller's bound). */
static inline void *q_at(const struct q_arena *a, uint64_t off)
{
	return (char *)a->sh + off;
}

/** q_dev() - device @dev's block (@dev < g.ndev). */
static inline struct q_dev_sh *q_dev(const struct q_arena *a, uint32_t dev)
{
	return (struct q_dev_sh *)q_at(a, a->g.dev_off + (uint64_t)dev * a->g.dev_stride);
}

/** q_queue() - the shared control of queue @q of device @dev (@q < g.nq). */
static inline struct q_queue_sh *q_queue(const struct q_arena *a, uint32_t dev, uint32_t q)
{
	return (struct q_queue_sh *)((char *)q_dev(a, dev) + a->g.queue_rel) + q;
}

static inline char *q_qmem(const struct q_arena *a, uint32_t dev, uint32_t q)
{
	return (char *)q_dev(a, dev) + a->g.qmem_rel + (uint64_t)q * a->g.qmem_stride;
}

/** q_descs() - the descriptor table of queue @q of device @dev (g.depth entries). */
static inline struct q_desc *q_descs(const struct q_arena *a, uint32_t dev, uint32_t q)
{
	return (struct q_desc *)q_qmem(a, dev, q);
}

/** q_cpls() - the completion records of queue @q of device @dev (g.depth entries). */
static inline struct q_cpl *q_cpls(const struct q_arena *a, uint32_t dev, uint32_t q)
{
	return (struct q_cpl *)(q_qmem(a, dev, q) + a->g.cpl_rel);
}

/** q_sq() - the submission ring of queue @q of device @dev (g.depth entries). */
static inline _Atomic uint32_t *q_sq(const struct q_arena *a, uint32_t dev, uint32_t q)
{
	return (_Atomic uint32_t *)(q_qmem(a, dev, q) + a->g.sq_rel);
}

/** q_queue_engine() - which engine of its device serves queue @q. */
static inline uint32_t q_queue_engine(const struct q_geom *g, uint32_t q)
{
	return q % g->engines;
}

/** q_rdv_table() - device @dev's rendezvous table (g.rdv_cap entries). */
static inline struct q_rdv *q_rdv_table(const struct q_arena *a, uint32_t dev)
{
	return (struct q_rdv *)((char *)q_dev(a, dev) + a->g.rdv_rel);
}

/** q_eager_ring() - the ring carrying small sends from @src to @dst (g.eager_rel != 0). */
static inline struct q_eager_ring *q_eager_ring(const struct q_arena *a, uint32_t dst, uint32_t src)
{
	return (struct q_eager_ring *)((char *)q_dev(a, dst) + a->g.eager_rel +
				       (uint64_t)src * q_eager_ring_bytes(a->g.eager_slots));
}

/* ---- layout (layout.c) -------------------------------------------------- */

/**
 * q_layout_size() - bytes an arena needs for this geometry.
 * @ndev: devices. @nq: queues per device. @depth: slots per queue (power of two).
 * Return: the size in bytes.
 */
uint64_t q_layout_size(uint32_t ndev, uint32_t nq, uint32_t depth);

/**
 * q_eager_cap() - the largest message rings of @slots positions carry: an
 * eighth of a ring, so that one large message never leaves the ring too full
 * for the small ones behind it (488 bytes in the 128-position rings of worlds
 * above 16 devices, ACCDMA_EAGER_MAX in deeper ones).
 * @slots: positions per ring (q_eager_slots_ok()).
 * Return: the bytes.
 */
uint32_t q_eager_cap(uint32_t slots);

/**
 * q_eager_max_for() - the largest eager send a world takes when @eager_max is asked for.
 * @ndev: devices. @depth: slots per queue (with @ndev, they size the rings).
 * @eager_max: what was asked for.
 * Return: 0 without rings (or for an out-of-range ask), else @eager_max,
 * lowered to q_eager_cap() of the rings this geometry has.
 */
uint32_t q_eager_max_for(uint32_t ndev, uint32_t depth, uint32_t eager_max);

/**
 * q_geom_init() - compute an arena's geometry from the world's shape.
 * @g: filled in. @ndev/@nq/@engines/@depth: the shape (depth a power of two).
 * @eager_max: largest eager send asked for (0..ACCDMA_EAGER_MAX); lowered to
 *             what the rings carry (q_eager_max_for()), 0 without rings.
 * @pshared: the arena is shared between processes.
 * Return: 0, or -EINVAL for a shape out of range.
 */
int q_geom_init(struct q_geom *g, uint32_t ndev, uint32_t nq, uint32_t engines, uint32_t depth,
		uint32_t eager_max, int pshared);

/**
 * q_layout_init() - lay out an arena of g.size zeroed bytes: its header, and
 * each device's id.
 * @a: the arena and its geometry (q_geom_init()).
 */
void q_layout_init(const struct q_arena *a);

/**
 * q_layout_matches() - does the header of a mapped arena describe geometry @g?
 * @sh: the header, as another process laid it out. @g: this process's geometry.
 * A joining process checks once that the master meant the same world; nothing
 * it reads there is used afterwards.
 * Return: 1 if so, 0 if not.
 */
int q_layout_matches(const struct q_world_sh *sh, const struct q_geom *g);

/* ---- slot references (slot.c) ------------------------------------------- */

/**
 * q_slot_tryget() - pin a slot for a dependent if it holds generation @gen
 * and that op's token is live.
 * @c: the completion record. @gen: the expected generation.
 * Return: 1 if pinned, 0 if the token was consumed or the slot reused.
 */
int q_slot_tryget(struct q_cpl *c, uint32_t gen);

/**
 * q_slot_put() - drop a dependent's pin.
 * @c: the completion record.
 */
void q_slot_put(struct q_cpl *c);

/**
 * q_slot_consume_token() - the host gives an op's token back (consume or release).
 * @c: the completion record.
 * @shared: the device has more than one queue, so another queue's producer
 *          may pin the slot meanwhile: a locked exchange (see slot.c).
 *          Otherwise a plain store.
 * Inline: every wait gives back each token it waited for.
 * Return: 0, or -ESTALE if the token was already given back.
 */
static inline int q_slot_consume_token(struct q_cpl *c, int shared)
{
	if (shared)
		return os_exchange(&c->token, 0, OS_SEQ_CST) ? 0 : -ESTALE;
	if (!os_load(&c->token, OS_RELAXED))
		return -ESTALE;
	/* release: the caller read the status before the slot can be reused */
	os_store(&c->token, 0, OS_RELEASE);
	return 0;
}

/**
 * q_slot_reusable() - may the queue's producer take this slot for a new op?
 * @c: the completion record.
 * Inline: every post asks it once per op, and the call cost as much as the test.
 * Return: 1 if it was never used, or is done with its token consumed and no
 * dependent pinning it.
 */
static inline int q_slot_reusable(struct q_cpl *c)
{
	uint32_t st = os_load(&c->state, OS_ACQUIRE);

	if (st == Q_SLOT_FREE)
		return 1;
	/* seq_cst loads (plain on x86): token, then pins, against q_slot_tryget's order */
	return st == Q_SLOT_DONE && !os_load(&c->token, OS_SEQ_CST) &&
	       !os_load(&c->refs, OS_SEQ_CST);
}

/**
 * q_single_writer_add() - add @d to counter @c that only one thread at a time
 * writes (readers may be anywhere): a plain load and store, no locked
 * instruction. Works for any width of _Atomic unsigned counter.
 */
#define q_single_writer_add(c, d)                                                               \
	os_store((c), os_load((c), OS_RELAXED) + (d),         \
			      OS_RELAXED)

/* ---- doorbells and sleeping (doorbell.c) -------------------------------- */

/*
 * Sleeping and waking is a Dekker pair: a kicker publishes work, then reads
 * whether the sleeper sleeps; a sleeper announces it sleeps, then looks for
 * work. Each side needs a full fence between its store and its load. The
 * kicker's side is the hot one (every post, send and completion), the
 * sleeper's the cold one (it has nothing to do). So, as liburcu and folly do,
 * the fence is made asymmetric: a process registered for
 * membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) kicks with a compiler barrier
 * only, and a sleeper of such a process issues the membarrier, which runs a
 * full fence on every CPU running a registered process's thread. A kicker
 * whose process, or whose target's process, is not registered (no kernel
 * support, a seccomp filter, ACCDMA_MEMBARRIER=0) uses a real fence, as
 * before: the pair stays correct per process, with no agreement needed.
 *
 * The membarrier can miss a CPU: Linux skips a CPU whose run queue says its
 * process is not registered, and a thread exiting there clears that mark
 * until a thread of another process runs on it
 * (tools/accdma-bw/probe/membarrier-probe.c shows it). A kick from that CPU is then
 * fenced by nothing, and its store can still be on its way when the sleeper
 * looks. So no sleeper sleeps long on one look: it looks again after
 * Q_SLEEP_RECHECK_NS, when any store in flight has landed; an engine then
 * sleeps on with a backstop look that backs off to once in two seconds
 * (docs/design-notes.md, "No sleep is for good").
 */

/* A sleeper's second look, after a first sleep this long (ns). */
#ifndef Q_SLEEP_RECHECK_NS
#define Q_SLEEP_RECHECK_NS 50000
#endif

/**
 * q_asym_register() - register this process for asymmetric fences, once.
 * @allow: the world may use them (opts.membarrier); 0 asks nothing.
 * Return: 1 if its kicks may be light and its sleepers will issue the
 * membarrier; 0 if not (not allowed, or the kernel says no).
 */
int q_asym_register(int allow);

/** q_asym_registered() - 1 if this process has registered (q_asym_register()). */
int q_asym_registered(void);

/**
 * q_kick_fence() - the kicker's fence, after publishing work for device @d's
 * engines or host waiters and before reading whether they sleep.
 * (Out of line: GCC's ThreadSanitizer refuses a fence inlined into its caller.)
 */
void q_kick_fence(const struct q_dev_sh *d);

/**
 * q_sleep_fence() - the sleeper's fence, after announcing that a thread of
 * device @d (its engine, or a host waiter) sleeps and before looking for
 * work once more. A membarrier when @d's process registered (q_asym_register()).
 */
void q_sleep_fence(struct q_dev_sh *d);

/**
 * q_engine_wake() - wake a sleeping engine: bump its doorbell word, futex wake.
 * @e: the engine. The slow half of a kick, out of line.
 */
void q_engine_wake(struct q_engine_sh *e);

/**
 * q_engine_kick_fenced() - q_engine_kick() for a caller that has just issued
 * q_kick_fence(@d) after publishing (one fence for several kicks).
 * @e: the engine.
 */
static inline void q_engine_kick_fenced(struct q_engine_sh *e)
{
	if (os_load(&e->sleeping, OS_RELAXED))
		q_engine_wake(e);
}

/**
 * q_device_kick() - q_engine_kick() for engines @first .. @n - 1 of device @d,
 * with one fence for all of them.
 * @d: the device. @first/@n: which engines.
 * Pairs with q_sleep_fence() in the engine's sleep path: either the engine
 * sees what we published, or we see it sleeping and wake it.
 */
static inline void q_device_kick(struct q_dev_sh *d, uint32_t first, uint32_t n)
{
	q_kick_fence(d);
	for (uint32_t e = first; e < n; e++)
		q_engine_kick_fenced(&d->engines[e]);
}

/**
 * q_engine_kick() - make engine @e of device @d look at its queues again;
 * wakes it only if it sleeps. The caller has already published what it
 * should see.
 */
static inline void q_engine_kick(struct q_dev_sh *d, uint32_t e)
{
	q_device_kick(d, e, e + 1);
}

/* The OS services under the names the host driver uses (queue/os.h). */
static inline uint64_t q_now_ns(void) { return os_now_ns(); }
static inline void q_cpu_relax(void) { os_cpu_relax(); }
static inline int q_futex_wait(_Atomic uint32_t *addr, uint32_t val, int64_t timeout_ns)
{
	return os_wait32(addr, val, timeout_ns);
}
static inline void q_futex_wake(_Atomic uint32_t *addr) { os_wake32(addr); }

#endif /* ACCDMA_QUEUE_H */
