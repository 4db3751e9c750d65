/* SPDX-License-Identifier: MIT */
/*
 * test_loose_ends.c - bad input that was accepted, or crashed, before:
 * a registered range whose end wraps the address space (-EINVAL: a send from
 * it crashed the engine); accdma_pending() with no room (qsort_r on NULL, an
 * error under UBSan); accdma_wait_all() given one token twice (-EINVAL
 * before anything is consumed, where it consumed it and failed -ESTALE); a
 * token of one world handed to another of the same shape (-ESTALE, where it
 * named the other world's op); accdma_wait_bytes(), the bytes an op
 * moved, which were lost with its consumed token; and a wait that times out
 * described on stderr only when it waited a second or more (a short one is
 * a poll: a grace-period loop printed a line per look).
 */
#include "helpers/th.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PAGE 4096

static void test_register_wrap(void **state)
{
	(void)state;
	accdma_world *w = th_open(2);
	accdma_key k = 0, kd = th_alloc(w, 1, PAGE, NULL);
	uintptr_t top = UINTPTR_MAX - (PAGE - 1); /* the last page of the address space */
	static unsigned char buf[PAGE];
	unsigned char *dst;
	accdma_token s, r;

	/* ends that wrap: past the last byte by one page, by one byte, by 2^64 - 1 */
	assert_int_equal(accdma_mem_register(w, 0, (void *)top, 2 * PAGE, &k), -EINVAL);
	assert_int_equal(accdma_mem_register(w, 0, (void *)top, PAGE + 1, &k), -EINVAL);
	assert_int_equal(accdma_mem_register(w, 0, buf, UINT64_MAX, &k), -EINVAL);
	assert_int_equal(accdma_mem_register(w, 0, (void *)(uintptr_t)2, UINT64_MAX, &k), -EINVAL);
	assert_int_equal(k, 0);
	/* a range ending on the last byte does not wrap (registered, never used) */
	assert_int_equal(accdma_mem_register(w, 0, (void *)top, PAGE, &k), 0);
	assert_int_equal(accdma_mem_free(w, 0, k), 0);
	/* an ordinary range still works, and carries data */
	for (int i = 0; i < PAGE; i++)
		buf[i] = (unsigned char)(i * 7 + 1);
	assert_int_equal(accdma_mem_register(w, 0, buf, PAGE, &k), 0);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 3, kd, 0, PAGE, NULL, 0, &r), 0);
	assert_int_equal(accdma_send(th_q(w, 0), 1, 3, k, 0, PAGE, NULL, 0, &s), 0);
	th_wait_ok(w, s);
	th_wait_ok(w, r);
	dst = accdma_mem_ptr(w, 1, kd, NULL);
	assert_non_null(dst);
	assert_memory_equal(dst, buf, PAGE);
	assert_int_equal(accdma_mem_free(w, 0, k), 0);
	th_close(w);
}

static void test_pending_no_room(void **state)
{
	(void)state;
	accdma_world *w = th_open(2);
	accdma_key k = th_alloc(w, 1, PAGE, NULL);
	struct accdma_op_info info;
	accdma_token r[2];

	assert_int_equal(accdma_pending(w, 1, NULL, 0), 0);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 1, k, 0, 8, NULL, 0, &r[0]), 0);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 2, k, 8, 8, NULL, 0, &r[1]), 0);
	/* the count alone, then one of the two (the earlier one, in queue order) */
	assert_int_equal(accdma_pending(w, 1, NULL, 0), 2);
	memset(&info, 0, sizeof(info));
	assert_int_equal(accdma_pending(w, 1, &info, 1), 2);
	assert_int_equal(info.token, r[0]);
	assert_int_equal(info.kind, ACCDMA_OP_RECV);
	assert_int_equal(info.tag, 1);
	assert_int_equal(accdma_pending(w, 1, NULL, 1), -EINVAL);
	assert_int_equal(accdma_pending(w, 1, &info, -1), -EINVAL);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(accdma_cancel(w, r[i]), 0);
		th_wait_st(w, r[i], ACCDMA_ST_CANCELED);
	}
	assert_int_equal(accdma_pending(w, 1, NULL, 0), 0);
	th_close(w);
}

/* Nothing of @t[0..n-1] was consumed: each is still known to the world. */
static void assert_all_live(accdma_world *w, const accdma_token *t, int n)
{
	struct accdma_op_info info;

	for (int i = 0; i < n; i++)
		assert_int_equal(accdma_op_info(w, t[i], &info), 0);
}

