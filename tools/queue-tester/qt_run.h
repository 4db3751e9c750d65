/* SPDX-License-Identifier: MIT */
/*
 * qt_run.h - the runner: opens a world, allocates and fills the buffers,
 * posts every local device's program from one thread without blocking
 * (a device only pauses at its own `wait`, or on a full queue), waits for
 * every token under a no-progress timeout, then checks statuses and data.
 */
#ifndef QT_RUN_H
#define QT_RUN_H

#include <accdma.h>

#include "qt_ctl.h"
#include "qt_parse.h"
#include "qt_report.h"

/**
 * struct qt_run_opts - how to run.
 * @transport: ACCDMA_TRANSPORT_*. @timeout_ms: no-progress timeout for scenarios
 * without their own. @queue_depth/@engines: 0 = library default.
 * @out: output (details and the watchdog report).
 * @ctl: shm with several processes: the control channel to the other ranks
 * (NULL: every device is in this process). Every rank calls qt_run() for the
 * same scenario and N; they meet after setting up their buffers (and exchange
 * region keys), after driving their devices, after settling stalls and before
 * closing the world.
 */
struct qt_run_opts {
	enum accdma_transport transport;
	int64_t timeout_ms;
	unsigned queue_depth;
	int engines;
	struct qt_out *out;
	struct qt_ctl *ctl;
};

/**
 * qt_run() - run a scenario once for N devices.
 * @sc: the scenario. @N: the device count. @o: options.
 * @r: the result; ops, bytes and ms are added to, pass and reason are set.
 * With @o->ctl, @r is this process's part (its devices' ops, failures, reason).
 * Return: 0 if it passed, -1 if not (the reason is in @r). With @o->ctl: -1
 * if it failed on any rank (the same answer on every rank).
 */
int qt_run(const struct qt_scenario *sc, int N, const struct qt_run_opts *o, struct qt_result *r);

#endif
