/* SPDX-License-Identifier: MIT */
/*
 * test_verbs_hello.c - whom rank 0 admits to a verbs world
 * (driver/verbs/boot.c, vb_hello_wrong()), without a device. A hello read
 * from a connection is refused, with a reason, unless it is:
 *
 *  - of this accdma version and this job (its cookie);
 *  - of a world shaped like rank 0's (processes, devices, queues, engines,
 *    depth, eager_max);
 *  - from a rank in range, not rank 0, that has not joined yet;
 *  - well formed: its device name, which every rank prints, ends inside
 *    its field.
 *
 * Rank 0 of three processes; rank 2 has joined.
 */
#include "helpers/th.h"

#include <stdlib.h>
#include <string.h>

#include "driver/verbs/verbs.h"

struct rig {
	struct accdma_world w;
	struct vb v;
	int conns[3];
	struct vb_hello mine;
};

static int rig_open(void **state)
{
	struct rig *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	r->v.w = &r->w;
	r->v.nprocs = 3;
	r->v.self = 0;
	r->conns[0] = r->conns[1] = -1;
	r->conns[2] = 7;
	r->v.conns = r->conns;
	r->mine = (struct vb_hello){ .magic = VB_BOOT_MAGIC, .version = 3, .cookie = 0x1234abcd,
				     .rank = 0, .nprocs = 3, .local_devices = 1, .ndev = 3, .queues = 2,
				     .engines = 1, .depth = 256, .eager_max = 1024 };
	strcpy(r->mine.dev, "rxe0");
	*state = r;
	return 0;
}

static int rig_close(void **state)
{
	free(*state);
	return 0;
}

/* Rank 1's hello, as rank 0 expects it. */
static struct vb_hello good(const struct rig *r)
{
	struct vb_hello h = r->mine;

	h.rank = 1;
	strcpy(h.dev, "rxe1");
	return h;
}

static void assert_refused(const struct rig *r, const struct vb_hello *h, const char *why)
{
	const char *got = vb_hello_wrong(&r->v, &r->mine, h);

	assert_non_null(got);
	if (!strstr(got, why))
		fail_msg("refused for '%s', expected '%s'", got, why);
}

static void test_admitted(void **state)
{
	struct rig *r = *state;
	struct vb_hello h = good(r);

	assert_null(vb_hello_wrong(&r->v, &r->mine, &h));
	memset(h.dev, 0, sizeof(h.dev)); /* an empty name ends too */
	assert_null(vb_hello_wrong(&r->v, &r->mine, &h));
	memset(h.dev, 'x', sizeof(h.dev) - 1);
	h.dev[sizeof(h.dev) - 1] = '\0';
	assert_null(vb_hello_wrong(&r->v, &r->mine, &h));
}

static void test_refused(void **state)
{
	struct rig *r = *state;
	struct vb_hello h;

	h = good(r);
	h.magic ^= 1;
	assert_refused(r, &h, "version");
	h = good(r);
	h.version++;
	assert_refused(r, &h, "version");
	h = good(r);
	h.cookie++;
	assert_refused(r, &h, "another job");
	h = good(r);
	h.queues = 1;
	assert_refused(r, &h, "another shape");
	h = good(r);
	h.eager_max = 2048;
	assert_refused(r, &h, "another shape");
	h = good(r);
	h.rank = 0;
	assert_refused(r, &h, "out of range");
	h = good(r);
	h.rank = 3;
	assert_refused(r, &h, "out of range");
	h = good(r);
	h.rank = 2;
	assert_refused(r, &h, "already joined");
	h = good(r);
	memset(h.dev, 'x', sizeof(h.dev)); /* printed with %s, it would read on */
	assert_refused(r, &h, "device name");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_admitted, rig_open, rig_close),
		cmocka_unit_test_setup_teardown(test_refused, rig_open, rig_close),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
