/* SPDX-License-Identifier: MIT */
/*
 * pattern.c - which ops each device posts per iteration, and what the data
 * must look like afterwards.
 *
 * Every device runs the same kind of program. In chain mode it is the same
 * program: each device posts its sends before its recvs, the order that
 * deadlocks blocking runtimes and that accdma exists to allow. In fence and
 * sync modes a fence follows every send and every recv; as that serialises
 * the queue, devices that would all send first (a ring, a pair exchanging)
 * are ordered even/odd (the lower rank first), as runtimes had to: with
 * rendezvous sends the same program would deadlock behind its own fences.
 * The two modes post the same ops: in sync mode the host also waits on
 * each fence (run.c), the old workaround; in fence mode it does not. Data
 * dependencies (recv -> exec -> send in the chained pipeline) are tokens in
 * every mode; in chain mode they are the only sync.
 */
#include <stdlib.h>
#include <string.h>

#include "bw.h"

struct builder {
	struct bw_devplan *dp;
	int cap;
	enum bw_mode mode;
};

static int add(struct builder *b, enum accdma_op_kind kind, int peer, enum bw_buf buf, int sub,
	       int dep)
{
	struct bw_devplan *dp = b->dp;
	int fence = (b->mode == BW_MODE_FENCE || b->mode == BW_MODE_SYNC) &&
		    (kind == ACCDMA_OP_SEND || kind == ACCDMA_OP_RECV);
	int idx;

	if (dp->nops + 1 + fence > b->cap) {
		int cap = b->cap ? 2 * b->cap : 8;
		struct bw_opdesc *n = realloc(dp->ops, (size_t)cap * sizeof(*n));
		if (!n)
			return -1;
		dp->ops = n;
		b->cap = cap;
	}
	idx = dp->nops++;
	dp->ops[idx] = (struct bw_opdesc){ .kind = kind, .peer = peer, .buf = buf, .sub = sub,
					  .dep = dep };
	dp->nxfer++;
	if (kind == ACCDMA_OP_RECV && sub + 1 > dp->nsub)
		dp->nsub = sub + 1;
	if (fence)
		dp->ops[dp->nops++] = (struct bw_opdesc){ .kind = ACCDMA_OP_FENCE, .peer = -1,
							 .dep = -1 };
	return idx;
}

#define ADD(...)                                  \
	do {                                      \
		if ((last = add(__VA_ARGS__)) < 0) \
			goto nomem;               \
	} while (0)

