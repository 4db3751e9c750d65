/* SPDX-License-Identifier: MIT */
/*
 * test_verbs.c - the verbs transport on real RDMA devices (the test VM's two
 * soft-RoCE ports: `make check-verbs`; without an active RDMA device every
 * case is skipped). Each case starts two ranks as processes of this program,
 * rank 0 on the first device and rank 1 on the second (ACCDMA_IB_DEV), as a
 * launcher would, and each rank checks its own side:
 *
 *  - transfers: an eager send, a 1 MiB exchange both ways (either side
 *    first), a one-sided write into the peer's region, then a barrier, a
 *    pull into caller memory registered with the library; data, status
 *    and bytes checked;
 *  - failures: a truncated pair, a waiting send canceled (its recv gets
 *    PEER_ERROR), a write past the target's bounds;
 *  - a rank killed with SIGKILL mid-transfer: the other's ops with it
 *    (a recv, staged sends waiting for their finish, a later send)
 *    complete PEER_LOST, and it closes cleanly;
 *  - a rank of another shape cannot join: both opens fail and say why;
 *  - `test_verbs test_port_down`, only when named (the test VM runs it
 *    last, then restores the paths): a port taken down while both ranks wait for each other
 *    (ACCDMA_TEST_RXE1_NETDEV, rank 1's veth; its peer loses its carrier
 *    too): every op with the other, waiting or posted later, completes
 *    PEER_LOST, and both close;
 *  - `test_verbs test_host_silent`, only when named: the same with the
 *    link silenced both ways instead (no port down, no error anywhere):
 *    the join's connection, kept alive by keepalive and a user timeout of
 *    ACCDMA_PEER_TIMEOUT_MS, is what notices.
 */
#include "helpers/th.h"

#include <infiniband/verbs.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define BIG (1u << 20)

static int port_base;
static const char *master_addr = "127.0.0.1";

/* Is there an RDMA device with an active port? */
static int have_rdma(void)
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

static accdma_world *rank_open(int rank, int *rc)
{
	struct accdma_world_opts o;
	accdma_world *w = NULL;

	(void)rank; /* the environment says which */
	accdma_world_opts_init(&o);
	o.mem_size = 16u << 20;
	*rc = accdma_world_open(&o, &w);
	return w;
}

static enum accdma_status wait_st(accdma_world *w, accdma_token t, uint64_t *bytes)
{
	enum accdma_status st = ACCDMA_ST__COUNT;

	if (accdma_wait_bytes(w, t, 20000, &st, bytes))
		return ACCDMA_ST__COUNT;
	return st;
}

