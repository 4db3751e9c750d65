/* SPDX-License-Identifier: MIT */
/* output.c - header block, perftest-style table, CSV, JSON, progress line. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bw.h"

void bw_fmt_bytes(char *buf, size_t len, uint64_t b)
{
	if (b >= (1ull << 30) && !(b % (1ull << 30)))
		snprintf(buf, len, "%lluG", (unsigned long long)(b >> 30));
	else if (b >= (1ull << 20) && !(b % (1ull << 20)))
		snprintf(buf, len, "%lluM", (unsigned long long)(b >> 20));
	else if (b >= 1024 && !(b % 1024))
		snprintf(buf, len, "%lluK", (unsigned long long)(b >> 10));
	else
		snprintf(buf, len, "%llu", (unsigned long long)b);
}

/* NaN-safe number for JSON. */
static void jnum(FILE *f, const char *name, double v, const char *fmt, int comma)
{
	fprintf(f, "\"%s\": ", name);
	if (isnan(v))
		fputs("null", f);
	else
		fprintf(f, fmt, v);
	if (comma)
		fputs(", ", f);
}

static void cnum(FILE *f, double v, const char *fmt)
{
	if (!isnan(v))
		fprintf(f, fmt, v);
}

static const char *transport_note(enum accdma_transport t)
{
	return t == ACCDMA_TRANSPORT_LOCAL ? "all devices in one process, one host thread posting"
					   : "one process per device";
}

void bw_out_begin(const struct bw_header *h)
{
	const struct bw_opts *o = h->o;
	FILE *f = stdout;
	char a[32], b[32];
	int d, n = accdma_world_size(h->w);
	struct accdma_device_info info;

	bw_fmt_bytes(a, sizeof(a), o->min_bytes);
	bw_fmt_bytes(b, sizeof(b), o->max_bytes);
	if (o->format == BW_FMT_CSV) {
		fprintf(f, "pattern,mode,bytes,iters,devices,transport,window_ops,window_iters,runs,"
			   "bw_dev_gbs,bw_dev_min_gbs,bw_dev_max_gbs,bw_agg_gbs,mops,memcpy_gbs,"
			   "pct_memcpy,p50_us,p99_us,mean_us,p999_us,max_us,verified\n");
		return;
	}
	if (o->format == BW_FMT_JSON) {
		fprintf(f, "{\"tool\": \"accdma-bw\", \"pattern\": \"%s\", \"transport\": \"%s\", "
			   "\"transport_note\": \"%s\", \"devices\": %d, \"engines\": %d, "
			   "\"queue_depth\": %d, \"window_ops\": %d, \"post_list\": %d, "
			   "\"latency_mode\": %s, \"runs\": %d, \"verify\": %s, "
			   "\"memcpy_threads\": %d, \"numa\": [",
			bw_pattern_name(o->pattern), bw_transport_name(o->transport),
			transport_note(o->transport), n, h->engines, h->queue_depth, o->window,
			o->post_list, o->latency ? "true" : "false", o->runs,
			o->verify ? "true" : "false", h->concurrent);
		for (d = 0; d < n; d++)
			fprintf(f, "%s%d", d ? ", " : "", h->numa[d]);
		fprintf(f, "],\n \"results\": [");
		return;
	}
	fprintf(f, "#-------------------------------------------------------------------------------------------\n");
	fprintf(f, "# accdma-bw  pattern %s  (%s)\n", bw_pattern_name(o->pattern),
		o->latency ? "latency: one iteration in flight" : "bandwidth");
	fprintf(f, "# transport     %s (%s)\n", bw_transport_name(o->transport),
		transport_note(o->transport));
	fprintf(f, "# devices       %d   engines/device %d   queue depth %d\n", n, h->engines,
		h->queue_depth);
	fprintf(f, "# NUMA          ");
	for (d = 0; d < n && d < 16; d++) {
		if (h->numa[d] < 0)
			fprintf(f, "dev%d->? ", d);
		else
			fprintf(f, "dev%d->node%d ", d, h->numa[d]);
	}
	if (n > 16)
		fprintf(f, "...");
	if (!accdma_device_info(h->w, 0, &info))
		fprintf(f, "  (firmware %u.%u)", info.fw_version >> 16, info.fw_version & 0xffff);
	fprintf(f, "\n");
	if (o->latency)
		fprintf(f, "# window        1 iteration in flight per device; mean = time / rounds "
			   "with no clock read between rounds (as OpenMPI's and OSU's tests time "
			   "theirs); p50/p99/p99.9/max of the same number of rounds again, each timed\n");
	else if (o->modes == 1u << BW_MODE_SYNC)
		fprintf(f, "# window        1 iteration in flight per device (sync mode)\n");
	else
		fprintf(f, "# window        %d ops in flight per device (iterations: column win), "
			   "post list %d iteration(s) per doorbell%s\n", o->window, o->post_list,
			o->modes & (1u << BW_MODE_SYNC) ? "; sync: 1 iteration" : "");
	if (o->modes & (1u << BW_MODE_SYNC))
		fprintf(f, "# sync mode     the host waits on every fence (after each send and recv) "
			   "before it posts more on that device\n");
	fprintf(f, "# sizes         %s .. %s x%g   runs/size %d (median; BW range min..max)   "
		   "verify %s\n", a, b, o->factor, o->runs,
		o->verify ? "last iteration" : "off");
	fprintf(f, "# per device    bytes sent per second by each sending device (%d of %d send); "
		   "agg = all devices\n", h->senders, n);
	fprintf(f, "# Mops          transfers (send+recv pairs) completed per second, all devices\n");
	if (o->memcpy_ref)
		fprintf(f, "# memcpy        per-thread memcpy GB/s, %d thread(s) at once (one per "
			   "concurrent transfer), same sizes and slots\n", h->concurrent);
	fprintf(f, "#-------------------------------------------------------------------------------------------\n");
	if (o->latency)
		fprintf(f, "%-6s %10s %8s %10s %10s %10s %10s %10s %12s %10s\n", "mode", "bytes", "iters",
			"mean[us]", "p50[us]", "p99[us]", "p99.9[us]", "max[us]", "BW/dev[GB/s]", "Mrounds/s");
	else
		fprintf(f, "%-6s %10s %8s %5s %12s %15s %12s %8s %12s %8s\n", "mode", "bytes",
			"iters", "win", "BW/dev[GB/s]", "(min..max)", "BW agg[GB/s]", "Mops",
			"memcpy[GB/s]", "%memcpy");
}

