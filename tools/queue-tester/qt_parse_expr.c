/* SPDX-License-Identifier: MIT */
/* qt_parse_expr.c - the parser's expressions: primaries, unary and binary operators, ?:. */
#include "qt_parse_internal.h"

static struct qt_expr *new_expr(struct parser *p, enum qt_ex_kind kind, int line, int col,
				struct qt_expr *a, struct qt_expr *b, struct qt_expr *c)
{
	struct qt_expr *e;
	int d = 0;

	if (p->failed)
		return NULL;
	if (a && a->depth > d)
		d = a->depth;
	if (b && b->depth > d)
		d = b->depth;
	if (c && c->depth > d)
		d = c->depth;
	if (d + 1 > QT_EXPR_MAX_DEPTH) {
		errorf(p, line, col, "expression nested too deeply (more than %d levels)",
		       QT_EXPR_MAX_DEPTH);
		return NULL;
	}
	e = palloc(p, sizeof(*e));
	if (!e)
		return NULL;
	e->kind = kind;
	e->line = line;
	e->col = col;
	e->depth = d + 1;
	e->a = a;
	e->b = b;
	e->c = c;
	return e;
}

static struct qt_expr *parse_primary(struct parser *p)
{
	int line = p->tok.line, col = p->tok.col;
	struct qt_expr *e;

	if (p->failed)
		return NULL;
	if (++p->nest > QT_EXPR_MAX_DEPTH) {
		errorf(p, line, col, "expression nested too deeply");
		return NULL;
	}
	switch (p->tok.kind) {
	case QT_T_INT:
		e = new_expr(p, QX_INT, line, col, NULL, NULL, NULL);
		if (e)
			e->ival = p->tok.ival;
		next(p);
		break;
	case QT_T_FLOAT:
		e = new_expr(p, QX_FLOAT, line, col, NULL, NULL, NULL);
		if (e)
			e->fval = p->tok.fval;
		next(p);
		break;
	case QT_T_LPAREN:
		next(p);
		e = parse_expr(p);
		if (expect_tok(p, QT_T_RPAREN, "')'"))
			e = NULL;
		break;
	case QT_T_MINUS:
	case QT_T_PLUS:
	case QT_T_NOT:
	case QT_T_TILDE: {
		int op = p->tok.kind;
		struct qt_expr *a;

		next(p);
		a = parse_primary(p);
		e = a ? new_expr(p, QX_UNARY, line, col, a, NULL, NULL) : NULL;
		if (e)
			e->op = op;
		break;
	}
	case QT_T_IDENT: {
		static const struct {
			const char *name;
			int fn;
			int nargs;
		} fns[] = { { "min", QF_MIN, 2 }, { "max", QF_MAX, 2 }, { "abs", QF_ABS, 1 },
			    { "int", QF_INT, 1 }, { "float", QF_FLOAT, 1 } };
		const char *name;

		if (is_keyword_tok(&p->tok)) {
			expected(p, "an expression");
			e = NULL;
			break;
		}
		name = tok_str(p);
		next(p);
		if (!name) {
			e = NULL;
			break;
		}
		if (p->tok.kind != QT_T_LPAREN) {
			e = new_expr(p, QX_VAR, line, col, NULL, NULL, NULL);
			if (e)
				e->name = name;
			break;
		}
		int fn = -1, want = 0;

		for (size_t k = 0; k < sizeof(fns) / sizeof(fns[0]); k++)
			if (strcmp(fns[k].name, name) == 0) {
				fn = fns[k].fn;
				want = fns[k].nargs;
			}
		if (fn < 0) {
			errorf(p, line, col, "unknown function '%s' (have min, max, abs, int, float)",
			       name);
			e = NULL;
			break;
		}
		next(p);
		struct qt_expr *a = parse_expr(p), *b = NULL;

		if (want == 2 && !expect_tok(p, QT_T_COMMA, "',' (this function takes 2 arguments)"))
			b = parse_expr(p);
		if (expect_tok(p, QT_T_RPAREN, "')'"))
			b = a = NULL;
		e = new_expr(p, QX_CALL, line, col, a, b, NULL);
		if (e) {
			e->op = fn;
			e->nargs = want;
		}
		break;
	}
	default:
		expected(p, "an expression");
		e = NULL;
	}
	p->nest--;
	return p->failed ? NULL : e;
}

static int binop_prec(enum qt_tok k)
{
	switch (k) {
	case QT_T_OROR: return 1;
	case QT_T_ANDAND: return 2;
	case QT_T_PIPE: return 3;
	case QT_T_CARET: return 4;
	case QT_T_AMP: return 5;
	case QT_T_EQ: case QT_T_NE: return 6;
	case QT_T_LT: case QT_T_LE: case QT_T_GT: case QT_T_GE: return 7;
	case QT_T_SHL: case QT_T_SHR: return 8;
	case QT_T_PLUS: case QT_T_MINUS: return 9;
	case QT_T_STAR: case QT_T_SLASH: case QT_T_PERCENT: return 10;
	default: return 0;
	}
}

static struct qt_expr *parse_binary(struct parser *p, int min_prec)
{
	struct qt_expr *lhs = parse_primary(p);

	while (lhs && !p->failed) {
		int op = p->tok.kind, prec = binop_prec(p->tok.kind);
		int line = p->tok.line, col = p->tok.col;

		if (!prec || prec < min_prec)
			break;
		next(p);
		struct qt_expr *rhs = parse_binary(p, prec + 1);

		if (!rhs)
			return NULL;
		lhs = new_expr(p, QX_BINARY, line, col, lhs, rhs, NULL);
		if (lhs)
			lhs->op = op;
	}
	return p->failed ? NULL : lhs;
}

struct qt_expr *parse_expr(struct parser *p)
{
	int line = p->tok.line, col = p->tok.col;
	struct qt_expr *c, *a, *b;

	if (++p->nest > QT_EXPR_MAX_DEPTH) {
		errorf(p, line, col, "expression nested too deeply");
		return NULL;
	}
	c = parse_binary(p, 1);
	if (c && p->tok.kind == QT_T_QUESTION) {
		next(p);
		a = parse_expr(p);
		if (!a || expect_tok(p, QT_T_COLON, "':' of '?:'")) {
			p->nest--;
			return NULL;
		}
		b = parse_expr(p);
		c = b ? new_expr(p, QX_COND, line, col, c, a, b) : NULL;
	}
	p->nest--;
	return p->failed ? NULL : c;
}
