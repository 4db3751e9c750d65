/* SPDX-License-Identifier: MIT */
/*
 * qt_lex.h - the scenario lexer: turns bytes (not necessarily NUL-terminated,
 * possibly binary garbage) into tokens with line and column.
 */
#ifndef QT_LEX_H
#define QT_LEX_H

#include <stddef.h>
#include <stdint.h>

enum qt_tok {
	QT_T_EOF = 0,
	QT_T_NL,
	QT_T_IDENT,
	QT_T_INT,
	QT_T_FLOAT,
	QT_T_STRING,
	QT_T_LBRACE,
	QT_T_RBRACE,
	QT_T_LPAREN,
	QT_T_RPAREN,
	QT_T_LBRACK,
	QT_T_RBRACK,
	QT_T_COMMA,
	QT_T_SEMI,
	QT_T_COLON,
	QT_T_QUESTION,
	QT_T_PLUS,
	QT_T_MINUS,
	QT_T_STAR,
	QT_T_SLASH,
	QT_T_PERCENT,
	QT_T_LT,
	QT_T_LE,
	QT_T_GT,
	QT_T_GE,
	QT_T_EQ,
	QT_T_NE,
	QT_T_ASSIGN,
	QT_T_ANDAND,
	QT_T_OROR,
	QT_T_NOT,
	QT_T_AMP,
	QT_T_PIPE,
	QT_T_CARET,
	QT_T_TILDE,
	QT_T_SHL,
	QT_T_SHR,
	QT_T_ERROR,
};

/**
 * struct qt_token - one token.
 * @kind: QT_T_*. @line/@col: 1-based position of its first byte.
 * @start/@len: its bytes in the source (for a string: the contents, without quotes).
 * @ival/@fval: the value of an INT or FLOAT token.
 */
struct qt_token {
	enum qt_tok kind;
	int line;
	int col;
	const char *start;
	size_t len;
	int64_t ival;
	double fval;
};

/** struct qt_lexer - lexer state; set up with qt_lex_init(). @err holds the message of a QT_T_ERROR. */
struct qt_lexer {
	const char *src;
	size_t len;
	size_t pos;
	int line;
	int col;
	char err[128];
};

/**
 * qt_lex_init() - start lexing a buffer.
 * @lx: the lexer. @src/@len: the bytes (need not be NUL-terminated).
 */
void qt_lex_init(struct qt_lexer *lx, const char *src, size_t len);

/**
 * qt_lex_next() - read the next token.
 * @lx: the lexer. @tok: filled with the token.
 * Return: @tok->kind; QT_T_ERROR (with @lx->err set) for a malformed token.
 */
enum qt_tok qt_lex_next(struct qt_lexer *lx, struct qt_token *tok);

/**
 * qt_tok_name() - a human-readable name of a token kind, for error messages.
 * @kind: the kind.
 * Return: a static string such as "'{'" or "identifier".
 */
const char *qt_tok_name(enum qt_tok kind);

#endif
