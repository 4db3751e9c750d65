/* SPDX-License-Identifier: MIT */
/*
 * test_any_source.c - recvs from ACCDMA_ANY_SOURCE: the recv first and the
 * send first, several sources racing (FIFO per source), mixed with specific
 * recvs on the same tag (non-overtaking), eager and rendezvous sizes,
 * truncation, cancel, bad arguments; over shm, three processes and sources
 * that close (PEER_LOST only once no source is left). Every case asserts the
 * data, the status, the source and the order. In-process cases also run over
 * the loop transport (make check-loop).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/th.h"
#include "shm_th.h"

#define TAG 7
#define SMALL 64      /* eager */
#define LARGE 65536   /* rendezvous (and a handoff to the recv's engine) */

/* A message: (source, k) in its first 8 bytes, then bytes derived from both. */
static void msg_make(uint8_t *p, uint64_t len, int src, int k)
{
	int32_t h[2] = { src, k };

	memcpy(p, h, sizeof(h));
	for (uint64_t i = 8; i < len; i++)
		p[i] = (uint8_t)(i * 7 + (uint64_t)src * 31 + (uint64_t)k);
}

/* Does @p hold message (@src, @k) of @len bytes? */
static int msg_is(const uint8_t *p, uint64_t len, int src, int k)
{
	int32_t h[2];

	memcpy(h, p, sizeof(h));
	if (h[0] != src || h[1] != k)
		return 0;
	for (uint64_t i = 8; i < len; i++)
		if (p[i] != (uint8_t)(i * 7 + (uint64_t)src * 31 + (uint64_t)k))
			return 0;
	return 1;
}

/* Wait for @t: its status, bytes and source. */
static void wait_src(accdma_world *w, accdma_token t, enum accdma_status want, int want_src, uint64_t want_bytes)
{
	enum accdma_status st = ACCDMA_ST__COUNT;
	uint64_t bytes = 1234;
	int src = -5, rc = accdma_wait_source(w, t, TH_HANG_MS, &st, &bytes, &src);

	assert_int_equal(rc, 0);
	th_assert_st(st, want);
	if (want_src != -9)
		assert_int_equal(src, want_src);
	if (want == ACCDMA_OK)
		assert_int_equal(bytes, want_bytes);
}

struct world {
	accdma_world *w;
	int n;
	accdma_key src[8], dst[8];
	uint8_t *sp[8], *dp[8];
};

static void world_open(struct world *x, int n, uint64_t size)
{
	x->w = th_open(n);
	x->n = n;
	for (int d = 0; d < n; d++) {
		x->src[d] = th_alloc(x->w, d, size, (void **)&x->sp[d]);
		x->dst[d] = th_alloc(x->w, d, size, (void **)&x->dp[d]);
	}
}

/* Send message (@src, @k) of @len from device @src's slot @slot to @dst. */
static accdma_token send_msg(struct world *x, int src, int dst, int k, uint64_t len, int slot)
{
	accdma_token t;

	msg_make(x->sp[src] + (uint64_t)slot * len, len, src, k);
	assert_int_equal(accdma_send(th_q(x->w, src), dst, TAG, x->src[src], (uint64_t)slot * len, len,
				     NULL, 0, &t), 0);
	return t;
}

static accdma_token recv_msg(struct world *x, int dev, int peer, uint64_t len, int slot)
{
	accdma_token t;

	memset(x->dp[dev] + (uint64_t)slot * len, 0xee, len);
	assert_int_equal(accdma_recv(th_q(x->w, dev), peer, TAG, x->dst[dev], (uint64_t)slot * len, len,
				     NULL, 0, &t), 0);
	return t;
}

/* The recv is posted first, then one source sends: it takes that one. */
static void recv_first(uint64_t len)
{
	struct world x;
	accdma_token r, s;

	world_open(&x, 3, len);
	struct accdma_op_info info;
	char line[256];

	r = recv_msg(&x, 0, ACCDMA_ANY_SOURCE, len, 0);
	th_kick(x.w, 0, 3);
	th_pending(x.w, r);
	/* the stall report names it */
	assert_int_equal(accdma_op_info(x.w, r, &info), 0);
	assert_int_equal(info.peer, ACCDMA_ANY_SOURCE);
	assert_true(accdma_op_describe(&info, line, sizeof(line)) > 0);
	assert_non_null(strstr(line, "from any source tag 7"));
	s = send_msg(&x, 2, 0, 0, len, 0);
	wait_src(x.w, r, ACCDMA_OK, 2, len);
	th_wait_ok(x.w, s);
	assert_true(msg_is(x.dp[0], len, 2, 0));
	th_close(x.w);
}

