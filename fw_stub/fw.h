/* SPDX-License-Identifier: MIT */
/*
 * fw.h - what the host may ask of the device firmware stub: power a device's
 * engines on and off, and lend them a host thread (a polled pass, an inline
 * submission), which real hardware would ignore. Everything else goes through
 * queue/ (rings, doorbells, completion records) and the mailbox, as with real
 * hardware.
 */
#ifndef ACCDMA_FW_H
#define ACCDMA_FW_H

#include "dma/dma.h"
#include "queue/queue.h"

struct fw_device;
struct fw_link;

/**
 * struct fw_host - what the device asks of its host: the one call an engine
 * makes into the host side. An exec descriptor names its function by a
 * handle, never an address; @exec resolves and runs it.
 * @exec: run exec (@dev, @queue, @handle) of @ctx. Return: 0 if the function
 *        returned 0, > 0 if it failed, < 0 if the handle names no exec posted
 *        there (a corrupt or forged descriptor).
 * @recv_order: (NULL: no any-source recvs) number a deferred recv (Q_DF_DEFER) of @dev with @tag, whose
 *        place in the tag's order is @place, as @how says (enum
 *        fw_order_how). The host keeps the recv numbers: it gives them at
 *        post time, and while a tag has an any-source recv that has not
 *        matched, the engine takes them here, in posting order. Return: 0,
 *        -EAGAIN (not @place's turn yet), -EINVAL (no such tag), -ENOMEM.
 * @ctx: the host's.
 * @link: the device's port to the devices it cannot reach in memory
 *        (fw_stub/link.h); NULL: it reaches every device in memory.
 * @nap_max_us: the longest nap of an engine beside a polling host (0:
 *        fw_nap_us, none longer). A nap during which a host polled again
 *        is followed by one twice as long, up to this; one with none by a
 *        short one. A host whose wait ends done cuts a longer nap short if
 *        the engine holds work (engine.c).
 */
/* How struct fw_host's recv_order is asked (fw_stub/any.c). */
enum fw_order_how {
	FW_ORDER_PEEK, /* @seq[0..ndev): the next recv number of (source, tag); -EAGAIN if not @place's turn */
	FW_ORDER_TAKE, /* take the next number of (@src, tag) into *@seq; -EAGAIN if not @place's turn */
	FW_ORDER_SKIP, /* @place ends unnumbered: its turn is passed on, now or when it comes */
};

struct fw_host {
	int (*exec)(void *ctx, uint32_t dev, uint32_t queue, uint64_t handle);
	void *ctx;
	struct fw_link *link;
	int (*recv_order)(void *ctx, uint32_t dev, uint64_t tag, uint64_t place, int32_t src, int how,
			  uint64_t *seq);
	uint32_t nap_max_us;
};

/**
 * fw_device_start() - boot one device: start its engine threads.
 * @w: the arena (already laid out) and this process's geometry of it; kept
 *      by reference until fw_device_stop(). @space: this process's address space.
 * @dev: the device. @spin_ns: how long an idle engine spins before sleeping.
 * @threads: start engine threads; 0 boots a polled device, whose engines run
 * only when a host thread calls fw_device_poll().
 * @membarrier: this device's sleepers may issue membarrier() so that its
 * kickers fence lightly (q_asym_register()).
 * @host: the host's calls (kept by reference until fw_device_stop()).
 * @out: the running device.
 * Return: 0, -ENOMEM, or a negative errno from thread creation.
 */
int fw_device_start(const struct q_arena *w, const struct dma_space *space, uint32_t dev,
		    uint64_t spin_ns, int threads, int membarrier, const struct fw_host *host,
		    struct fw_device **out);

/**
 * fw_device_stop() - stop and join a device's engines and free it.
 * @fd: the device (NULL is ignored). Only this device's engines stop: on a
 * shared arena (shm) the arena's stop flag would stop every process's engines.
 */
void fw_device_stop(struct fw_device *fd);

/**
 * fw_device_poll() - let the calling (host) thread run an idle pass of each of
 * the device's engines, as a polled driver drives its device.
 * @fd: the device (NULL is ignored).
 * Return: non-zero if any engine made progress.
 */
