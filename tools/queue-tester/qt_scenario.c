/* SPDX-License-Identifier: MIT */
/*
 * qt_scenario.c - queue-tester: one scenario at each of its device counts,
 * run in this process (alone, or as a rank of a world whose ranks send
 * their results to rank 0), or as ranks of a world that queue-tester's own
 * launcher starts, whose rank 0 sends the merged result back.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qt_cli.h"

/*
 * The result of one scenario (one device count, all iterations) on one
 * process, as ranks send it to rank 0, and as rank 0 of a world started by
 * queue-tester's own launcher sends the merged one to the launcher: this
 * header, then the detail lines (already formatted).
 */
struct wire {
	int32_t pass;
	int32_t N;
	uint64_t ops;
	uint64_t bytes;
	double ms;
	char reason[512];
	uint32_t textlen;
};

static void run_here(struct cli *c, const struct qt_scenario *sc, int N)
{
	struct qt_result r;
	FILE *saved = c->out.f, *mem = NULL;
	char *text = NULL;
	size_t tlen = 0;
	int pass = 1;

	memset(&r, 0, sizeof(r));
	if (c->world) {
		/* this rank's detail lines go to rank 0 with its result */
		mem = open_memstream(&text, &tlen);
		if (!mem) {
			fprintf(stderr, "queue-tester: out of memory\n");
			exit(1);
		}
		c->out.f = mem;
	}
	for (int it = 0; it < c->iterations; it++) {
		struct qt_result one;
		int ret;

		memset(&one, 0, sizeof(one));
		one.ops = r.ops;
		one.bytes = r.bytes;
		one.ms = r.ms;
		ret = qt_run(sc, N, &c->ro, &one);
		if (!one.pass && pass) {
			pass = 0;
			snprintf(r.reason, sizeof(r.reason), "%s", one.reason);
			if (c->iterations > 1)
				qt_out_detail(&c->out, "iteration %d of %d failed", it + 1,
					      c->iterations);
		}
		r.ops = one.ops;
		r.bytes = one.bytes;
		r.ms = one.ms;
		if (ret) /* failed here or on another rank: every rank stops */
			break;
	}
	r.N = N;
	r.pass = pass;
	if (!c->world) {
		qt_out_result(&c->out, sc->name, &r);
		return;
	}
	fclose(mem);
	c->out.f = saved;

	/* rank 0 merges: passed everywhere, ops and bytes summed, the slowest time,
	 * the first failing rank's reason, every rank's details in rank order */
	struct wire w, m;
	uint32_t lens[QT_MAX_DEVICES];
	char *blob = malloc(sizeof(w) + tlen), *all, *p, *merged;
	size_t mlen = 0;

	if (!blob) {
		fprintf(stderr, "queue-tester: out of memory\n");
		exit(1);
	}
	memset(&w, 0, sizeof(w));
	w.pass = r.pass;
	w.N = N;
	w.ops = r.ops;
	w.bytes = r.bytes;
	w.ms = r.ms;
	memcpy(w.reason, r.reason, sizeof(w.reason));
	w.reason[sizeof(w.reason) - 1] = 0;
	w.textlen = (uint32_t)tlen;
	memcpy(blob, &w, sizeof(w));
	memcpy(blob + sizeof(w), text, tlen);
	free(text);
	qt_ctl_allgather(&c->ctl, blob, (uint32_t)(sizeof(w) + tlen), &all, lens);
	free(blob);
	if (c->ctl.rank != 0) {
		free(all);
		return;
	}
	memset(&m, 0, sizeof(m));
	m.pass = 1;
	m.N = N;
	merged = malloc(sizeof(m));
	p = all;
	for (int q = 0; q < c->ctl.nprocs; q++) {
		struct wire h;

		if (lens[q] < sizeof(h)) {
			m.pass = 0;
			continue;
		}
		memcpy(&h, p, sizeof(h));
		if (h.textlen != lens[q] - sizeof(h))
			h.textlen = 0;
		if (!h.pass && m.pass)
			memcpy(m.reason, h.reason, sizeof(m.reason));
		m.pass &= h.pass != 0;
		m.ops += h.ops;
		m.bytes += h.bytes;
		if (h.ms > m.ms)
			m.ms = h.ms;
		char *nm = realloc(merged, sizeof(m) + mlen + h.textlen);

		if (!nm) {
			fprintf(stderr, "queue-tester: out of memory\n");
			exit(1);
		}
		merged = nm;
		memcpy(merged + sizeof(m) + mlen, p + sizeof(h), h.textlen);
		mlen += h.textlen;
		p += lens[q];
	}
	free(all);
	m.reason[sizeof(m.reason) - 1] = 0;
	m.textlen = (uint32_t)mlen;
	if (c->result_fd >= 0) {
		/* started by queue-tester's launcher: it prints */
		size_t len = sizeof(m) + mlen, off = 0;

		memcpy(merged, &m, sizeof(m));
		while (off < len) {
			ssize_t n = write(c->result_fd, merged + off, len - off);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			off += (size_t)n;
		}
	} else {
		fwrite(merged + sizeof(m), 1, mlen, c->out.f);
		memset(&r, 0, sizeof(r));
		r.pass = m.pass;
		r.N = N;
		r.ops = m.ops;
		r.bytes = m.bytes;
		r.ms = m.ms;
		memcpy(r.reason, m.reason, sizeof(r.reason));
		qt_out_result(&c->out, sc->name, &r);
	}
	free(merged);
}