/* bw_plan_build() - the ops of pattern @pat in @mode on @ndev devices. 0 or -1 (+ @err). */
int bw_plan_build(struct bw_plan *p, enum bw_pattern pat, enum bw_mode mode, int ndev,
		  char *err, size_t errlen)
{
	int d, s, last;

	memset(p, 0, sizeof(*p));
	if (ndev < 2) {
		snprintf(err, errlen, "pattern %s needs at least 2 devices", bw_pattern_name(pat));
		return -1;
	}
	if (pat == BW_PAT_ALLTOALL && ((ndev & (ndev - 1)) || ndev > 64)) {
		snprintf(err, errlen, "alltoall needs a power-of-two number of devices, at most 64");
		return -1;
	}
	p->ndev = ndev;
	p->mode = mode;
	p->dev = calloc((size_t)ndev, sizeof(*p->dev));
	if (!p->dev)
		goto nomem;

	for (d = 0; d < ndev; d++) {
		struct builder b = { .dp = &p->dev[d], .mode = mode };
		int next = (d + 1) % ndev, prev = (d + ndev - 1) % ndev, half = ndev / 2;
		/* who posts the send of an exchange first: everyone, unless fenced */
		int fenced = mode == BW_MODE_FENCE || mode == BW_MODE_SYNC;
		int send_first = !fenced || d % 2 == 0;

		switch (pat) {
		case BW_PAT_PAIR:
			if (d == 0)
				ADD(&b, ACCDMA_OP_SEND, 1, BW_BUF_SRC, 0, -1);
			else if (d == 1)
				ADD(&b, ACCDMA_OP_RECV, 0, BW_BUF_DST, 0, -1);
			break;
		case BW_PAT_BIDIR:
			if (d == 0) {
				ADD(&b, ACCDMA_OP_SEND, 1, BW_BUF_SRC, 0, -1);
				ADD(&b, ACCDMA_OP_RECV, 1, BW_BUF_DST, 0, -1);
			} else if (d == 1 && !fenced) {
				ADD(&b, ACCDMA_OP_SEND, 0, BW_BUF_SRC, 0, -1);
				ADD(&b, ACCDMA_OP_RECV, 0, BW_BUF_DST, 0, -1);
			} else if (d == 1) {
				ADD(&b, ACCDMA_OP_RECV, 0, BW_BUF_DST, 0, -1);
				ADD(&b, ACCDMA_OP_SEND, 0, BW_BUF_SRC, 0, -1);
			}
			break;
		case BW_PAT_PERMUTE:
			if (send_first) {
				ADD(&b, ACCDMA_OP_SEND, next, BW_BUF_SRC, 0, -1);
				ADD(&b, ACCDMA_OP_RECV, prev, BW_BUF_DST, 0, -1);
			} else {
				ADD(&b, ACCDMA_OP_RECV, prev, BW_BUF_DST, 0, -1);
				ADD(&b, ACCDMA_OP_SEND, next, BW_BUF_SRC, 0, -1);
			}
			break;
		case BW_PAT_PIPELINE:
			if (d < half)
				ADD(&b, ACCDMA_OP_SEND, d + half, BW_BUF_SRC, 0, -1);
			else if (d < 2 * half)
				ADD(&b, ACCDMA_OP_RECV, d - half, BW_BUF_DST, 0, -1);
			break;
		case BW_PAT_ALLTOALL:
			/* pairwise exchange: step s pairs d with d ^ s; fenced, the lower rank sends first */
			for (s = 1; s < ndev; s++) {
				int q = d ^ s;
				if (!fenced || d < q) {
					ADD(&b, ACCDMA_OP_SEND, q, BW_BUF_SRC, 0, -1);
					ADD(&b, ACCDMA_OP_RECV, q, BW_BUF_DST, s - 1, -1);
				} else {
					ADD(&b, ACCDMA_OP_RECV, q, BW_BUF_DST, s - 1, -1);
					ADD(&b, ACCDMA_OP_SEND, q, BW_BUF_SRC, 0, -1);
				}
			}
			break;
		case BW_PAT_CHAIN:
			if (d == 0) {
				ADD(&b, ACCDMA_OP_SEND, 1, BW_BUF_SRC, 0, -1);
			} else {
				int r, x;
				ADD(&b, ACCDMA_OP_RECV, d - 1, BW_BUF_DST, 0, -1);
				r = last;
				ADD(&b, ACCDMA_OP_EXEC, -1, BW_BUF_DST, 0, r);
				x = last;
				if (d + 1 < ndev)
					ADD(&b, ACCDMA_OP_SEND, d + 1, BW_BUF_DST, 0, x);
			}
			break;
		case BW_PAT_PINGPONG:
			/* what 1 sends back is what it received, sent once its recv is done */
			if (d == 0) {
				ADD(&b, ACCDMA_OP_SEND, 1, BW_BUF_SRC, 0, -1);
				ADD(&b, ACCDMA_OP_RECV, 1, BW_BUF_DST, 0, -1);
			} else if (d == 1) {
				int r;
				ADD(&b, ACCDMA_OP_RECV, 0, BW_BUF_DST, 0, -1);
				r = last;
				ADD(&b, ACCDMA_OP_SEND, 0, BW_BUF_DST, 0, r);
			}
			break;
		default:
			snprintf(err, errlen, "unknown pattern");
			bw_plan_free(p);
			return -1;
		}
	}
	(void)last;
	for (d = 0; d < ndev; d++) {
		const struct bw_devplan *dp = &p->dev[d];
		int i, sends = 0;

		for (i = 0; i < dp->nops; i++)
			sends += dp->ops[i].kind == ACCDMA_OP_SEND;
		p->sends += sends;
		p->senders += sends > 0;
		if (dp->nxfer > p->max_nxfer)
			p->max_nxfer = dp->nxfer;
		if (dp->nops > p->max_nops)
			p->max_nops = dp->nops;
		if (dp->nsub > p->max_nsub)
			p->max_nsub = dp->nsub;
	}
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
	bw_plan_free(p);
	return -1;
}

void bw_plan_free(struct bw_plan *p)
{
	int d;

	if (p->dev)
		for (d = 0; d < p->ndev; d++)
			free(p->dev[d].ops);
	free(p->dev);
	memset(p, 0, sizeof(*p));
}

void bw_pattern_fill(uint8_t *buf, uint64_t len, int dev, unsigned seed)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		buf[i] = bw_pattern_byte(dev, seed, i);
}

int bw_exec_kernel(void *arg)
{
	uint8_t *p = arg;

	(*p)++;
	return 0;
}

/*
 * bw_pattern_check() - compare one received range with what its sender sent.
 * In the chained pipeline, stage d has seen d exec kernels (each adds 1 to byte 0).
 */
int64_t bw_pattern_check(const struct bw_plan *p, enum bw_pattern pat, int dev,
			 const struct bw_opdesc *recv, const uint8_t *buf, uint64_t len,
			 unsigned seed, uint8_t *got, uint8_t *want)
{
	int src = recv->peer;
	uint64_t i;

	(void)p;
	if (pat == BW_PAT_CHAIN || pat == BW_PAT_PINGPONG)
		src = 0;
	for (i = 0; i < len; i++) {
		uint8_t w = bw_pattern_byte(src, seed, i);
		if (pat == BW_PAT_CHAIN && i == 0)
			w = (uint8_t)(w + dev);
		if (buf[i] != w) {
			*got = buf[i];
			*want = w;
			return (int64_t)i;
		}
	}
	return -1;
}
