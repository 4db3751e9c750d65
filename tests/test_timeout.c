/* SPDX-License-Identifier: MIT */
/*
 * test_timeout.c - errors, not hangs: a wait that times out leaves the token
 * valid and the stuck op can be described (kind, device, peer, tag, sequence,
 * bytes, stage); pending ops are listed; cycles of devices waiting on each
 * other are found. Timeouts here are short (200 ms) and expected: nothing
 * depends on how fast anything runs.
 */
#include "helpers/th.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#define SHORT_MS 200
#define TAG 0x1234 /* 4660 */
#define RDV_LEN 2048 /* above eager_max: a send that waits for its recv */

static accdma_world *open_quiet(int n)
{
	struct accdma_world_opts o;

	th_opts(&o, n);
	o.log_level = 0;
	return th_open_opts(&o);
}

static int has_tag(const char *s, uint64_t tag)
{
	char dec[32], hex[32];

	snprintf(dec, sizeof(dec), "%" PRIu64, tag);
	snprintf(hex, sizeof(hex), "%" PRIx64, tag);
	return strstr(s, dec) || strstr(s, hex);
}

/* accdma_stall_report() into @buf (NUL-terminated); returns what it returned. */
static int stall_text(accdma_world *w, char *buf, size_t size)
{
	FILE *f = tmpfile();
	size_t n;
	int rc;

	assert_non_null(f);
	rc = accdma_stall_report(w, f);
	rewind(f);
	n = fread(buf, 1, size - 1, f);
	buf[n] = 0;
	fclose(f);
	return rc;
}

/* A recv with no send times out and names kind, device, peer, tag, sequence and bytes. */
static void test_recv_without_send(void **state)
{
	(void)state;
	accdma_world *w = open_quiet(4);
	accdma_key k1 = th_alloc(w, 1, 1024, NULL);
	accdma_key k3 = th_alloc(w, 3, 1024, NULL);
	accdma_token r, r2, s, s2;
	struct accdma_op_info info, info2, list[8];
	enum accdma_status st = ACCDMA_ST__COUNT;
	char line[512];
	int len;

	assert_int_equal(accdma_recv(th_q(w, 1), 3, TAG, k1, 0, 100, NULL, 0, &r), 0);
	assert_int_equal(accdma_wait(w, r, SHORT_MS, &st), -ETIMEDOUT);
	assert_int_equal(accdma_wait(w, r, 0, &st), -ETIMEDOUT);
	assert_int_equal(accdma_test(w, r, &st), -EAGAIN);

	memset(&info, 0xff, sizeof(info));
	assert_int_equal(accdma_op_info(w, r, &info), 0);
	assert_true(info.token == r);
	assert_int_equal(info.kind, ACCDMA_OP_RECV);
	assert_int_equal(info.device, 1);
	assert_int_equal(info.queue, 0);
	assert_int_equal(info.peer, 3);
	assert_true(info.tag == TAG);
	assert_true(info.bytes == 100);
	assert_int_equal(info.stage, ACCDMA_STAGE_PEER);
	assert_int_equal(info.peer_posted, 0);
	assert_int_equal(info.num_deps, 0);

	len = accdma_op_describe(&info, line, sizeof(line));
	assert_true(len > 0 && (size_t)len < sizeof(line));
	assert_int_equal((int)strlen(line), len);
	assert_non_null(strstr(line, accdma_op_kind_str(ACCDMA_OP_RECV)));
	assert_true(has_tag(line, TAG));
	assert_non_null(strchr(line, '3')); /* the peer */
	/* truncated output is NUL-terminated and reports the full length */
	{
		char small[8];

		memset(small, 'x', sizeof(small));
		assert_int_equal(accdma_op_describe(&info, small, sizeof(small)), len);
		assert_int_equal(small[7], 0);
	}

	/* pending lists it, in queue order, with a second recv behind it */
	assert_int_equal(accdma_recv(th_q(w, 1), 3, TAG, k1, 512, 200, NULL, 0, &r2), 0);
	assert_int_equal(accdma_pending(w, 1, list, 8), 2);
	assert_true(list[0].token == r);
	assert_true(list[1].token == r2);
	assert_true(list[1].bytes == 200);
	assert_true(list[1].seq == list[0].seq + 1);
	assert_int_equal(accdma_pending(w, 1, list, 1), 2); /* count beyond @max */
	assert_int_equal(accdma_pending(w, 0, list, 8), 0);
	assert_int_equal(accdma_pending(w, 3, list, 8), 0);

	/* the sends arrive: the recvs complete with the data */
	{
		uint8_t *src = accdma_mem_ptr(w, 3, k3, NULL);

		th_fill_u8(src, 100, 0x61);
		th_fill_u8(src + 100, 200, 0x62);
	}
	assert_int_equal(accdma_send(th_q(w, 3), 1, TAG, k3, 0, 100, NULL, 0, &s), 0);
	assert_int_equal(accdma_send(th_q(w, 3), 1, TAG, k3, 100, 200, NULL, 0, &s2), 0);
	th_wait_ok(w, s);
	th_wait_ok(w, s2);
	/* done but not consumed: op_info still describes it */
	{
		enum accdma_status st2;

		assert_int_equal(accdma_wait(w, r2, TH_HANG_MS, &st2), 0);
		th_assert_st(st2, ACCDMA_OK);
	}
	th_wait_ok(w, r);
	assert_int_equal(accdma_wait(w, r, 0, &st), -ESTALE);
	assert_int_equal(accdma_op_info(w, r, &info2), -ESTALE);
	{
		uint8_t *dst = accdma_mem_ptr(w, 1, k1, NULL);

		th_check_u8(dst, 100, 0x61, "first recv");
		th_check_u8(dst + 512, 200, 0x62, "second recv");
	}
	assert_int_equal(accdma_pending(w, 1, list, 8), 0);
	th_close(w);
}

