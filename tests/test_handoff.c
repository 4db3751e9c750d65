/* SPDX-License-Identifier: MIT */
/*
 * test_handoff.c - a large send that finds its recv waiting hands the copy to
 * the recv's engine (fw_stub/match.c handoff(), docs/design-notes.md "Matching").
 *
 * A send of at least 2 KiB (FW_HANDOFF_MIN) that arrives second does not copy:
 * it puts its own entry in place of the recv's and the recv's engine arrives
 * again and copies. Smaller sends, and large sends whose recv is not posted
 * yet, keep "the second to arrive copies". None of this may show in what a
 * program sees: data, statuses, bytes moved and FIFO order are those of
 * test_matching / test_truncation, and cancel and reset never hang.
 *
 *  1. recv first, then a send of 2 KiB - 1 (no handoff), 2 KiB, 2 MiB and
 *     4 MiB + 1 (past the split-copy size), into a recv of the same length and
 *     of 100 bytes more: OK on both, accdma_op_info's moved (send and recv)
 *     before the tokens are consumed, data, guard bytes around the recv range
 *     and past the send's length; the same as a self-send (device 0 -> 0); and
 *     all four recvs posted before all four sends on one tag (FIFO);
 *  2. send first (the recv copies, no handoff) for the same sizes; and large
 *     (handed off), mid-size and eager messages interleaved on one tag, recvs
 *     first and sends first: each recv gets its own send;
 *  3. permute rings of 2, 3 and 4 devices, 2 MiB, 20 rounds, every op of a
 *     round posted at once in a random order (devices interleaved, queues
 *     random), the round number in the pattern;
 *  4. a window: 8 rounds of a 2-device permute posted at once (sends and recvs
 *     randomly interleaved), then waited; FIFO data check;
 *  5. truncation: 2 MiB (and 1 MiB + 1) into a 1 MiB recv, recv first (the
 *     handoff path) and send first: both TRUNCATED, moved 0, recv range and
 *     guards untouched; the next pair on the tag works;
 *  6. cancel races: a waiting 2 MiB recv canceled just before / just after its
 *     send is posted (spins of 0..400 iterations), 50 times: either the
 *     transfer happened (both OK, data) or recv CANCELED / send PEER_ERROR
 *     (recv range untouched, also after the next pair); the next pair on the
 *     tag always works; also the send canceled while it waits for its recv's
 *     engine: both OK, or send CANCELED / recv PEER_ERROR;
 *  7. reset races: accdma_device_reset of the receiver (and of the sender)
 *     while the handoff may be pending: no hang (waits use the world's
 *     timeout, 10 s), either both OK with the data or the reset device's op
 *     FLUSHED and its partner PEER_ERROR with the recv range untouched; the
 *     tag and the world work afterwards;
 *  8. shm: two processes, recv first on the receiver (it tells the sender to
 *     go only once its recv waits), 10 rounds both directions of 2 MiB and of
 *     8 KiB; and a
 *     4 MiB permute over the 2 processes; engines 1 and 2 (and 0: polled);
 *  9. the handoff held open (the receiver's one engine kept busy by an exec
 *     on its other queue): below 2 KiB the sender's engine completes both
 *     while the receiver is busy; from 2 KiB the send waits at stage PEER and
 *     nothing lands until the receiver's engine runs; then nothing / cancel of
 *     the send (CANCELED at once, recv PEER_ERROR) / cancel of the recv (either
 *     pair) / reset of the sender (FLUSHED at once, recv PEER_ERROR) / reset of
 *     the receiver (either pair); and the receiver's reset flushed while the
 *     handoff is pending (FLUSHED / PEER_ERROR, as accdma_device_reset()
 *     promises: nothing had moved).
 *
 * Cases are run for engines 0 (polled), 1 and 2, queues 1 and 2, and with
 * ACCDMA_POLL=0 (engine threads only). Under TSan, or with ACCDMA_TEST_QUICK
 * set, fewer configurations and rounds run. The seed of the random posting
 * orders is printed; repeat with ACCDMA_TEST_SEED. No assertion depends on
 * timing: the delays in the races only vary which outcome happens.
 */
#include "helpers/th.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "driver/internal.h" /* the mailbox's request counter (run_reset_flush_pending) */
#include "shm_th.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#define UNDER_TSAN 0
#endif

#define MIB (1ull << 20)
#define HANDOFF_MIN 2048 /* FW_HANDOFF_MIN in fw_stub/fw_internal.h */
#define G 4096          /* guard bytes on each side of a recv range */
#define GB 0xEE         /* guard byte */
#define WORLD_TIMEOUT_MS 10000

static uint64_t seed;
static int quick;

/* What the running test is doing, printed by the teardown if it failed. */
static char ctx[256];
#define CTX(...) snprintf(ctx, sizeof(ctx), __VA_ARGS__)

static int teardown_ctx(void **state)
{
	(void)state;
	if (ctx[0])
		fprintf(stderr, "test_handoff: failed in: %s (ACCDMA_TEST_SEED=%llu)\n", ctx,
			(unsigned long long)seed);
	ctx[0] = 0;
	return 0;
}

/* ---- configurations ------------------------------------------------------ */

struct cfg {
	int engines;
	int queues;
	int nopoll; /* ACCDMA_POLL=0 at world open: engine threads only */
};

static const struct cfg all_cfgs[] = {
	{ 0, 1, 0 }, { 1, 1, 0 }, { 2, 1, 0 }, { 0, 2, 0 }, { 1, 2, 0 }, { 2, 2, 0 },
	{ 1, 1, 1 }, { 2, 2, 1 },
};
static const struct cfg quick_cfgs[] = {
	{ 0, 1, 0 }, { 1, 2, 0 }, { 2, 1, 0 }, { 1, 1, 1 },
};

static const struct cfg *cfgs(int *n)
{
	if (quick) {
		*n = (int)(sizeof(quick_cfgs) / sizeof(quick_cfgs[0]));
		return quick_cfgs;
	}
	*n = (int)(sizeof(all_cfgs) / sizeof(all_cfgs[0]));
	return all_cfgs;
}

static accdma_world *open_cfg(int n, const struct cfg *c, uint64_t mem, uint32_t depth)
{
	struct accdma_world_opts o;
	const char *old = getenv("ACCDMA_POLL");
	char *saved = old ? strdup(old) : NULL;
	accdma_world *w;

	th_opts(&o, n);
	o.engines = c->engines;
	o.queues = c->queues;
	o.mem_size = mem;
	o.timeout_ms = WORLD_TIMEOUT_MS;
	if (depth)
		o.queue_depth = depth;
	if (c->nopoll)
		setenv("ACCDMA_POLL", "0", 1);
	w = th_open_opts(&o);
	if (c->nopoll) {
		if (saved)
			setenv("ACCDMA_POLL", saved, 1);
		else
			unsetenv("ACCDMA_POLL");
	}
	free(saved);
	return w;
}

/* Allocate @size bytes on @dev (th_alloc without its byte-by-byte zero check,
 * which is slow under TSan for the tens of MiB here). */
static accdma_key alloc_(accdma_world *w, int dev, uint64_t size, void **ptr, const char *file,
			 int line)
{
	accdma_key key = 0;
	uint64_t got = 0;
	int rc = accdma_mem_alloc(w, dev, size, &key);
	void *p = rc ? NULL : accdma_mem_ptr(w, dev, key, &got);

	if (!p || got != size) {
		print_error("accdma_mem_alloc(dev %d, %llu) = %d, key %u, size %llu\n", dev,
			    (unsigned long long)size, rc, key, (unsigned long long)got);
		_fail(file, line);
	}
	*ptr = p;
	return key;
}
#define ALLOC(w, dev, size, ptr) alloc_((w), (dev), (size), (void **)(ptr), __FILE__, __LINE__)

/* ---- data ---------------------------------------------------------------- */

/* Word j of pattern stream @sd (no short period: a shifted or stale copy differs). */
static inline uint64_t pat_word(uint32_t sd, uint64_t j)
{
	uint64_t x = (j + 1) * 0x9E3779B97F4A7C15ull ^ ((uint64_t)sd * 0xD1B54A32D192ED03ull);

	x ^= x >> 29;
	x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 32;
	return x;
}

static void pat_fill(uint8_t *p, uint64_t len, uint32_t sd)
{
	uint64_t j = 0, w;

	for (; (j + 1) * 8 <= len; j++) {
		w = pat_word(sd, j);
		memcpy(p + j * 8, &w, 8);
	}
	if (j * 8 < len) {
		w = pat_word(sd, j);
		memcpy(p + j * 8, &w, len - j * 8);
	}
}