static void test_recv_first_eager(void **state)
{
	(void)state;
	recv_first(SMALL);
}

static void test_recv_first_large(void **state)
{
	(void)state;
	recv_first(LARGE);
}

/*
 * Sources racing: devices 1..3 each send K messages to 0 (send first or
 * not), 0 posts 3K any-source recvs. Every message arrives once, and the
 * messages of each source in the order it sent them.
 */
#define K 6
static void racing(uint64_t len, int sends_first)
{
	struct world x;
	accdma_token s[3 * K], r[3 * K];
	int next[4] = { 0, 0, 0, 0 }, ns = 0;

	world_open(&x, 4, len * 3 * K);
	if (sends_first)
		for (int k = 0; k < K; k++)
			for (int d = 1; d < 4; d++, ns++)
				s[ns] = send_msg(&x, d, 0, k, len, k);
	for (int i = 0; i < 3 * K; i++)
		r[i] = recv_msg(&x, 0, ACCDMA_ANY_SOURCE, len, i);
	if (!sends_first)
		for (int k = 0; k < K; k++)
			for (int d = 1; d < 4; d++, ns++)
				s[ns] = send_msg(&x, d, 0, k, len, k);
	for (int i = 0; i < 3 * K; i++) {
		enum accdma_status st;
		uint64_t bytes;
		int src, rc = accdma_wait_source(x.w, r[i], TH_HANG_MS, &st, &bytes, &src);

		assert_int_equal(rc, 0);
		th_assert_st(st, ACCDMA_OK);
		assert_true(src >= 1 && src <= 3);
		assert_int_equal(bytes, len);
		/* FIFO per source: this recv holds that source's next message */
		assert_true(msg_is(x.dp[0] + (uint64_t)i * len, len, src, next[src]));
		next[src]++;
	}
	for (int d = 1; d < 4; d++)
		assert_int_equal(next[d], K);
	th_wait_all_ok(x.w, s, 3 * K);
	th_close(x.w);
}

static void test_racing_eager_recv_first(void **state)
{
	(void)state;
	racing(SMALL, 0);
}

static void test_racing_eager_send_first(void **state)
{
	(void)state;
	racing(SMALL, 1);
}

static void test_racing_large(void **state)
{
	(void)state;
	racing(LARGE, 0);
	racing(LARGE, 1);
}

/*
 * Mixed with specific recvs on the same tag. Source 1's three messages are
 * there first; 0 posts recv(1), recv(any), recv(1): they take 1's messages
 * 0, 1, 2 in that order (an any-source recv takes the first message no
 * earlier recv can take, and a later recv from 1 takes the one after it).
 */
static void mixed(uint64_t len)
{
	struct world x;
	accdma_token s[3], r[3];

	world_open(&x, 3, len * 4);
	for (int k = 0; k < 3; k++)
		s[k] = send_msg(&x, 1, 0, k, len, k);
	r[0] = recv_msg(&x, 0, 1, len, 0);
	r[1] = recv_msg(&x, 0, ACCDMA_ANY_SOURCE, len, 1);
	r[2] = recv_msg(&x, 0, 1, len, 2);
	for (int k = 0; k < 3; k++) {
		wait_src(x.w, r[k], ACCDMA_OK, 1, len);
		assert_true(msg_is(x.dp[0] + (uint64_t)k * len, len, 1, k));
	}
	th_wait_all_ok(x.w, s, 3);
	th_close(x.w);
}

static void test_mixed_eager(void **state)
{
	(void)state;
	mixed(SMALL);
}

static void test_mixed_large(void **state)
{
	(void)state;
	mixed(LARGE);
}

/*
 * The recvs first: recv(1), recv(any), recv(1). Source 2 sends: the
 * any-source recv takes it; the recv from 1 behind it waits (it could
 * only be numbered once the any-source recv matched) and then takes 1's
 * second message, the first going to the first recv.
 */
