/* SPDX-License-Identifier: MIT */
/*
 * test_torch_core.c - the torch backend's C core (torch/core), without torch:
 * so that it runs under both sanitizers too.
 *
 *  - reductions: every dtype and op against a plain loop; bfloat16 rounds to
 *    nearest even; signed integers wrap; bool sum is "or", product "and";
 *    complex product; unsupported pairs are -EINVAL.
 *  - atc_copy at every alignment, below and above the streaming threshold,
 *    touching nothing past the end.
 *  - the staging pool (size classes, reuse) and device-memory tensors' regions.
 *  - the collective plans on a local world of 1..5 devices, each member's
 *    part posted from one thread: ring all-reduce, reduce-scatter and
 *    all-gather, broadcast from every root, barrier, all-to-all; data checked.
 *  - op lists: a timeout names the stuck op and its ops cancel; a short
 *    message and a truncated one are named (the sender told too past eager_max).
 */
#include "helpers/th.h"

#include <errno.h>
#include <stdlib.h>

#include "torch/core/atc.h"
#include "torch/core/coll.c"
#include "torch/core/copy.c"
#include "torch/core/devmem.c"
#include "torch/core/ops.c"
#include "torch/core/reduce.c"
#include "torch/core/world.c"

#define MAXN 5

/* ---- reductions --------------------------------------------------------- */

static void test_reduce_arith(void **s)
{
	(void)s;
	float f[3] = { 1.5f, -2.0f, 4.0f }, g[3] = { 2.25f, 3.0f, -1.0f };
	int32_t a[2] = { INT32_MAX, -7 }, b[2] = { 1, 3 };
	int64_t la[2] = { 5, -9 }, lb[2] = { -6, 4 };
	uint8_t ua[2] = { 200, 3 }, ub[2] = { 100, 250 };

	assert_int_equal(atc_reduce(f, g, 3, ATC_F32, ATC_SUM), 0);
	assert_true(f[0] == 3.75f && f[1] == 1.0f && f[2] == 3.0f);
	assert_int_equal(atc_reduce(f, g, 3, ATC_F32, ATC_MIN), 0);
	assert_true(f[0] == 2.25f && f[1] == 1.0f && f[2] == -1.0f);
	assert_int_equal(atc_reduce(a, b, 2, ATC_I32, ATC_SUM), 0);
	assert_int_equal(a[0], INT32_MIN); /* wraps, as torch's int32 does */
	assert_int_equal(a[1], -4);
	assert_int_equal(atc_reduce(la, lb, 2, ATC_I64, ATC_PROD), 0);
	assert_true(la[0] == -30 && la[1] == -36);
	assert_int_equal(atc_reduce(la, lb, 2, ATC_I64, ATC_MAX), 0);
	assert_true(la[0] == -6 && la[1] == 4);
	assert_int_equal(atc_reduce(ua, ub, 2, ATC_U8, ATC_SUM), 0);
	assert_true(ua[0] == 44 && ua[1] == 253);
}

static uint16_t bf(float v)
{
	uint32_t u;

	memcpy(&u, &v, 4);
	return (uint16_t)(u >> 16); /* exact for the values used here */
}

static void test_reduce_half(void **s)
{
	(void)s;
	/* 1 + 2^-8 is half a bfloat16 ulp above 1: ties to even (1.0); 1 + 3 *
	 * 2^-8 is one and a half: ties to even upward (1 + 2^-6). */
	uint16_t d[3] = { bf(1.0f), bf(1.0f), bf(-3.0f) };
	uint16_t e[3] = { bf(0.00390625f), bf(0.01171875f), bf(5.0f) };
	_Float16 h[2] = { (_Float16)1.5f, (_Float16)-2.0f }, k[2] = { (_Float16)0.25f, (_Float16)8.0f };

	assert_int_equal(atc_reduce(d, e, 3, ATC_BF16, ATC_SUM), 0);
	assert_int_equal(d[0], bf(1.0f));
	assert_int_equal(d[1], bf(1.015625f));
	assert_int_equal(d[2], bf(2.0f));
	assert_int_equal(atc_reduce(h, k, 2, ATC_F16, ATC_PROD), 0);
	assert_true((float)h[0] == 0.375f && (float)h[1] == -16.0f);
}