/* Both ranks allocate in the same order, so a region's key is the same number on both. */
static void rank_transfers(int rank)
{
	int rc, peer = 1 - rank;
	accdma_world *w = rank_open(rank, &rc);
	accdma_queue *q;
	accdma_key src, dst, win;
	uint8_t *s, *d, *wb;
	accdma_token t[4];
	uint64_t bytes;

	CHECK(rc == 0 && w);
	CHECK(accdma_queue_get(w, rank, 0, &q) == 0);
	CHECK(accdma_mem_alloc(w, rank, BIG, &src) == 0);
	CHECK(accdma_mem_alloc(w, rank, BIG, &dst) == 0);
	CHECK(accdma_mem_alloc(w, rank, 4096, &win) == 0);
	s = accdma_mem_ptr(w, rank, src, NULL);
	d = accdma_mem_ptr(w, rank, dst, NULL);
	wb = accdma_mem_ptr(w, rank, win, NULL);
	for (uint32_t i = 0; i < BIG; i++)
		s[i] = (uint8_t)(i * 7 + rank);
	memset(d, 0xEE, BIG);
	/* eager, rank 0 to rank 1, the recv posted whenever */
	if (rank == 0) {
		CHECK(accdma_send(q, peer, 1, src, 0, 8, NULL, 0, &t[0]) == 0);
		CHECK(wait_st(w, t[0], &bytes) == ACCDMA_OK && bytes == 8);
	} else {
		CHECK(accdma_recv(q, peer, 1, dst, 0, 64, NULL, 0, &t[0]) == 0);
		CHECK(wait_st(w, t[0], &bytes) == ACCDMA_OK && bytes == 8);
		for (int i = 0; i < 8; i++)
			CHECK(d[i] == (uint8_t)(i * 7));
		CHECK(d[8] == 0xEE);
	}
	/* 1 MiB both ways: rank 0 sends first, rank 1 receives first */
	if (rank == 0) {
		CHECK(accdma_send(q, peer, 2, src, 0, BIG, NULL, 0, &t[1]) == 0);
		CHECK(accdma_recv(q, peer, 2, dst, 0, BIG, NULL, 0, &t[2]) == 0);
	} else {
		CHECK(accdma_recv(q, peer, 2, dst, 0, BIG, NULL, 0, &t[2]) == 0);
		CHECK(accdma_send(q, peer, 2, src, 0, BIG, NULL, 0, &t[1]) == 0);
	}
	CHECK(wait_st(w, t[1], &bytes) == ACCDMA_OK && bytes == BIG);
	CHECK(wait_st(w, t[2], &bytes) == ACCDMA_OK && bytes == BIG);
	for (uint32_t i = 0; i < BIG; i++)
		CHECK(d[i] == (uint8_t)(i * 7 + peer));
	/* medium sends, staged in the receiver's slots: more than its slots
	 * for us, so the last go by rendezvous; each lands in its own recv */
	{
		enum { N = 70, M = 14000 };
		accdma_token ms[N];

		memset(d, 0xEE, BIG);
		for (int k = 0; k < N; k++) {
			if (rank == 0)
				CHECK(accdma_send(q, peer, 9, src, (uint64_t)k * 100, M, NULL, 0, &ms[k]) == 0);
			else
				CHECK(accdma_recv(q, peer, 9, dst, (uint64_t)k * M, M, NULL, 0, &ms[k]) == 0);
		}
		for (int k = 0; k < N; k++)
			CHECK(wait_st(w, ms[k], &bytes) == ACCDMA_OK && bytes == M);
		for (int k = 0; rank == 1 && k < N; k++)
			for (uint32_t i = 0; i < M; i += 997)
				CHECK(d[(size_t)k * M + i] == (uint8_t)((k * 100 + i) * 7 + peer));
	}
	/* a one-sided write into the peer's window, then a barrier: it has landed */
	memset(wb, 0, 4096);
	CHECK(accdma_barrier(q, NULL, 0, &t[0]) == 0); /* both windows cleared before either writes */
	CHECK(wait_st(w, t[0], NULL) == ACCDMA_OK);
	CHECK(accdma_write(q, peer, src, 100, 1000, win, 7, NULL, 0, &t[3]) == 0);
	CHECK(wait_st(w, t[3], &bytes) == ACCDMA_OK && bytes == 1000);
	CHECK(accdma_barrier(q, NULL, 0, &t[0]) == 0);
	CHECK(wait_st(w, t[0], NULL) == ACCDMA_OK);
	for (int i = 0; i < 1000; i++)
		CHECK(wb[7 + i] == (uint8_t)((100 + i) * 7 + peer));
	CHECK(wb[6] == 0 && wb[1007] == 0);
	/* caller memory registered with the library receives a pull */
	{
		uint8_t *mine = aligned_alloc(4096, 65536);
		accdma_key reg;

		CHECK(mine != NULL);
		memset(mine, 0xCC, 65536);
		CHECK(accdma_mem_register(w, rank, mine, 65536, &reg) == 0);
		if (rank == 0) {
			CHECK(accdma_send(q, peer, 8, src, 0, 40000, NULL, 0, &t[1]) == 0);
			CHECK(wait_st(w, t[1], &bytes) == ACCDMA_OK && bytes == 40000);
		} else {
			CHECK(accdma_recv(q, peer, 8, reg, 16, 50000, NULL, 0, &t[2]) == 0);
			CHECK(wait_st(w, t[2], &bytes) == ACCDMA_OK && bytes == 40000);
			for (uint32_t i = 0; i < 40000; i++)
				CHECK(mine[16 + i] == (uint8_t)(i * 7));
			CHECK(mine[15] == 0xCC && mine[16 + 40000] == 0xCC);
		}
		CHECK(accdma_barrier(q, NULL, 0, &t[0]) == 0);
		CHECK(wait_st(w, t[0], NULL) == ACCDMA_OK);
		CHECK(accdma_mem_free(w, rank, reg) == 0);
		free(mine);
	}
	CHECK(accdma_barrier(q, NULL, 0, &t[0]) == 0); /* nobody frees what the other still writes */
	CHECK(wait_st(w, t[0], NULL) == ACCDMA_OK);
	CHECK(accdma_world_close(w) == 0);
	_exit(0);
}

