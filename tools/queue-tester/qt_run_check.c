/* SPDX-License-Identifier: MIT */
/*
 * qt_run_check.c - the runner after driving: sort a stall into completed late
 * and stuck (and look for a wait cycle across processes), cancel what is stuck,
 * check every op's status and every checked element, and agree on the verdict.
 */
#include "qt_run_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value an element holds after storing @v (so expectations compare like with like). */
static struct qt_val as_stored(enum qt_type t, struct qt_val v)
{
	unsigned char tmp[4];

	store_elem(t, tmp, 0, v);
	return load_elem(t, tmp, 0);
}

/* After a stall: settle what completed, mark the rest stuck. */
void mark_stuck(struct run *rn)
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
int cancel_stuck(struct run *rn)
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

void check_statuses(struct run *rn)
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

void check_data(struct run *rn)
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

/*
 * Meeting 2 under shm: every process stopped driving. A stalled process
 * contributes its wait-for edges (a send/recv waiting for the matching op of
 * a peer, as accdma_find_cycle() counts them: the library sees only this
 * process's devices); the lowest stalled rank prints a cycle that spans
 * processes, if there is one.
 */
void meet_stopped(struct run *rn, int stalled)
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
int failed_anywhere(struct run *rn)
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
