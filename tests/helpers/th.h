/* SPDX-License-Identifier: MIT */
/*
 * th.h - shared helpers for the libaccdma cmocka tests.
 *
 * Every helper asserts through cmocka and reports the caller's file and line.
 * Waits use a long timeout (TH_HANG_MS) whose only job is to turn a hang into
 * a failure; no test depends on how fast anything runs.
 */
#ifndef ACCDMA_TESTS_TH_H
#define ACCDMA_TESTS_TH_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <accdma.h>

/* Only turns a hang into a failure (make check also kills a test after 600 s). */
#define TH_HANG_MS 60000

/* ---- worlds ----------------------------------------------------------- */

/* Default options for a test world of @n devices (small memory, quiet log). */
void th_opts(struct accdma_world_opts *o, int n);
accdma_world *th_open_opts_(const struct accdma_world_opts *o, const char *file, int line);
accdma_world *th_open_(int n, const char *file, int line);
void th_close_(accdma_world *w, const char *file, int line);
accdma_queue *th_q_(accdma_world *w, int dev, int index, const char *file, int line);
accdma_key th_alloc_(accdma_world *w, int dev, uint64_t size, void **ptr, const char *file,
		     int line);

#define th_open(n) th_open_((n), __FILE__, __LINE__)
#define th_open_opts(o) th_open_opts_((o), __FILE__, __LINE__)
#define th_close(w) th_close_((w), __FILE__, __LINE__)
#define th_q(w, dev) th_q_((w), (dev), 0, __FILE__, __LINE__)
#define th_qi(w, dev, i) th_q_((w), (dev), (i), __FILE__, __LINE__)
/* Allocate @size zero-filled bytes on @dev; *@ptr (if not NULL) gets the host address. */
#define th_alloc(w, dev, size, ptr) th_alloc_((w), (dev), (size), (ptr), __FILE__, __LINE__)

/* ---- tokens ----------------------------------------------------------- */

/* Wait (hang guard only) and return the status; fails if the wait itself fails. */
enum accdma_status th_wait_(accdma_world *w, accdma_token t, const char *file, int line);
/* The same with a timeout of @ms, and @what (or NULL) saying what a failed wait means. */
enum accdma_status th_wait_within_(accdma_world *w, accdma_token t, int64_t ms, const char *what,
				   const char *file, int line);
void th_wait_st_(accdma_world *w, accdma_token t, enum accdma_status want, const char *file,
		 int line);
void th_pending_(accdma_world *w, accdma_token t, const char *file, int line);
void th_wait_all_st_(accdma_world *w, const accdma_token *t, int n, enum accdma_status want,
		     const char *file, int line);

#define th_wait(w, t) th_wait_((w), (t), __FILE__, __LINE__)
/* Wait for @t and assert its final status. */
#define th_wait_st(w, t, st) th_wait_st_((w), (t), (st), __FILE__, __LINE__)
#define th_wait_ok(w, t) th_wait_st_((w), (t), ACCDMA_OK, __FILE__, __LINE__)
#define th_wait_all_ok(w, t, n) th_wait_all_st_((w), (t), (n), ACCDMA_OK, __FILE__, __LINE__)
#define th_wait_all_st(w, t, n, st) th_wait_all_st_((w), (t), (n), (st), __FILE__, __LINE__)
/* Assert @t is not complete (accdma_test() says -EAGAIN); the token stays valid. */
#define th_pending(w, t) th_pending_((w), (t), __FILE__, __LINE__)

/* Assert a status, printing names. */
void th_assert_st_(enum accdma_status got, enum accdma_status want, const char *file, int line);
#define th_assert_st(got, want) th_assert_st_((got), (want), __FILE__, __LINE__)

/* Let @dev's engine run a while without any timing assumption: post a no-op
 * exec on queue @qi of @dev, @rounds times, and wait for each. Descriptors
 * issue in queue order, so when it returns the engine has at least issued
 * every earlier descriptor of that queue. Used before asserting that something
 * is still pending, to give a wrong implementation the chance to be wrong.
 * Never use it on a queue blocked behind a fence. */
void th_kick_(accdma_world *w, int dev, int qi, int rounds, const char *file, int line);
#define th_kick(w, dev, rounds) th_kick_((w), (dev), 0, (rounds), __FILE__, __LINE__)
#define th_kick_q(w, dev, qi, rounds) th_kick_((w), (dev), (qi), (rounds), __FILE__, __LINE__)

