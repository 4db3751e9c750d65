/* SPDX-License-Identifier: MIT */
/*
 * accdma.h - the one public header of libaccdma.
 *
 * A world is a set of devices that exchange data. Each device owns memory
 * regions (named by a 32-bit key) and queues. Ops posted on a queue never
 * block on a peer: they enqueue a descriptor and return a 64-bit token.
 * Tokens complete with a status; ops can depend on tokens of the same device.
 *
 * Conventions: every function returns 0 (or a count) on success and a
 * negative errno value on failure. The outcome of an op is the status its
 * token completes with (enum accdma_status). There is no global error state.
 *
 * Threading: a queue is single-producer: post to one queue from one thread at
 * a time (different queues and devices may be driven from different threads).
 * wait/test/release may be called from any thread, but each token is consumed
 * once. A world may be closed while other threads are blocked in its waits:
 * they return -ESHUTDOWN (accdma_world_close()).
 *
 * Tokens belong to their world: each world starts its generations at a seed
 * of its own, so a token of another open world (even of the same shape) is
 * rejected with -ESTALE, until one of the two worlds has reused that slot some
 * 2^32 / (3 * worlds opened by the process) times.
 */
#ifndef ACCDMA_H
#define ACCDMA_H

#ifdef __KERNEL__
#include <linux/types.h> /* the kernel module builds the core with this header */
#else
#include <stddef.h>
#include <stdint.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define ACCDMA_VERSION_MAJOR 0
#define ACCDMA_VERSION_MINOR 1

/** Maximum number of dependency tokens one op may take (join more with after_all). */
#define ACCDMA_MAX_DEPS 16
/** Tags with this bit set are reserved for the library (barrier). */
#define ACCDMA_TAG_RESERVED (1ull << 63)
/**
 * Pass as accdma_recv()'s peer to receive from any source: the recv takes the
 * first message with its tag, from any device, that no recv posted before it
 * on its device can take (docs/design-notes.md, "Any source").
 */
#define ACCDMA_ANY_SOURCE (-1)
/** Pass as a timeout to use the world's default (ACCDMA_TIMEOUT_MS). */
#define ACCDMA_TIMEOUT_DEFAULT (-1)

typedef struct accdma_world accdma_world;
typedef struct accdma_queue accdma_queue;
/** A completion token: names one op. 0 is never a valid token. */
typedef uint64_t accdma_token;
/** A memory region key, local to its device. 0 is never a valid key. */
typedef uint32_t accdma_key;

/** enum accdma_transport - how the devices of a world are connected. */
enum accdma_transport {
	ACCDMA_TRANSPORT_LOCAL = 0, /* all devices in this process (default) */
	ACCDMA_TRANSPORT_SHM = 1,   /* one process per device, shared memory */
	ACCDMA_TRANSPORT_VERBS = 2, /* hosts over RDMA (not built yet) */
	/* every device its own "host", joined by an in-process message link: the
	 * cross-host protocol with no RDMA device (a test double) */
	ACCDMA_TRANSPORT_LOOP = 3,
	ACCDMA_TRANSPORT_KMOD = 4, /* one process per device, engines in accdma.ko (/dev/accdma) */
};

/** enum accdma_status - the final status of an op, carried by its token. */
enum accdma_status {
	ACCDMA_OK = 0,
	ACCDMA_ST_NOT_ATTEMPTED,  /* a dependency failed; the op did nothing */
	ACCDMA_ST_BAD_KEY,        /* no such memory region (or freed) */
	ACCDMA_ST_OUT_OF_BOUNDS,  /* offset + length past the region's end */
	ACCDMA_ST_BAD_LENGTH,     /* zero length */
	ACCDMA_ST_TRUNCATED,      /* send longer than its matching recv; nothing written */
	ACCDMA_ST_PEER_ERROR,     /* the matching op on the peer failed or was canceled */
	ACCDMA_ST_CANCELED,       /* canceled by accdma_cancel() */
	ACCDMA_ST_FLUSHED,        /* the device was reset while the op was pending */
	ACCDMA_ST_EXEC_FAILED,    /* the exec function returned non-zero */
	ACCDMA_ST_DMA_ERROR,      /* the data mover failed (or a fault was injected) */
	ACCDMA_ST_PEER_LOST,      /* the peer's process died (shm transport) */
	ACCDMA_ST__COUNT
};