static void test_reduce_bool_complex(void **s)
{
	(void)s;
	uint8_t a[4] = { 0, 0, 1, 1 }, b[4] = { 0, 1, 0, 1 }, c[4];
	float z[4] = { 1, 2, 0.5f, -1 }, w[4] = { 3, 4, 2, 2 };
	double zd[2] = { 1, 1 }, wd[2] = { 1, -1 };

	memcpy(c, a, 4);
	assert_int_equal(atc_reduce(c, b, 4, ATC_BOOL, ATC_SUM), 0);
	assert_memory_equal(c, ((uint8_t[]){ 0, 1, 1, 1 }), 4);
	memcpy(c, a, 4);
	assert_int_equal(atc_reduce(c, b, 4, ATC_BOOL, ATC_PROD), 0);
	assert_memory_equal(c, ((uint8_t[]){ 0, 0, 0, 1 }), 4);
	memcpy(c, a, 4);
	assert_int_equal(atc_reduce(c, b, 4, ATC_BOOL, ATC_MAX), 0);
	assert_memory_equal(c, ((uint8_t[]){ 0, 1, 1, 1 }), 4);
	/* (1+2i)(3+4i) = -5+10i; (0.5-i)(2+2i) = 3-i */
	assert_int_equal(atc_reduce(z, w, 2, ATC_C64, ATC_PROD), 0);
	assert_true(z[0] == -5 && z[1] == 10 && z[2] == 3 && z[3] == -1);
	assert_int_equal(atc_reduce(zd, wd, 1, ATC_C128, ATC_SUM), 0);
	assert_true(zd[0] == 2 && zd[1] == 0);
	assert_int_equal(atc_reduce(z, w, 2, ATC_C64, ATC_MAX), -EINVAL);
	assert_int_equal(atc_reduce(z, w, 2, ATC__NDTYPES, ATC_SUM), -EINVAL);
	assert_int_equal(atc_reduce(z, w, 2, ATC_F32, ATC__NREDOPS), -EINVAL);
	assert_false(atc_reduce_supported(ATC_C128, ATC_MIN));
	assert_true(atc_reduce_supported(ATC_BOOL, ATC_MIN));
}

/* ---- copies --------------------------------------------------------------- */

static void test_copy_alignments(void **s)
{
	(void)s;
	static const uint64_t lens[] = { 0, 1, 63, 64, 65, 4096, 1u << 20, (1u << 20) + 37,
					 (3u << 20) + 5 };
	uint64_t max = (3u << 20) + 5 + 128;
	unsigned char *src = malloc(max), *dst = malloc(max);

	assert_non_null(src);
	assert_non_null(dst);
	for (uint64_t i = 0; i < max; i++)
		src[i] = (unsigned char)(i * 131 + 7);
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		for (int so = 0; so < 64; so += 13) {
			for (int d0 = 0; d0 < 64; d0 += 21) {
				memset(dst, 0xEE, max);
				atc_copy(dst + d0, src + so, lens[l]);
				assert_memory_equal(dst + d0, src + so, lens[l]);
				for (int k = 0; k < d0; k++)
					assert_int_equal(dst[k], 0xEE);
				for (int k = 0; k < 64; k++)
					assert_int_equal(dst[d0 + lens[l] + k], 0xEE);
			}
		}
	}
	free(src);
	free(dst);
}

/* ---- a local world of n devices, one atc_world per device ----------------- */

struct local {
	accdma_world *w;
	struct atc_world aw[MAXN];
	int devs[MAXN];
	int n;
};

