/* SPDX-License-Identifier: MIT */
/*
 * test_pipeline.c - the pipeline pattern, N = 2, 4, 8.
 *
 * Ranks i < N/2 send float32 [i] to i + N/2; ranks i >= N/2 receive from
 * i - N/2 into their own buffer [i]. Afterwards rank i holds [i] if i < N/2,
 * else [i - N/2]. Every rank runs the same program ("if first half send else
 * recv"); the order in which the devices post is varied, and until both sides
 * are posted neither token may complete.
 */
#include "helpers/th.h"

#include <errno.h>
#include <stdlib.h>

#define COUNT 512 /* floats per buffer: 2 KiB, above eager_max, so neither side completes alone */

enum post_order {
	SENDERS_FIRST,
	RECEIVERS_FIRST,
	RANK_ORDER,
	REVERSE_RANK_ORDER,
};

static void post_rank(accdma_world *w, int n, int i, accdma_key key, accdma_token *tok)
{
	accdma_queue *q = th_q(w, i);
	uint64_t len = COUNT * sizeof(float);

	if (i < n / 2)
		assert_int_equal(accdma_send(q, i + n / 2, 7, key, 0, len, NULL, 0, tok), 0);
	else
		assert_int_equal(accdma_recv(q, i - n / 2, 7, key, 0, len, NULL, 0, tok), 0);
	assert_true(*tok != 0);
}

static void run_pipeline(int n, enum post_order order)
{
	accdma_world *w = th_open(n);
	accdma_key key[8];
	float *buf[8];
	accdma_token tok[8] = { 0 };
	int seq[8];

	for (int i = 0; i < n; i++) {
		key[i] = th_alloc(w, i, COUNT * sizeof(float), (void **)&buf[i]);
		th_fill_f32(buf[i], COUNT, (float)i);
	}
	switch (order) {
	case SENDERS_FIRST:
	case RECEIVERS_FIRST:
		for (int k = 0; k < n; k++)
			seq[k] = (order == SENDERS_FIRST) ? k : (k + n / 2) % n;
		break;
	case RANK_ORDER:
		for (int k = 0; k < n; k++)
			seq[k] = k;
		break;
	case REVERSE_RANK_ORDER:
		for (int k = 0; k < n; k++)
			seq[k] = n - 1 - k;
		break;
	}

	/* First half of the posting order; then nothing can be complete yet:
	 * every posted op's partner is in the second half. */
	if (order == SENDERS_FIRST || order == RECEIVERS_FIRST) {
		for (int k = 0; k < n / 2; k++)
			post_rank(w, n, seq[k], key[seq[k]], &tok[seq[k]]);
		for (int k = 0; k < n / 2; k++)
			th_kick(w, seq[k], 2);
		for (int k = 0; k < n / 2; k++)
			th_pending(w, tok[seq[k]]);
		/* a receiver's buffer is untouched while its send is not posted */
		for (int k = 0; k < n / 2; k++)
			if (seq[k] >= n / 2)
				th_check_f32(buf[seq[k]], COUNT, (float)seq[k], "recv buffer early");
		for (int k = n / 2; k < n; k++)
			post_rank(w, n, seq[k], key[seq[k]], &tok[seq[k]]);
	} else {
		for (int k = 0; k < n; k++)
			post_rank(w, n, seq[k], key[seq[k]], &tok[seq[k]]);
	}

	/* wait in posting order, receivers' tokens first to stress either side */
	for (int i = n / 2; i < n; i++)
		th_wait_ok(w, tok[i]);
	for (int i = 0; i < n / 2; i++)
		th_wait_ok(w, tok[i]);

	for (int i = 0; i < n; i++) {
		float want = i < n / 2 ? (float)i : (float)(i - n / 2);

		th_check_f32(buf[i], COUNT, want, "pipeline result");
	}
	/* tokens were consumed */
	for (int i = 0; i < n; i++)
		assert_int_equal(accdma_wait(w, tok[i], 0, NULL), -ESTALE);
	th_close(w);
}

static void test_pipeline(void **state)
{
	int n = *(int *)*state;

	run_pipeline(n, SENDERS_FIRST);
	run_pipeline(n, RECEIVERS_FIRST);
	run_pipeline(n, RANK_ORDER);
	run_pipeline(n, REVERSE_RANK_ORDER);
}

/* A large transfer (split into chunks by the engine) with a byte pattern,
 * landing at an offset inside a larger region with guards either side. */
static void test_pipeline_large(void **state)
{
	(void)state;
	const uint64_t len = 3u << 20, off = 4096 + 3, guard = 8192;
	struct accdma_world_opts o;
	accdma_world *w;
	uint8_t *src, *dst;
	accdma_key ks, kd;
	accdma_token ts, tr;

	th_opts(&o, 2);
	o.mem_size = 16u << 20;
	w = th_open_opts(&o);
	ks = th_alloc(w, 0, len, (void **)&src);
	kd = th_alloc(w, 1, off + len + guard, (void **)&dst);
	th_fill_pattern(src, len, 42);
	th_fill_u8(dst, off + len + guard, 0xA5);

	assert_int_equal(accdma_recv(th_q(w, 1), 0, 1, kd, off, len, NULL, 0, &tr), 0);
	assert_int_equal(accdma_send(th_q(w, 0), 1, 1, ks, 0, len, NULL, 0, &ts), 0);
	th_wait_ok(w, tr);
	th_wait_ok(w, ts);
	th_check_u8(dst, off, 0xA5, "guard before");
	th_check_pattern(dst + off, len, 42, "large payload");
	th_check_u8(dst + off + len, guard, 0xA5, "guard after");
	th_check_pattern(src, len, 42, "source unchanged");
	th_close(w);
}

int main(void)
{
	static int n2 = 2, n4 = 4, n8 = 8;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(test_pipeline, &n2),
		cmocka_unit_test_prestate(test_pipeline, &n4),
		cmocka_unit_test_prestate(test_pipeline, &n8),
		cmocka_unit_test(test_pipeline_large),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
