/* SPDX-License-Identifier: MIT */
/* qt_run.c - run a scenario against libaccdma and check every byte. */
#include "qt_run.h"
#include "qt_plan.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Per-instruction state. */
enum { IS_NEW = 0, IS_OUT, IS_DONE, IS_RELEASED, IS_STUCK };

/** A key no region has: ops posted with `badkey` use it. */
#define QT_BAD_KEY 0x7badbadu

struct exec_arg {
	struct exec_arg *next;
	enum qt_exec_kind kind;
	enum qt_type type;
	unsigned char *base;
	int64_t count;
	enum qt_type src_type;
	const unsigned char *src;
	int64_t ms;
	struct qt_val vals[];
};

struct devrt {
	int rank;
	struct qt_devplan *dp;
	accdma_queue *q;
	accdma_key keys[QT_MAX_BUFFERS];
	unsigned char *ptr[QT_MAX_BUFFERS];
	accdma_token *tok;
	unsigned char *state;
	int *status;
	int pc;
	int wpos;
	int oldest;
	int oldest_nt;
	int done;
	accdma_token blocking;
	int blocking_ins;      /* -1: the hidden failed token */
	accdma_token fail_tok; /* a posted `exec fail`, stands in for consumed failed deps */
	double eagain_since;   /* full queue with nothing of ours outstanding, since (ms) */
	int spinning;
};

