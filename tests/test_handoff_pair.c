/* SPDX-License-Identifier: MIT */
/*
 * test_handoff_pair.c - one pair of devices: large sends handed to the recv's
 * engine, recv first and send first, in every configuration.
 *
 *  - sizes from the handoff threshold to 8 MiB, recvs longer than their sends,
 *    a FIFO batch on one tag; the same to the device itself (self-send);
 *  - large and eager messages mixed on one tag, recv first and send first.
 */
#include "handoff_th.h"

/* ---- 1 and 2. one pair: recv first (the handoff) and send first --------- */

static const uint64_t pair_sizes[] = { HANDOFF_MIN - 1, HANDOFF_MIN, 2 * MIB, 4 * MIB + 1 };
#define NSIZES ((int)(sizeof(pair_sizes) / sizeof(pair_sizes[0])))
#define SUMLEN (8 * MIB + 1) /* every size back to back */
#define EXTRA 100 /* a recv longer than its send */

struct pw {
	accdma_world *w;
	int polled, sdev, rdev, qsi, qri;
	accdma_queue *qs, *qr;
	uint8_t *src, *dst; /* dst: G guard, then the recv ranges, G guard after each */
	accdma_key ks, kd;
	uint64_t dsize;
};

static void pw_open(struct pw *p, const struct cfg *c, int self)
{
	p->w = open_cfg(2, c, 20 * MIB, 0);
	p->polled = c->engines == 0;
	p->sdev = 0;
	p->rdev = self ? 0 : 1;
	p->qsi = c->queues - 1; /* with two queues, sends and recvs use different ones */
	p->qri = 0;
	p->qs = th_qi(p->w, p->sdev, p->qsi);
	p->qr = th_qi(p->w, p->rdev, p->qri);
	p->ks = ALLOC(p->w, p->sdev, SUMLEN, &p->src);
	/* room for the FIFO batch: every size back to back, each with its guard */
	p->dsize = G;
	for (int i = 0; i < NSIZES; i++)
		p->dsize += pair_sizes[i] + EXTRA + G;
	p->kd = ALLOC(p->w, p->rdev, p->dsize, &p->dst);
}

static void run_pair(struct pw *p, uint64_t len, uint64_t rlen, int recv_first, uint32_t sd)
{
	struct accdma_op_info ri;
	accdma_token s, r;

	pat_fill(p->src, len, sd);
	memset(p->dst, GB, p->dsize);
	if (recv_first) {
		r = RECV(p->qr, p->sdev, 1, p->kd, G, rlen);
		until_stage(p->w, p->polled, r, ACCDMA_STAGE_PEER);
		assert_int_equal(accdma_op_info(p->w, r, &ri), 0);
		assert_int_equal(ri.peer_posted, 0);
		assert_int_equal(ri.moved, 0);
		s = SEND(p->qs, p->rdev, 1, p->ks, 0, len);
	} else {
		s = SEND(p->qs, p->rdev, 1, p->ks, 0, len);
		until_stage(p->w, p->polled, s, ACCDMA_STAGE_PEER);
		/* the receiver's engine ran too (a no-op on the recv queue): still nothing landed */
		th_kick_q(p->w, p->rdev, p->qri, 1);
		guard_check(p->dst, p->dsize, "receiver memory before the recv is posted");
		r = RECV(p->qr, p->sdev, 1, p->kd, G, rlen);
	}
	/* moved, read before the tokens are consumed */
	done_is(p->w, p->polled, s, p->sdev, p->qsi, ACCDMA_OP_SEND, ACCDMA_OK, len, len);
	done_is(p->w, p->polled, r, p->rdev, p->qri, ACCDMA_OP_RECV, ACCDMA_OK, rlen, len);
	if (sd & 1) {
		wait_st(p->w, s, ACCDMA_OK);
		wait_st(p->w, r, ACCDMA_OK);
	} else {
		wait_st(p->w, r, ACCDMA_OK);
		wait_st(p->w, s, ACCDMA_OK);
	}
	landed_check(p->dst + G, rlen, len, sd, p->dsize - G - rlen);
	pat_check(p->src, len, sd, "source after the send");
}

/* All the sizes' recvs posted (and waiting) before all the sends, one tag:
 * the k-th send lands in the k-th recv. */
static void run_fifo_batch(struct pw *p, uint32_t sd)
{
	accdma_token t[2 * NSIZES];
	uint64_t off[NSIZES], o = G, so = 0;

	memset(p->dst, GB, p->dsize);
	for (int k = 0; k < NSIZES; k++) {
		off[k] = o;
		o += pair_sizes[k] + EXTRA + G;
		t[k] = RECV(p->qr, p->sdev, 2, p->kd, off[k], pair_sizes[k] + EXTRA);
	}
	until_stage(p->w, p->polled, t[NSIZES - 1], ACCDMA_STAGE_PEER);
	for (int k = 0; k < NSIZES; k++) {
		pat_fill(p->src + so, pair_sizes[k], sd + (uint32_t)k);
		t[NSIZES + k] = SEND(p->qs, p->rdev, 2, p->ks, so, pair_sizes[k]);
		so += pair_sizes[k];
	}
	wait_all_ok(p->w, t, 2 * NSIZES);
	guard_check(p->dst, G, "guard before the first recv");
	for (int k = 0; k < NSIZES; k++) {
		pat_check(p->dst + off[k], pair_sizes[k], sd + (uint32_t)k, "fifo batch recv");
		guard_check(p->dst + off[k] + pair_sizes[k], EXTRA + G, "past a fifo batch recv");
	}
	so = 0;
	for (int k = 0; k < NSIZES; k++) {
		pat_check(p->src + so, pair_sizes[k], sd + (uint32_t)k, "fifo batch source");
		so += pair_sizes[k];
	}
}

