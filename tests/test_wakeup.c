/* SPDX-License-Identifier: MIT */
/*
 * test_wakeup.c - sleepers are always woken: engines that sleep between ops,
 * and host threads that sleep in a wait.
 *
 * Every wake-up is a Dekker pair (a kicker publishes, then reads "sleeping";
 * a sleeper announces, then looks again), fenced either both ways or, when
 * the processes are registered for membarrier, by a compiler barrier on the
 * kicker's side and a membarrier on the sleeper's (queue/doorbell.c). Each
 * scenario runs in child processes with ACCDMA_SPIN_US=0 (an idle engine
 * sleeps at once) and ACCDMA_POLL=0 (a waiting host never does the engine's
 * work), so every op needs its kick, once with membarrier and once with
 * ACCDMA_MEMBARRIER=0. Random busy delays put the posts and completions
 * around the moments the engines and waiters go to sleep.
 *
 *  - one process, two devices: 2000 rounds of a recv on device 1, then an
 *    exec on device 0 that spins 0-40 us (so its completion lands near the
 *    waiter's 20 us spin-then-sleep), then a send behind it, 8 bytes (eager)
 *    and 2 KiB (rendezvous) in turn; data and statuses checked every round;
 *  - two processes: 2000 ping-pong rounds of 8 bytes and 2 KiB with random
 *    delays on both sides: the peer's send wakes the receiver's engine, whose
 *    completion wakes the receiver's waiting host.
 *
 * A lost wake-up shows as a wait that runs into its timeout (30 s) and fails;
 * nothing is timed. The seed is printed; repeat with ACCDMA_TEST_SEED.
 */
#include "helpers/th.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>

#include "queue/queue.h"
#include "shm_th.h"

#define ROUNDS 2000
#define BIG 2048
#define MODE_NO_MEMBARRIER 1

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void spin_us(uint64_t us)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((uint64_t)(b.tv_sec - a.tv_sec) * 1000000000u + (uint64_t)b.tv_nsec -
		       (uint64_t)a.tv_nsec < us * 1000u);
}

static int exec_spin(void *arg)
{
	spin_us((uint64_t)(uintptr_t)arg);
	return 0;
}

/* The mode asked for is the one in use: membarrier unless turned off or the
 * kernel lacks it (then both runs test the fenced pair). */
static void check_mode(int64_t mode)
{
	long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
	int kernel = cmds > 0 && (cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED);

	SC_CHECK(q_asym_registered() == (!(mode & MODE_NO_MEMBARRIER) && kernel),
		 "q_asym_registered() = %d (mode %lld, kernel support %d)", q_asym_registered(),
		 (long long)mode, kernel);
}

/* Before any world is opened in this process: the library reads these once. */
static void child_env(int64_t mode)
{
	setenv("ACCDMA_SPIN_US", "0", 1);
	setenv("ACCDMA_POLL", "0", 1);
	if (mode & MODE_NO_MEMBARRIER)
		setenv("ACCDMA_MEMBARRIER", "0", 1);
	else
		unsetenv("ACCDMA_MEMBARRIER");
}

static int child_local(int64_t mode)
{
	struct accdma_world_opts o;
	accdma_world *w = NULL;
	accdma_queue *q0, *q1;
	accdma_key ks, kd;
	uint8_t *src, *dst;
	int rc;

	sc_rank = 0;
	accdma_world_opts_init(&o);
	o.num_devices = 2;
	o.engines = 1;
	o.mem_size = 1u << 20;
	o.timeout_ms = 30000;
	rc = accdma_world_open(&o, &w);
	SC_CHECK(rc == 0 && w, "accdma_world_open = %d", rc);
	check_mode(mode);
	SC_CHECK(accdma_queue_get(w, 0, 0, &q0) == 0 && accdma_queue_get(w, 1, 0, &q1) == 0, "queues");
	SC_CHECK(accdma_mem_alloc(w, 0, BIG, &ks) == 0 && accdma_mem_alloc(w, 1, BIG, &kd) == 0,
		 "alloc");
	src = accdma_mem_ptr(w, 0, ks, NULL);
	dst = accdma_mem_ptr(w, 1, kd, NULL);
	for (int round = 0; round < ROUNDS; round++) {
		uint64_t len = round % 2 ? BIG : 8;
		accdma_token r, e, s;

		memset(src, round & 0xff, len);
		memset(dst, 0xee, BIG);
		SC_CHECK(accdma_recv(q1, 0, 1, kd, 0, BIG, NULL, 0, &r) == 0, "recv");
		spin_us(rnd() % 20);
		SC_CHECK(accdma_exec(q0, exec_spin, (void *)(uintptr_t)(rnd() % 41), NULL, 0, &e) == 0,
			 "exec");
		SC_CHECK(accdma_send(q0, 1, 1, ks, 0, len, &e, 1, &s) == 0, "send");
		sc_wait_ok(w, r);
		sc_wait_ok(w, s);
		sc_wait_ok(w, e);
		for (uint64_t i = 0; i < BIG; i++)
			SC_CHECK(dst[i] == (i < len ? (uint8_t)round : 0xee),
				 "round %d (%llu bytes, mode %lld): byte %llu is %#x", round,
				 (unsigned long long)len, (long long)mode, (unsigned long long)i, dst[i]);
	}
	SC_CHECK(accdma_world_close(w) == 0, "close");
	return 0;
}