/* A send with no recv, and an op waiting on dependencies, are described too;
 * op_info on a done op reports DONE and its status. */
static void test_send_and_deps_info(void **state)
{
	(void)state;
	accdma_world *w = open_quiet(2);
	accdma_key k0 = th_alloc(w, 0, RDV_LEN, NULL);
	accdma_key k1 = th_alloc(w, 1, RDV_LEN, NULL);
	accdma_token s, e, r;
	struct accdma_op_info info;
	static atomic_int ran;

	atomic_init(&ran, 0);
	assert_int_equal(accdma_send(th_q(w, 0), 1, 77, k0, 0, RDV_LEN, NULL, 0, &s), 0);
	assert_int_equal(accdma_exec(th_q(w, 0), th_flag_fn, &ran, &s, 1, &e), 0);
	assert_int_equal(accdma_wait(w, e, SHORT_MS, NULL), -ETIMEDOUT);
	assert_int_equal(atomic_load(&ran), 0);

	assert_int_equal(accdma_op_info(w, s, &info), 0);
	assert_int_equal(info.kind, ACCDMA_OP_SEND);
	assert_int_equal(info.device, 0);
	assert_int_equal(info.peer, 1);
	assert_true(info.tag == 77);
	assert_true(info.bytes == RDV_LEN);
	assert_int_equal(info.stage, ACCDMA_STAGE_PEER);
	assert_int_equal(info.peer_posted, 0);

	assert_int_equal(accdma_op_info(w, e, &info), 0);
	assert_int_equal(info.kind, ACCDMA_OP_EXEC);
	assert_int_equal(info.device, 0);
	assert_int_equal(info.stage, ACCDMA_STAGE_DEPS);
	assert_int_equal(info.num_deps, 1);
	assert_true(info.deps[0] == s);

	/* now the recv: everything completes; op_info of a done op */
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 77, k1, 0, RDV_LEN, NULL, 0, &r), 0);
	th_wait_ok(w, e);
	assert_int_equal(atomic_load(&ran), 1);
	while (accdma_op_info(w, r, &info) == 0 && info.stage != ACCDMA_STAGE_DONE)
		th_kick(w, 1, 1);
	assert_int_equal(accdma_op_info(w, r, &info), 0);
	assert_int_equal(info.stage, ACCDMA_STAGE_DONE);
	th_assert_st(info.status, ACCDMA_OK);
	assert_int_equal(info.peer_posted, 1);
	th_wait_ok(w, r);
	th_wait_ok(w, s);
	th_close(w);
}