static void pat_check_(const uint8_t *p, uint64_t len, uint32_t sd, const char *what,
		       const char *file, int line)
{
	for (uint64_t j = 0; j * 8 < len; j++) {
		uint64_t want = pat_word(sd, j), got = 0;
		uint64_t n = len - j * 8 < 8 ? len - j * 8 : 8;

		memcpy(&got, p + j * 8, n);
		if (n < 8)
			want &= (1ull << (8 * n)) - 1;
		if (got != want) {
			for (uint64_t b = 0; b < n; b++) {
				uint8_t g = (uint8_t)(got >> (8 * b)), x = (uint8_t)(want >> (8 * b));

				if (g != x) {
					print_error("%s: byte %llu of %llu is %#x, want %#x (pattern "
						    "%u)\n",
						    what, (unsigned long long)(j * 8 + b),
						    (unsigned long long)len, g, x, sd);
					break;
				}
			}
			_fail(file, line);
		}
	}
}
#define pat_check(p, len, sd, what) pat_check_((p), (len), (sd), (what), __FILE__, __LINE__)

static void guard_check_(const uint8_t *p, uint64_t len, const char *what, const char *file,
			 int line)
{
	for (uint64_t i = 0; i < len; i++)
		if (p[i] != GB) {
			print_error("%s: byte %llu of %llu is %#x, want the guard %#x\n", what,
				    (unsigned long long)i, (unsigned long long)len, p[i], GB);
			_fail(file, line);
		}
}
#define guard_check(p, len, what) guard_check_((p), (len), (what), __FILE__, __LINE__)

/* A recv range at @p (with G guard bytes before it) of @rlen bytes into which
 * @len bytes of pattern @sd landed; @after guard bytes follow the range. */
static void landed_check_(const uint8_t *p, uint64_t rlen, uint64_t len, uint32_t sd,
			  uint64_t after, const char *file, int line)
{
	guard_check_(p - G, G, "guard before the recv range", file, line);
	pat_check_(p, len, sd, "received data", file, line);
	guard_check_(p + len, rlen - len + after, "recv range past the send, and the guard after",
		     file, line);
}
#define landed_check(p, rlen, len, sd, after)                                                \
	landed_check_((p), (rlen), (len), (sd), (after), __FILE__, __LINE__)

static void spin(int n)
{
	for (volatile int i = 0; i < n; i++)
		;
}

/* ---- ops ----------------------------------------------------------------- */

/* Post one send or recv; a post that fails fails the test where it was called. */
static accdma_token pair_op_(accdma_queue *q, enum accdma_op_kind kind, int peer, uint64_t tag,
			     accdma_key k, uint64_t off, uint64_t len, const char *file, int line)
{
	struct accdma_op op = { .kind = kind, .peer = peer, .tag = tag, .key = k, .offset = off,
				.length = len };
	accdma_token t = 0;
	int rc = accdma_post(q, &op, 1, &t);

	if (rc != 1) {
		print_error("%s(peer %d, tag %llu, len %llu) = %d\n", accdma_op_kind_str(kind), peer,
			    (unsigned long long)tag, (unsigned long long)len, rc);
		_fail(file, line);
	}
	return t;
}
#define SEND(q, p, tag, k, off, len) \
	pair_op_((q), ACCDMA_OP_SEND, (p), (tag), (k), (off), (len), __FILE__, __LINE__)
#define RECV(q, p, tag, k, off, len) \
	pair_op_((q), ACCDMA_OP_RECV, (p), (tag), (k), (off), (len), __FILE__, __LINE__)

/* Wait with the world's timeout (10 s): a hang is a failure with a stall report. */
static enum accdma_status st_wait_(accdma_world *w, accdma_token t, const char *file, int line)
{
	enum accdma_status st = ACCDMA_ST__COUNT;
	int rc = accdma_wait(w, t, ACCDMA_TIMEOUT_DEFAULT, &st);

	if (rc) {
		if (rc == -ETIMEDOUT)
			accdma_stall_report(w, stderr);
		print_error("accdma_wait = %d (%s)\n", rc, rc == -ETIMEDOUT ? "hang" : strerror(-rc));
		_fail(file, line);
	}
	return st;
}
#define st_wait(w, t) st_wait_((w), (t), __FILE__, __LINE__)
#define wait_st(w, t, want)                                                                  \
	th_assert_st_(st_wait_((w), (t), __FILE__, __LINE__), (want), __FILE__, __LINE__)

static void wait_all_ok_(accdma_world *w, accdma_token *t, int n, const char *file, int line)
{
	enum accdma_status st[64];
	int rc;

	assert_true(n <= 64);
	rc = accdma_wait_all(w, t, n, ACCDMA_TIMEOUT_DEFAULT, st);
	if (rc) {
		if (rc == -ETIMEDOUT)
			accdma_stall_report(w, stderr);
		print_error("accdma_wait_all(%d) = %d\n", n, rc);
		_fail(file, line);
	}
	for (int i = 0; i < n; i++)
		if (st[i] != ACCDMA_OK) {
			print_error("token %d of %d: status %s\n", i, n, accdma_status_str(st[i]));
			_fail(file, line);
		}
}
#define wait_all_ok(w, t, n) wait_all_ok_((w), (t), (n), __FILE__, __LINE__)

/*
 * Let the devices run until op @t (not consumed) is at stage @want, or DONE
 * when @want is ACCDMA_STAGE_DONE; an op done early when it should wait is a
 * failure. A polled world moves only while a host thread waits or tests: then
 * accdma_test(@t) (for a stage before DONE, the op cannot be done: -EAGAIN) or,
 * to reach DONE without consuming @t, a no-op exec waited on @kick_dev/@kick_q.
 */
static void until_(accdma_world *w, int polled, accdma_token t, enum accdma_op_stage want,
		   int kick_dev, int kick_q, struct accdma_op_info *out, const char *file, int line)
{
	struct accdma_op_info info;
	uint64_t end = shm_now_ms() + WORLD_TIMEOUT_MS;

	if (!out)
		out = &info;
	for (;;) {
		int rc = accdma_op_info(w, t, out);

		if (rc) {
			print_error("accdma_op_info = %d\n", rc);
			_fail(file, line);
		}
		if (out->stage == want)
			return;
		if (out->stage == ACCDMA_STAGE_DONE) {
			print_error("the op completed (%s) while it should wait at stage %s\n",
				    accdma_status_str(out->status), accdma_op_stage_str(want));
			_fail(file, line);
		}
		if (shm_now_ms() > end) {
			accdma_stall_report(w, stderr);
			print_error("the op stays at stage %s, want %s\n",
				    accdma_op_stage_str(out->stage), accdma_op_stage_str(want));
			_fail(file, line);
		}
		if (polled && want != ACCDMA_STAGE_DONE) {
			rc = accdma_test(w, t, NULL);
			if (rc != -EAGAIN) {
				print_error("accdma_test = %d, want -EAGAIN (the op must wait)\n", rc);
				_fail(file, line);
			}
		} else if (polled) {
			th_kick_(w, kick_dev, kick_q, 1, file, line);
		} else {
			usleep(20);
		}
	}
}
#define until_stage(w, polled, t, stage)                                                     \
	until_((w), (polled), (t), (stage), 0, 0, NULL, __FILE__, __LINE__)

/* Assert a done op's info: status and bytes moved. */
static void info_is_(const struct accdma_op_info *i, enum accdma_op_kind kind,
		     enum accdma_status st, uint64_t bytes, uint64_t moved, const char *file, int line)
{
	if (i->kind != kind || i->status != st || i->bytes != bytes || i->moved != moved) {
		print_error("op info: %s status %s bytes %llu moved %llu; want %s %s bytes %llu "
			    "moved %llu\n",
			    accdma_op_kind_str(i->kind), accdma_status_str(i->status),
			    (unsigned long long)i->bytes, (unsigned long long)i->moved,
			    accdma_op_kind_str(kind), accdma_status_str(st), (unsigned long long)bytes,
			    (unsigned long long)moved);
		_fail(file, line);
	}
}

/* Readings of stage DONE whose status and moved were not the op's final ones yet. */
static int diag_transients;

/*
 * Let op @t (not consumed) complete, then assert its kind, status, length and
 * bytes moved from accdma_op_info(). accdma_op_info() can report stage DONE
 * with status OK and moved 0 for a moment before the completion is published
 * (driver/diag.c reads the stage word, which complete() in fw_stub/complete.c,
 * behind fw_complete_own() and fw_complete_waiting(), stores before the
 * slot's state): such a reading is read again (bounded) and counted, so only
 * a final value that differs fails.
 */
static void done_is_(accdma_world *w, int polled, accdma_token t, int kick_dev, int kick_q,
		     enum accdma_op_kind kind, enum accdma_status st, uint64_t bytes,
		     uint64_t moved, const char *file, int line)
{
	struct accdma_op_info i;
	uint64_t end;

	until_(w, polled, t, ACCDMA_STAGE_DONE, kick_dev, kick_q, &i, file, line);
	if (i.status != st || i.moved != moved) {
		diag_transients++;
		end = shm_now_ms() + WORLD_TIMEOUT_MS;
		while ((i.status != st || i.moved != moved) && shm_now_ms() < end) {
			sched_yield();
			if (accdma_op_info(w, t, &i)) {
				print_error("accdma_op_info failed\n");
				_fail(file, line);
			}
		}
	}
	info_is_(&i, kind, st, bytes, moved, file, line);
}
#define done_is(w, polled, t, kd, kq, kind, st, bytes, moved)                                 \
	done_is_((w), (polled), (t), (kd), (kq), (kind), (st), (bytes), (moved), __FILE__, __LINE__)