/** enum accdma_op_kind - what a descriptor asks the device to do. */
enum accdma_op_kind {
	ACCDMA_OP_SEND = 1,
	ACCDMA_OP_RECV,
	ACCDMA_OP_WRITE,
	ACCDMA_OP_FENCE,
	ACCDMA_OP_EXEC,
	ACCDMA_OP_AFTER_ALL,
	ACCDMA_OP_ZERO, /* fill a region range with zeros (used by permute) */
	ACCDMA_OP__COUNT
};

/**
 * typedef accdma_exec_fn - an exec function, run once its op's dependencies
 * complete; 0 = success (see accdma_exec() for the thread it runs on).
 */
typedef int (*accdma_exec_fn)(void *arg);

/**
 * struct accdma_world_opts - how to open a world. Fill with
 * accdma_world_opts_init() (defaults, then ACCDMA_* environment), then change
 * what you need.
 * @transport:   ACCDMA_TRANSPORT_*.
 * @num_devices: devices in the world (1..1024).
 * @engines:     engine threads per device (0..16). 0: polled devices with no
 *               threads: they move only while a host thread waits on (or tests)
 *               a token of the world, which then does the devices' work itself,
 *               and when a post with a small send finds its queue idle (it
 *               reads its ops at once: accdma_post()). With engine threads
 *               too, unless ACCDMA_POLL=0.
 * @queues:      queues per device (1..64); queue i is served by engine i % engines.
 * @queue_depth: ops in flight per queue (power of two, 2..65536); post returns -EAGAIN beyond.
 * @mem_size:    device memory capacity per device, in bytes.
 * @numa_map:    NULL (devices round-robin over NUMA nodes) or num_devices node ids.
 * @timeout_ms:  default wait timeout, used when a wait passes ACCDMA_TIMEOUT_DEFAULT.
 * @log_level:   0 silent, 1 warnings (a wait of 1 s or more that times out names its op on stderr), 2 debug.
 * @rank:        shm: this process's first device (-1: from RANK/OMPI_COMM_WORLD_RANK/PMI_RANK).
 * @local_devices: shm: devices this process drives (default 1).
 * @master_addr, @master_port: shm: rendezvous address (from MASTER_ADDR/MASTER_PORT).
 * @peer_timeout_ms: shm: how long to wait for a peer to join, or to declare it lost.
 * @eager_max:   sends of at most this many bytes (0..ACCDMA_EAGER_MAX, default
 *               ACCDMA_EAGER_MAX_DEFAULT; 0 turns it off) travel eagerly: the engine
 *               copies the payload into the receiver's inline ring and the send
 *               completes at once, whether or not the recv is posted. Larger sends,
 *               and small ones that find the ring full, wait for their recv
 *               (rendezvous). In worlds of up to 16 devices a ring has at least
 *               16 KiB and a cache line (two 32-byte positions) per op of
 *               @queue_depth, so a queue's worth of sends of up to 40 bytes fits
 *               (at most 16384 positions, and 16 MiB of rings per world). Worlds of
 *               more than ACCDMA_EAGER_MAX_DEVICES devices have no rings; worlds of
 *               more than 16 have shallow ones (4 KiB) that take at most 488 bytes.
 *               accdma_device_info() reports what a world uses.
 * @spin_us:     how long an idle engine spins (yielding) before it sleeps, in µs (default 50).
 * @host_poll:   1 (default): a waiting host thread runs idle engine passes itself
 *               while the engine threads nap, and a post with a small send to an
 *               idle queue reads it at once; 0: only engine threads do. Over kmod
 *               the waiter runs its devices' passes in the module (an exec they
 *               find still runs on the library's accdma-call thread).
 * @membarrier:  1 (default): sleepers issue membarrier() so that kickers fence
 *               lightly; 0: both sides use full fences. The first world a process
 *               opens with 1 registers the process; a world opened with 0 never
 *               relies on it. Verbs worlds always fence fully (a membarrier
 *               per sleep costs more than it spares next to RDMA).
 */
struct accdma_world_opts {
	enum accdma_transport transport;
	int num_devices;
	int engines;
	int queues;
	uint32_t queue_depth;
	uint64_t mem_size;
	const int *numa_map;
	int64_t timeout_ms;
	int log_level;
	int rank;
	int local_devices;
	const char *master_addr;
	int master_port;
	int64_t peer_timeout_ms;
	int eager_max;
	int64_t spin_us;
	int host_poll;
	int membarrier;
};

/** Largest eager_max a world accepts, in bytes. */
#define ACCDMA_EAGER_MAX 1024
/** Default eager_max: a send up to 1 KiB is copied twice (in and out of the
 * ring) rather than waiting a round trip for its recv. */
