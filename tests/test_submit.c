// SPDX-License-Identifier: MIT
/*
 * test_submit.c - the posting thread reads an idle queue's new ops itself.
 *
 * Where waiters run engine passes (polled devices, or host polling on), a
 * post that carries a small send (and no other send) to a queue with nothing
 * pending and nothing unread is read in the posting call, and the send
 * leaves there and then, if a host thread had to wait for an op since the
 * queue's last such read. A busy queue, a queue behind a fence, a large send,
 * a post without a send and a stream of posts are left to the next pass.
 * Polled devices (no engine threads) make every step visible: nothing else
 * moves them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include "helpers/th.h"
#include "queue/queue.h" /* the ring geometry */

#define TAG 7

static accdma_world *open_polled(int n)
{
	struct accdma_world_opts o;

	th_opts(&o, n);
	o.engines = 0;
	return th_open_opts(&o);
}

/* The op's stage, read without moving anything. */
static enum accdma_op_stage stage_of(accdma_world *w, accdma_token t)
{
	struct accdma_op_info info;

	assert_int_equal(accdma_op_info(w, t, &info), 0);
	return info.stage;
}

#define assert_stage(w, t, want)                                                            \
	do {                                                                                \
		enum accdma_op_stage got_ = stage_of(w, t);                                 \
		if (got_ != (want))                                                         \
			fail_msg("stage %s, expected %s", accdma_op_stage_str(got_),        \
				 accdma_op_stage_str(want));                                \
	} while (0)

/* A small send on an idle queue has left when accdma_send returns; a post
 * with no send is left to the pass; a permute round's post (a small send
 * and a recv) is read whole: the send leaves, the recv runs at the next pass. */
static void test_small_send_leaves_at_post(void **state)
{
	accdma_world *w = open_polled(2);
	uint8_t *b0, *b1;
	accdma_key k0 = th_alloc(w, 0, 128, (void **)&b0);
	accdma_key k1 = th_alloc(w, 1, 128, (void **)&b1);
	accdma_token ts, tr, t[2];
	enum accdma_status st[2];
	struct accdma_op round[2] = {
		{ .kind = ACCDMA_OP_SEND, .peer = 1, .tag = TAG, .key = k0, .offset = 8, .length = 8 },
		{ .kind = ACCDMA_OP_RECV, .peer = 1, .tag = TAG, .key = k0, .offset = 64, .length = 8 },
	};

	(void)state;
	th_fill_u8(b0, 64, 0x5a);
	th_fill_u8(b0 + 64, 64, 0);
	th_fill_u8(b1, 64, 0);
	th_fill_u8(b1 + 64, 64, 0x3c);
	assert_int_equal(accdma_send(th_q(w, 0), 1, TAG, k0, 0, 8, NULL, 0, &ts), 0);
	assert_stage(w, ts, ACCDMA_STAGE_DONE);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, TAG, k1, 0, 8, NULL, 0, &tr), 0);
	assert_stage(w, tr, ACCDMA_STAGE_POSTED);
	th_check_u8(b1, 64, 0, "recv buffer before any wait");
	th_wait_st(w, tr, ACCDMA_OK); /* it had to wait: the next post is read inline */
	th_wait_st(w, ts, ACCDMA_OK);
	th_check_u8(b1, 8, 0x5a, "the 8 bytes sent");
	th_check_u8(b1 + 8, 56, 0, "past the message");

	assert_int_equal(accdma_post(th_q(w, 0), round, 2, t), 2);
	assert_stage(w, t[0], ACCDMA_STAGE_DONE);
	assert_stage(w, t[1], ACCDMA_STAGE_DEPS);
	assert_int_equal(accdma_send(th_q(w, 1), 0, TAG, k1, 64, 8, NULL, 0, &ts), 0);
	assert_stage(w, ts, ACCDMA_STAGE_DONE);
	th_check_u8(b0 + 64, 8, 0, "device 0's recv before its pass");
	assert_int_equal(accdma_recv(th_q(w, 1), 0, TAG, k1, 8, 8, NULL, 0, &tr), 0);
	assert_int_equal(accdma_wait_all(w, t, 2, 10000, st), 0);
	assert_int_equal(st[0], ACCDMA_OK);
	assert_int_equal(st[1], ACCDMA_OK);
	th_wait_st(w, tr, ACCDMA_OK);
	th_wait_st(w, ts, ACCDMA_OK);
	th_check_u8(b0 + 64, 8, 0x3c, "device 0's recv of the round");
	th_check_u8(b1 + 8, 8, 0x5a, "device 1's recv of the round");
	th_close(w);
}