static void local_open(struct local *l, int n)
{
	memset(l, 0, sizeof(*l));
	l->n = n;
	l->w = th_open(n);
	for (int d = 0; d < n; d++) {
		l->aw[d].w = l->w;
		l->aw[d].q = th_q(l->w, d);
		l->aw[d].dev = d;
		l->aw[d].ndev = n;
		l->aw[d].port_fd = -1;
		pthread_mutex_init(&l->aw[d].lock, NULL);
		l->devs[d] = d;
	}
}

static void local_close(struct local *l)
{
	for (int d = 0; d < l->n; d++) {
		struct atc_world *aw = &l->aw[d];

		for (int c = 0; c < ATC_POOL_CLASSES; c++) {
			for (int i = 0; i < aw->nfree[c]; i++)
				accdma_mem_free(l->w, d, aw->free[c][i].key);
			free(aw->free[c]);
		}
		free(aw->regs);
		pthread_mutex_destroy(&aw->lock);
	}
	th_close(l->w);
}

static struct atc_group grp(struct local *l, int me, const char *what)
{
	return (struct atc_group){ &l->aw[me], l->devs, l->n, me, 3ull << ATC_GID_SHIFT | ATC_TAG_COLL,
				   TH_HANG_MS, what };
}

static void wait_ok(struct local *l, struct atc_oplist *ol)
{
	char err[512];
	enum accdma_status st;

	for (int d = 0; d < l->n; d++) {
		int rc = atc_wait(&l->aw[d], &ol[d], TH_HANG_MS, err, sizeof(err), &st);

		if (rc)
			fail_msg("device %d: %s", d, err);
		atc_ops_free(&ol[d]);
	}
}

static void test_pool_and_devmem(void **s)
{
	(void)s;
	struct local l;
	struct atc_buf a, b, c;
	accdma_key key;
	uint64_t off;
	void *p = NULL;

	local_open(&l, 1);
	assert_int_equal(atc_buf_get(&l.aw[0], 100, &a), 0);
	assert_int_equal(a.size, 4096);
	key = a.key;
	atc_buf_put(&l.aw[0], &a);
	assert_int_equal(a.key, 0);
	assert_int_equal(atc_buf_get(&l.aw[0], 4096, &b), 0);
	assert_int_equal(b.key, key); /* the cached buffer comes back */
	assert_int_equal(atc_buf_get(&l.aw[0], 4097, &c), 0);
	assert_int_equal(c.size, 8192);
	atc_buf_put(&l.aw[0], &b);
	atc_buf_put(&l.aw[0], &c);

	assert_int_equal(atc_dev_alloc(&l.aw[0], 1000, &p), 0);
	assert_int_equal(atc_dev_find(&l.aw[0], (char *)p + 10, 990, &key, &off), 1);
	assert_int_equal(off, 10);
	assert_int_equal(atc_dev_find(&l.aw[0], (char *)p + 10, 991, &key, &off), 0);
	assert_int_equal(atc_dev_find(&l.aw[0], &off, 8, &key, &off), 0);
	assert_int_equal(atc_dev_free(&l.aw[0], p), 0);
	assert_int_equal(atc_dev_find(&l.aw[0], p, 1, &key, &off), 0);
	assert_int_equal(atc_dev_free(&l.aw[0], p), -ENOENT);
	local_close(&l);
}

static void test_ring_allreduce(void **s)
{
	(void)s;
	static const uint64_t sizes[] = { 1, 7, 1000 };

	for (int n = 1; n <= MAXN; n++) {
		for (size_t k = 0; k < 3; k++) {
			uint64_t numel = sizes[k], chunk = (numel + n - 1) / n;
			struct atc_oplist ol[MAXN] = { 0 };
			struct atc_buf data[MAXN], tmp[MAXN];
			struct local l;

			local_open(&l, n);
			for (int d = 0; d < n; d++) {
				struct atc_group g = grp(&l, d, "all_reduce");

				assert_int_equal(atc_buf_get(&l.aw[d], n * chunk * 4, &data[d]), 0);
				assert_int_equal(atc_buf_get(&l.aw[d], n * chunk * 4, &tmp[d]), 0);
				for (uint64_t i = 0; i < numel; i++)
					((float *)data[d].ptr)[i] = (float)(d * 1000 + i);
				assert_int_equal(atc_plan_ring_allreduce(&g, &ol[d], &data[d], &tmp[d],
									 chunk, 4, ATC_F32, ATC_SUM),
						 0);
			}
			wait_ok(&l, ol);
			for (int d = 0; d < n; d++)
				for (uint64_t i = 0; i < numel; i++)
					assert_true(((float *)data[d].ptr)[i] ==
						    (float)(1000 * n * (n - 1) / 2 + n * i));
			local_close(&l);
		}
	}
}

