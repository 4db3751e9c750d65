/* SPDX-License-Identifier: MIT */
/*
 * test_shm_fail.c - the shm transport when processes fail.
 *
 * - a rank that never starts: every other rank's world_open fails with
 *   -ETIMEDOUT after the join timeout (and rank 0 names the missing rank);
 *   the same when rank 0 (the master) never starts;
 * - ranks that open the world with different options fail with -EINVAL;
 * - kill -9 of a rank with ops pending on it: its partners' ops (waiting in
 *   either rendezvous table, posted later, chained behind) complete
 *   PEER_LOST / NOT_ATTEMPTED within a bounded time, the survivors still
 *   exchange data among themselves and close cleanly;
 * - kill -9 of the sender or the receiver in the middle of a stream of large
 *   transfers: the survivor's current and later ops complete PEER_LOST, every
 *   transfer that completed OK carries the right data;
 * - kill -9 of every rank: nothing is left in /dev/shm (nothing is ever put
 *   there: segments are memfds).
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "shm_th.h"

#define STREAM_BYTES (4u << 20)
#define EXIT_EINVAL 4
#define EXIT_CONNRESET 5

/* ---- ranks ------------------------------------------------------------------ */

static int join_only(int rank, int n, int port, long long peer_ms, int mismatch)
{
	struct accdma_world_opts o;
	accdma_world *w = NULL;
	int rc;

	sc_opts(&o, rank, n, port, peer_ms);
	if (mismatch && rank % 2)
		o.queue_depth = 64;
	rc = accdma_world_open(&o, &w);
	if (rc == -ETIMEDOUT)
		return SHM_EXIT_TIMEDOUT;
	if (rc == -EINVAL)
		return EXIT_EINVAL;
	if (rc == -ECONNRESET)
		return EXIT_CONNRESET;
	SC_CHECK(rc == 0, "accdma_world_open = %d", rc);
	SC_CHECK(accdma_world_close(w) == 0, "close");
	return 0;
}

static accdma_world *open_or_die(int rank, int n, int port)
{
	struct accdma_world_opts o;
	accdma_world *w = NULL;
	int rc;

	sc_opts(&o, rank, n, port, 20000);
	rc = accdma_world_open(&o, &w);
	SC_CHECK(rc == 0, "accdma_world_open = %d", rc);
	return w;
}

static int nop(void *arg)
{
	(void)arg;
	return 0;
}

