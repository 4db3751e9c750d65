/* SPDX-License-Identifier: MIT */
/*
 * loop_th.h - what the tests of the loop transport share (test_loop.c,
 * test_stage.c): a world whose devices reach each other only through the
 * link, the link's counts of what crossed it, and messages to forge.
 */
#ifndef ACCDMA_TESTS_LOOP_TH_H
#define ACCDMA_TESTS_LOOP_TH_H

#include "helpers/th.h"

#include <string.h>
#include <unistd.h>

#include "driver/loop/loop.h"
#include "queue/queue.h"

/* A loop world of @n devices with @queues queues each. */
static inline accdma_world *loop_open(int n, int queues)
{
	struct accdma_world_opts o;

	th_opts(&o, n);
	o.transport = ACCDMA_TRANSPORT_LOOP;
	o.queues = queues;
	return th_open_opts(&o);
}

/* What crossed @w's link so far (DRV_LOOP__COUNT counts), minus @base if given. */
static inline void loop_counts(accdma_world *w, uint64_t *c, const uint64_t *base)
{
	assert_int_equal(drv_loop_counts(w, c), 0);
	for (int i = 0; base && i < DRV_LOOP__COUNT; i++)
		c[i] -= base[i];
}

/* Wait (up to 20 s) until messages of types @t1 and @t2 together (the same
 * type twice: that one) crossed @w's link @n times since @base (NULL: ever):
 * what a step waits for is a message, not a number of engine passes. */
static inline void loop_wait_counted(accdma_world *w, const uint64_t *base, int t1, int t2, uint64_t n)
{
	uint64_t c[DRV_LOOP__COUNT], got;
	int tries = 0;

	for (;;) {
		loop_counts(w, c, base);
		got = t1 == t2 ? c[t1] : c[t1] + c[t2];
		if (got >= n || ++tries > 20000)
			break;
		usleep(1000);
	}
	assert_true(got >= n);
}

/* A message of @type as far device @src would send it to @dst, all else zero. */
static inline struct q_msg loop_msg(uint16_t type, int32_t src, int32_t dst)
{
	struct q_msg m;

	memset(&m, 0, sizeof(m));
	m.type = type;
	m.src = src;
	m.dst = dst;
	return m;
}

/* A message as far device 1 would send it to device 0 about device 0's op @s. */
static inline struct q_msg loop_msg_about(uint16_t type, accdma_token s)
{
	struct q_msg m = loop_msg(type, 1, 0);

	m.queue = q_token_queue(s);
	m.slot = q_token_slot(s);
	m.gen = q_token_gen(s);
	return m;
}

#endif /* ACCDMA_TESTS_LOOP_TH_H */