/* The default timeout comes from the options; a zero timeout polls. */
static void test_default_timeout(void **state)
{
	(void)state;
	struct accdma_world_opts o;
	accdma_world *w;
	accdma_key k;
	accdma_token r, s;
	enum accdma_status st;

	th_opts(&o, 2);
	o.timeout_ms = SHORT_MS;
	o.log_level = 0;
	w = th_open_opts(&o);
	k = th_alloc(w, 0, 64, NULL);
	assert_int_equal(accdma_recv(th_q(w, 0), 1, 1, k, 0, 64, NULL, 0, &r), 0);
	assert_int_equal(accdma_wait(w, r, ACCDMA_TIMEOUT_DEFAULT, &st), -ETIMEDOUT);
	assert_int_equal(accdma_wait(w, r, 0, &st), -ETIMEDOUT);
	{
		accdma_key k1 = th_alloc(w, 1, 64, NULL);

		assert_int_equal(accdma_send(th_q(w, 1), 0, 1, k1, 0, 64, NULL, 0, &s), 0);
	}
	th_wait_ok(w, r);
	th_wait_ok(w, s);
	th_close(w);
}

/* wait_all: on timeout the done tokens are consumed and zeroed, the others
 * stay; wait_any returns a completed one or times out. */
static void test_wait_all_any_timeout(void **state)
{
	(void)state;
	accdma_world *w = open_quiet(2);
	accdma_queue *q = th_q(w, 0);
	accdma_key k0 = th_alloc(w, 0, 64, NULL);
	accdma_key k1 = th_alloc(w, 1, 64, NULL);
	accdma_token t[3], pend, s;
	enum accdma_status sts[3];
	struct accdma_op_info info;
	static atomic_int flag;
	int idx;

	atomic_init(&flag, 0);
	assert_int_equal(accdma_exec(q, th_flag_fn, &flag, NULL, 0, &t[0]), 0);
	assert_int_equal(accdma_recv(q, 1, 4, k0, 0, 64, NULL, 0, &t[1]), 0);
	pend = t[1];
	assert_int_equal(accdma_after_all(q, &t[0], 1, &t[2]), 0);
	/* let t[0] and t[2] finish (without consuming them) */
	for (int i = 0; i < 3; i += 2)
		while (accdma_op_info(w, t[i], &info) == 0 && info.stage != ACCDMA_STAGE_DONE)
			th_kick_q(w, 1, 0, 1);
	assert_int_equal(accdma_op_info(w, t[2], &info), 0);
	assert_int_equal(info.stage, ACCDMA_STAGE_DONE);
	assert_int_equal(accdma_wait_all(w, t, 3, SHORT_MS, sts), -ETIMEDOUT);
	assert_true(t[1] == pend);
	assert_true(t[0] == 0);
	assert_true(t[2] == 0);
	th_assert_st(sts[0], ACCDMA_OK);
	th_assert_st(sts[2], ACCDMA_OK);
	assert_int_equal(atomic_load(&flag), 1);

	/* wait_any on only-pending tokens times out; on no tokens: -EINVAL */
	{
		accdma_token only[2] = { 0, pend };

		assert_int_equal(accdma_wait_any(w, only, 2, SHORT_MS, NULL), -ETIMEDOUT);
		assert_true(only[1] == pend);
		only[1] = 0;
		assert_int_equal(accdma_wait_any(w, only, 2, SHORT_MS, NULL), -EINVAL);
	}
	assert_int_equal(accdma_send(th_q(w, 1), 0, 4, k1, 0, 64, NULL, 0, &s), 0);
	{
		accdma_token any[3] = { 0, pend, 0 };
		enum accdma_status st = ACCDMA_ST__COUNT;

		idx = accdma_wait_any(w, any, 3, TH_HANG_MS, &st);
		assert_int_equal(idx, 1);
		assert_true(any[1] == 0);
		th_assert_st(st, ACCDMA_OK);
	}
	th_wait_ok(w, s);
	th_close(w);
}

