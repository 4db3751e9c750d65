/* SPDX-License-Identifier: MIT */
/*
 * abi.h - the hardware interface's layout: everything the host driver and
 * the device engines share, as plain memory (an arena of one process, a
 * shared segment, an mmap of a kernel module's pages, registered memory).
 *
 * Fixed-width types only: no pointer, no pthread type, no public-API struct,
 * no function address (an exec names its function by a handle the host side
 * resolves). A user process and a kernel module include it alike; words that
 * several threads touch at once are Q_ATOMIC(), C11 atomics in user space
 * and plain words the kernel's accessors reach in the kernel (queue/os.h).
 * Where each structure lives is not here: every process computes it
 * (struct q_geom, queue.h).
 */
#ifndef ACCDMA_QUEUE_ABI_H
#define ACCDMA_QUEUE_ABI_H

#ifdef __KERNEL__
#include <linux/types.h>
#define Q_ATOMIC(t) t
#else
#include <stdint.h>
#define Q_ATOMIC(t) _Atomic t
#endif

#define Q_MAX_DEPS 16 /* dependency tokens a descriptor carries (ACCDMA_MAX_DEPS) */
#define Q_CACHELINE 64
#define Q_MAX_REGIONS 256
#define Q_MAX_ENGINES 16
#define Q_MAX_QUEUES 64
#define Q_MAX_DEVICES 1024
#define Q_FW_VERSION 0x00010000u
#define Q_WORLD_MAGIC 0xacc0d3a1u

/* Descriptor flags. */
#define Q_DF_INTERNAL 0x1 /* library-internal op: zero length allowed (barrier) */
/* A recv whose sequence number the host could not give at post time (an
 * any-source recv, or a recv behind one on its tag): @seq holds its place in
 * the tag's order of such recvs, and the engine numbers it (fw_stub/any.c). */
#define Q_DF_DEFER 0x2

/* Completion slot states. */
enum q_slot_state {
	Q_SLOT_FREE = 0,
	Q_SLOT_RESERVED, /* taken by the host, not yet published */
	Q_SLOT_POSTED,
	Q_SLOT_DONE,
};

/**
 * struct q_desc - one descriptor. Memory is named by (key, offset, length).
 * Written by the host before the slot index is published on the sq ring;
 * the engine copies it before validating (it never re-reads it).
 */
struct q_desc {
	uint16_t kind;
	uint16_t flags;
	uint16_t num_deps;
	uint16_t pad0;
	int32_t peer;
	uint32_t key;
	uint64_t tag;
	uint64_t seq;
	uint64_t offset;
	uint64_t length;
	uint32_t remote_key;
	uint32_t pad1;
	uint64_t remote_offset;
	uint64_t order; /* position in the queue's issue order (diagnostics) */
	uint64_t exec; /* exec: a handle the host side resolves to its function (fw_host_ops) */
	uint64_t pad2;
	uint64_t deps[Q_MAX_DEPS];
};

/**
 * struct q_cpl - the completion record of one slot. @state moves
 * FREE -> RESERVED -> POSTED (host) -> DONE (any engine) -> RESERVED (the
 * queue's producer takes it again: q_slot_reusable()).
 * A done slot is reused once its @token is consumed and no dependent pins it
 * (@refs). The engine keeps no reference: publishing DONE is its last write
 * to the record. So completing an op and consuming its token are plain
 * stores, not locked instructions (a locked one waits for every store before
 * it, such as an eager send's line in another core's ring).
 */
struct q_cpl {
	Q_ATOMIC(uint32_t) state;
	Q_ATOMIC(uint32_t) gen;
	Q_ATOMIC(uint32_t) refs;  /* dependents' pins (q_slot_tryget) */
	Q_ATOMIC(uint32_t) token; /* 1 while the op's token is live (not consumed) */
	Q_ATOMIC(uint32_t) status;
	Q_ATOMIC(uint32_t) stage;
	Q_ATOMIC(uint32_t) cancel;
	Q_ATOMIC(uint32_t) handoff; /* a waiting recv: its send is ready, the recv's engine copies */
	Q_ATOMIC(int32_t) src;      /* a recv's source: as posted, or the one an any-source recv took */
	Q_ATOMIC(uint64_t) bytes;
} __attribute__((aligned(Q_CACHELINE)));