/* 4 ranks; rank 2 is killed once everyone has posted. */
static int victim(int rank, int n, int port)
{
	accdma_world *w = open_or_die(rank, n, port);
	accdma_queue *q;
	accdma_key k, kr;
	accdma_token t[4];
	enum accdma_status st;
	int32_t *a, *b;
	/* survivors' ring: 0 -> 1 -> 3 -> 0 */
	int next = rank == 0 ? 1 : rank == 1 ? 3 : 0, prev = rank == 0 ? 3 : rank == 1 ? 0 : 1;

	SC_CHECK(n == 4, "victim runs on 4 ranks");
	SC_CHECK(accdma_queue_get(w, rank, 0, &q) == 0, "queue");
	SC_CHECK(accdma_mem_alloc(w, rank, 4096, &k) == 0, "alloc");
	SC_CHECK(accdma_mem_alloc(w, rank, 4096, &kr) == 0, "alloc");
	a = accdma_mem_ptr(w, rank, k, NULL);
	b = accdma_mem_ptr(w, rank, kr, NULL);
	for (int i = 0; i < 1024; i++)
		a[i] = rank, b[i] = -1;
	if (rank == 2) {
		sc_ready();
		for (;;)
			pause(); /* killed here */
	}
	if (rank == 3) { /* a recv waiting in our own table for the victim's send */
		SC_CHECK(accdma_recv(q, 2, 5, kr, 0, 4096, NULL, 0, &t[0]) == 0, "recv");
	} else if (rank == 1) { /* a send waiting in the victim's table, and a chain behind it */
		SC_CHECK(accdma_send(q, 2, 5, k, 0, 4096, NULL, 0, &t[0]) == 0, "send");
	} else { /* rank 0: nothing with the victim yet */
		SC_CHECK(accdma_exec(q, nop, NULL, NULL, 0, &t[0]) == 0, "exec");
	}
	SC_CHECK(accdma_exec(q, nop, NULL, &t[0], 1, &t[1]) == 0, "chained exec");
	sc_ready();
	st = sc_wait(w, t[0]);
	SC_CHECK(st == (rank == 0 ? ACCDMA_OK : ACCDMA_ST_PEER_LOST), "first op: %s",
		 accdma_status_str(st));
	st = sc_wait(w, t[1]);
	SC_CHECK(st == (rank == 0 ? ACCDMA_OK : ACCDMA_ST_NOT_ATTEMPTED), "chained op: %s",
		 accdma_status_str(st));
	/* later ops with the lost rank: every kind (the send may be posted before
	 * the kill is seen: above eager_max, it waits in the victim's table until
	 * then; an eager one would complete at once, as its buffer is free) */
	SC_CHECK(accdma_send(q, 2, 6, k, 0, 4096, NULL, 0, &t[0]) == 0, "send");
	st = sc_wait(w, t[0]);
	SC_CHECK(st == ACCDMA_ST_PEER_LOST, "later send: %s", accdma_status_str(st));
	SC_CHECK(accdma_recv(q, 2, 6, kr, 0, 64, NULL, 0, &t[1]) == 0, "recv");
	SC_CHECK(accdma_write(q, 2, k, 0, 64, 1, 0, NULL, 0, &t[2]) == 0, "write");
	for (int i = 1; i < 3; i++) {
		st = sc_wait(w, t[i]);
		SC_CHECK(st == ACCDMA_ST_PEER_LOST, "later op %d: %s", i, accdma_status_str(st));
	}
	/* the survivors still talk to each other */
	SC_CHECK(accdma_recv(q, prev, 8, kr, 0, 4096, NULL, 0, &t[0]) == 0, "recv");
	SC_CHECK(accdma_send(q, next, 8, k, 0, 4096, NULL, 0, &t[1]) == 0, "send");
	sc_wait_ok(w, t[0]);
	sc_wait_ok(w, t[1]);
	for (int i = 0; i < 1024; i++)
		SC_CHECK(b[i] == prev, "survivor ring [%d] = %d", i, b[i]);
	SC_CHECK(accdma_world_close(w) == 0, "close");
	return 0;
}

static uint8_t pat(uint32_t iter, uint32_t k)
{
	return (uint8_t)(k * 7u + iter * 13u + 1u);
}

/* 2 ranks: rank 0 streams large sends to rank 1; the driver kills rank @dead. */
static int stream(int rank, int n, int port, int dead)
{
	accdma_world *w = open_or_die(rank, n, port);
	accdma_queue *q;
	accdma_key k;
	uint8_t *p;
	int lost = 0;

	SC_CHECK(n == 2, "stream runs on 2 ranks");
	SC_CHECK(accdma_queue_get(w, rank, 0, &q) == 0, "queue");
	SC_CHECK(accdma_mem_alloc(w, rank, STREAM_BYTES, &k) == 0, "alloc");
	p = accdma_mem_ptr(w, rank, k, NULL);
	for (uint32_t iter = 0; iter < 1000000; iter++) {
		accdma_token t;
		enum accdma_status st;

		if (rank == 0) {
			for (uint32_t i = 0; i < STREAM_BYTES; i += 4096)
				p[i] = pat(iter, i);
			SC_CHECK(accdma_send(q, 1, 1, k, 0, STREAM_BYTES, NULL, 0, &t) == 0, "send");
		} else {
			SC_CHECK(accdma_recv(q, 0, 1, k, 0, STREAM_BYTES, NULL, 0, &t) == 0, "recv");
		}
		st = sc_wait(w, t);
		if (st == ACCDMA_ST_PEER_LOST) {
			lost = 1;
			break;
		}
		SC_CHECK(st == ACCDMA_OK, "iteration %u: %s", iter, accdma_status_str(st));
		if (rank == 1)
			for (uint32_t i = 0; i < STREAM_BYTES; i += 4096)
				SC_CHECK(p[i] == pat(iter, i), "iteration %u byte %u", iter, i);
		if (iter == 2)
			sc_ready();
	}
	SC_CHECK(lost && rank != dead, "the stream ended without PEER_LOST");
	SC_CHECK(accdma_world_close(w) == 0, "close");
	return 0;
}

