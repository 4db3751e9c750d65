/* SPDX-License-Identifier: MIT */
/*
 * test_write.c - one-sided writes into a peer's region by key.
 *
 *  - a write lands at (remote key, remote offset) without the target posting
 *    anything; nothing outside the range changes;
 *  - writes chain: write -> exec on the writer (dep) -> write of the result;
 *    a write to self; a large chunked write with a byte pattern;
 *  - ordering: a write depending on a recv carries the received data on.
 */
#include "helpers/th.h"

#include <errno.h>

#define LEN 256

static void test_write_lands(void **state)
{
	(void)state;
	accdma_world *w = th_open(3);
	uint8_t *b0, *b2;
	accdma_key k0 = th_alloc(w, 0, LEN, (void **)&b0);
	accdma_key k2 = th_alloc(w, 2, 4 * LEN, (void **)&b2);
	accdma_token t;

	th_fill_pattern(b0, LEN, 3);
	th_fill_u8(b2, 4 * LEN, 0x5E);
	assert_int_equal(accdma_write(th_q(w, 0), 2, k0, 0, LEN, k2, LEN + 7, NULL, 0, &t), 0);
	th_wait_ok(w, t);
	th_check_u8(b2, LEN + 7, 0x5E, "before the target range");
	th_check_pattern(b2 + LEN + 7, LEN, 3, "written range");
	th_check_u8(b2 + 2 * LEN + 7, 2 * LEN - 7, 0x5E, "after the target range");
	th_check_pattern(b0, LEN, 3, "source unchanged");
	th_close(w);
}

static void test_write_self_and_large(void **state)
{
	(void)state;
	const uint64_t big = 5u << 20;
	struct accdma_world_opts o;
	accdma_world *w;
	uint8_t *a, *b;
	accdma_key ka, kb;
	accdma_token t1, t2;

	th_opts(&o, 2);
	o.mem_size = 16u << 20;
	w = th_open_opts(&o);
	ka = th_alloc(w, 1, big, (void **)&a);
	kb = th_alloc(w, 0, big, (void **)&b);
	th_fill_pattern(a, big, 11);
	/* self write: the first half of a into its second half's start region */
	assert_int_equal(accdma_write(th_q(w, 1), 1, ka, 0, 4096, ka, big - 4096, NULL, 0, &t1), 0);
	th_wait_ok(w, t1);
	assert_memory_equal(a + big - 4096, a, 4096);
	/* large write to dev 0, depending on the self write */
	th_fill_pattern(a, big - 4096, 11);
	assert_int_equal(accdma_write(th_q(w, 1), 0, ka, 0, big - 4096, kb, 0, NULL, 0, &t2), 0);
	th_wait_ok(w, t2);
	th_check_pattern(b, big - 4096, 11, "large write");
	th_check_u8(b + big - 4096, 4096, 0, "tail untouched");
	th_close(w);
}

struct inc_arg {
	uint32_t *p;
	int n;
};

static int inc_fn(void *arg)
{
	struct inc_arg *a = arg;

	for (int i = 0; i < a->n; i++)
		a->p[i] += 1;
	return 0;
}

/* recv on 1 -> exec (+1) -> write into 2's region -> exec on 1 marks done;
 * the write depends on the exec, so 2 sees the incremented value. */
static void test_write_chain(void **state)
{
	(void)state;
	accdma_world *w = th_open(3);
	uint32_t *b0, *b1, *b2;
	accdma_key k0 = th_alloc(w, 0, LEN, (void **)&b0);
	accdma_key k1 = th_alloc(w, 1, LEN, (void **)&b1);
	accdma_key k2 = th_alloc(w, 2, LEN, (void **)&b2);
	static struct inc_arg ia;
	accdma_token r, e, wr, s;

	for (int i = 0; i < LEN / 4; i++)
		b0[i] = 1000u + (uint32_t)i;
	ia = (struct inc_arg){ b1, LEN / 4 };
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 1, k1, 0, LEN, NULL, 0, &r), 0);
	assert_int_equal(accdma_exec(th_q(w, 1), inc_fn, &ia, &r, 1, &e), 0);
	assert_int_equal(accdma_write(th_q(w, 1), 2, k1, 0, LEN, k2, 0, &e, 1, &wr), 0);
	th_kick(w, 1, 1);
	th_pending(w, wr);
	th_check_u8(b2, LEN, 0, "write target before the chain ran");
	assert_int_equal(accdma_send(th_q(w, 0), 1, 1, k0, 0, LEN, NULL, 0, &s), 0);
	th_wait_ok(w, wr);
	th_wait_ok(w, e);
	th_wait_ok(w, r);
	th_wait_ok(w, s);
	for (int i = 0; i < LEN / 4; i++)
		assert_int_equal(b2[i], 1001u + (uint32_t)i);
	th_close(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_lands),
		cmocka_unit_test(test_write_self_and_large),
		cmocka_unit_test(test_write_chain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
