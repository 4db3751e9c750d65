/* SPDX-License-Identifier: MIT */
/*
 * test_shm_arena.c - a process that maps the master's arena checks its
 * layout before following any offset in it (drv_shm_arena_ok()).
 *
 *  - arenas laid out by q_layout_init() pass: 2 devices with the default
 *    queue depth (256-slot eager rings), with queues of 4096 (4096-slot
 *    rings), and 65 devices (no rings);
 *  - each of these fails it: another geometry than this process's options,
 *    a bad magic, an eager ring size that is not a power of two or is out of
 *    range, a device's eager rings running past the end of the arena, or
 *    eager rings where the world has none, a rendezvous table past the end;
 *  - an eager_max above what the rings carry (q_eager_cap(): 1024 bytes in
 *    deep rings, 488 in the 128-position rings of 17 devices), or any
 *    eager_max in a world without rings: the engine copies up to eager_max
 *    bytes out of a ring.
 */
#include <stdlib.h>
#include <string.h>

#include "helpers/th.h"

#include "driver/shm.h"
#include "queue/queue.h"

struct arena {
	struct accdma_world_opts o;
	struct q_world_sh *a;
	uint64_t size;
};

/* An arena as the master lays it out for @ndev devices with queues of @depth. */
static void arena_make(struct arena *ar, int ndev, uint32_t depth)
{
	assert_int_equal(accdma_world_opts_init(&ar->o), 0);
	ar->o.num_devices = ndev;
	ar->o.queues = 1;
	ar->o.engines = 1;
	ar->o.queue_depth = depth;
	ar->size = q_layout_size((uint32_t)ndev, 1, depth);
	ar->a = aligned_alloc(4096, ar->size);
	assert_non_null(ar->a);
	memset(ar->a, 0, ar->size);
	assert_int_equal(q_layout_init(ar->a, (uint32_t)ndev, 1, 1, depth, 0, ACCDMA_EAGER_MAX_DEFAULT), 0);
}

static void arena_free(struct arena *ar)
{
	q_layout_fini(ar->a);
	free(ar->a);
}

static int ok(const struct arena *ar)
{
	return drv_shm_arena_ok(ar->a, ar->size, &ar->o);
}

static void test_layouts_pass(void **state)
{
	static const struct { int ndev; uint32_t depth, slots; } cases[] = {
		{ 2, 256, 256 * Q_EAGER_SLOTS_PER_OP }, { 2, 4096, 4096 * Q_EAGER_SLOTS_PER_OP }, { 65, 256, 0 },
	};
	struct arena ar;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		arena_make(&ar, cases[i].ndev, cases[i].depth);
		assert_int_equal(ar.a->eager_slots, cases[i].slots);
		assert_int_equal(ok(&ar), 1);
		arena_free(&ar);
	}
}

static void test_geometry_and_magic(void **state)
{
	struct arena ar;

	(void)state;
	arena_make(&ar, 2, 1024);
	ar.o.queue_depth = 512; /* this process expects another geometry */
	assert_int_equal(ok(&ar), 0);
	ar.o.queue_depth = 1024;
	assert_int_equal(ok(&ar), 1);
	ar.a->magic ^= 1;
	assert_int_equal(ok(&ar), 0);
	arena_free(&ar);
}

static void test_eager_rings_checked(void **state)
{
	struct arena ar;
	uint32_t slots;
	uint64_t off;

	(void)state;
	arena_make(&ar, 2, 1024);
	slots = ar.a->eager_slots;
	assert_int_equal(slots, 1024 * Q_EAGER_SLOTS_PER_OP);
	ar.a->eager_slots = slots + 1; /* not a power of two */
	assert_int_equal(ok(&ar), 0);
	ar.a->eager_slots = 32; /* smaller than any layout makes */
	assert_int_equal(ok(&ar), 0);
	ar.a->eager_slots = 2 * Q_EAGER_SLOTS_MAX; /* larger */
	assert_int_equal(ok(&ar), 0);
	ar.a->eager_slots = 0; /* rings at eager_off, but the world says none */
	assert_int_equal(ok(&ar), 0);
	ar.a->eager_slots = slots;
	assert_int_equal(ok(&ar), 1);

	/* device 1's rings moved so that their end passes the arena's */
	off = q_dev(ar.a, 1)->eager_off;
	q_dev(ar.a, 1)->eager_off = ar.size - q_eager_ring_bytes(slots); /* room for one ring of two */
	assert_int_equal(ok(&ar), 0);
	q_dev(ar.a, 1)->eager_off = off;
	/* rings larger than were laid out run past the end too */
	ar.a->eager_slots = Q_EAGER_SLOTS_MAX;
	assert_int_equal(ok(&ar), 0);
	ar.a->eager_slots = slots;
	assert_int_equal(ok(&ar), 1);

	/* and the rendezvous table, as before */
	off = q_dev(ar.a, 0)->rdv_off;
	q_dev(ar.a, 0)->rdv_off = ar.size;
	assert_int_equal(ok(&ar), 0);
	q_dev(ar.a, 0)->rdv_off = off;
	assert_int_equal(ok(&ar), 1);
	arena_free(&ar);
}

static void test_eager_max_checked(void **state)
{
	static const struct { int ndev; uint32_t cap; } cases[] = {
		/* 17 devices: 4 KiB rings; a message takes an eighth, less the 24-byte header */
		{ 2, ACCDMA_EAGER_MAX }, { 17, 4096 / 8 - 24 },
	};
	struct arena ar;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		arena_make(&ar, cases[i].ndev, 256);
		assert_int_equal(q_eager_cap(ar.a->eager_slots), cases[i].cap);
		ar.a->eager_max = cases[i].cap;
		assert_int_equal(ok(&ar), 1);
		ar.a->eager_max = cases[i].cap + 1;
		assert_int_equal(ok(&ar), 0);
		ar.a->eager_max = UINT32_MAX;
		assert_int_equal(ok(&ar), 0);
		ar.a->eager_max = 0; /* eager sends off: nothing is copied out of a ring */
		assert_int_equal(ok(&ar), 1);
		arena_free(&ar);
	}
	arena_make(&ar, 65, 256); /* no rings */
	assert_int_equal(ar.a->eager_max, 0);
	assert_int_equal(ok(&ar), 1);
	ar.a->eager_max = 8;
	assert_int_equal(ok(&ar), 0);
	arena_free(&ar);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layouts_pass),
		cmocka_unit_test(test_geometry_and_magic),
		cmocka_unit_test(test_eager_rings_checked),
		cmocka_unit_test(test_eager_max_checked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