#define ACCDMA_EAGER_MAX_DEFAULT 1024
/** Worlds up to this many devices get eager rings (one per ordered pair of devices). */
#define ACCDMA_EAGER_MAX_DEVICES 64

/**
 * struct accdma_op - one descriptor, for accdma_post().
 * @kind:  ACCDMA_OP_*.
 * @peer:  send: destination rank; recv: source rank; write: target rank.
 * @tag:   send/recv matching tag (bit 63 reserved).
 * @key, @offset, @length: the local memory range (send source, recv/zero
 *         destination, write source).
 * @remote_key, @remote_offset: write: the target range on @peer.
 * @fn, @arg: exec: the function to run and its argument.
 * @deps, @num_deps: tokens of this device that must complete first.
 */
struct accdma_op {
	enum accdma_op_kind kind;
	int peer;
	uint64_t tag;
	accdma_key key;
	uint64_t offset;
	uint64_t length;
	accdma_key remote_key;
	uint64_t remote_offset;
	accdma_exec_fn fn;
	void *arg;
	const accdma_token *deps;
	int num_deps;
};

/** struct accdma_queue_stats - per-queue counters (the dmadev triple). */
struct accdma_queue_stats {
	uint64_t submitted;
	uint64_t completed;
	uint64_t errors;
};

/** struct accdma_device_info - what the device mailbox reports. */
struct accdma_device_info {
	int id;
	int numa_node;
	int engines;
	int queues;
	uint64_t mem_size;
	uint64_t mem_used;
	uint32_t fw_version; /* major << 16 | minor */
	uint32_t eager_max;   /* sends up to this many bytes go eagerly (0: none) */
	uint32_t eager_slots; /* 32-byte positions of each inline ring it receives on */
};

/** struct accdma_device_health - liveness of a device's engines. */
struct accdma_device_health {
	int alive;             /* 1 if every engine answered */
	uint64_t heartbeats;   /* engine loop iterations, summed */
	uint64_t resets;       /* resets served */
	uint64_t ops_pending;  /* ops posted but not completed */
};

/** enum accdma_op_stage - where a pending op is waiting. */
enum accdma_op_stage {
	ACCDMA_STAGE_POSTED = 0, /* in the submission ring, not yet read by the engine */
	ACCDMA_STAGE_BLOCKED,    /* behind a fence on its queue */
	ACCDMA_STAGE_DEPS,       /* waiting for dependency tokens */
	ACCDMA_STAGE_PEER,       /* waiting for the matching op on the peer */
	ACCDMA_STAGE_RUNNING,    /* moving data / running */
	ACCDMA_STAGE_DONE,
};

/**
 * struct accdma_op_info - a description of one op, for diagnostics.
 * @token: the op's token. @kind: ACCDMA_OP_*. @device: its device.
 * @queue: its queue. @peer/@tag: as posted (-1 when not applicable; an
 *         any-source recv's @peer is ACCDMA_ANY_SOURCE, -1).
 * @seq:   the op's sequence number among ops with the same (src, dst, tag).
 * @bytes: the posted length. @stage: where it waits. @status: final status once done.
 * @deps/@num_deps: the tokens it waits on that are not complete yet.
 * @peer_posted: send/recv: 1 if the matching op was posted on the peer.
 * @moved: once done, the bytes the op moved (a recv: the bytes that landed,
 *         which may be fewer than its length); 0 before.
 */
struct accdma_op_info {
	accdma_token token;
	enum accdma_op_kind kind;
	int device;
	int queue;
	int peer;
	uint64_t tag;
	uint64_t seq;
	uint64_t bytes;
	enum accdma_op_stage stage;
	enum accdma_status status;
	accdma_token deps[ACCDMA_MAX_DEPS];
	int num_deps;
	int peer_posted;
	uint64_t moved;
};

/** struct accdma_pair - one (source, target) pair of a permutation. */
struct accdma_pair {
	int source;
	int target;
};

/* ---- status and names ------------------------------------------------- */

/**
 * accdma_status_str() - name of a status.
 * @st: a status.
 * Return: a static string such as "TRUNCATED"; "UNKNOWN" for out-of-range values.
 */
const char *accdma_status_str(enum accdma_status st);

/**
 * accdma_op_kind_str() - name of an op kind.
 * @kind: an op kind.
 * Return: a static string such as "send"; "unknown" for out-of-range values.
 */
const char *accdma_op_kind_str(enum accdma_op_kind kind);

