/* SPDX-License-Identifier: MIT */
/* qt_parse.c - recursive-descent parser for scenario files. */
#include "qt_parse.h"
#include "qt_lex.h"

#include <accdma.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct parser {
	struct qt_lexer lx;
	struct qt_token tok;
	struct qt_scenario *sc;
	const char *file;
	char *err;
	size_t errlen;
	int failed;
	int nest;
	int in_check;
};

static const char *const keywords[] = {
	"name", "devices", "timeout", "buffer", "program", "check", "expect", "if", "else",
	"repeat", "let", "send", "recv", "write", "fence", "exec", "after_all", "barrier",
	"permute", "wait", "release", "to", "from", "at", "into", "map", "tag", "after", "as",
	"badkey", "all", "int32", "float32", "bytes", NULL,
};

static const struct {
	const char *name;
	int st;
} status_names[] = {
	{ "ok", ACCDMA_OK },
	{ "not_attempted", ACCDMA_ST_NOT_ATTEMPTED },
	{ "bad_key", ACCDMA_ST_BAD_KEY },
	{ "out_of_bounds", ACCDMA_ST_OUT_OF_BOUNDS },
	{ "bad_length", ACCDMA_ST_BAD_LENGTH },
	{ "truncated", ACCDMA_ST_TRUNCATED },
	{ "peer_error", ACCDMA_ST_PEER_ERROR },
	{ "canceled", ACCDMA_ST_CANCELED },
	{ "flushed", ACCDMA_ST_FLUSHED },
	{ "exec_failed", ACCDMA_ST_EXEC_FAILED },
	{ "dma_error", ACCDMA_ST_DMA_ERROR },
	{ "peer_lost", ACCDMA_ST_PEER_LOST },
	{ "timeout", QT_EXPECT_TIMEOUT },
	{ "any", QT_EXPECT_ANY },
	{ "failed", QT_EXPECT_FAILED },
};

/**
 * qt_status_from_name() - parse an expected-status name (case-insensitive).
 * @name: the name.
 * Return: the status, or -1 when unknown.
 */
int qt_status_from_name(const char *name)
{
	for (size_t k = 0; k < sizeof(status_names) / sizeof(status_names[0]); k++)
		if (strcasecmp(name, status_names[k].name) == 0)
			return status_names[k].st;
	return -1;
}

/**
 * qt_status_name() - the name of an expected status.
 * @st: the status.
 * Return: a static string.
 */
const char *qt_status_name(int st)
{
	static const char *const upper[] = {
		"OK", "NOT_ATTEMPTED", "BAD_KEY", "OUT_OF_BOUNDS", "BAD_LENGTH", "TRUNCATED",
		"PEER_ERROR", "CANCELED", "FLUSHED", "EXEC_FAILED", "DMA_ERROR", "PEER_LOST",
	};

	if (st >= 0 && st < (int)(sizeof(upper) / sizeof(upper[0])))
		return upper[st];
	if (st == QT_EXPECT_TIMEOUT)
		return "TIMEOUT";
	if (st == QT_EXPECT_ANY)
		return "ANY";
	if (st == QT_EXPECT_FAILED)
		return "FAILED";
	return "UNKNOWN";
}

/**
 * qt_type_size() - bytes per element.
 * @t: the type.
 * Return: the size.
 */
size_t qt_type_size(enum qt_type t)
{
	return t == QT_BYTES ? 1 : 4;
}

static void errorf(struct parser *p, int line, int col, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (p->failed)
		return;
	p->failed = 1;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->err && p->errlen)
		snprintf(p->err, p->errlen, "%s:%d:%d: %s", p->file, line, col, msg);
}

static void describe_tok(const struct qt_token *t, char *buf, size_t n)
{
	if (t->kind == QT_T_IDENT)
		snprintf(buf, n, "'%.*s'", (int)t->len, t->start);
	else if (t->kind == QT_T_INT || t->kind == QT_T_FLOAT)
		snprintf(buf, n, "number %.*s", (int)(t->len > 40 ? 40 : t->len), t->start);
	else
		snprintf(buf, n, "%s", qt_tok_name(t->kind));
}

