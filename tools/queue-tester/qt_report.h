/* SPDX-License-Identifier: MIT */
/*
 * qt_report.h - queue-tester's output: one line per scenario (plain or TAP),
 * indented detail lines, the summary line, and the watchdog report printed
 * when a scenario stalls (pending ops per device and the cycle, from the library).
 */
#ifndef QT_REPORT_H
#define QT_REPORT_H

#include <accdma.h>
#include <stdint.h>
#include <stdio.h>

/**
 * struct qt_result - the outcome of one scenario (one device count, all iterations).
 * @pass: 1 if it passed. @N: devices. @ops: ops posted. @bytes: bytes sent/written.
 * @ms: wall time of the runs (posting to last completion). @reason: why it failed.
 */
struct qt_result {
	int pass;
	int N;
	uint64_t ops;
	uint64_t bytes;
	double ms;
	char reason[512];
};

/**
 * struct qt_out - output state. @tap: TAP output. @verbose: more details.
 * @rank: with several processes, this process's rank (named in its watchdog
 * report); -1 otherwise.
 */
struct qt_out {
	FILE *f;
	int tap;
	int verbose;
	int count;
	int passed;
	int failed;
	int skipped;
	int rank;
};

/**
 * qt_out_begin() - start the output (prints the TAP header in TAP mode).
 * @o: the output state (f, tap and verbose set by the caller).
 */
void qt_out_begin(struct qt_out *o);

/**
 * qt_out_detail() - print one detail line, indented ("# " in TAP mode).
 * @o: the output. @fmt: printf format, without a trailing newline.
 */
void qt_out_detail(struct qt_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/**
 * qt_out_result() - print a scenario's result line and count it.
 * @o: the output. @name: the scenario's name. @r: its result.
 */
void qt_out_result(struct qt_out *o, const char *name, const struct qt_result *r);

/**
 * qt_out_skip() - print that a scenario was not run, and why (not counted as
 * passed or failed; TAP: "ok K - ... # SKIP why").
 * @o: the output. @name: the scenario's name. @N: its device count. @why: the reason.
 */
void qt_out_skip(struct qt_out *o, const char *name, int N, const char *why);

/**
 * qt_out_summary() - print "X passed, Y failed" (the TAP plan before it in TAP mode).
 * @o: the output.
 */
void qt_out_summary(struct qt_out *o);

/**
 * typedef qt_where_fn - names the scenario line that posted a token, for the watchdog.
 * @ctx: the caller's context. @dev: the device. @tok: the token. @buf/@n: where to write.
 * Return: 0 if found.
 */
typedef int (*qt_where_fn)(void *ctx, int dev, accdma_token tok, char *buf, size_t n);

/**
 * qt_watchdog_report() - print every local device's pending ops and any wait cycle.
 * @o: the output. @w: the world. @first/@ndev: the local devices.
 * @timeout_ms: how long nothing progressed. @where/@ctx: maps tokens to scenario lines (may be NULL).
 * Return: the number of pending ops found.
 */
int qt_watchdog_report(struct qt_out *o, accdma_world *w, int first, int ndev, int64_t timeout_ms,
		       qt_where_fn where, void *ctx);

#endif
