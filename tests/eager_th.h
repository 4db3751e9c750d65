/* SPDX-License-Identifier: MIT */
/*
 * eager_th.h - what the test_eager_*.c tests share: worlds in the six
 * configurations (engines 0, 1, 2 x queues 1, 2), a sender and a receiver
 * (struct pr), completion and pending checks, and the case list helpers.
 * Eager (inline) sends: a send of at most eager_max bytes is copied into the
 * receiver's per-(src, dst) inline ring and completes OK at once, whether or
 * not its recv is posted; larger sends, and small ones that find the ring
 * full, wait for their recv (rendezvous). Matching is unchanged: the k-th
 * send A->B with tag T lands in the k-th recv on B from A with tag T.
 */
#ifndef ACCDMA_TESTS_EAGER_TH_H
#define ACCDMA_TESTS_EAGER_TH_H

#include "helpers/th.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "driver/internal.h" /* the world's arena (run_forged_length) */
#include "queue/queue.h"     /* the ring geometry */
#include "shm_th.h"

#define GUARD 0xC7
#define GUARD_I32 ((int32_t)0xC7C7C7C7)
#define SRC_SIZE 8192
#define DST_SIZE 16384
/* The queue depth of the worlds that count on a full ring. Their rings have
 * POS positions (a line per op of a queue; deeper queues get deeper rings:
 * test_ring_geometry), so it takes POS messages of one position (up to
 * Q_EAGER_HEAD_BYTES) to fill one, posted a queue's worth at a time. */
#define RING 256
#define POS (RING * Q_EAGER_SLOTS_PER_OP)
/* Only turns "the eager send never completed" into a quick failure: an eager
 * send needs no peer, so a bounded wait on it is a deadlock check, not a timing one. */
#define EAGER_HANG_MS 15000

/* What the running test is doing, printed by the teardown if the test failed. */
static __attribute__((unused)) char ctx[192];

#define CTX(...) snprintf(ctx, sizeof(ctx), __VA_ARGS__)

static inline int teardown_ctx(void **state)
{
	(void)state;
	if (ctx[0])
		fprintf(stderr, "%s: failed in: %s\n", program_invocation_short_name, ctx);
	ctx[0] = 0;
	return 0;
}

struct cfg {
	int engines;
	int queues;
};

static __attribute__((unused)) const struct cfg cfgs[] = {
	{ 1, 1 }, { 0, 1 }, { 2, 1 }, { 1, 2 }, { 0, 2 }, { 2, 2 },
};
#define NCFG ((int)(sizeof(cfgs) / sizeof(cfgs[0])))

static inline accdma_world *open_w(int n, int engines, int queues, int eager, uint32_t depth,
				   uint64_t mem)
{
	struct accdma_world_opts o;

	th_opts(&o, n);
	o.engines = engines;
	o.queues = queues;
	o.eager_max = eager;
	if (depth)
		o.queue_depth = depth;
	if (mem)
		o.mem_size = mem;
	return th_open_opts(&o);
}

/* Wait for a send that must complete without its recv (the eager path). */
static inline void eager_done_(accdma_world *w, accdma_token t, const char *file, int line)
{
	th_assert_st_(th_wait_within_(w, t, EAGER_HANG_MS,
				      "a send of at most eager_max bytes did not complete before its "
				      "recv was posted",
				      file, line),
		      ACCDMA_OK, file, line);
}
#define eager_done(w, t) eager_done_((w), (t), __FILE__, __LINE__)

/* Wait and accept either of two statuses (where the contract allows both). */
static inline enum accdma_status wait_either_(accdma_world *w, accdma_token t, enum accdma_status a,
					      enum accdma_status b, const char *file, int line)
{
	enum accdma_status st = th_wait_(w, t, file, line);

	if (st != a && st != b) {
		print_error("status %s, want %s or %s\n", accdma_status_str(st), accdma_status_str(a),
			    accdma_status_str(b));
		_fail(file, line);
	}
	return st;
}
#define wait_either(w, t, a, b) wait_either_((w), (t), (a), (b), __FILE__, __LINE__)

/* The op still waits, after its device's engine issued it; a short timed
 * wait says -ETIMEDOUT and leaves the token valid. */
static inline void still_pending_(accdma_world *w, int dev, int qi, accdma_token t,
				  const char *file, int line)
{
	enum accdma_status st = ACCDMA_ST__COUNT;
	int rc;

	th_kick_(w, dev, qi, 2, file, line);
	th_pending_(w, t, file, line);
	rc = accdma_wait(w, t, 5, &st);
	if (rc != -ETIMEDOUT) {
		print_error("accdma_wait(5 ms) = %d (status %s): expected -ETIMEDOUT\n", rc,
			    rc == 0 ? accdma_status_str(st) : "-");
		_fail(file, line);
	}
	th_pending_(w, t, file, line);
}
#define still_pending(w, dev, qi, t) still_pending_((w), (dev), (qi), (t), __FILE__, __LINE__)