static void test_mixed_recvs_first(void **state)
{
	(void)state;
	struct world x;
	accdma_token s[3], r[3];
	uint64_t len = SMALL;

	world_open(&x, 3, len * 4);
	r[0] = recv_msg(&x, 0, 1, len, 0);
	r[1] = recv_msg(&x, 0, ACCDMA_ANY_SOURCE, len, 1);
	r[2] = recv_msg(&x, 0, 1, len, 2);
	th_kick(x.w, 0, 3);
	th_pending(x.w, r[1]);
	s[0] = send_msg(&x, 2, 0, 0, len, 0);
	wait_src(x.w, r[1], ACCDMA_OK, 2, len);
	assert_true(msg_is(x.dp[0] + len, len, 2, 0));
	th_pending(x.w, r[2]);
	s[1] = send_msg(&x, 1, 0, 0, len, 0);
	s[2] = send_msg(&x, 1, 0, 1, len, 1);
	wait_src(x.w, r[0], ACCDMA_OK, 1, len);
	wait_src(x.w, r[2], ACCDMA_OK, 1, len);
	assert_true(msg_is(x.dp[0], len, 1, 0));
	assert_true(msg_is(x.dp[0] + 2 * len, len, 1, 1));
	th_wait_all_ok(x.w, s, 3);
	th_close(x.w);
}

/* A device receives from itself too; a short any-source recv is TRUNCATED. */
static void test_self_and_truncated(void **state)
{
	(void)state;
	struct world x;
	accdma_token s, r;

	world_open(&x, 2, LARGE);
	s = send_msg(&x, 0, 0, 0, SMALL, 0);
	r = recv_msg(&x, 0, ACCDMA_ANY_SOURCE, SMALL, 1);
	wait_src(x.w, r, ACCDMA_OK, 0, SMALL);
	th_wait_ok(x.w, s);
	assert_true(msg_is(x.dp[0] + SMALL, SMALL, 0, 0));
	s = send_msg(&x, 1, 0, 1, SMALL, 0);
	assert_int_equal(accdma_recv(th_q(x.w, 0), ACCDMA_ANY_SOURCE, TAG, x.dst[0], 0, 16, NULL, 0, &r), 0);
	wait_src(x.w, r, ACCDMA_ST_TRUNCATED, 1, 0);
	th_wait_ok(x.w, s); /* eager: it completed when it left */
	th_close(x.w);
}

/*
 * Cancel of a waiting any-source recv: it completes CANCELED with no
 * source, takes no message, and the recv from 1 posted behind it (which
 * waited for it) then takes 1's first message.
 */
static void test_cancel(void **state)
{
	(void)state;
	struct world x;
	accdma_token s, r, r2;
	enum accdma_status st;
	int src = 5;

	world_open(&x, 3, LARGE * 2);
	r = recv_msg(&x, 0, ACCDMA_ANY_SOURCE, LARGE, 0);
	r2 = recv_msg(&x, 0, 1, LARGE, 1);
	th_kick(x.w, 0, 3);
	th_pending(x.w, r);
	th_pending(x.w, r2);
	assert_int_equal(accdma_cancel(x.w, r), 0);
	assert_int_equal(accdma_wait_source(x.w, r, TH_HANG_MS, &st, NULL, &src), 0);
	th_assert_st(st, ACCDMA_ST_CANCELED);
	assert_int_equal(src, ACCDMA_ANY_SOURCE);
	s = send_msg(&x, 1, 0, 0, LARGE, 0);
	wait_src(x.w, r2, ACCDMA_OK, 1, LARGE);
	assert_true(msg_is(x.dp[0] + LARGE, LARGE, 1, 0));
	th_wait_ok(x.w, s);
	/* a later any-source recv on the tag works as before */
	s = send_msg(&x, 2, 0, 0, SMALL, 0);
	r = recv_msg(&x, 0, ACCDMA_ANY_SOURCE, SMALL, 0);
	wait_src(x.w, r, ACCDMA_OK, 2, SMALL);
	th_wait_ok(x.w, s);
	th_close(x.w);
}