static void rank_failures(int rank)
{
	int rc, peer = 1 - rank;
	accdma_world *w = rank_open(rank, &rc);
	accdma_queue *q;
	accdma_key k, win;
	uint8_t *b;
	accdma_token t;

	CHECK(rc == 0 && w);
	CHECK(accdma_queue_get(w, rank, 0, &q) == 0);
	CHECK(accdma_mem_alloc(w, rank, BIG, &k) == 0);
	CHECK(accdma_mem_alloc(w, rank, 4096, &win) == 0);
	b = accdma_mem_ptr(w, rank, k, NULL);
	memset(b, 0x5A, BIG);
	if (rank == 0) {
		/* truncation: 64 KiB into a 1 KiB recv */
		CHECK(accdma_send(q, peer, 3, k, 0, 65536, NULL, 0, &t) == 0);
		CHECK(wait_st(w, t, NULL) == ACCDMA_ST_TRUNCATED);
		/* a waiting send canceled */
		CHECK(accdma_send(q, peer, 4, k, 0, 65536, NULL, 0, &t) == 0);
		usleep(200000);
		CHECK(accdma_cancel(w, t) == 0);
		CHECK(wait_st(w, t, NULL) == ACCDMA_ST_CANCELED);
		/* a write past the end of the peer's window */
		CHECK(accdma_write(q, peer, k, 0, 100, win, 4000, NULL, 0, &t) == 0);
		CHECK(wait_st(w, t, NULL) == ACCDMA_ST_OUT_OF_BOUNDS);
	} else {
		CHECK(accdma_recv(q, peer, 3, k, 0, 1024, NULL, 0, &t) == 0);
		CHECK(wait_st(w, t, NULL) == ACCDMA_ST_TRUNCATED);
		for (uint32_t i = 0; i < BIG; i++)
			CHECK(b[i] == 0x5A);
		usleep(600000); /* the send is canceled before this recv comes */
		CHECK(accdma_recv(q, peer, 4, k, 0, 65536, NULL, 0, &t) == 0);
		CHECK(wait_st(w, t, NULL) == ACCDMA_ST_PEER_ERROR);
		CHECK(b[0] == 0x5A);
	}
	CHECK(accdma_barrier(q, NULL, 0, &t) == 0);
	CHECK(wait_st(w, t, NULL) == ACCDMA_OK);
	CHECK(accdma_world_close(w) == 0);
	_exit(0);
}

/* Rank 0 dies with a large send waiting; rank 1's recv, its staged sends
 * that landed in rank 0's slots (waiting for a finish), and a later send to
 * it end PEER_LOST. */
static void rank_killed(int rank)
{
	int rc, peer = 1 - rank;
	accdma_world *w = rank_open(rank, &rc);
	accdma_queue *q;
	accdma_key k;
	accdma_token t, u, staged[3];

	CHECK(rc == 0 && w);
	CHECK(accdma_queue_get(w, rank, 0, &q) == 0);
	CHECK(accdma_mem_alloc(w, rank, BIG, &k) == 0);
	if (rank == 0) {
		CHECK(accdma_send(q, peer, 5, k, 0, BIG, NULL, 0, &t) == 0);
		usleep(300000);
		raise(SIGKILL);
	}
	for (int i = 0; i < 3; i++) /* staged (64 KiB), never received */
		CHECK(accdma_send(q, peer, 9, k, (uint64_t)i << 16, 65536, NULL, 0, &staged[i]) == 0);
	CHECK(accdma_recv(q, peer, 6, k, 0, BIG, NULL, 0, &t) == 0); /* never sent */
	CHECK(wait_st(w, t, NULL) == ACCDMA_ST_PEER_LOST);
	for (int i = 0; i < 3; i++)
		CHECK(wait_st(w, staged[i], NULL) == ACCDMA_ST_PEER_LOST);
	CHECK(accdma_send(q, peer, 7, k, 0, BIG, NULL, 0, &u) == 0);
	CHECK(wait_st(w, u, NULL) == ACCDMA_ST_PEER_LOST);
	CHECK(accdma_world_close(w) == 0);
	_exit(0);
}

