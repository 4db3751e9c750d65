/* SPDX-License-Identifier: MIT */
/*
 * test_eager_env.c - eager_max from ACCDMA_EAGER_MAX and from the options: its
 * default, out-of-range values rejected with the field kept.
 */
#include "eager_th.h"

/* ---- 13. options and environment -------------------------------------------------------- */

static void test_env_and_opts(void **state)
{
	(void)state;
	struct accdma_world_opts o;
	accdma_world *w = NULL;
	const char *old = getenv("ACCDMA_EAGER_MAX");
	char *saved = old ? strdup(old) : NULL;
	static const char *const bad[] = { "1025", "-1", "100000", "abc", "4x" };
	struct pr p;
	accdma_token s, r;

	CTX("env and options");
	unsetenv("ACCDMA_EAGER_MAX");
	assert_int_equal(accdma_world_opts_init(&o), 0);
	assert_int_equal(o.eager_max, ACCDMA_EAGER_MAX_DEFAULT);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("ACCDMA_EAGER_MAX", bad[i], 1);
		assert_int_equal(accdma_world_opts_init(&o), -EINVAL);
		/* the field keeps its default (as every malformed variable does) */
		assert_int_equal(o.eager_max, ACCDMA_EAGER_MAX_DEFAULT);
	}
	setenv("ACCDMA_EAGER_MAX", "40", 1);
	assert_int_equal(accdma_world_opts_init(&o), 0);
	assert_int_equal(o.eager_max, 40);
	setenv("ACCDMA_EAGER_MAX", "7", 1);
	assert_int_equal(accdma_world_opts_init(&o), 0);
	assert_int_equal(o.eager_max, 7);

	/* ACCDMA_EAGER_MAX=0 is honored: a small send waits for its recv */
	setenv("ACCDMA_EAGER_MAX", "0", 1);
	assert_int_equal(accdma_world_opts_init(&o), 0);
	assert_int_equal(o.eager_max, 0);
	o.num_devices = 2;
	o.mem_size = 1u << 20;
	o.log_level = 0;
	w = th_open_opts(&o);
	memset(&p, 0, sizeof(p));
	p.w = w;
	p.qs = th_q(w, 0);
	p.qr = th_q(w, 1);
	p.ks = th_alloc(w, 0, SRC_SIZE, (void **)&p.src);
	p.kd = th_alloc(w, 1, DST_SIZE, (void **)&p.dst);
	th_fill_u8(p.dst, DST_SIZE, GUARD);
	s = pr_send(&p, 1, 0, 8, 90);
	still_pending(w, 0, 0, s);
	r = pr_recv(&p, 1, 0, 64);
	th_wait_ok(w, r);
	th_wait_ok(w, s);
	check_landed(p.dst, 0, 64, 8, 90);
	th_close(w);

	/* restore the environment before anything else can fail */
	if (saved) {
		setenv("ACCDMA_EAGER_MAX", saved, 1);
		free(saved);
	} else {
		unsetenv("ACCDMA_EAGER_MAX");
	}

	/* out-of-range options */
	th_opts(&o, 2);
	o.eager_max = ACCDMA_EAGER_MAX + 1;
	w = NULL;
	assert_int_equal(accdma_world_open(&o, &w), -EINVAL);
	assert_null(w);
	o.eager_max = -1;
	assert_int_equal(accdma_world_open(&o, &w), -EINVAL);
	assert_null(w);
	/* in range at both ends */
	o.eager_max = 0;
	w = th_open_opts(&o);
	th_close(w);
	o.eager_max = ACCDMA_EAGER_MAX;
	w = th_open_opts(&o);
	th_close(w);
	/* more devices than get rings: eager is off silently, not an error */
	th_opts(&o, ACCDMA_EAGER_MAX_DEVICES + 1);
	o.engines = 0;
	o.mem_size = 64u << 10;
	o.queue_depth = 16;
	o.eager_max = ACCDMA_EAGER_MAX;
	w = th_open_opts(&o);
	th_close(w);
	ctx[0] = 0;
}

int main(int argc, char **argv)
{
	struct th_cases t = { 0 };

	(void)argc;
	(void)argv;
	seed = th_seed();
	CASE(&t, test_env_and_opts, NULL, "test_env_and_opts");
	return th_run_cases("test_eager_env", &t, NULL, NULL);
}