static void test_wait_all_duplicates(void **state)
{
	(void)state;
	struct accdma_world_opts o;
	enum { LONG = 300 }; /* past the stack copy (256) too */
	accdma_token *t = calloc(LONG, sizeof(*t)), *copy = calloc(LONG, sizeof(*t));
	enum accdma_status st[3];
	accdma_world *w;
	accdma_queue *q;

	assert_non_null(t);
	assert_non_null(copy);
	th_opts(&o, 1);
	o.queue_depth = 512;
	w = th_open_opts(&o);
	q = th_q(w, 0);
	for (int i = 0; i < LONG; i++)
		assert_int_equal(accdma_fence(q, NULL, 0, &t[i]), 0);
	/* short lists: the pair-by-pair check, duplicates anywhere */
	{
		accdma_token a[3] = { t[0], t[1], t[0] }, b[2] = { t[2], t[2] }, c[3] = { t[3], t[4], t[4] };

		assert_int_equal(accdma_wait_all(w, a, 3, TH_HANG_MS, st), -EINVAL);
		assert_int_equal(accdma_wait_all(w, b, 2, TH_HANG_MS, st), -EINVAL);
		assert_int_equal(accdma_wait_all(w, c, 3, TH_HANG_MS, st), -EINVAL);
		/* the lists are untouched, and nothing was consumed */
		assert_int_equal(a[0], t[0]);
		assert_int_equal(a[2], t[0]);
		assert_int_equal(b[1], t[2]);
		assert_all_live(w, t, 5);
	}
	/* long lists (17: the set on the stack; 300: on the heap), the duplicate
	 * far from its twin */
	for (int n = 17; n <= LONG; n += LONG - 17) {
		memcpy(copy, t, (size_t)n * sizeof(*t));
		copy[n - 1] = t[0];
		assert_int_equal(accdma_wait_all(w, copy, n, TH_HANG_MS, NULL), -EINVAL);
		for (int i = 0; i < n; i++)
			assert_int_equal(copy[i], i == n - 1 ? t[0] : t[i]);
		assert_all_live(w, t, LONG);
	}
	/* without the duplicate every token is waited for once and consumed:
	 * out of posting order (through the set), then in it */
	for (int i = 0; i < 100; i++)
		copy[i] = t[99 - i];
	assert_int_equal(accdma_wait_all(w, copy, 100, TH_HANG_MS, NULL), 0);
	memcpy(copy + 100, t + 100, (LONG - 100) * sizeof(*t));
	assert_int_equal(accdma_wait_all(w, copy + 100, LONG - 100, TH_HANG_MS, NULL), 0);
	for (int i = 0; i < LONG; i++) {
		assert_int_equal(copy[i], 0);
		assert_int_equal(accdma_wait(w, t[i], 0, NULL), -ESTALE);
	}
	th_close(w);
	free(t);
	free(copy);
}

/* Two open worlds of one shape post into the same slots: neither takes the
 * other's tokens, as a wait, test, release, cancel, op_info or dependency. */
static void test_token_of_other_world(void **state)
{
	(void)state;
	accdma_world *a = th_open(2), *b = th_open(2);
	accdma_queue *qa = th_q(a, 1), *qb = th_q(b, 1);
	struct accdma_op_info info;
	enum accdma_status st;

	for (int round = 0; round < 64; round++) {
		accdma_token ta, tb, dep;

		assert_int_equal(accdma_fence(qa, NULL, 0, &ta), 0);
		assert_int_equal(accdma_fence(qb, NULL, 0, &tb), 0);
		assert_true(ta != tb);
		assert_int_equal(accdma_wait(b, ta, 0, &st), -ESTALE);
		assert_int_equal(accdma_wait_bytes(b, ta, 0, &st, NULL), -ESTALE);
		assert_int_equal(accdma_test(b, ta, &st), -ESTALE);
		assert_int_equal(accdma_release(b, ta), -ESTALE);
		assert_int_equal(accdma_cancel(b, ta), -ESTALE);
		assert_int_equal(accdma_op_info(b, ta, &info), -ESTALE);
		assert_int_equal(accdma_fence(qb, &ta, 1, &dep), -ESTALE);
		assert_int_equal(accdma_wait_all(b, &ta, 1, 0, NULL), -ESTALE);
		assert_int_equal(accdma_test(a, tb, &st), -ESTALE);
		/* each world's own tokens are intact */
		th_wait_ok(b, tb);
		th_wait_ok(a, ta);
	}
	th_close(b);
	th_close(a);
}

/* accdma_wait_bytes(): a recv's landed bytes (fewer than its length), a
 * send's and a write's length, 0 for a failed op; on a polled device the
 * wait does the work, so it takes the slow path too. */
