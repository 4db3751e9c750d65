/* SPDX-License-Identifier: MIT */
/*
 * test_verbs_cut.c - ranks cut apart on real RDMA devices, each case run only
 * when named, in the test VM, which sets up what it breaks and mends it after
 * (tests/vm/guest-verbs.sh; without an active RDMA device every case is
 * skipped, and named without the VM's set-up it fails):
 *
 *  - test_port_down: a port taken down while both ranks wait for each other
 *    (ACCDMA_TEST_RXE1_NETDEV, rank 1's veth; its peer loses its carrier
 *    too): every op with the other, waiting or posted later, completes
 *    PEER_LOST, and both close;
 *  - test_host_silent: the same with the link silenced both ways instead
 *    (no port down, no error anywhere): the join's connection, kept alive by
 *    keepalive and a user timeout of ACCDMA_PEER_TIMEOUT_MS, is what notices;
 *  - test_port_relayed: three ranks, rank 1 alone on a port of its own
 *    (ACCDMA_TEST_RXE2) that it takes down; rank 0 hears it from rank 1, and
 *    rank 2 only through rank 0, while rank 1 stays alive; ranks 0 and 2
 *    still exchange data after;
 *  - test_path_one_way: rank 1's packets to the others dropped (netem on
 *    rxe2's netdev), those to it not: every open fails, and every rank,
 *    rank 1 too (whose own check passed), says which pair had no path.
 */
#include "verbs_th.h"

/* What rank 1 runs to cut the ranks apart (rank_cut_apart()); set before the ranks start. */
static char cut_cmd[256];

/* Once both ranks have ops waiting for each other (a recv and a large send
 * each, neither ever matched), rank 1 runs cut_cmd; every op with the
 * other, waiting or posted later, must end PEER_LOST, and both close. */
