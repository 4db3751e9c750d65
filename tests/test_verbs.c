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
 *  - a rank that closes as soon as its send is done, cleared late: its
 *    finish and its goodbye race to the receiver, whose recv must still
 *    complete OK with every byte (eight times over); and the same with the
 *    race made to happen (fw_race_set(FW_RACE_PASS)): the receiver's engine
 *    stands between serving its messages and moving its queues while the
 *    finish lands and the goodbye comes;
 *  - three ranks, one of which says in another's name that its send
 *    failed: the lie is dropped, and the real send arrives whole;
 *  - a rank of another shape cannot join: both opens fail and say why;
 *  - a wrong GID (in the test VM: index 0, the link-local one, which no
 *    route carries there): both opens fail, and each rank says which pair
 *    of ranks and devices had no path;
 *  - no inline sends (ACCDMA_IB_MAX_INLINE=0, as on a device without
 *    them): the transfers, and the close right after a send; a bad value
 *    fails the open, naming it.
 * The cases that break the paths between the ranks: test_verbs_cut.c.
 */
#include "verbs_th.h"

#include <stdatomic.h>

#include "driver/internal.h"
#include "driver/verbs/verbs.h"
#include "fw_stub/fw.h"

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

/* Both ranks take GID index 0 (ACCDMA_IB_GID_INDEX): a link-local GID,
 * which nothing routes in the test VM (its veths have no IPv6). Both opens
 * must fail, each saying on stderr (caught here) which pair of ranks and
 * devices had no path. */
static void rank_unreachable(int rank)
{
	char text[1024];
	accdma_world *w;
	int rc;

	setenv("ACCDMA_IB_GID_INDEX", "0", 1);
	setenv("ACCDMA_PEER_TIMEOUT_MS", "3000", 1);
	w = rank_open_said(rank, &rc, text, sizeof(text));
	if (!strstr(text, "did not open") || !strstr(text, "rank 0 (rxe0") || !strstr(text, "rank 1 (rxe1"))
		fprintf(stderr, "rank %d said: '%s'\n", rank, text);
	CHECK(rc == -EHOSTUNREACH && !w);
	CHECK(strstr(text, "did not open") && strstr(text, "(wrong GID index, or no route between the ports?)"));
	CHECK(strstr(text, "rank 0 (rxe0") && strstr(text, "rank 1 (rxe1"));
	_exit(0);
}

/* Rank 1's engine, once armed, stands in every pass after serving its
 * messages until rank 0 is marked lost (0.7 s at most, under the drain's 1 s). */
struct hold {
	accdma_world *w;
	atomic_int armed, held;
};

static void hold_until_lost(uint32_t dev, uint32_t engine, void *arg)
{
	struct hold *h = arg;

	(void)dev;
	(void)engine;
	if (!atomic_load(&h->armed))
		return;
	for (int i = 0; i < 70 && atomic_load(&q_dev(&h->w->a, 0)->lost) == Q_DEV_ALIVE; i++)
		usleep(10000);
	atomic_fetch_add(&h->held, 1);
}

/* Rank 0 sends half of BIG; rank 1 posts its recv only later, so the
 * clearance reaches rank 0 late: it writes, sends its finish, and closes
 * as soon as its send is done. The finish and the goodbye race to rank 1,
 * whose recv must complete OK with every byte: what a peer sent before it
 * closed is served first. With @h, rank 1's engine stands in the race
 * point hold_until_lost() once its recv is posted. */
