/* SPDX-License-Identifier: MIT */
/*
 * test_wait_spin.c - how long a waiter polls before it sleeps depends on
 * what it waits for (drv_wait_spin_ns()).
 *
 * A wait on one small transfer (a send, recv or write of at most
 * ACCDMA_EAGER_MAX bytes) polls longer than a wait on anything else: a
 * larger transfer, an exec, a fence, or several ops at once (token 0). The
 * choice is read from the op's descriptor while its token is live. Nothing
 * is timed. A transport may set its own spin for small transfers
 * (drv_transport.small_spin_ns: verbs, whose round trips can outlast the
 * default); the others keep the default.
 */
#include "helpers/th.h"

#include "driver/internal.h"

static int fn_ok(void *arg)
{
	(void)arg;
	return 0;
}

static void test_small_transfers_spin_longer(void **state)
{
	accdma_world *w = th_open(2);
	accdma_key k0 = th_alloc(w, 0, 8192, NULL), k1 = th_alloc(w, 1, 8192, NULL);
	accdma_queue *q0 = th_q(w, 0), *q1 = th_q(w, 1);
	uint64_t base = drv_wait_spin_ns(w, 0), small, big;
	accdma_token s, r, f, e, wr;

	(void)state;
	/* a small pair: both spin longer than the default */
	assert_int_equal(accdma_recv(q1, 0, 1, k1, 0, ACCDMA_EAGER_MAX, NULL, 0, &r), 0);
	small = drv_wait_spin_ns(w, r);
	assert_true(small > base);
	assert_int_equal(accdma_send(q0, 1, 1, k0, 0, ACCDMA_EAGER_MAX, NULL, 0, &s), 0);
	assert_int_equal(drv_wait_spin_ns(w, s), small); /* the boundary counts as small */
	th_wait_ok(w, s);
	th_wait_ok(w, r);

	/* one byte more, a larger recv, an exec, a fence: the default */
	assert_int_equal(accdma_recv(q1, 0, 2, k1, 0, 4096, NULL, 0, &r), 0);
	big = drv_wait_spin_ns(w, r);
	assert_int_equal(big, base);
	assert_int_equal(accdma_send(q0, 1, 2, k0, 0, ACCDMA_EAGER_MAX + 1, NULL, 0, &s), 0);
	assert_int_equal(drv_wait_spin_ns(w, s), base);
	assert_int_equal(accdma_exec(q0, fn_ok, NULL, &s, 1, &e), 0);
	assert_int_equal(drv_wait_spin_ns(w, e), base);
	assert_int_equal(accdma_fence(q1, NULL, 0, &f), 0);
	assert_int_equal(drv_wait_spin_ns(w, f), base);
	th_wait_ok(w, r);
	th_wait_ok(w, e);
	th_wait_ok(w, f);

	/* a small one-sided write */
	assert_int_equal(accdma_write(q0, 1, k0, 0, 8, k1, 0, NULL, 0, &wr), 0);
	assert_int_equal(drv_wait_spin_ns(w, wr), small);
	th_wait_ok(w, wr);
	th_close(w);
}

/* The transport's small_spin_ns replaces the default for small transfers
 * only; verbs sets one, local leaves it to the driver. */
static void test_transport_sets_small_spin(void **state)
{
	accdma_world *w = th_open(2);
	const struct drv_transport *own = w->tp;
	struct drv_transport slow = *w->tp;
	accdma_key k1 = th_alloc(w, 1, 8192, NULL);
	uint64_t base = drv_wait_spin_ns(w, 0), small;
	accdma_token r, big;

	(void)state;
	assert_int_equal(own->small_spin_ns, 0);
#ifdef ACCDMA_HAVE_VERBS
	assert_true(drv_transport_verbs.small_spin_ns > 0);
#endif
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 1, k1, 0, 8, NULL, 0, &r), 0);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 2, k1, 0, 4096, NULL, 0, &big), 0);
	small = drv_wait_spin_ns(w, r);
	slow.small_spin_ns = small * 5;
	w->tp = &slow;
	assert_int_equal(drv_wait_spin_ns(w, r), small * 5);
	assert_int_equal(drv_wait_spin_ns(w, big), base);
	assert_int_equal(drv_wait_spin_ns(w, 0), base);
	w->tp = own;
	assert_int_equal(drv_wait_spin_ns(w, r), small);
	assert_int_equal(accdma_cancel(w, r), 0);
	assert_int_equal(accdma_cancel(w, big), 0);
	th_wait_st(w, r, ACCDMA_ST_CANCELED);
	th_wait_st(w, big, ACCDMA_ST_CANCELED);
	th_close(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_transfers_spin_longer),
		cmocka_unit_test(test_transport_sets_small_spin),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