static void run_wait_bytes(int engines)
{
	struct accdma_world_opts o;
	accdma_world *w;
	accdma_key k0, k1;
	accdma_token s, r, wr, bad;
	enum accdma_status st;
	uint64_t bytes;
	/* eager (at most eager_max) and rendezvous sizes, each into a larger recv */
	static const uint64_t sizes[] = { 1, 1000, 5000, 65536 - 3 };

	th_opts(&o, 2);
	o.engines = engines;
	w = th_open_opts(&o);
	k0 = th_alloc(w, 0, 65536, NULL);
	k1 = th_alloc(w, 1, 65536, NULL);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		assert_int_equal(accdma_recv(th_q(w, 1), 0, i, k1, 0, 65536, NULL, 0, &r), 0);
		assert_int_equal(accdma_send(th_q(w, 0), 1, i, k0, 0, sizes[i], NULL, 0, &s), 0);
		bytes = 12345;
		st = ACCDMA_ST__COUNT;
		assert_int_equal(accdma_wait_bytes(w, r, TH_HANG_MS, &st, &bytes), 0);
		th_assert_st(st, ACCDMA_OK);
		assert_int_equal(bytes, sizes[i]);
		bytes = 12345;
		assert_int_equal(accdma_wait_bytes(w, s, TH_HANG_MS, NULL, &bytes), 0);
		assert_int_equal(bytes, sizes[i]);
		/* consumed: a second wait finds nothing, and leaves bytes alone */
		bytes = 12345;
		assert_int_equal(accdma_wait_bytes(w, r, 0, &st, &bytes), -ESTALE);
		assert_int_equal(bytes, 12345);
	}
	assert_int_equal(accdma_write(th_q(w, 0), 1, k0, 0, 777, k1, 100, NULL, 0, &wr), 0);
	assert_int_equal(accdma_wait_bytes(w, wr, TH_HANG_MS, &st, &bytes), 0);
	th_assert_st(st, ACCDMA_OK);
	assert_int_equal(bytes, 777);
	/* out of bounds: fails, moved nothing */
	assert_int_equal(accdma_write(th_q(w, 0), 1, k0, 0, 777, k1, 65536 - 10, NULL, 0, &bad), 0);
	bytes = 12345;
	assert_int_equal(accdma_wait_bytes(w, bad, TH_HANG_MS, &st, &bytes), 0);
	th_assert_st(st, ACCDMA_ST_OUT_OF_BOUNDS);
	assert_int_equal(bytes, 0);
	/* NULL out-params are fine */
	assert_int_equal(accdma_fence(th_q(w, 0), NULL, 0, &s), 0);
	assert_int_equal(accdma_wait_bytes(w, s, TH_HANG_MS, NULL, NULL), 0);
	assert_int_equal(accdma_wait_bytes(NULL, s, 0, NULL, NULL), -EBADF);
	assert_int_equal(accdma_wait_bytes(w, 0, 0, NULL, NULL), -EINVAL);
	th_close(w);
}

/* One case per engine count (*state): an engine thread, and a polled device. */
static void test_wait_bytes(void **state)
{
	run_wait_bytes(*(const int *)*state);
}

/* Wait @ms on @t, which never completes, with stderr caught: what was said. */
static void timed_out_wait_says(accdma_world *w, accdma_token t, int64_t ms, char *out, size_t len)
{
	FILE *f = tmpfile();
	int saved = dup(2);
	size_t n;

	assert_non_null(f);
	assert_true(saved >= 0);
	fflush(stderr);
	assert_true(dup2(fileno(f), 2) == 2);
	assert_int_equal(accdma_wait(w, t, ms, NULL), -ETIMEDOUT);
	fflush(stderr);
	assert_true(dup2(saved, 2) == 2);
	close(saved);
	rewind(f);
	n = fread(out, 1, len - 1, f);
	out[n] = 0;
	fclose(f);
}

static void test_short_timeout_quiet(void **state)
{
	struct accdma_world_opts o;
	accdma_world *w;
	accdma_key k;
	accdma_token r;
	char said[2048];

	(void)state;
	th_opts(&o, 2);
	o.log_level = 1;
	w = th_open_opts(&o);
	k = th_alloc(w, 1, 4096, NULL);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 9, k, 0, 64, NULL, 0, &r), 0);
	timed_out_wait_says(w, r, 5, said, sizeof(said));
	assert_string_equal(said, "");
	timed_out_wait_says(w, r, 999, said, sizeof(said));
	assert_string_equal(said, "");
	timed_out_wait_says(w, r, 1000, said, sizeof(said));
	assert_non_null(strstr(said, "accdma: wait timed out after 1000 ms: "));
	assert_non_null(strstr(said, "recv"));
	assert_int_equal(accdma_cancel(w, r), 0);
	assert_int_equal(accdma_wait(w, r, TH_HANG_MS, NULL), 0);
	th_close(w);
}

int main(void)
{
	static const int engines[] = { 1, 0 };
	struct th_cases cases = { 0 };

	th_case(&cases, test_register_wrap, NULL, "test_register_wrap");
	th_case(&cases, test_pending_no_room, NULL, "test_pending_no_room");
	th_case(&cases, test_wait_all_duplicates, NULL, "test_wait_all_duplicates");
	th_case(&cases, test_token_of_other_world, NULL, "test_token_of_other_world");
	th_case(&cases, test_short_timeout_quiet, NULL, "test_short_timeout_quiet");
	for (int i = 0; i < 2; i++)
		th_case(&cases, test_wait_bytes, (void *)&engines[i], "test_wait_bytes/%d engines",
			engines[i]);
	return th_run_cases("test_loose_ends", &cases, NULL, NULL);
}
