/* SPDX-License-Identifier: MIT */
/*
 * qt_run.c - run a scenario against libaccdma and check every byte: open the
 * world, set up and exchange the buffers, then the sequence of meetings around
 * driving (qt_run_drive.c) and checking (qt_run_check.c).
 */
#include "qt_run_internal.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The first failure becomes the reason; every failure is printed as a detail line. */
void rfail(struct run *rn, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!rn->failed)
		snprintf(rn->r->reason, sizeof(rn->r->reason), "%s", msg);
	rn->failed++;
	if (rn->failed <= 20)
		qt_out_detail(rn->o->out, "%s", msg);
	else if (rn->failed == 21)
		qt_out_detail(rn->o->out, "(further failures not shown)");
}

const char *op_name(const struct qt_ins *in)
{
	static const char *const names[] = { "send", "recv", "write", "fence", "exec",
					     "after_all", "barrier", "permute" };

	return names[in->op];
}

struct qt_val load_elem(enum qt_type t, const unsigned char *base, int64_t k)
{
	struct qt_val v = { 0, 0, 0.0 };

	if (t == QT_INT32) {
		int32_t x;

		memcpy(&x, base + 4 * k, 4);
		v.i = x;
	} else if (t == QT_FLOAT32) {
		float x;

		memcpy(&x, base + 4 * k, 4);
		v.is_float = 1;
		v.f = x;
	} else {
		v.i = base[k];
	}
	return v;
}

void store_elem(enum qt_type t, unsigned char *base, int64_t k, struct qt_val v)
{
	if (t == QT_INT32) {
		int32_t x = qt_val_int32(v);

		memcpy(base + 4 * k, &x, 4);
	} else if (t == QT_FLOAT32) {
		double d = qt_val_double(v);
		float x;

		if (isnan(d))
			x = NAN;
		else
			x = d > FLT_MAX ? FLT_MAX : d < -FLT_MAX ? -FLT_MAX : (float)d;
		memcpy(base + 4 * k, &x, 4);
	} else {
		base[k] = (unsigned char)(uint64_t)qt_val_wrap_int(v);
	}
}

static int where_fn(void *ctx, int dev, accdma_token tok, char *buf, size_t n)
{
	struct run *rn = ctx;
	struct devrt *d;

	if (dev < rn->first || dev >= rn->first + rn->ndev)
		return -1;
	d = &rn->dev[dev - rn->first];
	for (int k = 0; k < d->dp->nins; k++)
		if (d->state[k] == IS_OUT && d->tok[k] == tok) {
			snprintf(buf, n, "%s:%d", rn->sc->file, d->dp->ins[k].st->line);
			return 0;
		}
	return -1;
}

static int setup_buffers(struct run *rn)
{
	for (int k = 0; k < rn->ndev; k++) {
		struct devrt *d = &rn->dev[k];

		for (int b = 0; b < rn->sc->nbufs; b++) {
			const struct qt_buffer_decl *bd = &rn->sc->bufs[b];
			uint64_t bytes = (uint64_t)d->dp->count[b] * qt_type_size(bd->type);
			int rc = accdma_mem_alloc(rn->w, d->rank, bytes, &d->keys[b]);

			if (rc < 0) {
				rfail(rn, "rank %d: accdma_mem_alloc(%llu) for '%s' failed: %s", d->rank,
				      (unsigned long long)bytes, bd->name, strerror(-rc));
				return -1;
			}
			d->ptr[b] = accdma_mem_ptr(rn->w, d->rank, d->keys[b], NULL);
			if (!d->ptr[b]) {
				rfail(rn, "rank %d: accdma_mem_ptr failed for '%s'", d->rank, bd->name);
				return -1;
			}
			if (!bd->init)
				continue;
			struct qt_var store[QT_ENV_MAX];
			struct qt_env env = { store, 0, QT_ENV_MAX };
			char msg[200];

			qt_base_env(&env, d->rank, rn->plan->N);
			qt_env_set(&env, "i", qt_val_int(0));
			for (int64_t e = 0; e < d->dp->count[b]; e++) {
				struct qt_val v;

				env.vars[env.n - 1].v = qt_val_int(e);
				if (qt_eval(bd->init, &env, &v, msg, sizeof(msg))) {
					rfail(rn, "%s:%s (rank %d, buffer %s)", rn->sc->file, msg,
					      d->rank, bd->name);
					return -1;
				}
				store_elem(bd->type, d->ptr[b], e, v);
			}
		}
		int rc = accdma_queue_get(rn->w, d->rank, 0, &d->q);

		if (rc < 0) {
			rfail(rn, "rank %d: accdma_queue_get failed: %s", d->rank, strerror(-rc));
			return -1;
		}
	}
	return 0;
}

