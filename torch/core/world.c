// SPDX-License-Identifier: MIT
/*
 * world.c - the shm world a process group runs on, and its staging pool.
 * Staging buffers are cached by power-of-two size class: allocating device
 * memory costs a syscall and fresh pages, and torch sends the same sizes
 * over and over.
 */
#include <errno.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "atc.h"

#define ATC_MIN_SHIFT 12

int atc_pick_port(int *fd)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		return -errno;
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) ||
	    getsockname(s, (struct sockaddr *)&sa, &len)) {
		int e = -errno;

		close(s);
		return e;
	}
	*fd = s;
	return ntohs(sa.sin_port);
}

/* Engines per device when ACCDMA_ENGINES does not say: two where this
 * process may run on two CPUs or more, as under torchrun. A second engine
 * copies half of every transfer of 4 MiB or more (the library's split
 * copies, cross-memory attach included), which one core's copy leaves to
 * spare; a process bound to one CPU (accdma-run's default) gains nothing
 * from it. */
static int default_engines(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	return CPU_COUNT(&set) >= 2 ? 2 : 1;
}

int atc_world_open(int dev, int ndev, int port, int port_fd, struct atc_world **out, char *err,
		   size_t errlen)
{
	struct accdma_world_opts o;
	struct atc_world *aw;
	int rc;

	if (dev < 0 || dev >= ndev || port <= 0 || port > 65535) {
		snprintf(err, errlen, "accdma: bad world: device %d of %d, rendezvous %d", dev, ndev,
			 port);
		return -EINVAL;
	}
	rc = accdma_world_opts_init(&o);
	if (rc) {
		snprintf(err, errlen, "accdma: a malformed ACCDMA_* variable (see stderr)");
		return rc;
	}
	/* The group's rank and size, not the launcher's: a new_group's world
	 * is its members only. */
	o.transport = ACCDMA_TRANSPORT_SHM;
	o.num_devices = ndev;
	o.rank = dev;
	o.local_devices = 1;
	o.master_addr = NULL;
	o.master_port = port;
	if (!getenv("ACCDMA_QUEUE_DEPTH"))
		o.queue_depth = 1024; /* a ring collective on 64 ranks posts ~320 ops */
	if (!getenv("ACCDMA_ENGINES"))
		o.engines = default_engines();
	aw = calloc(1, sizeof(*aw));
	if (!aw)
		return -ENOMEM;
	aw->port_fd = -1;
	rc = accdma_world_open(&o, &aw->w);
	if (!rc)
		rc = accdma_queue_get(aw->w, dev, 0, &aw->q);
	if (rc) {
		snprintf(err, errlen,
			 "accdma: opening the shm world (device %d of %d, rendezvous %d) failed: %s",
			 dev, ndev, port, strerror(-rc));
		if (aw->w)
			accdma_world_close(aw->w);
		free(aw);
		return rc;
	}
	pthread_mutex_init(&aw->lock, NULL);
	aw->dev = dev;
	aw->ndev = ndev;
	aw->next_gid = 1;
	aw->port_fd = port_fd;
	aw->engines = o.engines;
	*out = aw;
	return 0;
}

void atc_world_close(struct atc_world *aw)
{
	if (!aw)
		return;
	for (int c = 0; c < ATC_POOL_CLASSES; c++) {
		for (int i = 0; i < aw->nfree[c]; i++)
			accdma_mem_free(aw->w, aw->dev, aw->free[c][i].key);
		free(aw->free[c]);
	}
	free(aw->regs);
	accdma_world_close(aw->w);
	if (aw->port_fd >= 0)
		close(aw->port_fd);
	pthread_mutex_destroy(&aw->lock);
	free(aw);
}

static int size_class(uint64_t bytes)
{
	int c = 0;

	while (c < ATC_POOL_CLASSES - 1 && (1ull << (ATC_MIN_SHIFT + c)) < bytes)
		c++;
	return c;
}

/* Drop every cached buffer: a large request may fit once they are gone. */
static void pool_drain(struct atc_world *aw)
{
	for (int c = 0; c < ATC_POOL_CLASSES; c++) {
		for (int i = 0; i < aw->nfree[c]; i++)
			accdma_mem_free(aw->w, aw->dev, aw->free[c][i].key);
		aw->nfree[c] = 0;
	}
}

int atc_buf_get(struct atc_world *aw, uint64_t bytes, struct atc_buf *out)
{
	int c = size_class(bytes ? bytes : 1), rc;
	uint64_t size = 1ull << (ATC_MIN_SHIFT + c);

	pthread_mutex_lock(&aw->lock);
	if (aw->nfree[c]) {
		*out = aw->free[c][--aw->nfree[c]];
		pthread_mutex_unlock(&aw->lock);
		return 0;
	}
	rc = accdma_mem_alloc(aw->w, aw->dev, size, &out->key);
	if (rc == -ENOMEM) {
		pool_drain(aw);
		rc = accdma_mem_alloc(aw->w, aw->dev, size, &out->key);
	}
	pthread_mutex_unlock(&aw->lock);
	if (rc)
		return rc;
	out->size = size;
	out->ptr = accdma_mem_ptr(aw->w, aw->dev, out->key, NULL);
	return out->ptr ? 0 : -EFAULT;
}

void atc_buf_put(struct atc_world *aw, struct atc_buf *b)
{
	int c;

	if (!b->key)
		return;
	c = size_class(b->size);
	pthread_mutex_lock(&aw->lock);
	if (aw->nfree[c] == aw->capfree[c]) {
		int cap = aw->capfree[c] ? aw->capfree[c] * 2 : 4;
		struct atc_buf *n = realloc(aw->free[c], (size_t)cap * sizeof(*n));

		if (!n) {
			accdma_mem_free(aw->w, aw->dev, b->key);
			pthread_mutex_unlock(&aw->lock);
			b->key = 0;
			return;
		}
		aw->free[c] = n;
		aw->capfree[c] = cap;
	}
	aw->free[c][aw->nfree[c]++] = *b;
	pthread_mutex_unlock(&aw->lock);
	b->key = 0;
}
