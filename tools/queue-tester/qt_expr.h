/* SPDX-License-Identifier: MIT */
/*
 * qt_expr.h - scenario expressions: the tree the parser builds, variable
 * environments and the evaluator. Integers are int64 with wrap-around
 * arithmetic; '/' and '%' on integers are floored (so (rank-1)%N is in 0..N-1);
 * a float operand makes the operation floating point. Evaluation never invokes
 * undefined behaviour: division by zero, bad shifts and the like are errors.
 */
#ifndef QT_EXPR_H
#define QT_EXPR_H

#include <stddef.h>
#include <stdint.h>

/** Deepest expression tree the parser accepts (keeps evaluation recursion bounded). */
#define QT_EXPR_MAX_DEPTH 200
/** Most variables visible at once (rank, N, let, repeat variables). */
#define QT_ENV_MAX 64

enum qt_ex_kind { QX_INT, QX_FLOAT, QX_VAR, QX_UNARY, QX_BINARY, QX_COND, QX_CALL };

enum qt_fn { QF_MIN, QF_MAX, QF_ABS, QF_INT, QF_FLOAT };

/**
 * struct qt_expr - one node.
 * @kind: QX_*. @op: the operator token (QT_T_*) of a unary/binary node, or QF_* of a call.
 * @line/@col: where it starts. @depth: height of the subtree.
 * @ival/@fval: literal values. @name: variable name.
 * @a/@b/@c: operands (cond: @a ? @b : @c; calls: up to two arguments in @a, @b).
 */
struct qt_expr {
	enum qt_ex_kind kind;
	int op;
	int line;
	int col;
	int depth;
	int nargs;
	int64_t ival;
	double fval;
	const char *name;
	struct qt_expr *a, *b, *c;
};

/** struct qt_val - a value: an int64, or a double when @is_float. */
struct qt_val {
	int is_float;
	int64_t i;
	double f;
};

/** struct qt_var - a named value. */
struct qt_var {
	const char *name;
	struct qt_val v;
};

/**
 * struct qt_env - the variables in scope, newest last (lookup goes newest first).
 * @vars: storage for @cap variables. @n: how many are set.
 */
struct qt_env {
	struct qt_var *vars;
	int n;
	int cap;
};

/**
 * qt_env_set() - add a variable (shadowing an older one of the same name).
 * @env: the environment. @name: its name (must outlive @env). @v: the value.
 * Return: 0, or -1 when the environment is full.
 */
int qt_env_set(struct qt_env *env, const char *name, struct qt_val v);

/**
 * qt_env_get() - look a variable up.
 * @env: the environment. @name: the name.
 * Return: the newest variable of that name, or NULL.
 */
const struct qt_var *qt_env_get(const struct qt_env *env, const char *name);

/**
 * qt_eval() - evaluate an expression.
 * @e: the expression. @env: its variables. @out: the value.
 * @err/@errlen: on failure, a message (with line:col).
 * Return: 0, or -1 on an evaluation error (unknown variable, division by zero, ...).
 */
int qt_eval(const struct qt_expr *e, const struct qt_env *env, struct qt_val *out, char *err,
	    size_t errlen);

/**
 * qt_eval_int() - evaluate an expression that must be an integer (a float with no fraction is accepted).
 * @e: the expression. @env: variables. @out: the value. @err/@errlen: message on failure.
 * Return: 0 or -1.
 */
int qt_eval_int(const struct qt_expr *e, const struct qt_env *env, int64_t *out, char *err,
		size_t errlen);

/**
 * qt_val_double() - a value as a double.
 * @v: the value.
 * Return: the double.
 */
double qt_val_double(struct qt_val v);

/**
 * qt_val_wrap_int() - a value as an int64 for storing into integer elements
 * (floats are truncated toward zero and saturated; NaN gives 0).
 * @v: the value.
 * Return: the integer.
 */
int64_t qt_val_wrap_int(struct qt_val v);

/**
 * qt_val_int32() - a value as stored into an int32 element (integers wrap,
 * floats truncate and saturate).
 * @v: the value.
 * Return: the element.
 */
int32_t qt_val_int32(struct qt_val v);

/**
 * qt_val_int() - make a QT integer value.
 * @i: the integer.
 * Return: the value.
 */
struct qt_val qt_val_int(int64_t i);

#endif
