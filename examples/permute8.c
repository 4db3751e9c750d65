// SPDX-License-Identifier: MIT
/*
 * permute8.c - the pattern that deadlocks blocking runtimes, on 8 devices.
 *
 * Every device sends its buffer [rank] to (rank+1)%N and receives from
 * (rank-1)%N. Even ranks post the send first, odd ranks the recv first; no
 * device waits between its steps. Then each device adds 1.0 to what it
 * received with an exec chained on the recv's token, and the host waits once.
 *
 * Usage: permute8 [N]   (default 8)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <accdma.h>

#define ELEMS 1024

struct add_arg {
	float *buf;
	float value;
};

static int add(void *p)
{
	struct add_arg *a = p;

	for (int i = 0; i < ELEMS; i++)
		a->buf[i] += a->value;
	return 0;
}

static int check(int rc, const char *what)
{
	if (rc < 0) {
		fprintf(stderr, "permute8: %s: %s\n", what, strerror(-rc));
		exit(1);
	}
	return rc;
}

int main(int argc, char **argv)
{
	struct accdma_world_opts o;
	accdma_world *w;
	int n = argc > 1 ? atoi(argv[1]) : 8, bad = 0;

	if (n < 1 || n > 1024) {
		fprintf(stderr, "usage: permute8 [N (1..1024)]\n");
		return 2;
	}
	accdma_world_opts_init(&o);
	o.num_devices = n;
	check(accdma_world_open(&o, &w), "accdma_world_open");

	accdma_key skey[n], rkey[n];
	float *sbuf[n], *rbuf[n];
	accdma_token done[n];
	struct add_arg args[n];

	for (int r = 0; r < n; r++) {
		check(accdma_mem_alloc(w, r, ELEMS * sizeof(float), &skey[r]), "accdma_mem_alloc");
		check(accdma_mem_alloc(w, r, ELEMS * sizeof(float), &rkey[r]), "accdma_mem_alloc");
		sbuf[r] = accdma_mem_ptr(w, r, skey[r], NULL);
		rbuf[r] = accdma_mem_ptr(w, r, rkey[r], NULL);
		for (int i = 0; i < ELEMS; i++) {
			sbuf[r][i] = (float)r;
			rbuf[r][i] = -1.0f;
		}
	}
	/* The same program on every device, in either order, with no sync between steps. */
	for (int r = 0; r < n; r++) {
		accdma_queue *q;
		accdma_token s, rv;
		int next = (r + 1) % n, prev = (r - 1 + n) % n;
		size_t len = ELEMS * sizeof(float);

		check(accdma_queue_get(w, r, 0, &q), "accdma_queue_get");
		if (r % 2 == 0) {
			check(accdma_send(q, next, 7, skey[r], 0, len, NULL, 0, &s), "accdma_send");
			check(accdma_recv(q, prev, 7, rkey[r], 0, len, NULL, 0, &rv), "accdma_recv");
		} else {
			check(accdma_recv(q, prev, 7, rkey[r], 0, len, NULL, 0, &rv), "accdma_recv");
			check(accdma_send(q, next, 7, skey[r], 0, len, NULL, 0, &s), "accdma_send");
		}
		args[r] = (struct add_arg){ rbuf[r], 1.0f };
		accdma_token deps[2] = { s, rv };
		check(accdma_exec(q, add, &args[r], deps, 2, &done[r]), "accdma_exec");
		check(accdma_release(w, s), "accdma_release");
		check(accdma_release(w, rv), "accdma_release");
	}
	enum accdma_status st[n];
	check(accdma_wait_all(w, done, n, 10000, st), "accdma_wait_all");
	for (int r = 0; r < n; r++) {
		float want = (float)((r - 1 + n) % n) + 1.0f;
		int ok = st[r] == ACCDMA_OK;

		for (int i = 0; i < ELEMS; i++)
			ok &= rbuf[r][i] == want;
		printf("device %d: received [%g] from device %d, +1.0 on device -> [%g] %s (%s)\n", r,
		       (double)rbuf[r][0] - 1.0, (r - 1 + n) % n, (double)rbuf[r][0],
		       ok ? "ok" : "WRONG", accdma_status_str(st[r]));
		bad |= !ok;
	}
	check(accdma_world_close(w), "accdma_world_close");
	printf("%s\n", bad ? "permute8: FAILED" : "permute8: all devices ok");
	return bad;
}
