/* SPDX-License-Identifier: MIT */
/*
 * test_shm_seed.c - the seed patterns over the shm transport, one process per rank.
 *
 * pipeline and permute (send-first, recv-first, even/odd) on 2, 4 and 8
 * processes; pipeline with an exec chained on the recv; a ring of int32; a
 * large transfer split into chunks; the same with ranks started in reverse
 * order (each after a delay), and with two devices per process. Every rank
 * checks its data and statuses and exits 0; the driver asserts every exit
 * code. Plus, in-process: a one-process shm world and bad options.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "shm_th.h"

#define COUNT 1024 /* floats per buffer */
#define BIG (6u << 20)

static accdma_world *open_rank(int rank, int n, int port, int local)
{
	struct accdma_world_opts o;
	accdma_world *w = NULL;
	int rc;

	sc_opts(&o, rank, n, port, 20000);
	o.local_devices = local;
	rc = accdma_world_open(&o, &w);
	SC_CHECK(rc == 0 && w, "accdma_world_open = %d", rc);
	return w;
}

static accdma_key alloc_fill(accdma_world *w, int dev, uint64_t bytes, float v, float **p)
{
	accdma_key key = 0;
	int rc = accdma_mem_alloc(w, dev, bytes, &key);

	SC_CHECK(rc == 0, "accdma_mem_alloc = %d", rc);
	*p = accdma_mem_ptr(w, dev, key, NULL);
	SC_CHECK(*p != NULL, "mem_ptr");
	for (uint64_t i = 0; i < bytes / sizeof(float); i++)
		(*p)[i] = v;
	return key;
}

static void check_f32(const float *p, size_t n, float v, const char *what)
{
	for (size_t i = 0; i < n; i++)
		SC_CHECK(p[i] == v, "%s[%zu] = %g, want %g", what, i, (double)p[i], (double)v);
}

static int add3(void *arg)
{
	float *p = arg;

	for (int i = 0; i < COUNT; i++)
		p[i] += 3.0f;
	return 0;
}

/* One device's part of a pattern; returns the tokens to wait for. */
static void rank_part(accdma_world *w, int i, int n, const char *sc)
{
	accdma_queue *q;
	accdma_token t[4] = { 0 };
	uint64_t len = COUNT * sizeof(float);
	float *src, *dst;
	accdma_key ks, kd;
	int prev = (i + n - 1) % n, next = (i + 1) % n;

	SC_CHECK(accdma_queue_get(w, i, 0, &q) == 0, "queue_get");
	if (!strcmp(sc, "pipeline") || !strcmp(sc, "pipeline_exec")) {
		ks = alloc_fill(w, i, len, (float)i, &src);
		if (i < n / 2) {
			SC_CHECK(accdma_send(q, i + n / 2, 7, ks, 0, len, NULL, 0, &t[0]) == 0, "send");
			sc_wait_ok(w, t[0]);
			check_f32(src, COUNT, (float)i, "sender buffer");
		} else if (!strcmp(sc, "pipeline")) {
			SC_CHECK(accdma_recv(q, i - n / 2, 7, ks, 0, len, NULL, 0, &t[0]) == 0, "recv");
			sc_wait_ok(w, t[0]);
			check_f32(src, COUNT, (float)(i - n / 2), "received");
		} else {
			SC_CHECK(accdma_recv(q, i - n / 2, 7, ks, 0, len, NULL, 0, &t[0]) == 0, "recv");
			SC_CHECK(accdma_exec(q, add3, src, &t[0], 1, &t[1]) == 0, "exec");
			sc_wait_ok(w, t[1]);
			sc_wait_ok(w, t[0]);
			check_f32(src, COUNT, (float)(i - n / 2) + 3.0f, "received + 3");
		}
		return;
	}
	if (!strncmp(sc, "permute", 7)) {
		int send_first = !strcmp(sc, "permute_send_first") ||
				 (!strcmp(sc, "permute") && i % 2 == 0);

		ks = alloc_fill(w, i, len, (float)i, &src);
		kd = alloc_fill(w, i, len, -1.0f, &dst);
		if (send_first) {
			SC_CHECK(accdma_send(q, next, 1, ks, 0, len, NULL, 0, &t[0]) == 0, "send");
			SC_CHECK(accdma_recv(q, prev, 1, kd, 0, len, NULL, 0, &t[1]) == 0, "recv");
		} else {
			SC_CHECK(accdma_recv(q, prev, 1, kd, 0, len, NULL, 0, &t[1]) == 0, "recv");
			SC_CHECK(accdma_send(q, next, 1, ks, 0, len, NULL, 0, &t[0]) == 0, "send");
		}
		sc_wait_ok(w, t[0]);
		sc_wait_ok(w, t[1]);
		check_f32(dst, COUNT, (float)prev, "permuted");
		check_f32(src, COUNT, (float)i, "source");
		return;
	}
	if (!strcmp(sc, "ring")) {
		int32_t *a, *b;

		SC_CHECK(accdma_mem_alloc(w, i, 400, &ks) == 0, "alloc");
		SC_CHECK(accdma_mem_alloc(w, i, 400, &kd) == 0, "alloc");
		a = accdma_mem_ptr(w, i, ks, NULL);
		b = accdma_mem_ptr(w, i, kd, NULL);
		for (int k = 0; k < 100; k++)
			a[k] = i, b[k] = -1;
		SC_CHECK(accdma_recv(q, prev, 9, kd, 0, 400, NULL, 0, &t[1]) == 0, "recv");
		SC_CHECK(accdma_send(q, next, 9, ks, 0, 400, NULL, 0, &t[0]) == 0, "send");
		sc_wait_ok(w, t[1]);
		sc_wait_ok(w, t[0]);
		for (int k = 0; k < 100; k++)
			SC_CHECK(b[k] == prev, "ring[%d] = %d, want %d", k, b[k], prev);
		return;
	}
	if (!strcmp(sc, "big")) { /* large permutation: split into chunks, one copy */
		uint8_t *s8, *d8;

		SC_CHECK(accdma_mem_alloc(w, i, BIG, &ks) == 0, "alloc");
		SC_CHECK(accdma_mem_alloc(w, i, BIG, &kd) == 0, "alloc");
		s8 = accdma_mem_ptr(w, i, ks, NULL);
		d8 = accdma_mem_ptr(w, i, kd, NULL);
		for (uint32_t k = 0; k < BIG; k++)
			s8[k] = (uint8_t)(k * 31u + (uint32_t)i);
		SC_CHECK(accdma_recv(q, prev, 2, kd, 0, BIG, NULL, 0, &t[1]) == 0, "recv");
		SC_CHECK(accdma_send(q, next, 2, ks, 0, BIG, NULL, 0, &t[0]) == 0, "send");
		sc_wait_ok(w, t[1]);
		sc_wait_ok(w, t[0]);
		for (uint32_t k = 0; k < BIG; k++)
			SC_CHECK(d8[k] == (uint8_t)(k * 31u + (uint32_t)prev), "big[%u]", k);
		/* and a one-sided write back into prev's buffer, then a barrier */
		SC_CHECK(accdma_barrier(q, NULL, 0, &t[2]) == 0, "barrier");
		sc_wait_ok(w, t[2]);
		return;
	}
	SC_CHECK(0, "unknown scenario %s", sc);
}

