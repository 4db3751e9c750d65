/* SPDX-License-Identifier: MIT */
/* opts.c - accdma-bw command line. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "bw.h"

static const char *const pattern_names[BW_PAT__COUNT] = {
	[BW_PAT_PAIR] = "pair",         [BW_PAT_BIDIR] = "bidir",
	[BW_PAT_PERMUTE] = "permute",   [BW_PAT_PIPELINE] = "pipeline",
	[BW_PAT_ALLTOALL] = "alltoall", [BW_PAT_CHAIN] = "chain",
	[BW_PAT_PINGPONG] = "pingpong",
};

static const char *const mode_names[BW_MODE__COUNT] = {
	[BW_MODE_CHAIN] = "chain",
	[BW_MODE_FENCE] = "fence",
	[BW_MODE_SYNC] = "sync",
};

const char *bw_pattern_name(enum bw_pattern p)
{
	return (unsigned)p < BW_PAT__COUNT ? pattern_names[p] : "?";
}

const char *bw_mode_name(enum bw_mode m)
{
	return (unsigned)m < BW_MODE__COUNT ? mode_names[m] : "?";
}

const char *bw_transport_name(enum accdma_transport t)
{
	switch (t) {
	case ACCDMA_TRANSPORT_LOCAL: return "local";
	case ACCDMA_TRANSPORT_SHM: return "shm";
	case ACCDMA_TRANSPORT_VERBS: return "verbs";
	case ACCDMA_TRANSPORT_LOOP: return "loop";
	case ACCDMA_TRANSPORT_KMOD: return "kmod";
	}
	return "?";
}

/* Enough iterations to move about 1 GiB per device, within [20, 200000]. */
long bw_auto_iters(const struct bw_opts *o, uint64_t bytes)
{
	long n;

	if (o->iters > 0)
		return o->iters;
	n = (long)((1ull << 30) / (bytes ? bytes : 1));
	if (o->latency)
		n /= 10;
	if (n > 200000)
		n = 200000;
	if (n < 20)
		n = 20;
	return n;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: accdma-bw [options]\n"
		"  -p, --pattern P       pair | bidir | permute | pipeline | alltoall | chain | pingpong\n"
		"                        (default permute)\n"
		"                        chain: 0 -> 1 -> ... -> N-1 with recv -> exec -> send per stage\n"
		"                        pingpong: 0 -> 1 -> 0, 1 sending back what it received once its\n"
		"                        recv is done (a token dependency, no host wait): with -l, a round\n"
		"                        trip, as perftest's _lat tools time one\n"
		"  -b, --min-bytes N     first message size (default 8; K/M/G suffixes)\n"
		"  -e, --max-bytes N     last message size (default 16M)\n"
		"  -f, --factor F        size step factor (default 2)\n"
		"  -a, --all             sweep 8 .. 16M by 2 (the default sweep)\n"
		"  -s, --size N          a single size (sets first = last = N)\n"
		"  -n, --iters N         timed iterations per size (default: ~1 GiB per device, 20..200000)\n"
		"  -w, --warmup N        warm-up iterations (default iters/10, at most 2000)\n"
		"  -d, --devices N       devices (default 2; shm: the world size, e.g. from accdma-run)\n"
		"  -t, --transport T     local | shm | verbs | kmod | loop (default: ACCDMA_TRANSPORT, else\n"
		"                        local: all devices in this process). loop: as local, each device\n"
		"                        a host of its own, joined by messages. shm, verbs, kmod:\n"
		"                        accdma-run -n N -- accdma-bw ...; every rank\n"
		"                        drives its own devices, rank 0 prints\n"
		"  -E, --engines N       engine threads per device; 0: polled devices, the waiting\n"
		"                        host thread does all the work (default: library default)\n"
		"  -Q, --queue-depth N   queue depth (default: enough for the window, at least 256)\n"
		"  -W, --window N        ops in flight per device (default 64)\n"
		"  -P, --post-list N     iterations posted per doorbell (default 1)\n"
		"  -m, --mode M          chain | fence | sync | both | all (default both: chain and fence;\n"
		"                        all: the three)\n"
		"                        chain: token dependencies only; every device posts its sends\n"
		"                        first (the same program on every device)\n"
		"                        fence: a device-side fence after every send and recv, posted\n"
		"                        without the host waiting; exchanges ordered even/odd\n"
		"                        sync: the same ops, and the host waits on each fence before it\n"
		"                        posts more on that device (the old full-sync workaround);\n"
		"                        one iteration in flight, --window and --post-list do not apply\n"
		"  -l, --latency         one iteration in flight; report the mean, p50, p99, p99.9 and max of a round\n"
		"  -r, --runs N          repeat every size N times and report the median (default 3)\n"
		"      --no-verify       do not check the data of the last iteration\n"
		"      --no-memcpy       skip the memcpy reference column\n"
		"      --buf-budget N    bytes per device buffer; caps in-flight iterations for big sizes (default 64M)\n"
		"      --timeout-ms N    wait timeout before the stuck ops are reported (default 30000)\n"
		"      --csv | --json    output format (default: a table)\n"
		"      --progress | --no-progress  progress line on stderr (default: when stderr is a terminal)\n"
		"  -h, --help\n");
}