/* ---- 1 and 2. one pair: recv first (the handoff) and send first --------- */

static const uint64_t pair_sizes[] = { HANDOFF_MIN - 1, HANDOFF_MIN, 2 * MIB, 4 * MIB + 1 };
#define NSIZES ((int)(sizeof(pair_sizes) / sizeof(pair_sizes[0])))
#define SUMLEN (8 * MIB + 1) /* every size back to back */
#define EXTRA 100 /* a recv longer than its send */

struct pw {
	accdma_world *w;
	int polled, sdev, rdev, qsi, qri;
	accdma_queue *qs, *qr;
	uint8_t *src, *dst; /* dst: G guard, then the recv ranges, G guard after each */
	accdma_key ks, kd;
	uint64_t dsize;
};

static void pw_open(struct pw *p, const struct cfg *c, int self)
{
	p->w = open_cfg(2, c, 20 * MIB, 0);
	p->polled = c->engines == 0;
	p->sdev = 0;
	p->rdev = self ? 0 : 1;
	p->qsi = c->queues - 1; /* with two queues, sends and recvs use different ones */
	p->qri = 0;
	p->qs = th_qi(p->w, p->sdev, p->qsi);
	p->qr = th_qi(p->w, p->rdev, p->qri);
	p->ks = ALLOC(p->w, p->sdev, SUMLEN, &p->src);
	/* room for the FIFO batch: every size back to back, each with its guard */
	p->dsize = G;
	for (int i = 0; i < NSIZES; i++)
		p->dsize += pair_sizes[i] + EXTRA + G;
	p->kd = ALLOC(p->w, p->rdev, p->dsize, &p->dst);
}

static void run_pair(struct pw *p, uint64_t len, uint64_t rlen, int recv_first, uint32_t sd)
{
	struct accdma_op_info ri;
	accdma_token s, r;

	pat_fill(p->src, len, sd);
	memset(p->dst, GB, p->dsize);
	if (recv_first) {
		r = RECV(p->qr, p->sdev, 1, p->kd, G, rlen);
		until_stage(p->w, p->polled, r, ACCDMA_STAGE_PEER);
		assert_int_equal(accdma_op_info(p->w, r, &ri), 0);
		assert_int_equal(ri.peer_posted, 0);
		assert_int_equal(ri.moved, 0);
		s = SEND(p->qs, p->rdev, 1, p->ks, 0, len);
	} else {
		s = SEND(p->qs, p->rdev, 1, p->ks, 0, len);
		until_stage(p->w, p->polled, s, ACCDMA_STAGE_PEER);
		/* the receiver's engine ran too (a no-op on the recv queue): still nothing landed */
		th_kick_q(p->w, p->rdev, p->qri, 1);
		guard_check(p->dst, p->dsize, "receiver memory before the recv is posted");
		r = RECV(p->qr, p->sdev, 1, p->kd, G, rlen);
	}
	/* moved, read before the tokens are consumed */
	done_is(p->w, p->polled, s, p->sdev, p->qsi, ACCDMA_OP_SEND, ACCDMA_OK, len, len);
	done_is(p->w, p->polled, r, p->rdev, p->qri, ACCDMA_OP_RECV, ACCDMA_OK, rlen, len);
	if (sd & 1) {
		wait_st(p->w, s, ACCDMA_OK);
		wait_st(p->w, r, ACCDMA_OK);
	} else {
		wait_st(p->w, r, ACCDMA_OK);
		wait_st(p->w, s, ACCDMA_OK);
	}
	landed_check(p->dst + G, rlen, len, sd, p->dsize - G - rlen);
	pat_check(p->src, len, sd, "source after the send");
}

/* All the sizes' recvs posted (and waiting) before all the sends, one tag:
 * the k-th send lands in the k-th recv. */
static void run_fifo_batch(struct pw *p, uint32_t sd)
{
	accdma_token t[2 * NSIZES];
	uint64_t off[NSIZES], o = G, so = 0;

	memset(p->dst, GB, p->dsize);
	for (int k = 0; k < NSIZES; k++) {
		off[k] = o;
		o += pair_sizes[k] + EXTRA + G;
		t[k] = RECV(p->qr, p->sdev, 2, p->kd, off[k], pair_sizes[k] + EXTRA);
	}
	until_stage(p->w, p->polled, t[NSIZES - 1], ACCDMA_STAGE_PEER);
	for (int k = 0; k < NSIZES; k++) {
		pat_fill(p->src + so, pair_sizes[k], sd + (uint32_t)k);
		t[NSIZES + k] = SEND(p->qs, p->rdev, 2, p->ks, so, pair_sizes[k]);
		so += pair_sizes[k];
	}
	wait_all_ok(p->w, t, 2 * NSIZES);
	guard_check(p->dst, G, "guard before the first recv");
	for (int k = 0; k < NSIZES; k++) {
		pat_check(p->dst + off[k], pair_sizes[k], sd + (uint32_t)k, "fifo batch recv");
		guard_check(p->dst + off[k] + pair_sizes[k], EXTRA + G, "past a fifo batch recv");
	}
	so = 0;
	for (int k = 0; k < NSIZES; k++) {
		pat_check(p->src + so, pair_sizes[k], sd + (uint32_t)k, "fifo batch source");
		so += pair_sizes[k];
	}
}

static void run_pairs(const struct cfg *c, int self, int recv_first)
{
	struct pw p;

	CTX("pairs engines=%d queues=%d nopoll=%d self=%d", c->engines, c->queues, c->nopoll, self);
	pw_open(&p, c, self);
	for (int i = 0; i < NSIZES; i++)
		for (int extra = 0; extra <= EXTRA; extra += EXTRA) {
			CTX("pairs engines=%d queues=%d nopoll=%d self=%d %s len %llu rlen %llu",
			    c->engines, c->queues, c->nopoll, self,
			    recv_first ? "recv first" : "send first",
			    (unsigned long long)pair_sizes[i],
			    (unsigned long long)pair_sizes[i] + (unsigned)extra);
			run_pair(&p, pair_sizes[i], pair_sizes[i] + (uint64_t)extra, recv_first,
				 (uint32_t)(1000 + 10 * i + extra / EXTRA + 100 * recv_first));
		}
	if (recv_first) {
		CTX("fifo batch engines=%d queues=%d nopoll=%d self=%d", c->engines, c->queues,
		    c->nopoll, self);
		run_fifo_batch(&p, 500);
	}
	th_close(p.w);
	ctx[0] = 0;
}

/* The tests below run once per configuration: *state is its struct cfg (main()). */
static void test_recv_first(void **state)
{
	run_pairs(*state, 0, 1);
}

/* self-send: the device hands the copy to itself */
static void test_recv_first_self(void **state)
{
	run_pairs(*state, 1, 1);
}

static void test_send_first(void **state)
{
	run_pairs(*state, 0, 0);
}

/* ---- 2b. large and eager messages on one tag ---------------------------------- */

/* Handed-off and eager messages share the tag's FIFO and the receiver's
 * lookups of landed eager messages (made while a recv of that sender waits in
 * the table): every recv gets its own send, recvs first (large ones handed
 * off) and sends first (eager ones complete before their recvs exist). */
static const uint64_t mixed_sizes[] = { 2 * MIB, 8, HANDOFF_MIN, ACCDMA_EAGER_MAX,
					HANDOFF_MIN - 1, ACCDMA_EAGER_MAX + 1, 2 * MIB, 1 };
#define NMIXED ((int)(sizeof(mixed_sizes) / sizeof(mixed_sizes[0])))

