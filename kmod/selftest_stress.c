// SPDX-License-Identifier: MIT
/*
 * selftest_stress.c - the self-test's two long tests: a scribbler that
 * rewrites a world's arena and device memory while the engines run on it
 * (the kernel trusts nothing a process can write), and many rounds of the
 * 8-byte permutation (the engines sleep and wake between them).
 */
#define pr_fmt(fmt) "accdma: " fmt

#include <linux/kernel.h>
#include <linux/printk.h>
#include <linux/random.h>
#include <linux/sort.h>

#include "kmod/selftest.h"

/* A hostile process's view: everything of the arena but its header (whose
 * stop flag would stop the engines) and every device's memory is garbage,
 * rewritten over and over while the engines run on it. */
struct st_scribble {
	struct kw_world *w;
	int skip_cpl;
	int stop;
	uint64_t passes;
};

static void st_garbage(char *p, uint64_t len, uint64_t *x)
{
	uint64_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		*x ^= *x << 13; /* xorshift64 */
		*x ^= *x >> 7;
		*x ^= *x << 17;
		WRITE_ONCE(*(uint64_t *)(p + i), *x);
		if (!(i & 4095))
			os_yield();
	}
}

static void *st_scribbler(void *arg)
{
	struct st_scribble *s = arg;
	struct kw_world *w = s->w;
	uint64_t x = get_random_u64() | 1;
	uint32_t d;

	while (!os_load(&s->stop, OS_ACQUIRE)) {
		for (d = 0; d < w->a.g.ndev; d++) {
			char *p = (char *)q_dev(&w->a, d), *end = p + w->a.g.dev_stride;
			uint32_t q;

			/* with skip_cpl, the completion records stay sane, so
			 * that the host can go on posting */
			for (q = 0; s->skip_cpl && q < w->a.g.nq; q++) {
				char *c = (char *)q_cpls(&w->a, d, q);

				st_garbage(p, c - p, &x);
				p = c + w->a.g.depth * sizeof(struct q_cpl);
			}
			st_garbage(p, end - p, &x);
			st_garbage(w->devs[d].seg, w->devs[d].seg_size, &x);
		}
		s->passes++;
	}
	return NULL;
}

/* Wait briefly for @tok; give it back if it did not complete. */
static int st_wait_any(struct st *t, uint64_t tok)
{
	enum accdma_status st;
	uint64_t bytes;
	int rc = kw_wait(t->w, tok, 2 * NSEC_PER_MSEC, &st, &bytes);

	if (rc)
		kw_release(t->w, tok);
	return rc;
}

/* One phase of st_scribble(): post and wait on world @w while a scribbler
 * rewrites it (all of it past the header, or all but the completion records). */
static void st_scribble_phase(struct st *t, struct kw_world *w, uint32_t ndev, int skip_cpl)
{
	struct st_scribble s = { .w = w, .skip_cpl = skip_cpl };
	uint64_t end, posted = 0, done = 0;
	struct kw_world *own = t->w;
	struct os_thread th;
	uint32_t key[ST_MAX_DEV], d;
	void *mem[ST_MAX_DEV];

	t->w = w;
	for (d = 0; d < ndev; d++)
		if (st_mem(t, d, 16384, &key[d], &mem[d]))
			goto out;
	if (os_thread_start(&th, "accdma-scribble", st_scribbler, &s)) {
		ST_CHECK(t, 0, "starting the scribbler");
		goto out;
	}
	for (end = os_now_ns() + ST_SCRIBBLE_NS; os_now_ns() < end;) {
		for (d = 0; d < ndev; d++) {
			static const uint64_t len[3] = { 8, 1024, 16384 };
			int k;

			for (k = 0; k < 9; k++) {
				struct q_desc op = { .kind = ACCDMA_OP_SEND, .tag = 50,
						     .peer = (d + 1) % ndev, .key = key[d],
						     .length = len[k % 3] };
				uint64_t tok;

				if (k / 3 == 1) {
					op.kind = ACCDMA_OP_RECV;
					op.peer = (d + ndev - 1) % ndev;
				} else if (k / 3 == 2) {
					op = (struct q_desc){ .kind = ACCDMA_OP_FENCE };
				}
				if (kw_post(w, d, 0, &op, &tok))
					continue; /* no slot: its record is garbage */
				posted++;
				done += !st_wait_any(t, tok);
			}
		}
	}
	os_store(&s.stop, 1, OS_RELEASE);
	os_thread_join(&th);
	pr_info("selftest scribble: %s: %llu passes; %llu ops posted, %llu completed\n",
		skip_cpl ? "all but the completion records" : "the whole arena",
		s.passes, posted, done);
	ST_CHECK(t, s.passes > 0, "the scribbler never finished a pass");
out:
	t->w = own;
}