static void test_ring_rs_ag(void **s)
{
	(void)s;
	for (int n = 1; n <= MAXN; n++) {
		struct atc_oplist ol[MAXN] = { 0 };
		struct atc_buf data[MAXN], tmp[MAXN];
		struct local l;
		const uint64_t chunk = 9;

		local_open(&l, n);
		for (int d = 0; d < n; d++) {
			struct atc_group g = grp(&l, d, "reduce_scatter");

			assert_int_equal(atc_buf_get(&l.aw[d], n * chunk * 8, &data[d]), 0);
			assert_int_equal(atc_buf_get(&l.aw[d], n * chunk * 8, &tmp[d]), 0);
			for (uint64_t i = 0; i < n * chunk; i++)
				((int64_t *)data[d].ptr)[i] = (int64_t)(i * 10 + d);
			assert_int_equal(atc_plan_ring_rs(&g, &ol[d], &data[d], &tmp[d], chunk, 8,
							  ATC_I64, ATC_MAX, NULL),
					 0);
		}
		wait_ok(&l, ol);
		/* chunk d of device d is the max over devices: i * 10 + n - 1 */
		for (int d = 0; d < n; d++)
			for (uint64_t i = d * chunk; i < (d + 1) * chunk; i++)
				assert_int_equal(((int64_t *)data[d].ptr)[i], i * 10 + n - 1);
		/* then an all-gather of those chunks fills every device */
		for (int d = 0; d < n; d++) {
			struct atc_group g = grp(&l, d, "all_gather");

			assert_int_equal(atc_plan_ring_ag(&g, &ol[d], &data[d], chunk * 8, 0), 0);
		}
		wait_ok(&l, ol);
		for (int d = 0; d < n; d++)
			for (uint64_t i = 0; i < n * chunk; i++)
				assert_int_equal(((int64_t *)data[d].ptr)[i], i * 10 + n - 1);
		local_close(&l);
	}
}

static void test_bcast_barrier_alltoall(void **s)
{
	(void)s;
	for (int n = 1; n <= MAXN; n++) {
		struct atc_oplist ol[MAXN] = { 0 };
		struct atc_buf b[MAXN], in[MAXN], out[MAXN];
		struct local l;

		local_open(&l, n);
		for (int d = 0; d < n; d++) {
			assert_int_equal(atc_buf_get(&l.aw[d], 4096, &b[d]), 0);
			assert_int_equal(atc_buf_get(&l.aw[d], 4096, &in[d]), 0);
			assert_int_equal(atc_buf_get(&l.aw[d], 4096, &out[d]), 0);
		}
		for (int root = 0; root < n; root++) {
			for (int d = 0; d < n; d++) {
				struct atc_group g = grp(&l, d, "broadcast");

				memset(b[d].ptr, d == root ? 0x40 + root : 0, 333);
				assert_int_equal(atc_plan_bcast(&g, &ol[d], &b[d], 333, root), 0);
			}
			wait_ok(&l, ol);
			for (int d = 0; d < n; d++)
				for (int i = 0; i < 333; i++)
					assert_int_equal(((unsigned char *)b[d].ptr)[i], 0x40 + root);
		}
		for (int d = 0; d < n; d++) {
			struct atc_group g = grp(&l, d, "barrier");

			assert_int_equal(atc_plan_barrier(&g, &ol[d], &b[d]), 0);
		}
		wait_ok(&l, ol);
		/* all-to-all: device d sends p + 1 bytes of value 16 d + p to p */
		for (int d = 0; d < n; d++) {
			struct atc_group g = grp(&l, d, "all_to_all");
			uint64_t io[MAXN], il[MAXN], oo[MAXN], olen[MAXN];

			for (int p = 0; p < n; p++) {
				io[p] = 64 * p;
				il[p] = p + 1;
				memset((char *)in[d].ptr + io[p], 16 * d + p, il[p]);
				oo[p] = 64 * p;
				olen[p] = d + 1;
			}
			memset(out[d].ptr, 0xFF, 64 * n);
			assert_int_equal(atc_plan_alltoall(&g, &ol[d], &in[d], &out[d], io, il, oo,
							   olen),
					 0);
		}
		wait_ok(&l, ol);
		for (int d = 0; d < n; d++)
			for (int p = 0; p < n; p++) {
				const unsigned char *o = (const unsigned char *)out[d].ptr + 64 * p;

				if (p == d) /* its own chunk is the host's to copy */
					continue;
				for (int i = 0; i <= d; i++)
					assert_int_equal(o[i], 16 * p + d);
				assert_int_equal(o[d + 1], 0xFF);
			}
		local_close(&l);
	}
}