static void run_mixed(const struct cfg *c, int recv_first)
{
	uint64_t soff[NMIXED], roff[NMIXED], so = 0, ro = G;
	accdma_world *w;
	int polled = c->engines == 0;
	uint8_t *src, *dst;
	accdma_key ks, kd;
	accdma_token t[2 * NMIXED];

	CTX("mixed sizes engines=%d queues=%d nopoll=%d %s", c->engines, c->queues, c->nopoll,
	    recv_first ? "recvs first" : "sends first");
	for (int k = 0; k < NMIXED; k++) {
		soff[k] = so;
		so += (mixed_sizes[k] + 7) & ~7ull;
		roff[k] = ro;
		ro += mixed_sizes[k] + G;
	}
	w = open_cfg(2, c, so + ro + MIB, 0);
	ks = ALLOC(w, 0, so, &src);
	kd = ALLOC(w, 1, ro, &dst);
	memset(dst, GB, ro);
	for (int k = 0; k < NMIXED; k++)
		pat_fill(src + soff[k], mixed_sizes[k], 700u + (uint32_t)k);
	for (int h = 0; h < 2; h++) {
		if ((h == 0) == (recv_first != 0)) {
			for (int k = 0; k < NMIXED; k++)
				t[NMIXED + k] = RECV(th_q(w, 1), 0, 11, kd, roff[k], mixed_sizes[k]);
			if (h == 0) /* the last recv waits: so do all before it */
				until_stage(w, polled, t[2 * NMIXED - 1], ACCDMA_STAGE_PEER);
		} else {
			for (int k = 0; k < NMIXED; k++)
				t[k] = SEND(th_qi(w, 0, c->queues - 1), 1, 11, ks, soff[k], mixed_sizes[k]);
		}
	}
	wait_all_ok(w, t, 2 * NMIXED);
	guard_check(dst, G, "guard before the first recv");
	for (int k = 0; k < NMIXED; k++) {
		pat_check(dst + roff[k], mixed_sizes[k], 700u + (uint32_t)k, "mixed-size recv");
		guard_check(dst + roff[k] + mixed_sizes[k], G, "guard after a mixed-size recv");
	}
	th_close(w);
	ctx[0] = 0;
}

static void test_mixed_eager(void **state)
{
	run_mixed(*state, 1);
	run_mixed(*state, 0);
}

/* ---- 3. permute rings ------------------------------------------------------- */

static uint32_t ring_seed(int round, int dev)
{
	return 30000u + (uint32_t)round * 16u + (uint32_t)dev;
}

static void run_ring(const struct cfg *c, int n, int rounds, uint64_t len, struct th_rng *rng)
{
	accdma_world *w = open_cfg(n, c, 2 * len + 4 * G + MIB, 0);
	uint8_t *src[4], *dst[4];
	accdma_key ks[4], kd[4];
	accdma_token t[8];

	for (int d = 0; d < n; d++) {
		ks[d] = ALLOC(w, d, len, &src[d]);
		kd[d] = ALLOC(w, d, len + 2 * G, &dst[d]);
		memset(dst[d], GB, len + 2 * G);
	}
	for (int round = 0; round < rounds; round++) {
		int order[8];

		CTX("ring n=%d engines=%d queues=%d nopoll=%d len %llu round %d", n, c->engines,
		    c->queues, c->nopoll, (unsigned long long)len, round);
		for (int d = 0; d < n; d++)
			pat_fill(src[d], len, ring_seed(round, d));
		for (int i = 0; i < 2 * n; i++)
			order[i] = i;
		th_shuffle(order, 2 * n, rng);
		for (int i = 0; i < 2 * n; i++) {
			int d = order[i] / 2;
			accdma_queue *q = th_qi(w, d, (int)th_rand_below(rng, (uint64_t)c->queues));

			if (order[i] % 2 == 0)
				t[i] = SEND(q, (d + 1) % n, 3, ks[d], 0, len);
			else
				t[i] = RECV(q, (d + n - 1) % n, 3, kd[d], G, len);
		}
		wait_all_ok(w, t, 2 * n);
		for (int d = 0; d < n; d++)
			landed_check(dst[d] + G, len, len, ring_seed(round, (d + n - 1) % n), G);
	}
	th_close(w);
	ctx[0] = 0;
}

static const struct cfg ring_cfgs[] = {
	{ 0, 1, 0 }, { 1, 1, 0 }, { 2, 2, 0 }, { 1, 2, 1 },
};
#define NRING ((int)(sizeof(ring_cfgs) / sizeof(ring_cfgs[0])))
/* A ring of @n devices in configuration @c: one case each (main()). */
struct ring_case {
	int n;
	const struct cfg *c;
};

static void test_permute_ring(void **state)
{
	const struct ring_case *rc = *state;
	struct th_rng rng = { seed ^ 0x3333 ^ ((uint64_t)rc->n << 8) ^ (uint64_t)(rc->c - ring_cfgs) };

	run_ring(rc->c, rc->n, quick ? 3 : 20, 2 * MIB, &rng);
}

/* ---- 4. a window of rounds posted at once ----------------------------------- */

#define WIN 8

static uint32_t win_seed(int k, int dev)
{
	return 40000u + (uint32_t)k * 4u + (uint32_t)dev;
}

static void run_window(const struct cfg *c, uint64_t len, struct th_rng *rng)
{
	uint64_t slot = len + G, dsize = G + WIN * slot;
	accdma_world *w = open_cfg(2, c, WIN * len + dsize + MIB, 64);
	uint8_t *src[2], *dst[2];
	accdma_key ks[2], kd[2];
	accdma_token t[4 * WIN];
	int kinds[4 * WIN], next[4] = { 0, 0, 0, 0 };

	CTX("window engines=%d queues=%d nopoll=%d len %llu", c->engines, c->queues, c->nopoll,
	    (unsigned long long)len);
	for (int d = 0; d < 2; d++) {
		ks[d] = ALLOC(w, d, WIN * len, &src[d]);
		kd[d] = ALLOC(w, d, dsize, &dst[d]);
		memset(dst[d], GB, dsize);
		for (int k = 0; k < WIN; k++)
			pat_fill(src[d] + k * len, len, win_seed(k, d));
	}
	/* every (device, kind) WIN times, randomly interleaved; the k-th of a
	 * (device, kind) in this order is its round k */
	for (int i = 0; i < 4 * WIN; i++)
		kinds[i] = i % 4;
	th_shuffle(kinds, 4 * WIN, rng);
	for (int i = 0; i < 4 * WIN; i++) {
		int d = kinds[i] / 2, k = next[kinds[i]]++;
		accdma_queue *q = th_qi(w, d, (int)th_rand_below(rng, (uint64_t)c->queues));

		if (kinds[i] % 2 == 0)
			t[i] = SEND(q, 1 - d, 4, ks[d], (uint64_t)k * len, len);
		else
			t[i] = RECV(q, 1 - d, 4, kd[d], G + (uint64_t)k * slot, len);
	}
	wait_all_ok(w, t, 4 * WIN);
	for (int d = 0; d < 2; d++) {
		guard_check(dst[d], G, "guard before the first window slot");
		for (int k = 0; k < WIN; k++) {
			CTX("window engines=%d queues=%d nopoll=%d len %llu: device %d slot %d",
			    c->engines, c->queues, c->nopoll, (unsigned long long)len, d, k);
			pat_check(dst[d] + G + k * slot, len, win_seed(k, 1 - d), "window slot");
			guard_check(dst[d] + G + k * slot + len, G, "guard after a window slot");
		}
	}
	th_close(w);
	ctx[0] = 0;
}

static void test_window(void **state)
{
	const struct cfg *c = *state;
	struct th_rng rng = { seed ^ 0x4444 ^ ((uint64_t)c->engines << 8) ^ ((uint64_t)c->queues << 4) ^
			      (uint64_t)c->nopoll };

	run_window(c, quick ? HANDOFF_MIN : 2 * MIB, &rng);
}

/* ---- 5. truncation ------------------------------------------------------------ */

static void run_truncation(const struct cfg *c, uint64_t slen, int recv_first)
{
	const uint64_t rlen = MIB, len2 = 2 * MIB;
	/* slot A: the truncated recv; slot B: the next pair */
	uint64_t offa = G, offb = G + rlen + G, dsize = offb + len2 + G;
	accdma_world *w = open_cfg(2, c, 8 * MIB, 0);
	int polled = c->engines == 0;
	uint8_t *src, *dst;
	accdma_key ks = ALLOC(w, 0, 2 * len2, &src);
	accdma_key kd = ALLOC(w, 1, dsize, &dst);
	accdma_queue *qs = th_qi(w, 0, c->queues - 1), *qr = th_q(w, 1);
	accdma_token s, r, s2, r2;

	CTX("truncation engines=%d queues=%d nopoll=%d send %llu into recv %llu %s", c->engines,
	    c->queues, c->nopoll, (unsigned long long)slen, (unsigned long long)rlen,
	    recv_first ? "recv first" : "send first");
	pat_fill(src, slen, 51);
	pat_fill(src + len2, len2, 52);
	memset(dst, GB, dsize);
	if (recv_first) {
		r = RECV(qr, 0, 5, kd, offa, rlen);
		until_stage(w, polled, r, ACCDMA_STAGE_PEER);
		s = SEND(qs, 1, 5, ks, 0, slen);
	} else {
		s = SEND(qs, 1, 5, ks, 0, slen);
		until_stage(w, polled, s, ACCDMA_STAGE_PEER);
		r = RECV(qr, 0, 5, kd, offa, rlen);
	}
	done_is(w, polled, s, 0, c->queues - 1, ACCDMA_OP_SEND, ACCDMA_ST_TRUNCATED, slen, 0);
	done_is(w, polled, r, 1, 0, ACCDMA_OP_RECV, ACCDMA_ST_TRUNCATED, rlen, 0);
	wait_st(w, r, ACCDMA_ST_TRUNCATED);
	wait_st(w, s, ACCDMA_ST_TRUNCATED);
	guard_check(dst, dsize, "receiver memory after a truncated transfer");
	pat_check(src, slen, 51, "source of the truncated send");
	/* the next pair on the tag matches normally (recv first: the handoff again) */
	r2 = RECV(qr, 0, 5, kd, offb, len2);
	until_stage(w, polled, r2, ACCDMA_STAGE_PEER);
	s2 = SEND(qs, 1, 5, ks, len2, len2);
	wait_st(w, s2, ACCDMA_OK);
	wait_st(w, r2, ACCDMA_OK);
	guard_check(dst, offb, "truncated recv range and guards, after the next pair");
	landed_check(dst + offb, len2, len2, 52, G);
	th_close(w);
	ctx[0] = 0;
}

