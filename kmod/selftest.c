// SPDX-License-Identifier: MIT
/*
 * selftest.c - proves at load (selftest=1) that the core runs in the kernel:
 * it opens small worlds whose engines are kernel threads running the same
 * engine code as libaccdma, posts eager and rendezvous sends and recvs, a
 * fence, a truncation, bad descriptors and an exec chain through the queue
 * layout, waits with timeouts, and checks data and statuses. The result is
 * one line in the kernel log: "accdma: selftest N passed, M failed".
 */
#define pr_fmt(fmt) "accdma: " fmt

#include <linux/kernel.h>
#include <linux/printk.h>
#include <linux/random.h>
#include <linux/sort.h>
#include <linux/time64.h>

#include "kmod/kmod.h"
#include "kmod/kworld.h"

#define ST_TIMEOUT_NS (10ull * NSEC_PER_SEC)
#define ST_SHORT_NS (50ull * NSEC_PER_MSEC)
#define ST_MAX_DEV 16
#define ST_ROUNDS 200
#define ST_MEM_SIZE (4ull << 20) /* each device's segment: a test's buffers */
#define ST_SCRIBBLE_NS (300ull * NSEC_PER_MSEC)

/* One test's context: the world, and a failure count its checks add to. */
struct st {
	struct kw_world *w;
	const struct kw_shape *shape;
	const char *name;
	int failed;
};

