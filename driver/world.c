// SPDX-License-Identifier: MIT
/*
 * world.c - opening and closing worlds.
 *
 * A world lays out the shared arena (queue/), fills this process's address
 * space (dma/), and boots each local device's firmware (fw_stub/). On close
 * the engines stop and everything is freed except a small tombstone of the
 * world and queue handles, so a late call with a closed handle returns
 * -EBADF instead of touching freed memory.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/internal.h"

/* Closed worlds' tombstones: kept reachable, never reused. */
static pthread_mutex_t closed_lock = PTHREAD_MUTEX_INITIALIZER;
static struct accdma_world *closed_worlds;

/** drv_dev_check() - 0 if @dev is a device of this process in open world @w. */
int drv_dev_check(const struct accdma_world *w, int dev)
{
	if (drv_world_check(w))
		return -EBADF;
	if (dev < w->first_local || dev >= w->first_local + w->nlocal)
		return -EINVAL;
	return 0;
}

/* Worlds opened by this process: each seeds its generations apart. */
static _Atomic uint32_t worlds_opened;

/**
 * token_seed() - start every completion record of @w's local devices at a
 * generation of this world's own, so that a token of another world of the
 * same shape names no live op here (it fails -ESTALE).
 * @w: a world being opened, before any op is posted.
 *
 * The k-th world opened starts at k times 2^32 divided by the golden ratio:
 * seeds of any n worlds lie about 2^32 / (3 n) apart or more, so a slot has
 * to be reused that often before one world's generations reach another's.
 */
static void token_seed(struct accdma_world *w)
{
	uint32_t k = atomic_fetch_add_explicit(&worlds_opened, 1, memory_order_relaxed) + 1;
	uint32_t seed = k * 0x9e3779b9u;

	for (int d = w->first_local; d < w->first_local + w->nlocal; d++)
		for (int qi = 0; qi < w->opts.queues; qi++) {
			struct q_cpl *c = w->queues[d * w->opts.queues + qi].cpl;

			for (uint32_t s = 0; s < w->opts.queue_depth; s++)
				atomic_store_explicit(&c[s].gen, seed, memory_order_relaxed);
		}
}

/*
 * The longest nap of our engines beside a polling host (struct fw_host): the
 * transport's, where this process may run on fewer CPUs than it has engine
 * threads and a host thread, so that each nap's end takes the host's core;
 * else 1 ms naps cost next to nothing, and bound how long work that no
 * thread waits for sits.
 */
static uint32_t engine_nap_max_us(const struct accdma_world *w, const struct drv_transport *tp, uint32_t engines)
{
	cpu_set_t set;

	if (!tp->nap_max_us || sched_getaffinity(0, sizeof(set), &set))
		return 0;
	return (uint64_t)CPU_COUNT(&set) < 1 + (uint64_t)w->nlocal * engines ? tp->nap_max_us : 0;
}

/* Say which option is wrong (log_level >= 1): -EINVAL alone tells a user nothing. */
static int opts_valid(const struct accdma_world_opts *o)
{
	const char *why = NULL;

	if (o->num_devices < 1 || o->num_devices > Q_MAX_DEVICES)
		why = "num_devices must be 1..1024";
	else if (o->engines < 0 || o->engines > Q_MAX_ENGINES)
		why = "engines must be 0..16";
	else if (o->queues < 1 || o->queues > Q_MAX_QUEUES)
		why = "queues must be 1..64";
	else if (o->queue_depth < 2 || o->queue_depth > 65536 ||
		 (o->queue_depth & (o->queue_depth - 1)))
		why = "queue_depth must be a power of two, 2..65536";
	else if (o->mem_size == 0)
		why = "mem_size must not be 0";
	else if (o->eager_max < 0 || o->eager_max > ACCDMA_EAGER_MAX)
		why = "eager_max must be 0..1024 (ACCDMA_EAGER_MAX)";
	if (why && o->log_level >= 1)
		fprintf(stderr, "accdma: accdma_world_open: %s\n", why);
	return why == NULL;
}

/* The device-to-node map: the caller's, else ACCDMA_NUMA_MAP, else round-robin
 * over the machine's nodes; every node must exist. */