int fw_device_poll(struct fw_device *fd);

/**
 * fw_device_submit() - let the posting (host) thread read what it just
 * published on an idle queue and start its sends there and then, as a
 * polled driver submits inline (io_uring runs an op that cannot block in the
 * submitting call). Hardware would ignore it: the doorbell does the rest.
 * @fd: the device (NULL is ignored). @queue: the queue's index.
 * @count: the descriptors just published: their sends must have no deps and
 *         at most eager_max bytes (the caller's thread does their copies).
 * @idle: set to 1 if they were read and the queue's engine has no op
 *        pending after them (its doorbell need not ring), else 0.
 * Return: the descriptors read (0: left to the engine's next pass).
 */
int fw_device_submit(struct fw_device *fd, uint32_t queue, uint32_t count, int *idle);

/**
 * fw_device_poll_begin() - a host thread starts polling the device: its engine
 * threads nap rather than compete for the core.
 * @fd: the device (NULL is ignored).
 */
void fw_device_poll_begin(struct fw_device *fd);

/**
 * fw_device_poll_end() - the host thread stops polling.
 * @fd: the device (NULL is ignored).
 * @wake: wake napping engines now (the poller leaves work behind); otherwise
 *        they resume within two naps (fw_stub/engine.c, engine_nap()).
 */
void fw_device_poll_end(struct fw_device *fd, int wake);

/* How long an engine naps while a host thread polls its device, in us (1000;
 * a test that must tell a nap's end from a hand-off lengthens it). */
extern _Atomic uint32_t fw_nap_us;

/* Fault-injection sites of the firmware (the data movers have their own). */
enum fw_fault_site {
	FW_FAULT_FETCH = 0,
	FW_FAULT_MATCH,
	FW_FAULT_EXEC,
	FW_FAULT_KICK,
	FW_FAULT_WAKE,
	FW_FAULT__COUNT
};

/**
 * fw_fault_arm() - make the @nth next pass through @site fail; 0 disarms.
 * FETCH fails a descriptor as it is read (DMA_ERROR), MATCH fails a matched
 * transfer (both sides DMA_ERROR), EXEC fails an exec (EXEC_FAILED), KICK
 * drops the doorbell an eager send rings at its receiver (a lost wake-up),
 * WAKE drops a completion's wake-up of the host threads sleeping on it (only
 * completions that find a host sleeper pass through it).
 */
void fw_fault_arm(enum fw_fault_site site, uint32_t nth);

/**
 * enum fw_race_site - where fw_race_set() lets a test stand in an engine.
 * @FW_RACE_SLEEP: an engine that has announced it sleeps and whose last look
 *	found nothing, just before it sleeps. That is where a kick that races
 *	the sleep is lost, if its store is not yet visible to the look (a
 *	membarrier that missed the kicker's CPU: queue.h); a test lands work
 *	there with its kick dropped (FW_FAULT_KICK).
 * @FW_RACE_PASS: a pass that has served the messages far devices sent and
 *	is about to move its queues. A message that lands then, or a peer
 *	marked lost then, is seen by the queues before the message is served.
 * @FW_RACE__COUNT: how many.
 */
enum fw_race_site { FW_RACE_SLEEP, FW_RACE_PASS, FW_RACE__COUNT };

/* What fw_race_set() runs: @dev's engine @engine is at the site. */
typedef void (*fw_race_fn)(uint32_t dev, uint32_t engine, void *arg);

/**
 * fw_race_set() - a race-injection point: run @fn in every engine that
 * reaches @site, with @arg. NULL clears it. Tests make a race happen this
 * way, each time, rather than hope for it.
 */
void fw_race_set(enum fw_race_site site, fw_race_fn fn, void *arg);

/**
 * fw_fault_parse() - arm faults from a spec ("site:nth[,site:nth]", sites
 * fetch, match, exec, copy, zero, kick, wake; the driver reads it from
 * ACCDMA_FAULT). @v: the spec, or NULL for none.
 * Return: 0, or -EINVAL for a malformed value (nothing armed).
 */
int fw_fault_parse(const char *v);

#endif /* ACCDMA_FW_H */
