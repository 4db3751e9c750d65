// SPDX-License-Identifier: MIT
/*
 * test_fault.c - every fault-injection point fails its op cleanly.
 *
 * A fault at a site completes the op there with an error status, moves no
 * byte (the destination keeps its guard pattern), fails the matching op on
 * the peer with PEER_ERROR, leaves dependents NOT_ATTEMPTED, and the device
 * goes on working: the next transfer on the same tag succeeds.
 */
#include <errno.h>
#include <stdlib.h>

#include "helpers/th.h"
#include "fw_stub/fw.h"

#define LEN 2048 /* above eager_max (1 KiB): sends wait for their recvs */

struct pair {
	accdma_world *w;
	accdma_key src, dst;
	uint8_t *s, *d;
	uint32_t fetch_fault; /* arm the fetch site with this just before posting the send */
};

static void setup(struct pair *p)
{
	p->w = th_open(2);
	p->fetch_fault = 0;
	p->src = th_alloc(p->w, 0, LEN, (void **)&p->s);
	p->dst = th_alloc(p->w, 1, LEN, (void **)&p->d);
	th_fill_pattern(p->s, LEN, 5);
	th_fill_u8(p->d, LEN, 0xee);
}

/* One send/recv with an exec chained on the recv; expected statuses given. */
static void transfer(struct pair *p, enum accdma_status send_st, enum accdma_status recv_st,
		     enum accdma_status exec_st)
{
	atomic_int ran = 0;
	accdma_token s, r, e;

	assert_int_equal(accdma_recv(th_q(p->w, 1), 0, 3, p->dst, 0, LEN, NULL, 0, &r), 0);
	assert_int_equal(accdma_exec(th_q(p->w, 1), th_flag_fn, &ran, &r, 1, &e), 0);
	/* Device 1 has read the recv and exec before the send exists, so an armed
	 * fetch fault hits the send, deterministically. */
	th_kick(p->w, 1, 1);
	fw_fault_arm(FW_FAULT_FETCH, p->fetch_fault);
	p->fetch_fault = 0;
	assert_int_equal(accdma_send(th_q(p->w, 0), 1, 3, p->src, 0, LEN, NULL, 0, &s), 0);
	th_wait_st(p->w, s, send_st);
	th_wait_st(p->w, r, recv_st);
	th_wait_st(p->w, e, exec_st);
	assert_int_equal(atomic_load(&ran), exec_st == ACCDMA_OK);
}

static void test_fault_fetch(void **state)
{
	struct pair p;

	(void)state;
	setup(&p);
	p.fetch_fault = 1; /* the send's descriptor */
	transfer(&p, ACCDMA_ST_DMA_ERROR, ACCDMA_ST_PEER_ERROR, ACCDMA_ST_NOT_ATTEMPTED);
	th_check_u8(p.d, LEN, 0xee, "recv buffer after a fetch fault");
	transfer(&p, ACCDMA_OK, ACCDMA_OK, ACCDMA_OK);
	th_check_pattern(p.d, LEN, 5, "recv buffer after recovery");
	th_close(p.w);
}

static void test_fault_match(void **state)
{
	struct pair p;

	(void)state;
	setup(&p);
	fw_fault_arm(FW_FAULT_MATCH, 1);
	transfer(&p, ACCDMA_ST_DMA_ERROR, ACCDMA_ST_DMA_ERROR, ACCDMA_ST_NOT_ATTEMPTED);
	th_check_u8(p.d, LEN, 0xee, "recv buffer after a match fault");
	transfer(&p, ACCDMA_OK, ACCDMA_OK, ACCDMA_OK);
	th_check_pattern(p.d, LEN, 5, "recv buffer after recovery");
	th_close(p.w);
}

static void test_fault_copy(void **state)
{
	struct pair p;
	accdma_token t;

	(void)state;
	setup(&p);
	dma_fault_arm(DMA_FAULT_COPY, 1);
	transfer(&p, ACCDMA_ST_DMA_ERROR, ACCDMA_ST_DMA_ERROR, ACCDMA_ST_NOT_ATTEMPTED);
	th_check_u8(p.d, LEN, 0xee, "recv buffer after a copy fault");
	dma_fault_arm(DMA_FAULT_COPY, 1);
	assert_int_equal(accdma_write(th_q(p.w, 0), 1, p.src, 0, LEN, p.dst, 0, NULL, 0, &t), 0);
	th_wait_st(p.w, t, ACCDMA_ST_DMA_ERROR);
	th_check_u8(p.d, LEN, 0xee, "write target after a copy fault");
	assert_int_equal(accdma_write(th_q(p.w, 0), 1, p.src, 0, LEN, p.dst, 0, NULL, 0, &t), 0);
	th_wait_ok(p.w, t);
	th_check_pattern(p.d, LEN, 5, "write target after recovery");
	th_close(p.w);
}

static void test_fault_exec_and_zero(void **state)
{
	struct accdma_pair pairs[1] = { { 0, 0 } }; /* device 1 is no target: it gets zeros */
	struct pair p;
	atomic_int ran = 0;
	accdma_token e, t;

	(void)state;
	setup(&p);
	fw_fault_arm(FW_FAULT_EXEC, 1);
	assert_int_equal(accdma_exec(th_q(p.w, 1), th_flag_fn, &ran, NULL, 0, &e), 0);
	th_wait_st(p.w, e, ACCDMA_ST_EXEC_FAILED);
	dma_fault_arm(DMA_FAULT_ZERO, 1);
	assert_int_equal(accdma_permute(th_q(p.w, 1), pairs, 1, 4, p.dst, 0, p.dst, 0, LEN, NULL, 0, &t), 0);
	th_wait_st(p.w, t, ACCDMA_ST_DMA_ERROR); /* a non-target's only op is its zero-fill */
	th_check_u8(p.d, LEN, 0xee, "zero-fill target after a fault");
	assert_int_equal(accdma_permute(th_q(p.w, 1), pairs, 1, 4, p.dst, 0, p.dst, 0, LEN, NULL, 0, &t), 0);
	th_wait_ok(p.w, t);
	th_check_u8(p.d, LEN, 0, "zero-fill target after recovery");
	th_close(p.w);
}

/* ACCDMA_FAULT arms sites at open; a malformed value refuses to open. */
static void test_fault_env(void **state)
{
	struct accdma_world_opts o;
	accdma_world *w = NULL;
	struct pair p;

	(void)state;
	th_opts(&o, 2);
	setenv("ACCDMA_FAULT", "copy:0x", 1);
	assert_int_equal(accdma_world_open(&o, &w), -EINVAL);
	setenv("ACCDMA_FAULT", "nosuchsite:1", 1);
	assert_int_equal(accdma_world_open(&o, &w), -EINVAL);
	setenv("ACCDMA_FAULT", "match:2", 1);
	setup(&p);
	unsetenv("ACCDMA_FAULT");
	transfer(&p, ACCDMA_OK, ACCDMA_OK, ACCDMA_OK);
	th_fill_u8(p.d, LEN, 0xee);
	transfer(&p, ACCDMA_ST_DMA_ERROR, ACCDMA_ST_DMA_ERROR, ACCDMA_ST_NOT_ATTEMPTED);
	th_check_u8(p.d, LEN, 0xee, "recv buffer after the second transfer's fault");
	th_close(p.w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fault_fetch),
		cmocka_unit_test(test_fault_match),
		cmocka_unit_test(test_fault_copy),
		cmocka_unit_test(test_fault_exec_and_zero),
		cmocka_unit_test(test_fault_env),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