/* A post to a queue with an op pending is left to the next pass, which
 * then runs both in order. */
static void test_busy_queue_left_to_pass(void **state)
{
	accdma_world *w = open_polled(2);
	int32_t *buf0, *buf1;
	accdma_key k0 = th_alloc(w, 0, 64, (void **)&buf0);
	accdma_key k1 = th_alloc(w, 1, 64, (void **)&buf1);
	accdma_token r0, s0, s1, r1;
	enum accdma_status st;

	(void)state;
	th_fill_i32(buf0, 16, 0);
	th_fill_i32(buf1, 16, 0);
	buf0[8] = 100;
	buf1[8] = 200;
	/* device 0: a recv from 1, read by one pass and waiting; then a send to 1 */
	assert_int_equal(accdma_recv(th_q(w, 0), 1, TAG, k0, 0, 4, NULL, 0, &r0), 0);
	assert_int_equal(accdma_test(w, r0, &st), -EAGAIN);
	assert_stage(w, r0, ACCDMA_STAGE_PEER);
	assert_int_equal(accdma_send(th_q(w, 0), 1, TAG, k0, 32, 4, NULL, 0, &s0), 0);
	assert_stage(w, s0, ACCDMA_STAGE_POSTED);
	/* device 1, idle: its send leaves at once */
	assert_int_equal(accdma_send(th_q(w, 1), 0, TAG, k1, 32, 4, NULL, 0, &s1), 0);
	assert_stage(w, s1, ACCDMA_STAGE_DONE);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, TAG, k1, 0, 4, NULL, 0, &r1), 0);
	assert_int_equal(buf0[0], 0);
	assert_int_equal(buf1[0], 0);
	th_wait_st(w, r1, ACCDMA_OK);
	th_wait_st(w, r0, ACCDMA_OK);
	th_wait_st(w, s0, ACCDMA_OK);
	th_wait_st(w, s1, ACCDMA_OK);
	assert_int_equal(buf0[0], 200);
	assert_int_equal(buf1[0], 100);
	th_close(w);
}

/* Posts with no wait for an unfinished op between them stream: only the
 * first is read inline, the rest wait for a pass, which reads them as a
 * batch. A wait on a done op changes nothing; a test (or wait) that finds
 * its op pending puts the next post back inline. Every message lands, in order. */
static void test_back_to_back_posts_batch(void **state)
{
	enum { N = 8 };
	accdma_world *w = open_polled(2);
	int32_t *src, *dst;
	accdma_key ks = th_alloc(w, 0, N * 64, (void **)&src);
	accdma_key kd = th_alloc(w, 1, N * 64, (void **)&dst);
	accdma_token ts[N + 1], tr[N];
	enum accdma_status st;

	(void)state;
	for (int i = 0; i < N; i++) {
		src[i * 16] = 1000 + i;
		dst[i * 16] = -1;
	}
	for (int i = 0; i < N; i++) {
		assert_int_equal(accdma_send(th_q(w, 0), 1, TAG, ks, (uint64_t)i * 64, 4, NULL, 0,
					     &ts[i]), 0);
		if (i == 0) {
			assert_stage(w, ts[0], ACCDMA_STAGE_DONE);
			th_wait_st(w, ts[0], ACCDMA_OK); /* done already: still a stream */
		}
	}
	for (int i = 1; i < N; i++)
		assert_stage(w, ts[i], ACCDMA_STAGE_POSTED);
	/* a test that finds its op pending (and moves the devices), then a post read inline again */
	assert_int_equal(accdma_test(w, ts[N - 1], &st), 0);
	assert_int_equal(st, ACCDMA_OK);
	assert_int_equal(accdma_send(th_q(w, 0), 1, TAG, ks, 0, 4, NULL, 0, &ts[N]), 0);
	assert_stage(w, ts[N], ACCDMA_STAGE_DONE);
	for (int i = 0; i < N; i++)
		assert_int_equal(accdma_recv(th_q(w, 1), 0, TAG, kd, (uint64_t)i * 64, 4, NULL, 0,
					     &tr[i]), 0);
	th_wait_all_st(w, tr, N, ACCDMA_OK);
	for (int i = 0; i < N; i++)
		assert_int_equal(dst[i * 16], 1000 + i);
	th_wait_all_st(w, ts + 1, N - 2, ACCDMA_OK); /* ts[0] and ts[N - 1] were consumed above */
	th_wait_st(w, ts[N], ACCDMA_OK);
	th_close(w);
}

