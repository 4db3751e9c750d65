/* SPDX-License-Identifier: MIT */
/*
 * qt_plan.h - expansion of a scenario for one device count: every device's
 * program becomes a flat list of concrete instructions (peers, tags, ranges
 * evaluated; if/repeat/let resolved; token names turned into instruction
 * indices), plus the list of expectations to check afterwards. Needs no library.
 */
#ifndef QT_PLAN_H
#define QT_PLAN_H

#include <accdma.h>
#include <stdint.h>

#include "qt_parse.h"

enum qt_ins_kind { QI_OP = 0, QI_WAIT, QI_RELEASE };

/**
 * struct qt_ins - one instruction of a device.
 * @kind: QI_*. @st: the statement it came from (line numbers).
 * @op/@exec: what to post. @peer/@tag: evaluated.
 * @buf/@lo/@hi: local range in elements (hi exclusive; may pass the buffer's end on purpose).
 * @buf2/@off2/@hi2: second buffer (write/permute target on the peer or here, exec copy source).
 * @badkey: post an invalid key. @value: exec sleep ms.
 * @deps/@ndeps: instruction indices this op depends on (same device).
 * @waits/@nwaits: instruction indices a wait/release names.
 * @expect: expected status (enum accdma_status or QT_EXPECT_*).
 * @env: variables in scope (exec value expressions are evaluated with i bound per element).
 * @pairs/@npairs: permute pairs.
 */
struct qt_ins {
	enum qt_ins_kind kind;
	const struct qt_stmt *st;
	enum qt_op op;
	enum qt_exec_kind exec;
	int peer;
	uint64_t tag;
	int buf;
	int64_t lo;
	int64_t hi;
	int buf2;
	int64_t off2;
	int64_t hi2;
	int badkey;
	int64_t value;
	int deps[ACCDMA_MAX_DEPS];
	int ndeps;
	int *waits;
	int nwaits;
	int expect;
	struct qt_env *env;
	struct accdma_pair *pairs;
	int npairs;
};

/** struct qt_check - `expect BUF[lo:hi] = EXPR`, evaluated per element with i bound. */
struct qt_check {
	const struct qt_stmt *st;
	int buf;
	int64_t lo;
	int64_t hi;
	struct qt_env *env;
};

/** struct qt_devplan - one device's instructions, checks and buffer sizes (elements). */
struct qt_devplan {
	struct qt_ins *ins;
	int nins;
	int cap;
	struct qt_check *checks;
	int nchecks;
	int ccap;
	int64_t count[QT_MAX_BUFFERS];
};

/**
 * struct qt_plan - a scenario expanded for N devices.
 * @sc: the scenario. @N: the device count. @first/@ndev: the devices planned (local ones).
 * @dev: @ndev device plans (dev[k] is rank first + k).
 */
struct qt_plan {
	const struct qt_scenario *sc;
	int N;
	int first;
	int ndev;
	struct qt_devplan *dev;
	struct qt_arena arena;
};

/** struct qt_plan_limits - bounds on expansion work, so hostile input cannot run away. */
struct qt_plan_limits {
	int64_t max_ins;        /* instructions over all devices */
	int64_t max_steps;      /* statements executed during expansion */
	int64_t max_buf_bytes;  /* one buffer on one device */
	int64_t max_dev_bytes;  /* all buffers of one device */
};

/**
 * qt_plan_default_limits() - the limits queue-tester uses.
 * @l: filled.
 */
void qt_plan_default_limits(struct qt_plan_limits *l);

/**
 * qt_plan_build() - expand a scenario.
 * @sc: the scenario. @N: the device count. @first/@ndev: which ranks to plan.
 * @lim: limits (NULL: defaults). @out: the plan (free with qt_plan_free()).
 * @err/@errlen: on failure, "file:line:col: rank R: message".
 * Return: 0 or -1.
 */
int qt_plan_build(const struct qt_scenario *sc, int N, int first, int ndev,
		  const struct qt_plan_limits *lim, struct qt_plan **out, char *err, size_t errlen);

/**
 * qt_plan_free() - free a plan.
 * @plan: the plan (NULL is fine).
 */
void qt_plan_free(struct qt_plan *plan);

/**
 * qt_base_env() - the variables every expression sees: rank, N, even, odd.
 * @env: filled. @rank/@N: the device and the world size.
 */
void qt_base_env(struct qt_env *env, int rank, int N);

#endif