static void close_after_send(int rank, struct hold *h)
{
	accdma_queue *q;
	accdma_key k;
	accdma_token t;
	accdma_world *w = rank_joined(rank, &q, &k);
	enum accdma_status st;
	uint8_t *p = accdma_mem_ptr(w, rank, k, NULL);
	uint64_t got = 0;

	CHECK(p != NULL);
	if (rank == 0) {
		for (uint32_t i = 0; i < BIG / 2; i++)
			p[i] = (uint8_t)(i * 7 + 1);
		CHECK(accdma_send(q, 1, 70, k, 0, BIG / 2, NULL, 0, &t) == 0);
		CHECK(wait_st(w, t, NULL) == ACCDMA_OK);
		CHECK(accdma_world_close(w) == 0);
		_exit(0);
	}
	if (h) {
		h->w = w;
		fw_race_set(FW_RACE_PASS, hold_until_lost, h);
	}
	usleep(200000); /* rank 0's announcement is filed by now */
	if (h)
		atomic_store(&h->armed, 1);
	CHECK(accdma_recv(q, 0, 70, k, 0, BIG / 2, NULL, 0, &t) == 0);
	st = wait_st(w, t, &got);
	if (st != ACCDMA_OK || got != BIG / 2)
		fprintf(stderr, "rank 1: recv: %s, %llu bytes\n", accdma_status_str(st), (unsigned long long)got);
	CHECK(st == ACCDMA_OK && got == BIG / 2);
	for (uint32_t i = 0; i < BIG / 2; i++)
		CHECK(p[i] == (uint8_t)(i * 7 + 1));
	if (h) { /* the engine stood there, and rank 0 is lost once the drain ends (3 s: a hang guard) */
		for (int i = 0; i < 300 && atomic_load(&q_dev(&w->a, 0)->lost) == Q_DEV_ALIVE; i++)
			usleep(10000);
		CHECK(atomic_load(&h->held) > 0 && atomic_load(&q_dev(&w->a, 0)->lost) != Q_DEV_ALIVE);
		atomic_store(&h->armed, 0);
	}
	CHECK(accdma_world_close(w) == 0);
	_exit(0);
}

static void rank_close_after_send(int rank)
{
	close_after_send(rank, NULL);
}

/* The race made to happen: rank 1's engine has looked for messages and
 * stands before its queues while rank 0's finish lands and its goodbye
 * comes. Marking rank 0 lost at once would end the recv PEER_LOST with
 * every byte in place. */
static void rank_goodbye_mid_pass(int rank)
{
	static struct hold h;

	close_after_send(rank, &h);
}

/* Three ranks: rank 1 says, in rank 2's name, that rank 2's send to rank 0
 * failed (SFAIL, for the first few sends of the tag); then rank 2 really
 * sends. A process may speak only for its own devices: rank 0 drops the
 * lie, and its recv from rank 2 completes OK with rank 2's bytes. */