/* One post of more small sends than the peer's ring has room for, read
 * inline: those that fit are copied in, the rest wait at the rendezvous (the
 * posting thread takes them there), and the recvs posted later get every
 * message in order. A ring holds at least a queue's worth of messages, so it
 * is first filled part way, by sends completed (and consumed) before, a
 * queue's worth at a time. */
static void test_full_ring_at_post(void **state)
{
	enum { RING = 256, POS = RING * Q_EAGER_SLOTS_PER_OP, ROOM = 56, FIRST = POS - ROOM, N = 100,
	       ALL = FIRST + N };
	struct accdma_world_opts o;
	struct accdma_device_info info;
	accdma_world *w;
	int32_t *src, *dst;
	accdma_key ks, kd;
	struct accdma_op ops[ALL];
	accdma_token ts[ALL], tr[ALL];
	enum accdma_status st[ALL];

	(void)state;
	th_opts(&o, 2);
	o.engines = 0;
	o.queue_depth = RING;
	w = th_open_opts(&o);
	assert_int_equal(accdma_device_info(w, 1, &info), 0);
	assert_int_equal(info.eager_slots, POS);
	ks = th_alloc(w, 0, ALL * 64, (void **)&src);
	kd = th_alloc(w, 1, ALL * 64, (void **)&dst);
	for (int i = 0; i < ALL; i++) {
		src[i * 16] = 5000 + i;
		dst[i * 16] = -1;
		ops[i] = (struct accdma_op){ .kind = ACCDMA_OP_SEND, .peer = 1, .tag = TAG, .key = ks,
					     .offset = (uint64_t)i * 64, .length = 4 };
	}
	for (int at = 0; at < FIRST; at += RING) {
		int n = FIRST - at < RING ? FIRST - at : RING;

		assert_int_equal(accdma_post(th_q(w, 0), ops + at, n, ts + at), n);
		th_wait_all_ok(w, ts + at, n); /* eager: no recv is posted yet */
	}
	/* a wait that finds its op pending, so that the next post is read inline */
	assert_int_equal(accdma_fence(th_q(w, 1), NULL, 0, &tr[0]), 0);
	th_wait_ok(w, tr[0]);
	assert_int_equal(accdma_post(th_q(w, 0), ops + FIRST, N, ts + FIRST), N);
	for (int i = FIRST; i < ALL; i++) {
		enum accdma_op_stage got = stage_of(w, ts[i]), want =
			i < FIRST + ROOM ? ACCDMA_STAGE_DONE : ACCDMA_STAGE_PEER;

		if (got != want)
			fail_msg("send %d: stage %s, expected %s", i, accdma_op_stage_str(got),
				 accdma_op_stage_str(want));
	}
	for (int i = 0; i < ALL; i++)
		ops[i] = (struct accdma_op){ .kind = ACCDMA_OP_RECV, .peer = 0, .tag = TAG, .key = kd,
					     .offset = (uint64_t)i * 64, .length = 4 };
	/* several posts: a queue holds RING ops */
	for (int at = 0; at < ALL; at += RING) {
		int n = ALL - at < RING ? ALL - at : RING;

		assert_int_equal(accdma_post(th_q(w, 1), ops + at, n, tr + at), n);
		assert_int_equal(accdma_wait_all(w, tr + at, n, 10000, st + at), 0);
	}
	for (int i = 0; i < ALL; i++) {
		assert_int_equal(st[i], ACCDMA_OK);
		if (dst[i * 16] != 5000 + i)
			fail_msg("recv %d got %d, expected %d", i, dst[i * 16], 5000 + i);
	}
	th_wait_all_ok(w, ts + FIRST, N);
	th_close(w);
}

