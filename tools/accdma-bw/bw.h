/* SPDX-License-Identifier: MIT */
/*
 * bw.h - accdma-bw, the throughput tool: shared types between its parts.
 *
 *   opts.c     command line
 *   pattern.c  which ops each device posts per iteration, expected data
 *   run.c      posting loop with a window of iterations in flight (sync mode: the host
 *              waits on every fence), timing
 *   stats.c    clock, medians, percentiles
 *   memref.c   memcpy reference with as many threads as concurrent transfers
 *   output.c   header block, text table, CSV, JSON, progress line
 *   main.c     the sweep
 *
 * Uses only the public API (accdma.h).
 */
#ifndef ACCDMA_BW_H
#define ACCDMA_BW_H

#include <stdint.h>
#include <stdio.h>

#include "accdma.h"

enum bw_pattern {
	BW_PAT_PAIR = 0, /* dev 0 -> dev 1 */
	BW_PAT_BIDIR,    /* dev 0 <-> dev 1 */
	BW_PAT_PERMUTE,  /* ring: every device sends to next, receives from previous */
	BW_PAT_PIPELINE, /* i < N/2 sends to i + N/2 */
	BW_PAT_ALLTOALL, /* everyone to everyone (pairwise exchange) */
	BW_PAT_CHAIN,    /* 0 -> 1 -> ... -> N-1, recv -> exec -> send on every middle stage */
	BW_PAT_PINGPONG, /* dev 0 -> dev 1 -> dev 0: 1's send waits on its recv's token */
	BW_PAT__COUNT
};

enum bw_mode {
	BW_MODE_CHAIN = 0, /* token dependencies only */
	BW_MODE_FENCE,     /* a fence after every send and every recv; the host does not wait on it */
	BW_MODE_SYNC,      /* fence mode's ops, and the host waits on every fence before it posts
			    * more on that device (the old workaround: a full sync, graph break,
			    * after each send and each recv); one iteration in flight */
	BW_MODE__COUNT
};

enum bw_format { BW_FMT_TEXT = 0, BW_FMT_CSV, BW_FMT_JSON };

/* struct bw_opts - everything the command line sets. */
struct bw_opts {
	enum bw_pattern pattern;
	uint64_t min_bytes, max_bytes;
	double factor;
	long iters;       /* 0: automatic, by size */
	long warmup;      /* -1: automatic */
	int devices;
	int engines;      /* 0: library default */
	int queue_depth;  /* 0: automatic (large enough for the window) */
	enum accdma_transport transport;
	int window;       /* ops in flight per device */
	int post_list;    /* iterations posted per doorbell */
	unsigned modes;   /* bit (1 << enum bw_mode) */
	int latency;      /* one iteration in flight, per-iteration p50/p99 */
	int runs;         /* repetitions per size; the median is reported */
	int verify;
	int memcpy_ref;
	enum bw_format format;
	uint64_t buf_budget; /* bytes per device buffer; caps the window for big sizes */
	int64_t timeout_ms;
	int progress;     /* -1 auto (stderr is a terminal), 0 off, 1 on */
	int transport_set, devices_set; /* given on the command line (else: environment) */
};

/* opts.c */
int bw_opts_parse(struct bw_opts *o, int argc, char **argv);
const char *bw_pattern_name(enum bw_pattern p);
const char *bw_mode_name(enum bw_mode m);
const char *bw_transport_name(enum accdma_transport t);
long bw_auto_iters(const struct bw_opts *o, uint64_t bytes);

/* pattern.c ---------------------------------------------------------- */

/* Where an op's local range lives. */
enum bw_buf { BW_BUF_NONE = 0, BW_BUF_SRC, BW_BUF_DST };

/* struct bw_opdesc - one op a device posts per iteration. */
struct bw_opdesc {
	enum accdma_op_kind kind; /* SEND, RECV, EXEC or FENCE */
	int peer;
	enum bw_buf buf;          /* SEND: SRC or DST (forwarding); RECV: DST; EXEC: DST */
	int sub;                  /* sub-buffer of a DST slot (one per receive) */
	int dep;                  /* chain mode: index of an earlier op of the iteration, or -1 */
};

/* struct bw_devplan - one device's ops per iteration, for one mode. */
struct bw_devplan {
	int nops;        /* including fences */
	int nxfer;       /* send + recv + exec ops: what the window counts */
	int nsub;        /* DST sub-buffers per slot (receives per iteration) */
	struct bw_opdesc *ops;
};

/* struct bw_plan - the whole pattern, for one mode. */
struct bw_plan {
	int ndev;
	enum bw_mode mode;
	struct bw_devplan *dev;
	int sends;        /* sends per iteration, all devices: concurrent transfers */
	int senders;      /* devices that send */
	int max_nxfer;    /* max nxfer over devices */
	int max_nops;
	int max_nsub;
};

