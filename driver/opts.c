// SPDX-License-Identifier: MIT
/*
 * opts.c - world options: defaults, then the ACCDMA_* environment. Every
 * ACCDMA_* variable the library reads is read here.
 * The table of variables is in README.md ("Configuration").
 * A malformed variable is reported on stderr: it is an error in the job's
 * set-up, and the field keeps its default.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "driver/internal.h"

static int env_i64(const char *name, int64_t min, int64_t max, int64_t *out)
{
	const char *v = getenv(name);
	char *end;
	long long n;

	if (!v || !*v)
		return 0;
	n = strtoll(v, &end, 0);
	if (end == v || *end || n < min || n > max) {
		fprintf(stderr, "accdma: %s='%s': expected an integer in %lld..%lld\n", name, v,
			(long long)min, (long long)max);
		return -EINVAL;
	}
	*out = n;
	return 0;
}

static int env_transport(enum accdma_transport *t)
{
	const char *v = getenv("ACCDMA_TRANSPORT");

	if (!v || !*v)
		return 0;
	if (!strcasecmp(v, "local"))
		*t = ACCDMA_TRANSPORT_LOCAL;
	else if (!strcasecmp(v, "shm"))
		*t = ACCDMA_TRANSPORT_SHM;
	else if (!strcasecmp(v, "verbs"))
		*t = ACCDMA_TRANSPORT_VERBS;
	else if (!strcasecmp(v, "loop"))
		*t = ACCDMA_TRANSPORT_LOOP;
	else if (!strcasecmp(v, "kmod"))
		*t = ACCDMA_TRANSPORT_KMOD;
	else {
		fprintf(stderr, "accdma: ACCDMA_TRANSPORT='%s': expected local, shm, verbs, loop or kmod\n", v);
		return -EINVAL;
	}
	return 0;
}

static int env_log(int *level)
{
	const char *v = getenv("ACCDMA_LOG");
	char *end;
	long n;

	if (!v || !*v)
		return 0;
	if (!strcasecmp(v, "none"))
		*level = 0;
	else if (!strcasecmp(v, "warn"))
		*level = 1;
	else if (!strcasecmp(v, "debug"))
		*level = 2;
	else if ((n = strtol(v, &end, 10)) >= 0 && n <= 2 && end != v && !*end)
		*level = (int)n;
	else {
		fprintf(stderr, "accdma: ACCDMA_LOG='%s': expected none, warn, debug or 0..2\n", v);
		return -EINVAL;
	}
	return 0;
}

/* The first of several variables that is set (launchers differ in naming). */
static const char *env_first(const char *const *names, const char **which)
{
	for (int i = 0; names[i]; i++) {
		const char *v = getenv(names[i]);

		if (v && *v) {
			*which = names[i];
			return v;
		}
	}
	return NULL;
}

/* shm: who this process is, from torchrun (RANK, WORLD_SIZE, MASTER_ADDR,
 * MASTER_PORT), mpirun (OMPI_COMM_WORLD_*) or PMI (PMI_RANK/PMI_SIZE).
 * A process drives ACCDMA_LOCAL_DEVICES devices (default 1), so its first
 * device is RANK * local_devices and the world has WORLD_SIZE * local_devices. */
static int env_shm(struct accdma_world_opts *o, int ndev_from_env)
{
	static const char *const ranks[] = { "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", NULL };
	static const char *const sizes[] = { "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", NULL };
	const char *which = NULL;
	int64_t v = o->local_devices, rank = -1, size = -1;
	int rc = 0;

	rc |= env_i64("ACCDMA_LOCAL_DEVICES", 1, Q_MAX_DEVICES, &v);
	o->local_devices = (int)v;
	if (env_first(ranks, &which))
		rc |= env_i64(which, 0, Q_MAX_DEVICES - 1, &rank);
	if (env_first(sizes, &which))
		rc |= env_i64(which, 1, Q_MAX_DEVICES, &size);
	if (rank >= 0 && rank * o->local_devices < Q_MAX_DEVICES)
		o->rank = (int)(rank * o->local_devices);
	if (size > 0 && !ndev_from_env &&
	    (o->transport == ACCDMA_TRANSPORT_SHM || o->transport == ACCDMA_TRANSPORT_VERBS ||
	     o->transport == ACCDMA_TRANSPORT_KMOD) &&
	    size * o->local_devices <= Q_MAX_DEVICES)
		o->num_devices = (int)(size * o->local_devices);
	if (getenv("MASTER_ADDR") && *getenv("MASTER_ADDR"))
		o->master_addr = getenv("MASTER_ADDR");
	v = 0;
	rc |= env_i64("MASTER_PORT", 1, 65535, &v);
	o->master_port = (int)v;
	return rc;
}