/* A rank: ARG = milliseconds to sleep before opening (start order), or -D for
 * D devices per process. */
static int child(const char *sc, int rank, int n, int port, long long arg)
{
	int local = arg < 0 ? (int)-arg : 1;
	accdma_world *w;
	int first = -1, cnt;

	sc_rank = rank;
	if (arg > 0)
		poll(NULL, 0, (int)arg);
	w = open_rank(rank * local, n * local, port, local);
	cnt = accdma_world_local_devices(w, &first);
	SC_CHECK(cnt == local && first == rank * local, "local devices %d first %d", cnt, first);
	SC_CHECK(accdma_world_size(w) == n * local, "size");
	if (local == 1) {
		rank_part(w, rank * local, n * local, sc);
	} else {
		/* several devices per process: each from its own thread-free turn,
		 * so a device's ops must not need the others of this process to post first */
		SC_CHECK(!strcmp(sc, "permute_send_first"), "multi-device runs permute_send_first");
		accdma_token t[2 * 8];
		float *src[8], *dst[8];
		uint64_t len = COUNT * sizeof(float);
		int N = n * local;

		for (int d = 0; d < local; d++) {
			int i = rank * local + d;
			accdma_queue *q;
			accdma_key ks = alloc_fill(w, i, len, (float)i, &src[d]);
			accdma_key kd = alloc_fill(w, i, len, -1.0f, &dst[d]);

			SC_CHECK(accdma_queue_get(w, i, 0, &q) == 0, "queue");
			SC_CHECK(accdma_send(q, (i + 1) % N, 1, ks, 0, len, NULL, 0, &t[2 * d]) == 0, "send");
			SC_CHECK(accdma_recv(q, (i + N - 1) % N, 1, kd, 0, len, NULL, 0, &t[2 * d + 1]) == 0,
				 "recv");
		}
		for (int d = 0; d < local; d++) {
			sc_wait_ok(w, t[2 * d]);
			sc_wait_ok(w, t[2 * d + 1]);
			check_f32(dst[d], COUNT, (float)((rank * local + d + N - 1) % N), "permuted");
		}
	}
	SC_CHECK(accdma_world_close(w) == 0, "close");
	return 0;
}

