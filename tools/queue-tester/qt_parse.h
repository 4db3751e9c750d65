/* SPDX-License-Identifier: MIT */
/*
 * qt_parse.h - the scenario file format (see docs/scenarios.md): its syntax
 * tree and the parser. Parsing needs no library: everything that depends on
 * rank and N is kept as expressions and evaluated by qt_plan.
 */
#ifndef QT_PARSE_H
#define QT_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "qt_arena.h"
#include "qt_expr.h"

/** Most device counts one `devices` line may list. */
#define QT_MAX_SWEEP 32
/** Most devices a scenario may ask for. */
#define QT_MAX_DEVICES 1024
/** Most buffers a scenario may declare. */
#define QT_MAX_BUFFERS 32
/** Deepest nesting of blocks (if/repeat). */
#define QT_MAX_NEST 32

enum qt_type { QT_INT32 = 0, QT_FLOAT32, QT_BYTES };

enum qt_op {
	QO_SEND = 0,
	QO_RECV,
	QO_WRITE,
	QO_FENCE,
	QO_EXEC,
	QO_AFTER_ALL,
	QO_BARRIER,
	QO_PERMUTE,
};

enum qt_exec_kind { QE_ADD = 0, QE_SCALE, QE_FILL, QE_COPY, QE_FAIL, QE_SLEEP };

/* Expected outcomes beyond enum accdma_status. */
#define QT_EXPECT_TIMEOUT 100 /* the op must still be pending when the watchdog fires */
#define QT_EXPECT_ANY 101     /* any final status */
#define QT_EXPECT_FAILED 102  /* any status but OK */

enum qt_st_kind { QS_IF = 0, QS_REPEAT, QS_LET, QS_OP, QS_WAIT, QS_RELEASE, QS_EXPECT };

/**
 * struct qt_ref - a buffer reference: NAME, NAME[k] or NAME[lo:hi] (elements, hi exclusive).
 * @name: the buffer. @buf: its index among the declared buffers.
 * @lo/@hi: NULL when absent (@hi NULL with @lo set: one element).
 */
struct qt_ref {
	const char *name;
	int buf;
	int line;
	int col;
	struct qt_expr *lo;
	struct qt_expr *hi;
	int is_range;
};

/**
 * struct qt_stmt - one statement of a program or check block.
 * @kind: QS_*. @next: the next statement of the block.
 * @cond/@then_body/@else_body: if. @count/@name: repeat (loop variable) and let (@name, @value).
 * @op/@exec: the op. @ref/@ref2: its buffers. @peer/@tag/@arg: its expressions
 *   (@arg: exec value, sleep time or permute map).
 * @names/@nnames: after-list of an op, the tokens of wait/release/after_all.
 * @wait_all: `wait all`. @as: token name. @expect: expected status (-1: OK).
 * @badkey: post with an invalid key.
 */
struct qt_stmt {
	enum qt_st_kind kind;
	int line;
	int col;
	struct qt_stmt *next;
	struct qt_expr *cond;
	struct qt_stmt *then_body;
	struct qt_stmt *else_body;
	struct qt_expr *count;
	const char *name;
	struct qt_expr *value;
	enum qt_op op;
	enum qt_exec_kind exec;
	struct qt_ref ref;
	struct qt_ref ref2;
	struct qt_expr *peer;
	struct qt_expr *tag;
	struct qt_expr *arg;
	const char **names;
	int nnames;
	int wait_all;
	const char *as;
	int expect;
	int badkey;
};

/** struct qt_buffer_decl - `buffer NAME TYPE COUNT [= INIT]`. */
struct qt_buffer_decl {
	const char *name;
	enum qt_type type;
	struct qt_expr *count;
	struct qt_expr *init;
	int line;
	int col;
};

/**
 * struct qt_scenario - a parsed file.
 * @name: `name "..."` or the file's base name. @file: the path given to the parser.
 * @devices/@ndevices: the device counts to sweep. @timeout_ms: 0 = the runner's default.
 * @bufs/@nbufs: buffers. @program: the program block. @check: the check block.
 * @arena: owns everything above.
 */
struct qt_scenario {
	const char *name;
	const char *file;
	int devices[QT_MAX_SWEEP];
	int ndevices;
	int64_t timeout_ms;
	struct qt_buffer_decl bufs[QT_MAX_BUFFERS];
	int nbufs;
	struct qt_stmt *program;
	struct qt_stmt *check;
	struct qt_arena arena;
};

/**
 * qt_parse() - parse a scenario.
 * @file: the name used in messages and as the default scenario name.
 * @src/@len: the text (need not be NUL-terminated; any bytes are safe).
 * @out: on success, the scenario (free with qt_scenario_free()).
 * @err/@errlen: on failure, "file:line:col: message".
 * Return: 0, or -1 on a syntax error.
 */
int qt_parse(const char *file, const char *src, size_t len, struct qt_scenario **out, char *err,
	     size_t errlen);

/**
 * qt_parse_file() - read and parse a scenario file.
 * @path: the file. @out/@err/@errlen: as qt_parse().
 * Return: 0, or -1 (unreadable file or syntax error).
 */
int qt_parse_file(const char *path, struct qt_scenario **out, char *err, size_t errlen);

/**
 * qt_scenario_free() - free a parsed scenario.
 * @sc: the scenario (NULL is fine).
 */
void qt_scenario_free(struct qt_scenario *sc);

/**
 * qt_status_from_name() - parse an expected-status name (case-insensitive).
 * @name: such as "ok", "truncated", "timeout", "any", "failed".
 * Return: an enum accdma_status value or QT_EXPECT_*, or -1 when unknown.
 */
int qt_status_from_name(const char *name);

/**
 * qt_status_name() - the name of an expected status, as qt_status_from_name() reads it.
 * @st: an enum accdma_status value or QT_EXPECT_*.
 * Return: a static string.
 */
const char *qt_status_name(int st);

/**
 * qt_type_size() - bytes per element of a buffer type.
 * @t: the type.
 * Return: 4, 4 or 1.
 */
size_t qt_type_size(enum qt_type t);

#endif
