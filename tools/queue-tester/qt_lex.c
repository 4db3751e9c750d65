/* SPDX-License-Identifier: MIT */
/* qt_lex.c - scenario lexer. */
#include "qt_lex.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/**
 * qt_lex_init() - start lexing a buffer.
 * @lx: the lexer. @src/@len: the bytes.
 */
void qt_lex_init(struct qt_lexer *lx, const char *src, size_t len)
{
	memset(lx, 0, sizeof(*lx));
	lx->src = src;
	lx->len = len;
	lx->line = 1;
	lx->col = 1;
}

static int peekc(const struct qt_lexer *lx, size_t ahead)
{
	return lx->pos + ahead < lx->len ? (unsigned char)lx->src[lx->pos + ahead] : -1;
}

static void advance(struct qt_lexer *lx)
{
	if (lx->pos >= lx->len)
		return;
	if (lx->src[lx->pos] == '\n') {
		lx->line++;
		lx->col = 1;
	} else {
		lx->col++;
	}
	lx->pos++;
}

static int is_ident_start(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int is_ident(int c)
{
	return is_ident_start(c) || is_digit(c);
}

static enum qt_tok lex_error(struct qt_lexer *lx, struct qt_token *tok, const char *msg)
{
	snprintf(lx->err, sizeof(lx->err), "%s", msg);
	tok->kind = QT_T_ERROR;
	return QT_T_ERROR;
}

static enum qt_tok lex_number(struct qt_lexer *lx, struct qt_token *tok)
{
	char buf[80];
	size_t n = 0;
	int is_float = 0, hex = 0;

	if (peekc(lx, 0) == '0' && (peekc(lx, 1) == 'x' || peekc(lx, 1) == 'X'))
		hex = 1;
	for (;;) {
		int c = peekc(lx, 0);

		if (c < 0)
			break;
		if (hex) {
			if (!(is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
			      ((c == 'x' || c == 'X') && n == 1)))
				break;
		} else if (is_digit(c)) {
			/* digits */
		} else if (c == '.') {
			is_float = 1;
		} else if ((c == 'e' || c == 'E') &&
			   (is_digit(peekc(lx, 1)) ||
			    ((peekc(lx, 1) == '-' || peekc(lx, 1) == '+') && is_digit(peekc(lx, 2))))) {
			is_float = 1;
			if (n + 2 >= sizeof(buf))
				return lex_error(lx, tok, "number too long");
			buf[n++] = (char)c;
			advance(lx);
			c = peekc(lx, 0);
		} else {
			break;
		}
		if (n + 1 >= sizeof(buf))
			return lex_error(lx, tok, "number too long");
		buf[n++] = (char)c;
		advance(lx);
	}
	buf[n] = '\0';
	tok->len = n;
	if (is_ident(peekc(lx, 0)))
		return lex_error(lx, tok, "malformed number");
	errno = 0;
	if (is_float) {
		char *end;
		double v = strtod(buf, &end);

		if (*end || errno || !isfinite(v))
			return lex_error(lx, tok, "malformed number");
		tok->kind = QT_T_FLOAT;
		tok->fval = v;
	} else {
		char *end;
		unsigned long long v = strtoull(buf, &end, hex ? 16 : 10);

		if (*end || errno || v > (unsigned long long)INT64_MAX || (hex && n <= 2))
			return lex_error(lx, tok, "integer literal malformed or too large");
		tok->kind = QT_T_INT;
		tok->ival = (int64_t)v;
	}
	return tok->kind;
}

/**
 * qt_lex_next() - read the next token.
 * @lx: the lexer. @tok: filled with the token.
 * Return: @tok->kind; QT_T_ERROR (with @lx->err set) for a malformed token.
 */
enum qt_tok qt_lex_next(struct qt_lexer *lx, struct qt_token *tok)
{
	int c;

	memset(tok, 0, sizeof(*tok));
	for (;;) {
		c = peekc(lx, 0);
		if (c == ' ' || c == '\t' || c == '\r') {
			advance(lx);
		} else if (c == '\\' && peekc(lx, 1) == '\n') {
			advance(lx); /* line continuation */
			advance(lx);
		} else if (c == '#') {
			while (peekc(lx, 0) >= 0 && peekc(lx, 0) != '\n')
				advance(lx);
		} else {
			break;
		}
	}
	tok->line = lx->line;
	tok->col = lx->col;
	tok->start = lx->src + lx->pos;
	tok->len = 1;
	if (c < 0) {
		tok->len = 0;
		tok->kind = QT_T_EOF;
		return QT_T_EOF;
	}
	if (is_ident_start(c)) {
		size_t n = 0;

		while (is_ident(peekc(lx, 0))) {
			advance(lx);
			n++;
		}
		if (n > 64)
			return lex_error(lx, tok, "identifier longer than 64 characters");
		tok->len = n;
		tok->kind = QT_T_IDENT;
		return QT_T_IDENT;
	}
	if (is_digit(c) || (c == '.' && is_digit(peekc(lx, 1))))
		return lex_number(lx, tok);
	if (c == '"') {
		size_t n = 0;

		advance(lx);
		tok->start = lx->src + lx->pos;
		for (;;) {
			int d = peekc(lx, 0);

			if (d < 0 || d == '\n')
				return lex_error(lx, tok, "unterminated string");
			if (d == '"')
				break;
			if (d < 0x20 || d == 0x7f)
				return lex_error(lx, tok, "control character in string");
			advance(lx);
			if (++n > 200)
				return lex_error(lx, tok, "string longer than 200 characters");
		}
		advance(lx);
		tok->len = n;
		tok->kind = QT_T_STRING;
		return QT_T_STRING;
	}
	advance(lx);
	int d = peekc(lx, 0);
	enum qt_tok k;

#define TWO(ch, two, one)                  \
	do {                               \
		if (d == (ch)) {           \
			advance(lx);       \
			tok->len = 2;      \
			k = (two);         \
		} else {                   \
			k = (one);         \
		}                          \
	} while (0)
	switch (c) {
	case '\n': k = QT_T_NL; break;
	case '{': k = QT_T_LBRACE; break;
	case '}': k = QT_T_RBRACE; break;
	case '(': k = QT_T_LPAREN; break;
	case ')': k = QT_T_RPAREN; break;
	case '[': k = QT_T_LBRACK; break;
	case ']': k = QT_T_RBRACK; break;
	case ',': k = QT_T_COMMA; break;
	case ';': k = QT_T_SEMI; break;
	case ':': k = QT_T_COLON; break;
	case '?': k = QT_T_QUESTION; break;
	case '+': k = QT_T_PLUS; break;
	case '-': k = QT_T_MINUS; break;
	case '*': k = QT_T_STAR; break;
	case '/': k = QT_T_SLASH; break;
	case '%': k = QT_T_PERCENT; break;
	case '^': k = QT_T_CARET; break;
	case '~': k = QT_T_TILDE; break;
	case '<':
		if (d == '<') {
			advance(lx);
			tok->len = 2;
			k = QT_T_SHL;
		} else {
			TWO('=', QT_T_LE, QT_T_LT);
		}
		break;
	case '>':
		if (d == '>') {
			advance(lx);
			tok->len = 2;
			k = QT_T_SHR;
		} else {
			TWO('=', QT_T_GE, QT_T_GT);
		}
		break;
	case '=': TWO('=', QT_T_EQ, QT_T_ASSIGN); break;
	case '!': TWO('=', QT_T_NE, QT_T_NOT); break;
	case '&': TWO('&', QT_T_ANDAND, QT_T_AMP); break;
	case '|': TWO('|', QT_T_OROR, QT_T_PIPE); break;
	default:
		if (c >= 0x20 && c < 0x7f)
			snprintf(lx->err, sizeof(lx->err), "unexpected character '%c'", c);
		else
			snprintf(lx->err, sizeof(lx->err), "unexpected byte 0x%02x", (unsigned)c);
		tok->kind = QT_T_ERROR;
		return QT_T_ERROR;
	}
#undef TWO
	tok->kind = k;
	return k;
}

/**
 * qt_tok_name() - a human-readable name of a token kind.
 * @kind: the kind.
 * Return: a static string.
 */
const char *qt_tok_name(enum qt_tok kind)
{
	static const char *const names[] = {
		[QT_T_EOF] = "end of file", [QT_T_NL] = "end of line",
		[QT_T_IDENT] = "identifier", [QT_T_INT] = "integer",
		[QT_T_FLOAT] = "number", [QT_T_STRING] = "string",
		[QT_T_LBRACE] = "'{'", [QT_T_RBRACE] = "'}'",
		[QT_T_LPAREN] = "'('", [QT_T_RPAREN] = "')'",
		[QT_T_LBRACK] = "'['", [QT_T_RBRACK] = "']'",
		[QT_T_COMMA] = "','", [QT_T_SEMI] = "';'", [QT_T_COLON] = "':'",
		[QT_T_QUESTION] = "'?'", [QT_T_PLUS] = "'+'", [QT_T_MINUS] = "'-'",
		[QT_T_STAR] = "'*'", [QT_T_SLASH] = "'/'", [QT_T_PERCENT] = "'%'",
		[QT_T_LT] = "'<'", [QT_T_LE] = "'<='", [QT_T_GT] = "'>'",
		[QT_T_GE] = "'>='", [QT_T_EQ] = "'=='", [QT_T_NE] = "'!='",
		[QT_T_ASSIGN] = "'='", [QT_T_ANDAND] = "'&&'", [QT_T_OROR] = "'||'",
		[QT_T_NOT] = "'!'", [QT_T_AMP] = "'&'", [QT_T_PIPE] = "'|'",
		[QT_T_CARET] = "'^'", [QT_T_TILDE] = "'~'", [QT_T_SHL] = "'<<'",
		[QT_T_SHR] = "'>>'", [QT_T_ERROR] = "invalid token",
	};

	if ((unsigned)kind >= sizeof(names) / sizeof(names[0]) || !names[kind])
		return "token";
	return names[kind];
}
