/* SPDX-License-Identifier: MIT */
/*
 * qt_parse_internal.h - the parser's own state, shared by its files: the token
 * helpers every part uses, and the entry points one part calls in another
 * (qt_parse.c: the file's items and the API; qt_parse_expr.c: expressions;
 * qt_parse_stmt.c: statements and blocks). Not for use outside the parser.
 */
#ifndef QT_PARSE_INTERNAL_H
#define QT_PARSE_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "qt_lex.h"
#include "qt_parse.h"

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

/*
 * The token helpers, used by every part. static inline: their names are short
 * and generic (accept is also libc's), so they stay out of the link.
 */

static inline void errorf(struct parser *p, int line, int col, const char *fmt, ...)
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

static inline void describe_tok(const struct qt_token *t, char *buf, size_t n)
{
	if (t->kind == QT_T_IDENT)
		snprintf(buf, n, "'%.*s'", (int)t->len, t->start);
	else if (t->kind == QT_T_INT || t->kind == QT_T_FLOAT)
		snprintf(buf, n, "number %.*s", (int)(t->len > 40 ? 40 : t->len), t->start);
	else
		snprintf(buf, n, "%s", qt_tok_name(t->kind));
}

static inline void expected(struct parser *p, const char *what)
{
	char got[96];

	describe_tok(&p->tok, got, sizeof(got));
	errorf(p, p->tok.line, p->tok.col, "expected %s, got %s", what, got);
}

static inline void next(struct parser *p)
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

static inline int is_kw(const struct parser *p, const char *kw)
{
	size_t n = strlen(kw);

	return p->tok.kind == QT_T_IDENT && p->tok.len == n && memcmp(p->tok.start, kw, n) == 0;
}

static inline int is_keyword_tok(const struct qt_token *t)
{
	for (int k = 0; keywords[k]; k++)
		if (t->len == strlen(keywords[k]) && memcmp(t->start, keywords[k], t->len) == 0)
			return 1;
	return 0;
}

static inline int accept(struct parser *p, enum qt_tok k)
{
	if (p->tok.kind == k) {
		next(p);
		return 1;
	}
	return 0;
}

static inline int expect_tok(struct parser *p, enum qt_tok k, const char *what)
{
	if (accept(p, k))
		return 0;
	expected(p, what);
	return -1;
}

static inline void *palloc(struct parser *p, size_t n)
{
	void *m = qt_alloc(&p->sc->arena, n);

	if (!m)
		errorf(p, p->tok.line, p->tok.col, "out of memory");
	return m;
}

static inline const char *tok_str(struct parser *p)
{
	char *s = qt_strndup(&p->sc->arena, p->tok.start, p->tok.len);

	if (!s)
		errorf(p, p->tok.line, p->tok.col, "out of memory");
	return s;
}

/* An identifier that is not a keyword: a buffer, variable or token name. */
static inline const char *parse_name(struct parser *p, const char *what)
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

/* qt_parse_expr.c: parse an expression (?:, binary and unary operators, calls); NULL on error. */
struct qt_expr *parse_expr(struct parser *p);

/* qt_parse_stmt.c: the index of the declared buffer @name, or -1. */
int find_buffer(struct parser *p, const char *name);
/* qt_parse_stmt.c: parse one statement of a program or check block; NULL on error. */
struct qt_stmt *parse_stmt(struct parser *p);
/* qt_parse_stmt.c: end a statement: its newline or ';' (consumed), '}' or the end; else -1. */
int end_of_stmt(struct parser *p);
/* qt_parse_stmt.c: parse a '{' ... '}' block; its first statement (NULL: empty or error). */
struct qt_stmt *parse_block(struct parser *p);

#endif
