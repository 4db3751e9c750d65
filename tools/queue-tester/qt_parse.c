/* SPDX-License-Identifier: MIT */
/*
 * qt_parse.c - recursive-descent parser for scenario files: the top-level items
 * (name, devices, timeout, buffer, program, check) and the API. Expressions are
 * parsed in qt_parse_expr.c, statements and blocks in qt_parse_stmt.c.
 */
#include "qt_parse_internal.h"

#include <accdma.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