static int setup_numa(struct accdma_world *w)
{
	int n = w->opts.num_devices, nodes = dma_numa_nodes();
	const char *env = drv_env("ACCDMA_NUMA_MAP");

	w->numa_map = calloc((size_t)n, sizeof(int));
	if (!w->numa_map)
		return -ENOMEM;
	if (w->opts.numa_map)
		memcpy(w->numa_map, w->opts.numa_map, (size_t)n * sizeof(int));
	else if (env) {
		if (drv_parse_numa_map(env, w->numa_map, n)) {
			if (w->opts.log_level >= 1)
				fprintf(stderr, "accdma: ACCDMA_NUMA_MAP='%s': expected a comma list of "
						"node numbers\n", env);
			return -EINVAL;
		}
	} else {
		for (int i = 0; i < n; i++)
			w->numa_map[i] = i % nodes;
	}
	for (int i = 0; i < n; i++)
		if (w->numa_map[i] < 0 || w->numa_map[i] >= nodes) {
			if (w->opts.log_level >= 1)
				fprintf(stderr, "accdma: accdma_world_open: device %d: NUMA node %d, but "
						"this machine has nodes 0..%d\n", i, w->numa_map[i], nodes - 1);
			return -EINVAL;
		}
	w->opts.numa_map = w->numa_map;
	return 0;
}

/* Stop the local engines, then the host state and the transport (device
 * memory, the arena); leaves the world and queue handles for the tombstone. */
static void release_world(struct accdma_world *w)
{
	if (w->a.sh) {
		if (w->tp->stop)
			w->tp->stop(w);
		for (int d = 0; w->devs && d < w->opts.num_devices; d++)
			fw_device_stop(w->devs[d].fw);
	}
	for (int d = 0; w->devs && d < w->opts.num_devices; d++) {
		struct drv_dev *dd = &w->devs[d];

		if (d < w->first_local || d >= w->first_local + w->nlocal)
			continue;
		drv_seq_fini(&dd->seqs);
		pthread_mutex_destroy(&dd->mb_lock);
		pthread_mutex_destroy(&dd->mem_lock);
	}
	if (w->tp)
		w->tp->close(w);
	for (int i = 0; w->queues && i < w->opts.num_devices * w->opts.queues; i++) {
		free(w->queues[i].exec);
		w->queues[i].exec = NULL;
	}
	dma_space_fini(&w->space);
	free(w->devs);
	free(w->numa_map);
	w->devs = NULL;
	w->numa_map = NULL;
}

int accdma_world_open(const struct accdma_world_opts *opts, accdma_world **out)
{
	const struct drv_transport *tp;
	struct accdma_world_opts defaults;
	struct accdma_world *w;
	int rc, nq;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!opts) {
		accdma_world_opts_init(&defaults);
		opts = &defaults;
	}
	if (!opts_valid(opts))
		return -EINVAL;
	tp = drv_transport_find(opts->transport);
	if (!tp) {
		if (opts->log_level >= 1)
			fprintf(stderr, "accdma: accdma_world_open: transport %d is not in this build\n",
				(int)opts->transport);
		return -EPROTONOSUPPORT;
	}
	if (fw_fault_parse(drv_env("ACCDMA_FAULT"))) {
		fprintf(stderr, "accdma: ACCDMA_FAULT='%s': expected site:nth[,site:nth] with sites "
				"fetch, match, exec, copy, zero, kick, wake\n", drv_env("ACCDMA_FAULT"));
		return -EINVAL;
	}
	q_trace_set_out(drv_env("ACCDMA_TRACE_OUT"));
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->opts = *opts;
	w->tp = tp;
	/* engines = 0: a polled device, one engine's state and no thread. */
	w->threaded = opts->engines > 0;
	if (!w->threaded)
		w->opts.engines = 1;
	w->spin_ns = opts->spin_us > 0 ? (uint64_t)opts->spin_us * 1000 : 0;
	w->host_poll = opts->host_poll != 0;
	rc = setup_numa(w);
	if (rc)
		goto fail;
	rc = dma_space_init(&w->space, (uint32_t)opts->num_devices);
	if (rc)
		goto fail;
	/* Every process computes the arena's geometry itself, from the options alone. */
	rc = q_geom_init(&w->a.g, (uint32_t)opts->num_devices, (uint32_t)opts->queues,
			 (uint32_t)w->opts.engines, opts->queue_depth, (uint32_t)opts->eager_max,
			 tp->shared_arena);
	if (rc)
		goto fail;
	rc = tp->open(w);
	if (rc)
		goto fail;
	nq = opts->num_devices * opts->queues;
	w->devs = calloc((size_t)opts->num_devices, sizeof(*w->devs));
	w->queues = calloc((size_t)nq, sizeof(*w->queues));
	rc = -ENOMEM;
	if (!w->devs || !w->queues)
		goto fail;
	for (int d = w->first_local; d < w->first_local + w->nlocal; d++) {
		struct q_dev_sh *ds = q_dev(&w->a, (uint32_t)d);
		struct drv_dev *dd = &w->devs[d];

		ds->numa_node = w->numa_map[d];
		ds->mem_size = opts->mem_size;
		if (drv_seq_init(&dd->seqs, opts->queues == 1))
			goto fail;
		pthread_mutex_init(&dd->mb_lock, NULL);
		pthread_mutex_init(&dd->mem_lock, NULL);
	}
	for (int i = 0; i < nq; i++) {
		struct accdma_queue *q = &w->queues[i];

		q->magic = DRV_QUEUE_MAGIC;
		q->world = w;
		q->dev = (uint32_t)(i / opts->queues);
		q->index = (uint32_t)(i % opts->queues);
		q->sh = q_queue(&w->a, q->dev, q->index);
		q->desc = q_descs(&w->a, q->dev, q->index);
		q->cpl = q_cpls(&w->a, q->dev, q->index);
		q->sq = q_sq(&w->a, q->dev, q->index);
		q->mask = opts->queue_depth - 1;
		q->waits_at_submit = UINT32_MAX; /* the first post is read inline */
		if ((int)q->dev >= w->first_local && (int)q->dev < w->first_local + w->nlocal) {
			q->exec = calloc(opts->queue_depth, sizeof(*q->exec));
			if (!q->exec)
				goto fail;
		}
	}
	/* the transport's link, if it has one, was set by its open */
	w->host.exec = drv_exec_run;
	w->host.recv_order = drv_seq_order;
	w->host.ctx = w;
	w->host.nap_max_us = engine_nap_max_us(w, tp, opts->engines);
	token_seed(w); /* before the engines start: nothing is posted yet */
	for (int d = w->first_local; !tp->kernel_engines && d < w->first_local + w->nlocal; d++) {
		rc = fw_device_start(&w->a, &w->space, (uint32_t)d, w->spin_ns, w->threaded,
				     opts->membarrier && !tp->full_fences, &w->host, &w->devs[d].fw);
		if (rc)
			goto fail;
	}
	if (tp->start) {
		rc = tp->start(w);
		if (rc)
			goto fail;
	}
	w->magic = DRV_WORLD_MAGIC;
	*out = w;
	return 0;