static void expected(struct parser *p, const char *what)
{
	char got[96];

	describe_tok(&p->tok, got, sizeof(got));
	errorf(p, p->tok.line, p->tok.col, "expected %s, got %s", what, got);
}

static void next(struct parser *p)
{
	if (p->failed) {
		p->tok.kind = QT_T_EOF;
		return;
	}
	if (qt_lex_next(&p->lx, &p->tok) == QT_T_ERROR) {
		errorf(p, p->tok.line, p->tok.col, "%s", p->lx.err);
		p->tok.kind = QT_T_EOF;
	}
}

static int is_kw(const struct parser *p, const char *kw)
{
	size_t n = strlen(kw);

	return p->tok.kind == QT_T_IDENT && p->tok.len == n && memcmp(p->tok.start, kw, n) == 0;
}

static int is_keyword_tok(const struct qt_token *t)
{
	for (int k = 0; keywords[k]; k++)
		if (t->len == strlen(keywords[k]) && memcmp(t->start, keywords[k], t->len) == 0)
			return 1;
	return 0;
}

static int accept(struct parser *p, enum qt_tok k)
{
	if (p->tok.kind == k) {
		next(p);
		return 1;
	}
	return 0;
}

static int expect_tok(struct parser *p, enum qt_tok k, const char *what)
{
	if (accept(p, k))
		return 0;
	expected(p, what);
	return -1;
}

static void *palloc(struct parser *p, size_t n)
{
	void *m = qt_alloc(&p->sc->arena, n);

	if (!m)
		errorf(p, p->tok.line, p->tok.col, "out of memory");
	return m;
}

static const char *tok_str(struct parser *p)
{
	char *s = qt_strndup(&p->sc->arena, p->tok.start, p->tok.len);

	if (!s)
		errorf(p, p->tok.line, p->tok.col, "out of memory");
	return s;
}

/* An identifier that is not a keyword: a buffer, variable or token name. */
static const char *parse_name(struct parser *p, const char *what)
{
	const char *s;

	if (p->tok.kind != QT_T_IDENT || is_keyword_tok(&p->tok)) {
		expected(p, what);
		return NULL;
	}
	s = tok_str(p);
	next(p);
	return s;
}

/* ---- expressions ------------------------------------------------------ */

static struct qt_expr *parse_expr(struct parser *p);

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

static struct qt_expr *parse_expr(struct parser *p)
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

/* ---- statements ------------------------------------------------------- */

static int find_buffer(struct parser *p, const char *name)
{
	for (int k = 0; k < p->sc->nbufs; k++)
		if (strcmp(p->sc->bufs[k].name, name) == 0)
			return k;
	return -1;
}

static int parse_ref(struct parser *p, struct qt_ref *r, int allow_slice)
{
	r->line = p->tok.line;
	r->col = p->tok.col;
	r->name = parse_name(p, "a buffer name");
	if (!r->name)
		return -1;
	r->buf = find_buffer(p, r->name);
	if (r->buf < 0) {
		errorf(p, r->line, r->col, "unknown buffer '%s' (declare it with 'buffer' first)",
		       r->name);
		return -1;
	}
	if (p->tok.kind != QT_T_LBRACK)
		return 0;
	if (!allow_slice) {
		expected(p, "a buffer name without a slice");
		return -1;
	}
	next(p);
	r->lo = parse_expr(p);
	if (!r->lo)
		return -1;
	if (accept(p, QT_T_COLON)) {
		r->is_range = 1;
		r->hi = parse_expr(p);
		if (!r->hi)
			return -1;
	}
	return expect_tok(p, QT_T_RBRACK, r->is_range ? "']'" : "':' or ']'");
}

