/* SPDX-License-Identifier: MIT */
/*
 * test_verbs_sender.c - over verbs a message is believed only from the
 * process it names (driver/verbs/link.c, vb_msg_sender()), without a device.
 * Every message carries the device it is from, and the receiver acts on it
 * as that device's word: a recv from it fails on its SFAIL, its regions are
 * where its VB_REGION says. Checked here, on messages as they land:
 *
 *  - a message from each device of a peer process, on that process's queue
 *    pair, is taken as its;
 *  - the same message on another peer's queue pair is dropped: a process may
 *    not speak for another, nor for us (our own devices' messages never
 *    cross a queue pair), nor for a device past the world's;
 *  - a torn message (shorter than its header, or than its length says) is
 *    dropped.
 *
 * The world: 6 devices, 2 per process; we are process 1 (devices 2 and 3),
 * the peers processes 0 and 2.
 */
#include "helpers/th.h"

#include <stdlib.h>

#include "driver/verbs/verbs.h"

enum { NPROCS = 3, PER = 2, SELF = 1 };

struct rig {
	struct accdma_world w;
	struct vb v;
	struct ibv_qp qps[NPROCS];
	struct ibv_qp *qp[NPROCS];
};

static int rig_open(void **state)
{
	struct rig *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	r->w.a.g.ndev = NPROCS * PER;
	r->w.first_local = SELF * PER;
	r->w.nlocal = PER;
	r->v.w = &r->w;
	r->v.nprocs = NPROCS;
	r->v.self = SELF;
	r->v.L = PER;
	for (int p = 0; p < NPROCS; p++) {
		r->qps[p].qp_num = 0x100 + (uint32_t)p * 7;
		r->qp[p] = p == SELF ? NULL : &r->qps[p];
	}
	r->v.qp = r->qp;
	*state = r;
	return 0;
}

static int rig_close(void **state)
{
	free(*state);
	return 0;
}

static struct q_msg msg_from(int32_t src, int32_t dst, uint16_t type)
{
	struct q_msg m;

	memset(&m, 0, sizeof(m));
	m.type = type;
	m.src = src;
	m.dst = dst;
	m.tag = 80;
	m.status = ACCDMA_ST_PEER_ERROR;
	return m;
}

static void test_own_word_taken(void **state)
{
	struct rig *r = *state;

	for (int p = 0; p < NPROCS; p++) {
		if (p == SELF)
			continue;
		for (int d = p * PER; d < (p + 1) * PER; d++) {
			struct q_msg m = msg_from(d, SELF * PER, Q_MSG_SFAIL);

			assert_int_equal(vb_msg_sender(&r->v, &m, Q_MSG_HEAD_BYTES, r->qps[p].qp_num), p);
			m = msg_from(d, SELF * PER + 1, VB_REGION); /* the link's own messages too */
			assert_int_equal(vb_msg_sender(&r->v, &m, Q_MSG_HEAD_BYTES, r->qps[p].qp_num), p);
		}
	}
}

static void test_speaking_for_another_dropped(void **state)
{
	struct rig *r = *state;

	for (int32_t d = -1; d <= NPROCS * PER; d++) {
		int owner = d >= 0 && d < NPROCS * PER ? d / PER : -1;

		for (int p = 0; p < NPROCS; p++) {
			struct q_msg m = msg_from(d, SELF * PER, Q_MSG_SFAIL);
			int want = p == owner && p != SELF ? p : -1;

			if (p == SELF)
				continue;
			assert_int_equal(vb_msg_sender(&r->v, &m, Q_MSG_HEAD_BYTES, r->qps[p].qp_num), want);
			m.type = VB_ACK;
			assert_int_equal(vb_msg_sender(&r->v, &m, Q_MSG_HEAD_BYTES, r->qps[p].qp_num), want);
		}
	}
	/* and a queue pair that is nobody's */
	struct q_msg m = msg_from(0, SELF * PER, Q_MSG_SFAIL);

	assert_int_equal(vb_msg_sender(&r->v, &m, Q_MSG_HEAD_BYTES, 0x999), -1);
}

static void test_torn_dropped(void **state)
{
	struct rig *r = *state;
	struct q_msg m = msg_from(0, SELF * PER, Q_MSG_EAGER);

	m.len = 16;
	assert_int_equal(vb_msg_sender(&r->v, &m, Q_MSG_HEAD_BYTES + 16, r->qps[0].qp_num), 0);
	assert_int_equal(vb_msg_sender(&r->v, &m, Q_MSG_HEAD_BYTES + 15, r->qps[0].qp_num), -1);
	assert_int_equal(vb_msg_sender(&r->v, &m, Q_MSG_HEAD_BYTES + 17, r->qps[0].qp_num), -1);
	assert_int_equal(vb_msg_sender(&r->v, &m, Q_MSG_HEAD_BYTES - 1, r->qps[0].qp_num), -1);
	assert_int_equal(vb_msg_sender(&r->v, &m, 0, r->qps[0].qp_num), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_own_word_taken, rig_open, rig_close),
		cmocka_unit_test_setup_teardown(test_speaking_for_another_dropped, rig_open, rig_close),
		cmocka_unit_test_setup_teardown(test_torn_dropped, rig_open, rig_close),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