#define ST_CHECK(t, cond, fmt, ...)                                               \
	do {                                                                      \
		if (!(cond)) {                                                    \
			pr_err("selftest %s: %s: " fmt "\n", (t)->name, #cond,    \
			       ##__VA_ARGS__);                                    \
			(t)->failed++;                                            \
		}                                                                 \
	} while (0)

/* A byte of pattern @seed at @i: each sender's data differs from the others'. */
static uint8_t st_byte(uint32_t seed, uint64_t i)
{
	return (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

static void st_fill(uint8_t *p, uint64_t len, uint32_t seed)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		p[i] = st_byte(seed, i);
}

/* The first byte of @p that is not pattern @seed, or @len. */
static uint64_t st_mismatch(const uint8_t *p, uint64_t len, uint32_t seed)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		if (p[i] != st_byte(seed, i))
			return i;
	return len;
}

static int st_post(struct st *t, uint32_t dev, uint16_t kind, int32_t peer, uint64_t tag,
		   uint32_t key, uint64_t len, const uint64_t *deps, uint16_t ndeps,
		   uint64_t *tok)
{
	struct q_desc d = { .kind = kind, .peer = peer, .tag = tag, .key = key,
			    .length = len, .num_deps = ndeps };
	int rc;

	if (ndeps)
		memcpy(d.deps, deps, ndeps * sizeof(*deps));
	rc = kw_post(t->w, dev, 0, &d, tok);
	ST_CHECK(t, rc == 0, "post kind %u on device %u: %d", kind, dev, rc);
	return rc;
}

/* Wait for @tok and check that its status is @want or @want2 (and its
 * bytes, unless @bytes is ~0). */
static void st_expect2(struct st *t, uint64_t tok, enum accdma_status want,
		       enum accdma_status want2, uint64_t bytes)
{
	enum accdma_status st = ACCDMA_OK;
	uint64_t got = 0;
	int rc = kw_wait(t->w, tok, ST_TIMEOUT_NS, &st, &got);

	ST_CHECK(t, rc == 0, "wait for token %#llx: %d", tok, rc);
	if (rc)
		return;
	ST_CHECK(t, st == want || st == want2, "token %#llx: status %d, expected %d", tok, st,
		 want);
	if (bytes != ~0ull)
		ST_CHECK(t, got == bytes, "token %#llx: %llu bytes, expected %llu", tok, got,
			 bytes);
}

static void st_expect(struct st *t, uint64_t tok, enum accdma_status want, uint64_t bytes)
{
	st_expect2(t, tok, want, want, bytes);
}

/* Device memory for a test, or a failed check. */
static int st_mem(struct st *t, uint32_t dev, uint64_t size, uint32_t *key, void **addr)
{
	int rc = kw_mem_alloc(t->w, dev, size, key, addr);

	ST_CHECK(t, rc == 0, "%llu bytes of device %u's memory: %d", size, dev, rc);
	return rc;
}

/*
 * Every device sends @len bytes to the next and receives from the previous,
 * the permutation that deadlocks blocking runtimes; even devices post the
 * send first, odd ones the recv, so either side arrives first somewhere.
 */
static void st_ring(struct st *t, uint32_t ndev, uint64_t len, uint64_t tag)
{
	uint64_t stok[ST_MAX_DEV], rtok[ST_MAX_DEV];
	uint32_t skey[ST_MAX_DEV], rkey[ST_MAX_DEV], d;
	void *src[ST_MAX_DEV], *dst[ST_MAX_DEV];

	for (d = 0; d < ndev; d++) {
		if (st_mem(t, d, len, &skey[d], &src[d]) ||
		    st_mem(t, d, len, &rkey[d], &dst[d]))
			return;
		st_fill(src[d], len, d + 1);
	}
	for (d = 0; d < ndev; d++) {
		uint32_t next = (d + 1) % ndev, prev = (d + ndev - 1) % ndev;

		if (d % 2 == 0 &&
		    st_post(t, d, ACCDMA_OP_SEND, next, tag, skey[d], len, NULL, 0, &stok[d]))
			return;
		if (st_post(t, d, ACCDMA_OP_RECV, prev, tag, rkey[d], len, NULL, 0, &rtok[d]))
			return;
		if (d % 2 == 1 &&
		    st_post(t, d, ACCDMA_OP_SEND, next, tag, skey[d], len, NULL, 0, &stok[d]))
			return;
	}
	for (d = 0; d < ndev; d++) {
		uint32_t prev = (d + ndev - 1) % ndev;
		uint64_t bad;

		st_expect(t, stok[d], ACCDMA_OK, len);
		st_expect(t, rtok[d], ACCDMA_OK, len);
		bad = st_mismatch(dst[d], len, prev + 1);
		ST_CHECK(t, bad == len, "device %u: byte %llu of %llu from device %u differs",
			 d, bad, len, prev);
	}
}

/* Small sends travel eagerly, through the receiver's inline ring. */
static void st_eager(struct st *t, uint32_t ndev)
{
	st_ring(t, ndev, 64, 1);
	st_ring(t, ndev, t->w->a.g.eager_max, 2);
}

/* Large sends wait for their recv; the recv's engine copies. */
static void st_rendezvous(struct st *t, uint32_t ndev)
{
	st_ring(t, ndev, 4096, 3);
	st_ring(t, ndev, 1 << 20, 4);
}

/* The k-th send meets the k-th recv of the same (source, tag), eager or not. */
static void st_fifo(struct st *t, uint32_t ndev)
{
	static const uint64_t len[3] = { 16, 8192, 40 };
	uint64_t stok[3], rtok[3];
	void *src[3], *dst[3];
	uint32_t skey[3], rkey[3];
	int i;

	for (i = 0; i < 3; i++) {
		if (st_mem(t, 0, 8192, &skey[i], &src[i]) ||
		    st_mem(t, 1, 8192, &rkey[i], &dst[i]))
			return;
		st_fill(src[i], len[i], 100 + i);
	}
	for (i = 0; i < 3; i++)
		if (st_post(t, 1, ACCDMA_OP_RECV, 0, 5, rkey[i], 8192, NULL, 0, &rtok[i]))
			return;
	for (i = 0; i < 3; i++)
		if (st_post(t, 0, ACCDMA_OP_SEND, 1, 5, skey[i], len[i], NULL, 0, &stok[i]))
			return;
	for (i = 0; i < 3; i++) {
		st_expect(t, stok[i], ACCDMA_OK, len[i]);
		st_expect(t, rtok[i], ACCDMA_OK, len[i]);
		ST_CHECK(t, st_mismatch(dst[i], len[i], 100 + i) == len[i],
			 "recv %d got another send's data", i);
	}
}

/* A fence completes, and lets later ops start, only after every earlier op. */
static void st_fence(struct st *t, uint32_t ndev)
{
	uint64_t r, f, s, after, r2;
	uint32_t k0, k1, k2;
	void *p0, *p1, *p2;
	enum accdma_status st;
	uint64_t bytes;
	int rc;

	if (st_mem(t, 0, 256, &k0, &p0) || st_mem(t, 1, 256, &k1, &p1) ||
	    st_mem(t, 1, 256, &k2, &p2))
		return;
	st_fill(p1, 256, 7);
	if (st_post(t, 0, ACCDMA_OP_RECV, 1, 9, k0, 256, NULL, 0, &r) ||
	    st_post(t, 0, ACCDMA_OP_FENCE, 0, 0, 0, 0, NULL, 0, &f) ||
	    st_post(t, 0, ACCDMA_OP_SEND, 1, 10, k0, 256, NULL, 0, &after) ||
	    st_post(t, 1, ACCDMA_OP_RECV, 0, 10, k2, 256, NULL, 0, &r2))
		return;
	/* Nothing has been sent to device 0: the recv waits, so does the fence,
	 * and the send behind the fence has not started. */
	rc = kw_wait(t->w, f, ST_SHORT_NS, &st, &bytes);
	ST_CHECK(t, rc == -ETIMEDOUT, "fence done before the recv before it: %d", rc);
	rc = kw_wait(t->w, r2, ST_SHORT_NS, &st, &bytes);
	ST_CHECK(t, rc == -ETIMEDOUT, "a send behind a pending fence ran: %d", rc);
	if (st_post(t, 1, ACCDMA_OP_SEND, 0, 9, k1, 256, NULL, 0, &s))
		return;
	st_expect(t, r, ACCDMA_OK, 256);
	st_expect(t, f, ACCDMA_OK, ~0ull);
	st_expect(t, s, ACCDMA_OK, 256);
	st_expect(t, after, ACCDMA_OK, 256);
	st_expect(t, r2, ACCDMA_OK, 256);
	/* what device 0 sent on is what it received before the fence */
	ST_CHECK(t, st_mismatch(p2, 256, 7) == 256, "the send behind the fence sent stale data");
}

/* A send longer than its recv: the recv fails TRUNCATED and nothing is written. */
static void st_truncate(struct st *t, uint32_t ndev)
{
	static const uint64_t len[2] = { 64, 8192 }; /* eager, rendezvous */
	int i;

	for (i = 0; i < 2; i++) {
		uint64_t s, r, j;
		uint32_t ks, kr;
		uint8_t *src, *dst;

		if (st_mem(t, 0, len[i], &ks, (void **)&src) ||
		    st_mem(t, 1, len[i], &kr, (void **)&dst))
			return;
		st_fill(src, len[i], 3);
		if (st_post(t, 1, ACCDMA_OP_RECV, 0, 11 + i, kr, len[i] / 2, NULL, 0, &r) ||
		    st_post(t, 0, ACCDMA_OP_SEND, 1, 11 + i, ks, len[i], NULL, 0, &s))
			return;
		st_expect(t, r, ACCDMA_ST_TRUNCATED, ~0ull);
		/* an eager send may have gone before the match (OK) */
		st_expect2(t, s, ACCDMA_ST_TRUNCATED, i ? ACCDMA_ST_TRUNCATED : ACCDMA_OK, ~0ull);
		for (j = 0; j < len[i] && !dst[j]; j++)
			;
		ST_CHECK(t, j == len[i], "%llu bytes: a truncated recv wrote byte %llu", len[i], j);
	}
}

/* Bad descriptors complete with an error and touch no memory; what depends
 * on them is not attempted. */
static void st_bad(struct st *t, uint32_t ndev)
{
	uint64_t s, r, dep;
	uint32_t k;
	void *p;

	if (st_mem(t, 0, 128, &k, &p))
		return;
	if (st_post(t, 0, ACCDMA_OP_SEND, 1, 20, k ^ 0x100, 64, NULL, 0, &s) ||
	    st_post(t, 0, ACCDMA_OP_RECV, 1, 21, k, 256, NULL, 0, &r) ||
	    st_post(t, 0, ACCDMA_OP_FENCE, 0, 0, 0, 0, &r, 1, &dep))
		return;
	st_expect(t, s, ACCDMA_ST_BAD_KEY, ~0ull);
	st_expect(t, r, ACCDMA_ST_OUT_OF_BOUNDS, ~0ull);
	st_expect(t, dep, ACCDMA_ST_NOT_ATTEMPTED, ~0ull);
}

/* The exec of a recv -> exec -> send chain: add one to every byte. */
static int st_exec_bump(void *arg)
{
	uint8_t *p = arg;
	int i;

	for (i = 0; i < 512; i++)
		p[i]++;
	return 0;
}

/* recv -> exec -> send on device 1, chained by tokens with no host wait:
 * the exec runs on device 1's engine thread, in the kernel. */
static void st_chain(struct st *t, uint32_t ndev)
{
	uint64_t s0, r0, r1, x1, s1;
	uint32_t ks, kr, kb;
	uint8_t *src, *back, *buf;
	int i, bad = 0;

	if (st_mem(t, 0, 512, &ks, (void **)&src) ||
	    st_mem(t, 0, 512, &kr, (void **)&back) ||
	    st_mem(t, 1, 512, &kb, (void **)&buf))
		return;
	st_fill(src, 512, 9);
	if (st_post(t, 1, ACCDMA_OP_RECV, 0, 30, kb, 512, NULL, 0, &r1))
		return;
	if (kw_post_exec(t->w, 1, 0, st_exec_bump, buf, &r1, 1, &x1)) {
		ST_CHECK(t, 0, "posting the exec");
		return;
	}
	if (st_post(t, 1, ACCDMA_OP_SEND, 0, 31, kb, 512, &x1, 1, &s1) ||
	    st_post(t, 0, ACCDMA_OP_RECV, 1, 31, kr, 512, NULL, 0, &r0) ||
	    st_post(t, 0, ACCDMA_OP_SEND, 1, 30, ks, 512, NULL, 0, &s0))
		return;
	st_expect(t, r0, ACCDMA_OK, 512);
	st_expect(t, s0, ACCDMA_OK, 512);
	st_expect(t, r1, ACCDMA_OK, 512);
	st_expect(t, x1, ACCDMA_OK, ~0ull);
	st_expect(t, s1, ACCDMA_OK, 512);
	for (i = 0; i < 512; i++)
		bad += back[i] != (uint8_t)(st_byte(9, i) + 1);
	ST_CHECK(t, !bad, "%d bytes came back without the exec's step", bad);
}

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
				struct q_desc op = { .kind = ACCDMA_OP_SEND, .peer = (d + 1) % ndev,
						     .tag = 50, .key = key[d], .length = len[k % 3] };
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

/*
 * The kernel trusts nothing in the arena or device memory: while a
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
static void st_scribble(struct st *t, uint32_t ndev)
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

/* Many rounds of the 8-byte permutation: the engines sleep and wake through
 * os_wait32()/os_wake32() between rounds. Prints the median round. */
static void st_rounds(struct st *t, uint32_t ndev)
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
		pr_info("selftest rounds: %d rounds of the 8-byte permutation on %u devices: median %llu us, late wake-ups %llu\n",
			i, ndev, ns[i / 2] / 1000, st_late_wakes(t->w));
	}
	os_free(ns);
}

