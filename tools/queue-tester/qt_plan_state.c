/* SPDX-License-Identifier: MIT */
/*
 * qt_plan_state.c - the expansion's state (qt_plan_internal.h): errors that
 * name the line and the rank, variables in scope and their snapshots, token
 * names, the growing instruction list, and references evaluated to ranges.
 */
#include "qt_plan_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void xp_xfail(struct xp *x, int line, int col, const char *fmt, ...)
{
	char msg[300];
	va_list ap;

	if (x->failed)
		return;
	x->failed = 1;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(x->err, x->errlen, "%s:%d:%d: N=%d rank %d: %s", x->sc->file, line, col, x->N,
		 x->rank, msg);
}

/* An evaluation error message already carries line:col; prefix file and rank. */
void xp_xfail_eval(struct xp *x, const char *msg)
{
	if (x->failed)
		return;
	x->failed = 1;
	snprintf(x->err, x->errlen, "%s:%s (N=%d rank %d)", x->sc->file, msg, x->N, x->rank);
}

int xp_eval_int(struct xp *x, const struct qt_expr *e, int64_t *v)
{
	char msg[200];

	if (qt_eval_int(e, &x->env, v, msg, sizeof(msg))) {
		xp_xfail_eval(x, msg);
		return -1;
	}
	return 0;
}

int xp_env_push(struct xp *x, const struct qt_stmt *s, const char *name, struct qt_val v)
{
	if (qt_env_set(&x->env, name, v)) {
		xp_xfail(x, s->line, s->col, "more than %d variables in scope", QT_ENV_MAX);
		return -1;
	}
	x->env_version++;
	return 0;
}

void xp_env_restore(struct xp *x, int n)
{
	if (x->env.n != n) {
		x->env.n = n;
		x->env_version++;
	}
}

struct qt_env *xp_snapshot(struct xp *x)
{
	struct qt_env *e;

	if (x->snap && x->snap_version == x->env_version)
		return x->snap;
	e = qt_alloc(&x->plan->arena, sizeof(*e));
	if (e)
		e->vars = qt_alloc(&x->plan->arena, sizeof(struct qt_var) * (size_t)x->env.n);
	if (!e || !e->vars) {
		xp_xfail(x, 0, 0, "out of memory");
		return NULL;
	}
	memcpy(e->vars, x->env.vars, sizeof(struct qt_var) * (size_t)x->env.n);
	e->n = e->cap = x->env.n;
	x->snap = e;
	x->snap_version = x->env_version;
	return e;
}

int xp_find_name(struct xp *x, const char *name)
{
	for (int k = x->nnames - 1; k >= 0; k--)
		if (strcmp(x->names[k].name, name) == 0)
			return x->names[k].idx;
	return -1;
}

int xp_set_name(struct xp *x, const char *name, int idx)
{
	for (int k = 0; k < x->nnames; k++)
		if (strcmp(x->names[k].name, name) == 0) {
			x->names[k].idx = idx;
			return 0;
		}
	if (x->nnames == x->ncap) {
		int nc = x->ncap ? x->ncap * 2 : 16;
		struct tokname *n = realloc(x->names, sizeof(*n) * (size_t)nc);

		if (!n)
			return -1;
		x->names = n;
		x->ncap = nc;
	}
	x->names[x->nnames].name = name;
	x->names[x->nnames].idx = idx;
	x->nnames++;
	return 0;
}

struct qt_ins *xp_new_ins(struct xp *x, const struct qt_stmt *s)
{
	struct qt_devplan *dp = x->dp;

	if (++x->total_ins > x->lim->max_ins) {
		xp_xfail(x, s->line, s->col, "more than %lld ops in the expanded programs",
		      (long long)x->lim->max_ins);
		return NULL;
	}
	if (dp->nins == dp->cap) {
		int nc = dp->cap ? dp->cap * 2 : 64;
		struct qt_ins *n = realloc(dp->ins, sizeof(*n) * (size_t)nc);
		unsigned char *c;

		if (!n) {
			xp_xfail(x, s->line, s->col, "out of memory");
			return NULL;
		}
		dp->ins = n;
		c = realloc(x->consumed, (size_t)nc);
		if (!c) {
			xp_xfail(x, s->line, s->col, "out of memory");
			return NULL;
		}
		x->consumed = c;
		dp->cap = nc;
	}
	struct qt_ins *in = &dp->ins[dp->nins];

	memset(in, 0, sizeof(*in));
	x->consumed[dp->nins] = 0;
	dp->nins++;
	in->st = s;
	in->expect = s->expect < 0 ? ACCDMA_OK : s->expect;
	in->buf = in->buf2 = -1;
	return in;
}

/*
 * Evaluate a buffer reference into [lo, hi) elements. @strict: must lie within
 * the buffer (the runner touches that memory); otherwise ranges past the end
 * are passed to the library on purpose (OUT_OF_BOUNDS scenarios).
 */
int xp_eval_ref(struct xp *x, const struct qt_ref *r, int strict, int64_t *lo, int64_t *hi)
{
	int64_t count = x->dp->count[r->buf];
	const int64_t far = (int64_t)1 << 40;

	*lo = 0;
	*hi = count;
	if (r->lo) {
		if (xp_eval_int(x, r->lo, lo))
			return -1;
		*hi = *lo + 1;
		if (r->hi && xp_eval_int(x, r->hi, hi))
			return -1;
	}
	if (*lo < 0 || *hi < *lo || *hi > far) {
		xp_xfail(x, r->line, r->col, "bad range [%lld:%lld] of '%s'", (long long)*lo,
		      (long long)*hi, r->name);
		return -1;
	}
	if (strict && *hi > count) {
		xp_xfail(x, r->line, r->col, "range [%lld:%lld] past the end of '%s' (%lld elements)",
		      (long long)*lo, (long long)*hi, r->name, (long long)count);
		return -1;
	}
	return 0;
}

int xp_resolve_deps(struct xp *x, const struct qt_stmt *s, int *out, int *nout)
{
	*nout = 0;
	for (int k = 0; k < s->nnames; k++) {
		int idx = xp_find_name(x, s->names[k]);

		if (idx < 0) {
			xp_xfail(x, s->line, s->col,
			      "unknown token '%s' (no earlier op on this rank's path has 'as %s')",
			      s->names[k], s->names[k]);
			return -1;
		}
		if (*nout >= ACCDMA_MAX_DEPS) {
			xp_xfail(x, s->line, s->col, "more than %d dependencies", ACCDMA_MAX_DEPS);
			return -1;
		}
		out[(*nout)++] = idx;
	}
	return 0;
}

/**
 * xp_eval_source_target() - the source range and target offset of a write or permute.
 * @x: the expansion. @s: the statement. @in: the op being built.
 * Return: 0, or -1 after reporting an error.
 */
int xp_eval_source_target(struct xp *x, const struct qt_stmt *s, struct qt_ins *in)
{
	in->buf = s->ref.buf;
	in->buf2 = s->ref2.buf;
	if (xp_eval_ref(x, &s->ref, 0, &in->lo, &in->hi))
		return -1;
	if (s->ref2.lo && xp_eval_int(x, s->ref2.lo, &in->off2))
		return -1;
	if (in->off2 < 0 || in->off2 > ((int64_t)1 << 40)) {
		xp_xfail(x, s->ref2.line, s->ref2.col, "bad target offset %lld", (long long)in->off2);
		return -1;
	}
	return 0;
}
