/* SPDX-License-Identifier: MIT */
/* qt_plan.c - expand a scenario into per-device instruction lists. */
#include "qt_plan_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/**
 * qt_plan_default_limits() - the limits queue-tester uses.
 * @l: filled.
 */
void qt_plan_default_limits(struct qt_plan_limits *l)
{
	l->max_ins = 4 << 20;
	l->max_steps = 64 << 20;
	l->max_buf_bytes = 256 << 20;
	l->max_dev_bytes = 512 << 20;
}

/**
 * qt_base_env() - the variables every expression sees.
 * @env: filled (must have room). @rank/@N: the device and the world size.
 */
void qt_base_env(struct qt_env *env, int rank, int N)
{
	env->n = 0;
	qt_env_set(env, "rank", qt_val_int(rank));
	qt_env_set(env, "N", qt_val_int(N));
	qt_env_set(env, "even", qt_val_int(rank % 2 == 0));
	qt_env_set(env, "odd", qt_val_int(rank % 2 != 0));
}

static int expand_op(struct xp *x, const struct qt_stmt *s)
{
	int deps[ACCDMA_MAX_DEPS], ndeps;
	struct qt_ins *in;
	int64_t v;

	if (xp_resolve_deps(x, s, deps, &ndeps))
		return -1;
	in = xp_new_ins(x, s);
	if (!in)
		return -1;
	in->kind = QI_OP;
	in->op = s->op;
	in->exec = s->exec;
	in->badkey = s->badkey;
	memcpy(in->deps, deps, sizeof(deps[0]) * (size_t)ndeps);
	in->ndeps = ndeps;
	if (s->peer) {
		if (xp_eval_int(x, s->peer, &v))
			return -1;
		if (v < 0 || v >= x->N) {
			xp_xfail(x, s->peer->line, s->peer->col, "peer %lld outside 0..%d", (long long)v,
			      x->N - 1);
			return -1;
		}
		in->peer = (int)v;
	}
	if (s->tag) {
		if (xp_eval_int(x, s->tag, &v))
			return -1;
		if (v < 0) {
			xp_xfail(x, s->tag->line, s->tag->col, "negative tag %lld", (long long)v);
			return -1;
		}
		in->tag = (uint64_t)v;
	}
	switch (s->op) {
	case QO_SEND:
	case QO_RECV:
		in->buf = s->ref.buf;
		if (xp_eval_ref(x, &s->ref, 0, &in->lo, &in->hi))
			return -1;
		break;
	case QO_WRITE:
		if (xp_eval_source_target(x, s, in))
			return -1;
		break;
	case QO_PERMUTE: {
		if (xp_eval_source_target(x, s, in))
			return -1;
		in->pairs = qt_alloc(&x->plan->arena, sizeof(*in->pairs) * (size_t)x->N);
		if (!in->pairs) {
			xp_xfail(x, s->line, s->col, "out of memory");
			return -1;
		}
		x->steps += x->N;
		if (x->steps > x->lim->max_steps) {
			xp_xfail(x, s->line, s->col, "expansion takes too many steps");
			return -1;
		}
		int n0 = x->env.n;

		for (int src = 0; src < x->N; src++) {
			if (xp_env_push(x, s, "src", qt_val_int(src)) || xp_eval_int(x, s->arg, &v))
				return -1;
			xp_env_restore(x, n0);
			if (v < 0)
				continue;
			if (v >= x->N) {
				xp_xfail(x, s->arg->line, s->arg->col, "map gives target %lld for src %d",
				      (long long)v, src);
				return -1;
			}
			in->pairs[in->npairs].source = src;
			in->pairs[in->npairs].target = (int)v;
			in->npairs++;
		}
		break;
	}
	case QO_EXEC:
		switch (s->exec) {
		case QE_ADD:
		case QE_SCALE:
		case QE_FILL:
			in->buf = s->ref.buf;
			if (xp_eval_ref(x, &s->ref, 1, &in->lo, &in->hi))
				return -1;
			in->env = xp_snapshot(x);
			if (!in->env)
				return -1;
			break;
		case QE_COPY:
			in->buf = s->ref.buf;
			in->buf2 = s->ref2.buf;
			if (xp_eval_ref(x, &s->ref, 1, &in->lo, &in->hi) ||
			    xp_eval_ref(x, &s->ref2, 1, &in->off2, &in->hi2))
				return -1;
			if (in->hi - in->lo != in->hi2 - in->off2) {
				xp_xfail(x, s->line, s->col, "exec copy between ranges of different lengths");
				return -1;
			}
			break;
		case QE_SLEEP:
			if (xp_eval_int(x, s->arg, &in->value))
				return -1;
			if (in->value < 0 || in->value > 10000) {
				xp_xfail(x, s->arg->line, s->arg->col, "sleep must be 0..10000 ms");
				return -1;
			}
			break;
		case QE_FAIL:
			break;
		}
		break;
	case QO_AFTER_ALL:
		if (ndeps == 0) {
			xp_xfail(x, s->line, s->col, "after_all needs at least one token");
			return -1;
		}
		break;
	case QO_FENCE:
	case QO_BARRIER:
		break;
	}
	if (s->as && xp_set_name(x, s->as, x->dp->nins - 1)) {
		xp_xfail(x, s->line, s->col, "out of memory");
		return -1;
	}
	return 0;
}