/* The blob each process contributes to the key exchange. */
struct keys_msg {
	int32_t ok;
	int32_t first;
	int32_t ndev;
	uint32_t keys[]; /* ndev * QT_MAX_BUFFERS */
};

/*
 * Every process contributes its devices' region keys (and whether its setup
 * succeeded); every process gets every device's keys, so that a `write` names
 * the peer's real key. This is also the point after which every buffer of
 * every device holds its initial contents. Return: 1 if every rank is ready.
 */
static int exchange_keys(struct run *rn, int ok)
{
	size_t per = sizeof(uint32_t) * QT_MAX_BUFFERS;
	size_t len = sizeof(struct keys_msg) + (ok ? per * (size_t)rn->ndev : 0);
	struct keys_msg *m = calloc(1, len);
	uint32_t lens[QT_MAX_DEVICES];
	int nprocs = rn->o->ctl ? rn->o->ctl->nprocs : 1, all_ok = 1;
	char *all, *p;

	if (!m) {
		fprintf(stderr, "queue-tester: out of memory\n");
		exit(1);
	}
	m->ok = ok;
	m->first = ok ? rn->first : 0;
	m->ndev = ok ? rn->ndev : 0;
	for (int k = 0; ok && k < rn->ndev; k++)
		memcpy(m->keys + (size_t)k * QT_MAX_BUFFERS, rn->dev[k].keys, per);
	qt_ctl_allgather(rn->o->ctl, m, (uint32_t)len, &all, lens);
	free(m);
	p = all;
	for (int q = 0; q < nprocs; q++) {
		struct keys_msg h;

		if (lens[q] < sizeof(h)) {
			all_ok = 0;
			continue;
		}
		memcpy(&h, p, sizeof(h));
		if (!h.ok || h.first < 0 || h.ndev < 0 || !rn->plan || h.first > rn->plan->N - h.ndev ||
		    lens[q] != sizeof(h) + per * (size_t)h.ndev) {
			all_ok = 0;
		} else if (rn->keys_all) {
			memcpy(rn->keys_all + (size_t)h.first * QT_MAX_BUFFERS, p + sizeof(h),
			       per * (size_t)h.ndev);
		}
		p += lens[q];
	}
	free(all);
	return all_ok;
}

/**
 * qt_run() - run a scenario once for N devices.
 * @sc: the scenario. @N: the device count. @o: options. @r: the result.
 *
 * With several processes (@o->ctl), every rank goes through the same meeting
 * points whatever happens to it (a rank whose setup failed still meets the
 * others, so that nobody waits for it): the key exchange, "everyone stopped
 * driving" (then a stalled process sorts its pending ops into completed late
 * and stuck), "everyone sorted" (then stuck ops are canceled: canceling one
 * never changes what a peer saw as stuck), "everyone checked" (then the world
 * is closed), and "did anyone fail".
 * Return: 0 if it passed, -1 if not.
 */