static int parse_name_list(struct parser *p, struct qt_stmt *s, const char *what)
{
	const char *names[ACCDMA_MAX_DEPS * 4];
	int n = 0;

	do {
		const char *nm = parse_name(p, what);

		if (!nm)
			return -1;
		if (n >= (int)(sizeof(names) / sizeof(names[0]))) {
			errorf(p, p->tok.line, p->tok.col, "too many token names in one list");
			return -1;
		}
		names[n++] = nm;
	} while (accept(p, QT_T_COMMA));
	s->names = palloc(p, sizeof(*s->names) * (size_t)n);
	if (!s->names)
		return -1;
	memcpy(s->names, names, sizeof(*names) * (size_t)n);
	s->nnames = n;
	return 0;
}

/* Trailing modifiers of an op: tag, after, as, expect, badkey (each at most once). */
static int parse_mods(struct parser *p, struct qt_stmt *s, int allow_tag)
{
	int seen_after = 0;

	for (;;) {
		int line = p->tok.line, col = p->tok.col;

		if (is_kw(p, "tag")) {
			if (!allow_tag) {
				errorf(p, line, col, "this op takes no tag");
				return -1;
			}
			if (s->tag) {
				errorf(p, line, col, "'tag' given twice");
				return -1;
			}
			next(p);
			s->tag = parse_expr(p);
			if (!s->tag)
				return -1;
		} else if (is_kw(p, "after")) {
			if (seen_after++ || s->op == QO_AFTER_ALL) {
				errorf(p, line, col, s->op == QO_AFTER_ALL ?
					   "after_all takes its tokens directly" : "'after' given twice");
				return -1;
			}
			next(p);
			if (parse_name_list(p, s, "a token name"))
				return -1;
			if (s->nnames > ACCDMA_MAX_DEPS) {
				errorf(p, line, col, "more than %d dependencies (join them with after_all)",
				       ACCDMA_MAX_DEPS);
				return -1;
			}
		} else if (is_kw(p, "as")) {
			if (s->as) {
				errorf(p, line, col, "'as' given twice");
				return -1;
			}
			next(p);
			s->as = parse_name(p, "a token name");
			if (!s->as)
				return -1;
		} else if (is_kw(p, "expect")) {
			if (s->expect >= 0) {
				errorf(p, line, col, "'expect' given twice");
				return -1;
			}
			next(p);
			if (p->tok.kind != QT_T_IDENT) {
				expected(p, "a status (ok, timeout, truncated, bad_key, ...)");
				return -1;
			}
			char nm[80];

			snprintf(nm, sizeof(nm), "%.*s", (int)p->tok.len, p->tok.start);
			s->expect = qt_status_from_name(nm);
			if (s->expect < 0) {
				errorf(p, line, col,
				       "unknown status '%s' (ok, not_attempted, bad_key, out_of_bounds, "
				       "bad_length, truncated, peer_error, canceled, flushed, exec_failed, "
				       "dma_error, peer_lost, timeout, failed, any)", nm);
				return -1;
			}
			next(p);
		} else if (is_kw(p, "badkey")) {
			if (s->op != QO_SEND && s->op != QO_RECV && s->op != QO_WRITE) {
				errorf(p, line, col, "'badkey' applies to send, recv and write only");
				return -1;
			}
			next(p);
			s->badkey = 1;
		} else {
			return 0;
		}
	}
}

