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

#include "qt_parse.h"
#include "qt_random.h"
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
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: queue-tester [options] FILE|DIR...\n"
		"Runs accdma scenarios (docs/scenarios.md) and checks every byte.\n"
		"A DIR runs every *.acc file in it, in name order.\n\n"
		"  -t, --transport T     local (default) or shm\n"
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

static void run_scenario(struct cli *c, const struct qt_scenario *sc)
{
	int counts[QT_MAX_SWEEP], n = 0;

	if (c->devices) {
		counts[n++] = c->devices;
	} else {
		for (int k = 0; k < sc->ndevices; k++)
			counts[n++] = sc->devices[k];
	}
	for (int k = 0; k < n; k++) {
		struct qt_result r;

		if (c->list) {
			fprintf(c->out.f, "%s N=%d (%s)\n", sc->name, counts[k], sc->file);
			continue;
		}
		memset(&r, 0, sizeof(r));
		int pass = 1;

		for (int it = 0; it < c->iterations; it++) {
			struct qt_result one;

			memset(&one, 0, sizeof(one));
			one.ops = r.ops;
			one.bytes = r.bytes;
			one.ms = r.ms;
			if (qt_run(sc, counts[k], &c->ro, &one) && pass) {
				pass = 0;
				snprintf(r.reason, sizeof(r.reason), "%s%s", c->iterations > 1 ?
					 "" : "", one.reason);
				if (c->iterations > 1)
					qt_out_detail(&c->out, "iteration %d of %d failed", it + 1,
						      c->iterations);
			}
			r.ops = one.ops;
			r.bytes = one.bytes;
			r.ms = one.ms;
			if (!pass)
				break;
		}
		r.N = counts[k];
		r.pass = pass;
		qt_out_result(&c->out, sc->name, &r);
	}
}

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

static void run_file(struct cli *c, const char *path)
{
	struct qt_scenario *sc;
	char err[512];

	if (qt_parse_file(path, &sc, err, sizeof(err))) {
		parse_failed(c, path, err);
		return;
	}
	run_scenario(c, sc);
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
	if (n == 0)
		qt_out_detail(&c->out, "%s: no *.acc files", path);
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
		char *text = qt_random_scenario(seed, c->random_devices);
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

		run_scenario(c, sc);
		qt_scenario_free(sc);
		if (c->out.failed != failed_before) {
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

/**
 * main() - queue-tester's entry point.
 * @argc/@argv: the command line (see usage()).
 * Return: 0 if every scenario passed, 1 if any failed, 2 on a usage error.
 */
int main(int argc, char **argv)
{
	enum { OPT_TAP = 256, OPT_MAXDEV };
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
	while ((opt = getopt_long(argc, argv, "t:n:i:T:s:r:o:lq:e:vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 't':
			if (strcmp(optarg, "local") == 0)
				c.ro.transport = ACCDMA_TRANSPORT_LOCAL;
			else if (strcmp(optarg, "shm") == 0)
				c.ro.transport = ACCDMA_TRANSPORT_SHM;
			else if (strcmp(optarg, "verbs") == 0)
				c.ro.transport = ACCDMA_TRANSPORT_VERBS;
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
	if (!c.list)
		qt_out_begin(&c.out);
	if (c.random)
		qt_out_detail(&c.out, "random scenarios: seed %llu, count %ld",
			      (unsigned long long)c.seed, c.random);
	for (int k = optind; k < argc; k++)
		run_path(&c, argv[k]);
	run_random(&c);
	if (!c.list)
		qt_out_summary(&c.out);
	return c.out.failed ? 1 : 0;
bad:
	fprintf(stderr, "queue-tester: bad value '%s' for -%c\n", optarg, opt < 256 ? opt : '-');
	usage(stderr);
	return 2;
}
