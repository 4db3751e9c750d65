/* SPDX-License-Identifier: MIT */
/*
 * qt_main.c - queue-tester: run scenario files (or random scenarios) against
 * libaccdma and report one line per scenario. See docs/scenarios.md.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "qt_cli.h"
#include "qt_random.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: queue-tester [options] FILE|DIR...\n"
		"Runs accdma scenarios (docs/scenarios.md) and checks every byte.\n"
		"A DIR runs every *.acc file in it, in name order.\n\n"
		"  -t, --transport T     local (default), shm, kmod, verbs or loop. verbs: one rank per process\n"
		"                        under a launcher, across hosts over RDMA. loop: every device a host of\n"
		"                        its own, joined by messages (the cross-host protocol's\n"
		"                        test double). shm: one process per device;\n"
		"                        under a launcher (accdma-run, torchrun, mpirun) this\n"
		"                        process is one rank and runs the device counts equal to\n"
		"                        the world's; otherwise queue-tester starts N processes\n"
		"                        of itself for every scenario and device count. kmod: as\n"
		"                        shm, through /dev/accdma (accdma.ko's engines)\n"
		"      --max-procs P     -t shm without a launcher: skip device counts above P\n"
		"                        (default 64)\n"
		"  -n, --devices N       run with N devices instead of the file's 'devices' list\n"
		"  -i, --iterations K    run each scenario K times (default 1)\n"
		"  -T, --timeout MS      no-progress timeout for scenarios without their own\n"
		"                        (default 10000)\n"
		"  -s, --seed S          seed for --random (default: time)\n"
		"  -r, --random COUNT    run COUNT random scenarios (seeds S, S+1, ...)\n"
		"      --max-devices N   largest device count of random scenarios (default 8)\n"
		"  -o, --out DIR         where failing random scenarios are written (default .)\n"
		"  -l, --list            list the scenarios and their device counts, run nothing\n"
		"      --tap             TAP output for CI\n"
		"  -q, --queue-depth D   ops in flight per queue (library default otherwise)\n"
		"  -e, --engines E       engine threads per device\n"
		"  -v, --verbose         print the watchdog report even for expected timeouts\n"
		"  -h, --help            this text\n\n"
		"Output: one line per scenario and device count, then 'X passed, Y failed'.\n"
		"Exit status: 0 if everything passed, 1 if anything failed, 2 on usage errors.\n");
}

static int parse_num(const char *s, long long lo, long long hi, long long *v)
{
	char *end;

	errno = 0;
	*v = strtoll(s, &end, 0);
	return (errno || *end || end == s || *v < lo || *v > hi) ? -1 : 0;
}

/* Run one scenario at @N here: every device in this process, or this rank's part of a world. */
static void parse_failed(struct cli *c, const char *path, const char *err)
{
	struct qt_result r;

	memset(&r, 0, sizeof(r));
	qt_out_detail(&c->out, "%s", err);
	snprintf(r.reason, sizeof(r.reason), "parse error");
	if (c->list) {
		fprintf(c->out.f, "%s: %s\n", path, err);
		c->out.failed++;
		return;
	}
	qt_out_result(&c->out, path, &r);
}

/* A path that names no scenario: one failed result, with the reason. */
static void no_scenarios(struct cli *c, const char *path, const char *err)
{
	struct qt_result r;

	memset(&r, 0, sizeof(r));
	qt_out_detail(&c->out, "%s", err);
	snprintf(r.reason, sizeof(r.reason), "no scenarios");
	if (c->list) {
		fprintf(c->out.f, "%s: %s\n", path, err);
		c->out.failed++;
		return;
	}
	qt_out_result(&c->out, path, &r);
}

static void run_file(struct cli *c, const char *path)
{
	struct qt_scenario *sc;
	char err[512];

	if (qt_parse_file(path, &sc, err, sizeof(err))) {
		parse_failed(c, path, err);
		return;
	}
	qt_run_scenario(c, sc, NULL);
	qt_scenario_free(sc);
}

