/* SPDX-License-Identifier: MIT */
/*
 * accdma-bw - throughput of libaccdma, the way ib_write_bw and nccl-tests
 * measure theirs: a sweep of message sizes over a pattern of devices, in
 * `chain` mode (tokens only), `fence` mode (a device-side fence after every
 * send and recv, which the host does not wait on) and `sync` mode (the same
 * fences, and the host waits on each one: the old workaround), side by side,
 * with a memcpy reference measured in the same run.
 *
 * main.c: the sweep. See bw.h for the parts.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bw.h"

#define MAX_SIZES 256

static int sizes_of(const struct bw_opts *o, uint64_t *sizes)
{
	uint64_t s = o->min_bytes;
	int n = 0;

	while (s <= o->max_bytes && n < MAX_SIZES) {
		uint64_t next = (uint64_t)((double)s * o->factor + 0.5);
		sizes[n++] = s;
		s = next > s ? next : s + 1;
	}
	if (n && sizes[n - 1] != o->max_bytes && n < MAX_SIZES)
		sizes[n++] = o->max_bytes;
	return n;
}

/* Iterations in flight per device at @bytes: the window in ops, capped by the buffer budget. */
static int win_iters_of(const struct bw_opts *o, const struct bw_plan *p, uint64_t bytes)
{
	uint64_t stride = (bytes + 63) & ~(uint64_t)63;
	uint64_t per = stride * (uint64_t)(p->max_nsub > 1 ? p->max_nsub : 1);
	long w, cap;

	if (o->latency)
		return 1;
	w = o->window / (p->max_nxfer > 0 ? p->max_nxfer : 1);
	if (w < 1)
		w = 1;
	cap = (long)(o->buf_budget / per);
	if (cap < 1)
		cap = 1;
	return (int)(w < cap ? w : cap);
}

static uint32_t pow2_at_least(uint64_t v)
{
	uint32_t p = 2;

	while (p < v && p < 65536)
		p <<= 1;
	return p;
}