/* Everyone opens, moves data, says ready, and waits to be killed. */
static int linger(int rank, int n, int port)
{
	accdma_world *w = open_or_die(rank, n, port);
	accdma_queue *q;
	accdma_key k;
	accdma_token t[2];

	SC_CHECK(accdma_queue_get(w, rank, 0, &q) == 0, "queue");
	SC_CHECK(accdma_mem_alloc(w, rank, 1u << 20, &k) == 0, "alloc");
	SC_CHECK(accdma_recv(q, (rank + n - 1) % n, 1, k, 0, 4096, NULL, 0, &t[0]) == 0, "recv");
	SC_CHECK(accdma_send(q, (rank + 1) % n, 1, k, 8192, 4096, NULL, 0, &t[1]) == 0, "send");
	sc_wait_ok(w, t[0]);
	sc_wait_ok(w, t[1]);
	/* something left pending, in flight when killed */
	SC_CHECK(accdma_recv(q, (rank + n - 1) % n, 2, k, 0, 4096, NULL, 0, &t[0]) == 0, "recv");
	sc_ready();
	for (;;)
		pause();
	return 1;
}

static int child(const char *sc, int rank, int n, int port, long long arg)
{
	sc_rank = rank;
	if (!strcmp(sc, "join"))
		return join_only(rank, n, port, arg, 0);
	if (!strcmp(sc, "join_mismatch"))
		return join_only(rank, n, port, arg, 1);
	if (!strcmp(sc, "victim"))
		return victim(rank, n, port);
	if (!strcmp(sc, "stream"))
		return stream(rank, n, port, (int)arg);
	if (!strcmp(sc, "linger"))
		return linger(rank, n, port);
	SC_CHECK(0, "unknown scenario %s", sc);
	return 1;
}

/* ---- driver ------------------------------------------------------------------ */

static void expect_code(struct shm_run *r, int rank, int want, const char *what)
{
	if (shm_code(r, rank) != want) {
		print_error("%s: rank %d exited %d, want %d\n", what, rank, shm_code(r, rank), want);
		fail();
	}
}

static void run_missing(int n, int missing)
{
	struct shm_run r;
	uint64_t t0 = shm_now_ms();

	shm_run_init(&r, n);
	for (int i = 0; i < n; i++)
		if (i != missing)
			shm_spawn(&r, "join", i, 1500);
	shm_run_end(&r);
	for (int i = 0; i < n; i++)
		if (i != missing)
			expect_code(&r, i, SHM_EXIT_TIMEDOUT, "a rank never started");
	/* bounded: the join timeout, plus a worker's grace for the master's verdict */
	assert_true(shm_now_ms() - t0 < 15000);
}

static void test_rank_never_starts(void **s)
{
	(void)s;
	run_missing(4, 2);
}

static void test_master_never_starts(void **s)
{
	(void)s;
	run_missing(3, 0);
}

static void test_options_differ(void **s)
{
	struct shm_run r;

	(void)s;
	shm_run_init(&r, 3);
	for (int i = 0; i < 3; i++)
		shm_spawn(&r, "join_mismatch", i, 5000);
	shm_run_end(&r);
	/* rank 0 and the odd one out are told; rank 2 is told too, unless it
	 * connected only as rank 0 gave up (then its connection is reset) */
	expect_code(&r, 0, EXIT_EINVAL, "options differ");
	expect_code(&r, 1, EXIT_EINVAL, "options differ");
	if (shm_code(&r, 2) != EXIT_CONNRESET)
		expect_code(&r, 2, EXIT_EINVAL, "options differ");
}

