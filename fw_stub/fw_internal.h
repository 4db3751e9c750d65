/* SPDX-License-Identifier: MIT */
/*
 * fw_internal.h - the firmware stub's own structures: engine -> queue -> op.
 */
#ifndef ACCDMA_FW_INTERNAL_H
#define ACCDMA_FW_INTERNAL_H

#include "fw_stub/fw.h"
#include "queue/trace.h"

/* Engine-private life of an op, beside the shared completion record.
 * PEER: waiting in a rendezvous table, where its partner may complete it.
 * PARKED: a small recv waiting for its eager message, in no table: only its
 * own engine completes it (fw_eager_recv). */
enum fw_op_state { FW_OP_DEPS = 1, FW_OP_READY, FW_OP_PEER, FW_OP_DONE, FW_OP_PARKED };

/**
 * struct fw_op - the engine's copy of a descriptor (never re-read from shared
 * memory after validation) and its progress.
 */
struct fw_op {
	struct q_desc d;
	uint32_t slot;
	uint32_t gen; /* the slot's generation when read: a reused slot is a different op */
	uint8_t state;
	uint8_t deps_held;
	uint8_t withdrawing; /* a send waiting at a far receiver was asked back (cancel, reset) */
	void *addr; /* the resolved local range */
	/* A send waiting at a far receiver that cleared it (msg.c, Q_MSG_CTS):
	 * FW_CLEARED once @clear (its recv: where to write, which op to finish)
	 * is filled in, for generation @clear_gen. Set by the thread serving
	 * messages (which drops a finish for that generation: forged), taken by
	 * the op's engine. */
	_Atomic uint32_t cleared;
	_Atomic uint32_t clear_gen;
	struct q_rdv clear;
	uint64_t wreq; /* FW_CLEAR_WRITING: the link's handle of the write */
};

/* fw_op.cleared: FILLING while the message server writes @clear; WRITING
 * (set by the op's engine) while the write is in flight. */
enum fw_clear_state { FW_CLEAR_NONE = 0, FW_CLEAR_FILLING, FW_CLEARED, FW_CLEAR_WRITING };

/** struct fw_queue - the engine's view of one queue. */
struct fw_queue {
	struct q_queue_sh *sh;
	struct q_desc *desc;
	struct q_cpl *cpl;
	_Atomic uint32_t *sq;
	uint32_t index;
	uint32_t mask;
	uint32_t head;
	int fenced;       /* a fence is pending: later descriptors stay in the ring */
	struct fw_op *ops; /* by slot */
	uint32_t *pend;    /* pending slots in issue order */
	uint32_t npend;
	int retry;         /* an op found the rendezvous table full: poll, don't sleep long */
};

/**
 * struct fw_split - a large copy being shared by the device's engines.
 * @next: (generation, chunk count, next chunk) in one word. @done: chunks copied.
 * @busy: one job at a time per device; an engine that finds it busy copies alone.
 * @err: the first chunk's failure (-errno), 0 if none.
 * @dst/@src: a copy in this process's memory, or, with @pid set, @dst is the
 * local side of a cross-memory attach to @remote in process @pid
 * (@to_remote: which way).
 */
struct fw_split {
	_Atomic uint64_t next;
	_Atomic uint64_t done;
	_Atomic uint32_t busy;
	_Atomic int32_t err;
	uint64_t gen;
	char *dst;
	const char *src;
	uint64_t len;
	int32_t pid;
	int to_remote;
	uint64_t remote;
};

struct fw_device;

/**
 * struct fw_eager_tx - this device's side of its ring into one receiver.
 * @ring: the ring. @pos: the next position to write. @done: the receiver's
 * consumed mark as last read.
 * @credit: a far receiver: its consumed mark, from its last message.
 * @ask: a far receiver: where asking it for a credit stands (enum fw_ask),
 * under eager_tx_lock.
 */
