/* SPDX-License-Identifier: MIT */
/*
 * handoff_th.h - what the test_handoff_*.c tests share: the configurations
 * (engines, queues, host polling on or off), guarded and patterned buffers,
 * pair ops and waits, and op_info checks. The handoff: a send too large to go
 * eagerly (at least FW_HANDOFF_MIN, 2 KiB) is copied by its recv's engine,
 * whichever side arrived first; each side sees its data land whole, its
 * guards untouched, and the right status and byte count in op_info.
 */
#ifndef ACCDMA_TESTS_HANDOFF_TH_H
#define ACCDMA_TESTS_HANDOFF_TH_H

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

static __attribute__((unused)) uint64_t seed;
static __attribute__((unused)) int quick;

/* What the running test is doing, printed by the teardown if it failed. */
static __attribute__((unused)) char ctx[256];
#define CTX(...) snprintf(ctx, sizeof(ctx), __VA_ARGS__)

static inline int teardown_ctx(void **state)
{
	(void)state;
	if (ctx[0])
		fprintf(stderr, "%s: failed in: %s (ACCDMA_TEST_SEED=%llu)\n",
			program_invocation_short_name, ctx,
			(unsigned long long)seed);
	ctx[0] = 0;
	return 0;
}

struct cfg {
	int engines;
	int queues;
	int nopoll; /* ACCDMA_POLL=0 at world open: engine threads only */
};

static __attribute__((unused)) const struct cfg all_cfgs[] = {
	{ 0, 1, 0 }, { 1, 1, 0 }, { 2, 1, 0 }, { 0, 2, 0 }, { 1, 2, 0 }, { 2, 2, 0 },
	{ 1, 1, 1 }, { 2, 2, 1 },
};
static __attribute__((unused)) const struct cfg quick_cfgs[] = {
	{ 0, 1, 0 }, { 1, 2, 0 }, { 2, 1, 0 }, { 1, 1, 1 },
};

static inline const struct cfg *cfgs(int *n)
{
	if (quick) {
		*n = (int)(sizeof(quick_cfgs) / sizeof(quick_cfgs[0]));
		return quick_cfgs;
	}
	*n = (int)(sizeof(all_cfgs) / sizeof(all_cfgs[0]));
	return all_cfgs;
}

static inline accdma_world *open_cfg(int n, const struct cfg *c, uint64_t mem, uint32_t depth)
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
static inline accdma_key alloc_(accdma_world *w, int dev, uint64_t size, void **ptr,
				const char *file, int line)
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

/* Word j of pattern stream @sd (no short period: a shifted or stale copy differs). */
static inline uint64_t pat_word(uint32_t sd, uint64_t j)
{
	uint64_t x = (j + 1) * 0x9E3779B97F4A7C15ull ^ ((uint64_t)sd * 0xD1B54A32D192ED03ull);

	x ^= x >> 29;
	x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 32;
	return x;
}

static inline void pat_fill(uint8_t *p, uint64_t len, uint32_t sd)
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

static inline void pat_check_(const uint8_t *p, uint64_t len, uint32_t sd, const char *what,
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

static inline void guard_check_(const uint8_t *p, uint64_t len, const char *what, const char *file,
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
static inline void landed_check_(const uint8_t *p, uint64_t rlen, uint64_t len, uint32_t sd,
				 uint64_t after, const char *file, int line)
{
	guard_check_(p - G, G, "guard before the recv range", file, line);
	pat_check_(p, len, sd, "received data", file, line);
	guard_check_(p + len, rlen - len + after, "recv range past the send, and the guard after",
		     file, line);
}
#define landed_check(p, rlen, len, sd, after)                                                \
	landed_check_((p), (rlen), (len), (sd), (after), __FILE__, __LINE__)

static inline void spin(int n)
{
	for (volatile int i = 0; i < n; i++)
		;
}

/* Post one send or recv; a post that fails fails the test where it was called. */
static inline accdma_token pair_op_(accdma_queue *q, enum accdma_op_kind kind, int peer,
				    uint64_t tag,
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
static inline enum accdma_status st_wait_(accdma_world *w, accdma_token t, const char *file,
					  int line)
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

static inline void wait_all_ok_(accdma_world *w, accdma_token *t, int n, const char *file, int line)
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
static inline void until_(accdma_world *w, int polled, accdma_token t, enum accdma_op_stage want,
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
static inline void info_is_(const struct accdma_op_info *i, enum accdma_op_kind kind,
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
static __attribute__((unused)) int diag_transients;

/*
 * Let op @t (not consumed) complete, then assert its kind, status, length and
 * bytes moved from accdma_op_info(). accdma_op_info() can report stage DONE
 * with status OK and moved 0 for a moment before the completion is published
 * (driver/diag.c reads the stage word, which fw_complete_record() stores
 * before the slot's state): such a reading is read again (bounded) and
 * counted, so only a final value that differs fails.
 */
static inline void done_is_(accdma_world *w, int polled, accdma_token t, int kick_dev, int kick_q,
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

static inline void race_open(struct race *x, const struct cfg *c)
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
static inline void slot_a_check(struct race *x, int happened, uint32_t sd)
{
	if (happened)
		landed_check(x->dst + x->offa, RLEN, x->alen, sd, 0);
	else
		guard_check(x->dst, x->offb, "recv range of a pair that did not happen");
}

/* The next pair on the tag works, and slot A keeps what the race left. */
static inline void next_pair(struct race *x, uint64_t tag, int it, int happened, uint32_t sd)
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

/* A configuration's name in case names: "engines 1, queues 2, no polling". */
static inline const char *cfg_name(const struct cfg *c)
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

/* A test_handoff_* binary's main() after its own argument handling: the
 * knobs, its cases, and how often an op's record was read mid-update. */
static inline int handoff_main(const char *name, void (*add_cases)(struct th_cases *))
{
	struct th_cases cases = { 0 };
	int rc;

	quick = UNDER_TSAN || th_quick();
	seed = th_seed();
	add_cases(&cases);
	rc = th_run_cases(name, &cases, NULL, NULL);
	if (diag_transients)
		print_message("accdma_op_info said stage DONE before the final status/moved %d "
			      "time(s) (read again)\n",
			      diag_transients);
	return rc;
}

#endif