static void test_truncation(void **state)
{
	static const struct cfg tc[] = { { 0, 1, 0 }, { 1, 1, 0 }, { 2, 2, 0 }, { 1, 1, 1 } };

	(void)state;
	for (int i = 0; i < 4; i++) {
		run_truncation(&tc[i], 2 * MIB, 1);
		run_truncation(&tc[i], MIB + 1, 1);
		run_truncation(&tc[i], 2 * MIB, 0);
	}
}

/* ---- 6. cancel races ------------------------------------------------------------ */

#define RLEN (2 * MIB)

struct race {
	accdma_world *w;
	int polled, qsi;
	accdma_queue *qs, *qr;
	uint8_t *src, *dst;
	accdma_key ks, kd;
	uint64_t offa, offb, dsize; /* slot A: the racing pair; slot B: the next pair */
	uint64_t alen;              /* the racing pair's length (at most RLEN) */
};

static void race_open(struct race *x, const struct cfg *c)
{
	x->w = open_cfg(2, c, 8 * MIB, 0);
	x->polled = c->engines == 0;
	x->qsi = c->queues - 1;
	x->qs = th_qi(x->w, 0, x->qsi);
	x->qr = th_q(x->w, 1);
	x->offa = G;
	x->offb = G + RLEN + G;
	x->dsize = x->offb + RLEN + G;
	x->alen = RLEN;
	x->ks = ALLOC(x->w, 0, 2 * RLEN, &x->src);
	x->kd = ALLOC(x->w, 1, x->dsize, &x->dst);
}

/* The racing pair ended one way or the other: check slot A for it. */
static void slot_a_check(struct race *x, int happened, uint32_t sd)
{
	if (happened)
		landed_check(x->dst + x->offa, RLEN, x->alen, sd, 0);
	else
		guard_check(x->dst, x->offb, "recv range of a pair that did not happen");
}

/* The next pair on the tag works, and slot A keeps what the race left. */
static void next_pair(struct race *x, uint64_t tag, int it, int happened, uint32_t sd)
{
	accdma_token s2, r2;

	pat_fill(x->src + RLEN, RLEN, sd + 1);
	if (it & 2) {
		s2 = SEND(x->qs, 1, tag, x->ks, RLEN, RLEN);
		r2 = RECV(x->qr, 0, tag, x->kd, x->offb, RLEN);
	} else {
		r2 = RECV(x->qr, 0, tag, x->kd, x->offb, RLEN);
		s2 = SEND(x->qs, 1, tag, x->ks, RLEN, RLEN);
	}
	wait_st(x->w, r2, ACCDMA_OK);
	wait_st(x->w, s2, ACCDMA_OK);
	landed_check(x->dst + x->offb, RLEN, RLEN, sd + 1, G);
	slot_a_check(x, happened, sd);
}

/* A recv waiting (stage PEER) is canceled around its large send's arrival. */
static void run_cancel_recv(const struct cfg *c, int iters)
{
	struct race x;
	int n_ok = 0, n_canceled = 0;

	race_open(&x, c);
	for (int it = 0; it < iters; it++) {
		int mode = it % 6; /* 0: cancel, then post the send; else post, spin, cancel */
		uint32_t sd = 60000u + 2u * (uint32_t)it;
		enum accdma_status rs, ss;
		accdma_token s, r;

		CTX("cancel recv engines=%d queues=%d nopoll=%d it %d mode %d", c->engines, c->queues,
		    c->nopoll, it, mode);
		memset(x.dst, GB, x.dsize);
		pat_fill(x.src, RLEN, sd);
		r = RECV(x.qr, 0, 6, x.kd, x.offa, RLEN);
		until_stage(x.w, x.polled, r, ACCDMA_STAGE_PEER);
		if (mode == 0) {
			assert_int_equal(accdma_cancel(x.w, r), 0);
			s = SEND(x.qs, 1, 6, x.ks, 0, RLEN);
		} else {
			s = SEND(x.qs, 1, 6, x.ks, 0, RLEN);
			spin((mode - 1) * 100);
			assert_int_equal(accdma_cancel(x.w, r), 0);
		}
		if (it & 1) {
			ss = st_wait(x.w, s);
			rs = st_wait(x.w, r);
		} else {
			rs = st_wait(x.w, r);
			ss = st_wait(x.w, s);
		}
		if (rs == ACCDMA_OK && ss == ACCDMA_OK) {
			n_ok++;
		} else if (rs == ACCDMA_ST_CANCELED && ss == ACCDMA_ST_PEER_ERROR) {
			n_canceled++;
		} else {
			fail_msg("cancel race it %d mode %d: recv %s, send %s; want OK/OK or "
				 "CANCELED/PEER_ERROR",
				 it, mode, accdma_status_str(rs), accdma_status_str(ss));
		}
		slot_a_check(&x, rs == ACCDMA_OK, sd);
		pat_check(x.src, RLEN, sd, "source of the racing send");
		next_pair(&x, 6, it, rs == ACCDMA_OK, sd);
	}
	print_message("cancel recv engines=%d queues=%d nopoll=%d: %d iterations: %d transferred, "
		      "%d canceled\n",
		      c->engines, c->queues, c->nopoll, iters, n_ok, n_canceled);
	th_close(x.w);
	ctx[0] = 0;
}

/* The send is canceled while it may wait for its recv's engine to copy it. */
static void run_cancel_send(const struct cfg *c, int iters)
{
	struct race x;
	int n_ok = 0, n_canceled = 0;

	race_open(&x, c);
	for (int it = 0; it < iters; it++) {
		int mode = it % 4;
		uint32_t sd = 61000u + 2u * (uint32_t)it;
		enum accdma_status rs, ss;
		accdma_token s, r;

		CTX("cancel send engines=%d queues=%d nopoll=%d it %d mode %d", c->engines, c->queues,
		    c->nopoll, it, mode);
		memset(x.dst, GB, x.dsize);
		pat_fill(x.src, RLEN, sd);
		r = RECV(x.qr, 0, 7, x.kd, x.offa, RLEN);
		until_stage(x.w, x.polled, r, ACCDMA_STAGE_PEER);
		s = SEND(x.qs, 1, 7, x.ks, 0, RLEN);
		spin(mode * 100);
		assert_int_equal(accdma_cancel(x.w, s), 0);
		rs = st_wait(x.w, r);
		ss = st_wait(x.w, s);
		if (rs == ACCDMA_OK && ss == ACCDMA_OK)
			n_ok++;
		else if (rs == ACCDMA_ST_PEER_ERROR && ss == ACCDMA_ST_CANCELED)
			n_canceled++;
		else
			fail_msg("cancel send it %d: recv %s, send %s; want OK/OK or "
				 "PEER_ERROR/CANCELED",
				 it, accdma_status_str(rs), accdma_status_str(ss));
		slot_a_check(&x, rs == ACCDMA_OK, sd);
		next_pair(&x, 7, it, rs == ACCDMA_OK, sd);
	}
	print_message("cancel send engines=%d queues=%d nopoll=%d: %d iterations: %d transferred, "
		      "%d canceled\n",
		      c->engines, c->queues, c->nopoll, iters, n_ok, n_canceled);
	th_close(x.w);
	ctx[0] = 0;
}

static const struct cfg race_cfgs[] = {
	{ 0, 1, 0 }, { 1, 1, 0 }, { 2, 1, 0 }, { 2, 2, 0 }, { 1, 1, 1 },
};
#define NRACE ((int)(sizeof(race_cfgs) / sizeof(race_cfgs[0])))

/* Once per race configuration (*state; the first three in quick mode). */
static void test_cancel_race(void **state)
{
	run_cancel_recv(*state, quick ? 12 : 50);
	run_cancel_send(*state, quick ? 4 : 20);
}

/* ---- 7. reset races --------------------------------------------------------------- */

/* Reset device @victim (1: the receiver, 0: the sender) while the large send
 * may be waiting for the recv's engine. */