int qt_run(const struct qt_scenario *sc, int N, const struct qt_run_opts *o, struct qt_result *r)
{
	struct run rn;
	struct accdma_world_opts wo;
	char err[512];
	int rc, first = 0, nlocal = 0, ready = 0, stalled = 0, drove = -2, any, reported = 0;
	uint64_t need = 0;
	double t0;

	memset(&rn, 0, sizeof(rn));
	rn.sc = sc;
	rn.o = o;
	rn.r = r;
	r->N = N;
	rn.timeout = sc->timeout_ms > 0 ? sc->timeout_ms : o->timeout_ms;
	if (qt_plan_build(sc, N, 0, N, NULL, &rn.plan, err, sizeof(err))) {
		rfail(&rn, "%s", err);
		rn.plan = NULL;
		goto meet;
	}
	rn.keys_all = calloc((size_t)N * QT_MAX_BUFFERS, sizeof(*rn.keys_all));
	if (!rn.keys_all) {
		rfail(&rn, "out of memory");
		goto meet;
	}
	for (int d = 0; d < N; d++) {
		uint64_t sum = 0;

		for (int b = 0; b < sc->nbufs; b++)
			sum += (uint64_t)rn.plan->dev[d].count[b] * qt_type_size(sc->bufs[b].type) +
			       4096;
		if (sum > need)
			need = sum;
	}
	accdma_world_opts_init(&wo);
	wo.transport = o->transport;
	wo.num_devices = N;
	if (o->queue_depth)
		wo.queue_depth = o->queue_depth;
	if (o->engines)
		wo.engines = o->engines;
	/* expected timeouts are reported by the watchdog (with -v); keep the library quiet */
	for (int d = 0; d < N && !o->out->verbose; d++)
		for (int j = 0; j < rn.plan->dev[d].nins; j++)
			if (rn.plan->dev[d].ins[j].expect == QT_EXPECT_TIMEOUT)
				wo.log_level = 0;
	if (wo.mem_size < need + (1u << 20))
		wo.mem_size = need + (1u << 20);
	rc = accdma_world_open(&wo, &rn.w);
	if (rc < 0) {
		rn.w = NULL;
		rfail(&rn, "accdma_world_open(N=%d) failed: %s", N, strerror(-rc));
		goto meet;
	}
	nlocal = accdma_world_local_devices(rn.w, &first);
	if (nlocal <= 0 || first < 0 || first + nlocal > N) {
		rfail(&rn, "accdma_world_local_devices failed: %d", nlocal);
		nlocal = 0;
		goto meet;
	}
	rn.first = first;
	rn.dev = calloc((size_t)nlocal, sizeof(*rn.dev));
	if (!rn.dev) {
		rfail(&rn, "out of memory");
		nlocal = 0;
		goto meet;
	}
	rn.ndev = nlocal;
	for (int k = 0; k < nlocal; k++) {
		struct devrt *d = &rn.dev[k];
		size_t n = (size_t)rn.plan->dev[first + k].nins + 1;

		d->rank = first + k;
		d->dp = &rn.plan->dev[first + k];
		d->tok = calloc(n, sizeof(*d->tok));
		d->state = calloc(n, 1);
		d->status = calloc(n, sizeof(*d->status));
		if (!d->tok || !d->state || !d->status) {
			rfail(&rn, "out of memory");
			goto meet;
		}
	}
	if (setup_buffers(&rn))
		goto meet;
	ready = 1;
meet:
	/* meeting 1: keys, and every buffer is initialised */
	if (!exchange_keys(&rn, ready))
		ready = 0;
	if (ready) {
		t0 = now_ms();
		drove = drive(&rn);
		r->ms += now_ms() - t0;
	}
	if (drove == 1) {
		int unexpected = 0;

		/* a stall is fine only if every stuck op was expected to time out */
		for (int k = 0; k < nlocal && !unexpected; k++) {
			struct devrt *d = &rn.dev[k];

			if (d->pc < d->dp->nins)
				unexpected = 1;
			for (int j = 0; j < d->dp->nins && !unexpected; j++)
				if (d->state[j] == IS_OUT &&
				    d->dp->ins[j].expect != QT_EXPECT_TIMEOUT &&
				    d->dp->ins[j].expect != QT_EXPECT_ANY) {
					enum accdma_status st;

					if (accdma_test(rn.w, d->tok[j], &st) == 0)
						record(d, j, st);
					else
						unexpected = 1;
				}
		}
		if (unexpected || o->out->verbose) {
			qt_watchdog_report(o->out, rn.w, first, nlocal, rn.timeout, where_fn, &rn);
			reported = 1;
		}
		if (unexpected)
			rfail(&rn, "stalled: no progress for %lld ms", (long long)rn.timeout);
	}
	/* meeting 2: every process stopped driving (its ops completed, or it stalled) */
	meet_stopped(&rn, reported);
	if (drove == 1)
		mark_stuck(&rn);
	/* meeting 3: every stalled process knows which of its ops are stuck */
	qt_ctl_barrier(o->ctl);
	if (drove >= 0) {
		stalled = rn.failed;
		if (drove == 1 && cancel_stuck(&rn)) {
			rfail(&rn, "stuck ops did not settle after cancel; data not checked");
		} else {
			check_statuses(&rn);
			if (!stalled) /* after an unexpected stall the data says nothing new */
				check_data(&rn);
		}
	}
	/* meeting 4: every process checked its buffers; the worlds may close */
	qt_ctl_barrier(o->ctl);
	if (rn.w) {
		rc = accdma_world_close(rn.w);
		if (rc < 0)
			rfail(&rn, "accdma_world_close failed: %s", strerror(-rc));
	}
	if (rn.dev)
		for (int k = 0; k < nlocal; k++) {
			free(rn.dev[k].tok);
			free(rn.dev[k].state);
			free(rn.dev[k].status);
		}
	free(rn.dev);
	while (rn.args) {
		struct exec_arg *n = rn.args->next;

		free(rn.args);
		rn.args = n;
	}
	free(rn.keys_all);
	qt_plan_free(rn.plan);
	r->pass = !rn.failed;
	/* meeting 5: did it fail anywhere? */
	any = failed_anywhere(&rn);
	return any ? -1 : 0;
}