static int parse_op(struct parser *p, struct qt_stmt *s)
{
	int line = p->tok.line, col = p->tok.col;

	s->kind = QS_OP;
	if (is_kw(p, "send") || is_kw(p, "recv")) {
		int send = is_kw(p, "send");

		s->op = send ? QO_SEND : QO_RECV;
		next(p);
		if (parse_ref(p, &s->ref, 1))
			return -1;
		if (!is_kw(p, send ? "to" : "from")) {
			expected(p, send ? "'to PEER'" : "'from PEER'");
			return -1;
		}
		next(p);
		s->peer = parse_expr(p);
		if (!s->peer)
			return -1;
		return parse_mods(p, s, 1);
	}
	if (is_kw(p, "write")) {
		s->op = QO_WRITE;
		next(p);
		if (parse_ref(p, &s->ref, 1))
			return -1;
		if (!is_kw(p, "to")) {
			expected(p, "'to PEER'");
			return -1;
		}
		next(p);
		s->peer = parse_expr(p);
		if (!s->peer)
			return -1;
		if (!is_kw(p, "at")) {
			expected(p, "'at BUFFER[offset]' (the target on the peer)");
			return -1;
		}
		next(p);
		if (parse_ref(p, &s->ref2, 1))
			return -1;
		if (s->ref2.is_range) {
			errorf(p, s->ref2.line, s->ref2.col,
			       "the write target takes an offset, not a range: BUFFER[offset]");
			return -1;
		}
		return parse_mods(p, s, 0);
	}
	if (is_kw(p, "fence") || is_kw(p, "barrier")) {
		s->op = is_kw(p, "fence") ? QO_FENCE : QO_BARRIER;
		next(p);
		return parse_mods(p, s, 0);
	}
	if (is_kw(p, "after_all")) {
		s->op = QO_AFTER_ALL;
		next(p);
		if (parse_name_list(p, s, "a token name"))
			return -1;
		if (s->nnames > ACCDMA_MAX_DEPS) {
			errorf(p, line, col, "after_all joins at most %d tokens", ACCDMA_MAX_DEPS);
			return -1;
		}
		return parse_mods(p, s, 0);
	}
	if (is_kw(p, "permute")) {
		s->op = QO_PERMUTE;
		next(p);
		if (parse_ref(p, &s->ref, 1))
			return -1;
		if (!is_kw(p, "into")) {
			expected(p, "'into BUFFER'");
			return -1;
		}
		next(p);
		if (parse_ref(p, &s->ref2, 1))
			return -1;
		if (s->ref2.lo && s->ref2.is_range) {
			errorf(p, s->ref2.line, s->ref2.col,
			       "the permute target takes an offset, not a range: BUFFER[offset]");
			return -1;
		}
		if (!is_kw(p, "map")) {
			expected(p, "'map EXPR' (the target of source rank src)");
			return -1;
		}
		next(p);
		s->arg = parse_expr(p);
		if (!s->arg)
			return -1;
		return parse_mods(p, s, 1);
	}
	if (is_kw(p, "exec")) {
		static const struct {
			const char *name;
			enum qt_exec_kind k;
		} fns[] = { { "add", QE_ADD }, { "scale", QE_SCALE }, { "fill", QE_FILL },
			    { "copy", QE_COPY }, { "fail", QE_FAIL }, { "sleep", QE_SLEEP } };
		int found = 0;

		s->op = QO_EXEC;
		next(p);
		for (size_t k = 0; k < sizeof(fns) / sizeof(fns[0]); k++)
			if (is_kw(p, fns[k].name)) {
				s->exec = fns[k].k;
				found = 1;
			}
		if (!found) {
			expected(p, "an exec step (add, scale, fill, copy, fail, sleep)");
			return -1;
		}
		next(p);
		switch (s->exec) {
		case QE_ADD:
		case QE_SCALE:
		case QE_FILL:
			if (parse_ref(p, &s->ref, 1))
				return -1;
			s->arg = parse_expr(p);
			if (!s->arg)
				return -1;
			break;
		case QE_COPY:
			if (parse_ref(p, &s->ref, 1) || parse_ref(p, &s->ref2, 1))
				return -1;
			break;
		case QE_SLEEP:
			s->arg = parse_expr(p);
			if (!s->arg)
				return -1;
			break;
		case QE_FAIL:
			break;
		}
		return parse_mods(p, s, 0);
	}
	expected(p, "a statement (send, recv, write, fence, exec, after_all, barrier, permute, "
		    "wait, release, expect, let, if, repeat)");
	return -1;
}

static struct qt_stmt *parse_block(struct parser *p);

static int end_of_stmt(struct parser *p)
{
	if (p->tok.kind == QT_T_NL || p->tok.kind == QT_T_SEMI) {
		next(p);
		return 0;
	}
	if (p->tok.kind == QT_T_RBRACE || p->tok.kind == QT_T_EOF)
		return 0;
	expected(p, "end of line or ';'");
	return -1;
}