int bw_plan_build(struct bw_plan *p, enum bw_pattern pat, enum bw_mode mode, int ndev,
		  char *err, size_t errlen);
void bw_plan_free(struct bw_plan *p);
/* Pattern byte @i of device @dev's source for data generation @seed. */
static inline uint8_t bw_pattern_byte(int dev, unsigned seed, uint64_t i)
{
	uint32_t x = (uint32_t)(i * 2654435761u) >> 11;
	return (uint8_t)(x ^ (uint32_t)(dev * 37 + seed * 101 + 1) ^ (uint32_t)(i >> 8));
}
void bw_pattern_fill(uint8_t *buf, uint64_t len, int dev, unsigned seed);
/* Check a received range; returns -1 if good, else the first bad byte's index. */
int64_t bw_pattern_check(const struct bw_plan *p, enum bw_pattern pat, int dev,
			 const struct bw_opdesc *recv, const uint8_t *buf, uint64_t len,
			 unsigned seed, uint8_t *got, uint8_t *want);
/* The exec kernel: increments the first byte of the received message. */
int bw_exec_kernel(void *arg);

/* run.c --------------------------------------------------------------- */

/* struct bw_sample - one measured run of one mode at one size. */
struct bw_sample {
	double secs;      /* timed iterations only */
	long iters;
	double p50_us, p99_us; /* latency mode */
	double p999_us, max_us; /* latency mode: the tail beyond p99 (p99.9, the longest round) */
	int verified;     /* 1 checked and good, 0 not checked */
};

struct bw_ctx;
/* Allocate regions and state for @bytes with @plan; @win_iters in flight per device. */
int bw_ctx_create(struct bw_ctx **ctx, accdma_world *w, const struct bw_opts *o,
		  const struct bw_plan *plan, uint64_t bytes, int win_iters, int slots);
void bw_ctx_destroy(struct bw_ctx *ctx);
/* Warm up, run @iters timed iterations, verify the last. 0, or -1 with a message on stderr. */
int bw_ctx_run(struct bw_ctx *ctx, long warmup, long iters, struct bw_sample *out);
uint64_t bw_footprint(const struct bw_plan *plan, uint64_t bytes, int slots);
/* shm: a barrier across every process (no-op when this process drives every device). */
int bw_sync_ranks(accdma_world *w, int64_t timeout_ms);

/* stats.c ------------------------------------------------------------- */
double bw_now(void);
/* A cheap monotonic tick for per-iteration times (its rate: measure it
 * against bw_now() over the same interval). */
uint64_t bw_ticks(void);
double bw_median(double *v, int n);          /* sorts v */
void bw_sort(double *v, long n);
double bw_percentile(const double *v, long n, double pct); /* v sorted ascending */

/* memref.c ------------------------------------------------------------ */
/* Per-thread memcpy GB/s with @threads threads, each copying @bytes over @slots slots, @iters times. */
double bw_memcpy_ref(int threads, uint64_t bytes, int slots, long iters);

/* output.c ------------------------------------------------------------ */

struct bw_result {
	enum bw_mode mode;
	uint64_t bytes;
	long iters;
	int win_ops, win_iters;
	int runs;
	double secs;       /* median */
	double bw_dev;     /* GB/s per sending device, median */
	double bw_dev_min, bw_dev_max;
	double bw_agg;     /* GB/s, all devices */
	double mops;       /* transfers (send+recv pairs) per second, all devices, millions */
	double memcpy_gbs; /* per thread, NAN if not measured */
	double pct_memcpy;
	double p50_us, p99_us; /* latency mode, else NAN */
	double p999_us, max_us; /* latency mode (median over runs of each run's), else NAN */
	double mean_us;    /* latency mode: time / rounds of a loop with no clock reads (as peers report), else NAN */
	int verified;
};

struct bw_header {
	const struct bw_opts *o;
	accdma_world *w;
	int engines;
	int queue_depth;
	int concurrent;
	int senders;
	const int *numa; /* per device, -1: unknown (bw_numa_nodes) */
};

int bw_numa_nodes(accdma_world *w, int *numa, int64_t timeout_ms);
void bw_out_begin(const struct bw_header *h);
void bw_out_result(const struct bw_header *h, const struct bw_result *r);
void bw_out_end(const struct bw_header *h);
void bw_progress(const struct bw_opts *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void bw_progress_clear(const struct bw_opts *o);
void bw_fmt_bytes(char *buf, size_t len, uint64_t bytes);

#endif /* ACCDMA_BW_H */