/* A failed dependency: the any-source recv is NOT_ATTEMPTED and takes nothing. */
static int fail_fn(void *arg)
{
	(void)arg;
	return 1;
}

static void test_failed_dep(void **state)
{
	(void)state;
	struct world x;
	accdma_token e, r, r2, s;

	world_open(&x, 2, SMALL * 2);
	s = send_msg(&x, 1, 0, 0, SMALL, 0);
	th_wait_ok(x.w, s);
	assert_int_equal(accdma_exec(th_q(x.w, 0), fail_fn, NULL, NULL, 0, &e), 0);
	assert_int_equal(accdma_recv(th_q(x.w, 0), ACCDMA_ANY_SOURCE, TAG, x.dst[0], 0, SMALL, &e, 1, &r), 0);
	r2 = recv_msg(&x, 0, ACCDMA_ANY_SOURCE, SMALL, 1);
	th_wait_st(x.w, e, ACCDMA_ST_EXEC_FAILED);
	wait_src(x.w, r, ACCDMA_ST_NOT_ATTEMPTED, ACCDMA_ANY_SOURCE, 0);
	wait_src(x.w, r2, ACCDMA_OK, 1, SMALL);
	assert_true(msg_is(x.dp[0] + SMALL, SMALL, 1, 0));
	th_close(x.w);
}

/* Bad arguments are refused at post time. */
static void test_bad_args(void **state)
{
	(void)state;
	struct world x;
	accdma_token t;
	accdma_queue *q;

	world_open(&x, 2, SMALL);
	q = th_q(x.w, 0);
	assert_int_equal(accdma_recv(q, -2, TAG, x.dst[0], 0, SMALL, NULL, 0, &t), -EINVAL);
	assert_int_equal(accdma_send(q, ACCDMA_ANY_SOURCE, TAG, x.src[0], 0, SMALL, NULL, 0, &t), -EINVAL);
	assert_int_equal(accdma_write(q, ACCDMA_ANY_SOURCE, x.src[0], 0, SMALL, x.dst[1], 0, NULL, 0, &t),
			 -EINVAL);
	assert_int_equal(accdma_recv(q, ACCDMA_ANY_SOURCE, ACCDMA_TAG_RESERVED | 1, x.dst[0], 0, SMALL, NULL,
				     0, &t), -EINVAL);
	assert_int_equal(accdma_wait_source(NULL, 1, 0, NULL, NULL, NULL), -EBADF);
	/* a bad range is the token's: OUT_OF_BOUNDS, no source, nothing taken */
	assert_int_equal(accdma_recv(q, ACCDMA_ANY_SOURCE, TAG, x.dst[0], SMALL, SMALL, NULL, 0, &t), 0);
	wait_src(x.w, t, ACCDMA_ST_OUT_OF_BOUNDS, ACCDMA_ANY_SOURCE, 0);
	th_close(x.w);
}

/* ---- shm: three processes ------------------------------------------------ */

/*
 * arg 0: ranks 1 and 2 each send K messages (eager and large, alternating)
 * and rank 0 takes all of them with any-source recvs, FIFO per source.
 * arg 1: rank 1 sends one message and closes, rank 2 closes without
 * sending: rank 0's first any-source recv takes 1's message (after 1 is
 * gone), the second completes PEER_LOST once both are gone.
 * arg 2: the same with deaths (_exit, no close): rank 2 dies at once, and a
 * recv stays pending while rank 1 lives, then takes its second message;
 * the third completes PEER_LOST once rank 1 has died too.
 */