int accdma_world_opts_init(struct accdma_world_opts *o)
{
	int64_t v;
	int rc = 0;

	if (!o)
		return -EINVAL;
	memset(o, 0, sizeof(*o));
	o->transport = ACCDMA_TRANSPORT_LOCAL;
	o->num_devices = 2;
	o->engines = 1;
	o->queues = 1;
	o->queue_depth = 256;
	o->mem_size = 4ull << 30;
	o->timeout_ms = 30000;
	o->log_level = 1;
	o->rank = -1;
	o->local_devices = 1;
	o->master_addr = NULL;
	o->master_port = 0;
	o->peer_timeout_ms = 5000;
	o->eager_max = ACCDMA_EAGER_MAX_DEFAULT;
	o->spin_us = 50;
	o->host_poll = 1;
	o->membarrier = 1;

	rc |= env_transport(&o->transport);
	v = o->num_devices;
	rc |= env_i64("ACCDMA_NUM_DEVICES", 1, Q_MAX_DEVICES, &v);
	o->num_devices = (int)v;
	v = o->engines;
	rc |= env_i64("ACCDMA_ENGINES", 0, Q_MAX_ENGINES, &v);
	o->engines = (int)v;
	v = o->queues;
	rc |= env_i64("ACCDMA_QUEUES", 1, Q_MAX_QUEUES, &v);
	o->queues = (int)v;
	v = o->queue_depth;
	rc |= env_i64("ACCDMA_QUEUE_DEPTH", 2, 65536, &v);
	o->queue_depth = (uint32_t)v;
	v = (int64_t)o->mem_size;
	rc |= env_i64("ACCDMA_MEM_SIZE", 1, INT64_MAX, &v);
	o->mem_size = (uint64_t)v;
	rc |= env_i64("ACCDMA_TIMEOUT_MS", 1, INT64_MAX, &o->timeout_ms);
	rc |= env_log(&o->log_level);
	rc |= env_i64("ACCDMA_PEER_TIMEOUT_MS", 1, INT64_MAX / 4000000, &o->peer_timeout_ms);
	v = o->eager_max;
	rc |= env_i64("ACCDMA_EAGER_MAX", 0, ACCDMA_EAGER_MAX, &v);
	o->eager_max = (int)v;
	rc |= env_i64("ACCDMA_SPIN_US", 0, INT64_MAX / 1000, &o->spin_us);
	v = o->host_poll;
	rc |= env_i64("ACCDMA_POLL", 0, 1, &v);
	o->host_poll = (int)v;
	v = o->membarrier;
	rc |= env_i64("ACCDMA_MEMBARRIER", 0, 1, &v);
	o->membarrier = (int)v;
	rc |= env_shm(o, getenv("ACCDMA_NUM_DEVICES") && *getenv("ACCDMA_NUM_DEVICES"));
	return rc ? -EINVAL : 0;
}

/**
 * drv_env() - the value of one of the variables read at world open rather
 * than into an option field (ACCDMA_NUMA_MAP, ACCDMA_FAULT, ACCDMA_TRACE_OUT):
 * every ACCDMA_* variable is read in this file.
 * @name: the variable.
 * Return: its value, or NULL if unset or empty.
 */
const char *drv_env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/**
 * drv_parse_numa_map() - parse "0,1,0,1" into @n node ids (shorter lists repeat).
 * Return: 0, or -EINVAL.
 */
int drv_parse_numa_map(const char *s, int *map, int n)
{
	int got = 0;

	while (*s && got < n) {
		char *end;
		long v = strtol(s, &end, 10);

		if (end == s || v < 0 || v > 4095)
			return -EINVAL;
		map[got++] = (int)v;
		s = end;
		if (*s == ',')
			s++;
		else if (*s)
			return -EINVAL;
	}
	if (!got)
		return -EINVAL;
	for (int i = got; i < n; i++)
		map[i] = map[i % got];
	return 0;
}