/**
 * struct q_queue_sh - shared control of one queue: the host's fields and the
 * engine's fields each on a line of their own. Where its tables live is not
 * here: every process computes that itself (struct q_geom).
 */
struct q_queue_sh {
	Q_ATOMIC(uint32_t) sq_tail; /* host */
	uint32_t pad;
	Q_ATOMIC(uint64_t) submitted;
	uint8_t pad_host[Q_CACHELINE - 16];
	Q_ATOMIC(uint32_t) sq_head; /* engine */
	uint32_t pad_e;
	Q_ATOMIC(uint64_t) completed_own; /* by the owning engine: a plain add */
	Q_ATOMIC(uint64_t) errors;
	uint8_t pad_eng[Q_CACHELINE - 24];
	/* Completions by other engines (a peer's, for an op that waited at the
	 * rendezvous): a locked add, on its own line. q_queue_completed() sums. */
	Q_ATOMIC(uint64_t) completed __attribute__((aligned(Q_CACHELINE)));
} __attribute__((aligned(Q_CACHELINE)));


/** struct q_engine_sh - one engine's doorbell and liveness. */
struct q_engine_sh {
	Q_ATOMIC(uint32_t) wake_seq;
	Q_ATOMIC(uint32_t) sleeping;
	Q_ATOMIC(uint32_t) running;
	Q_ATOMIC(uint32_t) ack_epoch;
	/* Counted every pass: on its own line, so that kickers reading `sleeping`
	 * do not pull the line from a busy engine each time. */
	Q_ATOMIC(uint64_t) heartbeats __attribute__((aligned(Q_CACHELINE)));
	/* Deep sleeps that ran out and found work: wake-ups that never came. */
	Q_ATOMIC(uint64_t) late_wakes;
	/* Naps beside a polling host thread (fw_stub/engine.c, engine_nap()). */
	Q_ATOMIC(uint64_t) naps;
} __attribute__((aligned(Q_CACHELINE)));

/* q_region.registered: device memory (0); caller memory at @offset as an
 * address (1, local: one process); caller memory of the device's own process
 * at @offset, which other processes reach by cross-memory attach (2, shm). */
#define Q_REGION_HOST 1
#define Q_REGION_CMA 2

/** struct q_region - one memory region of a device. @key is 0 when the slot is free. */
struct q_region {
	Q_ATOMIC(uint32_t) key;
	uint32_t registered; /* caller's memory rather than device memory: Q_REGION_* */
	uint64_t size;
	uint64_t offset; /* from its device's segment base in each process (struct dma_space) */
};

/** struct q_rdv - a rendezvous entry: the first of a send/recv pair to arrive waits here. */
struct q_rdv {
	uint32_t used;
	uint16_t side;    /* ACCDMA_OP_SEND or ACCDMA_OP_RECV */
	uint16_t failed;  /* non-zero: a marker left by a failed op, with this status */
	int32_t src;      /* sending rank */
	uint32_t key;     /* the arriving op's region */
	uint64_t tag;
	uint64_t seq;
	uint64_t offset;
	uint64_t length;
	int32_t dev;      /* the arriving op's device, queue, slot */
	uint16_t queue;
	uint16_t staged;  /* a far send staged in our bounce slot (its index + 1), in our table only */
	uint32_t slot;
	uint32_t gen;     /* a send of another host: its slot's generation, echoed in the finish */
};

/* Bytes of one ring position. Two per cache line: a stream of small messages
 * costs the receiver one line for every two instead of one for each; a
 * build may set 64 to compare. */