/* ---- op lists: what a failure says ---------------------------------------- */

static void test_timeout_names_op(void **s)
{
	(void)s;
	struct atc_oplist ol = { 0 };
	struct atc_buf b;
	struct local l;
	char err[512];
	enum accdma_status st;
	struct accdma_op op = { .kind = ACCDMA_OP_RECV, .peer = 1, .tag = (2ull << ATC_GID_SHIFT) | 5,
				.length = 32 };
	struct atc_opdesc d = { ACCDMA_OP_RECV, 1, op.tag, 32, "recv", -1, 0, 0, 0 };

	local_open(&l, 2);
	assert_int_equal(atc_buf_get(&l.aw[0], 32, &b), 0);
	op.key = b.key;
	assert_int_equal(atc_post_recv(&l.aw[0], &ol, &op, &d, 32, 1000, NULL), 0);
	assert_int_equal(atc_test(&l.aw[0], &ol), 0);
	assert_int_equal(atc_wait(&l.aw[0], &ol, 50, err, sizeof(err), &st), -ETIMEDOUT);
	assert_non_null(strstr(err, "timed out after 50 ms: recv: recv from rank 1 (tag 5, 32 bytes)"));
	assert_non_null(strstr(err, "waiting for"));
	assert_int_equal(atc_cancel(&l.aw[0], &ol, TH_HANG_MS), 1);
	assert_int_equal(ol.st[0], ACCDMA_ST_CANCELED);
	atc_ops_free(&ol);
	atc_buf_put(&l.aw[0], &b);
	local_close(&l);
}