/* A rank started by a launcher (accdma-run, torchrun): everything from the environment. */
static int env_child(const char *sc)
{
	struct accdma_world_opts o;
	accdma_world *w = NULL;
	int rc = accdma_world_opts_init(&o);

	SC_CHECK(rc == 0, "accdma_world_opts_init = %d", rc);
	sc_rank = o.rank;
	SC_CHECK(o.transport == ACCDMA_TRANSPORT_SHM, "ACCDMA_TRANSPORT is not shm");
	o.mem_size = 16u << 20;
	rc = accdma_world_open(&o, &w);
	SC_CHECK(rc == 0, "accdma_world_open = %d", rc);
	rank_part(w, o.rank, o.num_devices, sc);
	SC_CHECK(accdma_world_close(w) == 0, "close");
	return 0;
}

/* ---- driver ---------------------------------------------------------------- */

static void run(const char *sc, int n, int reversed, int local)
{
	struct shm_run r;

	shm_run_init(&r, n);
	for (int k = 0; k < n; k++) {
		int rank = reversed ? n - 1 - k : k;

		/* reversed: rank n-1 starts first, rank 0 (the master) last */
		shm_spawn(&r, sc, rank, local > 1 ? -local : reversed ? 150 * k : 0);
	}
	shm_run_end(&r);
	for (int i = 0; i < n; i++)
		if (shm_code(&r, i) != 0) {
			print_error("%s n=%d%s: rank %d exited %d\n", sc, n, reversed ? " reversed" : "",
				    i, shm_code(&r, i));
			fail();
		}
}

static void test_pipeline(void **s)
{
	(void)s;
	run("pipeline", 2, 0, 1);
	run("pipeline", 4, 0, 1);
	run("pipeline", 8, 0, 1);
}

static void test_pipeline_exec(void **s)
{
	(void)s;
	run("pipeline_exec", 4, 0, 1);
}

static void test_permute(void **s)
{
	(void)s;
	for (int n = 2; n <= 8; n *= 2) {
		run("permute", n, 0, 1);
		run("permute_send_first", n, 0, 1);
		run("permute_recv_first", n, 0, 1);
	}
}

static void test_ring_and_big(void **s)
{
	(void)s;
	run("ring", 4, 0, 1);
	run("big", 3, 0, 1);
}

static void test_reversed_start(void **s)
{
	(void)s;
	run("permute", 4, 1, 1);
	run("pipeline", 8, 1, 1);
}

static void test_two_devices_per_process(void **s)
{
	(void)s;
	run("permute_send_first", 2, 0, 2);
}

/* A one-process shm world (every device local): no bootstrap, same semantics. */
static void test_single_process(void **s)
{
	struct accdma_world_opts o;
	accdma_world *w = NULL;
	accdma_key k0, k1, kr = 0; /* LTO cannot prove accdma_mem_register() sets it */
	accdma_token t[2];
	enum accdma_status st;
	accdma_queue *q0 = NULL, *q1 = NULL;
	float *a, *b, reg[4];

	(void)s;
	sc_opts(&o, 0, 2, 0, 1000);
	o.local_devices = 2;
	o.log_level = 0;
	assert_int_equal(accdma_world_open(&o, &w), 0);
	assert_int_equal(accdma_mem_alloc(w, 0, 4096, &k0), 0);
	assert_int_equal(accdma_mem_alloc(w, 1, 4096, &k1), 0);
	/* caller memory registers (peers reach it by cross-memory attach: test_shm_register) */
	assert_int_equal(accdma_mem_register(w, 0, reg, sizeof(reg), &kr), 0);
	assert_int_equal(accdma_mem_free(w, 0, kr), 0);
	a = accdma_mem_ptr(w, 0, k0, NULL);
	b = accdma_mem_ptr(w, 1, k1, NULL);
	for (int i = 0; i < 1024; i++)
		a[i] = 5.0f, assert_true(b[i] == 0.0f);
	assert_int_equal(accdma_queue_get(w, 0, 0, &q0), 0);
	assert_int_equal(accdma_queue_get(w, 1, 0, &q1), 0);
	assert_int_equal(accdma_recv(q1, 0, 3, k1, 0, 4096, NULL, 0, &t[1]), 0);
	assert_int_equal(accdma_send(q0, 1, 3, k0, 0, 4096, NULL, 0, &t[0]), 0);
	assert_int_equal(accdma_wait(w, t[0], 10000, &st), 0);
	assert_int_equal(st, ACCDMA_OK);
	assert_int_equal(accdma_wait(w, t[1], 10000, &st), 0);
	assert_int_equal(st, ACCDMA_OK);
	for (int i = 0; i < 1024; i++)
		assert_true(b[i] == 5.0f);
	/* out of bounds is checked against the region, in the segment */
	assert_int_equal(accdma_send(q0, 1, 4, k0, 4000, 200, NULL, 0, &t[0]), 0);
	assert_int_equal(accdma_wait(w, t[0], 10000, &st), 0);
	assert_int_equal(st, ACCDMA_ST_OUT_OF_BOUNDS);
	/* a freed region's memory comes back zeroed */
	assert_int_equal(accdma_mem_free(w, 0, k0), 0);
	assert_int_equal(accdma_mem_alloc(w, 0, 4096, &k0), 0);
	a = accdma_mem_ptr(w, 0, k0, NULL);
	for (int i = 0; i < 1024; i++)
		assert_true(a[i] == 0.0f);
	/* memory capacity is per device */
	assert_int_equal(accdma_mem_alloc(w, 0, 64u << 20, &kr), -ENOMEM);
	assert_int_equal(accdma_world_close(w), 0);
}

