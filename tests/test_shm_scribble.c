/* SPDX-License-Identifier: MIT */
/*
 * test_shm_scribble.c - a peer process that scribbles on everything it can
 * write cannot crash another process (docs/transports.md, "Trust").
 *
 * Two ranks of a shm world. Rank 1 overwrites the whole shared arena with
 * random bytes, over and over, for a while, then is killed (SIGKILL, by its
 * own hand: its death is noticed as any other); in the second case it
 * scribbles on every device-memory segment too, the victim's included. Its
 * own engines run on the scribbled arena as well, and must not crash either
 * (ThreadSanitizer is told to ignore the scribbling itself, which races
 * with them by design).
 * Rank 0, the victim, meanwhile posts sends, recvs and one-sided writes to
 * rank 1, transfers to itself, fences, and waits for each with a short
 * timeout; it asks for its pending ops and a stall report now and then. Its
 * ops may fail with any status and its waits may time out: it must run to
 * the end, close its world, and find its private guard memory untouched.
 * The victim must exit 0 and the scribbler by its SIGKILL, not by a crash
 * of its own (an exit shows as its code, a signal as 1000 + it). The suite's
 * ASan build runs it too, where any stray load or store of the victim is an
 * error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "shm_th.h"

#include "driver/internal.h"
#include "driver/shm/shm.h"

#ifdef __SANITIZE_THREAD__
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
#define IGNORE_WRITES_BEGIN() AnnotateIgnoreWritesBegin(__FILE__, __LINE__)
#define IGNORE_WRITES_END() AnnotateIgnoreWritesEnd(__FILE__, __LINE__)
#else
#define IGNORE_WRITES_BEGIN() ((void)0)
#define IGNORE_WRITES_END() ((void)0)
#endif

#define SCRIBBLE_MS 1500
#define GUARD_BYTES 65536
#define BUF 4096

enum { MODE_ARENA = 1, MODE_ARENA_AND_MEMORY = 2 };

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void scribble(void *p, uint64_t len, uint64_t *seed)
{
	uint64_t *q = p;

	for (uint64_t i = 0; i < len / 8; i++)
		q[i] = rng_next(seed);
}

/* Rank 1: scribble for @ms, then die by SIGKILL. */
static int scribbler(int port, int mode, int64_t ms)
{
	struct accdma_world_opts o;
	accdma_world *w = NULL;
	uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid(), end;
	accdma_key k;
	int rc;

	sc_opts(&o, 1, 2, port, 20000);
	o.log_level = 0; /* what its engines find in the garbage is its own business */

	rc = accdma_world_open(&o, &w);
	SC_CHECK(rc == 0, "accdma_world_open = %d", rc);
	SC_CHECK(accdma_mem_alloc(w, 1, BUF, &k) == 0, "alloc");
	sc_ready();
	end = shm_now_ms() + (uint64_t)ms;
	IGNORE_WRITES_BEGIN();
	while (shm_now_ms() < end) {
		scribble(w->a.sh, w->a.g.size, &seed);
		for (int i = 0; mode == MODE_ARENA_AND_MEMORY && i < drv_shm(w)->nprocs; i++)
			scribble(drv_shm(w)->seg[i], drv_shm(w)->seg_len[i], &seed);
	}
	IGNORE_WRITES_END();
	raise(SIGKILL); /* dies as a peer is killed: no close, nothing flushed */
	return 1;
}

static void wait_any_outcome(accdma_world *w, accdma_token t)
{
	enum accdma_status st;
	int rc = accdma_wait(w, t, 20, &st);

	/* Anything but a crash: done with some status, timed out, or a token
	 * the scribbled records no longer know. */
	SC_CHECK(rc == 0 || rc == -ETIMEDOUT || rc == -ESTALE || rc == -EINVAL, "accdma_wait = %d", rc);
	if (rc == -ETIMEDOUT)
		accdma_cancel(w, t);
}

