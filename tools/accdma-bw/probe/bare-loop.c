// SPDX-License-Identifier: MIT
/*
 * bare-loop.c - accdma's 8-byte permute with nothing around the calls.
 *
 * The loops a runtime (or OSU's and ucx_perftest's benchmarks) would write:
 * post an iteration's ops with one accdma_post(), wait for the oldest
 * iteration with one accdma_wait_all(), check the statuses, nothing else.
 * Beside accdma-bw's figures it says what accdma-bw's own loop costs
 * (docs/perf/2026-12-01.md, section 9). Every device sends first,
 * or with `evenodd` odd devices receive first, as accdma-bw orders a ring;
 * the last iteration's payload is checked.
 *
 *   accdma-run -n 2 -- bare-loop round|chain|fence [iterations [evenodd]]
 *
 * round: one iteration in flight (send to next, recv from previous, wait
 *        for both): prints the mean round in us.
 * chain: 32 iterations in flight (64 ops, as accdma-bw's default window);
 * fence: send, fence, recv, fence, 16 iterations in flight (64 ops):
 *        print M transfers per second, all devices (accdma-bw's Mops).
 * Exit status 0 only if every op completed OK and the data arrived.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <accdma.h>

#define WINDOW_OPS 64
#define WARMUP 2000
#define TAG 0x42
#define SLOT 64 /* bytes between two iterations' buffers */

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int fail(const char *what, int rc)
{
	fprintf(stderr, "bare-loop: %s: %s\n", what, strerror(-rc));
	return 1;
}

/* Wait for the @per ops at @t and check that each completed OK. */
static int wait_iter(accdma_world *w, accdma_token *t, int per, long iter)
{
	enum accdma_status st[4];
	int rc = accdma_wait_all(w, t, per, 10000, st);

	if (rc)
		return fail("accdma_wait_all", rc);
	for (int j = 0; j < per; j++)
		if (st[j] != ACCDMA_OK) {
			fprintf(stderr, "bare-loop: iteration %ld op %d: %s\n", iter, j,
				accdma_status_str(st[j]));
			return 1;
		}
	return 0;
}

/* Every rank reaches this point before any goes on (accdma_barrier, then its wait). */
static int sync_ranks(accdma_world *w, accdma_queue *q)
{
	accdma_token t;
	int rc = accdma_barrier(q, NULL, 0, &t);

	if (!rc)
		rc = accdma_wait(w, t, 10000, NULL);
	return rc ? fail("barrier", rc) : 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "round";
	long n = argc > 2 ? atol(argv[2]) : 200000, total;
	int fence = !strcmp(mode, "fence"), round = !strcmp(mode, "round");
	int evenodd = argc > 3 && !strcmp(argv[3], "evenodd");
	int per = fence ? 4 : 2, win = round ? 1 : WINDOW_OPS / per, first, ndev, rc;
	struct accdma_world_opts o;
	accdma_world *w;
	accdma_queue *q;
	accdma_key key;
	uint8_t *buf;

	if ((!round && !fence && strcmp(mode, "chain")) || n < 1 || (argc > 3 && !evenodd)) {
		fprintf(stderr, "usage: bare-loop round|chain|fence [iterations [evenodd]]\n");
		return 2;
	}
	accdma_world_opts_init(&o);
	if (o.transport != ACCDMA_TRANSPORT_SHM) {
		fprintf(stderr, "bare-loop: run it under accdma-run (one process per device)\n");
		return 2;
	}
	rc = accdma_world_open(&o, &w);
	if (rc)
		return fail("accdma_world_open", rc);
	ndev = accdma_world_size(w);
	if (accdma_world_local_devices(w, &first) != 1)
		return fail("one device per process expected", -EINVAL);

	int me = first, next = (me + 1) % ndev, prev = (me - 1 + ndev) % ndev;
	struct accdma_op ops[WINDOW_OPS];
	accdma_token tok[WINDOW_OPS];

	rc = accdma_mem_alloc(w, me, 2 * (uint64_t)win * SLOT, &key);
	if (!rc)
		rc = accdma_queue_get(w, me, 0, &q);
	if (rc)
		return fail("set-up", rc);
	buf = accdma_mem_ptr(w, me, key, NULL);
	memset(ops, 0, sizeof(ops));
	for (int s = 0; s < win; s++) {
		struct accdma_op *p = &ops[s * per];
		/* with fences: send, fence, recv, fence; the two halves swapped if recv first */
		int send_at = evenodd && me % 2 ? per / 2 : 0, recv_at = per / 2 - send_at;

		p[send_at] = (struct accdma_op){ .kind = ACCDMA_OP_SEND, .peer = next, .tag = TAG,
						 .key = key, .offset = (uint64_t)s * SLOT, .length = 8 };
		p[recv_at] = (struct accdma_op){ .kind = ACCDMA_OP_RECV, .peer = prev, .tag = TAG,
						 .key = key, .offset = (uint64_t)(win + s) * SLOT,
						 .length = 8 };
		if (fence)
			p[1].kind = p[3].kind = ACCDMA_OP_FENCE;
	}

	/* the last iteration sends 8 bytes naming the sender and the iteration */
	total = WARMUP + n;
	uint64_t mark = ((uint64_t)me << 48) | (uint64_t)(total - 1);
	double t0 = 0;

	if (sync_ranks(w, q))
		return 1;
	for (long i = 0; i < total; i++) {
		int s = (int)(i % win);

		if (i == WARMUP)
			t0 = now();
		if (i >= win && wait_iter(w, &tok[s * per], per, i - win))
			return 1;
		if (i == total - 1)
			memcpy(buf + (uint64_t)s * SLOT, &mark, 8); /* its slot is free: waited above */
		rc = accdma_post(q, &ops[s * per], per, &tok[s * per]);
		if (rc != per)
			return fail("accdma_post", rc < 0 ? rc : -EIO);
	}
	for (long i = total > win ? total - win : 0; i < total; i++)
		if (wait_iter(w, &tok[(i % win) * per], per, i))
			return 1;
	double dt = now() - t0;

	uint64_t got, want = ((uint64_t)prev << 48) | (uint64_t)(total - 1);
	memcpy(&got, buf + (uint64_t)(win + (total - 1) % win) * SLOT, 8);
	if (got != want) {
		fprintf(stderr, "bare-loop: DATA MISMATCH on device %d: got %#llx, want %#llx\n", me,
			(unsigned long long)got, (unsigned long long)want);
		return 1;
	}
	if (me == 0) {
		const char *order = evenodd ? "even/odd" : "all send first";

		if (round)
			printf("bare-loop round %.4f us (mean of %ld, %s, verified)\n",
			       dt / (double)n * 1e6, n, order);
		else
			printf("bare-loop %s %.3f Mops (%ld iterations, %d devices, %s, verified)\n", mode,
			       (double)n * ndev / dt / 1e6, n, ndev, order);
	}
	/* no rank closes while a peer may still read what it sent */
	if (sync_ranks(w, q))
		return 1;
	rc = accdma_world_close(w);
	return rc ? fail("accdma_world_close", rc) : 0;
}