static void rank_impersonated(int rank)
{
	accdma_queue *q;
	accdma_key k;
	accdma_token t;
	accdma_world *w = rank_joined(rank, &q, &k);
	enum accdma_status st;
	uint8_t *p = accdma_mem_ptr(w, rank, k, NULL);
	uint64_t got = 0;

	CHECK(p != NULL);
	if (rank == 1) {
		for (uint64_t seq = 0; seq < 4; seq++) {
			struct q_msg m;

			memset(&m, 0, sizeof(m));
			m.type = Q_MSG_SFAIL;
			m.src = 2;
			m.dst = 0;
			m.tag = 80;
			m.seq = seq;
			m.status = ACCDMA_ST_PEER_ERROR;
			CHECK(vb_ctl_send(vb_of(w), 0, &m) == 0);
		}
		usleep(100000);
	}
	CHECK(accdma_barrier(q, NULL, 0, &t) == 0 && wait_st(w, t, NULL) == ACCDMA_OK);
	if (rank == 2) {
		for (uint32_t i = 0; i < 4096; i++)
			p[i] = (uint8_t)(i * 3 + 5);
		CHECK(accdma_send(q, 0, 80, k, 0, 4096, NULL, 0, &t) == 0);
		CHECK(wait_st(w, t, NULL) == ACCDMA_OK);
	} else if (rank == 0) {
		CHECK(accdma_recv(q, 2, 80, k, 0, 4096, NULL, 0, &t) == 0);
		st = wait_st(w, t, &got);
		if (st != ACCDMA_OK || got != 4096)
			fprintf(stderr, "rank 0: recv from rank 2: %s, %llu bytes\n", accdma_status_str(st),
				(unsigned long long)got);
		CHECK(st == ACCDMA_OK && got == 4096);
		for (uint32_t i = 0; i < 4096; i++)
			CHECK(p[i] == (uint8_t)(i * 3 + 5));
	}
	CHECK(accdma_barrier(q, NULL, 0, &t) == 0 && wait_st(w, t, NULL) == ACCDMA_OK);
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

static void test_transfers(void **state)
{
	(void)state;
	need_rdma();
	run_ranks_ok(rank_transfers);
}

static void test_failures(void **state)
{
	(void)state;
	need_rdma();
	run_ranks_ok(rank_failures);
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
	(void)state;
	need_rdma();
	run_ranks_ok(rank_misfit);
}

/* The race of a finish and a goodbye, run a few times over. */
static void test_close_after_send(void **state)
{
	(void)state;
	need_rdma();
	for (int i = 0; i < 8; i++)
		run_ranks_ok(rank_close_after_send);
}

static void test_goodbye_mid_pass(void **state)
{
	(void)state;
	need_rdma();
	run_ranks_ok(rank_goodbye_mid_pass);
}

static void test_impersonated(void **state)
{
	int st[3];

	(void)state;
	need_rdma();
	run_n_ranks(rank_impersonated, 3, st, devs());
	for (int r = 0; r < 3; r++)
		assert_int_equal(st[r], 0);
}

/* Every message from a send buffer, as on a device that takes nothing
 * inline: the transfers, and a close right after a send, flushed all the same. */
static void test_no_inline(void **state)
{
	(void)state;
	need_rdma();
	setenv("ACCDMA_IB_MAX_INLINE", "0", 1);
	run_ranks_ok(rank_transfers);
	for (int i = 0; i < 8; i++)
		run_ranks_ok(rank_close_after_send);
}

static int inline_default(void **state)
{
	(void)state;
	unsetenv("ACCDMA_IB_MAX_INLINE");
	return 0;
}

/* A bad ACCDMA_IB_MAX_INLINE fails the open on each rank, naming it. */
static void rank_inline_bad(int rank)
{
	char text[512];
	int rc;
	accdma_world *w;

	setenv("ACCDMA_IB_MAX_INLINE", rank ? "-1" : "lots", 1);
	w = rank_open_said(rank, &rc, text, sizeof(text));
	if (!strstr(text, "ACCDMA_IB_MAX_INLINE="))
		fprintf(stderr, "rank %d said: %s\n", rank, text);
	CHECK(rc == -EINVAL && !w && strstr(text, rank ? "ACCDMA_IB_MAX_INLINE=-1" : "ACCDMA_IB_MAX_INLINE=lots"));
	_exit(0);
}

static void test_inline_bad(void **state)
{
	(void)state;
	need_rdma();
	run_ranks_ok(rank_inline_bad);
}

/* In the test VM only: elsewhere a link-local GID may well route. */
static void test_wrong_gid(void **state)
{
	(void)state;
	need_rdma();
	if (!getenv("ACCDMA_TEST_RXE0_NETDEV"))
		skip();
	run_ranks_ok(rank_unreachable);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transfers),
		cmocka_unit_test(test_failures),
		cmocka_unit_test(test_rank_killed),
		cmocka_unit_test(test_close_after_send),
		cmocka_unit_test(test_goodbye_mid_pass),
		cmocka_unit_test(test_impersonated),
		cmocka_unit_test(test_misfit_refused),
		cmocka_unit_test(test_wrong_gid),
		cmocka_unit_test_teardown(test_no_inline, inline_default),
		cmocka_unit_test(test_inline_bad),
	};

	return verbs_th_run("test_verbs", tests, sizeof(tests) / sizeof(tests[0]));
}
