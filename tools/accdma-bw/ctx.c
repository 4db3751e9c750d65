/* SPDX-License-Identifier: MIT */
/*
 * ctx.c - accdma-bw's run context: each device's buffers (allocated and
 * touched once, so that no run pays the first-touch faults), its token and
 * status arrays, and its ops built once per window slot, as run.c posts them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

static unsigned next_seed = 1;

/* A device that another process drives (shm): it posts nothing here. */
static const struct bw_devplan not_local;

uint64_t bw_footprint(const struct bw_plan *plan, uint64_t bytes, int slots)
{
	uint64_t max = 0, s = stride_of(bytes) * (uint64_t)slots;
	int d;

	for (d = 0; d < plan->ndev; d++) {
		const struct bw_devplan *dp = &plan->dev[d];
		uint64_t f = dp->nops ? s * (1 + (uint64_t)dp->nsub) : 0;
		if (f > max)
			max = f;
	}
	return max;
}

/* Op @od of device @d for window slot @slot, all but its dependency token
 * (built once per run: accdma-bw should cost little next to what it measures). */
static void make_op(const struct bw_ctx *c, const struct bw_devstate *ds, int slot,
		    const struct bw_opdesc *od, struct accdma_op *op)
{
	memset(op, 0, sizeof(*op));
	op->kind = od->kind;
	op->peer = od->peer;
	switch (od->kind) {
	case ACCDMA_OP_SEND:
		op->tag = BW_TAG;
		op->length = c->bytes;
		if (od->buf == BW_BUF_SRC) {
			op->key = ds->src_key;
			op->offset = (uint64_t)slot * c->stride;
		} else {
			op->key = ds->dst_key;
			op->offset = dst_off(c, slot, od->sub);
		}
		break;
	case ACCDMA_OP_RECV:
		op->tag = BW_TAG;
		op->length = c->bytes;
		op->key = ds->dst_key;
		op->offset = dst_off(c, slot, od->sub);
		break;
	case ACCDMA_OP_EXEC:
		op->peer = 0;
		op->fn = bw_exec_kernel;
		op->arg = ds->dst + dst_off(c, slot, od->sub);
		break;
	default:
		op->peer = 0;
		break;
	}
}

int bw_ctx_create(struct bw_ctx **out, accdma_world *w, const struct bw_opts *o,
		  const struct bw_plan *plan, uint64_t bytes, int win_iters, int slots)
{
	struct bw_ctx *c = calloc(1, sizeof(*c));
	int d, rc, first = 0, nlocal;

	(void)slots;
	if (!c)
		return -ENOMEM;
	c->w = w;
	c->o = o;
	c->plan = plan;
	c->bytes = bytes;
	c->stride = stride_of(bytes);
	c->win = plan->mode == BW_MODE_SYNC ? 1 : win_iters; /* sync: one iteration in flight */
	c->win_pow2 = !(c->win & (c->win - 1));
	c->ndev = plan->ndev;
	c->nops = plan->max_nops;
	c->seed = next_seed++;
	c->cap = (o->post_list < c->win ? o->post_list : c->win) * c->nops;
	c->ops = calloc((size_t)c->cap, sizeof(*c->ops));
	c->out = calloc((size_t)c->cap, sizeof(*c->out));
	c->deps = calloc((size_t)c->cap, sizeof(*c->deps));
	c->slot_of = calloc((size_t)c->cap, sizeof(*c->slot_of));
	c->dev = calloc((size_t)c->ndev, sizeof(*c->dev));
	c->anyv = calloc((size_t)c->ndev, sizeof(*c->anyv));
	c->anyd = calloc((size_t)c->ndev, sizeof(*c->anyd));
	c->active = calloc((size_t)c->ndev, sizeof(*c->active));
	if (!c->ops || !c->out || !c->deps || !c->slot_of || !c->dev || !c->anyv || !c->anyd ||
	    !c->active) {
		rc = -ENOMEM;
		goto fail;
	}
	nlocal = accdma_world_local_devices(w, &first);
	if (nlocal < 0) {
		rc = nlocal;
		goto fail;
	}
	for (d = 0; d < c->ndev; d++) {
		struct bw_devstate *ds = &c->dev[d];
		uint64_t srclen = c->stride * (uint64_t)c->win;
		uint64_t dstlen = srclen * (uint64_t)plan->max_nsub;

		ds->dp = d >= first && d < first + nlocal ? &plan->dev[d] : &not_local;
		if (!ds->dp->nops)
			continue;
		rc = accdma_queue_get(w, d, 0, &ds->q);
		if (rc)
			goto fail;
		ds->tok = calloc((size_t)c->win * c->nops, sizeof(*ds->tok));
		ds->ntok = calloc((size_t)c->win, sizeof(*ds->ntok));
		ds->st = calloc((size_t)c->win * c->nops, sizeof(*ds->st));
		if (!ds->tok || !ds->ntok || !ds->st) {
			rc = -ENOMEM;
			goto fail;
		}
		rc = accdma_mem_alloc(w, d, srclen, &ds->src_key);
		if (rc)
			goto fail;
		ds->src = accdma_mem_ptr(w, d, ds->src_key, NULL);
		if (dstlen) {
			rc = accdma_mem_alloc(w, d, dstlen, &ds->dst_key);
			if (rc)
				goto fail;
			ds->dst = accdma_mem_ptr(w, d, ds->dst_key, NULL);
		}
		if (!ds->src || (dstlen && !ds->dst)) {
			rc = -EFAULT;
			goto fail;
		}
		ds->tmpl = calloc((size_t)c->win * c->nops, sizeof(*ds->tmpl));
		if (!ds->tmpl) {
			rc = -ENOMEM;
			goto fail;
		}
		for (int slot = 0; slot < c->win; slot++)
			for (int j = 0; j < ds->dp->nops; j++)
				make_op(c, ds, slot, &ds->dp->ops[j],
					&ds->tmpl[(size_t)slot * ds->dp->nops + (size_t)j]);
		ds->nodeps = 1;
		for (int j = 0; j < ds->dp->nops; j++)
			if (ds->dp->ops[j].dep >= 0)
				ds->nodeps = 0;
		c->active[c->nactive++] = d;
		/* touch every page now, so no run pays the first-touch faults */
		memset(ds->src, 0x5a, srclen);
		if (dstlen)
			memset(ds->dst, 0, dstlen);
	}
	c->all_direct = plan->mode != BW_MODE_SYNC;
	for (d = 0; d < c->nactive; d++)
		c->all_direct &= c->dev[c->active[d]].nodeps;
	*out = c;
	return 0;
fail:
	bw_ctx_destroy(c);
	return rc;
}

void bw_ctx_destroy(struct bw_ctx *c)
{
	int d;

	if (!c)
		return;
	if (c->dev)
		for (d = 0; d < c->ndev; d++) {
			struct bw_devstate *ds = &c->dev[d];
			if (ds->src_key)
				accdma_mem_free(c->w, d, ds->src_key);
			if (ds->dst_key)
				accdma_mem_free(c->w, d, ds->dst_key);
			free(ds->tok);
			free(ds->ntok);
			free(ds->tmpl);
			free(ds->st);
		}
	free(c->dev);
	free(c->ops);
	free(c->out);
	free(c->deps);
	free(c->slot_of);
	free(c->lat);
	free(c->anyv);
	free(c->anyd);
	free(c->active);
	free(c);
}