static int nres;

void bw_out_result(const struct bw_header *h, const struct bw_result *r)
{
	const struct bw_opts *o = h->o;
	FILE *f = stdout;
	char range[40];

	if (o->format == BW_FMT_CSV) {
		fprintf(f, "%s,%s,%llu,%ld,%d,%s,%d,%d,%d,%.6f,%.6f,%.6f,%.6f,%.6f,",
			bw_pattern_name(o->pattern), bw_mode_name(r->mode),
			(unsigned long long)r->bytes, r->iters, accdma_world_size(h->w),
			bw_transport_name(o->transport), r->win_ops, r->win_iters, r->runs,
			r->bw_dev, r->bw_dev_min, r->bw_dev_max, r->bw_agg, r->mops);
		cnum(f, r->memcpy_gbs, "%.6f");
		fputc(',', f);
		cnum(f, r->pct_memcpy, "%.2f");
		fputc(',', f);
		cnum(f, r->p50_us, "%.3f");
		fputc(',', f);
		cnum(f, r->p99_us, "%.3f");
		fputc(',', f);
		cnum(f, r->mean_us, "%.4f");
		fputc(',', f);
		cnum(f, r->p999_us, "%.3f");
		fputc(',', f);
		cnum(f, r->max_us, "%.3f");
		fprintf(f, ",%d\n", r->verified);
	} else if (o->format == BW_FMT_JSON) {
		fprintf(f, "%s\n  {\"mode\": \"%s\", \"bytes\": %llu, \"iters\": %ld, "
			   "\"window_ops\": %d, \"window_iters\": %d, \"runs\": %d, ",
			nres ? "," : "", bw_mode_name(r->mode), (unsigned long long)r->bytes,
			r->iters, r->win_ops, r->win_iters, r->runs);
		jnum(f, "bw_dev_gbs", r->bw_dev, "%.6f", 1);
		jnum(f, "bw_dev_min_gbs", r->bw_dev_min, "%.6f", 1);
		jnum(f, "bw_dev_max_gbs", r->bw_dev_max, "%.6f", 1);
		jnum(f, "bw_agg_gbs", r->bw_agg, "%.6f", 1);
		jnum(f, "mops", r->mops, "%.6f", 1);
		jnum(f, "memcpy_gbs", r->memcpy_gbs, "%.6f", 1);
		jnum(f, "pct_memcpy", r->pct_memcpy, "%.2f", 1);
		jnum(f, "p50_us", r->p50_us, "%.3f", 1);
		jnum(f, "p99_us", r->p99_us, "%.3f", 1);
		jnum(f, "mean_us", r->mean_us, "%.4f", 1);
		jnum(f, "p999_us", r->p999_us, "%.3f", 1);
		jnum(f, "max_us", r->max_us, "%.3f", 1);
		fprintf(f, "\"verified\": %s}", r->verified ? "true" : "false");
	} else if (o->latency) {
		fprintf(f, "%-6s %10llu %8ld %10.3f %10.2f %10.2f %10.2f %10.1f %12.4f %10.3f\n",
			bw_mode_name(r->mode), (unsigned long long)r->bytes, r->iters, r->mean_us, r->p50_us,
			r->p99_us, r->p999_us, r->max_us, r->bw_dev, r->mean_us > 0 ? 1.0 / r->mean_us : 0);
	} else {
		snprintf(range, sizeof(range), "(%.3f..%.3f)", r->bw_dev_min, r->bw_dev_max);
		fprintf(f, "%-6s %10llu %8ld %5d %12.4f %15s %12.4f %8.3f ", bw_mode_name(r->mode),
			(unsigned long long)r->bytes, r->iters, r->win_iters, r->bw_dev, range,
			r->bw_agg, r->mops);
		if (isnan(r->memcpy_gbs))
			fprintf(f, "%12s %8s\n", "-", "-");
		else
			fprintf(f, "%12.4f %7.1f%%\n", r->memcpy_gbs, r->pct_memcpy);
	}
	nres++;
	fflush(f);
}

void bw_out_end(const struct bw_header *h)
{
	if (h->o->format == BW_FMT_JSON)
		fprintf(stdout, "\n ]}\n");
	fflush(stdout);
}

void bw_progress(const struct bw_opts *o, const char *fmt, ...)
{
	va_list ap;

	if (!o->progress)
		return;
	fputs("\r\033[K[accdma-bw] ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fflush(stderr);
}

void bw_progress_clear(const struct bw_opts *o)
{
	if (o->progress) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
}