/* What rank 1 runs to cut the ranks apart (rank_cut_apart()); set before the ranks start. */
static char cut_cmd[256];

/* Once both ranks have ops waiting for each other (a recv and a large send
 * each, neither ever matched), rank 1 runs cut_cmd; every op with the
 * other, waiting or posted later, must end PEER_LOST, and both close. */
static void rank_cut_apart(int rank)
{
	int rc, peer = 1 - rank;
	accdma_world *w;
	accdma_queue *q;
	accdma_key k;
	accdma_token t[3];

	setenv("ACCDMA_PEER_TIMEOUT_MS", "3000", 1);
	w = rank_open(rank, &rc);
	CHECK(rc == 0 && w);
	CHECK(accdma_queue_get(w, rank, 0, &q) == 0);
	CHECK(accdma_mem_alloc(w, rank, BIG, &k) == 0);
	CHECK(accdma_barrier(q, NULL, 0, &t[0]) == 0);
	CHECK(wait_st(w, t[0], NULL) == ACCDMA_OK);
	CHECK(accdma_recv(q, peer, 20 + rank, k, 0, BIG, NULL, 0, &t[0]) == 0);
	CHECK(accdma_send(q, peer, 30 + rank, k, 0, BIG, NULL, 0, &t[1]) == 0);
	if (rank == 1) {
		usleep(300000);
		CHECK(system(cut_cmd) == 0);
	}
	CHECK(wait_st(w, t[0], NULL) == ACCDMA_ST_PEER_LOST);
	CHECK(wait_st(w, t[1], NULL) == ACCDMA_ST_PEER_LOST);
	CHECK(accdma_send(q, peer, 40, k, 0, 8, NULL, 0, &t[2]) == 0);
	CHECK(wait_st(w, t[2], NULL) == ACCDMA_ST_PEER_LOST);
	CHECK(accdma_world_close(w) == 0);
	_exit(0);
}

/* Rank 1 asks for two queues, rank 0 for one: the join refuses it, and both opens fail. */
static void rank_misfit(int rank)
{
	int rc;
	accdma_world *w;

	if (rank == 1)
		setenv("ACCDMA_QUEUES", "2", 1);
	setenv("ACCDMA_PEER_TIMEOUT_MS", "3000", 1);
	w = rank_open(rank, &rc);
	CHECK(rc < 0 && !w);
	_exit(0);
}

/* Skip without RDMA devices, except in the test VM, where they must work. */
static void need_rdma(void)
{
	if (have_rdma())
		return;
	if (getenv("ACCDMA_TEST_RXE0"))
		fail_msg("the test VM's soft-RoCE devices are not usable");
	skip();
}

/* Start both ranks running @fn; return their exit statuses (-signal if killed). */
static void run_ranks(void (*fn)(int rank), int st[2], const char *devs)
{
	pid_t pid[2];
	char port[16];

	snprintf(port, sizeof(port), "%d", port_base);
	port_base += 2;
	for (int r = 0; r < 2; r++) {
		pid[r] = fork();
		assert_true(pid[r] >= 0);
		if (pid[r] == 0) {
			char rs[8];

			snprintf(rs, sizeof(rs), "%d", r);
			setenv("RANK", rs, 1);
			setenv("LOCAL_RANK", rs, 1);
			setenv("WORLD_SIZE", "2", 1);
			setenv("MASTER_ADDR", master_addr, 1);
			setenv("MASTER_PORT", port, 1);
			setenv("ACCDMA_TRANSPORT", "verbs", 1);
			setenv("ACCDMA_IB_DEV", devs, 1);
			alarm(60); /* a hang is a failure */
			fn(r);
		}
	}
	for (int r = 0; r < 2; r++) {
		int s = 0;

		assert_int_equal(waitpid(pid[r], &s, 0), pid[r]);
		st[r] = WIFEXITED(s) ? WEXITSTATUS(s) : -WTERMSIG(s);
	}
}

static const char *devs(void)
{
	const char *d = getenv("ACCDMA_TEST_IB_DEVS");

	return d && *d ? d : "rxe0,rxe1";
}

