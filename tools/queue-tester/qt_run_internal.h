/* SPDX-License-Identifier: MIT */
/*
 * qt_run_internal.h - the runner's own state, shared by its files: a run, its
 * devices and their instructions' states, and the entry points one part calls
 * in another (qt_run.c: setup, key exchange and the sequence of meetings;
 * qt_run_drive.c: posting and driving the ops; qt_run_check.c: after driving,
 * stalls, statuses, data and the verdict). Not for use outside the runner.
 */
#ifndef QT_RUN_INTERNAL_H
#define QT_RUN_INTERNAL_H

#include <accdma.h>
#include <stdint.h>

#include "qt_plan.h"
#include "qt_run.h"

/* Per-instruction state. */
enum { IS_NEW = 0, IS_OUT, IS_DONE, IS_RELEASED, IS_STUCK };

/** A key no region has: ops posted with `badkey` use it. */
#define QT_BAD_KEY 0x7badbadu

struct exec_arg {
	struct exec_arg *next;
	enum qt_exec_kind kind;
	enum qt_type type;
	unsigned char *base;
	int64_t count;
	enum qt_type src_type;
	const unsigned char *src;
	int64_t ms;
	struct qt_val vals[];
};

struct devrt {
	int rank;
	struct qt_devplan *dp;
	accdma_queue *q;
	accdma_key keys[QT_MAX_BUFFERS];
	unsigned char *ptr[QT_MAX_BUFFERS];
	accdma_token *tok;
	unsigned char *state;
	int *status;
	int pc;
	int wpos;
	int oldest;
	int oldest_nt;
	int done;
	accdma_token blocking;
	int blocking_ins;      /* -1: the hidden failed token */
	accdma_token fail_tok; /* a posted `exec fail`, stands in for consumed failed deps */
	double eagain_since;   /* full queue with nothing of ours outstanding, since (ms) */
	int spinning;
};

struct run {
	const struct qt_scenario *sc;
	struct qt_plan *plan;
	accdma_world *w;
	const struct qt_run_opts *o;
	struct qt_result *r;
	struct devrt *dev;
	int first;
	int ndev;
	int64_t timeout;
	struct exec_arg *args;
	int failed;
	accdma_key *keys_all; /* every device's region keys: [rank * nbufs + buffer] */
};

/* qt_run.c: the monotonic clock, in ms. */
double now_ms(void);
/* qt_run.c: record a failure of the run (the first is the reason; each is a detail line). */
void rfail(struct run *rn, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* qt_run.c: the name of an op instruction (send, recv, ...). */
const char *op_name(const struct qt_ins *in);
/* qt_run.c: element @k of a buffer of type @t, as a value. */
struct qt_val load_elem(enum qt_type t, const unsigned char *base, int64_t k);
/* qt_run.c: store @v as element @k of a buffer of type @t (converted, clamped). */
void store_elem(enum qt_type t, unsigned char *base, int64_t k, struct qt_val v);

/* qt_run_drive.c: settle instruction @idx of @d with status @st (-1: the hidden failed token). */
void record(struct devrt *d, int idx, enum accdma_status st);
/* qt_run_drive.c: drive every device until done, a stall or an error (0, 1, -1). */
int drive(struct run *rn);

/* qt_run_check.c: after a stall, settle what completed and mark the rest stuck. */
void mark_stuck(struct run *rn);
/* qt_run_check.c: cancel the stuck ops and wait for them; how many did not settle. */
int cancel_stuck(struct run *rn);
/* qt_run_check.c: fail the run for every op whose final status is not the expected one. */
void check_statuses(struct run *rn);
/* qt_run_check.c: fail the run for every buffer element the check block gets wrong. */
void check_data(struct run *rn);
/* qt_run_check.c: meeting 2 (shm): everyone stopped; print a wait cycle across processes. */
void meet_stopped(struct run *rn, int stalled);
/* qt_run_check.c: meeting 5: whether the scenario failed on any process (same on every rank). */
int failed_anywhere(struct run *rn);

#endif
