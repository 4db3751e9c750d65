/* SPDX-License-Identifier: MIT */
/*
 * transport.h - what a transport provides to the generic host driver.
 *
 * A transport connects the devices of a world: it maps the arena the
 * engines share, finds the other processes, owns device memory, and tells
 * the engines when a peer is gone. Each lives in a folder of its own under
 * driver/ and exports one table; adding one means adding a folder and a line
 * to drv_transport_find(), as a provider is added to rdma-core. Nothing in
 * the generic driver asks which transport it runs on.
 */
#ifndef ACCDMA_DRIVER_TRANSPORT_H
#define ACCDMA_DRIVER_TRANSPORT_H

#include <stdint.h>

#include "include/accdma.h"

struct accdma_world;

/* The nap cap (nap_max_us) of a transport whose waits are network round
 * trips (verbs, and loop, its in-process double). */
#define DRV_FAR_NAP_MAX_US 16000

/**
 * struct drv_transport - one transport's operations.
 * @name: as in ACCDMA_TRANSPORT and the logs.
 * @kernel_engines: the engines run elsewhere (accdma.ko's threads): none here.
 * @full_fences: kickers fence fully and sleepers issue no membarrier(), as
 *               with opts.membarrier = 0: where every op waits on a network
 *               round trip, a fence per kick is noise, and a membarrier per
 *               sleep interrupts every CPU running a registered process.
 * @small_spin_ns: how long a waiter on one small transfer polls before it
 *                 sleeps (0: the driver's default, WAIT_SPIN_SMALL_NS): where
 *                 such a transfer waits on a network round trip, the
 *                 default can run out before it, and the sleep then hands
 *                 each round to the engine threads.
 * @nap_max_us: the longest nap of an engine thread beside a host that keeps
 *              polling (0: fw_nap_us, 1 ms; struct fw_host). Where the
 *              host's waits are network round trips, a wake-up every
 *              millisecond takes the waiting thread's core for nothing;
 *              work an engine holds when the host stops still wakes it.
 *              Taken only where the process may run on fewer CPUs than
 *              its engine threads and a host thread (world.c).
 * @shared_arena: the arena is shared with other processes (its geometry is
 *                laid out with process-shared waiting).
 * @open: join the world: set w->first_local/nlocal, map the arena at w->a.sh
 *        (geometry w->a.g is already computed), give the address space
 *        (w->space) a segment per device. On failure the caller calls @close.
 * @start: the local engines run (optional): start watching the peers.
 * @stop: before the local engines are stopped (optional).
 * @close: leave the world: tell the peers, free device memory, unmap. Also
 *         undoes a failed @open. The local engines are stopped by then.
 * @mem_alloc: @size zeroed bytes of a local device's memory: @off is the
 *             region's offset in the device's segment, @addr its address here.
 * @mem_free: give back what @mem_alloc returned.
 * @mem_register: make caller memory [@addr, @addr + @size) a region's range:
 *                its offset in the device's segment; NULL: not supported.
 * @region_added: (optional) region @key of @dev is about to be published at
 *                [@addr, @addr + @size): register it, and tell the peers
 *                that reach it from other hosts. Non-zero fails the call.
 * @region_removed: (optional) region @key of @dev is about to go: revoke it.
 * @poll: (optional, with @kernel_engines) lend the calling waiter to the
 *        local devices' engines where they run: it runs their passes there
 *        until the arena's word @watch no longer holds @val (NULL: until a
 *        pass moves something), or for @spin_ns at most. Return: 0, or
 *        -ETIMEDOUT, -EINTR (look and poll again), -EAGAIN (no pass can run
 *        on this thread: sleep instead).
 */
struct drv_transport {
	const char *name;
	int shared_arena;
	int kernel_engines;
	int full_fences;
	uint64_t small_spin_ns;
	uint32_t nap_max_us;
	int (*open)(struct accdma_world *w);
	int (*start)(struct accdma_world *w);
	void (*stop)(struct accdma_world *w);
	void (*close)(struct accdma_world *w);
	int (*mem_alloc)(struct accdma_world *w, int dev, uint64_t size, uint64_t *off, void **addr);
	void (*mem_free)(struct accdma_world *w, int dev, uint64_t off, void *addr, uint64_t size);
	int (*mem_register)(struct accdma_world *w, int dev, void *addr, uint64_t size, uint64_t *off);
	int (*region_added)(struct accdma_world *w, int dev, uint32_t key, void *addr, uint64_t size);
	void (*region_removed)(struct accdma_world *w, int dev, uint32_t key);
	int (*poll)(struct accdma_world *w, _Atomic uint32_t *watch, uint32_t val, uint64_t spin_ns);
};

extern const struct drv_transport drv_transport_local;
extern const struct drv_transport drv_transport_shm;
extern const struct drv_transport drv_transport_loop;
extern const struct drv_transport drv_transport_verbs;
extern const struct drv_transport drv_transport_kmod;

/* local's steps that transports keeping the arena and device memory in
 * one process (loop, verbs) take as they are (driver/local/local.c). */
void drv_local_stop(struct accdma_world *w);
int drv_local_mem_alloc(struct accdma_world *w, int dev, uint64_t size, uint64_t *off, void **addr);
void drv_local_mem_free(struct accdma_world *w, int dev, uint64_t off, void *addr, uint64_t size);
int drv_local_mem_register(struct accdma_world *w, int dev, void *addr, uint64_t size, uint64_t *off);

/**
 * drv_transport_find() - the transport of @t.
 * Return: its table, or NULL if this build has none (-EPROTONOSUPPORT).
 */
const struct drv_transport *drv_transport_find(enum accdma_transport t);

#endif /* ACCDMA_DRIVER_TRANSPORT_H */