static void run_pairs(const struct cfg *c, int self, int recv_first)
{
	struct pw p;

	CTX("pairs engines=%d queues=%d nopoll=%d self=%d", c->engines, c->queues, c->nopoll, self);
	pw_open(&p, c, self);
	for (int i = 0; i < NSIZES; i++)
		for (int extra = 0; extra <= EXTRA; extra += EXTRA) {
			CTX("pairs engines=%d queues=%d nopoll=%d self=%d %s len %llu rlen %llu",
			    c->engines, c->queues, c->nopoll, self,
			    recv_first ? "recv first" : "send first",
			    (unsigned long long)pair_sizes[i],
			    (unsigned long long)pair_sizes[i] + (unsigned)extra);
			run_pair(&p, pair_sizes[i], pair_sizes[i] + (uint64_t)extra, recv_first,
				 (uint32_t)(1000 + 10 * i + extra / EXTRA + 100 * recv_first));
		}
	if (recv_first) {
		CTX("fifo batch engines=%d queues=%d nopoll=%d self=%d", c->engines, c->queues,
		    c->nopoll, self);
		run_fifo_batch(&p, 500);
	}
	th_close(p.w);
	ctx[0] = 0;
}

/* The tests below run once per configuration: *state is its struct cfg (main()). */
static void test_recv_first(void **state)
{
	run_pairs(*state, 0, 1);
}

/* self-send: the device hands the copy to itself */
static void test_recv_first_self(void **state)
{
	run_pairs(*state, 1, 1);
}

static void test_send_first(void **state)
{
	run_pairs(*state, 0, 0);
}

/* ---- 2b. large and eager messages on one tag ---------------------------------- */

/* Handed-off and eager messages share the tag's FIFO and the receiver's
 * lookups of landed eager messages (made while a recv of that sender waits in
 * the table): every recv gets its own send, recvs first (large ones handed
 * off) and sends first (eager ones complete before their recvs exist). */
static const uint64_t mixed_sizes[] = { 2 * MIB, 8, HANDOFF_MIN, ACCDMA_EAGER_MAX,
					HANDOFF_MIN - 1, ACCDMA_EAGER_MAX + 1, 2 * MIB, 1 };
#define NMIXED ((int)(sizeof(mixed_sizes) / sizeof(mixed_sizes[0])))

static void run_mixed(const struct cfg *c, int recv_first)
{
	uint64_t soff[NMIXED], roff[NMIXED], so = 0, ro = G;
	accdma_world *w;
	int polled = c->engines == 0;
	uint8_t *src, *dst;
	accdma_key ks, kd;
	accdma_token t[2 * NMIXED];

	CTX("mixed sizes engines=%d queues=%d nopoll=%d %s", c->engines, c->queues, c->nopoll,
	    recv_first ? "recvs first" : "sends first");
	for (int k = 0; k < NMIXED; k++) {
		soff[k] = so;
		so += (mixed_sizes[k] + 7) & ~7ull;
		roff[k] = ro;
		ro += mixed_sizes[k] + G;
	}
	w = open_cfg(2, c, so + ro + MIB, 0);
	ks = ALLOC(w, 0, so, &src);
	kd = ALLOC(w, 1, ro, &dst);
	memset(dst, GB, ro);
	for (int k = 0; k < NMIXED; k++)
		pat_fill(src + soff[k], mixed_sizes[k], 700u + (uint32_t)k);
	for (int h = 0; h < 2; h++) {
		if ((h == 0) == (recv_first != 0)) {
			for (int k = 0; k < NMIXED; k++)
				t[NMIXED + k] = RECV(th_q(w, 1), 0, 11, kd, roff[k], mixed_sizes[k]);
			if (h == 0) /* the last recv waits: so do all before it */
				until_stage(w, polled, t[2 * NMIXED - 1], ACCDMA_STAGE_PEER);
		} else {
			for (int k = 0; k < NMIXED; k++)
				t[k] = SEND(th_qi(w, 0, c->queues - 1), 1, 11, ks, soff[k], mixed_sizes[k]);
		}
	}
	wait_all_ok(w, t, 2 * NMIXED);
	guard_check(dst, G, "guard before the first recv");
	for (int k = 0; k < NMIXED; k++) {
		pat_check(dst + roff[k], mixed_sizes[k], 700u + (uint32_t)k, "mixed-size recv");
		guard_check(dst + roff[k] + mixed_sizes[k], G, "guard after a mixed-size recv");
	}
	th_close(w);
	ctx[0] = 0;
}

static void test_mixed_eager(void **state)
{
	run_mixed(*state, 1);
	run_mixed(*state, 0);
}

static void add_cases(struct th_cases *t)
{
	int n;
	const struct cfg *c = cfgs(&n);

	for (int i = 0; i < n; i++)
		CASE(t, test_recv_first, &c[i], "test_recv_first/%s", cfg_name(&c[i]));
	for (int i = 0; i < (quick ? 2 : n); i++)
		CASE(t, test_recv_first_self, &c[i], "test_recv_first_self/%s", cfg_name(&c[i]));
	for (int i = 0; i < n; i++)
		CASE(t, test_send_first, &c[i], "test_send_first/%s", cfg_name(&c[i]));
	for (int i = 0; i < n; i++)
		CASE(t, test_mixed_eager, &c[i], "test_mixed_eager/%s", cfg_name(&c[i]));
}

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return handoff_main("test_handoff_pair", add_cases);
}
