/* SPDX-License-Identifier: MIT */
/*
 * qt_plan_internal.h - the state of one device's expansion (qt_plan.c) and
 * the helpers it shares with qt_plan_state.c: errors, variables in scope,
 * token names, the instruction list and the evaluation of references.
 */
#ifndef QT_PLAN_INTERNAL_H
#define QT_PLAN_INTERNAL_H

#include "qt_plan.h"

struct tokname {
	const char *name;
	int idx;
};

struct xp {
	const struct qt_scenario *sc;
	struct qt_plan *plan;
	struct qt_devplan *dp;
	const struct qt_plan_limits *lim;
	int rank;
	int N;
	struct qt_var store[QT_ENV_MAX];
	struct qt_env env;
	unsigned env_version;
	unsigned snap_version;
	struct qt_env *snap;
	int64_t steps;
	int64_t total_ins;
	struct tokname *names;
	int nnames;
	int ncap;
	unsigned char *consumed;
	int ccap;
	char *err;
	size_t errlen;
	int failed;
};

void xp_xfail(struct xp *x, int line, int col, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void xp_xfail_eval(struct xp *x, const char *msg);
int xp_eval_int(struct xp *x, const struct qt_expr *e, int64_t *v);
int xp_env_push(struct xp *x, const struct qt_stmt *s, const char *name, struct qt_val v);
void xp_env_restore(struct xp *x, int n);
struct qt_env *xp_snapshot(struct xp *x);
int xp_find_name(struct xp *x, const char *name);
int xp_set_name(struct xp *x, const char *name, int idx);
struct qt_ins *xp_new_ins(struct xp *x, const struct qt_stmt *s);
int xp_eval_ref(struct xp *x, const struct qt_ref *r, int strict, int64_t *lo, int64_t *hi);
int xp_resolve_deps(struct xp *x, const struct qt_stmt *s, int *out, int *nout);
int xp_eval_source_target(struct xp *x, const struct qt_stmt *s, struct qt_ins *in);

#endif /* QT_PLAN_INTERNAL_H */