/**
 * accdma_op_stage_str() - name of an op stage.
 * @stage: a stage.
 * Return: a static string such as "waiting for peer".
 */
const char *accdma_op_stage_str(enum accdma_op_stage stage);

/* ---- worlds ----------------------------------------------------------- */

/**
 * accdma_world_opts_init() - fill options with defaults, then the ACCDMA_* environment.
 * @opts: options to fill.
 *
 * Return: 0, -EINVAL if @opts is NULL or an ACCDMA_* variable is malformed
 * (the options still hold the defaults for that field).
 */
int accdma_world_opts_init(struct accdma_world_opts *opts);

/**
 * accdma_world_open() - create a world and start its devices' engines.
 * @opts:  options (NULL: defaults and environment).
 * @world: on success, the new world.
 *
 * Return: 0; -EINVAL for bad options; -ENOMEM; -EPROTONOSUPPORT for a
 * transport that is not built; -ETIMEDOUT if a shm peer never joined.
 */
int accdma_world_open(const struct accdma_world_opts *opts, accdma_world **world);

/**
 * accdma_world_close() - stop the engines and free the world.
 * @world: the world. Pending ops are flushed; outstanding tokens become invalid.
 *
 * Threads of this process blocked in accdma_wait(), accdma_wait_bytes(),
 * accdma_wait_all(), accdma_wait_any() on @world are woken and return
 * -ESHUTDOWN without touching the world again (their tokens go with it); a
 * mailbox call (accdma_device_info/health/reset) in progress gets its answer
 * first. Close waits until they have all left, then stops the engines: an
 * exec function a waiter is running delays it until the function returns.
 * The handle stays detectable after close: any later call with it returns
 * -EBADF instead of touching freed memory. A call that starts while close
 * runs, and has not yet blocked, is a race of the caller's (as a read racing
 * close(2) on its file descriptor).
 * Return: 0; -EBADF if @world is NULL or already closed (or another thread
 * is closing it); -EDEADLK if called on a thread blocked in a wait on @world
 * (from an exec function its poll runs): nothing is closed.
 */
int accdma_world_close(accdma_world *world);

/**
 * accdma_world_size() - number of devices in the world.
 * @world: the world.
 * Return: the count, or -EBADF.
 */
int accdma_world_size(accdma_world *world);

/**
 * accdma_world_local_devices() - the devices this process drives.
 * @world: the world.
 * @first: on success, the first local rank (0 for the local transport).
 * Return: the number of local devices (all of them for local), or -EBADF.
 */
int accdma_world_local_devices(accdma_world *world, int *first);

/* ---- devices and memory ---------------------------------------------- */

/**
 * accdma_device_info() - ask a device's mailbox for its description.
 * @world: the world. @dev: a local rank. @info: filled on success.
 * Return: 0; -EBADF; -EINVAL for a bad rank or NULL @info; -ETIMEDOUT if the firmware did not answer.
 */
int accdma_device_info(accdma_world *world, int dev, struct accdma_device_info *info);

/**
 * accdma_device_health() - ask a device's mailbox whether its engines run.
 * @world: the world. @dev: a local rank. @health: filled on success.
 * Return: 0; -EBADF; -EINVAL; -ETIMEDOUT if the firmware did not answer.
 */
int accdma_device_health(accdma_world *world, int dev, struct accdma_device_health *health);

/**
 * accdma_device_reset() - reset a device through its mailbox.
 * @world: the world. @dev: a local rank.
 *
 * Every op pending on the device completes ACCDMA_ST_FLUSHED (its peers'
 * matching ops complete ACCDMA_ST_PEER_ERROR). Memory regions stay.
 * Return: 0; -EBADF; -EINVAL; -ETIMEDOUT.
 */
int accdma_device_reset(accdma_world *world, int dev);

/**
 * accdma_mem_alloc() - allocate device memory on the device's NUMA node.
 * @world: the world. @dev: a local rank. @size: bytes (> 0). @key: the region's key.
 * The memory is zero-filled.
 * Return: 0; -EBADF; -EINVAL; -ENOMEM if the device is out of memory or region slots.
 */
int accdma_mem_alloc(accdma_world *world, int dev, uint64_t size, accdma_key *key);

