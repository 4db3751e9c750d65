/* SPDX-License-Identifier: MIT */
/*
 * shm.h - the shared-memory transport's host half: one process per device
 * (or group of devices) on one host. See docs/transports.md.
 *
 *   bootstrap.c  processes find each other and receive the shared segments
 *   boot_msg.c   the bootstrap's messages, sent and received (checked)
 *   shm.c        the world's arena and the segments mapped; the transport table
 *   heap.c       each local device's memory in this process's segment
 *   monitor.c    a thread per process that notices peers' deaths
 */
#ifndef ACCDMA_DRIVER_SHM_H
#define ACCDMA_DRIVER_SHM_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "include/accdma.h"
#include "queue/queue.h"

/** struct drv_boot_proc - one process of the world: its devices and its pid. */
struct drv_boot_proc {
	int32_t first;
	int32_t count;
	int32_t pid;
	int32_t pad;
};

/**
 * struct drv_boot - a bootstrap in progress.
 * @master: 1 in the process that owns device 0 (it gathers everyone).
 * @conn: worker: the connection to the master. @conns: master: one per
 * process (-1 for itself). @procs/@nprocs: the processes, by first device.
 * @self: this process's index in @procs.
 */
struct drv_boot {
	const struct accdma_world_opts *o;
	int master;
	int conn;
	int *conns;
	struct drv_boot_proc *procs;
	int nprocs;
	int self;
	int first, count;
	char where[160]; /* the rendezvous, for messages */
};

/* bootstrap.c */
int drv_boot_join(struct drv_boot *b, const struct accdma_world_opts *o, int first, int count);
int drv_boot_share(struct drv_boot *b, int **fds, int *nfds);
int drv_boot_ready(struct drv_boot *b, const char *err);
void drv_boot_end(struct drv_boot *b);

/** struct drv_heap - free extents of one local device's memory (first fit, sorted). */
struct drv_heap {
	pthread_mutex_t lock;
	uint32_t n;
	struct {
		uint64_t off, len;
	} fr[Q_MAX_REGIONS + 2];
};

/**
 * struct drv_shm - the transport's state in one process.
 * @procs/@nprocs/@self: as bootstrapped.
 * @seg/@seg_len: per process, its memory segment as mapped here.
 * @stride: bytes per device inside a segment. @heaps: per local device.
 */
struct drv_shm {
	struct drv_boot_proc *procs;
	int nprocs;
	int self;
	char **seg;
	uint64_t *seg_len;
	uint64_t stride;
	struct drv_heap *heaps;
	pthread_t monitor;
	int monitor_started;
	int monitor_efd;
};

struct accdma_world;

/** drv_shm() - the shm transport's state of world @w. */
#define drv_shm(w) ((struct drv_shm *)(w)->tp_state)

/* shm.c: the table's open, start and close */
int drv_shm_open(struct accdma_world *w);
int drv_shm_started(struct accdma_world *w);
void drv_shm_close(struct accdma_world *w);
void drv_shm_mark_lost(struct accdma_world *w, int proc, uint32_t why);

/* heap.c: the table's memory */
int drv_shm_heaps_init(struct accdma_world *w);
int drv_shm_alloc(struct accdma_world *w, int dev, uint64_t size, uint64_t *off, void **addr);
void drv_shm_free(struct accdma_world *w, int dev, uint64_t off, void *addr, uint64_t size);

/* monitor.c */
int drv_monitor_start(struct accdma_world *w);
void drv_monitor_stop(struct accdma_world *w);

#endif /* ACCDMA_DRIVER_SHM_H */
