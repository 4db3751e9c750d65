/* SPDX-License-Identifier: MIT */
/* th.c - shared helpers for the libaccdma cmocka tests (see th.h). */
#include "helpers/th.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define TH_FAIL(file, line, ...)                                                     \
	do {                                                                           \
		print_error(__VA_ARGS__);                                              \
		_fail(file, line);                                                     \
	} while (0)

void th_opts(struct accdma_world_opts *o, int n)
{
	int rc = accdma_world_opts_init(o);

	assert_int_equal(rc, 0);
	o->num_devices = n;
	o->mem_size = 8u << 20;
	o->log_level = 0;
}

accdma_world *th_open_opts_(const struct accdma_world_opts *o, const char *file, int line)
{
	accdma_world *w = NULL;
	int rc = accdma_world_open(o, &w);

	if (rc != 0 || !w)
		TH_FAIL(file, line, "accdma_world_open(num_devices=%d) = %d\n", o->num_devices, rc);
	return w;
}

accdma_world *th_open_(int n, const char *file, int line)
{
	struct accdma_world_opts o;

	th_opts(&o, n);
	return th_open_opts_(&o, file, line);
}

void th_close_(accdma_world *w, const char *file, int line)
{
	int rc = accdma_world_close(w);

	if (rc != 0)
		TH_FAIL(file, line, "accdma_world_close = %d\n", rc);
}

accdma_queue *th_q_(accdma_world *w, int dev, int index, const char *file, int line)
{
	accdma_queue *q = NULL;
	int rc = accdma_queue_get(w, dev, index, &q);

	if (rc != 0 || !q)
		TH_FAIL(file, line, "accdma_queue_get(dev %d, %d) = %d\n", dev, index, rc);
	return q;
}

accdma_key th_alloc_(accdma_world *w, int dev, uint64_t size, void **ptr, const char *file,
		     int line)
{
	accdma_key key = 0;
	uint64_t got = 0;
	unsigned char *p;
	int rc = accdma_mem_alloc(w, dev, size, &key);

	if (rc != 0 || key == 0)
		TH_FAIL(file, line, "accdma_mem_alloc(dev %d, %" PRIu64 ") = %d key %u\n", dev, size,
			rc, key);
	p = accdma_mem_ptr(w, dev, key, &got);
	if (!p || got != size)
		TH_FAIL(file, line, "accdma_mem_ptr(dev %d, key %u) = %p size %" PRIu64 "\n", dev,
			key, (void *)p, got);
	for (uint64_t i = 0; i < size; i++)
		if (p[i])
			TH_FAIL(file, line, "region not zero-filled at %" PRIu64 "\n", i);
	if (ptr)
		*ptr = p;
	return key;
}

enum accdma_status th_wait_within_(accdma_world *w, accdma_token t, int64_t ms, const char *what,
				   const char *file, int line)
{
	enum accdma_status st = ACCDMA_ST__COUNT;
	int rc = accdma_wait(w, t, ms, &st);

	if (rc != 0) {
		if (rc == -ETIMEDOUT)
			accdma_stall_report(w, stderr);
		TH_FAIL(file, line, "%s%saccdma_wait(%#" PRIx64 ", %lld ms) = %d (%s)\n", what ? what : "",
			what ? ": " : "", t, (long long)ms, rc, strerror(-rc));
	}
	return st;
}

enum accdma_status th_wait_(accdma_world *w, accdma_token t, const char *file, int line)
{
	return th_wait_within_(w, t, TH_HANG_MS, NULL, file, line);
}

void th_assert_st_(enum accdma_status got, enum accdma_status want, const char *file, int line)
{
	if (got != want)
		TH_FAIL(file, line, "status %s (%d), want %s (%d)\n", accdma_status_str(got), got,
			accdma_status_str(want), want);
}

void th_wait_st_(accdma_world *w, accdma_token t, enum accdma_status want, const char *file,
		 int line)
{
	th_assert_st_(th_wait_(w, t, file, line), want, file, line);
}

void th_wait_all_st_(accdma_world *w, const accdma_token *t, int n, enum accdma_status want,
		     const char *file, int line)
{
	for (int i = 0; i < n; i++) {
		enum accdma_status st = th_wait_(w, t[i], file, line);

		if (st != want)
			TH_FAIL(file, line, "token %d of %d: status %s, want %s\n", i, n,
				accdma_status_str(st), accdma_status_str(want));
	}
}

void th_pending_(accdma_world *w, accdma_token t, const char *file, int line)
{
	enum accdma_status st = ACCDMA_ST__COUNT;
	int rc = accdma_test(w, t, &st);

	if (rc != -EAGAIN)
		TH_FAIL(file, line,
			"accdma_test(%#" PRIx64 ") = %d (status %s): expected the op still pending\n",
			t, rc, rc == 0 ? accdma_status_str(st) : "-");
}

static int th_noop_fn(void *arg)
{
	(void)arg;
	return 0;
}

void th_kick_(accdma_world *w, int dev, int qi, int rounds, const char *file, int line)
{
	accdma_queue *q = th_q_(w, dev, qi, file, line);

	for (int r = 0; r < rounds; r++) {
		accdma_token t = 0;
		int rc = accdma_exec(q, th_noop_fn, NULL, NULL, 0, &t);

		if (rc != 0)
			TH_FAIL(file, line, "kick exec on dev %d = %d\n", dev, rc);
		th_wait_st_(w, t, ACCDMA_OK, file, line);
	}
}

