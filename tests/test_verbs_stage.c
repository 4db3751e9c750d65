/* SPDX-License-Identifier: MIT */
/*
 * test_verbs_stage.c - the verbs link's staging slots without a device
 * (driver/verbs/stage.c): a medium send from another host lands as one RDMA
 * WRITE with immediate, its message ahead of its data in the slot and the
 * immediate naming the slot. Checked here, on the slots' memory as the peer's
 * write leaves it:
 *
 *  - every slot the sender can name (vb_stage_index(), its immediate) is read
 *    back by the receiver (vb_stage_arrived()) as the message written there,
 *    and its data starts where the recv copies from (vb_link_staged()), in a
 *    slot of its own inside the sending process's block;
 *  - a write from a peer gone wrong is dropped: an immediate past the block,
 *    a message that names another slot, another device, a device of another
 *    process, or a length its write does not carry, or a write that says it
 *    comes from ourselves.
 *
 * The world: 4 devices, 2 per process; we are process 0 (devices 0 and 1),
 * the peer process 1 (devices 2 and 3).
 */
#include "helpers/th.h"

#include <stdlib.h>

#include "driver/verbs/verbs.h"

struct rig {
	struct accdma_world *w;
	struct vb v;
	uint32_t nslots;
};

static int rig_open(void **state)
{
	struct rig *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	r->w = calloc(1, sizeof(*r->w));
	assert_non_null(r->w);
	r->w->a.g.ndev = 4;
	r->w->first_local = 0;
	r->w->nlocal = 2;
	r->v.w = r->w;
	r->v.nprocs = 2;
	r->v.self = 0;
	r->v.L = 2;
	r->nslots = q_stage_slots(4);
	assert_true(r->nslots > 1);
	r->v.stage_len = (size_t)vb_stage_bytes(&r->v);
	r->v.stage = calloc(1, r->v.stage_len);
	assert_non_null(r->v.stage);
	*state = r;
	return 0;
}

static int rig_close(void **state)
{
	struct rig *r = *state;

	free(r->v.stage);
	free(r->w);
	free(r);
	return 0;
}

/* The message a sender puts ahead of @len bytes in slot @slot. */
static struct q_msg staged_msg(uint32_t src, uint32_t dst, uint32_t slot, uint64_t len)
{
	struct q_msg m;

	memset(&m, 0, sizeof(m));
	m.type = Q_MSG_STAGED;
	m.src = (int32_t)src;
	m.dst = (int32_t)dst;
	m.pos = slot;
	m.length = len;
	m.tag = 0x1234500000000000ull | ((uint64_t)src << 16) | slot;
	m.seq = 7 + slot;
	m.queue = 1;
	m.slot = 3;
	m.gen = 9;
	return m;
}

/* Write what the peer's RDMA WRITE with immediate would: @m, then @len data bytes. */
static uint32_t peer_writes(struct rig *r, const struct q_msg *m, uint32_t slot, uint64_t len, uint8_t fill)
{
	uint8_t *data = vb_link_staged(&r->v.link, (uint32_t)m->dst, (uint32_t)m->src, slot);

	assert_non_null(data);
	memcpy(data - VB_SLOT_HEAD, m, Q_MSG_HEAD_BYTES);
	memset(data, fill, len);
	return vb_stage_index(&r->v, (uint32_t)m->src, (uint32_t)m->dst % 2u, slot);
}

static void test_every_slot_read_back(void **state)
{
	struct rig *r = *state;
	uint8_t *block = r->v.stage + r->v.stage_len / 2; /* process 1's */
	uint8_t *last = NULL;
	uint32_t seen = 0;

	for (uint32_t src = 2; src < 4; src++)
		for (uint32_t dst = 0; dst < 2; dst++)
			for (uint32_t slot = 0; slot < r->nslots; slot++) {
				uint64_t len = slot == 0 ? Q_STAGE_BYTES : 1000 + slot;
				struct q_msg m = staged_msg(src, dst, slot, len), got;
				uint32_t index = peer_writes(r, &m, slot, len, (uint8_t)(src * 16 + slot));
				uint8_t *data = vb_link_staged(&r->v.link, dst, src, slot);

				/* its own slot, inside the sender's block, after the one before */
				assert_true(data - VB_SLOT_HEAD >= block);
				assert_true(data + Q_STAGE_BYTES <= r->v.stage + r->v.stage_len);
				assert_true(last == NULL || data >= last + VB_SLOT_BYTES);
				last = data;
				assert_int_equal(index, seen++);
				memset(&got, 0xAB, sizeof(got));
				assert_int_equal(vb_stage_arrived(&r->v, 1, index, VB_SLOT_HEAD + (uint32_t)len, &got), 0);
				assert_memory_equal(&got, &m, Q_MSG_HEAD_BYTES);
				assert_int_equal(data[0], (uint8_t)(src * 16 + slot));
				assert_int_equal(data[len - 1], (uint8_t)(src * 16 + slot));
			}
	/* the data of every slot is still its own: no write ran into the next */
	for (uint32_t src = 2; src < 4; src++)
		for (uint32_t slot = 0; slot < r->nslots; slot++) {
			uint8_t *data = vb_link_staged(&r->v.link, 1, src, slot);

			assert_int_equal(data[0], (uint8_t)(src * 16 + slot));
		}
}