struct fw_eager_tx {
	struct q_eager_ring *ring;
	uint32_t pos;
	uint32_t done;
	_Atomic uint32_t credit;
	_Atomic uint32_t ask;
};

/*
 * A far sender short of room asks its receiver for a credit once, and its
 * small sends wait for the answer: then they go eagerly if it showed room,
 * else by rendezvous, without asking again until a credit moves.
 */
enum fw_ask {
	FW_ASK_NONE,     /* short of room: ask */
	FW_ASK_SENT,     /* asked: wait for the answer */
	FW_ASK_ANSWERED, /* answered, and still short: rendezvous */
};

/**
 * struct fw_eager_rx - what this device has taken in from one sender's ring.
 * @ring: the ring. @cursor: the next position to look at (a message's head).
 * @done: the consumed mark (published in @ring). @held: by slot index, the
 * heads of messages landed that no recv asked for yet; @nheld counts them.
 * @span: by slot index, the positions of the message whose head is there.
 * @index: the held messages' head slots by (tag, seq), open addressing over
 * twice the ring's positions, so at most half full (-1: empty); @bucket: by
 * slot index, where its entry is; @imask: the index's size less one. The
 * four arrays are sized by the world's eager_slots (fw_eager_init()), in one
 * allocation.
 * @waiting: our recvs from this sender that wait in the rendezvous table, or
 * more (never fewer): a landing message is looked up there only if non-zero.
 * @wpos: a far sender: the next position its messages fill (we write them).
 * @credited: a far sender: the consumed mark last sent to it.
 */
struct fw_eager_rx {
	struct q_eager_ring *ring;
	uint32_t cursor;
	uint32_t done;
	uint32_t nheld;
	uint32_t imask;
	uint64_t *held;
	uint8_t *span;
	uint16_t *bucket;
	int16_t *index;
	_Atomic uint32_t waiting;
	_Atomic uint32_t wpos; /* written by the thread serving messages, read by consumers */
	uint32_t credited;
	int far; /* the sender is reached through the link (credits go back as messages) */
};

/** struct fw_engine - one engine thread and the queues it serves. */
struct fw_engine {
	struct fw_device *dev;
	struct q_engine_sh *sh;
	uint32_t index;
	struct os_thread thread;
	int started;
	uint32_t seen_epoch;
	_Atomic int retry; /* written in a pass, read by the engine thread deciding how long to sleep */
	_Atomic int in_pass; /* a thread (engine or polling host) is running a pass */
	_Atomic int napping; /* the engine thread naps while a host thread polls (FW_NAP_*) */
	uint32_t nap_us;     /* how long its next nap is (engine thread only; 0: fw_nap_us) */
	/* the device's poll sessions and hand-overs as the engine last looked
	 * (engine thread only): a session begun since then may keep it napping */
	uint32_t seen_sessions, seen_handoffs;
	struct fw_queue **queues;
	uint32_t nqueues;
};

/**
 * struct fw_stage_tx - this device's staging slots at one far receiver (stage.c).
 * @busy: slots written and not yet given back (under fd->eager_tx_lock).
 * @freed: slots the receiver gave back (in finishes), not yet taken out of @busy.
 */
struct fw_stage_tx {
	uint64_t busy;
	_Atomic uint64_t freed;
};

/** struct fw_stage_msg - a staged message our table had no room for yet. */
struct fw_stage_msg {
	uint64_t tag, seq, length;
	uint32_t slot, gen;
	uint16_t queue;
};

/**
 * struct fw_stage_rx - one far sender's staging slots at this device (stage.c).
 * @busy: slots holding a message not yet delivered.
 * @unfiled: slots whose message our table had no room for yet (inbox holder only).
 * @msg: each slot's message, as it came.
 */
struct fw_stage_rx {
	_Atomic uint64_t busy;
	uint64_t unfiled;
	struct fw_stage_msg msg[Q_STAGE_SLOTS_MAX];
};

