/* SPDX-License-Identifier: MIT */
/* qt_expr.c - expression evaluator. */
#include "qt_expr.h"
#include "qt_lex.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/**
 * qt_val_int() - make an integer value.
 * @i: the integer.
 * Return: the value.
 */
struct qt_val qt_val_int(int64_t i)
{
	struct qt_val v = { 0, i, 0.0 };

	return v;
}

static struct qt_val val_float(double f)
{
	struct qt_val v = { 1, 0, f };

	return v;
}

/**
 * qt_val_double() - a value as a double.
 * @v: the value.
 * Return: the double.
 */
double qt_val_double(struct qt_val v)
{
	return v.is_float ? v.f : (double)v.i;
}

/**
 * qt_val_wrap_int() - a value as an int64 (floats truncated and saturated; NaN gives 0).
 * @v: the value.
 * Return: the integer.
 */
int64_t qt_val_wrap_int(struct qt_val v)
{
	if (!v.is_float)
		return v.i;
	if (isnan(v.f))
		return 0;
	if (v.f >= 9.2e18)
		return INT64_MAX;
	if (v.f <= -9.2e18)
		return INT64_MIN;
	return (int64_t)v.f;
}

/**
 * qt_val_int32() - a value as stored into an int32 element: an integer wraps
 * modulo 2^32, a float truncates toward zero and saturates to
 * INT32_MIN..INT32_MAX (NaN gives 0), as docs/scenarios.md says.
 * @v: the value.
 * Return: the element.
 */
int32_t qt_val_int32(struct qt_val v)
{
	int64_t i = qt_val_wrap_int(v);

	if (!v.is_float)
		return (int32_t)(uint32_t)(uint64_t)i;
	return i > INT32_MAX ? INT32_MAX : i < INT32_MIN ? INT32_MIN : (int32_t)i;
}

/**
 * qt_env_set() - add a variable.
 * @env: the environment. @name: its name. @v: the value.
 * Return: 0, or -1 when full.
 */
int qt_env_set(struct qt_env *env, const char *name, struct qt_val v)
{
	if (env->n >= env->cap)
		return -1;
	env->vars[env->n].name = name;
	env->vars[env->n].v = v;
	env->n++;
	return 0;
}

/**
 * qt_env_get() - look a variable up.
 * @env: the environment. @name: the name.
 * Return: the newest variable of that name, or NULL.
 */
const struct qt_var *qt_env_get(const struct qt_env *env, const char *name)
{
	if (!env)
		return NULL;
	for (int k = env->n - 1; k >= 0; k--)
		if (strcmp(env->vars[k].name, name) == 0)
			return &env->vars[k];
	return NULL;
}

static int fail(const struct qt_expr *e, char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%d:%d: %s", e->line, e->col, msg);
	return -1;
}