/* ---- data ------------------------------------------------------------- */

void th_fill_f32(void *p, size_t n, float v);
void th_fill_i32(void *p, size_t n, int32_t v);
void th_fill_u8(void *p, size_t n, uint8_t v);
/* Deterministic byte pattern: byte k of stream @seed. */
void th_fill_pattern(void *p, size_t n, uint32_t seed);

int th_check_f32_(const void *p, size_t n, float v, const char *what, const char *file, int line);
int th_check_i32_(const void *p, size_t n, int32_t v, const char *what, const char *file,
		  int line);
int th_check_u8_(const void *p, size_t n, uint8_t v, const char *what, const char *file, int line);
int th_check_pattern_(const void *p, size_t n, uint32_t seed, const char *what, const char *file,
		      int line);
#define th_check_f32(p, n, v, what) th_check_f32_((p), (n), (v), (what), __FILE__, __LINE__)
#define th_check_i32(p, n, v, what) th_check_i32_((p), (n), (v), (what), __FILE__, __LINE__)
#define th_check_u8(p, n, v, what) th_check_u8_((p), (n), (v), (what), __FILE__, __LINE__)
#define th_check_pattern(p, n, s, what) th_check_pattern_((p), (n), (s), (what), __FILE__, __LINE__)

/* ---- order log (exec functions) -------------------------------------- */

#define TH_LOG_MAX 4096
struct th_log {
	atomic_int n;
	int ids[TH_LOG_MAX];
};
struct th_mark {
	struct th_log *log;
	int id;
};
void th_log_init(struct th_log *log);
/* exec fn: append mark->id to mark->log; returns 0. */
int th_mark_fn(void *arg);
/* exec fn: returns 1 (EXEC_FAILED) after setting the atomic_int *arg to 1. */
int th_fail_fn(void *arg);
/* exec fn: sets the atomic_int *arg to 1; returns 0. */
int th_flag_fn(void *arg);
/* Index of @id in the log, or -1. */
int th_log_pos(const struct th_log *log, int id);
/* Assert the log is exactly ids[0..n-1]. */
void th_log_expect_(const struct th_log *log, const int *ids, int n, const char *file, int line);
#define th_log_expect(log, ids, n) th_log_expect_((log), (ids), (n), __FILE__, __LINE__)

/* ---- randomness ------------------------------------------------------ */

/* The seed: ACCDMA_TEST_SEED if set, else fresh. Printed; th_seed_current() returns it. */
uint64_t th_seed(void);
uint64_t th_seed_current(void);
struct th_rng {
	uint64_t s;
};
uint64_t th_rand(struct th_rng *r);
uint64_t th_rand_below(struct th_rng *r, uint64_t n);
void th_shuffle(int *a, int n, struct th_rng *r);
/* Test-size knob: ACCDMA_TEST_ITERS if set, else @dflt. */
int th_iters(int dflt);

/* Fail with the seed in the message (for randomized tests). */
#define th_rfail(...)                                                                        \
	do {                                                                                   \
		print_error(__VA_ARGS__);                                                      \
		print_error("\n%s:%d: failed with ACCDMA_TEST_SEED=%llu\n", __FILE__, __LINE__, \
			    (unsigned long long)th_seed_current());                            \
		_fail(__FILE__, __LINE__);                                                     \
	} while (0)

/* ---- cases --------------------------------------------------------- */

/* Every test binary takes a case-name filter (th_cases.c): its first argument
 * if that is not an option, else ACCDMA_TEST_FILTER; ACCDMA_TEST_SKIP skips
 * what it matches (cmocka patterns: * and ?). NULL: no filter. */
const char *th_test_filter(void);
/* Quick mode: ACCDMA_TEST_QUICK set and not "0" (smaller loops, for sanitizer runs). */
int th_quick(void);

/* A case list built at run time, so that a test run in several configurations
 * reports each as its own case (named, say, "test_x/2 queues, polled"), which
 * a failure names and the filter can pick. The case's *state is @arg. */
struct th_cases {
	struct CMUnitTest *t;
	int n, cap;
};
void th_case(struct th_cases *c, CMUnitTestFunction fn, void *arg, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Run the list as one group (as cmocka_run_group_tests) and free it. */
int th_run_cases(const char *group, struct th_cases *c, CMFixtureFunction setup,
		 CMFixtureFunction teardown);

#endif
