/* SPDX-License-Identifier: MIT */
/*
 * test_nap.c - an engine naps while a host thread polls its device, and for
 * a nap after a host whose wait ended done, but not for polling it slept
 * through, nor after a host that handed its work over (fw_stub/engine.c,
 * engine_nap()); where the host allows it, naps grow beside a host that
 * keeps polling, and a host that leaves work cuts a long one short; the
 * driver allows it only where engines and host are short of CPUs.
 *
 * The host side is driven directly (fw_device_poll_begin()/_end(), as a
 * waiting host's spin does), with ACCDMA_SPIN_US=0 so that an idle engine
 * goes to sleep at once, and ACCDMA_POLL=0 so that the test's own waits
 * neither poll nor count as hosts. A sleeping engine is woken by work (a
 * fence), not by a bare kick: a kick that races its announcement is only
 * covered by the look that follows it, which needs work to find. What is
 * checked is the engine's shared nap count and its `sleeping` flag, never
 * how long anything took: every loop here waits for a state, with a hang
 * guard.
 */
#include "helpers/th.h"

#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "driver/internal.h"
#include "fw_stub/fw_internal.h"

/* A world of one device whose engine goes to sleep as soon as it is idle. */
struct rig {
	accdma_world *w;
	struct q_engine_sh *es; /* its engine's shared state: naps, sleeping, heartbeats */
	struct fw_device *fd;   /* for fw_device_poll_begin()/_end() */
};

static int rig_open(void **state)
{
	struct accdma_world_opts o;
	struct rig *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	setenv("ACCDMA_SPIN_US", "0", 1);
	setenv("ACCDMA_POLL", "0", 1);
	th_opts(&o, 1);
	o.engines = 1;
	r->w = th_open_opts(&o);
	unsetenv("ACCDMA_SPIN_US");
	unsetenv("ACCDMA_POLL");
	r->es = &q_dev(&r->w->a, 0)->engines[0];
	r->fd = r->w->devs[0].fw;
	*state = r;
	return 0;
}

static int rig_close(void **state)
{
	struct rig *r = *state;

	th_close(r->w);
	free(r);
	return 0;
}

/* Wake device 0's sleeping engine with work: a fence, which only it completes. */
static void wake_with_work(accdma_world *w)
{
	accdma_token f;

	assert_int_equal(accdma_fence(th_q(w, 0), NULL, 0, &f), 0);
	th_wait_ok(w, f);
}

/* Wait (hang guard only) until *@word is at least @want. */
static void until_at_least(_Atomic uint64_t *word, uint64_t want)
{
	for (int i = 0; atomic_load(word) < want; i++) {
		assert_true(i < TH_HANG_MS * 10);
		nanosleep(&(struct timespec){ 0, 100 * 1000 }, NULL);
	}
}

/* Wait (hang guard only) until the engine announces that it sleeps. */
static void until_asleep(struct q_engine_sh *es)
{
	for (int i = 0; !atomic_load(&es->sleeping); i++) {
		assert_true(i < TH_HANG_MS * 10);
		nanosleep(&(struct timespec){ 0, 100 * 1000 }, NULL);
	}
}

/* From an engine asleep: a host starts polling and the engine, woken by
 * work, naps beside it; a second host session begins and ends done during
 * that nap; then the first host stops, handing its work over if @handoff.
 * Waits until the engine sleeps again. Return: its nap count before. */
static uint64_t nap_beside_two_hosts(struct rig *r, int handoff)
{
	uint64_t n0;

	until_asleep(r->es);
	n0 = atomic_load(&r->es->naps);
	fw_device_poll_begin(r->fd);
	wake_with_work(r->w);
	until_at_least(&r->es->naps, n0 + 1); /* napping beside the first host */
	fw_device_poll_begin(r->fd);
	fw_device_poll_end(r->fd, 0);
	fw_device_poll_end(r->fd, handoff);
	until_asleep(r->es);
	return n0;
}

/* Two host sessions overlap the engine's nap and both end with their work
 * done: the engine naps once more before it sleeps, whichever comes first,
 * the nap's end or theirs. */
static void test_naps_on_after_done_wait(void **state)
{
	struct rig *r = *state;
	uint64_t n0 = nap_beside_two_hosts(r, 0);

	assert_true(atomic_load(&r->es->naps) >= n0 + 2);
}

/* A host session that begins and ends while the engine sleeps says nothing
 * about the host once the engine wakes: it does not nap then. */
static void test_no_nap_for_polling_slept_through(void **state)
{
	struct rig *r = *state;
	uint64_t n0, hb0;

	until_asleep(r->es);
	n0 = atomic_load(&r->es->naps);
	fw_device_poll_begin(r->fd);
	fw_device_poll_end(r->fd, 0);
	hb0 = atomic_load(&r->es->heartbeats);
	wake_with_work(r->w);
	assert_true(atomic_load(&r->es->heartbeats) > hb0); /* awake: it ran the fence's pass */
	until_asleep(r->es);
	assert_int_equal(atomic_load(&r->es->naps), n0);
}