/* Two devices waiting on each other: dev 0 recv from 1, then send to 1
 * depending on that recv; dev 1 the same. find_cycle names {0, 1}; the stall
 * report lists the four ops. Canceling one op breaks the cycle with errors. */
static void test_cycle_two(void **state)
{
	(void)state;
	accdma_world *w = open_quiet(3);
	accdma_key k[3];
	accdma_token r[2], s[2];
	int devs[8];
	enum accdma_status st;

	for (int d = 0; d < 3; d++)
		k[d] = th_alloc(w, d, 256, NULL);
	assert_int_equal(accdma_find_cycle(w, devs, 8), 0);
	for (int d = 0; d < 2; d++) {
		accdma_queue *q = th_q(w, d);

		assert_int_equal(accdma_recv(q, 1 - d, 5, k[d], 0, 64, NULL, 0, &r[d]), 0);
		assert_int_equal(accdma_send(q, 1 - d, 5, k[d], 64, 64, &r[d], 1, &s[d]), 0);
	}
	assert_int_equal(accdma_wait(w, r[0], SHORT_MS, &st), -ETIMEDOUT);
	assert_int_equal(accdma_find_cycle(w, devs, 8), 2);
	assert_true((devs[0] == 0 && devs[1] == 1) || (devs[0] == 1 && devs[1] == 0));
	{
		char buf[8192];

		assert_int_equal(stall_text(w, buf, sizeof(buf)), 4);
		assert_true(buf[0] != 0);
		assert_non_null(strstr(buf, accdma_op_kind_str(ACCDMA_OP_RECV)));
		assert_non_null(strstr(buf, accdma_op_kind_str(ACCDMA_OP_SEND)));
	}
	/* break it */
	assert_int_equal(accdma_cancel(w, r[0]), 0);
	th_wait_st(w, r[0], ACCDMA_ST_CANCELED);
	th_wait_st(w, s[0], ACCDMA_ST_NOT_ATTEMPTED);
	th_wait_st(w, r[1], ACCDMA_ST_PEER_ERROR);
	st = th_wait(w, s[1]);
	assert_true(st == ACCDMA_ST_NOT_ATTEMPTED || st == ACCDMA_ST_PEER_ERROR);
	assert_int_equal(accdma_find_cycle(w, devs, 8), 0);
	th_close(w);
}

/* A three-device cycle 0 -> 1 -> 2 -> 0 (each device's recv waits on the
 * previous one's send, which depends on that device's own recv). */
static void test_cycle_three(void **state)
{
	(void)state;
	enum { N = 4 };
	accdma_world *w = open_quiet(N);
	accdma_key k[N];
	accdma_token r[3], s[3];
	int devs[8], len;

	for (int d = 0; d < N; d++)
		k[d] = th_alloc(w, d, 256, NULL);
	for (int d = 0; d < 3; d++) {
		accdma_queue *q = th_q(w, d);

		assert_int_equal(accdma_recv(q, (d + 2) % 3, 1, k[d], 0, 64, NULL, 0, &r[d]), 0);
		assert_int_equal(accdma_send(q, (d + 1) % 3, 1, k[d], 64, 64, &r[d], 1, &s[d]), 0);
	}
	assert_int_equal(accdma_wait(w, r[2], SHORT_MS, NULL), -ETIMEDOUT);
	len = accdma_find_cycle(w, devs, 8);
	assert_int_equal(len, 3);
	/* devs[i] waits on devs[i+1]: device d waits on d-1 (its recv's source) */
	for (int i = 0; i < 3; i++)
		assert_int_equal(devs[(i + 1) % 3], (devs[i] + 2) % 3);
	/* too little room: no crash, no overflow */
	{
		int two[2] = { -1, -1 };
		int rc = accdma_find_cycle(w, two, 2);

		assert_true(rc >= 0 || rc == -EINVAL);
	}
	assert_int_equal(accdma_cancel(w, r[1]), 0);
	th_wait_st(w, r[1], ACCDMA_ST_CANCELED);
	th_wait_st(w, s[1], ACCDMA_ST_NOT_ATTEMPTED);
	for (int d = 0; d < 3; d++) {
		if (d == 1)
			continue;
		enum accdma_status st1 = th_wait(w, r[d]), st2 = th_wait(w, s[d]);

		assert_true(st1 == ACCDMA_ST_PEER_ERROR || st1 == ACCDMA_ST_NOT_ATTEMPTED);
		assert_true(st2 == ACCDMA_ST_PEER_ERROR || st2 == ACCDMA_ST_NOT_ATTEMPTED);
	}
	th_close(w);
}

