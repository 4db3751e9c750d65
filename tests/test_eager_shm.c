/* SPDX-License-Identifier: MIT */
/*
 * test_eager_shm.c - eager sends between two processes (shm): an eager send that
 * completes before its recv is posted in the other process, 1000 ping rounds
 * both ways of 8, 100 and 1024 bytes, and a burst of 100 3-position sends each
 * way that overflows the ring. The test runs itself again as the ranks
 * (--shm-child).
 */
#include "eager_th.h"

/* ---- 12. shm: two processes ------------------------------------------------------------ */

#define PING_ROUNDS 1000
#define BURST 100
#define BURST_LEN 100  /* 3 ring slots: 100 of them overflow the 256-slot ring */
#define BURST_SLOT 128 /* recv range of each: the 28 bytes past the message stay guard */

/* Bytes [8, len) of a message: (k + 8 * rank + i) for the i-th byte. */
static void msg_fill(uint8_t *p, uint64_t len, int k, int rank)
{
	for (uint64_t i = 8; i < len; i++)
		p[i] = (uint8_t)((uint64_t)k + 8u * (uint64_t)rank + i);
}

static int msg_ok(const uint8_t *p, uint64_t len, uint64_t range, int k, int rank)
{
	for (uint64_t i = 8; i < len; i++)
		if (p[i] != (uint8_t)((uint64_t)k + 8u * (uint64_t)rank + i))
			return 0;
	for (uint64_t i = len; i < range; i++)
		if (p[i] != GUARD)
			return 0;
	return 1;
}