static int truthy(struct qt_val v)
{
	return v.is_float ? v.f != 0.0 : v.i != 0;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	if ((a % b != 0) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

static int64_t floor_mod(int64_t a, int64_t b)
{
	int64_t r = a % b;

	if (r != 0 && ((r < 0) != (b < 0)))
		r += b;
	return r;
}

static int eval_binary(const struct qt_expr *e, struct qt_val x, struct qt_val y,
		       struct qt_val *out, char *err, size_t errlen)
{
	int op = e->op;

	if (op == QT_T_AMP || op == QT_T_PIPE || op == QT_T_CARET || op == QT_T_SHL ||
	    op == QT_T_SHR) {
		if (x.is_float || y.is_float)
			return fail(e, err, errlen, "bitwise operator on a float");
		uint64_t a = (uint64_t)x.i, b = (uint64_t)y.i;

		switch (op) {
		case QT_T_AMP: *out = qt_val_int((int64_t)(a & b)); return 0;
		case QT_T_PIPE: *out = qt_val_int((int64_t)(a | b)); return 0;
		case QT_T_CARET: *out = qt_val_int((int64_t)(a ^ b)); return 0;
		default:
			if (y.i < 0 || y.i > 63)
				return fail(e, err, errlen, "shift count outside 0..63");
			if (op == QT_T_SHL)
				*out = qt_val_int((int64_t)(a << y.i));
			else /* arithmetic shift, implementation-defined-free */
				*out = qt_val_int(x.i < 0 ? (int64_t)~(~a >> y.i) : (int64_t)(a >> y.i));
			return 0;
		}
	}
	if (op == QT_T_LT || op == QT_T_LE || op == QT_T_GT || op == QT_T_GE || op == QT_T_EQ ||
	    op == QT_T_NE) {
		int r;

		if (!x.is_float && !y.is_float) {
			r = op == QT_T_LT ? x.i < y.i : op == QT_T_LE ? x.i <= y.i :
			    op == QT_T_GT ? x.i > y.i : op == QT_T_GE ? x.i >= y.i :
			    op == QT_T_EQ ? x.i == y.i : x.i != y.i;
		} else {
			double a = qt_val_double(x), b = qt_val_double(y);

			r = op == QT_T_LT ? a < b : op == QT_T_LE ? a <= b : op == QT_T_GT ? a > b :
			    op == QT_T_GE ? a >= b : op == QT_T_EQ ? a == b : a != b;
		}
		*out = qt_val_int(r);
		return 0;
	}
	if (x.is_float || y.is_float) {
		double a = qt_val_double(x), b = qt_val_double(y), r;

		switch (op) {
		case QT_T_PLUS: r = a + b; break;
		case QT_T_MINUS: r = a - b; break;
		case QT_T_STAR: r = a * b; break;
		case QT_T_SLASH:
			if (b == 0.0)
				return fail(e, err, errlen, "division by zero");
			r = a / b;
			break;
		case QT_T_PERCENT:
			if (b == 0.0)
				return fail(e, err, errlen, "modulo by zero");
			r = a - b * floor(a / b);
			break;
		default:
			return fail(e, err, errlen, "bad operator");
		}
		if (!isfinite(r))
			return fail(e, err, errlen, "result is not a finite number");
		*out = val_float(r);
		return 0;
	}
	uint64_t a = (uint64_t)x.i, b = (uint64_t)y.i;

	switch (op) {
	case QT_T_PLUS: *out = qt_val_int((int64_t)(a + b)); return 0;
	case QT_T_MINUS: *out = qt_val_int((int64_t)(a - b)); return 0;
	case QT_T_STAR: *out = qt_val_int((int64_t)(a * b)); return 0;
	case QT_T_SLASH:
	case QT_T_PERCENT:
		if (y.i == 0)
			return fail(e, err, errlen, op == QT_T_SLASH ? "division by zero" :
								       "modulo by zero");
		if (x.i == INT64_MIN && y.i == -1)
			return fail(e, err, errlen, "integer overflow in division");
		*out = qt_val_int(op == QT_T_SLASH ? floor_div(x.i, y.i) : floor_mod(x.i, y.i));
		return 0;
	default:
		return fail(e, err, errlen, "bad operator");
	}
}

/**
 * qt_eval() - evaluate an expression.
 * @e: the expression. @env: its variables. @out: the value. @err/@errlen: message on failure.
 * Return: 0, or -1 on an evaluation error.
 */
int qt_eval(const struct qt_expr *e, const struct qt_env *env, struct qt_val *out, char *err,
	    size_t errlen)
{
	struct qt_val x, y;

	switch (e->kind) {
	case QX_INT:
		*out = qt_val_int(e->ival);
		return 0;
	case QX_FLOAT:
		*out = val_float(e->fval);
		return 0;
	case QX_VAR: {
		const struct qt_var *v = qt_env_get(env, e->name);

		if (!v) {
			char msg[128];

			snprintf(msg, sizeof(msg), "unknown variable '%s'", e->name);
			return fail(e, err, errlen, msg);
		}
		*out = v->v;
		return 0;
	}
	case QX_UNARY:
		if (qt_eval(e->a, env, &x, err, errlen))
			return -1;
		switch (e->op) {
		case QT_T_MINUS:
			*out = x.is_float ? val_float(-x.f) : qt_val_int((int64_t)(0 - (uint64_t)x.i));
			return 0;
		case QT_T_PLUS:
			*out = x;
			return 0;
		case QT_T_NOT:
			*out = qt_val_int(!truthy(x));
			return 0;
		case QT_T_TILDE:
			if (x.is_float)
				return fail(e, err, errlen, "bitwise operator on a float");
			*out = qt_val_int((int64_t)~(uint64_t)x.i);
			return 0;
		default:
			return fail(e, err, errlen, "bad operator");
		}
	case QX_BINARY:
		if (qt_eval(e->a, env, &x, err, errlen))
			return -1;
		if (e->op == QT_T_ANDAND || e->op == QT_T_OROR) {
			int t = truthy(x);

			if ((e->op == QT_T_ANDAND && !t) || (e->op == QT_T_OROR && t)) {
				*out = qt_val_int(t);
				return 0;
			}
			if (qt_eval(e->b, env, &y, err, errlen))
				return -1;
			*out = qt_val_int(truthy(y));
			return 0;
		}
		if (qt_eval(e->b, env, &y, err, errlen))
			return -1;
		return eval_binary(e, x, y, out, err, errlen);
	case QX_COND:
		if (qt_eval(e->a, env, &x, err, errlen))
			return -1;
		return qt_eval(truthy(x) ? e->b : e->c, env, out, err, errlen);
	case QX_CALL:
		if (qt_eval(e->a, env, &x, err, errlen))
			return -1;
		if (e->nargs > 1 && qt_eval(e->b, env, &y, err, errlen))
			return -1;
		switch (e->op) {
		case QF_MIN:
		case QF_MAX: {
			int lt;

			if (!x.is_float && !y.is_float)
				lt = x.i < y.i;
			else
				lt = qt_val_double(x) < qt_val_double(y);
			*out = (e->op == QF_MIN) == lt ? x : y;
			return 0;
		}
		case QF_ABS:
			if (x.is_float)
				*out = val_float(fabs(x.f));
			else if (x.i == INT64_MIN)
				return fail(e, err, errlen, "integer overflow in abs");
			else
				*out = qt_val_int(x.i < 0 ? -x.i : x.i);
			return 0;
		case QF_INT:
			if (x.is_float && (isnan(x.f) || x.f >= 9.2e18 || x.f <= -9.2e18))
				return fail(e, err, errlen, "int() of a value out of range");
			*out = qt_val_int(qt_val_wrap_int(x));
			return 0;
		case QF_FLOAT:
			*out = val_float(qt_val_double(x));
			return 0;
		}
		return fail(e, err, errlen, "bad function");
	}
	return fail(e, err, errlen, "bad expression");
}

/**
 * qt_eval_int() - evaluate an expression that must be an integer.
 * @e: the expression. @env: variables. @out: the value. @err/@errlen: message on failure.
 * Return: 0 or -1.
 */
int qt_eval_int(const struct qt_expr *e, const struct qt_env *env, int64_t *out, char *err,
		size_t errlen)
{
	struct qt_val v;

	if (qt_eval(e, env, &v, err, errlen))
		return -1;
	if (v.is_float) {
		if (!(v.f == floor(v.f)) || v.f >= 9.2e18 || v.f <= -9.2e18)
			return fail(e, err, errlen, "expected an integer value");
		*out = (int64_t)v.f;
		return 0;
	}
	*out = v.i;
	return 0;
}