/* A host that gives up polling hands its work over (fw_device_poll_end()
 * with @wake): the engine leaves its nap and does not nap on, though another
 * session ended done beside it. The nap is made far longer than the test's
 * steps, so that only the hand-off can end it (a nap that ran out while the
 * first host still polled would rightly be followed by another). */
static void test_handoff_ends_napping(void **state)
{
	struct rig *r = *state;
	uint32_t nap_us = atomic_load(&fw_nap_us);
	uint64_t n0;

	atomic_store(&fw_nap_us, 600u * 1000 * 1000);
	n0 = nap_beside_two_hosts(r, 1);
	atomic_store(&fw_nap_us, nap_us);
	assert_int_equal(atomic_load(&r->es->naps), n0 + 1);
}

/* Where the host allows naps longer than fw_nap_us (the verbs transport),
 * one that ends with a host still polling is followed by a longer one. Only
 * the state is checked: the engine's nap becomes FW_NAP_LONG. The host's cap
 * is set while the engine sleeps, so the wake that follows orders it. */
static void test_nap_grows_beside_polling_host(void **state)
{
	struct rig *r = *state;
	struct fw_engine *e = &r->fd->engines[0];

	until_asleep(r->es);
	r->w->host.nap_max_us = 600u * 1000 * 1000;
	fw_device_poll_begin(r->fd);
	wake_with_work(r->w);
	for (int i = 0; atomic_load(&e->napping) != FW_NAP_LONG; i++) {
		assert_true(i < TH_HANG_MS * 10);
		nanosleep(&(struct timespec){ 0, 100 * 1000 }, NULL);
	}
	fw_device_poll_end(r->fd, 1); /* a hand-off: it leaves even a long nap */
	until_asleep(r->es);
}

/* A host whose wait ends done while the engine naps long, with work posted
 * that the engine has not read (ACCDMA_POLL=0: posts are never read
 * inline, and a napping engine is not kicked): the host's leaving cuts the
 * nap short, and the engine does not nap on. The nap is made far longer
 * than the wait's hang guard, so that only that can end it. */
static void test_long_nap_cut_for_work_left(void **state)
{
	struct rig *r = *state;
	struct fw_engine *e = &r->fd->engines[0];
	accdma_token f;
	uint64_t n0;

	until_asleep(r->es);
	r->w->host.nap_max_us = 600u * 1000 * 1000;
	e->nap_us = 600u * 1000 * 1000;
	n0 = atomic_load(&r->es->naps);
	fw_device_poll_begin(r->fd);
	wake_with_work(r->w);
	until_at_least(&r->es->naps, n0 + 1);
	assert_int_equal(atomic_load(&e->napping), FW_NAP_LONG);
	assert_int_equal(accdma_fence(th_q(r->w, 0), NULL, 0, &f), 0);
	fw_device_poll_end(r->fd, 0);
	th_wait_ok(r->w, f);
	until_asleep(r->es);
	assert_int_equal(atomic_load(&r->es->naps), n0 + 1);
}

/* Naps grow only where the transport allows it (loop does, as verbs; local
 * does not) and the process may run on fewer CPUs than its engine threads
 * and a host thread: pinned to one CPU, two devices' engines are short. */
static void test_nap_cap_needs_few_cpus(void **state)
{
	struct accdma_world_opts o;
	cpu_set_t all, one;
	accdma_world *w;
	uint32_t cap[3];

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(all), &all), 0);
	CPU_ZERO(&one);
	for (int c = 0; c < CPU_SETSIZE && !CPU_COUNT(&one); c++)
		if (CPU_ISSET(c, &all))
			CPU_SET(c, &one);
	th_opts(&o, 2);
	o.engines = 1;
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	for (int i = 0; i < 2; i++) {
		o.transport = i ? ACCDMA_TRANSPORT_LOCAL : ACCDMA_TRANSPORT_LOOP;
		w = th_open_opts(&o);
		cap[i] = w->host.nap_max_us;
		th_close(w);
	}
	assert_int_equal(sched_setaffinity(0, sizeof(all), &all), 0);
	assert_int_equal(cap[0], DRV_FAR_NAP_MAX_US);
	assert_int_equal(cap[1], 0);
	if (CPU_COUNT(&all) < 2)
		return; /* no CPU to spare for an engine here */
	o.num_devices = 1;
	o.transport = ACCDMA_TRANSPORT_LOOP;
	w = th_open_opts(&o);
	cap[2] = w->host.nap_max_us;
	th_close(w);
	assert_int_equal(cap[2], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_naps_on_after_done_wait, rig_open, rig_close),
		cmocka_unit_test_setup_teardown(test_no_nap_for_polling_slept_through, rig_open, rig_close),
		cmocka_unit_test_setup_teardown(test_handoff_ends_napping, rig_open, rig_close),
		cmocka_unit_test_setup_teardown(test_nap_grows_beside_polling_host, rig_open, rig_close),
		cmocka_unit_test_setup_teardown(test_long_nap_cut_for_work_left, rig_open, rig_close),
		cmocka_unit_test(test_nap_cap_needs_few_cpus),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