/* Look past newlines for `else`; leave the parser where it was if there is none. */
static int else_follows(struct parser *p)
{
	struct qt_lexer save_lx = p->lx;
	struct qt_token save_tok = p->tok;

	while (p->tok.kind == QT_T_NL)
		next(p);
	if (is_kw(p, "else"))
		return 1;
	if (!p->failed) {
		p->lx = save_lx;
		p->tok = save_tok;
	}
	return 0;
}

static struct qt_stmt *parse_stmt(struct parser *p)
{
	struct qt_stmt *s = palloc(p, sizeof(*s));

	if (!s)
		return NULL;
	s->line = p->tok.line;
	s->col = p->tok.col;
	s->expect = -1;
	if (is_kw(p, "if")) {
		struct qt_stmt *cur = s;

		for (;;) {
			cur->kind = QS_IF;
			next(p);
			cur->cond = parse_expr(p);
			if (!cur->cond)
				return NULL;
			cur->then_body = parse_block(p);
			if (p->failed)
				return NULL;
			if (!else_follows(p))
				break;
			next(p);
			if (is_kw(p, "if")) {
				struct qt_stmt *n = palloc(p, sizeof(*n));

				if (!n)
					return NULL;
				n->line = p->tok.line;
				n->col = p->tok.col;
				n->expect = -1;
				cur->else_body = n;
				cur = n;
				continue;
			}
			cur->else_body = parse_block(p);
			if (p->failed)
				return NULL;
			if (!cur->else_body) {
				/* empty else: keep a non-NULL marker-free NULL, fine */
			}
			break;
		}
		return s;
	}
	if (is_kw(p, "repeat")) {
		s->kind = QS_REPEAT;
		next(p);
		s->count = parse_expr(p);
		if (!s->count)
			return NULL;
		if (is_kw(p, "as")) {
			next(p);
			s->name = parse_name(p, "a loop variable name");
			if (!s->name)
				return NULL;
		}
		s->then_body = parse_block(p);
		return p->failed ? NULL : s;
	}
	if (is_kw(p, "let")) {
		s->kind = QS_LET;
		next(p);
		s->name = parse_name(p, "a variable name");
		if (!s->name || expect_tok(p, QT_T_ASSIGN, "'='"))
			return NULL;
		s->value = parse_expr(p);
		return s->value ? s : NULL;
	}
	if (is_kw(p, "wait") || is_kw(p, "release")) {
		int wait = is_kw(p, "wait");

		s->kind = wait ? QS_WAIT : QS_RELEASE;
		next(p);
		if (wait && is_kw(p, "all")) {
			next(p);
			s->wait_all = 1;
			return s;
		}
		return parse_name_list(p, s, wait ? "a token name or 'all'" : "a token name") ? NULL :
											      s;
	}
	if (is_kw(p, "expect")) {
		s->kind = QS_EXPECT;
		next(p);
		if (parse_ref(p, &s->ref, 1) || expect_tok(p, QT_T_ASSIGN, "'=' and the expected value"))
			return NULL;
		s->value = parse_expr(p);
		return s->value ? s : NULL;
	}
	if (p->in_check) {
		expected(p, "'expect', 'let', 'if' or 'repeat' (ops belong in 'program')");
		return NULL;
	}
	return parse_op(p, s) ? NULL : s;
}

/* '{' statements '}' ; returns the first statement (NULL for an empty block or on error). */
static struct qt_stmt *parse_block(struct parser *p)
{
	struct qt_stmt *head = NULL, **tail = &head;
	int line = p->tok.line, col = p->tok.col;

	if (expect_tok(p, QT_T_LBRACE, "'{'"))
		return NULL;
	if (++p->nest > QT_MAX_NEST) {
		errorf(p, line, col, "blocks nested more than %d deep", QT_MAX_NEST);
		return NULL;
	}
	for (;;) {
		while (accept(p, QT_T_NL) || accept(p, QT_T_SEMI))
			;
		if (p->failed)
			return NULL;
		if (accept(p, QT_T_RBRACE))
			break;
		if (p->tok.kind == QT_T_EOF) {
			errorf(p, line, col, "'{' is never closed");
			return NULL;
		}
		struct qt_stmt *s = parse_stmt(p);

		if (!s || end_of_stmt(p))
			return NULL;
		*tail = s;
		tail = &s->next;
	}
	p->nest--;
	return head;
}