/**
 * accdma_mem_register() - make the caller's memory a region of a device.
 * @world: the world. @dev: a local rank. @addr/@size: the memory. @key: the region's key.
 * The memory must stay valid until accdma_mem_free() or world close.
 * Over shm the memory stays private to this process: other processes'
 * engines reach it by cross-memory attach (process_vm_readv/writev), one
 * copy between the two processes' memory; a range that is no longer mapped
 * when a peer reaches it fails that op (PEER_ERROR), nothing else.
 * Return: 0; -EBADF; -EINVAL (also for a range whose end, @addr + @size,
 * wraps past the end of the address space); -ENOMEM if out of region slots;
 * -EPERM over shm where the kernel refuses cross-memory attach
 * (kernel.yama.ptrace_scope 2 or 3; use accdma_mem_alloc());
 * -EOPNOTSUPP on transports whose peers cannot reach private memory.
 */
int accdma_mem_register(accdma_world *world, int dev, void *addr, uint64_t size, accdma_key *key);

/**
 * accdma_mem_free() - release a region. Ops that name its key afterwards complete BAD_KEY.
 * @world: the world. @dev: a local rank. @key: the region.
 * Return: 0; -EBADF; -EINVAL; -ENOENT for an unknown or freed key; -EBUSY while
 * an op that is posted and not complete names the region (its own device's
 * ops, or any device's write into it): wait for them first.
 */
int accdma_mem_free(accdma_world *world, int dev, accdma_key key);

/**
 * accdma_mem_ptr() - the host address of a region of a local device.
 * @world: the world. @dev: a local rank. @key: the region. @size: if not NULL, the region's size.
 * Return: the address, or NULL for a bad handle, rank or key.
 */
void *accdma_mem_ptr(accdma_world *world, int dev, accdma_key key, uint64_t *size);

/* ---- queues and ops --------------------------------------------------- */

/**
 * accdma_queue_get() - a device's queue.
 * @world: the world. @dev: a local rank. @index: 0..queues-1. @queue: the handle.
 * Return: 0; -EBADF; -EINVAL.
 */
int accdma_queue_get(accdma_world *world, int dev, int index, accdma_queue **queue);

/**
 * accdma_post() - post several descriptors with one doorbell.
 * @queue:  the queue.
 * @ops:    @count descriptors, issued in array order.
 * @count:  how many (1..queue depth).
 * @tokens: on success, @count tokens (may be NULL only if every op is to be released
 *          at once, as by accdma_release()).
 *
 * All or nothing: either every op is posted or none is.
 * Return: @count; -EBADF for a bad or closed queue; -EINVAL for a bad kind,
 * peer rank, reserved tag, NULL @ops, or NULL exec function; -E2BIG for too
 * many deps; -EXDEV for a dep token of another device; -ESTALE for a dep token
 * that is unknown or already consumed; -EAGAIN if the queue has too few free slots.
 * Memory problems (key, bounds, length) are not checked here: the engine
 * checks every descriptor and the token completes with the error status.
 * With host polling on (ACCDMA_POLL, default) or on a polled device, a post
 * that carries a send of at most eager_max bytes with no deps (and no other
 * send) to an idle queue (nothing pending, nothing unread) reads the ops
 * itself, if this world's host threads had to wait for an op since: the send
 * is copied into its peer's inline ring before accdma_post returns; the rest
 * waits for a pass. A post never waits for a peer.
 */
int accdma_post(accdma_queue *queue, const struct accdma_op *ops, int count, accdma_token *tokens);

/**
 * accdma_send() - send @length bytes at (@key, @offset) to @peer with @tag.
 * @queue: the queue. @peer: destination rank (may be the device itself).
 * @tag: matching tag. @key/@offset/@length: the source range.
 * @deps/@num_deps: tokens to wait for. @token: the op's token.
 *
 * Matches the recv posted on @peer from this device with the same tag and
 * the same position in FIFO order. The token completes when the source may
 * be reused: when the data has landed, or, for a send of at most the world's
 * eager_max bytes, as soon as the engine has copied it into @peer's inline
 * ring (whether or not the recv is posted yet).
 * Return: 0 or a negative errno, as accdma_post().
 */
int accdma_send(accdma_queue *queue, int peer, uint64_t tag, accdma_key key, uint64_t offset,
		uint64_t length, const accdma_token *deps, int num_deps, accdma_token *token);