static void test_short_and_truncated(void **s)
{
	(void)s;
	struct atc_oplist ol0 = { 0 }, ol1 = { 0 };
	struct atc_buf b0, b1;
	struct local l;
	char err[512];
	enum accdma_status st;
	struct accdma_op snd = { .kind = ACCDMA_OP_SEND, .peer = 1, .tag = 9, .length = 16 };
	struct accdma_op rcv = { .kind = ACCDMA_OP_RECV, .peer = 0, .tag = 9, .length = 32 };
	struct atc_opdesc ds = { ACCDMA_OP_SEND, 1, 9, 16, "send", -1, 0, 0, 0 };
	struct atc_opdesc dr = { ACCDMA_OP_RECV, 0, 9, 32, "recv", -1, 0, 0, 0 };

	local_open(&l, 2);
	assert_int_equal(atc_buf_get(&l.aw[0], 64, &b0), 0);
	assert_int_equal(atc_buf_get(&l.aw[1], 64, &b1), 0);
	snd.key = b0.key;
	rcv.key = b1.key;
	memset(b0.ptr, 7, 64);
	/* 16 bytes into a recv that expects 32: named, data landed */
	assert_int_equal(atc_post_recv(&l.aw[1], &ol1, &rcv, &dr, 32, 1000, NULL), 0);
	assert_int_equal(atc_post(&l.aw[0], &ol0, &snd, &ds, 1000, NULL), 0);
	assert_int_equal(atc_wait(&l.aw[0], &ol0, TH_HANG_MS, err, sizeof(err), &st), 0);
	assert_int_equal(atc_wait(&l.aw[1], &ol1, TH_HANG_MS, err, sizeof(err), &st), -EMSGSIZE);
	assert_non_null(strstr(err, "recv from rank 0 (tag 9, 32 bytes) received 16 bytes: the tensor holds 32"));
	assert_int_equal(((unsigned char *)b1.ptr)[15], 7);
	atc_ops_free(&ol0);
	atc_ops_free(&ol1);
	/* 64 bytes into 32: the recv TRUNCATED and named; the send, eager, is done */
	snd.length = 64;
	ds.bytes = 64;
	assert_int_equal(atc_post_recv(&l.aw[1], &ol1, &rcv, &dr, 32, 1000, NULL), 0);
	assert_int_equal(atc_post(&l.aw[0], &ol0, &snd, &ds, 1000, NULL), 0);
	assert_int_equal(atc_wait(&l.aw[1], &ol1, TH_HANG_MS, err, sizeof(err), &st), -EIO);
	assert_int_equal(st, ACCDMA_ST_TRUNCATED);
	assert_non_null(strstr(err, "recv from rank 0 (tag 9, 32 bytes) failed: TRUNCATED"));
	assert_int_equal(atc_wait(&l.aw[0], &ol0, TH_HANG_MS, err, sizeof(err), &st), 0);
	atc_ops_free(&ol0);
	atc_ops_free(&ol1);
	/* past eager_max (4096 into 2048): TRUNCATED on both sides */
	snd.length = 4096;
	ds.bytes = 4096;
	rcv.length = dr.bytes = 2048;
	atc_buf_put(&l.aw[0], &b0);
	atc_buf_put(&l.aw[1], &b1);
	assert_int_equal(atc_buf_get(&l.aw[0], 4096, &b0), 0);
	assert_int_equal(atc_buf_get(&l.aw[1], 4096, &b1), 0);
	snd.key = b0.key;
	rcv.key = b1.key;
	assert_int_equal(atc_post_recv(&l.aw[1], &ol1, &rcv, &dr, 2048, 1000, NULL), 0);
	assert_int_equal(atc_post(&l.aw[0], &ol0, &snd, &ds, 1000, NULL), 0);
	assert_int_equal(atc_wait(&l.aw[1], &ol1, TH_HANG_MS, err, sizeof(err), &st), -EIO);
	assert_non_null(strstr(err, "recv from rank 0 (tag 9, 2048 bytes) failed: TRUNCATED"));
	assert_int_equal(atc_wait(&l.aw[0], &ol0, TH_HANG_MS, err, sizeof(err), &st), -EIO);
	assert_int_equal(st, ACCDMA_ST_TRUNCATED);
	assert_non_null(strstr(err, "send to rank 1 (tag 9, 4096 bytes) failed: TRUNCATED"));
	atc_ops_free(&ol0);
	atc_ops_free(&ol1);
	atc_buf_put(&l.aw[0], &b0);
	atc_buf_put(&l.aw[1], &b1);
	local_close(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reduce_arith),
		cmocka_unit_test(test_reduce_half),
		cmocka_unit_test(test_reduce_bool_complex),
		cmocka_unit_test(test_copy_alignments),
		cmocka_unit_test(test_pool_and_devmem),
		cmocka_unit_test(test_ring_allreduce),
		cmocka_unit_test(test_ring_rs_ag),
		cmocka_unit_test(test_bcast_barrier_alltoall),
		cmocka_unit_test(test_timeout_names_op),
		cmocka_unit_test(test_short_and_truncated),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