static int expand_wait(struct xp *x, const struct qt_stmt *s)
{
	struct qt_ins *in;
	int n = 0;
	int limit = x->dp->nins;

	in = xp_new_ins(x, s);
	if (!in)
		return -1;
	in->kind = s->kind == QS_WAIT ? QI_WAIT : QI_RELEASE;
	if (s->wait_all) {
		for (int k = 0; k < limit; k++)
			if (x->dp->ins[k].kind == QI_OP && !x->consumed[k])
				n++;
	} else {
		n = s->nnames;
	}
	in->waits = qt_alloc(&x->plan->arena, sizeof(int) * (size_t)(n ? n : 1));
	if (!in->waits) {
		xp_xfail(x, s->line, s->col, "out of memory");
		return -1;
	}
	if (s->wait_all) {
		for (int k = 0; k < limit; k++)
			if (x->dp->ins[k].kind == QI_OP && !x->consumed[k]) {
				in->waits[in->nwaits++] = k;
				x->consumed[k] = 1;
			}
		return 0;
	}
	for (int k = 0; k < s->nnames; k++) {
		int idx = xp_find_name(x, s->names[k]);

		if (idx < 0) {
			xp_xfail(x, s->line, s->col, "unknown token '%s'", s->names[k]);
			return -1;
		}
		if (x->consumed[idx]) {
			xp_xfail(x, s->line, s->col, "token '%s' was already waited on or released",
			      s->names[k]);
			return -1;
		}
		x->consumed[idx] = 1;
		in->waits[in->nwaits++] = idx;
	}
	return 0;
}

static int expand_expect(struct xp *x, const struct qt_stmt *s)
{
	struct qt_devplan *dp = x->dp;
	struct qt_check *c;

	if (dp->nchecks == dp->ccap) {
		int nc = dp->ccap ? dp->ccap * 2 : 8;
		struct qt_check *n;

		if (nc > (1 << 20)) {
			xp_xfail(x, s->line, s->col, "too many expectations");
			return -1;
		}
		n = realloc(dp->checks, sizeof(*n) * (size_t)nc);
		if (!n) {
			xp_xfail(x, s->line, s->col, "out of memory");
			return -1;
		}
		dp->checks = n;
		dp->ccap = nc;
	}
	c = &dp->checks[dp->nchecks];
	memset(c, 0, sizeof(*c));
	c->st = s;
	c->buf = s->ref.buf;
	if (xp_eval_ref(x, &s->ref, 1, &c->lo, &c->hi))
		return -1;
	c->env = xp_snapshot(x);
	if (!c->env)
		return -1;
	dp->nchecks++;
	return 0;
}

static int expand_block(struct xp *x, const struct qt_stmt *s);

static int expand_stmt(struct xp *x, const struct qt_stmt *s)
{
	int64_t v;
	char msg[200];
	struct qt_val val;

	if (++x->steps > x->lim->max_steps) {
		xp_xfail(x, s->line, s->col, "expansion takes more than %lld steps",
		      (long long)x->lim->max_steps);
		return -1;
	}
	switch (s->kind) {
	case QS_IF:
		/* An else-if chain is a loop, not a recursion: the parser makes
		 * `else if` an else body of one if statement, and a long chain
		 * would otherwise take a stack frame per link. */
		for (;;) {
			if (qt_eval(s->cond, &x->env, &val, msg, sizeof(msg))) {
				xp_xfail_eval(x, msg);
				return -1;
			}
			if (val.is_float ? val.f != 0.0 : val.i != 0)
				return expand_block(x, s->then_body);
			if (!s->else_body || s->else_body->kind != QS_IF || s->else_body->next)
				return expand_block(x, s->else_body);
			s = s->else_body;
			if (++x->steps > x->lim->max_steps) {
				xp_xfail(x, s->line, s->col, "expansion takes more than %lld steps",
				      (long long)x->lim->max_steps);
				return -1;
			}
		}
	case QS_REPEAT: {
		if (xp_eval_int(x, s->count, &v))
			return -1;
		if (v < 0 || v > 100000000) {
			xp_xfail(x, s->line, s->col, "repeat count %lld outside 0..100000000",
			      (long long)v);
			return -1;
		}
		for (int64_t k = 0; k < v; k++) {
			int n0 = x->env.n;

			if (s->name && xp_env_push(x, s, s->name, qt_val_int(k)))
				return -1;
			if (++x->steps > x->lim->max_steps) {
				xp_xfail(x, s->line, s->col, "expansion takes more than %lld steps",
				      (long long)x->lim->max_steps);
				return -1;
			}
			if (expand_block(x, s->then_body))
				return -1;
			xp_env_restore(x, n0);
		}
		return 0;
	}
	case QS_LET:
		if (qt_eval(s->value, &x->env, &val, msg, sizeof(msg))) {
			xp_xfail_eval(x, msg);
			return -1;
		}
		return xp_env_push(x, s, s->name, val);
	case QS_OP:
		return expand_op(x, s);
	case QS_WAIT:
	case QS_RELEASE:
		return expand_wait(x, s);
	case QS_EXPECT:
		return expand_expect(x, s);
	}
	return 0;
}

