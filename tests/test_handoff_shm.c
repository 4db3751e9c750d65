/* SPDX-License-Identifier: MIT */
/*
 * test_handoff_shm.c - handoffs between processes (shm): pairs and permute
 * rounds of large sends, each rank checking what landed. The test runs itself
 * again as the ranks (--shm-child).
 */
#include "handoff_th.h"

/* ---- 8. shm: two processes --------------------------------------------------------- */

#define SHM_ROUNDS 10
#define SHM_PERM_ROUNDS 5

static uint32_t shm_seed(int round, int dir, int rank)
{
	return 80000u + (uint32_t)round * 8u + (uint32_t)dir * 2u + (uint32_t)rank;
}

static int sc_range_ok(const uint8_t *p, uint64_t len, uint32_t sd, uint64_t *bad)
{
	for (uint64_t j = 0; j * 8 < len; j++) {
		uint64_t want = pat_word(sd, j), got = 0;
		uint64_t n = len - j * 8 < 8 ? len - j * 8 : 8;

		memcpy(&got, p + j * 8, n);
		if (n < 8)
			want &= (1ull << (8 * n)) - 1;
		if (got != want) {
			*bad = j * 8;
			return 0;
		}
	}
	return 1;
}

static int sc_guard_ok(const uint8_t *p, uint64_t len, uint64_t *bad)
{
	for (uint64_t i = 0; i < len; i++)
		if (p[i] != GB) {
			*bad = i;
			return 0;
		}
	return 1;
}

/* In a rank: the recv range at dst + G holds @len bytes of pattern @sd, guards around it. */
static void sc_landed(const uint8_t *dst, uint64_t len, uint32_t sd, const char *what, int round)
{
	uint64_t bad = 0;

	SC_CHECK(sc_guard_ok(dst, G, &bad), "%s round %d: guard before, byte %llu", what, round,
		 (unsigned long long)bad);
	SC_CHECK(sc_range_ok(dst + G, len, sd, &bad), "%s round %d: data differs at byte %llu",
		 what, round, (unsigned long long)bad);
	SC_CHECK(sc_guard_ok(dst + G + len, G, &bad), "%s round %d: guard after, byte %llu", what,
		 round, (unsigned long long)bad);
}

/* Wait (in a rank) until op @t is at stage @want; polled: accdma_test drives. */
static void sc_until_stage(accdma_world *w, accdma_token t, int polled, enum accdma_op_stage want)
{
	uint64_t end = shm_now_ms() + 30000;
	struct accdma_op_info i;

	for (;;) {
		SC_CHECK(accdma_op_info(w, t, &i) == 0, "op_info");
		if (i.stage == want)
			return;
		SC_CHECK(i.stage != ACCDMA_STAGE_DONE, "op done (%s) before its peer posted",
			 accdma_status_str(i.status));
		SC_CHECK(shm_now_ms() < end, "op stays at stage %s", accdma_op_stage_str(i.stage));
		if (polled)
			SC_CHECK(accdma_test(w, t, NULL) == -EAGAIN, "test");
		else
			usleep(20);
	}
}

