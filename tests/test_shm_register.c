/* SPDX-License-Identifier: MIT */
/*
 * test_shm_register.c - accdma_mem_register() over shm: caller memory (plain
 * malloc'd or mmap'd pages) on both sides of sends and recvs between two
 * processes, reached by cross-memory attach. Eager (64 B), between eager and
 * the handoff (1500 B: whoever arrives second copies, into or out of the
 * other process), large (1 MiB, 8 MiB: the recv's engine reads the sender's
 * memory), both ways and mixed with device memory; a one-sided write into
 * a peer's registered memory; a registered range unmapped under a waiting
 * send (the recv fails PEER_ERROR, both processes go on); a sender that dies
 * with its send waiting (the recv completes PEER_LOST). With two engines a
 * device shares each copy of 4 MiB or more between them (split.c): the
 * same round trips, and a send whose last MiB is unmapped under it (the
 * chunk that fails fails the transfer, whichever engine copied it). The
 * test runs itself again as the ranks (--shm-child).
 */
#include <sys/mman.h>

#include "helpers/th.h"
#include "shm_th.h"

#define BIG (8u << 20)

static void fill(uint8_t *p, uint64_t len, int seed)
{
	for (uint64_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 13 + (uint64_t)seed * 7 + (i >> 12));
}

static int same(const uint8_t *p, uint64_t len, int seed)
{
	for (uint64_t i = 0; i < len; i++)
		if (p[i] != (uint8_t)(i * 13 + (uint64_t)seed * 7 + (i >> 12)))
			return 0;
	return 1;
}

/* Caller memory: pages of our own, registered. */
static uint8_t *reg_pages(accdma_world *w, int rank, uint64_t len, accdma_key *key)
{
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int rc;

	SC_CHECK(p != MAP_FAILED, "mmap");
	rc = accdma_mem_register(w, rank, p, len, key);
	SC_CHECK(rc == 0, "accdma_mem_register over shm = %d", rc);
	return p;
}

/* Send @len bytes from @sk/@sp (rank 0) into @rk/@rp (rank 1), then back. */
static void round_trip(accdma_world *w, accdma_queue *q, int rank, accdma_key sk, uint8_t *sp, accdma_key rk,
		       uint8_t *rp, uint64_t len, int seed)
{
	accdma_token t;
	enum accdma_status st;
	uint64_t bytes;

	for (int dir = 0; dir < 2; dir++) {
		int sender = dir;

		if (rank == sender) {
			fill(sp, len, seed + dir);
			SC_CHECK(accdma_send(q, 1 - rank, 10 + (uint64_t)dir, sk, 0, len, NULL, 0, &t) == 0,
				 "send");
			sc_wait_ok(w, t);
		} else {
			memset(rp, 0, len);
			SC_CHECK(accdma_recv(q, 1 - rank, 10 + (uint64_t)dir, rk, 0, len, NULL, 0, &t) == 0,
				 "recv");
			SC_CHECK(accdma_wait_bytes(w, t, 30000, &st, &bytes) == 0, "wait");
			SC_CHECK(st == ACCDMA_OK && bytes == len, "recv of %llu: %s, %llu bytes",
				 (unsigned long long)len, accdma_status_str(st), (unsigned long long)bytes);
			SC_CHECK(same(rp, len, seed + dir), "recv of %llu bytes: wrong data",
				 (unsigned long long)len);
		}
	}
}

/* Tell the peer a 64-bit value (tag 2), or hear it. */
static uint64_t talk(accdma_world *w, accdma_queue *q, int rank, int speaker, accdma_key k, uint64_t *p,
		     uint64_t v)
{
	accdma_token t;

	if (rank == speaker) {
		p[0] = v;
		SC_CHECK(accdma_send(q, 1 - rank, 2, k, 0, 8, NULL, 0, &t) == 0, "send");
	} else {
		SC_CHECK(accdma_recv(q, 1 - rank, 2, k, 8, 8, NULL, 0, &t) == 0, "recv");
	}
	sc_wait_ok(w, t);
	return p[1];
}

