/* SPDX-License-Identifier: MIT */
/*
 * qt_cli.h - queue-tester's command line as its parts share it: qt_main.c
 * parses it and walks the files, qt_scenario.c runs each scenario at its
 * device counts.
 */
#ifndef QT_CLI_H
#define QT_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "qt_ctl.h"
#include "qt_parse.h"
#include "qt_report.h"
#include "qt_run.h"

struct cli {
	struct qt_run_opts ro;
	struct qt_out out;
	int devices;
	int iterations;
	int list;
	long random;
	int random_devices;
	uint64_t seed;
	int seed_set;
	const char *outdir;
	/* shm: */
	struct qt_ctl ctl;      /* a rank of a launched world (world mode) */
	int world;              /* 1 in world mode */
	int world_devices;      /* world mode: processes x local devices */
	int result_fd;          /* world mode under queue-tester's own launcher: rank 0's results */
	int spawn;              /* launcher mode: -t shm started outside any world */
	int max_procs;          /* launcher mode: the largest process count */
	char self[4096];        /* launcher mode: this program */
	FILE *devnull;
};

void qt_run_scenario(struct cli *c, const struct qt_scenario *sc, const uint64_t *seed);

#endif /* QT_CLI_H */