static int shm_child(int rank, int n, int port, int arg)
{
	struct accdma_world_opts o;
	accdma_world *w = NULL;
	accdma_queue *q;
	accdma_key ks, kd;
	uint8_t *sb, *rb;
	accdma_token t[2 * K];
	int rc, next[3] = { 0, 0, 0 };

	sc_rank = rank;
	sc_opts(&o, rank, n, port, 20000);
	rc = accdma_world_open(&o, &w);
	SC_CHECK(rc == 0 && w, "accdma_world_open = %d", rc);
	SC_CHECK(accdma_queue_get(w, rank, 0, &q) == 0, "queue_get");
	SC_CHECK(accdma_mem_alloc(w, rank, 2 * K * LARGE, &ks) == 0, "alloc");
	SC_CHECK(accdma_mem_alloc(w, rank, 2 * K * LARGE, &kd) == 0, "alloc");
	sb = accdma_mem_ptr(w, rank, ks, NULL);
	rb = accdma_mem_ptr(w, rank, kd, NULL);
	if (arg == 0 && rank > 0) {
		for (int k = 0; k < K; k++) {
			uint64_t len = k % 2 ? LARGE : SMALL;

			msg_make(sb + (uint64_t)k * LARGE, len, rank, k);
			SC_CHECK(accdma_send(q, 0, TAG, ks, (uint64_t)k * LARGE, len, NULL, 0, &t[k]) == 0,
				 "send");
		}
		for (int k = 0; k < K; k++)
			sc_wait_ok(w, t[k]);
	} else if (arg == 0) {
		for (int i = 0; i < 2 * K; i++)
			SC_CHECK(accdma_recv(q, ACCDMA_ANY_SOURCE, TAG, kd, (uint64_t)i * LARGE, LARGE, NULL, 0,
					     &t[i]) == 0, "recv");
		for (int i = 0; i < 2 * K; i++) {
			enum accdma_status st;
			uint64_t bytes;
			int src;

			SC_CHECK(accdma_wait_source(w, t[i], 30000, &st, &bytes, &src) == 0, "wait");
			SC_CHECK(st == ACCDMA_OK && (src == 1 || src == 2), "recv %d: %s from %d", i,
				 accdma_status_str(st), src);
			SC_CHECK(bytes == (next[src] % 2 ? LARGE : SMALL) &&
					 msg_is(rb + (uint64_t)i * LARGE, bytes, src, next[src]),
				 "recv %d: not message %d of %d", i, next[src], src);
			next[src]++;
		}
		SC_CHECK(next[1] == K && next[2] == K, "counts %d %d", next[1], next[2]);
	} else if (arg == 2) {
		/* rank 2 dies at once; rank 0's any-source recvs go on with rank 1 (alive),
		 * and complete PEER_LOST only once rank 1 has died too */
		accdma_token go;
		enum accdma_status st;
		int src;

		if (rank == 2)
			_exit(0);
		if (rank == 1) {
			for (int k = 0; k < 2; k++) {
				if (k) { /* the second only when rank 0 says so (tag 3) */
					SC_CHECK(accdma_recv(q, 0, 3, kd, 0, 8, NULL, 0, &go) == 0, "recv go");
					sc_wait_ok(w, go);
				}
				msg_make(sb + (uint64_t)k * SMALL, SMALL, 1, k);
				SC_CHECK(accdma_send(q, 0, TAG, ks, (uint64_t)k * SMALL, SMALL, NULL, 0, &t[k]) == 0,
					 "send");
				sc_wait_ok(w, t[k]);
			}
			_exit(0); /* dies without closing */
		}
		for (int i = 0; i < 3; i++)
			SC_CHECK(accdma_recv(q, ACCDMA_ANY_SOURCE, TAG, kd, (uint64_t)i * SMALL, SMALL, NULL, 0,
					     &t[i]) == 0, "recv");
		SC_CHECK(accdma_wait_source(w, t[0], 30000, &st, NULL, &src) == 0, "wait");
		SC_CHECK(st == ACCDMA_OK && src == 1 && msg_is(rb, SMALL, 1, 0), "first: %s from %d",
			 accdma_status_str(st), src);
		/* rank 2 is gone by now (or soon): rank 1 can still send, so it waits */
		poll(NULL, 0, 300);
		SC_CHECK(accdma_test(w, t[1], &st) == -EAGAIN, "second completed early: %s",
			 accdma_status_str(st));
		sb[0] = 1;
		SC_CHECK(accdma_send(q, 1, 3, ks, 0, 8, NULL, 0, &go) == 0, "send go");
		sc_wait_ok(w, go);
		SC_CHECK(accdma_wait_source(w, t[1], 30000, &st, NULL, &src) == 0, "wait");
		SC_CHECK(st == ACCDMA_OK && src == 1 && msg_is(rb + SMALL, SMALL, 1, 1), "second: %s from %d",
			 accdma_status_str(st), src);
		SC_CHECK(accdma_wait_source(w, t[2], 30000, &st, NULL, &src) == 0, "wait");
		SC_CHECK(st == ACCDMA_ST_PEER_LOST && src == ACCDMA_ANY_SOURCE, "third: %s from %d",
			 accdma_status_str(st), src);
	} else if (rank == 1) {
		msg_make(sb, SMALL, 1, 0);
		SC_CHECK(accdma_send(q, 0, TAG, ks, 0, SMALL, NULL, 0, &t[0]) == 0, "send");
		sc_wait_ok(w, t[0]);
	} else if (rank == 0) {
		enum accdma_status st;
		int src;

		for (int i = 0; i < 2; i++)
			SC_CHECK(accdma_recv(q, ACCDMA_ANY_SOURCE, TAG, kd, (uint64_t)i * LARGE, SMALL, NULL, 0,
					     &t[i]) == 0, "recv");
		SC_CHECK(accdma_wait_source(w, t[0], 30000, &st, NULL, &src) == 0, "wait");
		SC_CHECK(st == ACCDMA_OK && src == 1 && msg_is(rb, SMALL, 1, 0), "first: %s from %d",
			 accdma_status_str(st), src);
		SC_CHECK(accdma_wait_source(w, t[1], 30000, &st, NULL, &src) == 0, "wait");
		SC_CHECK(st == ACCDMA_ST_PEER_LOST && src == ACCDMA_ANY_SOURCE, "second: %s from %d",
			 accdma_status_str(st), src);
	}
	SC_CHECK(accdma_world_close(w) == 0, "close");
	return 0;
}