static int bw_parse_size(const char *s, uint64_t *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -1;
	switch (*end) {
	case 'k': case 'K': v *= 1024; end++; break;
	case 'm': case 'M': v *= 1024 * 1024; end++; break;
	case 'g': case 'G': v *= 1024.0 * 1024 * 1024; end++; break;
	default: break;
	}
	if (*end == 'i' || *end == 'B' || *end == 'b')
		end++;
	if (*end == 'B')
		end++;
	if (*end)
		return -1;
	*out = (uint64_t)v;
	return 0;
}

static int parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

enum {
	OPT_NO_VERIFY = 256, OPT_NO_MEMCPY, OPT_BUDGET, OPT_TIMEOUT, OPT_CSV, OPT_JSON,
	OPT_PROGRESS, OPT_NO_PROGRESS,
};

/* bw_opts_parse() - fill @o from the command line. 0, 1 for --help, -1 on error. */
int bw_opts_parse(struct bw_opts *o, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "pattern", required_argument, 0, 'p' },
		{ "min-bytes", required_argument, 0, 'b' },
		{ "max-bytes", required_argument, 0, 'e' },
		{ "factor", required_argument, 0, 'f' },
		{ "all", no_argument, 0, 'a' },
		{ "size", required_argument, 0, 's' },
		{ "iters", required_argument, 0, 'n' },
		{ "warmup", required_argument, 0, 'w' },
		{ "devices", required_argument, 0, 'd' },
		{ "transport", required_argument, 0, 't' },
		{ "engines", required_argument, 0, 'E' },
		{ "queue-depth", required_argument, 0, 'Q' },
		{ "window", required_argument, 0, 'W' },
		{ "post-list", required_argument, 0, 'P' },
		{ "mode", required_argument, 0, 'm' },
		{ "latency", no_argument, 0, 'l' },
		{ "runs", required_argument, 0, 'r' },
		{ "no-verify", no_argument, 0, OPT_NO_VERIFY },
		{ "no-memcpy", no_argument, 0, OPT_NO_MEMCPY },
		{ "buf-budget", required_argument, 0, OPT_BUDGET },
		{ "timeout-ms", required_argument, 0, OPT_TIMEOUT },
		{ "csv", no_argument, 0, OPT_CSV },
		{ "json", no_argument, 0, OPT_JSON },
		{ "progress", no_argument, 0, OPT_PROGRESS },
		{ "no-progress", no_argument, 0, OPT_NO_PROGRESS },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	long v;
	int c, i;

	memset(o, 0, sizeof(*o));
	o->engines = -1; /* the library's default */
	o->pattern = BW_PAT_PERMUTE;
	o->min_bytes = 8;
	o->max_bytes = 16u << 20;
	o->factor = 2.0;
	o->warmup = -1;
	o->devices = 2;
	o->transport = ACCDMA_TRANSPORT_LOCAL;
	o->window = 64;
	o->post_list = 1;
	o->modes = (1u << BW_MODE_CHAIN) | (1u << BW_MODE_FENCE);
	o->runs = 3;
	o->verify = 1;
	o->memcpy_ref = 1;
	o->buf_budget = 64u << 20;
	o->timeout_ms = 30000;
	o->progress = -1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "p:b:e:f:as:n:w:d:t:E:Q:W:P:m:lr:h", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			for (i = 0; i < BW_PAT__COUNT; i++)
				if (!strcasecmp(optarg, pattern_names[i]))
					break;
			if (i == BW_PAT__COUNT) {
				fprintf(stderr, "accdma-bw: unknown pattern '%s'\n", optarg);
				return -1;
			}
			o->pattern = (enum bw_pattern)i;
			break;
		case 'b':
			if (bw_parse_size(optarg, &o->min_bytes) || !o->min_bytes)
				goto bad;
			break;
		case 'e':
			if (bw_parse_size(optarg, &o->max_bytes) || !o->max_bytes)
				goto bad;
			break;
		case 's':
			if (bw_parse_size(optarg, &o->min_bytes) || !o->min_bytes)
				goto bad;
			o->max_bytes = o->min_bytes;
			break;
		case 'a':
			o->min_bytes = 8;
			o->max_bytes = 16u << 20;
			o->factor = 2.0;
			break;
		case 'f': {
			char *end;
			o->factor = strtod(optarg, &end);
			if (*end || !(o->factor > 1.0))
				goto bad;
			break;
		}
		case 'n':
			if (parse_long(optarg, 1, 1L << 40, &o->iters))
				goto bad;
			break;
		case 'w':
			if (parse_long(optarg, 0, 1L << 40, &o->warmup))
				goto bad;
			break;
		case 'd':
			if (parse_long(optarg, 1, 1024, &v))
				goto bad;
			o->devices = (int)v;
			o->devices_set = 1;
			break;
		case 't':
			if (!strcasecmp(optarg, "local"))
				o->transport = ACCDMA_TRANSPORT_LOCAL;
			else if (!strcasecmp(optarg, "shm"))
				o->transport = ACCDMA_TRANSPORT_SHM;
			else if (!strcasecmp(optarg, "loop"))
				o->transport = ACCDMA_TRANSPORT_LOOP;
			else if (!strcasecmp(optarg, "verbs"))
				o->transport = ACCDMA_TRANSPORT_VERBS;
			else if (!strcasecmp(optarg, "kmod"))
				o->transport = ACCDMA_TRANSPORT_KMOD;
			else
				goto bad;
			o->transport_set = 1;
			break;
		case 'E':
			if (parse_long(optarg, 0, 16, &v))
				goto bad;
			o->engines = (int)v;
			break;
		case 'Q':
			if (parse_long(optarg, 2, 65536, &v) || (v & (v - 1)))
				goto bad;
			o->queue_depth = (int)v;
			break;
		case 'W':
			if (parse_long(optarg, 1, 16384, &v))
				goto bad;
			o->window = (int)v;
			break;
		case 'P':
			if (parse_long(optarg, 1, 4096, &v))
				goto bad;
			o->post_list = (int)v;
			break;
		case 'm':
			if (!strcasecmp(optarg, "chain"))
				o->modes = 1u << BW_MODE_CHAIN;
			else if (!strcasecmp(optarg, "fence"))
				o->modes = 1u << BW_MODE_FENCE;
			else if (!strcasecmp(optarg, "sync"))
				o->modes = 1u << BW_MODE_SYNC;
			else if (!strcasecmp(optarg, "both"))
				o->modes = (1u << BW_MODE_CHAIN) | (1u << BW_MODE_FENCE);
			else if (!strcasecmp(optarg, "all"))
				o->modes = (1u << BW_MODE__COUNT) - 1;
			else
				goto bad;
			break;
		case 'l':
			o->latency = 1;
			break;
		case 'r':
			if (parse_long(optarg, 1, 1000, &v))
				goto bad;
			o->runs = (int)v;
			break;
		case OPT_NO_VERIFY: o->verify = 0; break;
		case OPT_NO_MEMCPY: o->memcpy_ref = 0; break;
		case OPT_BUDGET:
			if (bw_parse_size(optarg, &o->buf_budget) || !o->buf_budget)
				goto bad;
			break;
		case OPT_TIMEOUT:
			if (parse_long(optarg, 1, 1L << 40, &v))
				goto bad;
			o->timeout_ms = v;
			break;
		case OPT_CSV: o->format = BW_FMT_CSV; break;
		case OPT_JSON: o->format = BW_FMT_JSON; break;
		case OPT_PROGRESS: o->progress = 1; break;
		case OPT_NO_PROGRESS: o->progress = 0; break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "accdma-bw: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (o->min_bytes > o->max_bytes) {
		fprintf(stderr, "accdma-bw: --min-bytes is larger than --max-bytes\n");
		return -1;
	}
	if (o->latency)
		o->memcpy_ref = 0; /* the latency table has no memcpy column */
	if (o->progress < 0)
		o->progress = isatty(STDERR_FILENO);
	return 0;
bad:
	fprintf(stderr, "accdma-bw: bad value '%s' for -%c\n", optarg, c < 256 ? c : '-');
	usage(stderr);
	return -1;
}