/* Behind a fence that waits, a post is not read, and the ops behind the
 * fence go in order once it completes. */
static void test_fence_holds_post(void **state)
{
	accdma_world *w = open_polled(2);
	uint8_t *b0, *b1;
	accdma_key k0 = th_alloc(w, 0, 64, (void **)&b0);
	accdma_key k1 = th_alloc(w, 1, 64, (void **)&b1);
	accdma_token r0, f0, s0, s1, r1;
	enum accdma_status st;

	(void)state;
	th_fill_u8(b0, 64, 0x22);
	th_fill_u8(b1, 64, 0x11);
	th_fill_u8(b0, 8, 0);
	th_fill_u8(b1 + 32, 8, 0);
	assert_int_equal(accdma_recv(th_q(w, 0), 1, TAG, k0, 0, 8, NULL, 0, &r0), 0);
	assert_int_equal(accdma_fence(th_q(w, 0), NULL, 0, &f0), 0);
	/* one pass: the recv waits for its message, the fence for the recv */
	assert_int_equal(accdma_test(w, f0, &st), -EAGAIN);
	assert_int_equal(accdma_send(th_q(w, 0), 1, TAG, k0, 32, 8, NULL, 0, &s0), 0);
	assert_stage(w, s0, ACCDMA_STAGE_POSTED); /* not read: the queue waits on its fence */
	/* the recv's message leaves at post; device 0 is not polled, so s0 stays put */
	assert_int_equal(accdma_send(th_q(w, 1), 0, TAG, k1, 0, 8, NULL, 0, &s1), 0);
	assert_stage(w, s1, ACCDMA_STAGE_DONE);
	assert_stage(w, s0, ACCDMA_STAGE_POSTED);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, TAG, k1, 32, 8, NULL, 0, &r1), 0);
	th_wait_st(w, r0, ACCDMA_OK);
	th_wait_st(w, f0, ACCDMA_OK);
	th_wait_st(w, s0, ACCDMA_OK);
	th_wait_st(w, r1, ACCDMA_OK);
	th_wait_st(w, s1, ACCDMA_OK);
	th_check_u8(b0, 8, 0x11, "device 0's recv, before the fence");
	th_check_u8(b1 + 32, 8, 0x22, "device 1's recv of the send behind the fence");
	th_close(w);
}

/* A post with a send larger than eager_max is not read inline: the copy is
 * the engine's (here: the waiter's pass), even with its recv already waiting. */
static void test_large_send_not_started_at_post(void **state)
{
	enum { LEN = 64 * 1024 };
	accdma_world *w = open_polled(2);
	uint8_t *src, *dst;
	accdma_key s = th_alloc(w, 0, LEN, (void **)&src);
	accdma_key r = th_alloc(w, 1, LEN, (void **)&dst);
	accdma_token ts, tr;
	enum accdma_status st;

	(void)state;
	th_fill_pattern(src, LEN, 3);
	th_fill_u8(dst, LEN, 0);
	assert_int_equal(accdma_recv(th_q(w, 1), 0, TAG, r, 0, LEN, NULL, 0, &tr), 0);
	/* one poll: the recv goes to wait for its send at the rendezvous */
	assert_int_equal(accdma_test(w, tr, &st), -EAGAIN);
	assert_stage(w, tr, ACCDMA_STAGE_PEER);
	assert_int_equal(accdma_send(th_q(w, 0), 1, TAG, s, 0, LEN, NULL, 0, &ts), 0);
	assert_stage(w, ts, ACCDMA_STAGE_POSTED);
	th_check_u8(dst, LEN, 0, "recv buffer after the post of its large send");
	th_wait_st(w, ts, ACCDMA_OK);
	th_wait_st(w, tr, ACCDMA_OK);
	th_check_pattern(dst, LEN, 3, "the large send's bytes");
	th_close(w);
}