/** struct fw_device - a booted device. */
struct fw_device {
	const struct q_arena *w;
	const struct dma_space *space;
	const struct fw_host *host;
	struct q_dev_sh *sh;
	uint32_t id;
	uint64_t spin_ns;
	struct fw_queue *queues;
	struct fw_engine *engines;
	uint32_t nengines;
	int reset_pending;
	_Atomic int stop; /* this process stops this device (the arena's stop flag may be shared) */
	struct fw_split split;
	_Atomic int pollers; /* host threads polling this device now */
	_Atomic uint32_t poll_sessions; /* host poll sessions begun */
	_Atomic uint32_t poll_handoffs; /* ... and ended leaving work to the engines */
	struct fw_eager_tx *eager_tx;  /* by receiver (NULL: the world has no eager rings) */
	struct fw_eager_rx *eager_rx;  /* by sender */
	_Atomic int eager_tx_lock, eager_rx_lock;
	_Atomic uint32_t eager_waiting; /* sum of eager_rx[].waiting */
	uint32_t eager_mask; /* positions per ring - 1, read once from the arena (fw_eager_init) */
	struct fw_link *link; /* devices outside [near_lo, near_lo + near_n) are reached through it */
	uint32_t near_lo, near_n;
	_Atomic int inbox_lock; /* one thread at a time takes the link's messages for this device */
	uint32_t eager_max;  /* largest eager message, read once and checked there too */
	struct fw_stage_tx *stage_tx; /* by far receiver (NULL: no staging) */
	struct fw_stage_rx *stage_rx; /* by far sender */
	uint32_t stage_slots;         /* slots per pair: q_stage_slots() */
	uint32_t stage_unfiled;       /* senders with unfiled slots (inbox holder only) */
	uint64_t *any_seqs;  /* any.c: each source's next recv number on the tag being resolved */
	uint32_t any_next;   /* any.c: the source an any-source recv looks at first */
	_Atomic int any_lock; /* any.c: any_seqs, when several engines share the device */
};

/**
 * fw_eager_lock() - take one of the device's eager locks (tx or rx): only
 * with several engines, otherwise the engine's in_pass flag already lets one
 * thread at a time in. Held for a few stores: yield to a descheduled holder.
 */
static inline void fw_eager_lock(const struct fw_device *fd, _Atomic int *l)
{
	if (fd->nengines < 2)
		return;
	while (os_exchange(l, 1, OS_ACQUIRE))
		while (os_load(l, OS_RELAXED))
			os_yield();
}

/** fw_eager_unlock() - release what fw_eager_lock() took. */
static inline void fw_eager_unlock(const struct fw_device *fd, _Atomic int *l)
{
	if (fd->nengines > 1)
		os_store(l, 0, OS_RELEASE);
}

/* ops.c */
int fw_queue_progress(struct fw_device *fd, struct fw_queue *q);
int fw_queue_submit(struct fw_device *fd, struct fw_queue *q, uint32_t count);
void fw_queue_flush(struct fw_device *fd, struct fw_queue *q);

/* match.c */
/* Sends this large are copied by their recv's engine: every send too large to go
 * eagerly (ACCDMA_EAGER_MAX is at most 1 KiB). Over shm each process then
 * copies what it receives, where "the second to arrive copies" left one
 * process copying both directions while the other idled. */
#define FW_HANDOFF_MIN (1u << 11)
enum fw_arrive { FW_ARRIVE_DONE, FW_ARRIVE_WAIT, FW_ARRIVE_RETRY };
enum fw_arrive fw_match_arrive(struct fw_device *fd, struct fw_queue *q, struct fw_op *op);
void fw_match_fail(struct fw_device *fd, struct fw_queue *q, struct fw_op *op, enum accdma_status st);
int fw_match_withdraw(struct fw_device *fd, struct fw_queue *q, struct fw_op *op, enum accdma_status st);
int fw_match_refuse_handoff(struct fw_device *fd, struct fw_queue *q, struct fw_op *op);
int fw_match_claim_recv(struct fw_device *fd, int32_t src, uint64_t tag, uint64_t seq, struct q_rdv *mate);
int32_t fw_match_probe_send(struct fw_device *fd, uint64_t tag, const uint64_t *seqs, uint32_t n,
			    uint32_t first);