static void shm_case(int arg)
{
	struct shm_run r;

	shm_run_init(&r, 3);
	for (int i = 0; i < 3; i++)
		shm_spawn(&r, "any", i, arg);
	shm_run_end(&r);
	for (int i = 0; i < 3; i++)
		if (shm_code(&r, i) != 0) {
			print_error("shm any-source (%d): rank %d exited %d\n", arg, i, shm_code(&r, i));
			fail();
		}
}

static void test_shm_racing(void **state)
{
	(void)state;
	if (getenv("ACCDMA_TRANSPORT") && strcmp(getenv("ACCDMA_TRANSPORT"), "local"))
		skip();
	shm_case(0);
}

static void test_shm_sources_gone(void **state)
{
	(void)state;
	if (getenv("ACCDMA_TRANSPORT") && strcmp(getenv("ACCDMA_TRANSPORT"), "local"))
		skip();
	shm_case(1);
}

static void test_shm_sources_die(void **state)
{
	(void)state;
	if (getenv("ACCDMA_TRANSPORT") && strcmp(getenv("ACCDMA_TRANSPORT"), "local"))
		skip();
	shm_case(2);
}

int main(int argc, char **argv)
{
	struct th_cases t = { 0 };

	if (argc == 7 && !strcmp(argv[1], "--shm-child"))
		return shm_child(atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
	th_case(&t, test_recv_first_eager, NULL, "test_recv_first_eager");
	th_case(&t, test_recv_first_large, NULL, "test_recv_first_large");
	th_case(&t, test_racing_eager_recv_first, NULL, "test_racing_eager_recv_first");
	th_case(&t, test_racing_eager_send_first, NULL, "test_racing_eager_send_first");
	th_case(&t, test_racing_large, NULL, "test_racing_large");
	th_case(&t, test_mixed_eager, NULL, "test_mixed_eager");
	th_case(&t, test_mixed_large, NULL, "test_mixed_large");
	th_case(&t, test_mixed_recvs_first, NULL, "test_mixed_recvs_first");
	th_case(&t, test_self_and_truncated, NULL, "test_self_and_truncated");
	th_case(&t, test_cancel, NULL, "test_cancel");
	th_case(&t, test_failed_dep, NULL, "test_failed_dep");
	th_case(&t, test_bad_args, NULL, "test_bad_args");
	th_case(&t, test_shm_racing, NULL, "test_shm_racing");
	th_case(&t, test_shm_sources_gone, NULL, "test_shm_sources_gone");
	th_case(&t, test_shm_sources_die, NULL, "test_shm_sources_die");
	return th_run_cases("test_any_source", &t, NULL, NULL);
}