static void rank_cut_apart(int rank)
{
	int peer = 1 - rank;
	accdma_world *w;
	accdma_queue *q;
	accdma_key k;
	accdma_token t[3];

	setenv("ACCDMA_PEER_TIMEOUT_MS", "3000", 1);
	w = rank_joined(rank, &q, &k);
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

/* Rank 2 says here that its ops with rank 1 ended; rank 1 stays open until then. */
static int relay_pipe[2] = { -1, -1 };

/* Three ranks, rank 1 alone on a port that rank 1 takes down (cut_cmd):
 * only rank 1's device reports it. Rank 0 hears it from rank 1 and tells
 * rank 2, whose recv from rank 1 and waiting send to it must end
 * PEER_LOST while rank 1 is still alive (so its exit is not what tells);
 * ranks 0 and 2 then still exchange data, and all three close. */
static void rank_relayed(int rank)
{
	accdma_world *w;
	accdma_queue *q;
	accdma_key k;
	accdma_token t[4];
	uint64_t got = 0;
	enum accdma_status st;
	char *p, c = 0;

	setenv("ACCDMA_PEER_TIMEOUT_MS", "3000", 1);
	if (rank != 2)
		close(relay_pipe[1]);
	if (rank != 1)
		close(relay_pipe[0]);
	w = rank_joined(rank, &q, &k);
	if (rank == 1) {
		CHECK(accdma_recv(q, 2, 50, k, 0, BIG, NULL, 0, &t[0]) == 0);
		usleep(300000);
		CHECK(system(cut_cmd) == 0);
		CHECK(wait_st(w, t[0], NULL) == ACCDMA_ST_PEER_LOST);
		CHECK(read(relay_pipe[0], &c, 1) == 1 && c == 'L');
		CHECK(accdma_world_close(w) == 0);
		_exit(0);
	}
	p = accdma_mem_ptr(w, rank, k, NULL);
	CHECK(p != NULL);
	if (rank == 0) { /* told by rank 1 itself */
		CHECK(accdma_recv(q, 1, 53, k, 0, BIG, NULL, 0, &t[0]) == 0);
		CHECK(wait_st(w, t[0], NULL) == ACCDMA_ST_PEER_LOST);
	}
	if (rank == 2) {
		CHECK(accdma_recv(q, 1, 51, k, 0, BIG, NULL, 0, &t[0]) == 0);
		CHECK(accdma_send(q, 1, 52, k, 0, BIG, NULL, 0, &t[1]) == 0); /* never matched */
		CHECK(wait_st(w, t[0], NULL) == ACCDMA_ST_PEER_LOST);
		CHECK(wait_st(w, t[1], NULL) == ACCDMA_ST_PEER_LOST);
		CHECK(write(relay_pipe[1], "L", 1) == 1);
	}
	/* ranks 0 and 2: one 1 MiB exchange each way, data checked */
	memset(p, 'a' + rank, BIG / 2);
	CHECK(accdma_send(q, 2 - rank, 60 + rank, k, 0, BIG / 2, NULL, 0, &t[2]) == 0);
	CHECK(accdma_recv(q, 2 - rank, 62 - rank, k, BIG / 2, BIG / 2, NULL, 0, &t[3]) == 0);
	st = wait_st(w, t[2], NULL);
	if (st != ACCDMA_OK)
		fprintf(stderr, "rank %d: send to %d: %s\n", rank, 2 - rank, accdma_status_str(st));
	CHECK(st == ACCDMA_OK);
	st = wait_st(w, t[3], &got);
	if (st != ACCDMA_OK || got != BIG / 2)
		fprintf(stderr, "rank %d: recv from %d: %s, %llu bytes\n", rank, 2 - rank, accdma_status_str(st),
			(unsigned long long)got);
	CHECK(st == ACCDMA_OK && got == BIG / 2);
	for (uint32_t i = 0; i < BIG / 2; i += 4093)
		CHECK(p[BIG / 2 + i] == 'a' + 2 - rank);
	CHECK(accdma_world_close(w) == 0);
	_exit(0);
}

/* Rank 1's packets are dropped on their way out (cut_cmd ran before the
 * ranks started), so its pings never arrive while those to it do: rank 1's
 * own check passes, ranks 0 and 2 find no path from rank 1. Every open
 * fails, and every rank, rank 1 too, says which pair had no path. */
static void rank_one_way(int rank)
{
	char text[1024];
	accdma_world *w;
	int rc;

	setenv("ACCDMA_PEER_TIMEOUT_MS", "3000", 1);
	w = rank_open_said(rank, &rc, text, sizeof(text));
	if (!strstr(text, "no ping") || !strstr(text, "rank 1 (rxe2"))
		fprintf(stderr, "rank %d (rc %d) said: '%s'\n", rank, rc, text);
	CHECK(rc == -EHOSTUNREACH && !w);
	CHECK(strstr(text, "did not open") && strstr(text, "no ping through their queue pair"));
	CHECK(strstr(text, "rank 1 (rxe2"));
	_exit(0);
}

/* Only where the test may take a port down and bring it back (the test VM),
 * and only when named: the paths need restoring after it. */
static void test_port_down(void **state)
{
	const char *nd = getenv("ACCDMA_TEST_RXE1_NETDEV");
	char cmd[128];
	int st[2], up;

	(void)state;
	need_rdma();
	if (!named("test_port_down", nd))
		skip();
	snprintf(cut_cmd, sizeof(cut_cmd), "/usr/sbin/ip link set dev %s down", nd);
	run_ranks(rank_cut_apart, st, devs());
	snprintf(cmd, sizeof(cmd), "/usr/sbin/ip link set dev %s up", nd);
	up = system(cmd);
	assert_int_equal(st[0], 0);
	assert_int_equal(st[1], 0);
	assert_int_equal(up, 0);
}

/* The devices of the cases on the third port, when @name is the case named
 * (else skip): rank 1 on rxe2, ranks 0 and 2 on rxe0, in @list; @nd: rxe2's
 * netdev. */
static void third_port(const char *name, char *list, size_t len, const char **nd)
{
	const char *dev = getenv("ACCDMA_TEST_RXE2"), *d0 = getenv("ACCDMA_TEST_RXE0");

	*nd = getenv("ACCDMA_TEST_RXE2_NETDEV");
	need_rdma();
	if (!named(name, *nd) || !named(name, dev) || !named(name, d0))
		skip();
	snprintf(list, len, "%.*s,%.*s,%.*s", (int)strcspn(d0, "@"), d0, (int)strcspn(dev, "@"), dev,
		 (int)strcspn(d0, "@"), d0);
}

/* Named only, where the test VM made rank 1's port of its own
 * (ACCDMA_TEST_RXE2, on a macvlan of veth1: taking it down leaves the veth
 * pair and the other ports up): the port-down that only one rank's device
 * reports reaches the third rank through rank 0. */
static void test_port_relayed(void **state)
{
	const char *nd;
	char cmd[128], list[96];
	int st[3], up;

	(void)state;
	third_port("test_port_relayed", list, sizeof(list), &nd);
	snprintf(cut_cmd, sizeof(cut_cmd), "/usr/sbin/ip link set dev %s down", nd);
	assert_int_equal(pipe(relay_pipe), 0);
	run_n_ranks(rank_relayed, 3, st, list);
	close(relay_pipe[0]);
	close(relay_pipe[1]);
	snprintf(cmd, sizeof(cmd), "/usr/sbin/ip link set dev %s up", nd);
	up = system(cmd);
	assert_int_equal(st[0], 0);
	assert_int_equal(st[1], 0);
	assert_int_equal(st[2], 0);
	assert_int_equal(up, 0);
}

/* As test_port_down, named only: the join goes to rank 0's RDMA address,
 * so that its connection crosses the veth the test silences. */
static void test_host_silent(void **state)
{
	const char *nd0 = getenv("ACCDMA_TEST_RXE0_NETDEV"), *nd1 = getenv("ACCDMA_TEST_RXE1_NETDEV");
	const char *rxe0 = getenv("ACCDMA_TEST_RXE0");
	char cmd[256];
	int st[2], back;

	(void)state;
	need_rdma();
	if (!named("test_host_silent", nd0) || !named("test_host_silent", nd1) ||
	    !named("test_host_silent", rxe0 && strchr(rxe0, '@') ? rxe0 : NULL))
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

/* Named only, with rxe2 set up as for test_port_relayed: a path that works
 * one way only fails the open on every rank, each saying why. */
static void test_path_one_way(void **state)
{
	const char *nd;
	char cmd[128], list[96];
	int st[3], lost, back;

	(void)state;
	third_port("test_path_one_way", list, sizeof(list), &nd);
	snprintf(cmd, sizeof(cmd), "/usr/sbin/tc qdisc add dev %s root netem loss 100%%", nd);
	lost = system(cmd);
	if (!lost)
		run_n_ranks(rank_one_way, 3, st, list);
	snprintf(cmd, sizeof(cmd), "/usr/sbin/tc qdisc del dev %s root", nd);
	back = system(cmd);
	assert_int_equal(lost, 0);
	assert_int_equal(st[0], 0);
	assert_int_equal(st[1], 0);
	assert_int_equal(st[2], 0);
	assert_int_equal(back, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_port_down),
		cmocka_unit_test(test_host_silent),
		cmocka_unit_test(test_port_relayed),
		cmocka_unit_test(test_path_one_way),
	};

	return verbs_th_run("test_verbs_cut", tests, sizeof(tests) / sizeof(tests[0]));
}
