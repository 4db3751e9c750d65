// SPDX-License-Identifier: MIT
/*
 * test_mem_free.c - a region cannot be freed from under a pending op.
 *
 * Engines keep resolved addresses of pending ops, so freeing a region that a
 * posted, unfinished op names would let the engine write into unmapped (or
 * reused) memory. accdma_mem_free() says -EBUSY instead; once the ops are
 * done it frees, and later ops naming the key complete BAD_KEY.
 */
#include <errno.h>

#include "helpers/th.h"

static void test_free_busy_recv(void **state)
{
	accdma_world *w = th_open(2);
	uint8_t *src;
	accdma_key ks = th_alloc(w, 0, 128, (void **)&src);
	accdma_key kd = th_alloc(w, 1, 128, NULL);
	accdma_token r, s;

	(void)state;
	th_fill_pattern(src, 128, 3);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 1, kd, 0, 128, NULL, 0, &r), 0);
	th_kick(w, 1, 1); /* the engine has read (and resolved) the recv */
	assert_int_equal(accdma_mem_free(w, 1, kd), -EBUSY);
	assert_non_null(accdma_mem_ptr(w, 1, kd, NULL)); /* still there */
	assert_int_equal(accdma_send(th_q(w, 0), 1, 1, ks, 0, 128, NULL, 0, &s), 0);
	th_wait_ok(w, r);
	th_wait_ok(w, s);
	th_check_pattern(accdma_mem_ptr(w, 1, kd, NULL), 128, 3, "recv buffer");
	assert_int_equal(accdma_mem_free(w, 1, kd), 0);
	assert_null(accdma_mem_ptr(w, 1, kd, NULL));
	assert_int_equal(accdma_mem_free(w, 1, kd), -ENOENT);
	/* the freed key is stale now */
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 2, kd, 0, 128, NULL, 0, &r), 0);
	th_wait_st(w, r, ACCDMA_ST_BAD_KEY);
	th_close(w);
}

/* A write into a peer's region, held back by a dependency: the target is busy. */
static void test_free_busy_write_target(void **state)
{
	accdma_world *w = th_open(2);
	accdma_key k0 = th_alloc(w, 0, 64, NULL), t1 = th_alloc(w, 1, 64, NULL);
	accdma_key in0 = th_alloc(w, 0, 64, NULL), src1 = th_alloc(w, 1, 64, NULL);
	accdma_token r, wr, s;

	(void)state;
	assert_int_equal(accdma_recv(th_q(w, 0), 1, 5, in0, 0, 64, NULL, 0, &r), 0);
	assert_int_equal(accdma_write(th_q(w, 0), 1, k0, 0, 64, t1, 0, &r, 1, &wr), 0);
	th_kick(w, 0, 1);
	assert_int_equal(accdma_mem_free(w, 1, t1), -EBUSY);
	assert_int_equal(accdma_send(th_q(w, 1), 0, 5, src1, 0, 64, NULL, 0, &s), 0);
	th_wait_ok(w, r);
	th_wait_ok(w, wr);
	th_wait_ok(w, s);
	assert_int_equal(accdma_mem_free(w, 1, t1), 0);
	th_close(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_free_busy_recv),
		cmocka_unit_test(test_free_busy_write_target),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
