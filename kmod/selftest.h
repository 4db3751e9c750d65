/* SPDX-License-Identifier: MIT */
/*
 * selftest.h - what the self-test's files share: a test's context, its
 * check macro, and the helpers that post, wait and allocate for it.
 */
#ifndef ACCDMA_KMOD_SELFTEST_H
#define ACCDMA_KMOD_SELFTEST_H

#include <linux/time64.h>

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

int st_post(struct st *t, uint32_t dev, uint16_t kind, int32_t peer, uint64_t tag, uint32_t key,
	    uint64_t len, const uint64_t *deps, uint16_t ndeps, uint64_t *tok);
void st_expect2(struct st *t, uint64_t tok, enum accdma_status want, enum accdma_status want2,
		uint64_t bytes);
void st_expect(struct st *t, uint64_t tok, enum accdma_status want, uint64_t bytes);
int st_mem(struct st *t, uint32_t dev, uint64_t size, uint32_t *key, void **addr);

/* selftest_stress.c */
void st_scribble(struct st *t, uint32_t ndev);
void st_rounds(struct st *t, uint32_t ndev);

#endif /* ACCDMA_KMOD_SELFTEST_H */