static int expand_block(struct xp *x, const struct qt_stmt *s)
{
	int n0 = x->env.n;

	for (; s; s = s->next)
		if (expand_stmt(x, s))
			return -1;
	xp_env_restore(x, n0);
	return 0;
}

static int eval_buffers(struct xp *x)
{
	int64_t total = 0;

	for (int b = 0; b < x->sc->nbufs; b++) {
		const struct qt_buffer_decl *d = &x->sc->bufs[b];
		int64_t v, esz = (int64_t)qt_type_size(d->type);

		if (xp_eval_int(x, d->count, &v))
			return -1;
		if (v < 1 || v > x->lim->max_buf_bytes / esz) {
			xp_xfail(x, d->line, d->col, "buffer '%s' has %lld elements (1..%lld allowed)",
			      d->name, (long long)v, (long long)(x->lim->max_buf_bytes / esz));
			return -1;
		}
		total += v * esz;
		if (total > x->lim->max_dev_bytes) {
			xp_xfail(x, d->line, d->col, "buffers of one device exceed %lld bytes",
			      (long long)x->lim->max_dev_bytes);
			return -1;
		}
		x->dp->count[b] = v;
	}
	return 0;
}

/**
 * qt_plan_build() - expand a scenario.
 * @sc: the scenario. @N: the device count. @first/@ndev: which ranks to plan.
 * @lim: limits (NULL: defaults). @out: the plan. @err/@errlen: message on failure.
 * Return: 0 or -1.
 */
int qt_plan_build(const struct qt_scenario *sc, int N, int first, int ndev,
		  const struct qt_plan_limits *lim, struct qt_plan **out, char *err, size_t errlen)
{
	struct qt_plan_limits deflim;
	struct qt_plan *plan;
	struct xp *x;
	int rc = 0;

	*out = NULL;
	if (!lim) {
		qt_plan_default_limits(&deflim);
		lim = &deflim;
	}
	if (N < 1 || first < 0 || ndev < 0 || first + ndev > N) {
		snprintf(err, errlen, "%s: bad device range", sc->file);
		return -1;
	}
	plan = calloc(1, sizeof(*plan));
	x = calloc(1, sizeof(*x));
	if (!plan || !x) {
		free(plan);
		free(x);
		snprintf(err, errlen, "%s: out of memory", sc->file);
		return -1;
	}
	plan->sc = sc;
	plan->N = N;
	plan->first = first;
	plan->ndev = ndev;
	plan->arena.limit = (size_t)1 << 30;
	plan->dev = calloc((size_t)(ndev ? ndev : 1), sizeof(*plan->dev));
	if (!plan->dev) {
		free(plan);
		free(x);
		snprintf(err, errlen, "%s: out of memory", sc->file);
		return -1;
	}
	x->sc = sc;
	x->plan = plan;
	x->lim = lim;
	x->N = N;
	x->err = err;
	x->errlen = errlen;
	for (int d = 0; d < ndev && !rc; d++) {
		x->rank = first + d;
		x->dp = &plan->dev[d];
		x->env.vars = x->store;
		x->env.cap = QT_ENV_MAX;
		qt_base_env(&x->env, x->rank, N);
		x->env_version++;
		x->nnames = 0;
		if (eval_buffers(x) || expand_block(x, sc->program) || expand_block(x, sc->check))
			rc = -1;
	}
	free(x->names);
	free(x->consumed);
	free(x);
	if (rc) {
		qt_plan_free(plan);
		return -1;
	}
	*out = plan;
	return 0;
}

/**
 * qt_plan_free() - free a plan.
 * @plan: the plan (NULL is fine).
 */
void qt_plan_free(struct qt_plan *plan)
{
	if (!plan)
		return;
	for (int d = 0; d < plan->ndev; d++) {
		free(plan->dev[d].ins);
		free(plan->dev[d].checks);
	}
	free(plan->dev);
	qt_arena_free(&plan->arena);
	free(plan);
}