/* arg: engines | (seed << 4) */
static int shm_child(const char *sc, int rank, int n, int port, int64_t arg)
{
	const uint64_t len = strcmp(sc, "perm") ? 2 * MIB : 4 * MIB;
	int engines = (int)(arg & 15), peer = 1 - rank;
	struct th_rng rng = { ((uint64_t)arg >> 4) ^ (uint64_t)rank * 0x5555 };
	struct accdma_world_opts o;
	accdma_world *w = NULL;
	accdma_queue *q;
	accdma_key ks, kd, kg;
	uint8_t *src, *dst;
	int rc;

	sc_rank = rank;
	sc_opts(&o, rank, n, port, 20000);
	o.engines = engines;
	o.mem_size = 2 * len + 2 * MIB;
	rc = accdma_world_open(&o, &w);
	SC_CHECK(rc == 0 && w, "accdma_world_open = %d", rc);
	SC_CHECK(accdma_queue_get(w, rank, 0, &q) == 0, "queue_get");
	SC_CHECK(accdma_mem_alloc(w, rank, len, &ks) == 0, "alloc");
	SC_CHECK(accdma_mem_alloc(w, rank, len + 2 * G, &kd) == 0, "alloc");
	SC_CHECK(accdma_mem_alloc(w, rank, 4096, &kg) == 0, "alloc");
	src = accdma_mem_ptr(w, rank, ks, NULL);
	dst = accdma_mem_ptr(w, rank, kd, NULL);
	SC_CHECK(src && dst, "mem_ptr");

	if (!strcmp(sc, "pp")) {
		/* dir 0: rank 1 receives; dir 1: rank 0 receives. The receiver's recv
		 * waits before it tells the sender (a small eager message) to send. */
		for (int round = 0; round < SHM_ROUNDS; round++)
			for (int dir = 0; dir < 2; dir++) {
				int receiver = dir == 0 ? 1 : 0;
				uint64_t rl = round % 2 ? 8 * 1024 : len; /* odd rounds: a mid size */
				accdma_token t, go;

				if (rank == receiver) {
					memset(dst, GB, len + 2 * G);
					rc = accdma_recv(q, peer, 1, kd, G, rl, NULL, 0, &t);
					SC_CHECK(rc == 0, "recv = %d", rc);
					sc_until_stage(w, t, engines == 0, ACCDMA_STAGE_PEER);
					SC_CHECK(accdma_send(q, peer, 2, kg, 0, 8, NULL, 0, &go) == 0, "go");
					sc_wait_ok(w, go);
					sc_wait_ok(w, t);
					sc_landed(dst, rl, shm_seed(round, dir, peer),
						  dir ? "pp rank 0 receives" : "pp rank 1 receives", round);
				} else {
					pat_fill(src, rl, shm_seed(round, dir, rank));
					rc = accdma_recv(q, peer, 2, kg, 0, 8, NULL, 0, &go);
					SC_CHECK(rc == 0, "recv go = %d", rc);
					sc_wait_ok(w, go);
					rc = accdma_send(q, peer, 1, ks, 0, rl, NULL, 0, &t);
					SC_CHECK(rc == 0, "send = %d", rc);
					sc_wait_ok(w, t);
				}
			}
	} else {
		/* a 2-process permute: both post send and recv in a random order, no sync */
		memset(dst, GB, len + 2 * G);
		for (int round = 0; round < SHM_PERM_ROUNDS; round++) {
			accdma_token t[2];
			int first = (int)th_rand_below(&rng, 2);

			pat_fill(src, len, shm_seed(round, 0, rank));
			for (int h = 0; h < 2; h++) {
				if ((h == 0) == (first == 0))
					rc = accdma_send(q, peer, 3, ks, 0, len, NULL, 0, &t[0]);
				else
					rc = accdma_recv(q, peer, 3, kd, G, len, NULL, 0, &t[1]);
				SC_CHECK(rc == 0, "round %d: post = %d", round, rc);
			}
			sc_wait_ok(w, t[round & 1]);
			sc_wait_ok(w, t[1 - (round & 1)]);
			sc_landed(dst, len, shm_seed(round, 0, peer), "perm", round);
		}
	}
	SC_CHECK(accdma_world_close(w) == 0, "close");
	return 0;
}

static void run_shm(const char *sc, int engines)
{
	struct shm_run r;
	int64_t arg = (int64_t)(((seed & 0xffffffu) << 4) | (uint64_t)engines);

	CTX("shm %s engines=%d", sc, engines);
	shm_run_init(&r, 2);
	shm_spawn(&r, sc, 0, arg);
	shm_spawn(&r, sc, 1, arg);
	shm_run_end(&r);
	for (int i = 0; i < 2; i++)
		if (shm_code(&r, i) != 0)
			fail_msg("shm %s engines=%d: rank %d exited %d", sc, engines, i, shm_code(&r, i));
	ctx[0] = 0;
}

static void test_shm(void **state)
{
	(void)state;
	for (int e = quick ? 1 : 0; e <= 2; e++) {
		run_shm("pp", e);
		run_shm("perm", e);
	}
}

static void add_cases(struct th_cases *t)
{
	CASE(t, test_shm, NULL, "test_shm");
}

int main(int argc, char **argv)
{
	if (argc == 7 && !strcmp(argv[1], "--shm-child"))
		return shm_child(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]),
				 strtoll(argv[6], NULL, 10));
	return handoff_main("test_handoff_shm", add_cases);
}