static int shm_child(int rank, int n, int port)
{
	struct accdma_world_opts o;
	accdma_world *w = NULL;
	accdma_queue *q;
	accdma_key ks, kd;
	int32_t *sb, *rb;
	accdma_token t[2 * BURST];
	enum accdma_status st;
	int peer = 1 - rank, rc;

	sc_rank = rank;
	sc_opts(&o, rank, n, port, 20000);
	o.eager_max = ACCDMA_EAGER_MAX_DEFAULT;
	rc = accdma_world_open(&o, &w);
	SC_CHECK(rc == 0 && w, "accdma_world_open = %d", rc);
	SC_CHECK(accdma_queue_get(w, rank, 0, &q) == 0, "queue_get");
	SC_CHECK(accdma_mem_alloc(w, rank, BURST * BURST_SLOT, &ks) == 0, "alloc");
	SC_CHECK(accdma_mem_alloc(w, rank, BURST * BURST_SLOT, &kd) == 0, "alloc");
	sb = accdma_mem_ptr(w, rank, ks, NULL);
	rb = accdma_mem_ptr(w, rank, kd, NULL);
	SC_CHECK(sb && rb, "mem_ptr");

	/* rank 0's send completes before rank 1 posts its recv: rank 1 posts
	 * it only after rank 0 tells it (tag 4) that the send completed */
	memset(rb, GUARD, 16);
	if (rank == 0) {
		sb[0] = 0x5eed;
		sb[1] = 0x0e;
		SC_CHECK(accdma_send(q, 1, 3, ks, 0, 8, NULL, 0, &t[0]) == 0, "send");
		rc = accdma_wait(w, t[0], EAGER_HANG_MS, &st);
		SC_CHECK(rc == 0, "the eager send did not complete before its recv was posted: "
				  "accdma_wait = %d", rc);
		SC_CHECK(st == ACCDMA_OK, "eager send status %s", accdma_status_str(st));
		sb[0] = -1; /* reused at once: the message was copied */
		sb[2] = 0x60;
		SC_CHECK(accdma_send(q, 1, 4, ks, 8, 4, NULL, 0, &t[1]) == 0, "send go");
		sc_wait_ok(w, t[1]);
	} else {
		SC_CHECK(accdma_recv(q, 0, 4, kd, 0, 16, NULL, 0, &t[1]) == 0, "recv go");
		sc_wait_ok(w, t[1]);
		SC_CHECK(rb[0] == 0x60 && rb[1] == GUARD_I32, "go message {%#x, %#x}", (unsigned)rb[0],
			 (unsigned)rb[1]);
		memset(rb, GUARD, 16);
		SC_CHECK(accdma_recv(q, 0, 3, kd, 0, 16, NULL, 0, &t[0]) == 0, "recv");
		sc_wait_ok(w, t[0]);
		SC_CHECK(rb[0] == 0x5eed && rb[1] == 0x0e && rb[2] == GUARD_I32 && rb[3] == GUARD_I32,
			 "eager message {%#x, %#x, %#x, %#x}", (unsigned)rb[0], (unsigned)rb[1],
			 (unsigned)rb[2], (unsigned)rb[3]);
	}

	/* ping both ways: rank 0 sends first, rank 1 receives first; 8, 100 and
	 * 1024 bytes (1, 4 and 33 positions), so the ring wraps under every size */
	for (int round = 0; round < PING_ROUNDS; round++) {
		static const uint64_t lens[] = { 8, 100, 1024 };
		uint64_t len = lens[round % 3];

		sb[0] = round;
		sb[1] = rank;
		msg_fill((uint8_t *)sb, len, round, rank);
		memset(rb, GUARD, 2048);
		for (int h = 0; h < 2; h++) {
			if ((h == 0) == (rank == 0))
				rc = accdma_send(q, peer, 1, ks, 0, len, NULL, 0, &t[0]);
			else
				rc = accdma_recv(q, peer, 1, kd, 0, 2048, NULL, 0, &t[1]);
			SC_CHECK(rc == 0, "round %d: post = %d", round, rc);
		}
		sc_wait_ok(w, t[1]);
		sc_wait_ok(w, t[0]);
		SC_CHECK(rb[0] == round && rb[1] == peer && msg_ok((uint8_t *)rb, len, 2048, round, peer),
			 "round %d (%llu bytes): got {%d, %d, ...} or wrong bytes after them", round,
			 (unsigned long long)len, rb[0], rb[1]);
	}

	/* a burst past the ring: 100 sends of 3 slots each way, then 100 recvs */
	memset(rb, GUARD, BURST * BURST_SLOT);
	for (int k = 0; k < BURST; k++) {
		int32_t *m = (int32_t *)(void *)((uint8_t *)sb + (size_t)k * BURST_SLOT);

		m[0] = 7000 + k;
		m[1] = rank;
		msg_fill((uint8_t *)m, BURST_LEN, k, rank);
		SC_CHECK(accdma_send(q, peer, 2, ks, (uint64_t)k * BURST_SLOT, BURST_LEN, NULL, 0,
				     &t[k]) == 0,
			 "send");
	}
	for (int k = 0; k < BURST; k++)
		SC_CHECK(accdma_recv(q, peer, 2, kd, (uint64_t)k * BURST_SLOT, BURST_SLOT, NULL, 0,
				     &t[BURST + k]) == 0,
			 "recv");
	for (int k = 2 * BURST - 1; k >= 0; k--)
		sc_wait_ok(w, t[k]);
	for (int k = 0; k < BURST; k++) {
		const int32_t *g = (const int32_t *)(const void *)((uint8_t *)rb + (size_t)k * BURST_SLOT);

		SC_CHECK(g[0] == 7000 + k && g[1] == peer &&
				 msg_ok((const uint8_t *)g, BURST_LEN, BURST_SLOT, k, peer),
			 "burst recv %d: got {%d, %d, ...} or wrong bytes after them", k, g[0], g[1]);
	}
	SC_CHECK(accdma_world_close(w) == 0, "close");
	return 0;
}

static void test_shm_ping(void **state)
{
	(void)state;
	struct shm_run r;

	CTX("shm ping, 2 processes");
	shm_run_init(&r, 2);
	shm_spawn(&r, "eager", 0, 0);
	shm_spawn(&r, "eager", 1, 0);
	shm_run_end(&r);
	for (int i = 0; i < 2; i++)
		if (shm_code(&r, i) != 0) {
			print_error("shm eager: rank %d exited %d\n", i, shm_code(&r, i));
			fail();
		}
	ctx[0] = 0;
}

int main(int argc, char **argv)
{
	struct th_cases t = { 0 };

	if (argc == 7 && !strcmp(argv[1], "--shm-child"))
		return shm_child(atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
	seed = th_seed();
	CASE(&t, test_shm_ping, NULL, "test_shm_ping");
	return th_run_cases("test_eager_shm", &t, NULL, NULL);
}