struct pr {
	accdma_world *w;
	accdma_queue *qs, *qr;
	int qsi, qri;
	uint8_t *src, *dst;
	accdma_key ks, kd;
};

static inline void pr_open(struct pr *p, int engines, int queues, int eager)
{
	p->w = open_w(2, engines, queues, eager, RING, 1u << 20);
	p->qsi = queues - 1; /* with two queues, sends and recvs use different ones */
	p->qri = 0;
	p->qs = th_qi(p->w, 0, p->qsi);
	p->qr = th_qi(p->w, 1, p->qri);
	p->ks = th_alloc(p->w, 0, SRC_SIZE, (void **)&p->src);
	p->kd = th_alloc(p->w, 1, DST_SIZE, (void **)&p->dst);
	th_fill_u8(p->dst, DST_SIZE, GUARD);
}

static inline accdma_token pr_send(struct pr *p, uint64_t tag, uint64_t off, uint64_t len,
				   uint32_t seed)
{
	accdma_token t = 0;

	th_fill_pattern(p->src + off, len, seed);
	assert_int_equal(accdma_send(p->qs, 1, tag, p->ks, off, len, NULL, 0, &t), 0);
	return t;
}

static inline accdma_token pr_recv(struct pr *p, uint64_t tag, uint64_t off, uint64_t len)
{
	accdma_token t = 0;

	assert_int_equal(accdma_recv(p->qr, 0, tag, p->kd, off, len, NULL, 0, &t), 0);
	return t;
}

/* The recv range [off, off + rlen) holds exactly @len bytes of pattern @seed,
 * then guard bytes: what landed is the send's length, no more. */
static inline void check_landed_(const uint8_t *dst, uint64_t off, uint64_t rlen, uint64_t len,
				 uint32_t seed, const char *file, int line)
{
	th_check_pattern_(dst + off, len, seed, "received bytes", file, line);
	th_check_u8_(dst + off + len, rlen - len, GUARD, "recv range past the send's length", file,
		     line);
}
#define check_landed(d, o, r, l, s) check_landed_((d), (o), (r), (l), (s), __FILE__, __LINE__)

#define CHUNK 128 /* recvs posted at a time: what a queue of RING slots takes with room to spare */

static inline void ovf_check_base(const int32_t *d, int from, int to, int base)
{
	for (int k = from; k < to; k++) {
		if (d[2 * k] != k + base || d[2 * k + 1] != GUARD_I32) {
			print_error("recv %d holds %d (then %#x), want payload %d\n", k, d[2 * k],
				    (unsigned)d[2 * k + 1], k + base);
			fail();
		}
	}
}

/* Post the 4-byte sends k in [from, to) (source offset 4k) on tag @tag, over
 * @nq queues in turn, a queue's worth at a time: each completes at once,
 * with no recv posted, and is consumed, which gives its queue slot back but
 * not its ring position. */
static inline void fill_sends(accdma_world *w, accdma_queue **qs, int nq, uint64_t tag,
			      accdma_key ks, int from, int to, accdma_token *s)
{
	for (int at = from; at < to; at += RING) {
		int end = at + RING < to ? at + RING : to;

		for (int k = at; k < end; k++)
			assert_int_equal(accdma_send(qs[k % nq], 1, tag, ks, (uint64_t)k * 4, 4, NULL, 0,
						     &s[k]),
					 0);
		for (int k = at; k < end; k++)
			eager_done(w, s[k]);
	}
}

/* Post the 8-byte recvs k in [from, to) (offset 8k) on tag @tag, CHUNK at a
 * time, and wait for each. */
static inline void recv_all(accdma_world *w, accdma_queue *q, uint64_t tag, accdma_key kd, int from,
			    int to, accdma_token *r)
{
	for (int at = from; at < to; at += CHUNK) {
		int end = at + CHUNK < to ? at + CHUNK : to;

		for (int k = at; k < end; k++)
			assert_int_equal(accdma_recv(q, 0, tag, kd, (uint64_t)k * 8, 8, NULL, 0, &r[k]), 0);
		for (int k = at; k < end; k++)
			th_wait_ok(w, r[k]);
	}
}

static __attribute__((unused)) uint64_t seed;

/* A configuration's name in case names. */
static inline const char *cfg_name(const struct cfg *c)
{
	static char names[NCFG][32];
	char *b = names[c - cfgs];

	snprintf(b, sizeof(names[0]), "engines %d, queues %d", c->engines, c->queues);
	return b;
}

/* One case with teardown_ctx; PER_CFG: one case per configuration (the first @n). */
#define CASE(L, fn, arg, ...)                                                                \
	do {                                                                                   \
		th_case((L), (fn), (void *)(arg), __VA_ARGS__);                                \
		(L)->t[(L)->n - 1].teardown_func = teardown_ctx;                               \
	} while (0)
#define PER_CFG(L, fn, n)                                                                    \
	for (int i_ = 0; i_ < (n); i_++)                                                       \
	CASE((L), fn, &cfgs[i_], #fn "/%s", cfg_name(&cfgs[i_]))

#endif
