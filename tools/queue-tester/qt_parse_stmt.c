/* SPDX-License-Identifier: MIT */
/* qt_parse_stmt.c - the parser's statements: ops and their modifiers, if/repeat/let, blocks. */
#include "qt_parse_internal.h"

#include <accdma.h>

int find_buffer(struct parser *p, const char *name)
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

int end_of_stmt(struct parser *p)
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

struct qt_stmt *parse_stmt(struct parser *p)
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
struct qt_stmt *parse_block(struct parser *p)
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