/* eager.c */
int fw_eager_init(struct fw_device *fd);
void fw_eager_fini(struct fw_device *fd);
int fw_eager_send(struct fw_device *fd, struct fw_queue *q, struct fw_op *op);
enum fw_arrive fw_eager_recv(struct fw_device *fd, struct fw_queue *q, struct fw_op *op, int lost);
int fw_eager_poll(struct fw_device *fd);
int fw_eager_parked_miss(const struct fw_device *fd, const struct fw_op *op);
void fw_eager_unwait(struct fw_device *fd, int32_t src);
void fw_eager_fail_recv(struct fw_device *fd, struct fw_queue *q, struct fw_op *op, enum accdma_status st);
int fw_eager_probe(struct fw_device *fd, uint32_t src, uint64_t tag, uint64_t seq);

/* any.c */
#define FW_ANY_LOST (-1)   /* fw_any_number(): the recv completes PEER_LOST */
#define FW_ANY_FAILED (-2) /* ... NOT_ATTEMPTED (no host numbering, no memory) */
int fw_any_number(struct fw_device *fd, struct fw_queue *q, struct fw_op *op);
void fw_any_skip(struct fw_device *fd, struct fw_op *op);

/* complete.c */
void fw_complete_own(struct fw_device *fd, struct fw_queue *q, struct fw_op *op,
		     enum accdma_status st, uint64_t bytes);
void fw_op_finish(struct fw_device *fd, struct fw_op *op);
void fw_complete_record(const struct q_arena *w, struct q_dev_sh *d, struct q_queue_sh *qs, struct q_cpl *c,
			enum accdma_status st, uint64_t bytes, int own, int kick_all);

/* Does record @c still hold the posted op of generation @gen (not done, not
 * reused)? State first: if it is a newer op's POSTED, the generation read
 * after it (ordered by the acquire) is the newer one too, and we see the change. */
static inline int fw_cpl_holds(const struct q_cpl *c, uint32_t gen)
{
	return os_load(&c->state, OS_ACQUIRE) == Q_SLOT_POSTED && os_load(&c->gen, OS_ACQUIRE) == gen;
}

/* split.c */
int fw_copy(struct fw_device *fd, void *dst, const void *src, uint64_t len);
int fw_copy_vm(struct fw_device *fd, int32_t pid, void *local, uint64_t remote, uint64_t len, int to_remote);
int fw_split_help(struct fw_device *fd);

/* fw_engine.napping: not napping, napping fw_nap_us, or napping longer. */
enum { FW_NAP_NONE, FW_NAP_SHORT, FW_NAP_LONG };

/**
 * fw_wake_nappers() - cut short the nap of the device's napping engines.
 * @fd: the device.
 * The caller published what they should see with a seq_cst access (pairs with
 * engine_nap(): either it sees that, or we see it napping). Inline, so that
 * split.c needs nothing of engine.c: the files' calls form no cycle.
 */
static inline void fw_wake_nappers(struct fw_device *fd)
{
	for (uint32_t e = 0; e < fd->nengines; e++) {
		if (!os_load(&fd->engines[e].napping, OS_SEQ_CST))
			continue;
		os_fetch_add(&fd->sh->engines[e].wake_seq, 1, OS_RELEASE);
		os_wake32(&fd->sh->engines[e].wake_seq);
	}
}

/* mailbox.c */
int fw_mailbox_poll(struct fw_device *fd);

/* fault.c */
int fw_fault_hit(enum fw_fault_site site);

/**
 * fw_race_point() - run the fw_race_set() function of @site, if any.
 * @dev/@engine: the engine at the site.
 */
void fw_race_point(enum fw_race_site site, uint32_t dev, uint32_t engine);

#endif /* ACCDMA_FW_INTERNAL_H */
