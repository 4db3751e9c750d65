/* SPDX-License-Identifier: MIT */
/*
 * test_truncation.c - size mismatches between a send and its recv.
 *
 *  - a send longer than its recv (by 1 byte, and by a lot): both complete
 *    ACCDMA_ST_TRUNCATED and the recv buffer, the bytes before it and the
 *    bytes after it keep their guard pattern; recv-first and send-first;
 *  - a send shorter than its recv: OK; the first bytes land, the rest of the
 *    recv range is untouched;
 *  - after a truncated pair the next pair on the same tag matches normally;
 *  - ops depending on a truncated recv or send are NOT_ATTEMPTED.
 *
 * Every send here is longer than the default eager_max (1 KiB), so both sides
 * meet at the rendezvous; a truncated eager send is in test_eager_order.
 */
#include "helpers/th.h"

#include <errno.h>
#include <unistd.h>

#define RLEN 2048 /* > ACCDMA_EAGER_MAX_DEFAULT */
#define SRC_SIZE (4 * RLEN)
#define SMALL 1536 /* the FIFO test's recv length: still above eager_max */
#define ROFF 128
#define GUARD 0xC7

struct pair {
	accdma_world *w;
	uint8_t *src, *dst;
	accdma_key ks, kd;
	uint64_t dst_size;
};

static void setup_pair(struct pair *p)
{
	p->w = th_open(2);
	p->dst_size = ROFF + 2 * RLEN + 512;
	p->ks = th_alloc(p->w, 0, SRC_SIZE, (void **)&p->src);
	p->kd = th_alloc(p->w, 1, p->dst_size, (void **)&p->dst);
	th_fill_pattern(p->src, SRC_SIZE, 7);
	th_fill_u8(p->dst, p->dst_size, GUARD);
}

static void run_truncated(uint64_t send_len, int recv_first)
{
	struct pair p;
	accdma_token s, r;

	setup_pair(&p);
	if (recv_first) {
		assert_int_equal(accdma_recv(th_q(p.w, 1), 0, 1, p.kd, ROFF, RLEN, NULL, 0, &r), 0);
		assert_int_equal(accdma_send(th_q(p.w, 0), 1, 1, p.ks, 0, send_len, NULL, 0, &s), 0);
	} else {
		assert_int_equal(accdma_send(th_q(p.w, 0), 1, 1, p.ks, 0, send_len, NULL, 0, &s), 0);
		assert_int_equal(accdma_recv(th_q(p.w, 1), 0, 1, p.kd, ROFF, RLEN, NULL, 0, &r), 0);
	}
	th_wait_st(p.w, r, ACCDMA_ST_TRUNCATED);
	th_wait_st(p.w, s, ACCDMA_ST_TRUNCATED);
	th_check_u8(p.dst, p.dst_size, GUARD, "recv region after a truncated transfer");
	th_check_pattern(p.src, SRC_SIZE, 7, "source unchanged");
	th_close(p.w);
}

static void test_longer_by_one(void **state)
{
	(void)state;
	run_truncated(RLEN + 1, 1);
	run_truncated(RLEN + 1, 0);
}

static void test_much_longer(void **state)
{
	(void)state;
	run_truncated(4 * RLEN, 1);
	run_truncated(4 * RLEN, 0);
}

static void test_shorter_send(void **state)
{
	(void)state;
	struct pair p;
	accdma_token s, r, s2, r2;

	setup_pair(&p);
	assert_int_equal(accdma_recv(th_q(p.w, 1), 0, 1, p.kd, ROFF, RLEN, NULL, 0, &r), 0);
	assert_int_equal(accdma_send(th_q(p.w, 0), 1, 1, p.ks, 0, RLEN - 100, NULL, 0, &s), 0);
	th_wait_ok(p.w, r);
	th_wait_ok(p.w, s);
	th_check_u8(p.dst, ROFF, GUARD, "before the recv range");
	th_check_pattern(p.dst + ROFF, RLEN - 100, 7, "short send data");
	th_check_u8(p.dst + ROFF + RLEN - 100, p.dst_size - ROFF - (RLEN - 100), GUARD,
		    "rest of the recv range and after");

	/* exactly equal */
	th_fill_u8(p.dst, p.dst_size, GUARD);
	assert_int_equal(accdma_send(th_q(p.w, 0), 1, 1, p.ks, 0, RLEN, NULL, 0, &s2), 0);
	assert_int_equal(accdma_recv(th_q(p.w, 1), 0, 1, p.kd, ROFF, RLEN, NULL, 0, &r2), 0);
	th_wait_ok(p.w, r2);
	th_wait_ok(p.w, s2);
	th_check_u8(p.dst, ROFF, GUARD, "before the recv range");
	th_check_pattern(p.dst + ROFF, RLEN, 7, "equal-size data");
	th_check_u8(p.dst + ROFF + RLEN, p.dst_size - ROFF - RLEN, GUARD, "after the recv range");
	th_close(p.w);
}

/* A recv longer than its send reports the bytes that landed (op_info.moved),
 * for an eager (8 bytes) and a rendezvous (RLEN - 100) send, recv posted first. */