static void run_reset_race(const struct cfg *c, int victim, int iters)
{
	struct race x;
	struct accdma_device_health h;
	int n_ok = 0, n_flushed = 0, n_done_after = 0;

	race_open(&x, c);
	for (int it = 0; it < iters; it++) {
		int mode = it % 5;
		uint32_t sd = 62000u + 2u * (uint32_t)it;
		enum accdma_status rs, ss, mine, theirs;
		struct accdma_op_info ri;
		accdma_token s, r;
		int rc;

		CTX("reset %s engines=%d queues=%d nopoll=%d it %d mode %d",
		    victim ? "receiver" : "sender", c->engines, c->queues, c->nopoll, it, mode);
		memset(x.dst, GB, x.dsize);
		pat_fill(x.src, RLEN, sd);
		r = RECV(x.qr, 0, 8, x.kd, x.offa, RLEN);
		until_stage(x.w, x.polled, r, ACCDMA_STAGE_PEER);
		s = SEND(x.qs, 1, 8, x.ks, 0, RLEN);
		spin(mode * 100);
		rc = accdma_device_reset(x.w, victim);
		if (rc) {
			accdma_stall_report(x.w, stderr);
			fail_msg("accdma_device_reset(%d) = %d", victim, rc);
		}
		/* for the report: was the recv still pending when the reset returned? */
		assert_int_equal(accdma_op_info(x.w, r, &ri), 0);
		rs = st_wait(x.w, r);
		ss = st_wait(x.w, s);
		mine = victim ? rs : ss;
		theirs = victim ? ss : rs;
		if (rs == ACCDMA_OK && ss == ACCDMA_OK) {
			n_ok++;
			if (ri.stage != ACCDMA_STAGE_DONE)
				n_done_after++;
		} else if (mine == ACCDMA_ST_FLUSHED && theirs == ACCDMA_ST_PEER_ERROR) {
			n_flushed++;
		} else {
			fail_msg("reset %s, it %d: recv %s, send %s; want OK/OK or the reset "
				 "device's op FLUSHED and its partner PEER_ERROR",
				 victim ? "receiver" : "sender", it, accdma_status_str(rs),
				 accdma_status_str(ss));
		}
		slot_a_check(&x, rs == ACCDMA_OK, sd);
		assert_int_equal(accdma_device_health(x.w, victim, &h), 0);
		assert_true(h.resets == (uint64_t)it + 1);
		/* the tag still pairs, and so does a fresh one */
		next_pair(&x, 8, it, rs == ACCDMA_OK, sd);
		next_pair(&x, 1000 + (uint64_t)it, it + 2, rs == ACCDMA_OK, sd);
	}
	assert_int_equal(accdma_device_health(x.w, victim, &h), 0);
	assert_true(h.ops_pending == 0);
	print_message("reset %s engines=%d queues=%d nopoll=%d: %d iterations: %d transferred "
		      "(%d of them completed after the reset returned), %d flushed\n",
		      victim ? "receiver" : "sender", c->engines, c->queues, c->nopoll, iters, n_ok,
		      n_done_after, n_flushed);
	th_close(x.w);
	ctx[0] = 0;
}

/* Once per race configuration, as test_cancel_race. */
static void test_reset_race(void **state)
{
	run_reset_race(*state, 1, quick ? 5 : 20);
	run_reset_race(*state, 0, quick ? 3 : 10);
}

/* ---- 9. the handoff state held open: the receiver's engine kept busy --------------- */

/*
 * Device 1 has one engine serving two queues: its recv waits (stage PEER) on
 * queue 0, then an exec on queue 1 keeps the engine busy until released. A
 * send arriving now finds the recv waiting: below 2 KiB it copies and
 * completes both on its own engine (device 1's engine is not needed); from
 * 2 KiB it hands the copy over and waits (stage PEER, nothing landed) until
 * device 1's engine runs again. While it is held there: nothing, a cancel of
 * the send, a cancel of the recv, a reset of the sender, a reset of the
 * receiver (from a thread: the mailbox is served by the busy engine).
 */
struct blocker {
	atomic_int started;
	atomic_int release;
};
static struct blocker blk;

static int block_fn(void *arg)
{
	struct blocker *b = arg;

	atomic_store(&b->started, 1);
	while (!atomic_load(&b->release))
		sched_yield();
	return 0;
}

static int teardown_blocked(void **state)
{
	atomic_store(&blk.release, 1); /* never leave an engine spinning after a failure */
	return teardown_ctx(state);
}

enum held_action { HELD_NONE, HELD_CANCEL_SEND, HELD_CANCEL_RECV, HELD_RESET_SENDER,
		   HELD_RESET_RECEIVER, HELD__COUNT };
static const char *const held_names[] = { "nothing", "cancel send", "cancel recv",
					  "reset sender", "reset receiver" };

struct reset_arg {
	accdma_world *w;
	int dev, rc;
};

static void *reset_thread(void *arg)
{
	struct reset_arg *a = arg;

	a->rc = accdma_device_reset(a->w, a->dev);
	return NULL;
}

static void run_held(const struct cfg *c, uint64_t len, enum held_action act, int *outcome_ok)
{
	struct race x;
	struct accdma_op_info si, ri;
	accdma_token s, r, e;
	enum accdma_status rs, ss;
	uint32_t sd = 90000u + (uint32_t)act * 4u + (len >= HANDOFF_MIN ? 2u : 0u);
	struct reset_arg ra = { 0 };
	pthread_t th;

	CTX("held engines=%d queues=%d nopoll=%d len %llu action %s", c->engines, c->queues,
	    c->nopoll, (unsigned long long)len, held_names[act]);
	race_open(&x, c);
	x.alen = len;
	memset(x.dst, GB, x.dsize);
	pat_fill(x.src, len, sd);
	atomic_store(&blk.started, 0);
	atomic_store(&blk.release, 0);
	r = RECV(x.qr, 0, 9, x.kd, x.offa, len);
	until_stage(x.w, 0, r, ACCDMA_STAGE_PEER);
	assert_int_equal(accdma_exec(th_qi(x.w, 1, 1), block_fn, &blk, NULL, 0, &e), 0);
	while (!atomic_load(&blk.started))
		sched_yield();
	s = SEND(x.qs, 1, 9, x.ks, 0, len);
	th_kick_q(x.w, 0, x.qsi, 1); /* device 0's engine has issued the send */
	if (len < HANDOFF_MIN) {
		/* no handoff: the sender's engine completes both, device 1 stays busy */
		wait_st(x.w, s, ACCDMA_OK);
		done_is(x.w, 0, r, 0, x.qsi, ACCDMA_OP_RECV, ACCDMA_OK, len, len);
		landed_check(x.dst + x.offa, len, len, sd, x.dsize - x.offa - len);
		atomic_store(&blk.release, 1);
		wait_st(x.w, e, ACCDMA_OK);
		wait_st(x.w, r, ACCDMA_OK);
		th_close(x.w);
		ctx[0] = 0;
		return;
	}
	/* handed off: the send waits for device 1's engine, nothing has landed */
	assert_int_equal(accdma_op_info(x.w, s, &si), 0);
	assert_int_equal(si.stage, ACCDMA_STAGE_PEER);
	assert_int_equal(si.peer_posted, 1);
	assert_int_equal(accdma_op_info(x.w, r, &ri), 0);
	assert_int_equal(ri.stage, ACCDMA_STAGE_PEER);
	guard_check(x.dst, x.dsize, "recv range while the copy is handed to a busy engine");
	switch (act) {
	case HELD_NONE:
		break;
	case HELD_CANCEL_SEND:
		/* the send has not started moving data: CANCELED, without device 1 */
		assert_int_equal(accdma_cancel(x.w, s), 0);
		wait_st(x.w, s, ACCDMA_ST_CANCELED);
		break;
	case HELD_CANCEL_RECV:
		assert_int_equal(accdma_cancel(x.w, r), 0);
		break;
	case HELD_RESET_SENDER:
		/* every op pending on the sender completes FLUSHED, without device 1 */
		assert_int_equal(accdma_device_reset(x.w, 0), 0);
		wait_st(x.w, s, ACCDMA_ST_FLUSHED);
		break;
	case HELD_RESET_RECEIVER:
		ra.w = x.w;
		ra.dev = 1;
		ra.rc = 1;
		assert_int_equal(pthread_create(&th, NULL, reset_thread, &ra), 0);
		break;
	default:
		break;
	}
	atomic_store(&blk.release, 1);
	wait_st(x.w, e, ACCDMA_OK);
	if (act == HELD_RESET_RECEIVER) {
		assert_int_equal(pthread_join(th, NULL), 0);
		assert_int_equal(ra.rc, 0);
	}
	rs = st_wait(x.w, r);
	ss = (act == HELD_CANCEL_SEND) ? ACCDMA_ST_CANCELED
	     : (act == HELD_RESET_SENDER) ? ACCDMA_ST_FLUSHED
					  : st_wait(x.w, s);
	switch (act) {
	case HELD_NONE:
		th_assert_st(rs, ACCDMA_OK);
		th_assert_st(ss, ACCDMA_OK);
		break;
	case HELD_CANCEL_SEND:
	case HELD_RESET_SENDER:
		th_assert_st(rs, ACCDMA_ST_PEER_ERROR);
		break;
	case HELD_CANCEL_RECV:
		if (!((rs == ACCDMA_OK && ss == ACCDMA_OK) ||
		      (rs == ACCDMA_ST_CANCELED && ss == ACCDMA_ST_PEER_ERROR)))
			fail_msg("cancel of a handed-off recv: recv %s, send %s", accdma_status_str(rs),
				 accdma_status_str(ss));
		break;
	case HELD_RESET_RECEIVER:
		if (!((rs == ACCDMA_OK && ss == ACCDMA_OK) ||
		      (rs == ACCDMA_ST_FLUSHED && ss == ACCDMA_ST_PEER_ERROR)))
			fail_msg("reset of a receiver with a handed-off recv: recv %s, send %s",
				 accdma_status_str(rs), accdma_status_str(ss));
		break;
	default:
		break;
	}
	if (outcome_ok)
		*outcome_ok = rs == ACCDMA_OK;
	if (rs == ACCDMA_OK)
		landed_check(x.dst + x.offa, len, len, sd, x.dsize - x.offa - len);
	else
		guard_check(x.dst, x.dsize, "recv range of a pair that did not happen");
	/* the tag pairs on (the next pair's send is 2 MiB: the handoff again) */
	next_pair(&x, 9, (int)act, rs == ACCDMA_OK, sd);
	th_close(x.w);
	ctx[0] = 0;
}

