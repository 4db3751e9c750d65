// SPDX-License-Identifier: MIT
/*
 * opts.c - world options: defaults, then the ACCDMA_* environment.
 * The table of variables is in docs/configuration.md.
 */
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
	if (*end || n < min || n > max)
		return -EINVAL;
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
	else
		return -EINVAL;
	return 0;
}

static int env_log(int *level)
{
	const char *v = getenv("ACCDMA_LOG");
	int64_t n;

	if (!v || !*v)
		return 0;
	if (!strcasecmp(v, "none"))
		*level = 0;
	else if (!strcasecmp(v, "warn"))
		*level = 1;
	else if (!strcasecmp(v, "debug"))
		*level = 2;
	else if (env_i64("ACCDMA_LOG", 0, 2, &n) == 0)
		*level = (int)n;
	else
		return -EINVAL;
	return 0;
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

	rc |= env_transport(&o->transport);
	v = o->num_devices;
	rc |= env_i64("ACCDMA_NUM_DEVICES", 1, Q_MAX_DEVICES, &v);
	o->num_devices = (int)v;
	v = o->engines;
	rc |= env_i64("ACCDMA_ENGINES", 1, Q_MAX_ENGINES, &v);
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
	rc |= env_i64("ACCDMA_PEER_TIMEOUT_MS", 1, INT64_MAX, &o->peer_timeout_ms);
	return rc ? -EINVAL : 0;
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
