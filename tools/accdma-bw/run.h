/* SPDX-License-Identifier: MIT */
/*
 * run.h - accdma-bw's run context, shared by the posting loops (run.c), sync
 * mode (sync.c) and the context's setup (ctx.c); private to those files.
 */
#ifndef ACCDMA_BW_RUN_H
#define ACCDMA_BW_RUN_H

#include "bw.h"

#define BW_TAG 0x42

struct bw_devstate {
	accdma_queue *q;
	const struct bw_devplan *dp;
	accdma_key src_key, dst_key;
	uint8_t *src, *dst;
	accdma_token *tok;         /* win * dp->nops, dense */
	int *ntok;                 /* per slot: tokens posted so far */
	struct accdma_op *tmpl;     /* per slot and op: the op, built once (deps set at post) */
	enum accdma_status *st;    /* win * nops */
	long tail, head;           /* iterations [tail, head) in flight */
	int nodeps;                /* no op depends on another: posted straight from tmpl */
	/* sync mode */
	int pc;                    /* next op of the current iteration */
	int fence_j;               /* the op (and token) index of the fence it is blocked on, or -1 */
	int busy;                  /* not yet through the current iteration */
};

struct bw_ctx {
	accdma_world *w;
	const struct bw_opts *o;
	const struct bw_plan *plan;
	uint64_t bytes, stride;
	int win, ndev, nops;
	int win_pow2;               /* window slots by mask, not division */
	unsigned seed;
	struct bw_devstate *dev;
	/* one doorbell's worth of ops */
	int cap, nb;
	struct accdma_op *ops;
	accdma_token *out, *deps;
	int *slot_of;
	long first_iter;           /* first iteration of the current post_iters call */
	int *active, nactive;      /* the devices with ops in this process */
	int all_direct;            /* every one of them posts straight from its templates */
	double excluded;
	double *lat;
	long nlat;
	/* sync mode: the blocked fences and their devices */
	accdma_token *anyv;
	int *anyd;
};

/* Window slot of iteration @k (a mask for the usual power-of-two window: two
 * divisions per iteration and device are on the posting path otherwise). */
static inline int slot_of(const struct bw_ctx *c, long k)
{
	return c->win_pow2 ? (int)(k & (c->win - 1)) : (int)(k % c->win);
}

/* A slot's size: @bytes rounded up to a cache line. */
static inline uint64_t stride_of(uint64_t bytes)
{
	return (bytes + 63) & ~(uint64_t)63;
}

/* Where sub-buffer @sub of window slot @slot starts in a device's destination. */
static inline uint64_t dst_off(const struct bw_ctx *c, int slot, int sub)
{
	return ((uint64_t)slot * (uint64_t)c->plan->max_nsub + (uint64_t)sub) * c->stride;
}

/* run.c */
/* Say that op @j of device @d's iteration @iter completed @st; return -1. */
int bw_fail_status(struct bw_ctx *c, int d, long iter, int j, enum accdma_status st);
/* Add ops [@j0, @j1) of iteration @it of device @d to the doorbell's batch. */
int bw_add_ops(struct bw_ctx *c, int d, long it, int j0, int j1);
/* Post the batch gathered so far with one doorbell. */
int bw_flush(struct bw_ctx *c, int d);

/* sync.c */
/* Sync mode's iteration @k on every device of this process. */
int bw_sync_iter(struct bw_ctx *c, long k);

#endif /* ACCDMA_BW_RUN_H */