static int parse_const_int(struct parser *p, int64_t *v, const char *what)
{
	struct qt_env env = { NULL, 0, 0 };
	struct qt_expr *e;
	char msg[200];
	int line = p->tok.line, col = p->tok.col;

	e = parse_expr(p);
	if (!e)
		return -1;
	if (qt_eval_int(e, &env, v, msg, sizeof(msg))) {
		errorf(p, line, col, "%s must be a constant integer (%s)", what, msg);
		return -1;
	}
	return 0;
}

static int parse_item(struct parser *p, struct qt_stmt ***check_tail)
{
	struct qt_scenario *sc = p->sc;
	int line = p->tok.line, col = p->tok.col;

	if (is_kw(p, "name")) {
		next(p);
		if (p->tok.kind != QT_T_STRING) {
			expected(p, "a quoted name");
			return -1;
		}
		sc->name = tok_str(p);
		next(p);
		return 0;
	}
	if (is_kw(p, "devices")) {
		next(p);
		do {
			int64_t v;

			if (parse_const_int(p, &v, "a device count"))
				return -1;
			if (v < 1 || v > QT_MAX_DEVICES) {
				errorf(p, line, col, "device count %lld outside 1..%d", (long long)v,
				       QT_MAX_DEVICES);
				return -1;
			}
			if (sc->ndevices >= QT_MAX_SWEEP) {
				errorf(p, line, col, "more than %d device counts", QT_MAX_SWEEP);
				return -1;
			}
			sc->devices[sc->ndevices++] = (int)v;
			accept(p, QT_T_COMMA);
		} while (p->tok.kind != QT_T_NL && p->tok.kind != QT_T_SEMI &&
			 p->tok.kind != QT_T_EOF && !p->failed);
		return p->failed ? -1 : 0;
	}
	if (is_kw(p, "timeout")) {
		int64_t v;

		next(p);
		if (parse_const_int(p, &v, "the timeout"))
			return -1;
		if (v < 1 || v > 3600000) {
			errorf(p, line, col, "timeout must be 1..3600000 ms");
			return -1;
		}
		sc->timeout_ms = v;
		return 0;
	}
	if (is_kw(p, "buffer")) {
		struct qt_buffer_decl *b;

		next(p);
		if (sc->nbufs >= QT_MAX_BUFFERS) {
			errorf(p, line, col, "more than %d buffers", QT_MAX_BUFFERS);
			return -1;
		}
		b = &sc->bufs[sc->nbufs];
		b->line = p->tok.line;
		b->col = p->tok.col;
		b->name = parse_name(p, "a buffer name");
		if (!b->name)
			return -1;
		if (find_buffer(p, b->name) >= 0) {
			errorf(p, b->line, b->col, "buffer '%s' declared twice", b->name);
			return -1;
		}
		if (is_kw(p, "int32"))
			b->type = QT_INT32;
		else if (is_kw(p, "float32"))
			b->type = QT_FLOAT32;
		else if (is_kw(p, "bytes"))
			b->type = QT_BYTES;
		else {
			expected(p, "a type (int32, float32, bytes)");
			return -1;
		}
		next(p);
		b->count = parse_expr(p);
		if (!b->count)
			return -1;
		if (accept(p, QT_T_ASSIGN)) {
			b->init = parse_expr(p);
			if (!b->init)
				return -1;
		}
		sc->nbufs++;
		return 0;
	}
	if (is_kw(p, "program")) {
		next(p);
		if (sc->program) {
			errorf(p, line, col, "a second 'program' block");
			return -1;
		}
		sc->program = parse_block(p);
		if (!p->failed && !sc->program) {
			errorf(p, line, col, "the program is empty");
			return -1;
		}
		return p->failed ? -1 : 0;
	}
	if (is_kw(p, "check")) {
		struct qt_stmt *b;

		next(p);
		p->in_check = 1;
		b = parse_block(p);
		p->in_check = 0;
		if (p->failed)
			return -1;
		**check_tail = b;
		while (**check_tail)
			*check_tail = &(**check_tail)->next;
		return 0;
	}
	if (is_kw(p, "expect")) {
		struct qt_stmt *s = parse_stmt(p);

		if (!s)
			return -1;
		**check_tail = s;
		*check_tail = &s->next;
		return 0;
	}
	expected(p, "'name', 'devices', 'timeout', 'buffer', 'program', 'check' or 'expect'");
	return -1;
}