/* ---- data ------------------------------------------------------------- */

void th_fill_f32(void *p, size_t n, float v)
{
	float *f = p;

	for (size_t i = 0; i < n; i++)
		f[i] = v;
}

void th_fill_i32(void *p, size_t n, int32_t v)
{
	int32_t *f = p;

	for (size_t i = 0; i < n; i++)
		f[i] = v;
}

void th_fill_u8(void *p, size_t n, uint8_t v)
{
	memset(p, v, n);
}

static uint8_t th_pat(size_t k, uint32_t seed)
{
	uint32_t x = (uint32_t)k * 2654435761u ^ seed * 40503u;

	x ^= x >> 13;
	x *= 0x5bd1e995u;
	x ^= x >> 15;
	return (uint8_t)x;
}

void th_fill_pattern(void *p, size_t n, uint32_t seed)
{
	uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		b[i] = th_pat(i, seed);
}

int th_check_f32_(const void *p, size_t n, float v, const char *what, const char *file, int line)
{
	const float *f = p;

	for (size_t i = 0; i < n; i++)
		if (f[i] != v)
			TH_FAIL(file, line, "%s: element %zu is %g, want %g\n", what, i, (double)f[i],
				(double)v);
	return 1;
}

int th_check_i32_(const void *p, size_t n, int32_t v, const char *what, const char *file, int line)
{
	const int32_t *f = p;

	for (size_t i = 0; i < n; i++)
		if (f[i] != v)
			TH_FAIL(file, line, "%s: element %zu is %d, want %d\n", what, i, f[i], v);
	return 1;
}

int th_check_u8_(const void *p, size_t n, uint8_t v, const char *what, const char *file, int line)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != v)
			TH_FAIL(file, line, "%s: byte %zu is %#x, want %#x\n", what, i, b[i], v);
	return 1;
}

int th_check_pattern_(const void *p, size_t n, uint32_t seed, const char *what, const char *file,
		      int line)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != th_pat(i, seed))
			TH_FAIL(file, line, "%s: byte %zu is %#x, want %#x (pattern %u)\n", what, i,
				b[i], th_pat(i, seed), seed);
	return 1;
}

/* ---- order log -------------------------------------------------------- */

void th_log_init(struct th_log *log)
{
	atomic_init(&log->n, 0);
	for (int i = 0; i < TH_LOG_MAX; i++)
		log->ids[i] = -1;
}

int th_mark_fn(void *arg)
{
	struct th_mark *m = arg;
	int i = atomic_fetch_add(&m->log->n, 1);

	if (i < TH_LOG_MAX)
		m->log->ids[i] = m->id;
	return 0;
}

int th_fail_fn(void *arg)
{
	if (arg)
		atomic_store((atomic_int *)arg, 1);
	return 1;
}

int th_flag_fn(void *arg)
{
	atomic_store((atomic_int *)arg, 1);
	return 0;
}

int th_log_pos(const struct th_log *log, int id)
{
	int n = atomic_load(&((struct th_log *)log)->n);

	for (int i = 0; i < n && i < TH_LOG_MAX; i++)
		if (log->ids[i] == id)
			return i;
	return -1;
}

void th_log_expect_(const struct th_log *log, const int *ids, int n, const char *file, int line)
{
	int got = atomic_load(&((struct th_log *)log)->n);
	char buf[512];
	size_t off = 0;

	for (int i = 0; i < got && i < TH_LOG_MAX && off < sizeof(buf) - 16; i++)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, " %d", log->ids[i]);
	buf[off] = 0;
	if (got != n)
		TH_FAIL(file, line, "log has %d entries (%s), want %d\n", got, buf, n);
	for (int i = 0; i < n; i++)
		if (log->ids[i] != ids[i])
			TH_FAIL(file, line, "log entry %d is %d, want %d (log:%s)\n", i, log->ids[i],
				ids[i], buf);
}

/* ---- randomness ------------------------------------------------------ */

static uint64_t th_cur_seed;

uint64_t th_seed(void)
{
	const char *e = getenv("ACCDMA_TEST_SEED");

	if (e && *e) {
		th_cur_seed = strtoull(e, NULL, 0);
	} else {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		th_cur_seed = ((uint64_t)ts.tv_sec * 1000000007ull) ^ (uint64_t)ts.tv_nsec ^
			      ((uint64_t)getpid() << 32);
	}
	print_message("seed %llu (repeat with ACCDMA_TEST_SEED=%llu)\n",
		      (unsigned long long)th_cur_seed, (unsigned long long)th_cur_seed);
	return th_cur_seed;
}

uint64_t th_seed_current(void)
{
	return th_cur_seed;
}

uint64_t th_rand(struct th_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t th_rand_below(struct th_rng *r, uint64_t n)
{
	return n ? th_rand(r) % n : 0;
}

void th_shuffle(int *a, int n, struct th_rng *r)
{
	for (int i = n - 1; i > 0; i--) {
		int j = (int)th_rand_below(r, (uint64_t)i + 1);
		int t = a[i];

		a[i] = a[j];
		a[j] = t;
	}
}

int th_iters(int dflt)
{
	const char *e = getenv("ACCDMA_TEST_ITERS");

	if (e && *e) {
		int v = atoi(e);

		if (v > 0)
			return v;
	}
	return dflt;
}