static const struct {
	const char *name;
	void (*fn)(struct st *t, uint32_t ndev);
} st_tests[] = {
	{ "eager", st_eager },	     { "rendezvous", st_rendezvous }, { "fifo", st_fifo },
	{ "fence", st_fence },	     { "truncate", st_truncate },     { "bad", st_bad },
	{ "chain", st_chain },	     { "scribble", st_scribble },     { "rounds", st_rounds },
};

/**
 * accdma_selftest() - run every test in a fresh world of each shape.
 * @ndev: devices of the first shape (2..16); the second has 2 devices with
 *        two queues and two engines each.
 * @passed: the tests that passed.
 * @failed: the tests that failed (as printed).
 *
 * Return: 0 if every test passed, -EIO if one failed, or the error opening
 * a world gave.
 */
int accdma_selftest(uint32_t ndev, int *passed, int *failed)
{
	const struct kw_shape shapes[] = {
		{ .ndev = ndev, .nq = 1, .engines = 1, .depth = 64, .eager_max = 1024,
		  .mem_size = ST_MEM_SIZE, .spin_ns = 20000 },
		{ .ndev = 2, .nq = 2, .engines = 2, .depth = 64, .eager_max = 256,
		  .mem_size = ST_MEM_SIZE, .spin_ns = 20000 },
	};
	size_t s, i;

	*passed = *failed = 0;
	for (s = 0; s < ARRAY_SIZE(shapes); s++) {
		for (i = 0; i < ARRAY_SIZE(st_tests); i++) {
			struct kw_world w = {};
			struct st t = { .w = &w, .shape = &shapes[s], .name = st_tests[i].name };
			uint64_t t0 = os_now_ns();
			int rc = kw_open(&w, &shapes[s]);

			if (rc) {
				pr_err("selftest %s: opening a world of %u devices: %d\n",
				       t.name, shapes[s].ndev, rc);
				t.failed++;
			} else {
				st_tests[i].fn(&t, shapes[s].ndev);
				kw_close(&w);
			}
			if (t.failed)
				(*failed)++;
			else
				(*passed)++;
			pr_info("selftest %s (%u devices, %u engines): %s in %llu us\n", t.name,
				shapes[s].ndev, shapes[s].engines, t.failed ? "FAIL" : "ok",
				(os_now_ns() - t0) / 1000);
		}
	}
	pr_info("selftest %d passed, %d failed\n", *passed, *failed);
	return *failed ? -EIO : 0;
}
