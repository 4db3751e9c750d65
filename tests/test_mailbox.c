/* SPDX-License-Identifier: MIT */
/*
 * test_mailbox.c - the device mailbox: info, health and reset.
 *
 *  - device info reports id, engines, queues, memory size and use, NUMA node
 *    and a firmware version;
 *  - health: engines alive, pending op count, heartbeats that only grow,
 *    resets served;
 *  - reset flushes every pending op (FLUSHED), their partners on other
 *    devices complete PEER_ERROR, dependents of flushed ops do not run,
 *    memory regions and their data stay, and the device works afterwards.
 */
#include "helpers/th.h"

#include <errno.h>

#define LEN 128

static void test_device_info(void **state)
{
	(void)state;
	struct accdma_world_opts o;
	accdma_world *w;
	struct accdma_device_info info;
	static const int map[3] = { 0, 0, 0 };
	uint64_t used0;
	accdma_key k;

	th_opts(&o, 3);
	o.engines = 2;
	o.queues = 3;
	o.mem_size = 4u << 20;
	o.numa_map = map;
	w = th_open_opts(&o);
	for (int d = 0; d < 3; d++) {
		memset(&info, 0xff, sizeof(info));
		assert_int_equal(accdma_device_info(w, d, &info), 0);
		assert_int_equal(info.id, d);
		assert_int_equal(info.engines, 2);
		assert_int_equal(info.queues, 3);
		assert_true(info.mem_size == 4u << 20);
		assert_int_equal(info.numa_node, 0);
		assert_true(info.fw_version != 0);
		assert_true(info.mem_used <= info.mem_size);
	}
	assert_int_equal(accdma_device_info(w, 1, &info), 0);
	used0 = info.mem_used;
	k = th_alloc(w, 1, 100000, NULL);
	assert_int_equal(accdma_device_info(w, 1, &info), 0);
	assert_true(info.mem_used >= used0 + 100000);
	/* other devices are not charged */
	{
		struct accdma_device_info i0;

		assert_int_equal(accdma_device_info(w, 0, &i0), 0);
		assert_true(i0.mem_used < info.mem_used);
	}
	assert_int_equal(accdma_mem_free(w, 1, k), 0);
	assert_int_equal(accdma_device_info(w, 1, &info), 0);
	assert_true(info.mem_used == used0);
	/* bad arguments */
	assert_int_equal(accdma_device_info(w, 3, &info), -EINVAL);
	assert_int_equal(accdma_device_info(w, -1, &info), -EINVAL);
	assert_int_equal(accdma_device_info(w, 0, NULL), -EINVAL);
	assert_int_equal(accdma_device_info(NULL, 0, &info), -EBADF);
	assert_int_equal(accdma_device_health(w, 3, &(struct accdma_device_health){ 0 }), -EINVAL);
	assert_int_equal(accdma_device_reset(w, 3), -EINVAL);
	th_close(w);
}