/**
 * accdma_recv() - receive up to @length bytes from @peer with @tag into (@key, @offset).
 * @queue: the queue. @peer: source rank, or ACCDMA_ANY_SOURCE.
 * @tag: matching tag.
 * @key/@offset/@length: the destination range.
 * @deps/@num_deps: tokens to wait for. @token: the op's token.
 *
 * The token completes once the matching send's data has landed; a send
 * longer than @length completes both sides ACCDMA_ST_TRUNCATED, writing nothing.
 *
 * With @peer ACCDMA_ANY_SOURCE the recv takes the first message with @tag,
 * from any device (itself included), that no recv posted before it on this
 * device can take. Recvs of a device match in the order they were posted, so
 * FIFO holds per source: once an any-source recv has taken the k-th message
 * from A with @tag, the next recv from A with @tag (specific or not) takes
 * the (k+1)-th. A recv with @tag posted after an any-source recv that has not
 * matched yet waits for it to match before it can. Among messages from several
 * sources that are all there, the engine takes them in turn by source. Cancel
 * (or any failure) before it matched takes no message. It completes
 * ACCDMA_ST_PEER_LOST when every other device is lost (shm) and no message
 * is there. accdma_wait_source() tells which device sent the message.
 * Return: 0 or a negative errno, as accdma_post().
 */
int accdma_recv(accdma_queue *queue, int peer, uint64_t tag, accdma_key key, uint64_t offset,
		uint64_t length, const accdma_token *deps, int num_deps, accdma_token *token);

/**
 * accdma_write() - one-sided write of a local range into @peer's region.
 * @queue: the queue. @peer: target rank. @key/@offset/@length: the source.
 * @remote_key/@remote_offset: the target range on @peer, checked against key and bounds.
 * @deps/@num_deps: tokens to wait for. @token: completes once the data has landed.
 * Return: 0 or a negative errno, as accdma_post().
 */
int accdma_write(accdma_queue *queue, int peer, accdma_key key, uint64_t offset, uint64_t length,
		 accdma_key remote_key, uint64_t remote_offset, const accdma_token *deps, int num_deps,
		 accdma_token *token);

/**
 * accdma_fence() - a local barrier on the queue.
 * @queue: the queue. @deps/@num_deps: extra tokens to wait for. @token: the fence's token.
 *
 * Completes, and lets later descriptors of the queue start, once every
 * earlier op of the queue has completed (whatever their status). ACCDMA_OK, or
 * NOT_ATTEMPTED if one of its own @deps failed (it still orders the queue),
 * CANCELED or FLUSHED.
 * Return: 0 or a negative errno, as accdma_post().
 */
int accdma_fence(accdma_queue *queue, const accdma_token *deps, int num_deps, accdma_token *token);

/**
 * accdma_exec() - run @fn(@arg) on the device's timeline once @deps complete.
 * @queue: the queue. @fn: the function (keep it short; never wait on tokens,
 * close the world or post to the queue it runs for inside it). @arg: its argument.
 * @deps/@num_deps: tokens to wait for. @token: completes with EXEC_FAILED if @fn returns non-zero.
 *
 * Where @fn runs: on whichever thread runs the pass of the device's engine
 * that finds it ready. That is one of the device's engine threads, or a host
 * thread of this process that is inside accdma_wait(), accdma_wait_bytes(),
 * accdma_wait_all() or accdma_wait_any() on any token of the world (not only
 * this op's) while it polls: during the first part of every wait when host
 * polling is on (host_poll in struct accdma_world_opts, ACCDMA_POLL; 1 by
 * default), for the whole wait on a polled device (engines = 0), where
 * accdma_test() and the mailbox calls run passes too. It never runs inside accdma_post(). So @fn must not take a
 * lock that a thread may hold while it waits on this world: that thread may
 * be the one running @fn, and the lock deadlocks (or, if recursive, lets @fn
 * in mid-way through the waiter's critical section). With engine threads and
 * host_poll = 0 no host thread runs a pass, so @fn runs only on an engine
 * thread and may take such a lock: it then blocks that engine (and the other
 * queues it serves) until the waiter releases the lock, so the waiter must
 * not wait, with the lock held, for this op or for an op behind it on that
 * engine.
 * Return: 0 or a negative errno, as accdma_post().
 */
int accdma_exec(accdma_queue *queue, accdma_exec_fn fn, void *arg, const accdma_token *deps,
		int num_deps, accdma_token *token);

/**
 * accdma_after_all() - a token that completes when all of @deps have.
 * @queue: the queue. @deps/@num_deps: the tokens to join. @token: ACCDMA_OK if all
 * succeeded, else ACCDMA_ST_NOT_ATTEMPTED.
 * Return: 0 or a negative errno, as accdma_post().
 */
int accdma_after_all(accdma_queue *queue, const accdma_token *deps, int num_deps,
		     accdma_token *token);