/**
 * qt_parse() - parse a scenario.
 * @file: the name used in messages. @src/@len: the text. @out: the scenario.
 * @err/@errlen: on failure, "file:line:col: message".
 * Return: 0, or -1 on a syntax error.
 */
int qt_parse(const char *file, const char *src, size_t len, struct qt_scenario **out, char *err,
	     size_t errlen)
{
	struct parser p;
	struct qt_scenario *sc;
	struct qt_stmt **check_tail;
	int seen_program = 0;

	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	sc = calloc(1, sizeof(*sc));
	if (!sc) {
		if (err && errlen)
			snprintf(err, errlen, "%s: out of memory", file);
		return -1;
	}
	sc->arena.limit = (size_t)256 << 20;
	memset(&p, 0, sizeof(p));
	p.sc = sc;
	p.file = file;
	p.err = err;
	p.errlen = errlen;
	check_tail = &sc->check;
	sc->file = qt_strndup(&sc->arena, file, strlen(file));
	qt_lex_init(&p.lx, src, len);
	next(&p);
	while (!p.failed && p.tok.kind != QT_T_EOF) {
		if (accept(&p, QT_T_NL) || accept(&p, QT_T_SEMI))
			continue;
		if (is_kw(&p, "program"))
			seen_program = 1;
		if (parse_item(&p, &check_tail) || end_of_stmt(&p))
			break;
	}
	if (!p.failed && !seen_program)
		errorf(&p, p.tok.line, p.tok.col, "no 'program' block");
	if (!p.failed && !sc->file)
		errorf(&p, 1, 1, "out of memory");
	if (p.failed) {
		qt_scenario_free(sc);
		return -1;
	}
	if (!sc->name) {
		const char *base = strrchr(file, '/');
		const char *dot;

		base = base ? base + 1 : file;
		dot = strrchr(base, '.');
		sc->name = qt_strndup(&sc->arena, base, dot && dot != base ? (size_t)(dot - base) :
									   strlen(base));
		if (!sc->name)
			sc->name = "scenario";
	}
	if (!sc->ndevices) {
		sc->devices[0] = 2;
		sc->ndevices = 1;
	}
	*out = sc;
	return 0;
}

/**
 * qt_parse_file() - read and parse a scenario file.
 * @path: the file. @out/@err/@errlen: as qt_parse().
 * Return: 0, or -1.
 */
int qt_parse_file(const char *path, struct qt_scenario **out, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int rc;

	*out = NULL;
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	for (;;) {
		if (len == cap) {
			char *nb;

			if (cap >= ((size_t)16 << 20)) {
				snprintf(err, errlen, "%s: file larger than 16 MiB", path);
				free(buf);
				fclose(f);
				return -1;
			}
			cap = cap ? cap * 2 : 4096;
			nb = realloc(buf, cap);
			if (!nb) {
				snprintf(err, errlen, "%s: out of memory", path);
				free(buf);
				fclose(f);
				return -1;
			}
			buf = nb;
		}
		size_t n = fread(buf + len, 1, cap - len, f);

		if (n == 0)
			break;
		len += n;
	}
	if (ferror(f)) {
		snprintf(err, errlen, "%s: read error", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	rc = qt_parse(path, buf ? buf : "", len, out, err, errlen);
	free(buf);
	return rc;
}

/**
 * qt_scenario_free() - free a parsed scenario.
 * @sc: the scenario (NULL is fine).
 */
void qt_scenario_free(struct qt_scenario *sc)
{
	if (!sc)
		return;
	qt_arena_free(&sc->arena);
	free(sc);
}