static void test_health(void **state)
{
	(void)state;
	accdma_world *w = th_open(2);
	struct accdma_device_health h, h2;
	accdma_key k0 = th_alloc(w, 0, 4 * LEN, NULL), k1 = th_alloc(w, 1, 4 * LEN, NULL);
	accdma_token r[3], s[3];

	assert_int_equal(accdma_device_health(w, 0, &h), 0);
	assert_int_equal(h.alive, 1);
	assert_true(h.ops_pending == 0);
	assert_true(h.resets == 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(accdma_recv(th_q(w, 0), 1, 1, k0, (uint64_t)i * LEN, LEN, NULL, 0,
					     &r[i]),
				 0);
	th_kick(w, 0, 1);
	assert_int_equal(accdma_device_health(w, 0, &h2), 0);
	assert_int_equal(h2.alive, 1);
	assert_true(h2.ops_pending == 3);
	assert_true(h2.heartbeats >= h.heartbeats);
	assert_true(h2.heartbeats > 0); /* the engine ran the kick */
	for (int i = 0; i < 3; i++)
		assert_int_equal(accdma_send(th_q(w, 1), 0, 1, k1, (uint64_t)i * LEN, LEN, NULL, 0,
					     &s[i]),
				 0);
	th_wait_all_ok(w, r, 3);
	th_wait_all_ok(w, s, 3);
	assert_int_equal(accdma_device_health(w, 0, &h), 0);
	assert_true(h.ops_pending == 0);
	assert_true(h.heartbeats >= h2.heartbeats);
	th_close(w);
}

/*
 * dev 1: recv from 0 (tag 1; its send never comes), an exec and a send to 0
 *        (tag 3) both depending on that recv;
 * dev 0: recv from 1 (tag 3), the partner of dev 1's pending send.
 * Reset dev 1: its three pending ops are FLUSHED, the exec never runs, dev 0's
 * recv (partner of a flushed send) is PEER_ERROR.
 */
static void test_reset_flushes(void **state)
{
	(void)state;
	accdma_world *w = th_open(3);
	uint8_t *b0, *b1, *b2;
	accdma_key k0 = th_alloc(w, 0, 4 * LEN, (void **)&b0);
	accdma_key k1 = th_alloc(w, 1, 4 * LEN, (void **)&b1);
	accdma_key k2 = th_alloc(w, 2, 4 * LEN, (void **)&b2);
	accdma_token r1a, e1, s1, r0, done_before;
	struct accdma_device_health h;
	struct accdma_op_info list[8];
	static atomic_int ran;

	atomic_init(&ran, 0);
	th_fill_u8(b1, 4 * LEN, 0x1B);
	th_fill_u8(b2, 4 * LEN, 0x2B);
	/* an op that completed before the reset keeps its status */
	assert_int_equal(accdma_fence(th_q(w, 1), NULL, 0, &done_before), 0);
	{
		struct accdma_op_info i;

		while (accdma_op_info(w, done_before, &i) == 0 && i.stage != ACCDMA_STAGE_DONE)
			th_kick(w, 2, 1);
	}
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 1, k1, 0, LEN, NULL, 0, &r1a), 0);
	assert_int_equal(accdma_exec(th_q(w, 1), th_flag_fn, &ran, &r1a, 1, &e1), 0);
	assert_int_equal(accdma_send(th_q(w, 1), 0, 3, k1, LEN, LEN, &r1a, 1, &s1), 0);
	assert_int_equal(accdma_recv(th_q(w, 0), 1, 3, k0, 0, LEN, NULL, 0, &r0), 0);
	th_kick(w, 0, 1);
	assert_int_equal(accdma_pending(w, 1, list, 8), 3);

	assert_int_equal(accdma_device_reset(w, 1), 0);
	th_wait_st(w, r1a, ACCDMA_ST_FLUSHED);
	th_wait_st(w, e1, ACCDMA_ST_FLUSHED);
	th_wait_st(w, s1, ACCDMA_ST_FLUSHED);
	th_wait_st(w, r0, ACCDMA_ST_PEER_ERROR);
	th_wait_ok(w, done_before);
	assert_int_equal(atomic_load(&ran), 0);
	assert_int_equal(accdma_pending(w, 1, list, 8), 0);
	assert_int_equal(accdma_device_health(w, 1, &h), 0);
	assert_int_equal(h.alive, 1);
	assert_true(h.resets == 1);
	assert_true(h.ops_pending == 0);

	/* memory stays: same key, same data; nothing was written by flushed ops */
	{
		uint64_t size = 0;

		assert_ptr_equal(accdma_mem_ptr(w, 1, k1, &size), b1);
		assert_true(size == 4 * LEN);
	}
	th_check_u8(b1, 4 * LEN, 0x1B, "dev 1 memory after reset");
	th_check_u8(b0, LEN, 0, "dev 0 recv of a flushed send");

	/* the device works afterwards (fresh tags), both as sender and receiver */
	{
		accdma_token s, r;

		assert_int_equal(accdma_send(th_q(w, 2), 1, 10, k2, 0, LEN, NULL, 0, &s), 0);
		assert_int_equal(accdma_recv(th_q(w, 1), 2, 10, k1, 2 * LEN, LEN, NULL, 0, &r), 0);
		th_wait_ok(w, r);
		th_wait_ok(w, s);
		th_check_u8(b1 + 2 * LEN, LEN, 0x2B, "recv on dev 1 after reset");
		assert_int_equal(accdma_recv(th_q(w, 0), 1, 11, k0, 2 * LEN, LEN, NULL, 0, &r), 0);
		assert_int_equal(accdma_send(th_q(w, 1), 0, 11, k1, 3 * LEN, LEN, NULL, 0, &s), 0);
		th_wait_ok(w, r);
		th_wait_ok(w, s);
		th_check_u8(b0 + 2 * LEN, LEN, 0x1B, "send from dev 1 after reset");
	}
	/* a second reset with nothing pending */
	assert_int_equal(accdma_device_reset(w, 1), 0);
	assert_int_equal(accdma_device_health(w, 1, &h), 0);
	assert_true(h.resets == 2);
	th_close(w);
}

/* Reset with many queues and engines: every queue is flushed. */
static void test_reset_all_queues(void **state)
{
	(void)state;
	struct accdma_world_opts o;
	accdma_world *w;
	accdma_key k;
	accdma_token r[4][4];

	th_opts(&o, 2);
	o.engines = 2;
	o.queues = 4;
	w = th_open_opts(&o);
	k = th_alloc(w, 0, 16 * LEN, NULL);
	for (int qi = 0; qi < 4; qi++)
		for (int i = 0; i < 4; i++)
			assert_int_equal(accdma_recv(th_qi(w, 0, qi), 1, (uint64_t)(qi * 4 + i), k,
						     (uint64_t)(qi * 4 + i) * LEN, LEN, NULL, 0,
						     &r[qi][i]),
					 0);
	assert_int_equal(accdma_device_reset(w, 0), 0);
	for (int qi = 0; qi < 4; qi++)
		th_wait_all_st(w, r[qi], 4, ACCDMA_ST_FLUSHED);
	th_close(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_device_info),
		cmocka_unit_test(test_health),
		cmocka_unit_test(test_reset_flushes),
		cmocka_unit_test(test_reset_all_queues),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