/**
 * accdma_barrier() - this device's part of a barrier across every device of the world.
 * @queue: the queue. @deps/@num_deps: tokens to wait for first. @token: completes
 * once every device has posted its k-th barrier (for this device's k-th call).
 *
 * Built on send/recv with reserved tags (a dissemination barrier): every device
 * must call it the same number of times. It takes 2 * ceil(log2 N) + 1 slots,
 * all posted or none.
 * Return: 0 or a negative errno, as accdma_post(); -E2BIG if the queue is too
 * shallow ever to hold it.
 */
int accdma_barrier(accdma_queue *queue, const accdma_token *deps, int num_deps,
		   accdma_token *token);

/**
 * accdma_permute() - this device's part of a collective permute.
 * @queue:  a queue of the calling device.
 * @pairs/@num_pairs: (source, target) pairs, the same list on every device:
 *          sources unique, targets unique, all ranks in range.
 * @tag:    tag for the transfers.
 * @send_key/@send_offset: this device's source range.
 * @recv_key/@recv_offset: this device's destination range.
 * @length: bytes per device.
 * @deps/@num_deps: tokens to wait for. @token: completes when this device's
 *          part is done. A device that is no target gets zeros.
 * Return: 0 or a negative errno as accdma_post(); -EINVAL for a bad pair list;
 * -E2BIG if the queue is too shallow ever to hold this device's part (3 slots).
 */
int accdma_permute(accdma_queue *queue, const struct accdma_pair *pairs, int num_pairs,
		   uint64_t tag, accdma_key send_key, uint64_t send_offset, accdma_key recv_key,
		   uint64_t recv_offset, uint64_t length, const accdma_token *deps, int num_deps,
		   accdma_token *token);

/* ---- tokens ----------------------------------------------------------- */

/**
 * accdma_wait() - wait for one op and consume its token.
 * @world: the world. @token: the op. @timeout_ms: ms, or ACCDMA_TIMEOUT_DEFAULT.
 * @status: if not NULL, the op's final status.
 *
 * Return: 0 (the token is consumed); -ETIMEDOUT (the token stays valid; with
 * log_level >= 1 and a timeout of 1000 ms or more the stuck op is described
 * on stderr: a shorter wait is taken for a poll); -EBADF; -EINVAL for a
 * malformed token; -ESTALE for a token already consumed, never issued, or
 * issued by another world; -ESHUTDOWN if another thread closed the world
 * while this call waited (the token is gone with the world).
 */
int accdma_wait(accdma_world *world, accdma_token token, int64_t timeout_ms,
		enum accdma_status *status);

/**
 * accdma_wait_bytes() - accdma_wait(), also returning the bytes the op moved.
 * @world: the world. @token: the op. @timeout_ms: ms, or ACCDMA_TIMEOUT_DEFAULT.
 * @status: if not NULL, the op's final status.
 * @bytes: if not NULL, on success the bytes the op moved: for a recv the bytes
 *         that landed (the matching send's length, which may be less than the
 *         recv's), for a send, write or zero its length once it succeeded; 0
 *         for an op that failed or moves no data. Read before the token is
 *         consumed: once it is, the op's record may be reused at once.
 *
 * Return: as accdma_wait(); @bytes is written only when it returns 0.
 */
int accdma_wait_bytes(accdma_world *world, accdma_token token, int64_t timeout_ms,
		      enum accdma_status *status, uint64_t *bytes);

/**
 * accdma_wait_source() - accdma_wait_bytes(), also returning a recv's source.
 * @world: the world. @token: the op. @timeout_ms: ms, or ACCDMA_TIMEOUT_DEFAULT.
 * @status: if not NULL, the op's final status.
 * @bytes: if not NULL, as accdma_wait_bytes().
 * @source: if not NULL, on success: for a recv the device whose message it
 *          took (an ACCDMA_ANY_SOURCE recv's is known once it matched), or
 *          ACCDMA_ANY_SOURCE if it ended before it matched (canceled, lost);
 *          for any other op, the peer field it was posted with.
 * Return: as accdma_wait().
 */
int accdma_wait_source(accdma_world *world, accdma_token token, int64_t timeout_ms,
		       enum accdma_status *status, uint64_t *bytes, int *source);

/**
 * accdma_test() - check one op without blocking; consume its token if done.
 * @world: the world. @token: the op. @status: if not NULL, the final status.
 * Return: 0 if done (consumed); -EAGAIN if still pending; -EBADF/-EINVAL/-ESTALE as accdma_wait().
 */
int accdma_test(accdma_world *world, accdma_token token, enum accdma_status *status);