#ifndef Q_EAGER_SLOT_BYTES
#define Q_EAGER_SLOT_BYTES 32
#endif

/**
 * struct q_eager_slot - one position of an eager (inline) ring. A message
 * takes q_eager_span(len) consecutive positions: its head carries what
 * matches it and the first Q_EAGER_HEAD_BYTES of payload, the positions after
 * it the rest of the payload, raw (Q_EAGER_CONT_BYTES each, wrapping at the
 * ring's end). The sender writes the payload and the head, then zeroes the
 * stamp of the position after the message, then stores the head's
 * q_eager_stamp(position) with release. A receiver only reads the stamp of
 * the position where the next head must be, and only after it has seen the
 * message before it: by then that stamp is 0 or the new head's, never raw
 * payload left from an earlier lap that could pass for a stamp. (The one
 * exception needs no zero: when the position after the message is the
 * oldest message not yet consumed, the slot holds that head, whose stamp is
 * an earlier lap's.)
 */
struct q_eager_slot {
	Q_ATOMIC(uint32_t) stamp;
	uint32_t len;
	uint64_t tag;
	uint64_t seq;
	uint8_t data[Q_EAGER_SLOT_BYTES - 24];
} __attribute__((aligned(Q_EAGER_SLOT_BYTES)));

#define Q_EAGER_HEAD_BYTES (Q_EAGER_SLOT_BYTES - 24) /* 8 */
#define Q_EAGER_CONT_BYTES Q_EAGER_SLOT_BYTES        /* 32 */

/* Ring sizes: positions per ring, a power of two. Small worlds get deep rings
 * (16 KiB a pair, and two positions per op of a queue when it holds more ops,
 * up to Q_EAGER_SLOTS_MAX positions and Q_EAGER_RINGS_BUDGET bytes of rings in
 * all), large ones shallow (4 KiB a pair: 16 MiB at 64 devices). The receiver's
 * held index stores positions in 16 bits: Q_EAGER_SLOTS_MAX stays below 32768. */
#define Q_EAGER_SLOTS_SMALL_WORLD (16384 / Q_EAGER_SLOT_BYTES)
#define Q_EAGER_SLOTS_LARGE_WORLD (4096 / Q_EAGER_SLOT_BYTES)
#define Q_EAGER_SLOTS_PER_OP (Q_CACHELINE / Q_EAGER_SLOT_BYTES) /* a deep ring: a line per op of a queue */
#define Q_EAGER_DEEP_MAX_DEVICES 16
#define Q_EAGER_SLOTS_MAX 16384
#define Q_EAGER_RINGS_BUDGET (16ull << 20)


/**
 * struct q_eager_ring - the eager ring of one ordered pair of devices, in the
 * receiver's block; q_world_sh.eager_slots slots follow the header line. The
 * sender alone writes @slots, the receiver alone @done: every position below
 * @done has been consumed. The receiver takes messages out of order (matching
 * is by tag and sequence), so @done stops at the oldest message no recv has
 * asked for yet; the sender never writes at or past @done + eager_slots, and
 * sends by rendezvous instead. A message costs the receiver the lines it
 * reads; @done is read by the sender only when its last look says the ring is full.
 */
struct q_eager_ring {
	Q_ATOMIC(uint32_t) done;
	struct q_eager_slot slots[] __attribute__((aligned(Q_CACHELINE)));
};




/*
 * Messages between the engines of different hosts (the peer seam over a
 * link: fw_stub/link.h). The receiver owns its state: a send announces
 * itself and the receiver matches it in its own table, then clears the
 * sender to write the data into the recv; the sender's finish completes the
 * recv. Every field is checked by the receiver before use.
 */