int main(int argc, char **argv)
{
	struct bw_opts o;
	struct bw_plan plans[BW_MODE__COUNT];
	struct accdma_world_opts wo;
	struct accdma_device_info info;
	struct bw_header h;
	accdma_world *w = NULL;
	uint64_t sizes[MAX_SIZES], foot = 0;
	int nsizes, si, m, r, rc, maxwin = 1, exit_code = 0, first = 0, nlocal, d, lsends;
	int printer, header_out = 0, *numa;
	char err[160];
	double *sec[BW_MODE__COUNT], *bwv[BW_MODE__COUNT], *p50[BW_MODE__COUNT],
		*p99[BW_MODE__COUNT], *p999[BW_MODE__COUNT], *pmax[BW_MODE__COUNT], *mref, *mref1;
	int verified[BW_MODE__COUNT];
	const struct bw_plan *ref;

	rc = bw_opts_parse(&o, argc, argv);
	if (rc)
		return rc > 0 ? 0 : 2;
	/* transport and world size from the environment (accdma-run, torchrun, mpirun) unless given */
	accdma_world_opts_init(&wo);
	if (!o.transport_set)
		o.transport = wo.transport;
	if (!o.devices_set &&
	    (o.transport == ACCDMA_TRANSPORT_SHM || o.transport == ACCDMA_TRANSPORT_VERBS ||
	     o.transport == ACCDMA_TRANSPORT_KMOD) &&
	    wo.transport == o.transport)
		o.devices = wo.num_devices;
	memset(plans, 0, sizeof(plans));
	for (m = 0; m < BW_MODE__COUNT; m++) {
		if (!(o.modes & (1u << m)))
			continue;
		if (bw_plan_build(&plans[m], o.pattern, (enum bw_mode)m, o.devices, err,
				  sizeof(err))) {
			fprintf(stderr, "accdma-bw: %s\n", err);
			return 2;
		}
	}
	/* the transfers are the same in every mode: counts and sizes come from the first one */
	ref = plans[BW_MODE_CHAIN].dev   ? &plans[BW_MODE_CHAIN]
	      : plans[BW_MODE_FENCE].dev ? &plans[BW_MODE_FENCE]
					 : &plans[BW_MODE_SYNC];
	nsizes = sizes_of(&o, sizes);

	/* room: the biggest per-device footprint and enough queue depth for the window */
	for (si = 0; si < nsizes; si++) {
		int wi = win_iters_of(&o, ref, sizes[si]);
		uint64_t f = bw_footprint(ref, sizes[si], wi);
		if (f > foot)
			foot = f;
		if (wi > maxwin)
			maxwin = wi;
	}
	wo.transport = o.transport;
	wo.num_devices = o.devices;
	if (o.engines >= 0)
		wo.engines = o.engines;
	if (o.queue_depth) {
		wo.queue_depth = (uint32_t)o.queue_depth;
	} else {
		int maxops = 0;
		for (m = 0; m < BW_MODE__COUNT; m++)
			if (plans[m].max_nops > maxops)
				maxops = plans[m].max_nops;
		uint32_t need = pow2_at_least((uint64_t)maxwin * (uint64_t)maxops * 2);
		if (need > wo.queue_depth)
			wo.queue_depth = need;
	}
	foot += foot / 4 + (16u << 20);
	if (wo.mem_size < foot)
		wo.mem_size = foot;
	wo.timeout_ms = o.timeout_ms;
	rc = accdma_world_open(&wo, &w);
	if (rc) {
		fprintf(stderr, "accdma-bw: accdma_world_open (%s, %d devices): %s%s\n",
			bw_transport_name(o.transport), o.devices, strerror(-rc),
			rc == -EPROTONOSUPPORT ? " (this transport is not built yet; use "
						 "--transport local)" : "");
		return 1;
	}

	/* shm: this process drives devices first .. first + nlocal - 1; the one with device 0 prints */
	nlocal = accdma_world_local_devices(w, &first);
	printer = first == 0;
	lsends = 0;
	for (d = first; d < first + nlocal && d < ref->ndev; d++)
		for (m = 0; m < ref->dev[d].nops; m++)
			lsends += ref->dev[d].ops[m].kind == ACCDMA_OP_SEND;

	memset(&h, 0, sizeof(h));
	h.o = &o;
	h.w = w;
	h.engines = accdma_device_info(w, first, &info) ? wo.engines : info.engines;
	h.queue_depth = (int)wo.queue_depth;
	h.concurrent = ref->sends;
	h.senders = ref->senders;
	d = accdma_world_size(w);
	numa = d > 0 ? calloc((size_t)d, sizeof(*numa)) : NULL;
	h.numa = numa;
	if (!numa) {
		fprintf(stderr, "accdma-bw: out of memory\n");
		exit_code = 1;
	} else if (bw_numa_nodes(w, numa, o.timeout_ms)) {
		exit_code = 1;
	} else if (printer) {
		bw_out_begin(&h);
		header_out = 1;
	}

	for (m = 0; m < BW_MODE__COUNT; m++) {
		sec[m] = calloc((size_t)o.runs, sizeof(double));
		bwv[m] = calloc((size_t)o.runs, sizeof(double));
		p50[m] = calloc((size_t)o.runs, sizeof(double));
		p99[m] = calloc((size_t)o.runs, sizeof(double));
		p999[m] = calloc((size_t)o.runs, sizeof(double));
		pmax[m] = calloc((size_t)o.runs, sizeof(double));
	}
	mref = calloc((size_t)o.runs, sizeof(double));
	mref1 = calloc((size_t)o.runs, sizeof(double));

	for (si = 0; si < nsizes && !exit_code; si++) {
		uint64_t bytes = sizes[si];
		long iters = bw_auto_iters(&o, bytes);
		long warmup = o.warmup >= 0 ? o.warmup : (iters / 10 + 1 > 2000 ? 2000 : iters / 10 + 1);
		int wi = win_iters_of(&o, ref, bytes);
		double per_iter_bytes = (double)bytes * ref->sends;

		memset(verified, 0, sizeof(verified));
		for (r = 0; r < o.runs && !exit_code; r++) {
			for (m = 0; m < BW_MODE__COUNT; m++) {
				struct bw_ctx *c;
				struct bw_sample s;

				if (!(o.modes & (1u << m)))
					continue;
				bw_progress(&o, "%s %llu bytes (size %d/%d) run %d/%d mode %s",
					    bw_pattern_name(o.pattern), (unsigned long long)bytes,
					    si + 1, nsizes, r + 1, o.runs, bw_mode_name((enum bw_mode)m));
				/* sync mode has one iteration in flight (bw_ctx_create) */
				rc = bw_ctx_create(&c, w, &o, &plans[m], bytes, wi, wi);
				if (rc) {
					bw_progress_clear(&o);
					fprintf(stderr, "accdma-bw: setting up %llu bytes: %s\n",
						(unsigned long long)bytes, strerror(-rc));
					exit_code = 1;
					break;
				}
				rc = bw_ctx_run(c, warmup, iters, &s);
				bw_ctx_destroy(c);
				if (rc) {
					bw_progress_clear(&o);
					exit_code = 1;
					break;
				}
				sec[m][r] = s.secs;
				bwv[m][r] = per_iter_bytes / ref->senders * (double)iters / s.secs / 1e9;
				p50[m][r] = s.p50_us;
				p99[m][r] = s.p99_us;
				p999[m][r] = s.p999_us;
				pmax[m][r] = s.max_us;
				verified[m] += s.verified;
			}
			/* memcpy reference: as many threads at once as there are transfers; with
			 * shm every process copies for its own devices' sends, all together. Over
			 * the same slots as the run: wi, and 1 for sync mode (one iteration in
			 * flight), measured apart where wi is not 1 */
			if (!exit_code && o.memcpy_ref) {
				unsigned sync = 1u << BW_MODE_SYNC;
				int k;
				for (k = 0; k < 2; k++) {
					int slots = k ? 1 : wi;
					double *mr = k ? mref1 : mref;
					if (k ? !(o.modes & sync) : !(o.modes & ~sync))
						continue; /* no mode runs with these slots */
					if (k && wi == 1 && (o.modes & ~sync)) {
						mref1[r] = mref[r]; /* the same slots */
						continue;
					}
					if (nlocal < ref->ndev && bw_sync_ranks(w, o.timeout_ms)) {
						exit_code = 1;
						break;
					}
					mr[r] = nlocal < ref->ndev
							? (lsends ? bw_memcpy_ref(lsends, bytes, slots, iters)
								  : NAN)
							: bw_memcpy_ref(ref->sends, bytes, slots, iters);
				}
			}
		}
		if (exit_code)
			break;
		bw_progress_clear(&o);
		double mc = o.memcpy_ref ? bw_median(mref, o.runs) : NAN;
		double mc1 = o.memcpy_ref ? bw_median(mref1, o.runs) : NAN;
		for (m = 0; m < BW_MODE__COUNT; m++) {
			struct bw_result res;
			double t;

			if (!(o.modes & (1u << m)))
				continue;
			memset(&res, 0, sizeof(res));
			res.mode = (enum bw_mode)m;
			res.bytes = bytes;
			res.iters = iters;
			if (m == BW_MODE_SYNC || o.latency) { /* one iteration in flight */
				res.win_iters = 1;
				res.win_ops = ref->max_nxfer;
			} else {
				res.win_iters = wi;
				res.win_ops = wi * ref->max_nxfer;
			}
			res.runs = o.runs;
			t = bw_median(sec[m], o.runs);
			res.secs = t;
			res.bw_dev = bw_median(bwv[m], o.runs);
			res.bw_dev_min = bwv[m][0];
			res.bw_dev_max = bwv[m][o.runs - 1];
			res.bw_agg = res.bw_dev * ref->senders;
			res.mops = (double)ref->sends * (double)iters / t / 1e6;
			res.memcpy_gbs = m == BW_MODE_SYNC ? mc1 : mc;
			res.pct_memcpy = isnan(res.memcpy_gbs) ? NAN
							       : 100.0 * res.bw_dev / res.memcpy_gbs;
			res.p50_us = o.latency ? bw_median(p50[m], o.runs) : NAN;
			res.p99_us = o.latency ? bw_median(p99[m], o.runs) : NAN;
			res.p999_us = o.latency ? bw_median(p999[m], o.runs) : NAN;
			res.max_us = o.latency ? bw_median(pmax[m], o.runs) : NAN;
			res.mean_us = o.latency ? t / (double)iters * 1e6 : NAN;
			res.verified = verified[m] == o.runs;
			if (printer)
				bw_out_result(&h, &res);
		}
	}
	if (header_out)
		bw_out_end(&h);
	/* shm: nobody closes (and so cuts its peers off) before everyone is done */
	if (!exit_code && bw_sync_ranks(w, o.timeout_ms))
		exit_code = 1;
	for (m = 0; m < BW_MODE__COUNT; m++) {
		free(sec[m]);
		free(bwv[m]);
		free(p50[m]);
		free(p99[m]);
		free(p999[m]);
		free(pmax[m]);
		bw_plan_free(&plans[m]);
	}
	free(mref);
	free(mref1);
	free(numa);
	rc = accdma_world_close(w);
	if (rc && !exit_code) {
		fprintf(stderr, "accdma-bw: accdma_world_close: %s\n", strerror(-rc));
		exit_code = 1;
	}
	return exit_code;
}