static int acc_filter(const struct dirent *e)
{
	size_t n = strlen(e->d_name);

	return e->d_name[0] != '.' && n > 4 && strcmp(e->d_name + n - 4, ".acc") == 0;
}

static void run_path(struct cli *c, const char *path)
{
	struct stat st;
	struct dirent **list;
	int n;

	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
		run_file(c, path);
		return;
	}
	n = scandir(path, &list, acc_filter, alphasort);
	if (n < 0) {
		char err[512];

		snprintf(err, sizeof(err), "%s: %s", path, strerror(errno));
		parse_failed(c, path, err);
		return;
	}
	if (n == 0) {
		/* a suite that runs nothing must not pass: a wrong path or an empty checkout */
		char err[512];

		snprintf(err, sizeof(err), "%s: no *.acc files in this directory", path);
		free(list);
		no_scenarios(c, path, err);
		return;
	}
	for (int k = 0; k < n; k++) {
		char *full;
		size_t len = strlen(path) + strlen(list[k]->d_name) + 2;

		full = malloc(len);
		if (full) {
			snprintf(full, len, "%s/%s", path, list[k]->d_name);
			run_file(c, full);
			free(full);
		}
		free(list[k]);
	}
	free(list);
}

static void run_random(struct cli *c)
{
	for (long k = 0; k < c->random; k++) {
		uint64_t seed = c->seed + (uint64_t)k;
		/* a world's ranks generate the scenario for the world's size */
		char *text = qt_random_scenario_n(seed, c->random_devices,
						  c->world ? c->world_devices : 0);
		char name[64], err[512];
		struct qt_scenario *sc;

		if (!text) {
			fprintf(stderr, "queue-tester: out of memory\n");
			return;
		}
		snprintf(name, sizeof(name), "random-%llu", (unsigned long long)seed);
		if (qt_parse(name, text, strlen(text), &sc, err, sizeof(err))) {
			parse_failed(c, name, err);
			free(text);
			continue;
		}
		int failed_before = c->out.failed;

		qt_run_scenario(c, sc, &seed);
		qt_scenario_free(sc);
		if (c->out.failed != failed_before && c->result_fd < 0) {
			char path[4096];
			FILE *f;

			snprintf(path, sizeof(path), "%s/qt-random-%llu.acc", c->outdir,
				 (unsigned long long)seed);
			f = fopen(path, "w");
			if (f && fputs(text, f) >= 0 && fclose(f) == 0)
				qt_out_detail(&c->out, "seed %llu failed; replay: queue-tester %s",
					      (unsigned long long)seed, path);
			else
				qt_out_detail(&c->out, "seed %llu failed; could not write %s: %s",
					      (unsigned long long)seed, path, strerror(errno));
			if (f && ferror(f))
				fclose(f);
		}
		free(text);
	}
}

/*
 * -t shm: under a launcher (RANK and WORLD_SIZE set), this process is one
 * rank of a world: join the other ranks' control channel; only rank 0 prints.
 * Otherwise queue-tester is the launcher: find this program to start it again.
 * Return: 0, or -1 (a message was printed).
 */
