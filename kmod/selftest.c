// SPDX-License-Identifier: MIT
/*
 * selftest.c - proves at load (selftest=1) that the core runs in the kernel:
 * it opens small worlds whose engines are kernel threads running the same
 * engine code as libaccdma, posts eager and rendezvous sends and recvs, a
 * fence, a truncation, bad descriptors and an exec chain through the queue
 * layout, waits with timeouts, and checks data and statuses; the hostile
 * and many-round tests are in selftest_stress.c. The result is one line in
 * the kernel log: "accdma: selftest N passed, M failed".
 */
#define pr_fmt(fmt) "accdma: " fmt

#include <linux/kernel.h>
#include <linux/printk.h>

#include "kmod/kmod.h"
#include "kmod/selftest.h"

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

/**
 * st_post() - post one op on queue 0 of @dev, or fail the test.
 * @t: the test.
 * @dev: the device.
 * @kind: ACCDMA_OP_*.
 * @peer: the peer (send, recv).
 * @tag: the tag (send, recv).
 * @key: the region.
 * @len: bytes.
 * @deps: the tokens it waits for.
 * @ndeps: how many.
 * @tok: the op's token.
 *
 * Return: kw_post()'s.
 */
int st_post(struct st *t, uint32_t dev, uint16_t kind, int32_t peer, uint64_t tag, uint32_t key,
	    uint64_t len, const uint64_t *deps, uint16_t ndeps, uint64_t *tok)
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

/**
 * st_expect2() - wait for @tok and check that its status is @want or @want2.
 * @t: the test.
 * @tok: the op's token (consumed).
 * @want: a status it may have.
 * @want2: another.
 * @bytes: the bytes it must have moved, or ~0 for any.
 */
void st_expect2(struct st *t, uint64_t tok, enum accdma_status want, enum accdma_status want2,
		uint64_t bytes)
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

/**
 * st_expect() - st_expect2() with one status.
 * @t: the test.
 * @tok: the op's token (consumed).
 * @want: its status.
 * @bytes: the bytes it must have moved, or ~0 for any.
 */
void st_expect(struct st *t, uint64_t tok, enum accdma_status want, uint64_t bytes)
{
	st_expect2(t, tok, want, want, bytes);
}

/**
 * st_mem() - device memory for a test, or a failed check.
 * @t: the test.
 * @dev: the device.
 * @size: bytes.
 * @key: the region's key.
 * @addr: its address.
 *
 * Return: kw_mem_alloc()'s.
 */
int st_mem(struct st *t, uint32_t dev, uint64_t size, uint32_t *key, void **addr)
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
