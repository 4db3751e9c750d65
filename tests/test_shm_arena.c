/* SPDX-License-Identifier: MIT */
/*
 * test_shm_arena.c - the arena's geometry is every process's own.
 *
 *  - q_geom_init() places everything inside the arena it sizes, for small,
 *    deep and large worlds (2 devices with the default depth: 256-slot
 *    eager rings; queues of 4096: 4096-slot rings; 65 devices: no rings),
 *    and rejects shapes out of range;
 *  - a joining process compares the master's header with the geometry it
 *    computed (q_layout_matches()): another shape, magic, size, ring size or
 *    eager_max fails it;
 *  - the eager cap: an eager_max above what the rings carry (1024 bytes in
 *    deep rings, 488 in the 128-position rings of 17 devices) is lowered,
 *    and a world without rings has none.
 */
#include <stdlib.h>
#include <string.h>

#include "helpers/th.h"

#include "queue/queue.h"

struct arena {
	struct q_arena a;
};

static void arena_make(struct arena *ar, uint32_t ndev, uint32_t depth)
{
	assert_int_equal(q_geom_init(&ar->a.g, ndev, 1, 1, depth, ACCDMA_EAGER_MAX_DEFAULT, 1), 0);
	ar->a.sh = aligned_alloc(4096, ar->a.g.size);
	assert_non_null(ar->a.sh);
	memset(ar->a.sh, 0, ar->a.g.size);
	q_layout_init(&ar->a);
}

static void arena_free(struct arena *ar)
{
	free(ar->a.sh);
}

/* [@p, @p + @len) inside the arena? */
static void inside(const struct arena *ar, const void *p, uint64_t len)
{
	uintptr_t base = (uintptr_t)ar->a.sh, at = (uintptr_t)p;

	assert_true(at >= base);
	assert_true(at - base + len <= ar->a.g.size);
}

static void test_layouts_inside(void **state)
{
	static const struct { uint32_t ndev, depth, slots; } cases[] = {
		{ 2, 256, 256 * Q_EAGER_SLOTS_PER_OP }, { 2, 4096, 4096 * Q_EAGER_SLOTS_PER_OP }, { 65, 256, 0 },
	};
	struct arena ar;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct q_geom *g = &ar.a.g;
		uint32_t last = cases[i].ndev - 1;

		arena_make(&ar, cases[i].ndev, cases[i].depth);
		assert_int_equal(g->eager_slots, cases[i].slots);
		assert_int_equal(g->size, q_layout_size(cases[i].ndev, 1, cases[i].depth));
		inside(&ar, q_dev(&ar.a, last), sizeof(struct q_dev_sh));
		inside(&ar, q_queue(&ar.a, last, 0), sizeof(struct q_queue_sh));
		inside(&ar, q_descs(&ar.a, last, 0), g->depth * sizeof(struct q_desc));
		inside(&ar, q_cpls(&ar.a, last, 0), g->depth * sizeof(struct q_cpl));
		inside(&ar, q_sq(&ar.a, last, 0), g->depth * sizeof(uint32_t));
		inside(&ar, q_rdv_table(&ar.a, last), g->rdv_cap * sizeof(struct q_rdv));
		/* device 0's tables end before its rendezvous table, which ends before device 1 */
		assert_true((char *)q_sq(&ar.a, 0, 0) + g->depth * sizeof(uint32_t) <= (char *)q_rdv_table(&ar.a, 0));
		assert_true((char *)q_rdv_table(&ar.a, 0) + g->rdv_cap * sizeof(struct q_rdv) <=
			    (char *)q_dev(&ar.a, 1));
		if (g->eager_slots)
			inside(&ar, q_eager_ring(&ar.a, last, last), q_eager_ring_bytes(g->eager_slots));
		else
			assert_int_equal(g->eager_rel, 0);
		assert_int_equal(q_dev(&ar.a, last)->id, (int32_t)last);
		assert_int_equal(q_layout_matches(ar.a.sh, g), 1);
		arena_free(&ar);
	}
}

static void test_bad_shapes(void **state)
{
	struct q_geom g;

	(void)state;
	assert_int_equal(q_geom_init(&g, 0, 1, 1, 256, 0, 0), -EINVAL);
	assert_int_equal(q_geom_init(&g, Q_MAX_DEVICES + 1, 1, 1, 256, 0, 0), -EINVAL);
	assert_int_equal(q_geom_init(&g, 2, 0, 1, 256, 0, 0), -EINVAL);
	assert_int_equal(q_geom_init(&g, 2, 1, 0, 256, 0, 0), -EINVAL);
	assert_int_equal(q_geom_init(&g, 2, 1, 1, 100, 0, 0), -EINVAL);
	assert_int_equal(q_geom_init(&g, 2, 1, Q_MAX_ENGINES + 1, 256, 0, 0), -EINVAL);
	assert_int_equal(q_geom_init(&g, 2, 1, 1, 256, 0, 0), 0);
}

/* Each field of the header the joiner compares, changed alone, fails the match. */
static void test_header_must_match(void **state)
{
	struct arena ar;
	struct q_world_sh saved;

	(void)state;
	arena_make(&ar, 2, 1024);
	saved = *ar.a.sh;
	assert_int_equal(q_layout_matches(ar.a.sh, &ar.a.g), 1);
#define FLIP(field)                                                        \
	do {                                                               \
		ar.a.sh->field ^= 1;                                       \
		assert_int_equal(q_layout_matches(ar.a.sh, &ar.a.g), 0);   \
		*ar.a.sh = saved;                                          \
	} while (0)
	FLIP(magic);
	FLIP(fw_version);
	FLIP(num_devices);
	FLIP(queues);
	FLIP(engines);
	FLIP(depth);
	FLIP(rdv_cap);
	FLIP(eager_max);
	FLIP(eager_slots);
	FLIP(size);
#undef FLIP
	assert_int_equal(q_layout_matches(ar.a.sh, &ar.a.g), 1);
	arena_free(&ar);
}

static void test_eager_cap(void **state)
{
	static const struct { uint32_t ndev, cap; } cases[] = {
		/* 17 devices: 4 KiB rings; a message takes an eighth, less the 24-byte header */
		{ 2, ACCDMA_EAGER_MAX }, { 17, 4096 / 8 - 24 },
	};
	struct q_geom g;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(q_geom_init(&g, cases[i].ndev, 1, 1, 256, ACCDMA_EAGER_MAX, 1), 0);
		assert_int_equal(q_eager_cap(g.eager_slots), cases[i].cap);
		assert_int_equal(g.eager_max, cases[i].cap);
		assert_int_equal(q_geom_init(&g, cases[i].ndev, 1, 1, 256, 0, 1), 0);
		assert_int_equal(g.eager_max, 0);
	}
	assert_int_equal(q_geom_init(&g, 65, 1, 1, 256, ACCDMA_EAGER_MAX, 1), 0); /* no rings */
	assert_int_equal(g.eager_slots, 0);
	assert_int_equal(g.eager_max, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layouts_inside),
		cmocka_unit_test(test_bad_shapes),
		cmocka_unit_test(test_header_must_match),
		cmocka_unit_test(test_eager_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