static void test_kill_with_ops_pending(void **s)
{
	struct shm_run r;
	uint64_t t0;

	(void)s;
	shm_run_init(&r, 4);
	for (int i = 0; i < 4; i++)
		shm_spawn(&r, "victim", i, 0);
	assert_int_equal(shm_wait_ready(&r, 4, SHM_HANG_MS), 0);
	t0 = shm_now_ms();
	kill(r.pid[2], SIGKILL);
	shm_reap(&r, SHM_HANG_MS);
	for (int i = 0; i < 4; i++)
		expect_code(&r, i, i == 2 ? 1000 + SIGKILL : 0, "kill with ops pending");
	/* the survivors noticed well within the default peer timeout */
	if (shm_now_ms() - t0 > 5000) {
		print_error("survivors took %llu ms after the kill\n",
			    (unsigned long long)(shm_now_ms() - t0));
		fail();
	}
	shm_run_end(&r);
}

static void run_stream(int dead)
{
	struct shm_run r;

	shm_run_init(&r, 2);
	shm_spawn(&r, "stream", 0, dead);
	shm_spawn(&r, "stream", 1, dead);
	assert_int_equal(shm_wait_ready(&r, 2, SHM_HANG_MS), 0);
	poll(NULL, 0, 30); /* a few more transfers: the kill lands mid-stream */
	kill(r.pid[dead], SIGKILL);
	shm_reap(&r, SHM_HANG_MS);
	expect_code(&r, dead, 1000 + SIGKILL, "stream: the victim");
	expect_code(&r, 1 - dead, 0, "stream: the survivor");
	shm_run_end(&r);
}

static void test_kill_sender_mid_transfer(void **s)
{
	(void)s;
	run_stream(0);
}

static void test_kill_receiver_mid_transfer(void **s)
{
	(void)s;
	run_stream(1);
}

/* Names in /dev/shm, as one string ("" if it does not exist). */
static void list_dev_shm(char *out, size_t size)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	size_t len = 0;

	out[0] = 0;
	if (!d)
		return;
	while ((e = readdir(d)) && len + 258 < size)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			len += (size_t)snprintf(out + len, size - len, "%s\n", e->d_name);
	closedir(d);
}

static void test_kill_all_leaves_nothing(void **s)
{
	static char before[1 << 16], during[1 << 16], after[1 << 16];
	struct shm_run r;

	(void)s;
	list_dev_shm(before, sizeof(before));
	shm_run_init(&r, 4);
	for (int i = 0; i < 4; i++)
		shm_spawn(&r, "linger", i, 0);
	assert_int_equal(shm_wait_ready(&r, 4, SHM_HANG_MS), 0);
	list_dev_shm(during, sizeof(during));
	for (int i = 0; i < 4; i++)
		kill(r.pid[i], SIGKILL);
	shm_reap(&r, SHM_HANG_MS);
	for (int i = 0; i < 4; i++)
		expect_code(&r, i, 1000 + SIGKILL, "kill all");
	list_dev_shm(after, sizeof(after));
	if (strstr(during, "accdma") || strcmp(before, after)) {
		print_error("/dev/shm before:\n%s\nduring:\n%s\nafter:\n%s\n", before, during, after);
		fail();
	}
	shm_run_end(&r);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rank_never_starts),
		cmocka_unit_test(test_master_never_starts),
		cmocka_unit_test(test_options_differ),
		cmocka_unit_test(test_kill_with_ops_pending),
		cmocka_unit_test(test_kill_sender_mid_transfer),
		cmocka_unit_test(test_kill_receiver_mid_transfer),
		cmocka_unit_test(test_kill_all_leaves_nothing),
	};

	if (argc == 7 && !strcmp(argv[1], "--shm-child"))
		return child(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoll(argv[6]));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