struct run {
	const struct qt_scenario *sc;
	struct qt_plan *plan;
	accdma_world *w;
	const struct qt_run_opts *o;
	struct qt_result *r;
	struct devrt *dev;
	int first;
	int ndev;
	int64_t timeout;
	struct exec_arg *args;
	int failed;
	accdma_key *keys_all; /* every device's region keys: [rank * nbufs + buffer] */
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void rfail(struct run *rn, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The first failure becomes the reason; every failure is printed as a detail line. */
static void rfail(struct run *rn, const char *fmt, ...)
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

static const char *op_name(const struct qt_ins *in)
{
	static const char *const names[] = { "send", "recv", "write", "fence", "exec",
					     "after_all", "barrier", "permute" };

	return names[in->op];
}

static struct qt_val load_elem(enum qt_type t, const unsigned char *base, int64_t k)
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

static void store_elem(enum qt_type t, unsigned char *base, int64_t k, struct qt_val v)
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

/* The value an element holds after storing @v (so expectations compare like with like). */
static struct qt_val as_stored(enum qt_type t, struct qt_val v)
{
	unsigned char tmp[4];

	store_elem(t, tmp, 0, v);
	return load_elem(t, tmp, 0);
}

/* exec function: runs on an engine thread. Touches only its own range. */
static int exec_step(void *p)
{
	struct exec_arg *a = p;

	switch (a->kind) {
	case QE_FAIL:
		return 1;
	case QE_SLEEP: {
		struct timespec ts = { a->ms / 1000, (long)(a->ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
		return 0;
	}
	case QE_COPY:
		for (int64_t k = 0; k < a->count; k++)
			store_elem(a->type, a->base, k, load_elem(a->src_type, a->src, k));
		return 0;
	default:
		break;
	}
	for (int64_t k = 0; k < a->count; k++) {
		struct qt_val x = load_elem(a->type, a->base, k), v = a->vals[k], res;

		if (a->kind == QE_FILL) {
			res = v;
		} else if (!x.is_float && !v.is_float) {
			uint64_t ux = (uint64_t)x.i, uv = (uint64_t)v.i;

			res = qt_val_int((int64_t)(a->kind == QE_ADD ? ux + uv : ux * uv));
		} else {
			double dx = qt_val_double(x), dv = qt_val_double(v);

			res.is_float = 1;
			res.i = 0;
			res.f = a->kind == QE_ADD ? dx + dv : dx * dv;
		}
		store_elem(a->type, a->base, k, res);
	}
	return 0;
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

static void record(struct devrt *d, int idx, enum accdma_status st)
{
	if (idx < 0) {
		d->fail_tok = 0;
		return;
	}
	d->state[idx] = IS_DONE;
	d->status[idx] = (int)st;
}

/* Build the exec argument; values are evaluated here, on the posting thread. */
static struct exec_arg *make_exec_arg(struct run *rn, struct devrt *d, const struct qt_ins *in)
{
	const struct qt_buffer_decl *b = in->buf >= 0 ? &rn->sc->bufs[in->buf] : NULL;
	int64_t count = in->buf >= 0 ? in->hi - in->lo : 0;
	int needs_vals = in->exec == QE_ADD || in->exec == QE_SCALE || in->exec == QE_FILL;
	struct exec_arg *a;

	a = calloc(1, sizeof(*a) + (needs_vals ? sizeof(struct qt_val) * (size_t)count : 0));
	if (!a)
		return NULL;
	a->next = rn->args;
	rn->args = a;
	a->kind = in->exec;
	a->ms = in->value;
	a->count = count;
	if (b) {
		a->type = b->type;
		a->base = d->ptr[in->buf] + in->lo * (int64_t)qt_type_size(b->type);
	}
	if (in->exec == QE_COPY) {
		a->src_type = rn->sc->bufs[in->buf2].type;
		a->src = d->ptr[in->buf2] + in->off2 * (int64_t)qt_type_size(a->src_type);
	}
	if (needs_vals) {
		struct qt_var store[QT_ENV_MAX];
		struct qt_env env = { store, 0, QT_ENV_MAX };
		char msg[200];

		memcpy(store, in->env->vars, sizeof(struct qt_var) * (size_t)in->env->n);
		env.n = in->env->n;
		if (qt_env_set(&env, "i", qt_val_int(0))) {
			rfail(rn, "%s:%d: too many variables", rn->sc->file, in->st->line);
			return NULL;
		}
		for (int64_t k = 0; k < count; k++) {
			env.vars[env.n - 1].v = qt_val_int(in->lo + k);
			if (qt_eval(in->st->arg, &env, &a->vals[k], msg, sizeof(msg))) {
				rfail(rn, "%s:%s (rank %d)", rn->sc->file, msg, d->rank);
				return NULL;
			}
		}
	}
	return a;
}

/*
 * Post instruction @idx of @d. Return: 1 posted (or settled without posting),
 * 0 blocked on a full queue, -1 scenario error.
 */
static int exec_fail(void *arg)
{
	(void)arg;
	return 1;
}

static int post_one(struct run *rn, struct devrt *d, int idx)
{
	const struct qt_ins *in = &d->dp->ins[idx];
	accdma_token deps[ACCDMA_MAX_DEPS], tok = 0;
	int ndeps = 0, rc, failed_dep = 0;
	struct accdma_op op;

	for (int k = 0; k < in->ndeps; k++) {
		int j = in->deps[k];

		switch (d->state[j]) {
		case IS_OUT:
			deps[ndeps++] = d->tok[j];
			break;
		case IS_DONE:
			/* consumed early (full queue or wait): if it failed, depend on a
			 * stand-in failed op so the library still completes this op
			 * NOT_ATTEMPTED (and its partner PEER_ERROR) */
			if (d->status[j] != ACCDMA_OK && !failed_dep) {
				failed_dep = 1;
				if (!d->fail_tok) {
					struct accdma_op f;

					memset(&f, 0, sizeof(f));
					f.kind = ACCDMA_OP_EXEC;
					f.fn = exec_fail;
					rc = accdma_post(d->q, &f, 1, &d->fail_tok);
					if (rc == -EAGAIN)
						return 0;
					if (rc < 0) {
						d->fail_tok = 0;
						rfail(rn, "rank %d: posting a stand-in op failed: %s",
						      d->rank, strerror(-rc));
						return -1;
					}
				}
				deps[ndeps++] = d->fail_tok;
			}
			break;
		default:
			break; /* released: not tracked */
		}
	}
	memset(&op, 0, sizeof(op));
	op.deps = ndeps ? deps : NULL;
	op.num_deps = ndeps;
	op.peer = in->peer;
	op.tag = in->tag;
	if (in->buf >= 0) {
		size_t esz = qt_type_size(rn->sc->bufs[in->buf].type);

		op.key = in->badkey ? QT_BAD_KEY : d->keys[in->buf];
		op.offset = (uint64_t)in->lo * esz;
		op.length = (uint64_t)(in->hi - in->lo) * esz;
	}
	switch (in->op) {
	case QO_SEND:
		op.kind = ACCDMA_OP_SEND;
		break;
	case QO_RECV:
		op.kind = ACCDMA_OP_RECV;
		break;
	case QO_WRITE: {
		op.kind = ACCDMA_OP_WRITE;
		/* the peer's key for that buffer (exchanged between processes under shm);
		 * a peer out of range is refused by accdma_post() */
		op.remote_key = in->peer >= 0 && in->peer < rn->plan->N ?
			rn->keys_all[(size_t)in->peer * QT_MAX_BUFFERS + (size_t)in->buf2] : 0;
		op.remote_offset = (uint64_t)in->off2 * qt_type_size(rn->sc->bufs[in->buf2].type);
		break;
	}
	case QO_FENCE:
		op.kind = ACCDMA_OP_FENCE;
		break;
	case QO_AFTER_ALL:
		op.kind = ACCDMA_OP_AFTER_ALL;
		if (ndeps == 0) {
			/* every joined token already completed OK: join nothing, nothing to post */
			record(d, idx, ACCDMA_OK);
			return 1;
		}
		break;
	case QO_EXEC: {
		struct exec_arg *a = make_exec_arg(rn, d, in);

		if (!a) {
			if (!rn->failed)
				rfail(rn, "out of memory");
			return -1;
		}
		op.kind = ACCDMA_OP_EXEC;
		op.fn = exec_step;
		op.arg = a;
		break;
	}
	case QO_BARRIER:
	case QO_PERMUTE:
		break;
	}
	if (in->op == QO_BARRIER) {
		rc = accdma_barrier(d->q, op.deps, ndeps, &tok);
	} else if (in->op == QO_PERMUTE) {
		size_t esz = qt_type_size(rn->sc->bufs[in->buf].type);

		rc = accdma_permute(d->q, in->pairs, in->npairs, in->tag, d->keys[in->buf], op.offset,
				    d->keys[in->buf2],
				    (uint64_t)in->off2 * qt_type_size(rn->sc->bufs[in->buf2].type),
				    op.length, op.deps, ndeps, &tok);
		(void)esz;
	} else {
		rc = accdma_post(d->q, &op, 1, &tok);
		if (rc == 1)
			rc = 0;
	}
	if (rc == -EAGAIN)
		return 0;
	if (rc < 0) {
		rfail(rn, "%s:%d: rank %d: posting %s failed: %s", rn->sc->file, in->st->line,
		      d->rank, op_name(in), strerror(-rc));
		return -1;
	}
	d->tok[idx] = tok;
	d->state[idx] = IS_OUT;
	rn->r->ops++;
	if (in->op == QO_SEND || in->op == QO_WRITE || in->op == QO_PERMUTE)
		rn->r->bytes += op.length;
	return 1;
}

/* Test token @idx without blocking. Return 1 if it is settled, 0 if pending, -1 on error. */
static int try_settle(struct run *rn, struct devrt *d, int idx)
{
	enum accdma_status st;
	int rc;

	if (d->state[idx] != IS_OUT)
		return 1;
	rc = accdma_test(rn->w, d->tok[idx], &st);
	if (rc == 0) {
		record(d, idx, st);
		return 1;
	}
	if (rc == -EAGAIN) {
		d->blocking = d->tok[idx];
		d->blocking_ins = idx;
		return 0;
	}
	rfail(rn, "%s:%d: rank %d: accdma_test failed: %s", rn->sc->file,
	      d->dp->ins[idx].st->line, d->rank, strerror(-rc));
	return -1;
}

/* The oldest outstanding token of @d, or -1. */
static int oldest_out(struct devrt *d)
{
	while (d->oldest < d->dp->nins && d->state[d->oldest] != IS_OUT)
		d->oldest++;
	return d->oldest < d->dp->nins ? d->oldest : -1;
}

/*
 * The token to wait for at the end of the program: the oldest outstanding one
 * not expected to time out, so that expected stalls are waited for last.
 */
static int final_pick(struct devrt *d)
{
	while (d->oldest_nt < d->dp->nins &&
	       (d->state[d->oldest_nt] != IS_OUT ||
		d->dp->ins[d->oldest_nt].expect == QT_EXPECT_TIMEOUT))
		d->oldest_nt++;
	if (d->oldest_nt < d->dp->nins)
		return d->oldest_nt;
	return oldest_out(d);
}

/* Advance one device as far as it goes without blocking. Return: progress made (1/0), -1 error. */
static int step_device(struct run *rn, struct devrt *d)
{
	int progress = 0;

	while (!d->done) {
		if (d->pc >= d->dp->nins) {
			/* the implicit `wait all` at the end of every program */
			int j = final_pick(d);

			if (j < 0 && d->fail_tok) {
				enum accdma_status st;
				int rc = accdma_test(rn->w, d->fail_tok, &st);

				if (rc == -EAGAIN) {
					d->blocking = d->fail_tok;
					d->blocking_ins = -1;
					return progress;
				}
				d->fail_tok = 0;
				continue;
			}
			if (j < 0) {
				d->done = 1;
				return 1;
			}
			int rc = try_settle(rn, d, j);

			if (rc <= 0)
				return rc < 0 ? -1 : progress;
			progress = 1;
			continue;
		}
		const struct qt_ins *in = &d->dp->ins[d->pc];

		if (in->kind == QI_OP) {
			int rc = post_one(rn, d, d->pc);

			if (rc < 0)
				return -1;
			if (rc == 0) {
				/* full queue: free a slot by settling our oldest token */
				int j = oldest_out(d);

				if (j < 0) {
					/* nothing of ours to wait for: the library frees slots on
					 * its own; retry until the no-progress timeout */
					double t = now_ms();

					if (!d->eagain_since)
						d->eagain_since = t;
					if (t - d->eagain_since > (double)rn->timeout) {
						rfail(rn, "%s:%d: rank %d: queue full for %lld ms with no op "
						      "outstanding (does %s need more slots than the queue "
						      "depth?)", rn->sc->file, in->st->line, d->rank,
						      (long long)rn->timeout, op_name(in));
						return -1;
					}
					d->spinning = 1;
					return progress;
				}
				rc = try_settle(rn, d, j);
				if (rc <= 0)
					return rc < 0 ? -1 : progress;
				progress = 1;
				continue;
			}
			d->pc++;
			d->eagain_since = 0;
			progress = 1;
		} else if (in->kind == QI_WAIT) {
			while (d->wpos < in->nwaits) {
				int rc = try_settle(rn, d, in->waits[d->wpos]);

				if (rc <= 0)
					return rc < 0 ? -1 : progress;
				d->wpos++;
				progress = 1;
			}
			d->wpos = 0;
			d->pc++;
			progress = 1;
		} else {
			for (int k = 0; k < in->nwaits; k++) {
				int j = in->waits[k];

				if (d->state[j] == IS_OUT) {
					int rc = accdma_release(rn->w, d->tok[j]);

					if (rc < 0) {
						rfail(rn, "%s:%d: rank %d: release failed: %s",
						      rn->sc->file, in->st->line, d->rank,
						      strerror(-rc));
						return -1;
					}
				}
				d->state[j] = IS_RELEASED;
			}
			d->pc++;
			progress = 1;
		}
	}
	return progress;
}

/* Drive every device until all are done, a stall, or an error. Return 0 done, 1 stalled, -1 error. */
static int drive(struct run *rn)
{
	accdma_token *blk = calloc((size_t)rn->ndev, sizeof(*blk));
	int *blkdev = calloc((size_t)rn->ndev, sizeof(*blkdev));
	int ret = 0;

	if (!blk || !blkdev) {
		free(blk);
		free(blkdev);
		rfail(rn, "out of memory");
		return -1;
	}
	for (;;) {
		int progress = 0, alldone = 1, nb = 0, spinning = 0;

		for (int k = 0; k < rn->ndev; k++) {
			struct devrt *d = &rn->dev[k];
			int rc;

			if (d->done)
				continue;
			d->spinning = 0;
			rc = step_device(rn, d);
			spinning |= d->spinning;
			if (rc < 0) {
				ret = -1;
				goto out;
			}
			progress |= rc;
			if (!d->done)
				alldone = 0;
		}
		if (alldone)
			break;
		if (progress)
			continue;
		if (spinning) {
			struct timespec ts = { 0, 1000000 };

			nanosleep(&ts, NULL);
			continue;
		}
		for (int k = 0; k < rn->ndev; k++)
			if (!rn->dev[k].done) {
				blk[nb] = rn->dev[k].blocking;
				blkdev[nb++] = k;
			}
		enum accdma_status st;
		int rc = accdma_wait_any(rn->w, blk, nb, rn->timeout, &st);

		if (rc >= 0 && rc < nb) {
			struct devrt *d = &rn->dev[blkdev[rc]];

			record(d, d->blocking_ins, st);
			continue;
		}
		if (rc == -ETIMEDOUT) {
			ret = 1;
			break;
		}
		rfail(rn, "accdma_wait_any failed: %s", rc < 0 ? strerror(-rc) : "bad index");
		ret = -1;
		break;
	}
out:
	free(blk);
	free(blkdev);
	return ret;
}

/* After a stall: settle what completed, mark the rest stuck. */
static void mark_stuck(struct run *rn)
{
	for (int k = 0; k < rn->ndev; k++) {
		struct devrt *d = &rn->dev[k];

		for (int j = 0; j < d->dp->nins; j++) {
			enum accdma_status st;

			if (d->state[j] != IS_OUT)
				continue;
			if (accdma_test(rn->w, d->tok[j], &st) == 0) {
				record(d, j, st);
				continue;
			}
			d->state[j] = IS_STUCK;
		}
	}
}

/* Cancel what is stuck and wait for it. Return 0 if everything settled. */
static int cancel_stuck(struct run *rn)
{
	int unsettled = 0;

	for (int k = 0; k < rn->ndev; k++) {
		struct devrt *d = &rn->dev[k];

		for (int j = 0; j < d->dp->nins; j++)
			if (d->state[j] == IS_STUCK)
				accdma_cancel(rn->w, d->tok[j]);
	}
	for (int k = 0; k < rn->ndev; k++) {
		struct devrt *d = &rn->dev[k];

		for (int j = 0; j < d->dp->nins; j++) {
			if (d->state[j] != IS_STUCK)
				continue;
			if (accdma_wait(rn->w, d->tok[j], rn->timeout, NULL) != 0)
				unsettled++;
		}
	}
	return unsettled;
}

static int status_ok(int expect, int state, int st)
{
	if (expect == QT_EXPECT_ANY)
		return 1;
	if (state == IS_STUCK)
		return expect == QT_EXPECT_TIMEOUT;
	if (expect == QT_EXPECT_TIMEOUT)
		return 0;
	if (expect == QT_EXPECT_FAILED)
		return st != ACCDMA_OK;
	return st == expect;
}

static void check_statuses(struct run *rn)
{
	for (int k = 0; k < rn->ndev; k++) {
		struct devrt *d = &rn->dev[k];

		for (int j = 0; j < d->dp->nins; j++) {
			const struct qt_ins *in = &d->dp->ins[j];
			int s = d->state[j];

			if (in->kind != QI_OP || s == IS_RELEASED)
				continue;
			if (s == IS_NEW) {
				rfail(rn, "%s:%d: rank %d: %s never posted (its device stalled before it)",
				      rn->sc->file, in->st->line, d->rank, op_name(in));
				continue;
			}
			if (status_ok(in->expect, s, d->status[j]))
				continue;
			if (s == IS_STUCK)
				rfail(rn, "%s:%d: rank %d: %s peer %d tag %llu never completed "
				      "(expected %s)", rn->sc->file, in->st->line, d->rank, op_name(in),
				      in->peer, (unsigned long long)in->tag, qt_status_name(in->expect));
			else
				rfail(rn, "%s:%d: rank %d: %s peer %d tag %llu completed %s, expected %s",
				      rn->sc->file, in->st->line, d->rank, op_name(in), in->peer,
				      (unsigned long long)in->tag, qt_status_name(d->status[j]),
				      qt_status_name(in->expect));
		}
	}
}

static int values_equal(enum qt_type t, struct qt_val got, struct qt_val want)
{
	want = as_stored(t, want);
	if (t != QT_FLOAT32)
		return got.i == want.i;
	double a = qt_val_double(got), b = qt_val_double(want);

	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	return fabs(a - b) <= 1e-5 * fmax(1.0, fabs(b));
}

static void fmt_val(char *buf, size_t n, struct qt_val v)
{
	if (v.is_float)
		snprintf(buf, n, "%g", v.f);
	else
		snprintf(buf, n, "%lld", (long long)v.i);
}

static void check_data(struct run *rn)
{
	for (int k = 0; k < rn->ndev; k++) {
		struct devrt *d = &rn->dev[k];

		for (int c = 0; c < d->dp->nchecks; c++) {
			const struct qt_check *ck = &d->dp->checks[c];
			enum qt_type t = rn->sc->bufs[ck->buf].type;
			struct qt_var store[QT_ENV_MAX];
			struct qt_env env = { store, 0, QT_ENV_MAX };
			int bad = 0;
			char msg[200];

			memcpy(store, ck->env->vars, sizeof(struct qt_var) * (size_t)ck->env->n);
			env.n = ck->env->n;
			if (qt_env_set(&env, "i", qt_val_int(0))) {
				rfail(rn, "%s:%d: too many variables", rn->sc->file, ck->st->line);
				continue;
			}
			for (int64_t e = ck->lo; e < ck->hi; e++) {
				struct qt_val want, got;

				env.vars[env.n - 1].v = qt_val_int(e);
				if (qt_eval(ck->st->value, &env, &want, msg, sizeof(msg))) {
					rfail(rn, "%s:%s (rank %d)", rn->sc->file, msg, d->rank);
					break;
				}
				got = load_elem(t, d->ptr[ck->buf], e);
				if (values_equal(t, got, want))
					continue;
				if (bad++ < 3) {
					char g[40], wv[40];

					fmt_val(g, sizeof(g), got);
					fmt_val(wv, sizeof(wv), as_stored(t, want));
					rfail(rn, "%s:%d: rank %d: %s[%lld] = %s, expected %s",
					      rn->sc->file, ck->st->line, d->rank,
					      rn->sc->bufs[ck->buf].name, (long long)e, g, wv);
				}
			}
			if (bad > 3)
				qt_out_detail(rn->o->out, "rank %d: %s: %d wrong elements in all", d->rank,
					      rn->sc->bufs[ck->buf].name, bad);
		}
	}
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

/*
 * Meeting 2 under shm: every process stopped driving. A stalled process
 * contributes its wait-for edges (a send/recv waiting for the matching op of
 * a peer, as accdma_find_cycle() counts them: the library sees only this
 * process's devices); the lowest stalled rank prints a cycle that spans
 * processes, if there is one.
 */
static void meet_stopped(struct run *rn, int stalled)
{
	enum { MAX_EDGES = 4096 };
	struct qt_ctl *c = rn->o->ctl;
	int32_t *mine = NULL;
	int n = 0, N = rn->plan ? rn->plan->N : 0, lowest = -1, len = 0;
	uint32_t lens[QT_MAX_DEVICES];
	char *all;

	if (!c || c->nprocs == 1)
		return;
	if (stalled && rn->w) {
		struct accdma_op_info *infos = malloc(sizeof(*infos) * 1024);

		mine = malloc(sizeof(int32_t) * 2 * MAX_EDGES);
		for (int k = 0; infos && mine && k < rn->ndev; k++) {
			int cnt = accdma_pending(rn->w, rn->first + k, infos, 1024);

			for (int j = 0; j < cnt && j < 1024 && n < MAX_EDGES; j++)
				if ((infos[j].kind == ACCDMA_OP_SEND || infos[j].kind == ACCDMA_OP_RECV) &&
				    infos[j].stage == ACCDMA_STAGE_PEER && infos[j].peer != rn->first + k &&
				    infos[j].peer >= 0 && infos[j].peer < N) {
					mine[2 * n] = rn->first + k;
					mine[2 * n + 1] = infos[j].peer;
					n++;
				}
		}
		free(infos);
	}
	/* a stalled process sends at least a marker (-1, -1) */
	if (stalled && !n && mine) {
		mine[0] = mine[1] = -1;
		n = 1;
	}
	qt_ctl_allgather(c, mine, (uint32_t)(sizeof(int32_t) * 2 * (size_t)n), &all, lens);
	free(mine);
	for (int q = 0; q < c->nprocs && lowest < 0; q++)
		if (lens[q])
			lowest = q;
	if (lowest == c->rank && N > 0) {
		uint8_t *edge = calloc((size_t)N * (size_t)N, 1), *color = calloc((size_t)N, 1);
		int *stack = calloc((size_t)N, sizeof(int)), *cyc = calloc((size_t)N, sizeof(int));
		size_t off = 0;

		for (int q = 0; edge && q < c->nprocs; q++) {
			for (uint32_t e = 0; e + 8 <= lens[q]; e += 8) {
				int32_t a, b;

				memcpy(&a, all + off + e, 4);
				memcpy(&b, all + off + e + 4, 4);
				if (a >= 0 && a < N && b >= 0 && b < N)
					edge[(size_t)a * (size_t)N + (size_t)b] = 1;
			}
			off += lens[q];
		}
		/* depth-first search for a back edge */
		for (int v = 0; edge && color && stack && cyc && v < N && !len; v++) {
			int depth = 0;

			if (color[v])
				continue;
			/* iterative DFS: stack of (vertex, next neighbour) */
			int *it = calloc((size_t)N, sizeof(int));

			if (!it)
				break;
			stack[0] = v;
			color[v] = 1;
			while (depth >= 0 && !len) {
				int x = stack[depth], u = it[depth]++;

				if (u >= N) {
					color[x] = 2;
					depth--;
					continue;
				}
				if (!edge[(size_t)x * (size_t)N + (size_t)u])
					continue;
				if (color[u] == 1) {
					int start = depth;

					while (stack[start] != u)
						start--;
					len = depth - start + 1;
					memcpy(cyc, stack + start, sizeof(int) * (size_t)len);
				} else if (!color[u]) {
					color[u] = 1;
					stack[++depth] = u;
					it[depth] = 0;
				}
			}
			free(it);
		}
		if (len > 0) {
			char buf[512];
			size_t l = 0;

			for (int k = 0; k < len && l < sizeof(buf) - 32; k++)
				l += (size_t)snprintf(buf + l, sizeof(buf) - l, "%d -> ", cyc[k]);
			if (l < sizeof(buf) - 16)
				snprintf(buf + l, sizeof(buf) - l, "%d", cyc[0]);
			qt_out_detail(rn->o->out, "wait cycle across processes: %s", buf);
		} else {
			qt_out_detail(rn->o->out, "no wait cycle between devices (of any process)");
		}
		free(edge);
		free(color);
		free(stack);
		free(cyc);
	}
	free(all);
}

/* Did the scenario fail on any process? (Every rank gets the same answer.) */
static int failed_anywhere(struct run *rn)
{
	int32_t mine = rn->failed ? 1 : 0, any = 0;
	uint32_t lens[QT_MAX_DEVICES];
	int nprocs = rn->o->ctl ? rn->o->ctl->nprocs : 1;
	char *all;

	qt_ctl_allgather(rn->o->ctl, &mine, sizeof(mine), &all, lens);
	for (int q = 0; q < nprocs; q++) {
		int32_t v = 1;

		if (lens[q] == sizeof(v))
			memcpy(&v, all + (size_t)q * sizeof(v), sizeof(v));
		any |= v != 0;
	}
	free(all);
	return any;
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