/*
 * With engine threads, posts read in the posting thread race the engines'
 * passes over the same queues and rings: two host threads run the 8-byte
 * permute round (send to the other, recv from it, wait) and check each
 * round's value, so a message lost, doubled or out of order shows.
 */
struct round_arg {
	accdma_world *w;
	int dev, rounds;
	int32_t *buf;
	accdma_key key;
	int bad_round, bad_value;
};

static void *rounds_fn(void *p)
{
	struct round_arg *a = p;
	accdma_queue *q = th_q(a->w, a->dev);
	int peer = 1 - a->dev;

	a->bad_round = -1;
	for (int k = 0; k < a->rounds; k++) {
		accdma_token t[2];
		enum accdma_status st[2];

		a->buf[0] = k * 2 + a->dev; /* what we send this round */
		a->buf[8] = -1;
		if (accdma_send(q, peer, TAG, a->key, 0, 4, NULL, 0, &t[0]) ||
		    accdma_recv(q, peer, TAG, a->key, 32, 4, NULL, 0, &t[1]) ||
		    accdma_wait_all(a->w, t, 2, 10000, st) || st[0] != ACCDMA_OK ||
		    st[1] != ACCDMA_OK || a->buf[8] != k * 2 + peer) {
			a->bad_round = k;
			a->bad_value = a->buf[8];
			break;
		}
	}
	return NULL;
}

/* One case per engine count (*state): 1 (one queue) and 2 (two queues, one each). */
static void test_rounds_race_engines(void **state)
{
	int engines = *(const int *)*state;
	struct accdma_world_opts o;
	struct round_arg a[2];
	pthread_t th[2];
	accdma_world *w;

	{
		th_opts(&o, 2);
		o.engines = engines;
		o.queues = engines;
		w = th_open_opts(&o);
		for (int d = 0; d < 2; d++) {
			a[d] = (struct round_arg){ .w = w, .dev = d, .rounds = th_iters(20000) };
			a[d].key = th_alloc(w, d, 64, (void **)&a[d].buf);
		}
		for (int d = 0; d < 2; d++)
			assert_int_equal(pthread_create(&th[d], NULL, rounds_fn, &a[d]), 0);
		for (int d = 0; d < 2; d++)
			pthread_join(th[d], NULL);
		for (int d = 0; d < 2; d++)
			if (a[d].bad_round >= 0)
				fail_msg("engines %d: device %d round %d got %d, expected %d", engines, d,
					 a[d].bad_round, a[d].bad_value, a[d].bad_round * 2 + 1 - d);
		th_close(w);
	}
}

int main(void)
{
	static const int engines[] = { 1, 2 };
	struct th_cases cases = { 0 };

	th_case(&cases, test_small_send_leaves_at_post, NULL, "test_small_send_leaves_at_post");
	th_case(&cases, test_busy_queue_left_to_pass, NULL, "test_busy_queue_left_to_pass");
	th_case(&cases, test_back_to_back_posts_batch, NULL, "test_back_to_back_posts_batch");
	th_case(&cases, test_full_ring_at_post, NULL, "test_full_ring_at_post");
	th_case(&cases, test_fence_holds_post, NULL, "test_fence_holds_post");
	th_case(&cases, test_large_send_not_started_at_post, NULL,
		"test_large_send_not_started_at_post");
	for (int i = 0; i < 2; i++)
		th_case(&cases, test_rounds_race_engines, (void *)&engines[i],
			"test_rounds_race_engines/%d engines", engines[i]);
	return th_run_cases("test_submit", &cases, NULL, NULL);
}