static void test_transfers(void **state)
{
	int st[2];

	(void)state;
	need_rdma();
	run_ranks(rank_transfers, st, devs());
	assert_int_equal(st[0], 0);
	assert_int_equal(st[1], 0);
}

static void test_failures(void **state)
{
	int st[2];

	(void)state;
	need_rdma();
	run_ranks(rank_failures, st, devs());
	assert_int_equal(st[0], 0);
	assert_int_equal(st[1], 0);
}

static void test_rank_killed(void **state)
{
	int st[2];

	(void)state;
	need_rdma();
	run_ranks(rank_killed, st, devs());
	assert_int_equal(st[0], -SIGKILL);
	assert_int_equal(st[1], 0);
}

static void test_misfit_refused(void **state)
{
	int st[2];

	(void)state;
	need_rdma();
	run_ranks(rank_misfit, st, devs());
	assert_int_equal(st[0], 0);
	assert_int_equal(st[1], 0);
}

/* Only where the test may take a port down and bring it back (the test VM),
 * and only when named: the paths need restoring after it. */
static void test_port_down(void **state)
{
	const char *nd = getenv("ACCDMA_TEST_RXE1_NETDEV"), *only = th_test_filter();
	char cmd[128];
	int st[2], up;

	(void)state;
	need_rdma();
	if (!nd || !*nd || !only || strcmp(only, "test_port_down"))
		skip();
	snprintf(cut_cmd, sizeof(cut_cmd), "/usr/sbin/ip link set dev %s down", nd);
	run_ranks(rank_cut_apart, st, devs());
	snprintf(cmd, sizeof(cmd), "/usr/sbin/ip link set dev %s up", nd);
	up = system(cmd);
	assert_int_equal(st[0], 0);
	assert_int_equal(st[1], 0);
	assert_int_equal(up, 0);
}

/* As test_port_down, named only: the join goes to rank 0's RDMA address,
 * so that its connection crosses the veth the test silences. */
static void test_host_silent(void **state)
{
	const char *nd0 = getenv("ACCDMA_TEST_RXE0_NETDEV"), *nd1 = getenv("ACCDMA_TEST_RXE1_NETDEV");
	const char *rxe0 = getenv("ACCDMA_TEST_RXE0"), *only = th_test_filter();
	char cmd[256];
	int st[2], back;

	(void)state;
	need_rdma();
	if (!nd0 || !nd1 || !rxe0 || !strchr(rxe0, '@') || !only || strcmp(only, "test_host_silent"))
		skip();
	master_addr = strchr(rxe0, '@') + 1;
	/* no port goes down, no queue pair errors: the join's connection,
	 * which crosses the veth here, just stops answering */
	snprintf(cut_cmd, sizeof(cut_cmd),
		 "/usr/sbin/tc qdisc add dev %s root netem loss 100%% && "
		 "/usr/sbin/tc qdisc add dev %s root netem loss 100%%", nd0, nd1);
	run_ranks(rank_cut_apart, st, devs());
	master_addr = "127.0.0.1";
	snprintf(cmd, sizeof(cmd), "/usr/sbin/tc qdisc del dev %s root; /usr/sbin/tc qdisc del dev %s root", nd0,
		 nd1);
	back = system(cmd);
	assert_int_equal(st[0], 0);
	assert_int_equal(st[1], 0);
	assert_int_equal(back, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transfers),
		cmocka_unit_test(test_failures),
		cmocka_unit_test(test_rank_killed),
		cmocka_unit_test(test_misfit_refused),
		cmocka_unit_test(test_port_down),
		cmocka_unit_test(test_host_silent),
	};
	const char *only = th_test_filter();
	int failed;
	FILE *con;

	port_base = 20000 + (int)(getpid() % 20000);
	failed = cmocka_run_group_tests(tests, NULL, NULL);
	/* In the test VM, say on its console that the cases ran (a skip also exits 0). */
	con = getenv("ACCDMA_TEST_RXE0") ? fopen("/dev/console", "w") : NULL;
	if (con) {
		fprintf(con, "VMTEST INFO test_verbs %s: on %s, %d failed\n", only ? only : "(all)", devs(), failed);
		fclose(con);
	}
	return failed;
}