/* -t shm without a launcher: run the scenario at @N as N processes of queue-tester. */
static void run_spawned(struct cli *c, const struct qt_scenario *sc, int N, const uint64_t *seed)
{
	char nbuf[16], ibuf[16], tbuf[32], qbuf[16], ebuf[16], sbuf[32], mbuf[16];
	char *argv[32];
	struct qt_spawn_res res;
	struct qt_result r;
	struct wire w;
	int a = 0, good = 0, rc;

	snprintf(nbuf, sizeof(nbuf), "%d", N);
	snprintf(ibuf, sizeof(ibuf), "%d", c->iterations);
	snprintf(tbuf, sizeof(tbuf), "%lld", (long long)c->ro.timeout_ms);
	argv[a++] = c->self;
	argv[a++] = "--result-fd";
	argv[a++] = "3";
	argv[a++] = "-t";
	argv[a++] = c->ro.transport == ACCDMA_TRANSPORT_KMOD ? "kmod" : "shm";
	argv[a++] = "-n";
	argv[a++] = nbuf;
	argv[a++] = "-i";
	argv[a++] = ibuf;
	argv[a++] = "-T";
	argv[a++] = tbuf;
	if (c->ro.queue_depth) {
		snprintf(qbuf, sizeof(qbuf), "%u", c->ro.queue_depth);
		argv[a++] = "-q";
		argv[a++] = qbuf;
	}
	if (c->ro.engines) {
		snprintf(ebuf, sizeof(ebuf), "%d", c->ro.engines);
		argv[a++] = "-e";
		argv[a++] = ebuf;
	}
	if (c->out.verbose)
		argv[a++] = "-v";
	if (c->out.tap)
		argv[a++] = "--tap";
	if (seed) {
		snprintf(sbuf, sizeof(sbuf), "%llu", (unsigned long long)*seed);
		snprintf(mbuf, sizeof(mbuf), "%d", c->random_devices);
		argv[a++] = "-r";
		argv[a++] = "1";
		argv[a++] = "-s";
		argv[a++] = sbuf;
		argv[a++] = "--max-devices";
		argv[a++] = mbuf;
	} else {
		argv[a++] = "--";
		argv[a++] = (char *)sc->file;
	}
	argv[a] = NULL;

	memset(&r, 0, sizeof(r));
	r.N = N;
	rc = qt_spawn(c->self, argv, N, 3, &res);
	if (rc < 0) {
		snprintf(r.reason, sizeof(r.reason), "cannot start %d processes: %s", N,
			 strerror(-rc));
		qt_out_detail(&c->out, "%s", r.reason);
		qt_out_result(&c->out, sc->name, &r);
		return;
	}
	if (res.len >= sizeof(w)) {
		memcpy(&w, res.blob, sizeof(w));
		good = w.N == N && w.textlen == res.len - sizeof(w);
	}
	if (good) {
		fwrite(res.blob + sizeof(w), 1, w.textlen, c->out.f);
		r.pass = w.pass != 0;
		r.ops = w.ops;
		r.bytes = w.bytes;
		r.ms = w.ms;
		w.reason[sizeof(w.reason) - 1] = 0;
		memcpy(r.reason, w.reason, sizeof(r.reason));
	}
	if (res.failed_rank >= 0 || !good) {
		char why[200];

		if (res.failed_rank < 0)
			snprintf(why, sizeof(why), "rank 0 sent no result");
		else if (res.status > 128)
			snprintf(why, sizeof(why), "rank %d was killed by signal %d%s", res.failed_rank,
				 res.status - 128, good ? " after the run" : "");
		else
			snprintf(why, sizeof(why), "rank %d exited with status %d%s%s", res.failed_rank,
				 res.status, good ? " after the run" : "",
				 " (see its messages on stderr)");
		qt_out_detail(&c->out, "%s", why);
		if (r.pass || !good)
			snprintf(r.reason, sizeof(r.reason), "%s", why);
		r.pass = 0;
	}
	free(res.blob);
	qt_out_result(&c->out, sc->name, &r);
}

/* @seed: the random scenario's seed (NULL: a file). */
/**
 * qt_run_scenario() - run scenario @sc at each of its device counts (or
 * --devices), as this process, a rank of a world, or ranks spawned by
 * queue-tester's own launcher, and report a line per count.
 * @c: the command line. @sc: the scenario. @seed: a random scenario's seed, or NULL.
 */
void qt_run_scenario(struct cli *c, const struct qt_scenario *sc, const uint64_t *seed)
{
	int counts[QT_MAX_SWEEP], n = 0;

	if (c->devices) {
		counts[n++] = c->devices;
	} else {
		for (int k = 0; k < sc->ndevices; k++)
			counts[n++] = sc->devices[k];
	}
	for (int k = 0; k < n; k++) {
		char why[160];

		if (c->list) {
			fprintf(c->out.f, "%s N=%d (%s)\n", sc->name, counts[k], sc->file);
			continue;
		}
		if (c->world && counts[k] != c->world_devices) {
			/* a world runs the device counts of its size: one line per skip
			 * for TAP, a count before the summary otherwise */
			snprintf(why, sizeof(why), "(this world has %d devices)", c->world_devices);
			if (c->out.tap)
				qt_out_skip(&c->out, sc->name, counts[k], why);
			else
				c->out.skipped++;
			continue;
		}
		if (c->spawn && counts[k] > c->max_procs) {
			snprintf(why, sizeof(why), "(%d processes: more than --max-procs %d)",
				 counts[k], c->max_procs);
			qt_out_skip(&c->out, sc->name, counts[k], why);
			continue;
		}
		if (c->spawn)
			run_spawned(c, sc, counts[k], seed);
		else
			run_here(c, sc, counts[k]);
	}
}