enum q_msg_type {
	Q_MSG_EAGER = 1, /* a small send's payload for the receiver's inline ring at @pos */
	Q_MSG_RTS,       /* ready to send: a send waits to be pulled from (@key, @offset, @length) */
	Q_MSG_SFAIL,     /* a send failed before arriving: its recv completes PEER_ERROR */
	Q_MSG_WITHDRAW,  /* take back a waiting send (cancel, reset); answered by a finish */
	Q_MSG_FIN,       /* complete the receiver's op (@queue, @slot, @gen) with @status and @length bytes */
	Q_MSG_CREDIT,    /* only @credit: the receiver consumed its inline ring from the sender that far */
	Q_MSG_BUSY,      /* the receiver's table had no room for a ready-to-send: announce again */
	Q_MSG_CTS,       /* clear to send: write @length bytes at (@key, @offset), then finish the
			  * recv in the payload (struct q_msg_cts) */
	Q_MSG_STAGED,    /* a send of @length bytes waits in the receiver's staging slot @pos;
			  * its finish gives the slot back (@pos + 1; 0 in other finishes) */
	Q_MSG_CREDIT_ASK, /* a sender short of room asks for a credit: answered by a Q_MSG_CREDIT */
	Q_MSG__COUNT
};

/** struct q_msg_cts - Q_MSG_CTS's payload: the recv the sender's finish completes. */
struct q_msg_cts {
	uint32_t queue;
	uint32_t slot;
	uint32_t gen;
	uint32_t pad;
};

/*
 * Staging: a far send larger than an eager one and at most Q_STAGE_BYTES is
 * written by its sender into a slot the receiver keeps for it (each device
 * keeps q_stage_slots() slots for each far sender), followed by a
 * Q_MSG_STAGED message; the receiver copies it into its recv when they
 * meet, and its finish gives the slot back. A post on each side, where the
 * rendezvous takes four, one after the other.
 */
#define Q_STAGE_BYTES (64u << 10)
#define Q_STAGE_SLOTS_MAX 64u /* a window of 64 sends in flight, as accdma-bw keeps (a mask of 64 bits) */
#define Q_STAGE_BUDGET (8u << 20) /* bytes of slots a device keeps for all its senders, at most */

/* Largest payload a message carries (an eager send: ACCDMA_EAGER_MAX). */
#define Q_MSG_DATA_MAX 1024

/**
 * struct q_msg - one message. Only q_msg_bytes() of it travel: the header,
 * and @len payload bytes for Q_MSG_EAGER and Q_MSG_CTS.
 */
struct q_msg {
	uint16_t type;
	uint16_t status;
	uint32_t len;
	int32_t src;      /* the device it is from */
	int32_t dst;      /* the device it is for */
	uint64_t tag;
	uint64_t seq;
	uint64_t offset;
	uint64_t length;
	uint32_t key;
	uint32_t queue;
	uint32_t slot;
	uint32_t gen;
	uint32_t pos;
	uint32_t credit;  /* every message: how far the sender consumed the receiver's ring to it */
	uint8_t data[Q_MSG_DATA_MAX];
};

#define Q_MSG_HEAD_BYTES 72u /* offsetof(struct q_msg, data) */

/* struct q_dev_sh.lost: why a device's process is gone. */
enum q_dev_lost { Q_DEV_ALIVE = 0, Q_DEV_LOST_CLOSED, Q_DEV_LOST_DIED };

/* Mailbox commands. */
enum q_mb_cmd { Q_MB_INFO = 1, Q_MB_HEALTH, Q_MB_RESET };

/** struct q_mb_info - Q_MB_INFO's reply (the host turns it into struct accdma_device_info). */
struct q_mb_info {
	int32_t id;
	int32_t numa_node;
	int32_t engines;
	int32_t queues;
	uint64_t mem_size;
	uint64_t mem_used;
	uint32_t fw_version;
	uint32_t eager_max;
	uint32_t eager_slots;
	uint32_t pad;
};

/** struct q_mb_health - Q_MB_HEALTH's reply (struct accdma_device_health to the caller). */
struct q_mb_health {
	uint32_t alive;
	uint32_t pad;
	uint64_t heartbeats;
	uint64_t resets;
	uint64_t ops_pending;
};