/* A device waiting on a device that waits on nothing is no cycle. */
static void test_no_cycle_chain(void **state)
{
	(void)state;
	accdma_world *w = open_quiet(3);
	accdma_key k[3];
	accdma_token r1, s1, r2, s0;
	int devs[4];

	for (int d = 0; d < 3; d++)
		k[d] = th_alloc(w, d, 256, NULL);
	/* 2 waits on 1, 1 waits on 0, 0 has posted nothing */
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 1, k[1], 0, 64, NULL, 0, &r1), 0);
	assert_int_equal(accdma_send(th_q(w, 1), 2, 1, k[1], 0, 64, &r1, 1, &s1), 0);
	assert_int_equal(accdma_recv(th_q(w, 2), 1, 1, k[2], 0, 64, NULL, 0, &r2), 0);
	assert_int_equal(accdma_wait(w, r2, SHORT_MS, NULL), -ETIMEDOUT);
	assert_int_equal(accdma_find_cycle(w, devs, 4), 0);
	assert_int_equal(accdma_send(th_q(w, 0), 1, 1, k[0], 0, 64, NULL, 0, &s0), 0);
	th_wait_ok(w, r2);
	th_wait_ok(w, r1);
	th_wait_ok(w, s1);
	th_wait_ok(w, s0);
	th_close(w);
}

/* The stall report says what the engines do and what landed untaken: a
 * message on another tag sits in dev 1's eager ring while its recv waits. */
static void test_stall_report_ring(void **state)
{
	(void)state;
	accdma_world *w = open_quiet(2);
	accdma_key k0 = th_alloc(w, 0, 256, NULL), k1 = th_alloc(w, 1, 256, NULL);
	accdma_token s9, r8, r9, s8;
	char buf[8192];

	assert_int_equal(accdma_send(th_q(w, 0), 1, 9, k0, 0, 64, NULL, 0, &s9), 0);
	th_wait_ok(w, s9); /* eager: done before any recv */
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 8, k1, 0, 64, NULL, 0, &r8), 0);
	assert_int_equal(accdma_wait(w, r8, SHORT_MS, NULL), -ETIMEDOUT);
	assert_int_equal(stall_text(w, buf, sizeof(buf)), 1);
	assert_non_null(strstr(buf, "device 1: 1 pending op\n"));
	assert_non_null(strstr(buf, "  engine 0: "));
	assert_non_null(strstr(buf, " passes in all, "));
	assert_true(strstr(buf, " late wake-ups, ") && (strstr(buf, " naps\n") || strstr(buf, " nap\n")));
	assert_non_null(strstr(buf, "  eager ring from dev 0: a message landed and not taken: tag 9 seq 0, "
				    "64 bytes (position 0)\n"));
	assert_null(strstr(buf, "eager ring from dev 1"));
	/* take it, and let the waiting recv finish: nothing left to report */
	assert_int_equal(accdma_recv(th_q(w, 1), 0, 9, k1, 64, 64, NULL, 0, &r9), 0);
	assert_int_equal(accdma_send(th_q(w, 0), 1, 8, k0, 64, 64, NULL, 0, &s8), 0);
	th_wait_ok(w, r9);
	th_wait_ok(w, r8);
	th_wait_ok(w, s8);
	assert_int_equal(stall_text(w, buf, sizeof(buf)), 0);
	assert_null(strstr(buf, "eager ring"));
	th_close(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recv_without_send),
		cmocka_unit_test(test_send_and_deps_info),
		cmocka_unit_test(test_default_timeout),
		cmocka_unit_test(test_wait_all_any_timeout),
		cmocka_unit_test(test_cycle_two),
		cmocka_unit_test(test_stall_report_ring),
		cmocka_unit_test(test_cycle_three),
		cmocka_unit_test(test_no_cycle_chain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