/**
 * st_scribble() - the kernel trusts nothing in the arena or device memory.
 * @t: the test.
 * @ndev: devices of its world.
 *
 * While a
 * scribbler rewrites them, the engines (kernel threads) and the kernel-side
 * host go on posting, matching, copying and waiting. First everything past
 * the arena's header (whose stop flag would only stop the engines) is
 * garbage, completion records too, so few posts find a slot and the engines
 * read garbage rings and descriptors; then, in a second world, all but the
 * completion records, so that ops keep flowing through garbage descriptors,
 * rings, region and rendezvous tables and eager rings. Ops may fail or time
 * out; the kernel must not crash, hang or write outside the world
 * (slub_debug and vmalloc's guard pages in the VM), and both worlds must
 * close. The tests after this one open fresh worlds and must pass.
 */
void st_scribble(struct st *t, uint32_t ndev)
{
	struct kw_world w2 = {};
	int rc;

	st_scribble_phase(t, t->w, ndev, 0);
	rc = kw_open(&w2, t->shape);
	ST_CHECK(t, rc == 0, "opening a second world: %d", rc);
	if (rc)
		return;
	st_scribble_phase(t, &w2, ndev, 1);
	kw_close(&w2);
}

static int st_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The late wake-ups of a world's engines: deep sleeps that ran out and
 * found work, i.e. wake-ups that never came (0 if os_wake32() works). */
static uint64_t st_late_wakes(struct kw_world *w)
{
	uint64_t n = 0;
	uint32_t d, e;

	for (d = 0; d < w->a.g.ndev; d++)
		for (e = 0; e < w->a.g.engines; e++)
			n += os_load(&q_dev(&w->a, d)->engines[e].late_wakes, OS_RELAXED);
	return n;
}

/* One round of the 8-byte permutation, checked. */
static int st_round(struct st *t, uint32_t ndev, int i, uint32_t *skey, uint32_t *rkey,
		    void **src, void **dst)
{
	uint64_t stok[ST_MAX_DEV], rtok[ST_MAX_DEV];
	uint32_t d;

	for (d = 0; d < ndev; d++) {
		*(uint64_t *)src[d] = (uint64_t)i << 8 | d;
		if (st_post(t, d, ACCDMA_OP_SEND, (d + 1) % ndev, 40, skey[d], 8, NULL, 0,
			    &stok[d]) ||
		    st_post(t, d, ACCDMA_OP_RECV, (d + ndev - 1) % ndev, 40, rkey[d], 8, NULL, 0,
			    &rtok[d]))
			return -1;
	}
	for (d = 0; d < ndev; d++) {
		uint64_t want = (uint64_t)i << 8 | ((d + ndev - 1) % ndev);

		st_expect(t, stok[d], ACCDMA_OK, 8);
		st_expect(t, rtok[d], ACCDMA_OK, 8);
		ST_CHECK(t, *(uint64_t *)dst[d] == want, "round %d: device %u got %#llx", i, d,
			 *(uint64_t *)dst[d]);
	}
	return t->failed ? -1 : 0;
}

/**
 * st_rounds() - many rounds of the 8-byte permutation.
 * @t: the test.
 * @ndev: devices of its world.
 *
 * The engines sleep and wake through os_wait32()/os_wake32() between
 * rounds. Prints the median round and the engines' late wake-ups.
 */
void st_rounds(struct st *t, uint32_t ndev)
{
	uint32_t skey[ST_MAX_DEV], rkey[ST_MAX_DEV], d;
	void *src[ST_MAX_DEV], *dst[ST_MAX_DEV];
	uint64_t *ns = os_alloc(ST_ROUNDS * sizeof(*ns));
	int i;

	ST_CHECK(t, ns != NULL, "no memory");
	for (d = 0; ns && d < ndev; d++)
		if (st_mem(t, d, 8, &skey[d], &src[d]) || st_mem(t, d, 8, &rkey[d], &dst[d]))
			break;
	for (i = 0; i < ST_ROUNDS && !t->failed; i++) {
		uint64_t t0 = os_now_ns();

		if (st_round(t, ndev, i, skey, rkey, src, dst))
			break;
		ns[i] = os_now_ns() - t0;
	}
	if (i) {
		sort(ns, i, sizeof(*ns), st_cmp_u64, NULL);
		pr_info("selftest rounds: %d rounds of 8 bytes on %u devices: median %llu us, late wake-ups %llu\n",
			i, ndev, ns[i / 2] / 1000, st_late_wakes(t->w));
	}
	os_free(ns);
}