/*
 * The receiver's reset is flushed while the handoff is pending: the
 * receiver's one engine runs its mailbox (the epoch is bumped), then its recv
 * queue, where an exec behind the waiting recv holds it; only now does the
 * large send arrive and hand the copy over. The next pass of that engine
 * flushes its queues with the handoff pending, acknowledges the reset, and the
 * reset returns.
 */
static struct blocker blk2;

static int teardown_blocked2(void **state)
{
	atomic_store(&blk2.release, 1);
	return teardown_blocked(state);
}

static void run_reset_flush_pending(const struct cfg *c, enum accdma_status *rs_out,
				    enum accdma_status *ss_out)
{
	struct race x;
	struct accdma_op_info si;
	accdma_token s, r, e1, e2;
	enum accdma_status rs, ss;
	uint32_t sd = 91000u;
	struct reset_arg ra = { 0 };
	uint32_t req;
	pthread_t th;

	CTX("reset flushed with the handoff pending engines=%d queues=%d nopoll=%d", c->engines,
	    c->queues, c->nopoll);
	race_open(&x, c);
	memset(x.dst, GB, x.dsize);
	pat_fill(x.src, RLEN, sd);
	atomic_store(&blk.started, 0);
	atomic_store(&blk.release, 0);
	atomic_store(&blk2.started, 0);
	atomic_store(&blk2.release, 0);
	r = RECV(x.qr, 0, 10, x.kd, x.offa, RLEN);
	until_stage(x.w, 0, r, ACCDMA_STAGE_PEER);
	/* hold the engine in queue 1, then queue the second blocker behind the recv */
	assert_int_equal(accdma_exec(th_qi(x.w, 1, 1), block_fn, &blk, NULL, 0, &e1), 0);
	while (!atomic_load(&blk.started))
		sched_yield();
	assert_int_equal(accdma_exec(th_qi(x.w, 1, 0), block_fn, &blk2, NULL, 0, &e2), 0);
	ra.w = x.w;
	ra.dev = 1;
	ra.rc = 1;
	req = atomic_load(&q_dev(&x.w->a, 1)->mb.req_seq);
	assert_int_equal(pthread_create(&th, NULL, reset_thread, &ra), 0);
	/* The reset request must be in the mailbox before the engine's next pass
	 * (which looks at the mailbox first): a sleep made that only likely, and
	 * with the cores busy the engine ran the copy before it saw the reset. */
	while (atomic_load(&q_dev(&x.w->a, 1)->mb.req_seq) == req)
		sched_yield();
	atomic_store(&blk.release, 1);
	while (!atomic_load(&blk2.started))
		sched_yield();
	s = SEND(x.qs, 1, 10, x.ks, 0, RLEN);
	th_kick_q(x.w, 0, x.qsi, 1);
	assert_int_equal(accdma_op_info(x.w, s, &si), 0);
	assert_int_equal(si.stage, ACCDMA_STAGE_PEER); /* handed off, or flushed-recv pending */
	atomic_store(&blk2.release, 1);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(ra.rc, 0);
	rs = st_wait(x.w, r);
	ss = st_wait(x.w, s);
	st_wait(x.w, e1); /* the blockers: done before the flush, or running through it */
	st_wait(x.w, e2);
	*rs_out = rs;
	*ss_out = ss;
	/* The flush ran while the recv was pending with nothing moved: by
	 * accdma_device_reset()'s contract the recv is FLUSHED, and its send,
	 * which had handed it the copy, PEER_ERROR (fw_queue_flush refuses the
	 * handoff; before, the reset device moved the data after the reset). */
	if (rs != ACCDMA_ST_FLUSHED || ss != ACCDMA_ST_PEER_ERROR)
		fail_msg("reset flushed with a pending handoff: recv %s, send %s; want FLUSHED, "
			 "PEER_ERROR", accdma_status_str(rs), accdma_status_str(ss));
	x.alen = RLEN;
	guard_check(x.dst, x.dsize, "recv range of a flushed recv");
	next_pair(&x, 10, 0, 0, sd);
	th_close(x.w);
	ctx[0] = 0;
}

static void test_held_handoff(void **state)
{
	static const struct cfg hc[] = { { 1, 2, 0 }, { 1, 2, 1 } };
	int ok_cancel_recv = 0, ok_reset_recv = 0, ok;

	(void)state;
	for (int i = 0; i < 2; i++) {
		run_held(&hc[i], HANDOFF_MIN - 1, HELD_NONE, NULL);
		for (int a = 0; a < HELD__COUNT; a++) {
			ok = 0;
			run_held(&hc[i], HANDOFF_MIN, (enum held_action)a, &ok);
			if (a == HELD_CANCEL_RECV)
				ok_cancel_recv += ok;
			if (a == HELD_RESET_RECEIVER)
				ok_reset_recv += ok;
			run_held(&hc[i], 2 * MIB, (enum held_action)a, &ok);
			if (a == HELD_CANCEL_RECV)
				ok_cancel_recv += ok;
			if (a == HELD_RESET_RECEIVER)
				ok_reset_recv += ok;
		}
	}
	print_message("held handoff: recv canceled while handed off: %d of 4 transferred; "
		      "receiver reset while handed off: %d of 4 transferred\n",
		      ok_cancel_recv, ok_reset_recv);
	for (int i = 0; i < 2; i++) {
		enum accdma_status rs, ss;

		run_reset_flush_pending(&hc[i], &rs, &ss);
		print_message("receiver flushed with the handoff pending (nopoll=%d): recv %s, send %s\n",
			      hc[i].nopoll, accdma_status_str(rs), accdma_status_str(ss));
	}
}

/* ---- 8. shm: two processes --------------------------------------------------------- */

#define SHM_ROUNDS 10
#define SHM_PERM_ROUNDS 5

static uint32_t shm_seed(int round, int dir, int rank)
{
	return 80000u + (uint32_t)round * 8u + (uint32_t)dir * 2u + (uint32_t)rank;
}

static int sc_range_ok(const uint8_t *p, uint64_t len, uint32_t sd, uint64_t *bad)
{
	for (uint64_t j = 0; j * 8 < len; j++) {
		uint64_t want = pat_word(sd, j), got = 0;
		uint64_t n = len - j * 8 < 8 ? len - j * 8 : 8;

		memcpy(&got, p + j * 8, n);
		if (n < 8)
			want &= (1ull << (8 * n)) - 1;
		if (got != want) {
			*bad = j * 8;
			return 0;
		}
	}
	return 1;
}

static int sc_guard_ok(const uint8_t *p, uint64_t len, uint64_t *bad)
{
	for (uint64_t i = 0; i < len; i++)
		if (p[i] != GB) {
			*bad = i;
			return 0;
		}
	return 1;
}

/* In a rank: the recv range at dst + G holds @len bytes of pattern @sd, guards around it. */
static void sc_landed(const uint8_t *dst, uint64_t len, uint32_t sd, const char *what, int round)
{
	uint64_t bad = 0;

	SC_CHECK(sc_guard_ok(dst, G, &bad), "%s round %d: guard before, byte %llu", what, round,
		 (unsigned long long)bad);
	SC_CHECK(sc_range_ok(dst + G, len, sd, &bad), "%s round %d: data differs at byte %llu",
		 what, round, (unsigned long long)bad);
	SC_CHECK(sc_guard_ok(dst + G + len, G, &bad), "%s round %d: guard after, byte %llu", what,
		 round, (unsigned long long)bad);
}