static void test_forged_dropped(void **state)
{
	struct rig *r = *state;
	const uint32_t slot = 5, len = 4096, bytes = VB_SLOT_HEAD + len;
	struct q_msg good = staged_msg(3, 1, slot, len), m, got;
	uint32_t index = peer_writes(r, &good, slot, len, 0x5A);
	uint32_t all = 2u * 2u * r->nslots;

	assert_int_equal(vb_stage_arrived(&r->v, 1, index, bytes, &got), 0);
	assert_int_equal(got.src, 3);
	assert_int_equal(got.dst, 1);
	/* the immediate: past the block; the write: from ourselves, from no process */
	assert_int_equal(vb_stage_arrived(&r->v, 1, all, bytes, &got), -1);
	assert_int_equal(vb_stage_arrived(&r->v, 1, UINT32_MAX, bytes, &got), -1);
	assert_int_equal(vb_stage_arrived(&r->v, 0, index, bytes, &got), -1);
	assert_int_equal(vb_stage_arrived(&r->v, -1, index, bytes, &got), -1);
	assert_int_equal(vb_stage_arrived(&r->v, 2, index, bytes, &got), -1);
	/* the length the write carried is not the message's */
	assert_int_equal(vb_stage_arrived(&r->v, 1, index, bytes - 1, &got), -1);
	assert_int_equal(vb_stage_arrived(&r->v, 1, index, len, &got), -1);
	/* the message, rewritten in place by a peer gone wrong */
	static const char *const bad[] = {
		"another type", "another slot", "our own device as its source", "its process's other device",
		"another destination", "no length", "past a slot",
	};

	for (unsigned k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		uint32_t b = bytes;

		m = good;
		switch (k) {
		case 0: m.type = Q_MSG_RTS; break;
		case 1: m.pos = slot + 1; break;
		case 2: m.src = 0; break;
		case 3: m.src = 2; break;
		case 4: m.dst = 0; break;
		case 5: m.length = 0; b = VB_SLOT_HEAD; break;
		case 6: m.length = Q_STAGE_BYTES + 1; b = VB_SLOT_HEAD + Q_STAGE_BYTES + 1; break;
		}
		memcpy(vb_link_staged(&r->v.link, 1, 3, slot) - VB_SLOT_HEAD, &m, Q_MSG_HEAD_BYTES);
		if (vb_stage_arrived(&r->v, 1, index, b, &got) != -1)
			fail_msg("a staged message with %s was taken", bad[k]);
	}
	/* and the slot named right again is taken again */
	memcpy(vb_link_staged(&r->v.link, 1, 3, slot) - VB_SLOT_HEAD, &good, Q_MSG_HEAD_BYTES);
	assert_int_equal(vb_stage_arrived(&r->v, 1, index, bytes, &got), 0);
	assert_memory_equal(&got, &good, Q_MSG_HEAD_BYTES);
}

static void test_no_slots_for_our_own(void **state)
{
	struct rig *r = *state;

	/* our devices reach each other in memory: no slot, and nothing arrives */
	assert_null(vb_link_staged(&r->v.link, 1, 0, 0));
	assert_null(vb_link_staged(&r->v.link, 2, 3, 0)); /* not a device of ours */
	assert_null(vb_link_staged(&r->v.link, 1, 3, r->nslots));
	assert_null(vb_link_staged(&r->v.link, 1, 4, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_every_slot_read_back, rig_open, rig_close),
		cmocka_unit_test_setup_teardown(test_forged_dropped, rig_open, rig_close),
		cmocka_unit_test_setup_teardown(test_no_slots_for_our_own, rig_open, rig_close),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
