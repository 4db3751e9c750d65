/* SPDX-License-Identifier: MIT */
/*
 * placement.c - every device's NUMA node, for the header block.
 *
 * A device's mailbox answers only the process that drives it, so over shm
 * the printing process (the one with device 0) cannot ask the others'. Each
 * other process sends its devices' nodes to device 0 once, before anything is
 * timed, with a tag no measured op uses.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bw.h"

#define BW_TAG_PLACEMENT 0x4e554d41ull /* "NUMA" */

/* Nodes of this process's devices; -1 where the mailbox does not answer. */
static void local_nodes(accdma_world *w, int first, int nlocal, int *numa)
{
	struct accdma_device_info info;

	for (int d = first; d < first + nlocal; d++)
		numa[d] = accdma_device_info(w, d, &info) ? -1 : info.numa_node;
}

/*
 * Device @dev's side of the exchange, into a region of its own: device 0
 * receives one node from every device of another process (at offset
 * 8 * device), every other device sends its own.
 */
static int exchange(accdma_world *w, int dev, int first, int nlocal, int n, int *numa,
		    int64_t timeout_ms)
{
	accdma_token *tok = calloc((size_t)n, sizeof(*tok));
	enum accdma_status *st = calloc((size_t)n, sizeof(*st));
	accdma_queue *q;
	accdma_key key = 0;
	int64_t *buf;
	int rc, k = 0;

	rc = tok && st ? 0 : -ENOMEM;
	if (!rc)
		rc = accdma_queue_get(w, dev, 0, &q);
	if (!rc)
		rc = accdma_mem_alloc(w, dev, (uint64_t)n * sizeof(*buf), &key);
	if (rc)
		goto out;
	buf = accdma_mem_ptr(w, dev, key, NULL);
	if (!buf)
		rc = -EFAULT;
	else if (dev == 0) {
		for (int s = 0; s < n && !rc; s++)
			if (s < first || s >= first + nlocal)
				rc = accdma_recv(q, s, BW_TAG_PLACEMENT, key, (uint64_t)s * sizeof(*buf),
						 sizeof(*buf), NULL, 0, &tok[k++]);
	} else {
		buf[0] = numa[dev];
		rc = accdma_send(q, 0, BW_TAG_PLACEMENT, key, 0, sizeof(*buf), NULL, 0, &tok[k++]);
	}
	if (rc && k) /* the failed post took no token; what was posted still has to finish */
		k--;
	if (k > 0) {
		int wrc = accdma_wait_all(w, tok, k, timeout_ms, st);

		rc = rc ? rc : wrc;
	}
	for (int i = 0; !rc && i < k; i++)
		if (st[i] != ACCDMA_OK)
			rc = -EIO;
	if (!rc && dev == 0)
		for (int s = 0; s < n; s++)
			if (s < first || s >= first + nlocal)
				numa[s] = buf[s] >= -1 && buf[s] < 1 << 16 ? (int)buf[s] : -1;
	accdma_mem_free(w, dev, key);
out:
	if (rc)
		fprintf(stderr, "accdma-bw: device %d: exchanging NUMA placement: %s\n", dev,
			strerror(-rc));
	free(tok);
	free(st);
	return rc;
}

/**
 * bw_numa_nodes() - every device's NUMA node, in the process that prints.
 * @w: the world. @numa: out, one per device of the world (-1: unknown).
 * @timeout_ms: how long to wait for the other processes.
 *
 * Collective over shm: every process calls it once, before the first run.
 * Elsewhere only the devices of this process are filled in for real.
 * Return: 0, or a negative errno (the reason is on stderr).
 */
int bw_numa_nodes(accdma_world *w, int *numa, int64_t timeout_ms)
{
	int n = accdma_world_size(w), first = 0, nlocal = accdma_world_local_devices(w, &first), rc;

	if (n < 0 || nlocal < 0)
		return n < 0 ? n : nlocal;
	for (int d = 0; d < n; d++)
		numa[d] = -1;
	local_nodes(w, first, nlocal, numa);
	if (nlocal >= n)
		return 0;
	if (first == 0)
		return exchange(w, 0, first, nlocal, n, numa, timeout_ms);
	for (int d = first; d < first + nlocal; d++) {
		rc = exchange(w, d, first, nlocal, n, numa, timeout_ms);
		if (rc)
			return rc;
	}
	return 0;
}
