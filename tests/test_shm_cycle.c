/* SPDX-License-Identifier: MIT */
/*
 * test_shm_cycle.c - a wait-for cycle across processes is named.
 *
 * Two ranks of a shm world, the deadlock a runtime builds when every device
 * receives before it sends and the send waits for the recv: each rank posts
 * a recv from the other and a send to it that depends on that recv. Each
 * rank's accdma_find_cycle() must name both devices (each process reads the
 * other's pending ops from the arena), where before it saw only its own
 * device's edge and found nothing. Then the ranks meet at a barrier (so
 * neither takes its ops away while the other still looks), cancel their
 * recvs (each CANCELED, or PEER_ERROR if the other's canceled chain got
 * there first; the sends complete NOT_ATTEMPTED) and close.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "shm_th.h"

static int rank_main(int rank, int port)
{
	struct accdma_world_opts o;
	accdma_world *w = NULL;
	accdma_queue *q;
	accdma_key k;
	accdma_token r, s, b;
	enum accdma_status st;
	int peer = 1 - rank, cyc[8], len = 0;
	uint64_t end;

	sc_opts(&o, rank, 2, port, 20000);
	SC_CHECK(accdma_world_open(&o, &w) == 0, "open");
	SC_CHECK(accdma_mem_alloc(w, rank, 4096, &k) == 0, "alloc");
	SC_CHECK(accdma_queue_get(w, rank, 0, &q) == 0, "queue");
	SC_CHECK(accdma_recv(q, peer, 1, k, 0, 4096, NULL, 0, &r) == 0, "recv");
	SC_CHECK(accdma_send(q, peer, 1, k, 0, 4096, &r, 1, &s) == 0, "send");
	/* Hang guard only: the peer's ops show once it has posted them and its engine looked. */
	for (end = shm_now_ms() + 20000; shm_now_ms() < end && len != 2;) {
		len = accdma_find_cycle(w, cyc, 8);
		SC_CHECK(len >= 0, "accdma_find_cycle = %d", len);
		if (len != 2)
			poll(NULL, 0, 5);
	}
	SC_CHECK(len == 2, "no cycle of both devices found (length %d)", len);
	SC_CHECK((cyc[0] == 0 && cyc[1] == 1) || (cyc[0] == 1 && cyc[1] == 0), "cycle %d -> %d", cyc[0],
		 cyc[1]);
	SC_CHECK(accdma_barrier(q, NULL, 0, &b) == 0, "barrier");
	sc_wait_ok(w, b);
	SC_CHECK(accdma_cancel(w, r) == 0, "cancel");
	st = sc_wait(w, r);
	/* canceled here, or failed first by the peer's canceled chain (its send
	 * was not attempted, and told us so) */
	SC_CHECK(st == ACCDMA_ST_CANCELED || st == ACCDMA_ST_PEER_ERROR, "recv %s", accdma_status_str(st));
	st = sc_wait(w, s);
	SC_CHECK(st == ACCDMA_ST_NOT_ATTEMPTED, "send %s", accdma_status_str(st));
	SC_CHECK(accdma_world_close(w) == 0, "close");
	return 0;
}

static void test_cycle_across_processes(void **state)
{
	struct shm_run r;

	(void)state;
	shm_run_init(&r, 2);
	shm_spawn(&r, "cycle", 0, 0);
	shm_spawn(&r, "cycle", 1, 0);
	assert_int_equal(shm_reap(&r, 60000), 0);
	assert_int_equal(shm_code(&r, 0), 0);
	assert_int_equal(shm_code(&r, 1), 0);
	shm_run_end(&r);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cycle_across_processes),
	};

	if (argc == 7 && !strcmp(argv[1], "--shm-child")) {
		sc_rank = atoi(argv[3]);
		return rank_main(sc_rank, atoi(argv[5]));
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