static int shm_setup(struct cli *c)
{
	int rank = 0, nprocs = 1, ld = 1, e = qt_ctl_from_env(&rank, &nprocs, &ld);
	char err[512];
	ssize_t n;

	if (e < 0) {
		fprintf(stderr, "queue-tester: RANK/WORLD_SIZE/ACCDMA_LOCAL_DEVICES are not valid "
			"(RANK must be in 0..WORLD_SIZE-1)\n");
		return -1;
	}
	if (e == 0 && c->ro.transport == ACCDMA_TRANSPORT_VERBS) {
		fprintf(stderr, "queue-tester: -t verbs runs one rank per process: start it under a "
			"launcher (accdma-run, torchrun, mpirun, srun)\n");
		return -1;
	}
	if (e == 0) {
		if (c->result_fd >= 0) {
			fprintf(stderr, "queue-tester: --result-fd is for ranks that queue-tester "
				"starts itself\n");
			return -1;
		}
		n = readlink("/proc/self/exe", c->self, sizeof(c->self) - 1);
		if (n <= 0 || (size_t)n >= sizeof(c->self) - 1) {
			fprintf(stderr, "queue-tester: cannot find this program (/proc/self/exe): "
				"start it under accdma-run instead\n");
			return -1;
		}
		c->self[n] = 0;
		c->spawn = 1;
		return 0;
	}
	c->world_devices = nprocs * ld;
	if (c->devices && c->devices != c->world_devices) {
		if (rank == 0)
			fprintf(stderr, "queue-tester: -n %d, but this world has %d devices (%d "
				"processes x %d)\n", c->devices, c->world_devices, nprocs, ld);
		return -1;
	}
	c->world = 1;
	if (rank != 0 || c->result_fd >= 0) {
		/* rank 0 prints (or sends its results to the launcher); the others say nothing */
		c->devnull = fopen("/dev/null", "w");
		if (!c->devnull) {
			fprintf(stderr, "queue-tester: /dev/null: %s\n", strerror(errno));
			return -1;
		}
		c->out.f = c->devnull;
	}
	if (c->list)
		return 0;
	if (qt_ctl_open(&c->ctl, rank, nprocs, ld, 60000, err, sizeof(err))) {
		fprintf(stderr, "queue-tester: rank %d: %s\n", rank, err);
		return -1;
	}
	c->ro.ctl = &c->ctl;
	if (nprocs > 1)
		c->out.rank = rank;
	return 0;
}

/**
 * main() - queue-tester's entry point.
 * @argc/@argv: the command line (see usage()).
 * Return: 0 if every scenario passed, 1 if any failed, 2 on a usage error.
 */