static void test_bad_options(void **s)
{
	struct accdma_world_opts o;
	accdma_world *w = NULL;

	(void)s;
	sc_opts(&o, -1, 2, 1234, 1000);
	o.log_level = 0;
	assert_int_equal(accdma_world_open(&o, &w), -EINVAL); /* no rank */
	sc_opts(&o, 2, 2, 1234, 1000);
	o.log_level = 0;
	assert_int_equal(accdma_world_open(&o, &w), -EINVAL); /* rank out of range */
	sc_opts(&o, 1, 2, 0, 1000);
	o.log_level = 0;
	setenv("PMIX_NAMESPACE", "", 1);
	unsetenv("OMPI_MCA_ess_base_jobid");
	unsetenv("SLURM_JOB_ID");
	assert_int_equal(accdma_world_open(&o, &w), -EINVAL); /* no rendezvous */
	sc_opts(&o, 1, 2, 1234, 1000);
	o.log_level = 0;
	o.master_addr = "192.0.2.1"; /* TEST-NET: never an address of this host */
	assert_int_equal(accdma_world_open(&o, &w), -EINVAL);
}

static void test_opts_from_env(void **s)
{
	struct accdma_world_opts o;

	(void)s;
	setenv("ACCDMA_TRANSPORT", "shm", 1);
	setenv("RANK", "3", 1);
	setenv("WORLD_SIZE", "6", 1);
	setenv("MASTER_ADDR", "127.0.0.1", 1);
	setenv("MASTER_PORT", "29511", 1);
	assert_int_equal(accdma_world_opts_init(&o), 0);
	assert_int_equal(o.transport, ACCDMA_TRANSPORT_SHM);
	assert_int_equal(o.rank, 3);
	assert_int_equal(o.num_devices, 6);
	assert_int_equal(o.master_port, 29511);
	assert_string_equal(o.master_addr, "127.0.0.1");
	setenv("ACCDMA_LOCAL_DEVICES", "2", 1);
	assert_int_equal(accdma_world_opts_init(&o), 0);
	assert_int_equal(o.rank, 6);
	assert_int_equal(o.num_devices, 12);
	unsetenv("RANK");
	unsetenv("WORLD_SIZE");
	unsetenv("ACCDMA_LOCAL_DEVICES");
	setenv("OMPI_COMM_WORLD_RANK", "1", 1);
	setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
	assert_int_equal(accdma_world_opts_init(&o), 0);
	assert_int_equal(o.rank, 1);
	assert_int_equal(o.num_devices, 2);
	setenv("MASTER_PORT", "http", 1);
	assert_int_equal(accdma_world_opts_init(&o), -EINVAL);
	unsetenv("OMPI_COMM_WORLD_RANK");
	unsetenv("OMPI_COMM_WORLD_SIZE");
	unsetenv("MASTER_PORT");
	unsetenv("MASTER_ADDR");
	unsetenv("ACCDMA_TRANSPORT");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pipeline),
		cmocka_unit_test(test_pipeline_exec),
		cmocka_unit_test(test_permute),
		cmocka_unit_test(test_ring_and_big),
		cmocka_unit_test(test_reversed_start),
		cmocka_unit_test(test_two_devices_per_process),
		cmocka_unit_test(test_single_process),
		cmocka_unit_test(test_bad_options),
		cmocka_unit_test(test_opts_from_env),
	};

	if (argc == 3 && !strcmp(argv[1], "--shm-env"))
		return env_child(argv[2]);
	if (argc == 7 && !strcmp(argv[1], "--shm-child"))
		return child(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoll(argv[6]));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