static void test_landed_bytes(void **state)
{
	(void)state;
	const uint64_t lens[] = { 8, RLEN - 100 };

	for (int i = 0; i < 2; i++) {
		struct pair p;
		struct accdma_op_info info;
		accdma_token s, r;
		int tries = 0;

		setup_pair(&p);
		assert_int_equal(accdma_recv(th_q(p.w, 1), 0, 1, p.kd, ROFF, RLEN, NULL, 0, &r), 0);
		assert_int_equal(accdma_op_info(p.w, r, &info), 0);
		assert_int_equal(info.bytes, RLEN);
		assert_int_equal(info.moved, 0);
		assert_int_equal(accdma_send(th_q(p.w, 0), 1, 1, p.ks, 0, lens[i], NULL, 0, &s), 0);
		th_wait_ok(p.w, s);
		/* Look without consuming the token; bounded, the engines finish it. */
		do {
			assert_int_equal(accdma_op_info(p.w, r, &info), 0);
			if (info.stage != ACCDMA_STAGE_DONE)
				usleep(1000);
		} while (info.stage != ACCDMA_STAGE_DONE && ++tries < 10000);
		assert_int_equal(info.stage, ACCDMA_STAGE_DONE);
		assert_int_equal(info.status, ACCDMA_OK);
		assert_int_equal(info.bytes, RLEN);
		assert_int_equal(info.moved, lens[i]);
		th_wait_ok(p.w, r);
		th_check_pattern(p.dst + ROFF, lens[i], 7, "landed bytes");
		th_check_u8(p.dst + ROFF + lens[i], p.dst_size - ROFF - lens[i], GUARD, "after them");
		th_close(p.w);
	}
}

/* A truncated pair consumes one FIFO position on each side: the next send
 * on the tag lands in the next recv. Dependents of both truncated ops are
 * NOT_ATTEMPTED; an unrelated exec succeeds. */
static void test_fifo_after_truncation(void **state)
{
	(void)state;
	struct pair p;
	accdma_token s1, r1, s2, r2, dep_r, dep_s, other;
	static atomic_int ran_r, ran_s, ran_other;

	atomic_init(&ran_r, 0);
	atomic_init(&ran_s, 0);
	atomic_init(&ran_other, 0);
	setup_pair(&p);
	assert_int_equal(accdma_recv(th_q(p.w, 1), 0, 1, p.kd, ROFF, SMALL, NULL, 0, &r1), 0);
	assert_int_equal(accdma_exec(th_q(p.w, 1), th_flag_fn, &ran_r, &r1, 1, &dep_r), 0);
	assert_int_equal(accdma_recv(th_q(p.w, 1), 0, 1, p.kd, ROFF + SMALL, SMALL, NULL, 0, &r2), 0);
	assert_int_equal(accdma_exec(th_q(p.w, 1), th_flag_fn, &ran_other, NULL, 0, &other), 0);
	assert_int_equal(accdma_send(th_q(p.w, 0), 1, 1, p.ks, 0, SMALL + 1, NULL, 0, &s1), 0);
	assert_int_equal(accdma_exec(th_q(p.w, 0), th_flag_fn, &ran_s, &s1, 1, &dep_s), 0);
	assert_int_equal(accdma_send(th_q(p.w, 0), 1, 1, p.ks, 1000, SMALL, NULL, 0, &s2), 0);
	th_wait_st(p.w, r1, ACCDMA_ST_TRUNCATED);
	th_wait_st(p.w, s1, ACCDMA_ST_TRUNCATED);
	th_wait_st(p.w, dep_r, ACCDMA_ST_NOT_ATTEMPTED);
	th_wait_st(p.w, dep_s, ACCDMA_ST_NOT_ATTEMPTED);
	th_wait_ok(p.w, r2);
	th_wait_ok(p.w, s2);
	th_wait_ok(p.w, other);
	assert_int_equal(atomic_load(&ran_r), 0);
	assert_int_equal(atomic_load(&ran_s), 0);
	assert_int_equal(atomic_load(&ran_other), 1);
	th_check_u8(p.dst, ROFF + SMALL, GUARD, "truncated recv range untouched");
	/* second recv got bytes 1000..1000 + SMALL of the source pattern */
	{
		static uint8_t full[1000 + SMALL];

		th_fill_pattern(full, sizeof(full), 7);
		assert_memory_equal(p.dst + ROFF + SMALL, full + 1000, SMALL);
	}
	th_check_u8(p.dst + ROFF + 2 * SMALL, p.dst_size - ROFF - 2 * SMALL, GUARD,
		    "after the second recv");
	th_close(p.w);
}

/* One-sided write past the end of the target region: OUT_OF_BOUNDS, target untouched. */
static void test_write_past_end(void **state)
{
	(void)state;
	struct pair p;
	accdma_token t;

	setup_pair(&p);
	assert_int_equal(accdma_write(th_q(p.w, 0), 1, p.ks, 0, 64, p.kd, p.dst_size - 63, NULL, 0,
				      &t),
			 0);
	th_wait_st(p.w, t, ACCDMA_ST_OUT_OF_BOUNDS);
	th_check_u8(p.dst, p.dst_size, GUARD, "write target");
	assert_int_equal(accdma_write(th_q(p.w, 0), 1, p.ks, 0, 64, p.kd, p.dst_size - 64, NULL, 0,
				      &t),
			 0);
	th_wait_ok(p.w, t);
	th_check_u8(p.dst, p.dst_size - 64, GUARD, "before the write");
	th_check_pattern(p.dst + p.dst_size - 64, 64, 7, "write at the very end");
	th_close(p.w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_longer_by_one),
		cmocka_unit_test(test_much_longer),
		cmocka_unit_test(test_shorter_send),
		cmocka_unit_test(test_landed_bytes),
		cmocka_unit_test(test_fifo_after_truncation),
		cmocka_unit_test(test_write_past_end),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