static int child_shm(int rank, int n, int port, int64_t mode)
{
	struct accdma_world_opts o;
	accdma_world *w = NULL;
	accdma_queue *q;
	accdma_key ks, kd;
	uint8_t *src, *dst;
	int peer = 1 - rank, rc;

	sc_rank = rank;
	sc_opts(&o, rank, n, port, 20000);
	o.engines = 1;
	rc = accdma_world_open(&o, &w);
	SC_CHECK(rc == 0 && w, "accdma_world_open = %d", rc);
	check_mode(mode);
	SC_CHECK(accdma_queue_get(w, rank, 0, &q) == 0, "queue");
	SC_CHECK(accdma_mem_alloc(w, rank, BIG, &ks) == 0 && accdma_mem_alloc(w, rank, BIG, &kd) == 0,
		 "alloc");
	src = accdma_mem_ptr(w, rank, ks, NULL);
	dst = accdma_mem_ptr(w, rank, kd, NULL);
	for (int round = 0; round < ROUNDS; round++) {
		uint64_t len = (round / 2) % 2 ? BIG : 8;
		accdma_token t;

		/* rank 0 sends on even rounds, rank 1 on odd ones */
		if ((round % 2) == rank) {
			memset(src, (round + rank) & 0xff, len);
			spin_us(rnd() % 30);
			SC_CHECK(accdma_send(q, peer, 2, ks, 0, len, NULL, 0, &t) == 0, "send");
			sc_wait_ok(w, t);
		} else {
			memset(dst, 0xee, BIG);
			SC_CHECK(accdma_recv(q, peer, 2, kd, 0, BIG, NULL, 0, &t) == 0, "recv");
			spin_us(rnd() % 30);
			sc_wait_ok(w, t);
			for (uint64_t i = 0; i < BIG; i++)
				SC_CHECK(dst[i] == (i < len ? (uint8_t)(round + peer) : 0xee),
					 "round %d (%llu bytes, mode %lld): byte %llu is %#x", round,
					 (unsigned long long)len, (long long)mode, (unsigned long long)i,
					 dst[i]);
		}
	}
	SC_CHECK(accdma_world_close(w) == 0, "close");
	return 0;
}

/* Run scenario @sc on @n ranks in @mode; every rank must exit 0. */
static void run(const char *sc, int n, int64_t mode)
{
	struct shm_run r;

	shm_run_init(&r, n);
	for (int i = 0; i < n; i++)
		shm_spawn(&r, sc, i, mode);
	shm_run_end(&r);
	for (int i = 0; i < n; i++)
		if (shm_code(&r, i) != 0) {
			print_error("%s, %s: rank %d exited %d\n", sc,
				    mode & MODE_NO_MEMBARRIER ? "ACCDMA_MEMBARRIER=0" : "membarrier", i,
				    shm_code(&r, i));
			fail();
		}
}

static void test_local(void **state)
{
	(void)state;
	run("local", 1, 0);
	run("local", 1, MODE_NO_MEMBARRIER);
}

static void test_shm(void **state)
{
	(void)state;
	run("shm", 2, 0);
	run("shm", 2, MODE_NO_MEMBARRIER);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_local),
		cmocka_unit_test(test_shm),
	};
	uint64_t seed;

	if (argc == 7 && !strcmp(argv[1], "--shm-child")) {
		int64_t mode = atoll(argv[6]);
		const char *e = getenv("ACCDMA_TEST_SEED"); /* the parent's, below */

		seed = e ? strtoull(e, NULL, 0) : 1;
		rng_state = (seed ^ ((uint64_t)atoi(argv[3]) * 0x9e3779b97f4a7c15ull)) | 1;
		child_env(mode);
		if (!strcmp(argv[2], "local"))
			return child_local(mode);
		return child_shm(atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), mode);
	}
	seed = th_seed();
	{
		char buf[32];

		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)seed);
		setenv("ACCDMA_TEST_SEED", buf, 1); /* the children's delays follow it */
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