/* Rank 0: keep posting and waiting while rank 1 scribbles, then close. */
static int victim(int port, int64_t ms)
{
	struct accdma_world_opts o;
	accdma_world *w = NULL;
	unsigned char *guard = malloc(GUARD_BYTES);
	struct accdma_op_info infos[64];
	accdma_key src, dst, peer_key = q_key_make(0, 1); /* rank 1's first region */
	accdma_queue *q;
	uint64_t end, rounds = 0;
	FILE *null = fopen("/dev/null", "w");
	int rc;

	SC_CHECK(guard && null, "setup");
	memset(guard, 0x5a, GUARD_BYTES);
	sc_opts(&o, 0, 2, port, 20000);
	o.log_level = 0;
	rc = accdma_world_open(&o, &w);
	SC_CHECK(rc == 0, "accdma_world_open = %d", rc);
	SC_CHECK(accdma_mem_alloc(w, 0, BUF, &src) == 0, "alloc");
	SC_CHECK(accdma_mem_alloc(w, 0, BUF, &dst) == 0, "alloc");
	SC_CHECK(accdma_queue_get(w, 0, 0, &q) == 0, "queue");
	sc_ready();
	end = shm_now_ms() + (uint64_t)ms + 500; /* on past the scribbler's death */
	while (shm_now_ms() < end) {
		uint64_t len = rounds % 2 ? 8 : BUF; /* eager and rendezvous */
		accdma_token t[6] = { 0 };

		accdma_send(q, 1, rounds % 3, src, 0, len, NULL, 0, &t[0]);
		accdma_recv(q, 1, rounds % 3, dst, 0, len, NULL, 0, &t[1]);
		accdma_write(q, 1, src, 0, 64, peer_key, 0, NULL, 0, &t[2]);
		accdma_send(q, 0, 7, src, 0, len, NULL, 0, &t[3]);
		accdma_recv(q, 0, 7, dst, 0, len, NULL, 0, &t[4]);
		accdma_fence(q, NULL, 0, &t[5]);
		for (int i = 0; i < 6; i++)
			if (t[i])
				wait_any_outcome(w, t[i]);
		if (!(rounds % 16)) {
			SC_CHECK(accdma_pending(w, 0, infos, 64) >= 0, "pending");
			accdma_stall_report(w, null);
		}
		rounds++;
	}
	SC_CHECK(accdma_world_close(w) == 0, "close");
	for (int i = 0; i < GUARD_BYTES; i++)
		SC_CHECK(guard[i] == 0x5a, "private memory changed at %d", i);
	fprintf(stderr, "victim: %llu rounds while scribbled on\n", (unsigned long long)rounds);
	free(guard);
	fclose(null);
	return 0;
}

static int child(const char *sc, int rank, int n, int port, long long arg)
{
	(void)n;
	sc_rank = rank;
	if (!strcmp(sc, "scribble"))
		return rank == 0 ? victim(port, SCRIBBLE_MS) : scribbler(port, (int)arg, SCRIBBLE_MS);
	return 2;
}

/* ---- the driver --------------------------------------------------------------- */

static void run(int mode)
{
	struct shm_run r;

	shm_run_init(&r, 2);
	shm_spawn(&r, "scribble", 0, mode);
	shm_spawn(&r, "scribble", 1, mode);
	assert_int_equal(shm_wait_ready(&r, 2, 30000), 0);
	assert_int_equal(shm_reap(&r, 60000), 0);
	assert_int_equal(shm_code(&r, 1), 1000 + SIGKILL); /* its own engines survived its garbage */
	assert_int_equal(shm_code(&r, 0), 0);
	shm_run_end(&r);
}

static void test_arena_scribbled(void **state)
{
	(void)state;
	run(MODE_ARENA);
}

static void test_arena_and_memory_scribbled(void **state)
{
	(void)state;
	run(MODE_ARENA_AND_MEMORY);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arena_scribbled),
		cmocka_unit_test(test_arena_and_memory_scribbled),
	};

	if (argc == 7 && !strcmp(argv[1], "--shm-child"))
		return child(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoll(argv[6]));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