static int shm_child(int rank, int n, int port, int arg)
{
	struct accdma_world_opts o;
	accdma_world *w = NULL;
	accdma_queue *q;
	accdma_key sk, rk, dk, ck;
	uint8_t *sp, *rp, *dp;
	uint64_t *cp;
	accdma_token t;
	enum accdma_status st;
	int rc;

	sc_rank = rank;
	sc_opts(&o, rank, n, port, 20000);
	o.mem_size = 2 * BIG + (1u << 20);
	if (arg == 3)
		o.engines = 2;
	rc = accdma_world_open(&o, &w);
	SC_CHECK(rc == 0 && w, "accdma_world_open = %d", rc);
	SC_CHECK(accdma_queue_get(w, rank, 0, &q) == 0, "queue_get");
	SC_CHECK(accdma_mem_alloc(w, rank, BIG, &dk) == 0, "alloc");
	SC_CHECK(accdma_mem_alloc(w, rank, 4096, &ck) == 0, "alloc");
	dp = accdma_mem_ptr(w, rank, dk, NULL);
	cp = accdma_mem_ptr(w, rank, ck, NULL);
	sp = reg_pages(w, rank, BIG, &sk);
	rp = reg_pages(w, rank, BIG, &rk);

	if (arg == 3) {
		round_trip(w, q, rank, sk, sp, rk, rp, BIG, 30); /* registered both sides */
		round_trip(w, q, rank, dk, dp, rk, rp, BIG, 31); /* device -> registered */
		round_trip(w, q, rank, sk, sp, dk, dp, BIG, 32); /* registered -> device */
		if (rank == 0) {
			fill(sp, BIG, 8);
			SC_CHECK(accdma_send(q, 1, 12, sk, 0, BIG, NULL, 0, &t) == 0, "send");
			munmap(sp + BIG - (1u << 20), 1u << 20);
			talk(w, q, rank, 0, ck, cp, 1);
			st = sc_wait(w, t);
			SC_CHECK(st == ACCDMA_ST_PEER_ERROR, "send with its last MiB unmapped: %s",
				 accdma_status_str(st));
		} else {
			talk(w, q, rank, 0, ck, cp, 0);
			SC_CHECK(accdma_recv(q, 0, 12, rk, 0, BIG, NULL, 0, &t) == 0, "recv");
			st = sc_wait(w, t);
			SC_CHECK(st == ACCDMA_ST_PEER_ERROR, "recv from a partly unmapped send: %s",
				 accdma_status_str(st));
		}
		round_trip(w, q, rank, dk, dp, rk, rp, BIG, 33); /* both go on */
	} else if (arg == 0) {
		static const uint64_t lens[] = { 64, 1500, 4096, 1u << 20, BIG };

		for (int i = 0; i < 5; i++) {
			round_trip(w, q, rank, sk, sp, rk, rp, lens[i], i);      /* registered both sides */
			round_trip(w, q, rank, dk, dp, rk, rp, lens[i], 10 + i); /* device -> registered */
			round_trip(w, q, rank, sk, sp, dk, dp, lens[i], 20 + i); /* registered -> device */
		}
		/* a one-sided write into the peer's registered memory */
		uint64_t peer_rk = talk(w, q, rank, 1, ck, cp, rk);

		if (rank == 0) {
			fill(sp, 1u << 20, 77);
			SC_CHECK(accdma_write(q, 1, sk, 0, 1u << 20, (accdma_key)peer_rk, 4096, NULL, 0, &t) == 0,
				 "write");
			sc_wait_ok(w, t);
			/* out of its bounds: refused, nothing written */
			SC_CHECK(accdma_write(q, 1, sk, 0, 4096, (accdma_key)peer_rk, BIG - 100, NULL, 0, &t) == 0,
				 "write");
			SC_CHECK(sc_wait(w, t) == ACCDMA_ST_OUT_OF_BOUNDS, "write out of bounds");
		}
		talk(w, q, rank, 0, ck, cp, 1);
		if (rank == 1)
			SC_CHECK(same(rp + 4096, 1u << 20, 77), "one-sided write: wrong data");
	} else if (arg == 1) {
		/* rank 0's registered range goes away under its waiting send */
		if (rank == 0) {
			fill(sp, 1u << 20, 5);
			SC_CHECK(accdma_send(q, 1, 10, sk, 0, 1u << 20, NULL, 0, &t) == 0, "send");
			munmap(sp, BIG);
			talk(w, q, rank, 0, ck, cp, 1);
			st = sc_wait(w, t);
			SC_CHECK(st == ACCDMA_ST_PEER_ERROR, "send from unmapped memory: %s",
				 accdma_status_str(st));
		} else {
			accdma_token r;

			talk(w, q, rank, 0, ck, cp, 0);
			SC_CHECK(accdma_recv(q, 0, 10, rk, 0, 1u << 20, NULL, 0, &r) == 0, "recv");
			st = sc_wait(w, r);
			SC_CHECK(st == ACCDMA_ST_PEER_ERROR, "recv from unmapped memory: %s",
				 accdma_status_str(st));
		}
		/* both go on */
		round_trip(w, q, rank, dk, dp, rk, rp, 1u << 20, 3);
	} else {
		/* rank 0 dies with a registered send waiting at rank 1 */
		if (rank == 0) {
			fill(sp, 1u << 20, 6);
			SC_CHECK(accdma_send(q, 1, 10, sk, 0, 1u << 20, NULL, 0, &t) == 0, "send");
			talk(w, q, rank, 0, ck, cp, (uint64_t)getpid());
			poll(NULL, 0, 200); /* the send is in rank 1's table by now */
			_exit(0);
		}
		pid_t dead = (pid_t)talk(w, q, rank, 0, ck, cp, 0);

		/* gone (and reaped by the test's driver) before the recv is posted */
		for (int i = 0; i < 2000 && kill(dead, 0) == 0; i++)
			poll(NULL, 0, 10);
		SC_CHECK(kill(dead, 0) != 0, "rank 0 (pid %d) is still there", (int)dead);
		SC_CHECK(accdma_recv(q, 0, 10, rk, 0, 1u << 20, NULL, 0, &t) == 0, "recv");
		st = sc_wait(w, t);
		SC_CHECK(st == ACCDMA_ST_PEER_LOST, "recv from a dead sender: %s", accdma_status_str(st));
	}
	SC_CHECK(accdma_world_close(w) == 0, "close");
	return 0;
}