fail:
	release_world(w);
	free(w->queues);
	free(w);
	return rc;
}

/* Say so at close (log_level >= 1) if a local engine had to find work on
 * its own because the kick for it never came, or a host waiter its ops done
 * because the wake-up never came: the job ran on, but slower. */
static void report_late_wakes(struct accdma_world *w)
{
	uint64_t waits = atomic_load(&w->late_waits);

	if (w->opts.log_level < 1)
		return;
	if (waits)
		fprintf(stderr,
			"accdma: %llu host wait%s never woken; the waiter found its ops done on "
			"its own after a timed sleep\n",
			(unsigned long long)waits, waits == 1 ? " was" : "s were");
	for (int d = w->first_local; d < w->first_local + w->nlocal; d++)
		for (uint32_t e = 0; e < w->a.g.engines; e++) {
			uint64_t n = atomic_load(&q_dev(&w->a, (uint32_t)d)->engines[e].late_wakes);

			if (n)
				fprintf(stderr,
					"accdma: device %d engine %u: %llu wake-up%s never came; the engine "
					"found the work on its own after a timed sleep\n",
					d, e, (unsigned long long)n, n == 1 ? "" : "s");
		}
}

int accdma_world_close(accdma_world *w)
{
	int rc;

	if (drv_world_check(w))
		return -EBADF;
	/* Threads blocked in waits leave first (-ESHUTDOWN): they read the arena. */
	rc = drv_block_shutdown(w);
	if (rc)
		return rc;
	report_late_wakes(w);
	w->magic = DRV_DEAD_MAGIC;
	for (int i = 0; i < w->opts.num_devices * w->opts.queues; i++)
		w->queues[i].magic = DRV_DEAD_MAGIC;
	release_world(w);
	pthread_mutex_lock(&closed_lock);
	w->next_closed = closed_worlds;
	closed_worlds = w;
	pthread_mutex_unlock(&closed_lock);
	return 0;
}

int accdma_world_size(accdma_world *w)
{
	return drv_world_check(w) ? -EBADF : w->opts.num_devices;
}

int accdma_world_local_devices(accdma_world *w, int *first)
{
	if (drv_world_check(w))
		return -EBADF;
	if (first)
		*first = w->first_local;
	return w->nlocal;
}

int accdma_queue_get(accdma_world *w, int dev, int index, accdma_queue **queue)
{
	int rc = drv_dev_check(w, dev);

	if (rc)
		return rc;
	if (!queue || index < 0 || index >= w->opts.queues)
		return -EINVAL;
	*queue = &w->queues[dev * w->opts.queues + index];
	return 0;
}

int accdma_queue_stats(accdma_queue *q, struct accdma_queue_stats *stats)
{
	if (!q || q->magic != DRV_QUEUE_MAGIC || drv_world_check(q->world))
		return -EBADF;
	if (!stats)
		return -EINVAL;
	stats->submitted = atomic_load(&q->sh->submitted);
	stats->completed = q_queue_completed(q->sh);
	stats->errors = atomic_load(&q->sh->errors);
	return 0;
}