/**
 * accdma_wait_all() - wait for every token and consume them all.
 * @world: the world. @tokens/@count: the ops. @timeout_ms: for the whole call.
 * @statuses: if not NULL, @count statuses.
 * Return: 0 (all consumed); -ETIMEDOUT (the done ones are consumed and set to
 * 0 in @tokens, the others stay); -EINVAL if a token appears twice in @tokens
 * (nothing consumed; a list in posting order costs one compare a token,
 * another one pass through a small set); -ENOMEM if a set for more than 256
 * tokens out of order could not be allocated; -ESHUTDOWN if the
 * world was closed while the call waited (the ones consumed before are 0 in
 * @tokens); other errors as accdma_wait() (nothing consumed).
 */
int accdma_wait_all(accdma_world *world, accdma_token *tokens, int count, int64_t timeout_ms,
		    enum accdma_status *statuses);

/**
 * accdma_wait_any() - wait for one of several ops and consume it.
 * @world: the world. @tokens/@count: the ops (0 entries are skipped).
 * @timeout_ms: ms. @status: if not NULL, its status.
 * Return: the index of the completed op (its entry is set to 0); -ETIMEDOUT;
 * -EINVAL if no entry is non-zero; -ESHUTDOWN; other errors as accdma_wait().
 */
int accdma_wait_any(accdma_world *world, accdma_token *tokens, int count, int64_t timeout_ms,
		    enum accdma_status *status);

/**
 * accdma_release() - give up a token without waiting; its slot is reused once the op completes.
 * @world: the world. @token: the op.
 * Return: 0; -EBADF; -EINVAL; -ESTALE.
 */
int accdma_release(accdma_world *world, accdma_token token);

/**
 * accdma_cancel() - ask that an op not run.
 * @world: the world. @token: the op (the token stays owned by the caller: wait on it).
 *
 * An op that has not started moving data completes ACCDMA_ST_CANCELED, its
 * dependents NOT_ATTEMPTED and its send/recv partner PEER_ERROR. An op already
 * running or done is not affected.
 * Return: 0 (requested); -EBADF; -EINVAL; -ESTALE.
 */
int accdma_cancel(accdma_world *world, accdma_token token);

/* ---- statistics and diagnostics --------------------------------------- */

/**
 * accdma_queue_stats() - a queue's counters.
 * @queue: the queue. @stats: filled on success.
 * Return: 0; -EBADF; -EINVAL.
 */
int accdma_queue_stats(accdma_queue *queue, struct accdma_queue_stats *stats);

/**
 * accdma_op_info() - describe one op.
 * @world: the world. @token: the op (pending or done, not yet consumed). @info: filled.
 * Return: 0; -EBADF; -EINVAL; -ESTALE.
 */
int accdma_op_info(accdma_world *world, accdma_token token, struct accdma_op_info *info);

/**
 * accdma_pending() - list a device's pending ops (posted, not complete), in queue order.
 * @world: the world. @dev: a local rank. @infos/@max: room for the list.
 * Return: the number of pending ops (may exceed @max; only @max are filled); -EBADF; -EINVAL.
 */
int accdma_pending(accdma_world *world, int dev, struct accdma_op_info *infos, int max);

/**
 * accdma_op_describe() - one line describing an op, for logs.
 * @info: the op. @buf/@size: where to write (always NUL-terminated).
 * Return: the length the full line needs (as snprintf).
 */
int accdma_op_describe(const struct accdma_op_info *info, char *buf, size_t size);

/**
 * accdma_find_cycle() - find devices waiting on each other in a cycle.
 * @world: the world. @devs/@max: room for the cycle, in wait order (devs[0]
 * waits on devs[1] ... the last waits on devs[0]).
 * Every device of the world is looked at, those of other processes too (shm:
 * their pending ops are read from the arena), so a timed-out wait names a
 * cycle across processes.
 * Return: the cycle's length (0: none found); -EBADF; -EINVAL.
 */
int accdma_find_cycle(accdma_world *world, int *devs, int max);

/**
 * accdma_stall_report() - print every local device's pending ops and any cycle.
 * For each device with pending ops it also prints its engines (asleep or not,
 * and the passes they ran while it watched for 10 ms) and, per sender, the
 * oldest message in its eager rings that landed and no recv has taken.
 * @world: the world. @out: a stdio FILE * (void * to keep stdio out of this header).
 * Return: the number of pending ops printed; -EBADF; -EINVAL.
 */
int accdma_stall_report(accdma_world *world, void *out);

#ifdef __cplusplus
}
#endif
#endif /* ACCDMA_H */