static void run(int arg)
{
	struct shm_run r;

	shm_run_init(&r, 2);
	for (int i = 0; i < 2; i++)
		shm_spawn(&r, "register", i, arg);
	shm_run_end(&r);
	for (int i = 0; i < 2; i++)
		if (shm_code(&r, i) != 0) {
			print_error("shm register (%d): rank %d exited %d\n", arg, i, shm_code(&r, i));
			fail();
		}
}

static void test_registered_both_sides(void **state)
{
	(void)state;
	run(0);
}

static void test_unmapped_under_send(void **state)
{
	(void)state;
	run(1);
}

static void test_sender_dies(void **state)
{
	(void)state;
	run(2);
}

static void test_two_engines_split(void **state)
{
	(void)state;
	run(3);
}

int main(int argc, char **argv)
{
	struct th_cases t = { 0 };

	if (argc == 7 && !strcmp(argv[1], "--shm-child"))
		return shm_child(atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
	th_case(&t, test_registered_both_sides, NULL, "test_registered_both_sides");
	th_case(&t, test_unmapped_under_send, NULL, "test_unmapped_under_send");
	th_case(&t, test_sender_dies, NULL, "test_sender_dies");
	th_case(&t, test_two_engines_split, NULL, "test_two_engines_split");
	return th_run_cases("test_shm_register", &t, NULL, NULL);
}
