/* SPDX-License-Identifier: MIT */
/* qt_report.c - result lines, TAP, and the watchdog report. */
#include "qt_report.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/**
 * qt_out_begin() - start the output.
 * @o: the output state.
 */
void qt_out_begin(struct qt_out *o)
{
	o->count = o->passed = o->failed = 0;
	if (o->tap)
		fprintf(o->f, "TAP version 13\n");
	fflush(o->f);
}

/**
 * qt_out_detail() - print one detail line.
 * @o: the output. @fmt: printf format.
 */
void qt_out_detail(struct qt_out *o, const char *fmt, ...)
{
	va_list ap;

	fputs(o->tap ? "# " : "    ", o->f);
	va_start(ap, fmt);
	vfprintf(o->f, fmt, ap);
	va_end(ap);
	fputc('\n', o->f);
}

/**
 * qt_out_result() - print a scenario's result line and count it.
 * @o: the output. @name: the scenario's name. @r: its result.
 */
void qt_out_result(struct qt_out *o, const char *name, const struct qt_result *r)
{
	o->count++;
	if (r->pass)
		o->passed++;
	else
		o->failed++;
	if (o->tap)
		fprintf(o->f, "%s %d - %s N=%d ops=%llu bytes=%llu time=%.1fms%s%s\n",
			r->pass ? "ok" : "not ok", o->count, name, r->N,
			(unsigned long long)r->ops, (unsigned long long)r->bytes, r->ms,
			r->pass ? "" : ": ", r->pass ? "" : r->reason);
	else
		fprintf(o->f, "%s %-28s N=%-4d ops=%-7llu bytes=%-9llu time=%.1fms%s%s\n",
			r->pass ? "PASS" : "FAIL", name, r->N, (unsigned long long)r->ops,
			(unsigned long long)r->bytes, r->ms, r->pass ? "" : "  ",
			r->pass ? "" : r->reason);
	fflush(o->f);
}

/**
 * qt_out_skip() - print that a scenario was not run.
 * @o: the output. @name: the scenario. @N: its device count. @why: the reason.
 */
void qt_out_skip(struct qt_out *o, const char *name, int N, const char *why)
{
	o->skipped++;
	if (o->tap)
		fprintf(o->f, "ok %d - %s N=%d # SKIP %s\n", ++o->count, name, N, why);
	else
		fprintf(o->f, "SKIP %-28s N=%-4d %s\n", name, N, why);
	fflush(o->f);
}

/**
 * qt_out_summary() - print "X passed, Y failed".
 * @o: the output.
 */
void qt_out_summary(struct qt_out *o)
{
	if (o->tap)
		fprintf(o->f, "1..%d\n", o->count);
	fprintf(o->f, "%d passed, %d failed\n", o->passed, o->failed);
	fflush(o->f);
}

#define QT_REPORT_MAX_OPS 8
#define QT_REPORT_MAX_DEVS 16

/**
 * qt_watchdog_report() - print every local device's pending ops and any wait cycle.
 * @o: the output. @w: the world. @first/@ndev: the local devices.
 * @timeout_ms: how long nothing progressed. @where/@ctx: token to scenario line mapping.
 * Return: the number of pending ops found.
 */
int qt_watchdog_report(struct qt_out *o, accdma_world *w, int first, int ndev, int64_t timeout_ms,
		       qt_where_fn where, void *ctx)
{
	struct accdma_op_info infos[QT_REPORT_MAX_OPS];
	int total = 0, shown_devs = 0;
	int cycle[64];
	int nc;

	if (o->rank >= 0)
		qt_out_detail(o, "watchdog of rank %d (devices %d..%d): no progress for %lld ms; "
			      "pending ops:", o->rank, first, first + ndev - 1, (long long)timeout_ms);
	else
		qt_out_detail(o, "watchdog: no progress for %lld ms; pending ops:",
			      (long long)timeout_ms);
	for (int d = first; d < first + ndev; d++) {
		int n = accdma_pending(w, d, infos, QT_REPORT_MAX_OPS);

		if (n < 0) {
			qt_out_detail(o, "  dev %d: accdma_pending failed: %s", d, strerror(-n));
			continue;
		}
		if (n == 0)
			continue;
		total += n;
		if (shown_devs++ >= QT_REPORT_MAX_DEVS)
			continue;
		qt_out_detail(o, "  dev %d: %d pending", d, n);
		for (int k = 0; k < n && k < QT_REPORT_MAX_OPS; k++) {
			char line[256], at[128] = "";

			accdma_op_describe(&infos[k], line, sizeof(line));
			if (where && where(ctx, d, infos[k].token, at, sizeof(at)) == 0)
				qt_out_detail(o, "    %s  [%s]", line, at);
			else
				qt_out_detail(o, "    %s", line);
		}
		if (n > QT_REPORT_MAX_OPS)
			qt_out_detail(o, "    ... %d more", n - QT_REPORT_MAX_OPS);
	}
	if (shown_devs > QT_REPORT_MAX_DEVS)
		qt_out_detail(o, "  ... %d more devices with pending ops",
			      shown_devs - QT_REPORT_MAX_DEVS);
	if (o->rank >= 0)
		return total; /* the cycle across processes is found from every rank's edges */
	nc = accdma_find_cycle(w, cycle, 64);
	if (nc > 0) {
		char buf[512];
		size_t len = 0;

		for (int k = 0; k < nc && k < 64 && len < sizeof(buf) - 16; k++)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%d -> ", cycle[k]);
		if (len < sizeof(buf) - 16)
			snprintf(buf + len, sizeof(buf) - len, "%d", cycle[0]);
		qt_out_detail(o, "  wait cycle: %s", buf);
	} else if (nc == 0) {
		qt_out_detail(o, "  no wait cycle between devices");
	}
	return total;
}
