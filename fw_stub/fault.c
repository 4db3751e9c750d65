// SPDX-License-Identifier: MIT
/*
 * fault.c - fault-injection points of the firmware stub.
 *
 * Each site has a countdown: arming it with n makes the n-th next pass fail.
 * The sites are the places real hardware fails: reading a descriptor, moving
 * a matched transfer, running a compute step, ringing a peer's doorbell for
 * an eager message or waking host waiters at a completion (the wake-up is
 * lost); and, in dma/, each data mover.
 * One more point lets a test make a race happen rather than a failure: the
 * moment an engine goes to sleep (fw_sleep_race_set()).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "fw_stub/fw_internal.h"

static _Atomic uint32_t countdown[FW_FAULT__COUNT];

void fw_fault_arm(enum fw_fault_site site, uint32_t nth)
{
	if (site < FW_FAULT__COUNT)
		atomic_store(&countdown[site], nth);
}

/**
 * fw_fault_hit() - the fault-injection point: true when this pass is the armed one.
 * @site: the site.
 */
int fw_fault_hit(enum fw_fault_site site)
{
	return dma_fault_countdown(&countdown[site]);
}

static _Atomic(fw_sleep_race_fn) race_fn;
static void *_Atomic race_arg;

void fw_sleep_race_set(fw_sleep_race_fn fn, void *arg)
{
	/* The argument before the function, and never cleared: a call racing
	 * this one gets a function with its own argument. */
	if (fn)
		atomic_store(&race_arg, arg);
	atomic_store(&race_fn, fn);
}

void fw_sleep_race_point(uint32_t dev, uint32_t engine)
{
	fw_sleep_race_fn fn = atomic_load(&race_fn);

	if (fn)
		fn(dev, engine, atomic_load(&race_arg));
}

int fw_fault_parse(const char *v)
{
	static const char *const names[] = { "fetch", "match", "exec", "copy", "zero", "kick", "wake" };
	enum { NSITES = sizeof(names) / sizeof(names[0]) };
	uint32_t nth[NSITES] = { 0 };
	char buf[256], *save = NULL, *item;

	if (!v || !*v)
		return 0;
	if (strlen(v) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, v);
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(item, ':'), *end;
		unsigned long n;
		size_t i;

		if (!colon)
			return -EINVAL;
		*colon = '\0';
		n = strtoul(colon + 1, &end, 10);
		if (*end || n == 0 || n > 0xffffffffu)
			return -EINVAL;
		for (i = 0; i < NSITES && strcmp(names[i], item); i++)
			;
		if (i == NSITES)
			return -EINVAL;
		nth[i] = (uint32_t)n;
	}
	fw_fault_arm(FW_FAULT_FETCH, nth[0]);
	fw_fault_arm(FW_FAULT_MATCH, nth[1]);
	fw_fault_arm(FW_FAULT_EXEC, nth[2]);
	dma_fault_arm(DMA_FAULT_COPY, nth[3]);
	dma_fault_arm(DMA_FAULT_ZERO, nth[4]);
	fw_fault_arm(FW_FAULT_KICK, nth[5]);
	fw_fault_arm(FW_FAULT_WAKE, nth[6]);
	return 0;
}