/** struct q_mailbox - one request/response exchange between host and engine 0. */
struct q_mailbox {
	Q_ATOMIC(uint32_t) req_seq;
	Q_ATOMIC(uint32_t) resp_seq;
	uint32_t cmd;
	int32_t result;
	struct q_mb_info info;
	struct q_mb_health health;
};

/** struct q_dev_sh - everything shared about one device. */
struct q_dev_sh {
	Q_ATOMIC(uint32_t) cq_seq;     /* bumped on every completion: host waiters sleep on it */
	Q_ATOMIC(uint32_t) cq_waiters;
	uint8_t pad0[Q_CACHELINE - 8];
	struct q_mailbox mb;
	/* set by the host at open; the mailbox reports them */
	int32_t id;
	int32_t numa_node;
	uint64_t mem_size;
	Q_ATOMIC(uint64_t) mem_used;
	Q_ATOMIC(uint32_t) reset_epoch;
	Q_ATOMIC(uint32_t) resets;
	/* shm: the process that drives the device, and whether it is gone
	 * (Q_DEV_LOST_*; set once, by that process at close or by a peer's monitor) */
	Q_ATOMIC(int32_t) owner_pid;
	Q_ATOMIC(uint32_t) lost;
	uint32_t polled; /* set by the owner at boot: no engine thread, no host ever sleeps on it */
	Q_ATOMIC(uint32_t) asym; /* set by the owner at boot: its sleepers issue q_sleep_fence()'s
			  * membarrier, so kickers registered for it need no fence (q_kick_fence()) */
	/* Written on every rendezvous: on lines of their own, away from the
	 * read-mostly fields above that every peer's sends read.
	 * The table's lock: 0 free, else the holder's device + 1, so that a
	 * holder whose process died (its device marked lost) can be taken over
	 * (fw_stub/match.c). A plain word, not a pthread mutex: nothing of a
	 * lock that a peer can scribble on is ever followed as a pointer. */
	Q_ATOMIC(uint32_t) rdv_lock __attribute__((aligned(Q_CACHELINE)));
	uint32_t rdv_count;
	/* Entries of sends (waiting, or failed markers) in the table: written
	 * under the lock, read without it by parked recvs, which look in the
	 * table only when it is not 0 (fw_eager_recv()). */
	Q_ATOMIC(uint32_t) rdv_sends;
	struct q_engine_sh engines[Q_MAX_ENGINES];
	struct q_region regions[Q_MAX_REGIONS];
} __attribute__((aligned(Q_CACHELINE)));

/** struct q_world_sh - the arena header: the world's shape and its world-wide flags. */
struct q_world_sh {
	/* What the master laid out, for a joining process to compare with the
	 * geometry it computed itself (struct q_geom): never used to navigate. */
	uint32_t magic;
	uint32_t fw_version;
	uint32_t num_devices;
	uint32_t queues;
	uint32_t engines;
	uint32_t depth;
	uint32_t rdv_cap;
	uint32_t eager_max; /* largest eager send in bytes; 0: no eager rings */
	uint32_t eager_slots; /* positions per eager ring (0: no rings) */
	uint32_t pad;
	uint64_t size;
	Q_ATOMIC(uint32_t) stop;
	/* Set (after the device's q_dev_sh.lost) once any device is lost: the
	 * engines' per-op check reads this read-mostly word first. */
	Q_ATOMIC(uint32_t) lost_any;
	/* A host thread waiting for tokens of several devices sleeps here: any
	 * completion bumps it while someone waits (its own line: rarely written). */
	Q_ATOMIC(uint32_t) any_seq __attribute__((aligned(Q_CACHELINE)));
	Q_ATOMIC(uint32_t) any_waiters;
} __attribute__((aligned(Q_CACHELINE)));

#endif /* ACCDMA_QUEUE_ABI_H */