/* Wait (in a rank) until op @t is at stage @want; polled: accdma_test drives. */
static void sc_until_stage(accdma_world *w, accdma_token t, int polled, enum accdma_op_stage want)
{
	uint64_t end = shm_now_ms() + 30000;
	struct accdma_op_info i;

	for (;;) {
		SC_CHECK(accdma_op_info(w, t, &i) == 0, "op_info");
		if (i.stage == want)
			return;
		SC_CHECK(i.stage != ACCDMA_STAGE_DONE, "op done (%s) before its peer posted",
			 accdma_status_str(i.status));
		SC_CHECK(shm_now_ms() < end, "op stays at stage %s", accdma_op_stage_str(i.stage));
		if (polled)
			SC_CHECK(accdma_test(w, t, NULL) == -EAGAIN, "test");
		else
			usleep(20);
	}
}

/* arg: engines | (seed << 4) */
static int shm_child(const char *sc, int rank, int n, int port, int64_t arg)
{
	const uint64_t len = strcmp(sc, "perm") ? 2 * MIB : 4 * MIB;
	int engines = (int)(arg & 15), peer = 1 - rank;
	struct th_rng rng = { ((uint64_t)arg >> 4) ^ (uint64_t)rank * 0x5555 };
	struct accdma_world_opts o;
	accdma_world *w = NULL;
	accdma_queue *q;
	accdma_key ks, kd, kg;
	uint8_t *src, *dst;
	int rc;

	sc_rank = rank;
	sc_opts(&o, rank, n, port, 20000);
	o.engines = engines;
	o.mem_size = 2 * len + 2 * MIB;
	rc = accdma_world_open(&o, &w);
	SC_CHECK(rc == 0 && w, "accdma_world_open = %d", rc);
	SC_CHECK(accdma_queue_get(w, rank, 0, &q) == 0, "queue_get");
	SC_CHECK(accdma_mem_alloc(w, rank, len, &ks) == 0, "alloc");
	SC_CHECK(accdma_mem_alloc(w, rank, len + 2 * G, &kd) == 0, "alloc");
	SC_CHECK(accdma_mem_alloc(w, rank, 4096, &kg) == 0, "alloc");
	src = accdma_mem_ptr(w, rank, ks, NULL);
	dst = accdma_mem_ptr(w, rank, kd, NULL);
	SC_CHECK(src && dst, "mem_ptr");

	if (!strcmp(sc, "pp")) {
		/* dir 0: rank 1 receives; dir 1: rank 0 receives. The receiver's recv
		 * waits before it tells the sender (a small eager message) to send. */
		for (int round = 0; round < SHM_ROUNDS; round++)
			for (int dir = 0; dir < 2; dir++) {
				int receiver = dir == 0 ? 1 : 0;
				uint64_t rl = round % 2 ? 8 * 1024 : len; /* odd rounds: a mid size */
				accdma_token t, go;

				if (rank == receiver) {
					memset(dst, GB, len + 2 * G);
					rc = accdma_recv(q, peer, 1, kd, G, rl, NULL, 0, &t);
					SC_CHECK(rc == 0, "recv = %d", rc);
					sc_until_stage(w, t, engines == 0, ACCDMA_STAGE_PEER);
					SC_CHECK(accdma_send(q, peer, 2, kg, 0, 8, NULL, 0, &go) == 0, "go");
					sc_wait_ok(w, go);
					sc_wait_ok(w, t);
					sc_landed(dst, rl, shm_seed(round, dir, peer),
						  dir ? "pp rank 0 receives" : "pp rank 1 receives", round);
				} else {
					pat_fill(src, rl, shm_seed(round, dir, rank));
					rc = accdma_recv(q, peer, 2, kg, 0, 8, NULL, 0, &go);
					SC_CHECK(rc == 0, "recv go = %d", rc);
					sc_wait_ok(w, go);
					rc = accdma_send(q, peer, 1, ks, 0, rl, NULL, 0, &t);
					SC_CHECK(rc == 0, "send = %d", rc);
					sc_wait_ok(w, t);
				}
			}
	} else {
		/* a 2-process permute: both post send and recv in a random order, no sync */
		memset(dst, GB, len + 2 * G);
		for (int round = 0; round < SHM_PERM_ROUNDS; round++) {
			accdma_token t[2];
			int first = (int)th_rand_below(&rng, 2);

			pat_fill(src, len, shm_seed(round, 0, rank));
			for (int h = 0; h < 2; h++) {
				if ((h == 0) == (first == 0))
					rc = accdma_send(q, peer, 3, ks, 0, len, NULL, 0, &t[0]);
				else
					rc = accdma_recv(q, peer, 3, kd, G, len, NULL, 0, &t[1]);
				SC_CHECK(rc == 0, "round %d: post = %d", round, rc);
			}
			sc_wait_ok(w, t[round & 1]);
			sc_wait_ok(w, t[1 - (round & 1)]);
			sc_landed(dst, len, shm_seed(round, 0, peer), "perm", round);
		}
	}
	SC_CHECK(accdma_world_close(w) == 0, "close");
	return 0;
}

static void run_shm(const char *sc, int engines)
{
	struct shm_run r;
	int64_t arg = (int64_t)(((seed & 0xffffffu) << 4) | (uint64_t)engines);

	CTX("shm %s engines=%d", sc, engines);
	shm_run_init(&r, 2);
	shm_spawn(&r, sc, 0, arg);
	shm_spawn(&r, sc, 1, arg);
	shm_run_end(&r);
	for (int i = 0; i < 2; i++)
		if (shm_code(&r, i) != 0)
			fail_msg("shm %s engines=%d: rank %d exited %d", sc, engines, i, shm_code(&r, i));
	ctx[0] = 0;
}

static void test_shm(void **state)
{
	(void)state;
	for (int e = quick ? 1 : 0; e <= 2; e++) {
		run_shm("pp", e);
		run_shm("perm", e);
	}
}

/* A configuration's name in case names: "engines 1, queues 2, no polling". */
static const char *cfg_name(const struct cfg *c)
{
	static char names[64][48];
	static int next;
	char *b = names[next++ % 64];

	snprintf(b, sizeof(names[0]), "engines %d, queues %d%s", c->engines, c->queues,
		 c->nopoll ? ", no polling" : "");
	return b;
}

/* Add a case with teardown_ctx. */
#define CASE(L, fn, arg, ...)                                                                \
	do {                                                                                   \
		th_case((L), (fn), (void *)(arg), __VA_ARGS__);                                \
		(L)->t[(L)->n - 1].teardown_func = teardown_ctx;                               \
	} while (0)

/* One case per test and configuration, so that a failure names its configuration. */
static void add_cases(struct th_cases *t)
{
	static struct ring_case rings[3 * NRING];
	int n, nr = 0, nrace = quick ? 3 : NRACE;
	const struct cfg *c = cfgs(&n);

	for (int i = 0; i < n; i++)
		CASE(t, test_recv_first, &c[i], "test_recv_first/%s", cfg_name(&c[i]));
	for (int i = 0; i < (quick ? 2 : n); i++)
		CASE(t, test_recv_first_self, &c[i], "test_recv_first_self/%s", cfg_name(&c[i]));
	for (int i = 0; i < n; i++)
		CASE(t, test_send_first, &c[i], "test_send_first/%s", cfg_name(&c[i]));
	for (int i = 0; i < n; i++)
		CASE(t, test_mixed_eager, &c[i], "test_mixed_eager/%s", cfg_name(&c[i]));
	for (int d = 2; d <= 4; d++)
		for (int i = 0; i < (quick ? 3 : NRING); i++, nr++) {
			rings[nr] = (struct ring_case){ d, &ring_cfgs[i] };
			CASE(t, test_permute_ring, &rings[nr], "test_permute_ring/%d devices, %s", d,
			     cfg_name(&ring_cfgs[i]));
		}
	for (int i = 0; i < n; i++)
		CASE(t, test_window, &c[i], "test_window/%s", cfg_name(&c[i]));
	CASE(t, test_truncation, NULL, "test_truncation");
	for (int i = 0; i < nrace; i++)
		CASE(t, test_cancel_race, &race_cfgs[i], "test_cancel_race/%s", cfg_name(&race_cfgs[i]));
	for (int i = 0; i < nrace; i++)
		CASE(t, test_reset_race, &race_cfgs[i], "test_reset_race/%s", cfg_name(&race_cfgs[i]));
	th_case(t, test_held_handoff, NULL, "test_held_handoff");
	t->t[t->n - 1].teardown_func = teardown_blocked2;
	CASE(t, test_shm, NULL, "test_shm");
}

int main(int argc, char **argv)
{
	struct th_cases cases = { 0 };
	int rc;

	if (argc == 7 && !strcmp(argv[1], "--shm-child"))
		return shm_child(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]),
				 strtoll(argv[6], NULL, 10));
	quick = UNDER_TSAN || th_quick();
	seed = th_seed();
	add_cases(&cases);
	rc = th_run_cases("test_handoff", &cases, NULL, NULL);
	if (diag_transients)
		print_message("accdma_op_info said stage DONE before the final status/moved %d "
			      "time(s) (read again)\n",
			      diag_transients);
	return rc;
}