int main(int argc, char **argv)
{
	enum { OPT_TAP = 256, OPT_MAXDEV, OPT_MAXPROCS, OPT_RESULT_FD };
	static const struct option longopts[] = {
		{ "transport", required_argument, NULL, 't' },
		{ "devices", required_argument, NULL, 'n' },
		{ "iterations", required_argument, NULL, 'i' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "seed", required_argument, NULL, 's' },
		{ "random", required_argument, NULL, 'r' },
		{ "max-devices", required_argument, NULL, OPT_MAXDEV },
		{ "out", required_argument, NULL, 'o' },
		{ "list", no_argument, NULL, 'l' },
		{ "tap", no_argument, NULL, OPT_TAP },
		{ "queue-depth", required_argument, NULL, 'q' },
		{ "engines", required_argument, NULL, 'e' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "max-procs", required_argument, NULL, OPT_MAXPROCS },
		/* internal: a rank started by queue-tester's own launcher */
		{ "result-fd", required_argument, NULL, OPT_RESULT_FD },
		{ NULL, 0, NULL, 0 },
	};
	struct cli c;
	long long v;
	int opt;

	memset(&c, 0, sizeof(c));
	c.ro.transport = ACCDMA_TRANSPORT_LOCAL;
	c.ro.timeout_ms = 10000;
	c.ro.out = &c.out;
	c.out.f = stdout;
	c.iterations = 1;
	c.random_devices = 8;
	c.outdir = ".";
	c.out.rank = -1;
	c.result_fd = -1;
	c.max_procs = 64;
	while ((opt = getopt_long(argc, argv, "t:n:i:T:s:r:o:lq:e:vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 't':
			if (strcmp(optarg, "local") == 0)
				c.ro.transport = ACCDMA_TRANSPORT_LOCAL;
			else if (strcmp(optarg, "shm") == 0)
				c.ro.transport = ACCDMA_TRANSPORT_SHM;
			else if (strcmp(optarg, "verbs") == 0)
				c.ro.transport = ACCDMA_TRANSPORT_VERBS;
			else if (strcmp(optarg, "loop") == 0)
				c.ro.transport = ACCDMA_TRANSPORT_LOOP;
			else if (strcmp(optarg, "kmod") == 0)
				c.ro.transport = ACCDMA_TRANSPORT_KMOD;
			else
				goto bad;
			break;
		case 'n':
			if (parse_num(optarg, 1, QT_MAX_DEVICES, &v))
				goto bad;
			c.devices = (int)v;
			break;
		case 'i':
			if (parse_num(optarg, 1, 1000000, &v))
				goto bad;
			c.iterations = (int)v;
			break;
		case 'T':
			if (parse_num(optarg, 1, 3600000, &v))
				goto bad;
			c.ro.timeout_ms = v;
			break;
		case 's': {
			char *end;

			errno = 0;
			c.seed = strtoull(optarg, &end, 0);
			if (errno || *end || end == optarg)
				goto bad;
			c.seed_set = 1;
			break;
		}
		case 'r':
			if (parse_num(optarg, 0, 100000000, &v))
				goto bad;
			c.random = (long)v;
			break;
		case OPT_MAXDEV:
			if (parse_num(optarg, 2, QT_MAX_DEVICES, &v))
				goto bad;
			c.random_devices = (int)v;
			break;
		case 'o':
			c.outdir = optarg;
			break;
		case 'l':
			c.list = 1;
			break;
		case OPT_TAP:
			c.out.tap = 1;
			break;
		case 'q':
			if (parse_num(optarg, 2, 65536, &v))
				goto bad;
			c.ro.queue_depth = (unsigned)v;
			break;
		case 'e':
			if (parse_num(optarg, 1, 16, &v))
				goto bad;
			c.ro.engines = (int)v;
			break;
		case 'v':
			c.out.verbose = 1;
			break;
		case OPT_MAXPROCS:
			if (parse_num(optarg, 1, QT_MAX_DEVICES, &v))
				goto bad;
			c.max_procs = (int)v;
			break;
		case OPT_RESULT_FD:
			if (parse_num(optarg, 3, 1000, &v))
				goto bad;
			c.result_fd = (int)v;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc && !c.random) {
		usage(stderr);
		return 2;
	}
	if (c.random && !c.seed_set)
		c.seed = (uint64_t)time(NULL);
	/* kmod and verbs, like shm: one process per device (or rank) */
	if ((c.ro.transport == ACCDMA_TRANSPORT_SHM || c.ro.transport == ACCDMA_TRANSPORT_VERBS ||
	     c.ro.transport == ACCDMA_TRANSPORT_KMOD) &&
	    shm_setup(&c))
		return c.world ? 1 : 2;
	if (!c.list && c.result_fd < 0)
		qt_out_begin(&c.out);
	if (c.random)
		qt_out_detail(&c.out, "random scenarios: seed %llu, count %ld",
			      (unsigned long long)c.seed, c.random);
	for (int k = optind; k < argc; k++)
		run_path(&c, argv[k]);
	run_random(&c);
	if (c.world && !c.out.tap && c.out.skipped)
		qt_out_detail(&c.out, "skipped %d scenario run(s) for other device counts than this "
			      "world's %d (queue-tester -t shm without a launcher runs them all)",
			      c.out.skipped, c.world_devices);
	if (!c.list && c.result_fd < 0)
		qt_out_summary(&c.out);
	if (c.world && !c.list) {
		/* every rank exits with rank 0's verdict (a launcher reports the first failure);
		 * under queue-tester's own launcher a rank exits 0 once its results are out:
		 * any other status means it crashed or a sanitizer complained */
		int32_t failed = c.out.failed, verdict = 0;
		uint32_t lens[QT_MAX_DEVICES];
		char *all;

		qt_ctl_allgather(&c.ctl, &failed, sizeof(failed), &all, lens);
		if (lens[0] == sizeof(verdict))
			memcpy(&verdict, all, sizeof(verdict));
		free(all);
		qt_ctl_close(&c.ctl);
		if (c.devnull)
			fclose(c.devnull);
		return c.result_fd >= 0 ? 0 : verdict ? 1 : 0;
	}
	return c.out.failed ? 1 : 0;
bad:
	fprintf(stderr, "queue-tester: bad value '%s' for -%c\n", optarg, opt < 256 ? opt : '-');
	usage(stderr);
	return 2;
}
