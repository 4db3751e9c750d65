/* SPDX-License-Identifier: MIT */
/*
 * verbs_th.h - what the tests of the verbs transport on real RDMA devices
 * share (test_verbs.c, test_verbs_cut.c): ranks started as processes of the
 * test program, as a launcher would, each checking its own side.
 */
#ifndef ACCDMA_TESTS_VERBS_TH_H
#define ACCDMA_TESTS_VERBS_TH_H

#include "helpers/th.h"

#include <infiniband/verbs.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define BIG (1u << 20)

static int port_base; /* main() sets it: a pair of ports per case */
static const char *master_addr = "127.0.0.1";

/* Is there an RDMA device with an active port? */
static inline int have_rdma(void)
{
	int n = 0, ok = 0;
	struct ibv_device **l = ibv_get_device_list(&n);

	for (int i = 0; l && i < n && !ok; i++) {
		struct ibv_context *c = ibv_open_device(l[i]);
		struct ibv_port_attr pa;

		ok = c && !ibv_query_port(c, 1, &pa) && pa.state == IBV_PORT_ACTIVE;
		if (c)
			ibv_close_device(c);
	}
	if (l)
		ibv_free_device_list(l);
	return ok && n >= 2;
}

#define CHECK(c)                                                                               \
	do {                                                                                   \
		if (!(c)) {                                                                    \
			fprintf(stderr, "rank %d: %s:%d: %s\n", rank, __FILE__, __LINE__, #c); \
			_exit(1);                                                              \
		}                                                                              \
	} while (0)

static inline accdma_world *rank_open(int rank, int *rc)
{
	struct accdma_world_opts o;
	accdma_world *w = NULL;

	(void)rank; /* the environment says which */
	accdma_world_opts_init(&o);
	o.mem_size = 16u << 20;
	*rc = accdma_world_open(&o, &w);
	return w;
}

static inline enum accdma_status wait_st(accdma_world *w, accdma_token t, uint64_t *bytes)
{
	enum accdma_status st = ACCDMA_ST__COUNT;

	if (accdma_wait_bytes(w, t, 20000, &st, bytes))
		return ACCDMA_ST__COUNT;
	return st;
}

/* rank_open(), then queue 0 of our device and a region of BIG bytes on it,
 * and a barrier: every rank has joined. */
static inline accdma_world *rank_joined(int rank, accdma_queue **q, accdma_key *k)
{
	accdma_token t;
	int rc;
	accdma_world *w = rank_open(rank, &rc);

	CHECK(rc == 0 && w);
	CHECK(accdma_queue_get(w, rank, 0, q) == 0);
	CHECK(accdma_mem_alloc(w, rank, BIG, k) == 0);
	CHECK(accdma_barrier(*q, NULL, 0, &t) == 0);
	CHECK(wait_st(w, t, NULL) == ACCDMA_OK);
	return w;
}

/* rank_open(), with what the library says on stderr caught in @text
 * (@len bytes, NUL-terminated) instead of printed. */
static inline accdma_world *rank_open_said(int rank, int *rc, char *text, size_t len)
{
	char path[64];
	int keep = dup(2);
	accdma_world *w;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/tmp/verbs_th.%d.err", (int)getpid());
	f = fopen(path, "w+");
	CHECK(f && keep >= 0 && dup2(fileno(f), 2) == 2);
	w = rank_open(rank, rc);
	dup2(keep, 2);
	close(keep);
	rewind(f);
	n = fread(text, 1, len - 1, f);
	text[n] = 0;
	fclose(f);
	unlink(path);
	return w;
}


/* Skip without RDMA devices, except in the test VM, where they must work. */
static inline void need_rdma(void)
{
	if (have_rdma())
		return;
	if (getenv("ACCDMA_TEST_RXE0"))
		fail_msg("the test VM's soft-RoCE devices are not usable");
	skip();
}

/* A case that runs only when named, where the test VM set @env up: false
 * (skip) when not named; named without @env, a failure, not a skip. */
static inline int named(const char *name, const char *env)
{
	const char *only = th_test_filter();

	if (!only || strcmp(only, name))
		return 0;
	if (!env || !*env)
		fail_msg("%s: named, but the test VM did not set up what it needs", name);
	return 1;
}

/* Start @n ranks running @fn; return their exit statuses (-signal if killed) in @st. */
static inline void run_n_ranks(void (*fn)(int rank), int n, int *st, const char *devs)
{
	pid_t pid[4];
	char port[16], size[8];

	assert_true(n >= 2 && n <= 4);
	snprintf(port, sizeof(port), "%d", port_base);
	snprintf(size, sizeof(size), "%d", n);
	port_base += 2;
	for (int r = 0; r < n; r++) {
		pid[r] = fork();
		assert_true(pid[r] >= 0);
		if (pid[r] == 0) {
			char rs[8];

			snprintf(rs, sizeof(rs), "%d", r);
			setenv("RANK", rs, 1);
			setenv("LOCAL_RANK", rs, 1);
			setenv("WORLD_SIZE", size, 1);
			setenv("MASTER_ADDR", master_addr, 1);
			setenv("MASTER_PORT", port, 1);
			setenv("ACCDMA_TRANSPORT", "verbs", 1);
			setenv("ACCDMA_IB_DEV", devs, 1);
			alarm(60); /* a hang is a failure */
			fn(r);
		}
	}
	for (int r = 0; r < n; r++) {
		int s = 0;

		assert_int_equal(waitpid(pid[r], &s, 0), pid[r]);
		st[r] = WIFEXITED(s) ? WEXITSTATUS(s) : -WTERMSIG(s);
	}
}

static inline void run_ranks(void (*fn)(int rank), int st[2], const char *devs)
{
	run_n_ranks(fn, 2, st, devs);
}

static inline const char *devs(void)
{
	const char *d = getenv("ACCDMA_TEST_IB_DEVS");

	return d && *d ? d : "rxe0,rxe1";
}

/* run_ranks() on the usual devices, and both ranks must exit 0. */
static inline void run_ranks_ok(void (*fn)(int rank))
{
	int st[2];

	run_ranks(fn, st, devs());
	assert_int_equal(st[0], 0);
	assert_int_equal(st[1], 0);
}

/* Run @n cases of program @prog, each with ports of its own; in the test
 * VM, say on its console that they ran (a skip also exits 0). */
static inline int verbs_th_run(const char *prog, const struct CMUnitTest *tests, size_t n)
{
	const char *only = th_test_filter();
	int failed;
	FILE *con;

	port_base = 20000 + (int)(getpid() % 20000);
	failed = _cmocka_run_group_tests(prog, tests, n, NULL, NULL);
	con = getenv("ACCDMA_TEST_RXE0") ? fopen("/dev/console", "w") : NULL;
	if (con) {
		fprintf(con, "VMTEST INFO %s %s: %d failed\n", prog, only ? only : "(all)", failed);
		fclose(con);
	}
	return failed;
}

#endif
